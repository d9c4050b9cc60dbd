#!/usr/bin/env bash
# Side by side, in one run on one GPU machine: grove's training steps of the registered models
# (bench/model_step_bench, the cuda cases: eager, graphed, graphed-step) against the anchors'
# PyTorch (eager, reduce-overhead = torch.compile with CUDA graph trees, the whole step captured
# by hand in one CUDA graph) and JAX (jit of the whole step), then one table per model in
# microseconds per step with the ratios grove / peer. Only ratios from one run count: the
# machines are shared and their speed varies from day to day.
#
# Not a test: nothing here fails on a slow result. A peer that cannot run (no PyTorch, no JAX,
# an error) is skipped with a message and its columns show "-".
#
#   scripts/compare_gpu.sh                  # build (build-gpu), run everything, print the tables
#   SKIP_BUILD=1 scripts/compare_gpu.sh     # use the model_step_bench already built
#   BUILD_DIR=b ANCHORS=/path/to/anchors MODES=eager,ro scripts/compare_gpu.sh
#   scripts/compare_gpu.sh --table DIR      # only print the tables from DIR's outputs
#
# Environment:
#   BUILD_DIR   grove's CUDA build, relative to the repository root (default build-gpu)
#   ANCHORS     the folder holding pytorch_gpu_bench.py and jax_gpu_bench.py (default
#               ../shared/anchors from the repository root; a relative path is taken from the
#               directory the script is started in)
#   MODES       PyTorch modes for pytorch_gpu_bench.py (default eager,fullgraph,ro)
#   SKIP_BUILD  1: do not configure or build
#   RESULTS     where the outputs go (default $BUILD_DIR/compare_gpu): grove.json (Google
#               Benchmark JSON), pytorch.log and jax.log (their JSON lines), and the logs
#   GROVE_COMMIT  the commit to print for grove (default: git describe --always --dirty of the
#               checkout, which ends in "-dirty" when the files differ from that commit, as in a
#               copied tree whose history is older than its files)
# The outputs the tables read: grove.json, pytorch.log, jax.log (lines that are not JSON objects
# are ignored).
set -euo pipefail
start_dir=$(pwd)
repo=$(cd "$(dirname "$0")/.." && pwd)

