"""PyTorch's all-reduce bandwidth, measured as bench/allreduce_bench.cpp measures grove's: for
each size, the time of one in-place sum all_reduce of float32 (the median over --iters spans of
--batch calls back to back, each span over --batch), then the algorithm and bus
bandwidth (nccl-tests' figures). Run under torchrun, one process per GPU (nccl) or per CPU
process (gloo):

    torchrun --standalone --nproc-per-node 2 bench/torch_allreduce.py --device cuda
    torchrun --standalone --nproc-per-node 2 bench/torch_allreduce.py --device cpu
"""
import argparse
import os
import statistics
import time

import torch
import torch.distributed as dist


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    if text[-1].upper() in units:
        return int(float(text[:-1]) * units[text[-1].upper()])
    return int(text)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cuda")
    parser.add_argument("--sizes", default="4M,64M")
    parser.add_argument("--iters", type=int, default=50)
    parser.add_argument("--batch", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    args = parser.parse_args()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if args.device == "cuda":
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
    dist.init_process_group("nccl" if args.device == "cuda" else "gloo")
    world, rank = dist.get_world_size(), dist.get_rank()
    if rank == 0:
        print(f"torch {torch.__version__} all_reduce (sum, float32, in place), {world} ranks, "
              f"{dist.get_backend()}, median of {args.iters} x {args.batch} calls")
        print(f"{'bytes':>12} {'time us':>12} {'algbw GB/s':>12} {'busbw GB/s':>12}")
    for size in [parse_size(s) for s in args.sizes.split(",")]:
        buffer = torch.ones(size // 4, dtype=torch.float32, device=device)
        for _ in range(args.warmup):
            dist.all_reduce(buffer)
        if args.device == "cuda":
            torch.cuda.synchronize()
        seconds = []
        for _ in range(args.iters):
            dist.barrier()
            start = time.perf_counter()
            for _ in range(args.batch):
                dist.all_reduce(buffer)
            if args.device == "cuda":
                torch.cuda.synchronize()
            seconds.append((time.perf_counter() - start) / args.batch)
        elapsed = statistics.median(seconds)
        algbw = size / elapsed / 1e9
        busbw = algbw * 2 * (world - 1) / world
        if rank == 0:
            print(f"{size:>12} {elapsed * 1e6:>12.1f} {algbw:>12.2f} {busbw:>12.2f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
