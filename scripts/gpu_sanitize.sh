#!/usr/bin/env bash
# Runs grove's GPU tests under compute-sanitizer (memcheck, racecheck, synccheck) and prints one
# line per test executable and tool: the sanitizer's error count, the tests run and failed.
# Called by `SANITIZE="memcheck racecheck synccheck" scripts/gpu_check.sh` after its build;
# usable alone on a configured and built CUDA build folder:
#
#   scripts/gpu_sanitize.sh BUILD_DIR RESULTS_DIR TOOL...
#   SHARDS=8 SHARD_TIMEOUT=480 JOBS=16 ONLY=ops_cuda_tests,core_cuda_tests \
#     scripts/gpu_sanitize.sh build-gpu out racecheck
#
# What it runs: every executable that holds a test labelled `gpu` (from `ctest --show-only`),
# whole, split into SHARDS gtest shards (GTEST_TOTAL_SHARDS / GTEST_SHARD_INDEX); one tool at a
# time, with every executable's shards side by side on the one GPU (at most JOBS at once, default
# one per core), because racecheck slows shared-memory kernels down by orders of magnitude and
# one process per executable would not finish. Each shard is killed after SHARD_TIMEOUT seconds
# and counts as a failure ("timeout"), named with the test it was in;
# RESULTS_DIR/slowest.<tool>.txt lists the slowest tests that finished, to show which shapes to
# shrink.
#
# What it leaves out, by name and never by suppressing reports: the tests whose names hold
# "OutOfMemory". They ask cudaMalloc for 1 PiB on purpose to test the error path, and memcheck
# reports every failed cudaMalloc as an API error. Under racecheck also the NCCL tests (names
# starting "Nccl."): creating a communicator under racecheck outlasted its 180 s timeout on an
# H200, and the kernels they run are NCCL's, not grove's; memcheck and synccheck run them.
#
# What it shrinks: every process gets GROVE_TEST_UNDER_SANITIZER=1, and the few tests that queue
# long device work on purpose take smaller sizes (Note [GPU tests under compute-sanitizer] in
# tests/sanitizer_scale.h). FILTER (a gtest filter, default all) narrows the tests further.
#
# What it counts apart, printed but not failing the run: cudaFuncGetAttributes answering "no
# kernel image is available" inside NCCL's own library (libnccl in the top two frames of the
# report's host backtrace). NCCL probes its kernels
# with cudaFuncGetAttributes, and those built for other GPUs answer "no kernel image is available"
# (12 reports per communicator on an H200); the call is NCCL's, its error expected and handled.
# Every other report counts.
#
# Exit status: 0 when every tool reported 0 errors and every shard's tests passed, else 1.
set -euo pipefail
cd "$(dirname "$0")/.."

[[ $# -ge 3 ]] || { echo "usage: $0 BUILD_DIR RESULTS_DIR TOOL..." >&2; exit 2; }
build=$1
results=$2
shift 2
shards=${SHARDS:-8}
shard_timeout=${SHARD_TIMEOUT:-480}  # racecheck needs it: 70 s timed most shards out
max_jobs=${JOBS:-$(nproc)}           # sanitizer processes at a time
[[ $max_jobs =~ ^[1-9][0-9]*$ ]] || { echo "JOBS must be a whole number of 1 or more" >&2; exit 2; }
only=,${ONLY:-},  # a comma-separated list of executable names; empty: all
for tool in "$@"; do
  case $tool in memcheck | racecheck | synccheck | initcheck) ;;
    *) echo "unknown compute-sanitizer tool '$tool' (memcheck, racecheck, synccheck, initcheck)" >&2
       exit 2 ;;
  esac
done
command -v compute-sanitizer >/dev/null ||
  { echo "compute-sanitizer is not on PATH (it comes with the CUDA toolkit)" >&2; exit 2; }
mkdir -p "$results"