absolute() {  # a path made absolute from the directory the script was started in
  case "$1" in
    /*) printf '%s\n' "$1" ;;
    *) printf '%s\n' "$start_dir/$1" ;;
  esac
}

# --- the tables, from the outputs in one folder ---
print_tables() {
  python3 - "$1" <<'PY'
import json, os, sys

results = sys.argv[1]

def json_lines(name):
    """The JSON objects of a log, one per line; other lines are skipped."""
    path = os.path.join(results, name)
    records = []
    if not os.path.exists(path):
        return records
    for line in open(path, errors="replace"):
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            records.append(json.loads(line))
        except ValueError:
            pass
    return records

# grove: BM_ModelStep/<model>/<mode>/cuda/manual_time, the median aggregate when there are repetitions,
# otherwise the single run.
grove = {}  # (model, mode) -> counters, or {"error": message}
path = os.path.join(results, "grove.json")
if os.path.exists(path):
    try:
        benchmarks = json.load(open(path)).get("benchmarks", [])
    except ValueError:
        benchmarks = []
        print(f"grove.json in {results} is not JSON; grove's columns are empty")
    for entry in benchmarks:
        # BM_ModelStep/<model>/<mode>/cuda/manual_time
        parts = entry.get("run_name", entry.get("name", "")).split("/")
        if len(parts) < 4 or parts[0] != "BM_ModelStep" or parts[3] != "cuda":
            continue
        key = (parts[1], parts[2])
        if entry.get("error_occurred"):
            grove[key] = {"error": entry.get("error_message", "error")}
            continue
        is_median = entry.get("run_type") == "aggregate" and entry.get("aggregate_name") == "median"
        if is_median or (entry.get("run_type") != "aggregate" and key not in grove):
            grove[key] = entry

peers = {}  # (model, peer mode) -> median_us, or None when it failed
for record in json_lines("pytorch.log") + json_lines("jax.log"):
    if "model" in record and "mode" in record:
        peers[(record["model"], record["mode"])] = record.get("median_us")

peer_columns = [("eager", "PT eager"), ("ro", "PT ro"), ("fullgraph", "PT graph"),
                ("jax_jit", "JAX jit")]
grove_modes = ["eager", "graphed", "graphed-step"]

def number(value, digits=1):
    return "-" if value is None else f"{value:.{digits}f}"

# Every model with results, in the order grove registered them (model_step_bench runs every model
# of the registry; the anchors have mlp, cnn and gpt), then any model only a peer ran.
models = list(dict.fromkeys(k[0] for k in list(grove) + list(peers)))
if not models:
    print(f"no results in {results}")
else:
    print("PT: PyTorch; PT ro: torch.compile reduce-overhead (CUDA graph trees); PT graph: the")
    print("whole step captured by hand in one CUDA graph; JAX jit: the whole step jitted.")
    print("grove: us = wall time per step; gpu us = CUDA events around the steps; host us = host")
    print("time to queue a step; peak = allocated bytes over the timed steps.")
for model in models:
    print(f"\n== {model}: microseconds per step (median); ratio = grove / peer (< 1: grove faster)")
    line = []
    for mode, label in peer_columns:
        if (model, mode) not in peers:
            line.append(f"{label} -")
        elif peers[(model, mode)] is None:
            line.append(f"{label} failed")
        else:
            line.append(f"{label} {peers[(model, mode)]:.1f}")
    print("  peers: " + " | ".join(line))
    header = f"  {'grove':<13}{'us':>9}{'gpu us':>9}{'host us':>9}{'peak MiB':>10}"
    header += "".join(f"{'/ ' + label:>12}" for _, label in peer_columns)
    print(header)
    for mode in grove_modes:
        entry = grove.get((model, mode))
        if entry is None:
            print(f"  {mode:<13}{'-':>9}")
            continue
        if "error" in entry:
            error = entry["error"]
            print(f"  {mode:<13}  failed: {error[:150] + ('...' if len(error) > 150 else '')}")
            continue
        us = entry.get("us_per_step")
        row = f"  {mode:<13}{number(us):>9}{number(entry.get('gpu_us_per_step')):>9}"
        row += f"{number(entry.get('host_us_per_step')):>9}{number(entry.get('peak_memory_MiB')):>10}"
        for peer_mode, _ in peer_columns:
            peer = peers.get((model, peer_mode))
            ratio = None if (us is None or not peer) else us / peer
            row += f"{number(ratio, 2):>12}"
        print(row)
PY
}

if [[ ${1:-} == --table ]]; then
  [[ -n ${2:-} ]] || { echo "usage: scripts/compare_gpu.sh --table RESULTS_DIR" >&2; exit 2; }
  print_tables "$(absolute "$2")"
  exit 0
fi

anchors=$(absolute "${ANCHORS:-$repo/../shared/anchors}")
modes=${MODES:-eager,fullgraph,ro}
cd "$repo"
build=${BUILD_DIR:-build-gpu}
results=$(absolute "${RESULTS:-$build/compare_gpu}")
mkdir -p "$results"
rm -f "$results"/grove.json "$results"/pytorch.log "$results"/jax.log

echo "== machine ($(date -u '+%Y-%m-%d %H:%M UTC'))"
nvidia-smi -L || { echo "compare_gpu: no NVIDIA GPU is visible (nvidia-smi -L failed)" >&2; exit 1; }
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores"
commit=${GROVE_COMMIT:-$(git -C "$repo" describe --always --dirty 2>/dev/null || echo '?')}
echo "grove: $commit; anchors: $anchors"

if [[ ${SKIP_BUILD:-0} != 1 ]]; then
  echo "== building grove with CUDA in $build"
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGROVE_CUDA=ON \
    -DGROVE_BUILD_BENCH=ON >"$results/configure.log" 2>&1 || {
    tail -20 "$results/configure.log"
    exit 1
  }
  cmake --build "$build" -j"$(nproc)" --target model_step_bench >"$results/build.log" 2>&1 || {
    tail -40 "$results/build.log"
    exit 1
  }
fi
bench=$build/bench/model_step_bench
[[ -x $bench ]] || { echo "compare_gpu: $bench is not built (drop SKIP_BUILD)" >&2; exit 1; }

echo "== grove (model_step_bench, cuda cases, medians of 3)"
timeout 300 "$bench" --benchmark_filter='/cuda/' --benchmark_repetitions=3 \
  --benchmark_min_time=0.3 --benchmark_report_aggregates_only=true \
  --benchmark_out="$results/grove.json" --benchmark_out_format=json \
  >"$results/grove.log" 2>&1 || echo "grove's benchmark failed: see $results/grove.log"
grep -E "_median|ERROR" "$results/grove.log" | awk '!seen[$0]++' || true

run_peer() {  # name, log, command...
  local name=$1 log=$2
  shift 2
  echo "== $name"
  if ! (cd "$results" && OUT="$results/$name-out" timeout 480 "$@") >"$log" 2>&1; then
    echo "$name failed or is not installed; skipped. Last lines of $log:"
    tail -3 "$log"
  fi
  grep '^{' "$log" || true
}
mkdir -p "$results/pytorch-out" "$results/jax-out"
rm -f "$results/pytorch-out/results.jsonl" "$results/jax-out/jax.jsonl"
if [[ -f $anchors/pytorch_gpu_bench.py ]]; then
  run_peer pytorch "$results/pytorch.log" python3 "$anchors/pytorch_gpu_bench.py" "$modes" \
    mlp,cnn,gpt
else
  echo "no $anchors/pytorch_gpu_bench.py (set ANCHORS); PyTorch skipped"
fi
if [[ -f $anchors/jax_gpu_bench.py ]]; then
  run_peer jax "$results/jax.log" python3 "$anchors/jax_gpu_bench.py"
else
  echo "no $anchors/jax_gpu_bench.py (set ANCHORS); JAX skipped"
fi

print_tables "$results"
echo
echo "outputs in $results"
