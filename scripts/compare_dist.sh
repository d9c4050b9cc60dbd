#!/usr/bin/env bash
# All-reduce bandwidth of grove's collectives next to PyTorch's torch.distributed, in one call on
# one machine: bench/allreduce_bench (grove: NCCL between GPUs, Gloo between CPU processes) and
# bench/torch_allreduce.py under torchrun, same sizes, iterations and world size. Prints both
# tables (time per all-reduce, algorithm and bus bandwidth as nccl-tests defines them).
#
#   scripts/compare_dist.sh                    # every GPU of the host, 4M and 64M buffers
#   NPROC=2 DEVICE=cpu scripts/compare_dist.sh # two CPU processes over Gloo
#   BUILD_DIR=build-gpu SKIP_BUILD=1 SIZES=4M,64M,256M scripts/compare_dist.sh
#   BATCH=1 scripts/compare_dist.sh          # each call timed alone: launch latency and skew
# Needs an existing or buildable grove (BUILD_DIR, default build-gpu) and, for the PyTorch side,
# python3 with torch (its line is skipped, with a message, when torch is missing).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build-gpu}
device=${DEVICE:-cuda}
sizes=${SIZES:-4M,64M}
iters=${ITERS:-50}
batch=${BATCH:-20}  # calls back to back per timed span (nccl-tests' way); 1: one call alone
if [[ $device == cuda ]]; then
  nproc=${NPROC:-$(nvidia-smi -L | wc -l)}
else
  nproc=${NPROC:-2}
fi
if [[ ${SKIP_BUILD:-0} != 1 ]]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGROVE_BUILD_TESTS=OFF >/dev/null
  cmake --build "$build" --target allreduce_bench >/dev/null
fi
echo "== grove, $nproc ranks on $device"
"$build/bench/allreduce_bench" --nproc "$nproc" --device "$device" --sizes "$sizes" \
  --iters "$iters" --batch "$batch"
if [[ $device == cuda ]]; then
  echo "== grove, the same all-reduce captured in a CUDA graph and replayed"
  "$build/bench/allreduce_bench" --nproc "$nproc" --device "$device" --sizes "$sizes" \
    --iters "$iters" --batch "$batch" --graph
fi
echo "== PyTorch, $nproc ranks on $device"
if python3 -c "import torch" 2>/dev/null; then
  python3 -m torch.distributed.run --standalone --nproc-per-node "$nproc" \
    bench/torch_allreduce.py --device "$device" --sizes "$sizes" --iters "$iters" --batch "$batch"
else
  echo "python3 cannot import torch: skipped"
fi
