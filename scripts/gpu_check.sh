#!/usr/bin/env bash
# On a machine with an NVIDIA GPU (Hopper: H100/H200): configures and builds grove with the CUDA
# backend, runs every test labelled `gpu`, then the GPU benchmarks (bench/cuda_*_bench), and
# prints one short table of the benchmark medians. Exits non-zero if a test fails.
#
#   scripts/gpu_check.sh                 # build in build-gpu, all GPU benchmarks
#   BUILD_DIR=b FILTER=Mlp scripts/gpu_check.sh   # another build dir; benchmarks matching FILTER
#   RESULTS=dir scripts/gpu_check.sh     # also keep the logs and JSON there
#   TESTS=0 scripts/gpu_check.sh         # benchmarks only; BENCH=0: tests only
#   SANITIZE="memcheck racecheck synccheck" scripts/gpu_check.sh
#       instead of the tests and benchmarks: every executable that holds `gpu` tests, under each
#       compute-sanitizer tool, split into SHARDS (default 8) gtest shards run side by side, each
#       shard limited to SHARD_TIMEOUT seconds (default 480). The tests that provoke an
#       out-of-memory on purpose (their names hold "OutOfMemory") are left out by name: a failed
#       cudaMalloc of 1 PiB is an error report by design, not a bug (and under racecheck the
#       NCCL tests; see scripts/gpu_sanitize.sh). Prints one line per
#       executable and tool with the sanitizer's error count; exits non-zero on any error.
set -euo pipefail
cd "$(dirname "$0")/.."

build=${BUILD_DIR:-build-gpu}
filter=${FILTER:-.}
results=${RESULTS:-$build/gpu_check}
jobs=$(nproc)

if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu_check: no NVIDIA GPU is visible (nvidia-smi -L failed); run this on a GPU machine" >&2
  exit 1
fi
nvidia-smi -L
mkdir -p "$results"

# A GPU test that hangs fails after 60 s, so one bad test cannot eat the whole check.
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGROVE_CUDA=ON \
  -DGROVE_BUILD_TESTS=ON -DGROVE_BUILD_BENCH=ON -DGROVE_TEST_TIMEOUT=60 >"$results/configure.log"
ninja -C "$build" -j"$jobs" >"$results/build.log" || {
  tail -40 "$results/build.log"
  exit 1
}

if [[ -n ${SANITIZE:-} ]]; then
  exec scripts/gpu_sanitize.sh "$build" "$results/sanitize" ${SANITIZE}
fi

if [[ ${TESTS:-1} != 0 ]]; then
  echo "== tests labelled gpu"
  ctest --test-dir "$build" -L gpu -j4 --output-on-failure >"$results/ctest_gpu.log" 2>&1 ||
    test_status=$?
  grep -E "tests passed|tests failed|\(Failed\)|\(SEGFAULT\)|\(Timeout\)" \
    "$results/ctest_gpu.log" || true
fi
[[ ${BENCH:-1} != 0 ]] || exit "${test_status:-0}"

echo "== GPU benchmarks"
for bench in "$build"/bench/cuda_*_bench; do
  name=$(basename "$bench")
  timeout 300 "$bench" --benchmark_filter="$filter" --benchmark_repetitions=5 \
    --benchmark_min_time=0.2 \
    --benchmark_report_aggregates_only=true --benchmark_out="$results/$name.json" \
    --benchmark_out_format=json >"$results/$name.log" 2>&1 ||
    echo "$name failed: see $results/$name.log"
done

python3 - "$results" <<'PY'
import glob, json, os, sys
rows = []
for path in sorted(glob.glob(os.path.join(sys.argv[1], "cuda_*_bench.json"))):
    try:
        data = json.load(open(path))
    except ValueError:
        continue
    for b in data.get("benchmarks", []):
        if b.get("aggregate_name") != "median":
            continue
        extra = ", ".join(f"{k} {v:.3g}" for k, v in b.items()
                          if k not in ("name", "run_name", "run_type", "repetitions",
                                       "repetition_index", "threads", "iterations", "real_time",
                                       "cpu_time", "time_unit", "family_index",
                                       "per_family_instance_index", "aggregate_name",
                                       "aggregate_unit") and isinstance(v, (int, float)))
        rows.append((b["run_name"], f'{b["real_time"]:.2f} {b["time_unit"]}', extra))
if rows:
    width = max(len(r[0]) for r in rows)
    print(f'{"benchmark (median of 5)":<{width}}  {"time":>12}  counters')
    for name, time, extra in rows:
        print(f"{name:<{width}}  {time:>12}  {extra}")
PY
exit "${test_status:-0}"