# The executables behind the gpu tests, each once.
mapfile -t executables < <(ctest --test-dir "$build" -L gpu --show-only=json-v1 | python3 -c '
import json, sys
seen = []
for test in json.load(sys.stdin).get("tests", []):
    command = test.get("command") or []
    if command and command[0] not in seen:
        seen.append(command[0])
print("\n".join(seen))')
[[ ${#executables[@]} -gt 0 ]] || { echo "no gpu tests in $build (configure with GROVE_CUDA=ON)" >&2; exit 2; }

status=0
printf '%-22s %-10s %8s %7s %7s  %s\n' executable tool errors tests failed notes
for tool in "$@"; do
  # Every executable's shards of this tool side by side, at most JOBS processes at a time: the
  # GPU has room, but a sanitizer process keeps a core busy, and 120 processes on 16 cores made
  # shards time out that finish in a third of the time when they get a core each. A shard's
  # timeout counts from its own start.
  for executable in "${executables[@]}"; do
    name=$(basename "$executable")
    [[ $only == ,, || $only == *,$name,* ]] || continue
    left_out='*OutOfMemory*'
    [[ $tool != racecheck ]] || left_out+=':Nccl.*'
    # A FILTER with its own negative part gets ours added to it.
    if [[ ${FILTER:-} == *-* ]]; then gtest_filter="$FILTER:$left_out"; else
      gtest_filter="${FILTER:-*}-$left_out"; fi
    for ((shard = 0; shard < shards; shard++)); do
      while (($(jobs -rp | wc -l) >= max_jobs)); do wait -n || true; done
      rm -f "$results/${name}.${tool}.${shard}.rc"
      (
        rc=0
        GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$shard OMP_NUM_THREADS=1 \
          GROVE_TEST_UNDER_SANITIZER=1 \
          timeout "$shard_timeout" compute-sanitizer --tool "$tool" --error-exitcode 99 \
          --print-limit 50 "$executable" --gtest_filter="$gtest_filter" \
          >"$results/${name}.${tool}.${shard}.log" 2>&1 || rc=$?
        echo "$rc" >"$results/${name}.${tool}.${shard}.rc"
      ) &
    done
  done
  wait  # every shard of this tool
  for executable in "${executables[@]}"; do
    name=$(basename "$executable")
    [[ $only == ,, || $only == *,$name,* ]] || continue
    errors=0 tests=0 failed=0 nccl_errors=0 notes=""
    for ((shard = 0; shard < shards; shard++)); do
      rc=$(cat "$results/${name}.${tool}.${shard}.rc" 2>/dev/null || echo 1)
      log=$results/${name}.${tool}.${shard}.log
      # memcheck/synccheck: "ERROR SUMMARY: N errors"; racecheck: "RACECHECK SUMMARY: N hazards
      # displayed (E errors, W warnings)".
      count=$(grep -oE 'ERROR SUMMARY: [0-9]+ error|\([0-9]+ errors' "$log" | grep -oE '[0-9]+' |
        tail -1 || true)
      # NCCL's probing, once per report: the "no kernel image" answer to cudaFuncGetAttributes,
      # with libnccl in one of the report's top two host frames.
      nccl=$(awk '/Program hit cudaErrorNoKernelImageForDevice .*cudaFuncGetAttributes/ {
                    probe = 1; frames = 0; next }
                  probe && /Host Frame:/ { frames++; if ($0 ~ /in libnccl/) { n++; probe = 0 }
                                           else if (frames == 2) probe = 0 }
                  END { print n + 0 }' "$log")
      if [[ -n $count ]]; then errors=$((errors + count - nccl)); fi
      nccl_errors=$((nccl_errors + nccl))
      ran=$(grep -oE '^\[==========\] [0-9]+ tests? from' "$log" | grep -oE '[0-9]+' | head -1 ||
        true)
      tests=$((tests + ${ran:-0}))
      bad=$(grep -oE '^\[  FAILED  \] [0-9]+ tests?,' "$log" | grep -oE '[0-9]+' || true)
      failed=$((failed + ${bad:-0}))
      # A shard that got no test makes no CUDA call, and compute-sanitizer then exits with 255
      # ("terminated before first instrumented API call"): nothing ran, nothing to report.
      if [[ $rc != 0 && ${ran:-0} == 0 ]] && grep -q "before first instrumented" "$log"; then
        rc=0
      fi
      # Only NCCL's own API errors were reported, and every test ran to gtest's summary: the
      # sanitizer's exit code says error, we do not.
      if [[ $rc == 99 && -n $count && $count == "$nccl" && ${bad:-0} == 0 &&
            ${ran:-0} -gt 0 ]]; then
        rc=0
      fi
      if [[ $rc == 124 ]]; then
        running=$(grep -oE '^\[ RUN      \] .*' "$log" | tail -1 | cut -c14- || true)
        notes+="shard $shard timeout in ${running:-?}; "
      elif [[ $rc != 0 && -z $count && -z $bad ]]; then notes+="shard $shard exit $rc; "
      fi
      [[ $rc == 0 ]] || status=1
    done
    [[ $nccl_errors == 0 ]] || notes+="$nccl_errors API errors inside libnccl not counted; "
    [[ $errors == 0 ]] || notes+="see $results/${name}.${tool}.*.log"
    printf '%-22s %-10s %8s %7s %7s  %s\n' "$name" "$tool" "$errors" "$tests" "$failed" "$notes"
  done
  # gtest's "[       OK ] Suite.Name (N ms)" lines of every shard of this tool, slowest first.
  cat "$results"/*."$tool".*.log 2>/dev/null | grep -E '^\[       OK \] .* \([0-9]+ ms\)$' |
    sed -E 's/^\[       OK \] (.*) \(([0-9]+) ms\)$/\2 ms  \1/' | sort -rn | head -20 \
    >"$results/slowest.$tool.txt" || true
done
exit $status
