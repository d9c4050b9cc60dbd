#!/usr/bin/env bash
# Side by side, in one run on this machine (CPU only): libtorch 1.13 (Debian) and grove.
#  1. Per-op overhead, with and without autograd (2 threads): the anchors' op_overhead next to
#     grove's dispatch_bench, matmul_bench and autograd_bench.
#  2. The three reference models' training steps (zero grad, forward, loss, backward, optimizer
#     step) at each thread count of THREADS: grove's bench/model_step_bench CPU cases
#     (BM_ModelStep/<mlp|cnn|gpt>/<eager|graphed|graphed-step>/cpu: random data of the real
#     shapes, the anchors' optimizers) against the anchors' mnist_bench (mlp, cnn: one epoch of
#     Fashion-MNIST, median of steps 6-55) and gpt_bench (5 warm-up steps, then GPT_TIMED_STEPS
#     timed ones, median). Ends with one table: model x mode, grove ms per step, libtorch ms per
#     step (libtorch runs eagerly only, so its number is the same for every grove mode), and the
#     ratio grove / libtorch (below 1: grove is faster).
# Not a test: nothing fails on a slow result; a grove case that cannot run shows its error in the
# table. The machine is shared and its speed varies: only ratios from one run mean anything.
# grove's figure is its us_per_step (wall time per step over --benchmark_min_time seconds after
# its warm-up), the median of REPETITIONS repetitions; libtorch's is the median of its timed
# steps. The data and the SGD rate differ (random vs real data, lr 0.01 vs 0.1) but change no
# kernel, so they do not change the time.
#
# Needs the anchors' libtorch harness (../shared/anchors/libtorch or ANCHORS=path) and the Debian
# packages libtorch-dev, libopenblas0-openmp (without it libtorch runs on reference BLAS, ~30x
# slower matmuls), zlib1g-dev and dataset-fashion-mnist: installed here if missing (with sudo
# when not root; apt-get update first when one has no install candidate). The GPT corpus is the
# anchors' one: the regular files under common-licenses/ of base-files, sorted by name.
# Builds in build-compare/ (libtorch: the harness; grove: a CPU-only Release build, -j2).
#
# Usage: scripts/compare_libtorch.sh [calls]     (calls: per-op timed calls, default 100000)
# Environment:
#   ANCHORS          the libtorch harness folder (default ../shared/anchors/libtorch, from the
#                    repository root)
#   THREADS          thread counts for the model steps, in order (default "2 1"); each run sets
#                    OMP_NUM_THREADS (grove reads it) and passes the count to the harness
#   MODELS           models for the model steps (default "mlp cnn gpt"; "" skips part 2)
#   SKIP_OPS=1       skip part 1 (the per-op overhead)
#   GPT_TIMED_STEPS  timed steps of the libtorch GPT (the harness's default is 50; 20 keeps it
#                    at ~3 s per thread count)
#   REPETITIONS      grove's repetitions per case (default 3; the table shows their median)
#   MIN_TIME         grove's --benchmark_min_time per repetition, seconds (default 1)
# The raw outputs stay in build-compare/results/ (grove_<model>_t<N>.json and .txt,
# libtorch_<model>_t<N>.log). Each model runs grove then libtorch back to back (the load average
# before each is printed): on a loaded 2-core machine 2-thread runs suffer most.
set -euo pipefail
cd "$(dirname "$0")/.."
anchors=${ANCHORS:-../shared/anchors/libtorch}
calls=${1:-100000}
threads_list=${THREADS:-2 1}
models=${MODELS-mlp cnn gpt}
skip_ops=${SKIP_OPS:-0}
repetitions=${REPETITIONS:-3}
min_time=${MIN_TIME:-1}
for file in op_overhead.cpp mnist_bench.cpp gpt_bench.cpp; do
  [ -f "$anchors/$file" ] || { echo "no $file in $anchors (set ANCHORS)" >&2; exit 2; }
done
for model in $models; do
  case $model in mlp | cnn | gpt) ;; *) echo "unknown model '$model' in MODELS" >&2; exit 2 ;; esac
done

# --- Debian packages ---
missing=()
for package in libtorch-dev libopenblas0-openmp zlib1g-dev dataset-fashion-mnist; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  for package in "${missing[@]}"; do
    if ! apt-cache policy "$package" 2>/dev/null | grep -q "Candidate: [^(]"; then
      $sudo apt-get update -qq
      break
    fi
  done
  echo "== installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# --- builds ---
scripts/install_deps.sh # grove's own build dependencies
work=build-compare
results=$work/results
mkdir -p "$work" "$results"
libtorch_targets=()
grove_targets=()
if [ "$skip_ops" != 1 ]; then
  libtorch_targets+=(op_overhead)
  grove_targets+=(dispatch_bench matmul_bench autograd_bench)
