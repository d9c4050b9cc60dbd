#!/usr/bin/env bash
# Checks grove's Notes (CONVENTIONS: an invariant that spans files is written once as a
# `// Note [Title]` block, underlined with `~~~`, and cited elsewhere by its full title):
#   - every citation `Note [...]` names a Note that is defined, spelled exactly as defined;
#   - no title is defined twice;
#   - the Notes table in README.md lists every Note with the file that defines it, and no other.
# A citation broken over two comment lines is joined before it is checked, and listed as a
# warning (grep cannot find it); it does not fail the check.
# Usage: scripts/check_notes.sh [source dir]   (default: this script's checkout). Exits 1 on
# any error, listing each as file:line. Run by CTest as `check_notes`.
set -euo pipefail
root="${1:-$(dirname "$0")/..}"
cd "$root"

# Source and documentation files: tracked ones in a git checkout, otherwise every file with
# these extensions outside build and hidden directories; not this script, whose messages quote
# the citation syntax.
list_files() {
  all_files | grep -v '^scripts/check_notes\.sh$'
}
all_files() {
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files -- '*.h' '*.cpp' '*.cu' '*.cuh' '*.md' '*.sh' '*.py' '*.txt' '*.cmake'
  else
    find . -mindepth 1 \( -name 'build*' -o -name '.*' \) -prune -o -type f \
      \( -name '*.h' -o -name '*.cpp' -o -name '*.cu' -o -name '*.cuh' -o -name '*.md' \
      -o -name '*.sh' -o -name '*.py' -o -name '*.txt' -o -name '*.cmake' \) -print |
      sed 's|^\./||'
  fi
}

# One record per definition ("D<TAB>file<TAB>line<TAB>title"), citation ("C...") and broken
# citation ("S..."). A definition is a line that is only `// Note [Title]` (or `# Note [...]`)
# followed by a `~~~` line; the placeholder title `Title` (prose about the convention) is skipped.
scan() {
  list_files | while IFS= read -r file; do
    awk -v file="$file" '
      function strip(text) {  # a continuation line without its comment or string opener
        sub(/^[ \t]*(\/\/|#|\*)?[ \t]*"?/, "", text)
        return text
      }
      { lines[NR] = $0 }
      END {
        for (n = 1; n <= NR; n++) {
          line = lines[n]
          if (line ~ /^[ \t]*(\/\/|#)[ \t]*Note \[[^]]*\][ \t]*$/ && lines[n + 1] ~ /~~~/) {
            title = line
            sub(/^[^[]*\[/, "", title)
            sub(/\][ \t]*$/, "", title)
            printf "D\t%s\t%d\t%s\n", file, n, title
            continue
          }
          text = line
          broken = 0
          # "... Note" or "... Note [Words" at the end of the line: the citation goes on.
          if (line ~ /Note[ \t]*$/ || line ~ /Note \[[^]]*$/) {
            sub(/"?[ \t]*$/, "", text)  # a string literal closed at the end of the line
            gsub(/[ \t]+/, " ", text)
            own = length(text)  # citations starting after this belong to the next line
            text = text " " strip(lines[n + 1])
            gsub(/[ \t]+/, " ", text)
            broken = 1
          }
          consumed = 0
          while (match(text, /Note \[[^]]*\]/)) {
            title = substr(text, RSTART + 6, RLENGTH - 7)
            split_here = broken && consumed + RSTART + RLENGTH - 1 > own
            if (!broken || consumed + RSTART <= own) {
              kind = split_here ? "S" : "C"
              if (title != "Title") printf "%s\t%s\t%d\t%s\n", kind, file, n, title
            }
            consumed += RSTART + RLENGTH - 1
            text = substr(text, RSTART + RLENGTH)
          }
        }
      }' "$file"
  done
}

records="$(scan)"
errors=0
error() {
  echo "check_notes: $*" >&2
  errors=$((errors + 1))
}

declare -A defined_in=()
while IFS=$'\t' read -r kind file line title; do
  [[ "$kind" == D ]] || continue
  if [[ -n "${defined_in[$title]:-}" ]]; then
    error "$file:$line: Note [$title] is defined twice (also in ${defined_in[$title]})"
  fi
  defined_in[$title]="$file"
done <<<"$records"

while IFS=$'\t' read -r kind file line title; do
  [[ "$kind" == C || "$kind" == S ]] || continue
  if [[ -z "${defined_in[$title]:-}" ]]; then
    error "$file:$line: cites Note [$title], which is not defined (titles must match exactly)"
  elif [[ "$kind" == S ]]; then
    echo "check_notes: warning: $file:$line: the citation of Note [$title] is split over two" \
      "lines; grep cannot find it" >&2
  fi
done <<<"$records"

# README.md's table rows: | Title | `file` |
declare -A listed_in=()
if [[ -f README.md ]]; then
  while IFS=$'\t' read -r title file; do
    listed_in[$title]="$file"
  done < <(awk '/^## Notes/ { inside = 1; next }
                /^## / { inside = 0 }
                inside && /^\| [^|]+ \| `[^`]+` \|/ {
                  split($0, cells, "|")
                  title = cells[2]; file = cells[3]
                  gsub(/^ +| +$/, "", title); gsub(/^ *`|` *$/, "", file)
                  printf "%s\t%s\n", title, file
                }' README.md)
  for title in "${!defined_in[@]}"; do
    if [[ -z "${listed_in[$title]:-}" ]]; then
      error "README.md: the Notes table lacks Note [$title] (${defined_in[$title]})"
    elif [[ "${listed_in[$title]}" != "${defined_in[$title]}" ]]; then
      error "README.md: the Notes table puts Note [$title] in ${listed_in[$title]}," \
        "but it is defined in ${defined_in[$title]}"
    fi
  done
  for title in "${!listed_in[@]}"; do
    [[ -n "${defined_in[$title]:-}" ]] || error "README.md: the Notes table lists Note [$title]," \
      "which is not defined"
  done
fi

((${#defined_in[@]} > 0)) || error "no Note definitions found under $root"

if ((errors > 0)); then
  echo "check_notes: $errors error(s)" >&2
  exit 1
fi
echo "check_notes: ${#defined_in[@]} Notes, every citation matches"
