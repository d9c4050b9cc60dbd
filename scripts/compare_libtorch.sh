#!/usr/bin/env bash
# Side by side, in one run on this machine: libtorch 1.13 (Debian) and grove, for the per-op
# overhead (with and without autograd) and the eager MLP training step (batch 128, 2 threads).
# Needs the anchors' libtorch harness (../shared/anchors/libtorch or ANCHORS=path) and the
# Debian packages libtorch-dev, libopenblas0-openmp, zlib1g-dev and dataset-fashion-mnist
# (installed here if missing).
# Usage: scripts/compare_libtorch.sh [calls]
set -euo pipefail
cd "$(dirname "$0")/.."
anchors=${ANCHORS:-../shared/anchors/libtorch}
calls=${1:-100000}
[ -f "$anchors/op_overhead.cpp" ] || { echo "no libtorch harness at $anchors (set ANCHORS)" >&2; exit 2; }
for package in libtorch-dev libopenblas0-openmp zlib1g-dev dataset-fashion-mnist; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    { sudo=""; [ "$(id -u)" -ne 0 ] && sudo=sudo; $sudo apt-get install -y -qq "$package"; }
done
work=build-compare
mkdir -p "$work"
cmake -S "$anchors" -B "$work/libtorch" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/libtorch" --target op_overhead mnist_bench >/dev/null
cmake -S . -B "$work/grove" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGROVE_BUILD_TESTS=OFF >/dev/null
cmake --build "$work/grove" --target dispatch_bench matmul_bench autograd_bench >/dev/null
export OMP_NUM_THREADS=2
echo "== libtorch (median of $calls individually timed calls)"
"$work/libtorch/op_overhead" 2 "$calls" | grep RESULT
echo "== grove (Google Benchmark, median of 5 repetitions)"
"$work/grove/bench/dispatch_bench" --benchmark_repetitions=5 --benchmark_report_aggregates_only |
  grep median
"$work/grove/bench/matmul_bench" --benchmark_repetitions=5 --benchmark_report_aggregates_only |
  grep median
"$work/grove/bench/autograd_bench" --benchmark_repetitions=5 --benchmark_report_aggregates_only |
  grep median
echo "== libtorch MLP training step (one epoch; median of steps 6-55)"
mnist=$(dirname "$(dpkg -L dataset-fashion-mnist | grep train-images-idx3-ubyte.gz)")
"$work/libtorch/mnist_bench" mlp 2 "$mnist" | grep RESULT
