#!/usr/bin/env bash
# Runs grove's libFuzzer targets (tests/fuzz) for a given time each, under AddressSanitizer and
# UndefinedBehaviorSanitizer, and reports what they found.
#
#   scripts/fuzz.sh [--merge] [SECONDS_PER_TARGET] [TARGET...]
#
# SECONDS_PER_TARGET defaults to 60; the targets default to all of them (idx fashion_mnist
# text_corpus safetensors checkpoint args). Installs Debian's clang if it is missing, builds
# build-fuzz/ (clang, GROVE_FUZZ=ON, CPU only) and fuzzes each target in turn, starting from
# its committed corpus (tests/fuzz/corpus/TARGET, read only). New inputs go to
# build-fuzz/fuzz-out/TARGET/corpus; with --merge, those that add coverage edges are then merged
# into the committed corpus (libFuzzer's -merge=1). Crash, leak, timeout and out-of-memory inputs
# go to build-fuzz/fuzz-out/TARGET/findings, each printed with the command that reproduces it; a
# fixed one belongs in tests/fuzz/crashes/TARGET/ (named for what it exposed), where every build
# replays it (ctest -L fuzz). Exits 1 if anything was found. The clang build needs
# tests/fuzz/source_location_shim.h with clang 14 (CMakeLists.txt adds it).
set -euo pipefail
cd "$(dirname "$0")/.."

all_targets=(idx fashion_mnist text_corpus safetensors checkpoint args)
merge=0
positional=()
for argument in "$@"; do
  case "$argument" in
    --merge) merge=1 ;;
    -h | --help)
      sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *) positional+=("$argument") ;;
  esac
done
seconds="${positional[0]:-60}"
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || [ "$seconds" -lt 1 ]; then
  echo "fuzz.sh: expected a number of seconds per target, got '$seconds' (see --help)" >&2
  exit 2
fi
targets=("${positional[@]:1}")
if [ ${#targets[@]} -eq 0 ]; then targets=("${all_targets[@]}"); fi
for target in "${targets[@]}"; do
  if [[ ! " ${all_targets[*]} " =~ " $target " ]]; then
    echo "fuzz.sh: unknown target '$target'; the targets are ${all_targets[*]}" >&2
    exit 2
  fi
done

# The largest input worth trying per target: a little above its largest seed, so the fuzzer
# spends its time on structure rather than on long inputs (the readers' size checks are covered
# by headers that claim more than the file holds).
max_len_of() {
  case "$1" in
    idx) echo 4096 ;;
    fashion_mnist) echo 8192 ;;
    text_corpus) echo 2048 ;;
    safetensors) echo 4096 ;;
    checkpoint) echo 2048 ;;
    args) echo 512 ;;
  esac
}

if ! command -v clang++ >/dev/null 2>&1; then
  echo "fuzz.sh: installing clang (Debian's, with libFuzzer)"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends clang
fi
scripts/install_deps.sh

launcher=()
if command -v ccache >/dev/null 2>&1; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++ \
  -DGROVE_FUZZ=ON -DGROVE_CUDA=OFF -DGROVE_BUILD_BENCH=OFF "${launcher[@]}" >/dev/null
build_targets=()
for target in "${targets[@]}"; do build_targets+=("fuzz_$target"); done
cmake --build build-fuzz -j "$(nproc)" --target "${build_targets[@]}"

export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
found=0
summary=()
for target in "${targets[@]}"; do
  out="build-fuzz/fuzz-out/$target"
  rm -rf "$out/findings"
  mkdir -p "$out/corpus" "$out/findings"
  dict=()
  if [ -f "tests/fuzz/$target.dict" ]; then dict=(-dict="tests/fuzz/$target.dict"); fi
  echo "== fuzz_$target for ${seconds}s (log: $out/log.txt)"
  # -timeout: an input that takes 10 s is a hang; -rss_limit_mb / -malloc_limit_mb: readers of
  # inputs this small have no business with more (a size field believed before it was checked).
  status=0
  "build-fuzz/tests/fuzz/fuzz_$target" "$out/corpus" "tests/fuzz/corpus/$target" \
    -max_total_time="$seconds" -max_len="$(max_len_of "$target")" -timeout=10 \
    -rss_limit_mb=2048 -malloc_limit_mb=512 -print_final_stats=1 \
    -artifact_prefix="$out/findings/" "${dict[@]}" >"$out/log.txt" 2>&1 || status=$?
  runs="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$out/log.txt" | grep -o '[0-9]*$' |
    tail -1)"
  summary+=("$target: ${runs:-?} executions in ${seconds}s, exit $status")
  if [ "$merge" -eq 1 ]; then
    # New edges only (-use_counters=0: not every new hit count), to keep the corpus small.
    "build-fuzz/tests/fuzz/fuzz_$target" -merge=1 -use_counters=0 \
      -max_len="$(max_len_of "$target")" \
      "tests/fuzz/corpus/$target" "$out/corpus" >>"$out/log.txt" 2>&1
  fi
  for finding in "$out/findings"/*; do
    [ -e "$finding" ] || continue
    found=1
    echo "  finding: $finding"
    echo "  reproduce: build-fuzz/tests/fuzz/fuzz_$target $finding"
  done
  if [ "$status" -ne 0 ]; then
    found=1
    tail -n 40 "$out/log.txt"
  fi
done
echo "== summary"
printf '  %s\n' "${summary[@]}"
if [ "$found" -ne 0 ]; then
  echo "fuzz.sh: findings above; fix each at its cause, then add its input to" \
    "tests/fuzz/crashes/TARGET/"
  exit 1
fi
echo "fuzz.sh: no findings"
