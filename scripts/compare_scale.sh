#!/usr/bin/env bash
# grove's GPT training step where compute matters, beside its peers, in one run on one GPU
# machine: bench/cuda_gpt_scale_bench (eager and graphed-step, bf16 by default) against the
# anchors' pytorch_scale_bench.py (PyTorch bf16 autocast, and nanoGPT's recipe with and without
# torch.compile) at the char and gpt2s presets, and llm.c's GPT-2 step (anchors/llmc/run_llmc.sh,
# random tokens, B 8, T 1024, cuDNN attention) at gpt2s; then one table per preset: ms per step,
# tokens/s, peak MiB, and the ratio grove / peer of each grove mode against each peer. Only
# ratios from one run count: the machines are shared and their speed varies from day to day.
# Kernels per step are not counted here: profile a mode with ncu (bench/README.md).
#
# Not a test: nothing here fails on a slow result. A peer that cannot run is reported and its
# rows are missing.
#
#   scripts/compare_scale.sh                  # build (build-gpu), run everything, print the tables
#   SKIP_BUILD=1 scripts/compare_scale.sh     # use the cuda_gpt_scale_bench already built
#   scripts/compare_scale.sh --table DIR      # only print the tables from DIR's outputs
#
# Environment:
#   BUILD_DIR     grove's CUDA build, relative to the repository root (default build-gpu)
#   ANCHORS       the folder holding pytorch_scale_bench.py and llmc/ (default ../shared/anchors
#                 from the repository root; a relative path is taken from the starting directory)
#   PRESETS       default char,gpt2s
#   GROVE_MODES   cuda_gpt_scale_bench modes (default bf16,bf16-graph)
#   TORCH_MODES   pytorch_scale_bench.py modes (default bf16,recipe,recipe-compile)
#   LLMC          0: skip llm.c (default 1; it needs the cudnn-frontend headers that
#                 scripts/install_deps.sh puts in third_party/cudnn-frontend)
#   RESULTS       where the outputs go (default $BUILD_DIR/compare_scale): grove.jsonl,
#                 torch.jsonl (their JSON lines) and llmc-run.log (llm.c's step lines)
set -euo pipefail
start_dir=$(pwd)
repo=$(cd "$(dirname "$0")/.." && pwd)

