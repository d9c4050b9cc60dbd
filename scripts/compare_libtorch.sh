#!/usr/bin/env bash
# Side-by-side per-op overhead: libtorch 1.13 (Debian) next to grove, in one run, on this machine.
# Needs the anchors' libtorch harness (../shared/anchors/libtorch or ANCHORS=path) and the
# Debian packages libtorch-dev and libopenblas0-openmp (installed here if missing).
# Usage: scripts/compare_libtorch.sh [calls]
set -euo pipefail
cd "$(dirname "$0")/.."
anchors=${ANCHORS:-../shared/anchors/libtorch}
calls=${1:-100000}
[ -f "$anchors/op_overhead.cpp" ] || { echo "no libtorch harness at $anchors (set ANCHORS)" >&2; exit 2; }
for package in libtorch-dev libopenblas0-openmp; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    { sudo=""; [ "$(id -u)" -ne 0 ] && sudo=sudo; $sudo apt-get install -y -qq "$package"; }
done
work=build-compare
mkdir -p "$work"
cmake -S "$anchors" -B "$work/libtorch" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/libtorch" --target op_overhead >/dev/null
cmake -S . -B "$work/grove" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGROVE_BUILD_TESTS=OFF >/dev/null
cmake --build "$work/grove" --target dispatch_bench matmul_bench >/dev/null
export OMP_NUM_THREADS=2
echo "== libtorch (median of $calls individually timed calls)"
"$work/libtorch/op_overhead" 2 "$calls" | grep RESULT
echo "== grove (Google Benchmark, median of 5 repetitions)"
"$work/grove/bench/dispatch_bench" --benchmark_repetitions=5 --benchmark_report_aggregates_only |
  grep median
"$work/grove/bench/matmul_bench" --benchmark_repetitions=5 --benchmark_report_aggregates_only |
  grep median