fi
[ -n "$models" ] && libtorch_targets+=(mnist_bench gpt_bench) && grove_targets+=(model_step_bench)
[ ${#grove_targets[@]} -gt 0 ] || { echo "nothing to do (SKIP_OPS=1 and MODELS empty)" >&2; exit 2; }
echo "== building (libtorch harness, grove CPU Release) in $work"
cmake -S "$anchors" -B "$work/libtorch" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/libtorch" -j2 --target "${libtorch_targets[@]}" >/dev/null
cmake -S . -B "$work/grove" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGROVE_CUDA=OFF \
  -DGROVE_BUILD_TESTS=OFF >/dev/null
cmake --build "$work/grove" -j2 --target "${grove_targets[@]}" >/dev/null

# --- 1. per-op overhead (2 threads) ---
if [ "$skip_ops" != 1 ]; then
  export OMP_NUM_THREADS=2
  echo "== libtorch per-op (median of $calls individually timed calls, 2 threads)"
  "$work/libtorch/op_overhead" 2 "$calls" | grep RESULT
  echo "== grove per-op (Google Benchmark, median of 5 repetitions, 2 threads)"
  for bench in dispatch_bench matmul_bench autograd_bench; do
    "$work/grove/bench/$bench" --benchmark_repetitions=5 --benchmark_report_aggregates_only |
      grep median
  done
fi

# --- 2. model training steps ---
[ -n "$models" ] || exit 0
mnist=$(dirname "$(dpkg -L dataset-fashion-mnist | grep 'train-images-idx3-ubyte.gz$')")
mapfile -t corpus < <(dpkg -L base-files | grep '/common-licenses/' | while read -r f; do
  [ -f "$f" ] && [ ! -L "$f" ] && echo "$f"; done | sort)
for threads in $threads_list; do
  export OMP_NUM_THREADS=$threads
  # One model at a time, grove then libtorch back to back, so both see about the same load.
  for model in $models; do
    grove_out=$results/grove_${model}_t$threads
    log=$results/libtorch_${model}_t$threads.log
    rm -f "$grove_out".json "$grove_out".txt "$log"
    echo "== $threads thread(s), $model: grove ($repetitions x ${min_time} s per mode)," \
      "load average $(cut -d' ' -f1-3 /proc/loadavg)"
    "$work/grove/bench/model_step_bench" --benchmark_filter="^BM_ModelStep/$model/[^/]+/cpu" \
      --benchmark_repetitions="$repetitions" --benchmark_report_aggregates_only=true \
      --benchmark_min_time="$min_time" --benchmark_out="$grove_out.json" \
      --benchmark_out_format=json >"$grove_out.txt" 2>&1 ||
      echo "   model_step_bench failed (rc $?); see $grove_out.txt"
    echo "== $threads thread(s), $model: libtorch, load average $(cut -d' ' -f1-3 /proc/loadavg)"
    if [ "$model" = gpt ]; then
      "$work/libtorch/gpt_bench" "$threads" "${corpus[@]}" >"$log" 2>&1 || true
    else
      "$work/libtorch/mnist_bench" "$model" "$threads" "$mnist" >"$log" 2>&1 || true
    fi
    grep -E '^libtorch |^RESULT' "$log" | sed 's/^/   /' || echo "   no RESULT; see $log"
  done
done

python3 - "$results" "$models" $threads_list <<'PY'
import json, os, re, sys

results, models, thread_counts = sys.argv[1], sys.argv[2].split(), sys.argv[3:]
modes = ["eager", "graphed", "graphed-step"]

def grove_cases(model, threads):
    """{mode: ms per step or an error string} from one model_step_bench JSON."""
    path = os.path.join(results, f"grove_{model}_t{threads}.json")
    cases = {}
    if not os.path.exists(path):
        return cases
    try:
        benchmarks = json.load(open(path)).get("benchmarks", [])
    except ValueError:  # a run that died half way
        return cases
    for entry in benchmarks:
        match = re.match(r"BM_ModelStep/(\w+)/([\w-]+)/cpu", entry.get("run_name", entry["name"]))
        if not match:
            continue
        key = match.group(2)
        if entry.get("error_occurred"):
            cases.setdefault(key, "error: " + entry.get("error_message", "?"))
        elif entry.get("aggregate_name", "median") == "median" and "us_per_step" in entry:
            cases[key] = entry["us_per_step"] / 1e3
    return cases

def libtorch_ms(model, threads):
    path = os.path.join(results, f"libtorch_{model}_t{threads}.log")
    if os.path.exists(path):
        for line in open(path, errors="replace"):
            match = re.search(r"^RESULT .*median_step_ms=([0-9.]+)", line)
            if match:
                return float(match.group(1))
    return None

print()
print("Training step, CPU, ms per step (grove: median of repetitions of its mean step;")
print("libtorch: median of its timed steps, eager). ratio = grove / libtorch, below 1 = faster.")
print(f"{'threads':>7}  {'model':<5} {'mode':<13} {'grove ms':>10} {'libtorch ms':>12} {'ratio':>7}")
errors = []
for threads in thread_counts:
    for model in models:
        cases = grove_cases(model, threads)
        reference = libtorch_ms(model, threads)
        for mode in modes:
            grove = cases.get(mode)
            ref_text = f"{reference:12.3f}" if reference is not None else f"{'-':>12}"
            if isinstance(grove, float):
                ratio = f"{grove / reference:7.2f}" if reference else f"{'-':>7}"
                grove_text = f"{grove:10.3f}"
            else:
                ratio, grove_text = f"{'-':>7}", f"{'error' if grove else '-':>10}"
                if grove:
                    errors.append(f"  {model}/{mode}, {threads} thread(s): {grove[:300]}")
            print(f"{threads:>7}  {model:<5} {mode:<13} {grove_text} {ref_text} {ratio}")
if errors:
    print("grove cases that did not run:")
    print("\n".join(errors))
PY