absolute() {  # a path made absolute from the directory the script was started in
  case "$1" in
    /*) printf '%s\n' "$1" ;;
    *) printf '%s\n' "$start_dir/$1" ;;
  esac
}

table() {  # prints the tables from the outputs in $1
  python3 - "$1" <<'PY'
import json, os, re, statistics, sys
results = sys.argv[1]

def lines(name):
    path = os.path.join(results, name)
    if not os.path.exists(path):
        return []
    rows = []
    for line in open(path):
        line = line.strip()
        if line.startswith("{"):
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    return rows

rows = {}  # (preset, "grove bf16-graph") -> row
for r in lines("grove.jsonl"):
    if "ms_per_step" in r:
        rows[(r["preset"], "grove " + r["mode"])] = r
for r in lines("torch.jsonl"):
    if "ms_per_step" in r:
        rows[(r["preset"], "torch " + r["mode"])] = r
    elif "error" in r:
        print(f"torch {r.get('mode')} at {r.get('preset')} did not run: {r['error']}")
llmc = os.path.join(results, "llmc-run.log")
if os.path.exists(llmc):
    # llm.c prints "step    2/40 | ... | 17.30 ms | ... | 473000 tok/s"; its first step includes
    # setup, so the median of the later ones.
    times = []
    for line in open(llmc):
        m = re.match(r"step\s+(\d+)/\d+ .*\|\s*([\d.]+) ms", line)
        if m and int(m.group(1)) >= 2:
            times.append(float(m.group(2)))
    if times:
        ms = statistics.median(times)
        rows[("gpt2s", "llm.c")] = {"ms_per_step": ms, "tokens_per_s": round(8 * 1024 / ms * 1e3),
                                    "peak_MiB": None}
for preset in sorted({p for p, _ in rows}, key=lambda p: ["char", "gpt2s"].index(p)
                     if p in ("char", "gpt2s") else 9):
    names = [n for p, n in rows if p == preset]
    print(f"\n{preset}")
    print(f"{'':24s} {'ms/step':>9s} {'tokens/s':>10s} {'peak MiB':>9s}")
    for n in names:
        r = rows[(preset, n)]
        peak = "-" if r.get("peak_MiB") is None else f"{r['peak_MiB']:.0f}"
        print(f"{n:24s} {r['ms_per_step']:9.2f} {r['tokens_per_s']:10d} {peak:>9s}")
    groves = [n for n in names if n.startswith("grove ")]
    peers = [n for n in names if not n.startswith("grove ")]
    if groves and peers:
        print("ratios grove / peer (below 1: grove is faster)")
        for g in groves:
            cells = [f"{p}: {rows[(preset, g)]['ms_per_step'] / rows[(preset, p)]['ms_per_step']:.2f}x"
                     for p in peers]
            print(f"  {g:22s} " + "  ".join(cells))
PY
}

if [ "${1:-}" = "--table" ]; then
  table "$(absolute "$2")"
  exit 0
fi

build_dir=${BUILD_DIR:-build-gpu}
anchors=$(absolute "${ANCHORS:-$repo/../shared/anchors}")
results=$(absolute "${RESULTS:-$repo/$build_dir/compare_scale}")
presets=${PRESETS:-char,gpt2s}
mkdir -p "$results"
cd "$repo"
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGROVE_CUDA=ON \
    -DGROVE_BUILD_BENCH=ON >"$results/configure.log" 2>&1 ||
    { tail -20 "$results/configure.log"; exit 1; }
  cmake --build "$build_dir" --target cuda_gpt_scale_bench >"$results/build.log" 2>&1 ||
    { tail -40 "$results/build.log"; exit 1; }
fi
echo "grove: cuda_gpt_scale_bench $presets ${GROVE_MODES:-bf16,bf16-graph}"
"./$build_dir/bench/cuda_gpt_scale_bench" "$presets" "${GROVE_MODES:-bf16,bf16-graph}" |
  tee "$results/grove.jsonl"
if [ -f "$anchors/pytorch_scale_bench.py" ]; then
  echo "PyTorch: pytorch_scale_bench.py $presets ${TORCH_MODES:-bf16,recipe,recipe-compile}"
  python3 "$anchors/pytorch_scale_bench.py" "$presets" "${TORCH_MODES:-bf16,recipe,recipe-compile}" |
    tee "$results/torch.jsonl" || echo "PyTorch's run failed; its rows are missing"
else
  echo "no $anchors/pytorch_scale_bench.py: PyTorch skipped"
fi
if [ "${LLMC:-1}" = 1 ] && [[ ",$presets," == *",gpt2s,"* ]]; then
  frontend="$repo/third_party/cudnn-frontend/include"
  if [ -x "$anchors/llmc/run_llmc.sh" ] || [ -f "$anchors/llmc/run_llmc.sh" ]; then
    echo "llm.c: run_llmc.sh (B 8, T 1024, cuDNN attention)"
    # llm.c's Makefile looks for the headers in $HOME/cudnn-frontend/include whatever
    # CUDNN_FRONTEND_PATH says: a HOME of its own that holds them, for this command only.
    home=$(mktemp -d)
    ln -s "$repo/third_party/cudnn-frontend" "$home/cudnn-frontend"
    HOME="$home" CUDNN_FRONTEND_PATH="$frontend" OUT="$results" bash "$anchors/llmc/run_llmc.sh" ||
      echo "llm.c's run failed; see $results/llmc-build.log"
    rm -rf "$home"
  else
    echo "no $anchors/llmc/run_llmc.sh: llm.c skipped"
  fi
fi
table "$results"
