#!/usr/bin/env bash
# Checks that the paths grove's documents name exist (CONVENTIONS.md: the walkthroughs and
# tables name real files): every repository-relative file or directory path written in
# backticks in README.md, bench/README.md and CONVENTIONS.md must exist in the checkout.
#   - A path is a word of a backtick span that starts with a top-level directory of the
#     repository (core/ ops/ autograd/ graphs/ models/ tests/ bench/ scripts/ dist/ .ci/) or is
#     a root file (CMakeLists.txt, README.md, CONVENTIONS.md, .clang-format, .editorconfig,
#     .gitignore); other words (`ops::sgd_`, `--nproc`, `./build/bench/...`) are not paths.
#   - A trailing `:line`, `:line-line` or `::symbol` is dropped before the check
#     (`graphs/tree/tree_manager.h:118`, `ops/optim.cpp::sgd_`).
#   - Words with a glob (`autograd/rules_*.cpp`), a placeholder (`ops/<family>.h`) or an
#     ellipsis (`ops/cpu/...`) are skipped.
#   - A benchmark or program named by its build target passes when its source exists:
#     `bench/conv_bench` is the binary built from bench/conv_bench.cpp.
#   - Fenced code blocks are not read; a span may run over a line break, not over a blank line.
# Usage: scripts/check_doc_paths.sh [source dir]   (default: this script's checkout). Exits 1 on
# any error, listing each as file:line. Run by CTest as `check_doc_paths`.
set -euo pipefail
root="${1:-$(dirname "$0")/..}"
cd "$root"

documents=(README.md bench/README.md CONVENTIONS.md)

# One record per path found: "file<TAB>line<TAB>path" (the line where its span starts).
paths_in() {
  awk -v file="$1" '
    function emit(span, line,    words, n, i, word) {
      n = split(span, words, /[ \t]+/)
      for (i = 1; i <= n; i++) {
        word = words[i]
        gsub(/^[("'\''\[]+|[)"'\'',;.\]]+$/, "", word)
        if (word !~ /^(core|ops|autograd|graphs|models|tests|bench|scripts|dist|\.ci)\// &&
            word !~ /^(CMakeLists\.txt|README\.md|CONVENTIONS\.md|\.clang-format|\.editorconfig|\.gitignore)$/)
          continue
        if (word ~ /[*<>{}]/ || index(word, "...") > 0) continue
        sub(/::.*$/, "", word)             # ::symbol
        sub(/:[0-9]+(-[0-9]+)?$/, "", word)  # :line or :first-last
        if (word != "") printf "%s\t%d\t%s\n", file, line, word
      }
    }
    /^[ \t]*```/ { fenced = !fenced; inside = 0; next }
    fenced { next }
    /^[ \t]*$/ { inside = 0; next }  # a span never runs over a paragraph break
    {
      n = split($0, parts, "`")
      for (i = 1; i <= n; i++) {
        if (i > 1) {  # a backtick between parts[i - 1] and parts[i]
          if (inside) emit(span, start)
          inside = !inside
          span = ""
          start = NR
        }
        if (inside) span = span (i == 1 ? " " : "") parts[i]
      }
    }' "$1"
}

errors=0
checked=0
error() {
  echo "check_doc_paths: $*" >&2
  errors=$((errors + 1))
}

for document in "${documents[@]}"; do
  if [[ ! -f "$document" ]]; then
    error "$document: missing (it is one of the documents this check reads)"
    continue
  fi
  while IFS=$'\t' read -r file line path; do
    [[ -n "$path" ]] || continue
    checked=$((checked + 1))
    clean="${path%/}"
    if [[ -e "$clean" ]]; then
      continue
    fi
    if [[ "$clean" == bench/* || "$clean" == tests/* || "$clean" == models/* ]] &&
      [[ -f "$clean.cpp" ]]; then
      continue  # a binary named by its source's path (bench/conv_bench)
    fi
    error "$file:$line: \`$path\` does not exist"
  done < <(paths_in "$document")
done

if ((errors > 0)); then
  echo "check_doc_paths: $errors error(s)" >&2
  exit 1
fi
echo "check_doc_paths: $checked paths in ${#documents[@]} documents, every one exists"
