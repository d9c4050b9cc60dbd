#!/usr/bin/env bash
# The grove program end to end, as a user runs it: info; train on a subset with --json, metrics
# and a checkpoint; resume; eval; sample; plot; Ctrl-C (SIGINT) finishing the step, saving a
# checkpoint and saying how to resume; and mistakes refused with a message and a non-zero exit.
#   grove_cli_test.sh path/to/grove
set -euo pipefail
grove=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
expect_in() { grep -q -- "$1" "$2" || { cat "$2" >&2; fail "expected '$1' in $2"; }; }

# info: the build, every optional backend with its version or why it is missing, the devices.
"$grove" info >info.txt
for word in "build:" "backends:" "oneDNN" "Gloo" "devices:"; do expect_in "$word" info.txt; done

have_data=0
[[ -e /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]] && have_data=1

if [[ $have_data == 1 ]]; then
  # Train, with --json's one line on stdout and a metrics row per step.
  "$grove" train --model mlp --device cpu --epochs 1 --train-limit 640 --test-limit 200 \
    --metrics m.csv --checkpoint c.safetensors --json >out.json 2>err.txt
  python3 - out.json <<'PY' || fail "the --json line"
import json, sys
d = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
for key in ("model", "device", "mode", "precision", "epochs", "steps", "train_loss",
            "test_accuracy",
            "step_time_ms_median", "samples_per_s", "peak_memory_bytes", "graph_stats"):
    assert key in d, key
assert d["steps"] == 5 and d["model"] == "mlp" and 0 <= d["test_accuracy"] <= 1, d
assert d["precision"] == "fp32", d  # the CPU's default
assert set(d["graph_stats"]) == {"warmups", "recordings", "replays", "checkpoints", "fallbacks"}
PY
  [[ $(wc -l <m.csv) == 6 ]] || fail "metrics: expected a header and 5 rows"
  expect_in "epoch 1: test accuracy" err.txt
  # Resume for a second epoch: metrics continue, the step count goes on.
  "$grove" train --resume --checkpoint c.safetensors --epochs 2 --metrics m.csv --device cpu \
    --json >out2.json 2>err2.txt
  expect_in '"steps":10' out2.json
  expect_in "resuming from c.safetensors at step 5" err2.txt
  [[ $(wc -l <m.csv) == 11 ]] || fail "metrics after resume: expected a header and 10 rows"
  # A setting that shapes the numbers cannot change on resume.
  if "$grove" train --resume --checkpoint c.safetensors --lr 0.5 2>err3.txt; then
    fail "resume with another --lr"
  fi
  expect_in "a resumed run keeps the settings" err3.txt
  "$grove" eval --checkpoint c.safetensors --device cpu --json >eval.json 2>/dev/null
  expect_in '"test_accuracy"' eval.json
  "$grove" plot m.csv -o curve.svg 2>/dev/null
  expect_in "<svg" curve.svg
  # A model added through the registry trains, checkpoints and evaluates as its task says.
  "$grove" train --model resnet --device cpu --epochs 1 --train-limit 256 --test-limit 100 \
    --checkpoint r.safetensors --json >r.json 2>rerr.txt
  expect_in '"model":"resnet"' r.json
  expect_in '"test_accuracy"' r.json
  expect_in "grove train: resnet on cpu, eager, fp32, 1 epochs of 2 steps, sgd lr 0.1 " rerr.txt
  "$grove" eval --checkpoint r.safetensors --device cpu --json >reval.json 2>/dev/null
  expect_in '"test_loss"' reval.json
fi

# gpt: train a few steps, sample from the checkpoint.
"$grove" train --model gpt --device cpu --steps 3 --batch-size 2 --checkpoint g.safetensors \
  >/dev/null 2>gerr.txt
expect_in "unigram entropy" gerr.txt
"$grove" sample --checkpoint g.safetensors --prompt "The " --tokens 20 --device cpu >sample.txt
[[ $(head -c 4 sample.txt) == "The " ]] || fail "the sample starts with its prompt"

# A gpt of another shape: a preset and size flags; the header says them, and eval and sample
# rebuild the same shape from the checkpoint.
"$grove" train --model gpt --preset tiny --layers 1 --heads 2 --embd 32 --block 16 --tie-weights \
  --dropout 0.1 --device cpu --steps 2 --batch-size 2 --checkpoint s.safetensors >/dev/null 2>serr.txt
expect_in "grove train: gpt (preset=tiny layers=1 heads=2 embd=32 block=16 dropout=0.1 tie_weights=1)" \
  serr.txt
"$grove" eval --checkpoint s.safetensors --device cpu --json >seval.json 2>/dev/null
expect_in '"val_loss"' seval.json
"$grove" sample --checkpoint s.safetensors --prompt "ab" --tokens 5 --device cpu >/dev/null ||
  fail "sampling from a gpt of another shape"

# An llm.c token file (header: magic 20240520, version 1, the count; then uint16 ids): the gpt
# trains on its ids; ids beyond the model's vocabulary are refused with the preset to use.
token_file() {  # token_file PATH LARGEST_ID: 600 ids cycling 0..99, the last LARGEST_ID
  {
    printf '\x88\xd8\x34\x01\x01\x00\x00\x00\x58\x02\x00\x00'
    head -c 1012 /dev/zero
    for ((i = 0; i < 599; i++)); do printf "\\x$(printf %02x $((i % 100)))\\x00"; done
    printf "\\x$(printf %02x $(($2 % 256)))\\x$(printf %02x $(($2 / 256)))"
  } >"$1"
}
token_file shard.bin 99
"$grove" train --model gpt --data shard.bin --device cpu --steps 2 --batch-size 2 \
  --block 16 >/dev/null 2>tferr.txt || { cat tferr.txt >&2; fail "training on a token file"; }
expect_in "corpus: 600 tokens of a token file, ids up to 99" tferr.txt

# Options from a file, a section per command; flags on the command line win over it.
printf '[train]\nmodel = "gpt"\nsteps = 3\nbatch-size = 2\nlayers = 1\nblock = 16\n' >run.toml
"$grove" train --config run.toml --device cpu --steps 2 >/dev/null 2>cferr.txt ||
  { cat cferr.txt >&2; fail "training with --config"; }
expect_in "grove train: gpt (layers=1 block=16) on cpu, eager, fp32, 2 steps" cferr.txt
# The effective configuration beside a checkpoint, which --config reads back: the same run.
"$grove" train --config run.toml --device cpu --lr 0.001 --checkpoint cf/a.safetensors \
  >/dev/null 2>cf1.txt || { cat cf1.txt >&2; fail "training with --config and --checkpoint"; }
expect_in "lr = 0.001" cf/a.toml
expect_in "layers = 1" cf/a.toml
"$grove" train --config cf/a.toml --device cpu >/dev/null 2>cf2.txt ||
  { cat cf2.txt >&2; fail "training with the configuration a run wrote"; }
[[ $(head -1 cf1.txt) == "$(head -1 cf2.txt)" ]] || fail "the written configuration is not the run's"

# Evaluations go into the metrics file (the last columns of their step's row), and the plot
# draws them, here on a log axis.
"$grove" train --model gpt --layers 1 --block 16 --steps 3 --batch-size 2 --device cpu \
  --metrics e.csv >/dev/null 2>&1 || fail "training with --metrics"
[[ $(tail -1 e.csv | cut -d, -f1,7) =~ ^3,[0-9] ]] || { cat e.csv >&2; fail "no val_loss in step 3's row"; }
"$grove" plot e.csv -o e.svg --log 2>/dev/null || fail "plotting on a log axis"
expect_in 'id="eval-loss"' e.svg
expect_in "loss (log scale)" e.svg

# A checkpoint in folders that do not exist yet: they are made before the first step.
"$grove" train --model gpt --device cpu --steps 1 --batch-size 2 \
  --checkpoint new/folder/g.safetensors >/dev/null 2>&1 || fail "a checkpoint in a new folder"
[[ -s new/folder/g.safetensors ]] || fail "the checkpoint in a new folder was not written"

# Ctrl-C: the run stops after its step, saves, and says how to resume (exit 130).
"$grove" train --model gpt --device cpu --steps 100000 --batch-size 2 --metrics i.csv \
  --checkpoint i.safetensors >/dev/null 2>ierr.txt &
pid=$!
for _ in $(seq 600); do
  [[ -s i.csv && $(wc -l <i.csv) -ge 3 ]] && break
  sleep 0.1
done
kill -INT $pid
status=0
wait $pid || status=$?
[[ $status == 130 ]] || { cat ierr.txt >&2; fail "exit status after Ctrl-C: $status"; }
# The hint repeats what the checkpoint does not hold (here --device, --steps and --metrics).
expect_in "resume with: grove train --resume --checkpoint i.safetensors --device cpu --steps 100000 --metrics i.csv" ierr.txt
"$grove" eval --checkpoint i.safetensors --device cpu >/dev/null 2>&1 || fail "the saved checkpoint"

# Ctrl-C without --checkpoint saves <model>-interrupted.safetensors; the resumed run, once
# finished, leaves its checkpoint under the model's plain name.
"$grove" train --model gpt --device cpu --steps 100000 --batch-size 2 --metrics j.csv \
  >/dev/null 2>jerr.txt &
pid=$!
for _ in $(seq 600); do
  [[ -s j.csv && $(wc -l <j.csv) -ge 3 ]] && break
  sleep 0.1
done
kill -INT $pid
wait $pid || true
[[ -s gpt-interrupted.safetensors ]] || { cat jerr.txt >&2; fail "no gpt-interrupted.safetensors"; }
steps_done=$(($(wc -l <j.csv) - 1))
"$grove" train --resume --checkpoint gpt-interrupted.safetensors --device cpu \
  --steps $((steps_done + 2)) >/dev/null 2>jerr2.txt || { cat jerr2.txt >&2; fail "resuming"; }
[[ -s gpt.safetensors && ! -e gpt-interrupted.safetensors ]] ||
  { cat jerr2.txt >&2; fail "the finished run's checkpoint is not gpt.safetensors"; }
expect_in "the run is complete" jerr2.txt

# SIGKILL while checkpoints are being written (one every step): the checkpoint on disk is always
# a whole, loadable one, never a half-written file.
for delay in 0.7 1.1 1.6; do
  "$grove" train --model gpt --device cpu --steps 100000 --batch-size 1 --checkpoint k.safetensors \
    --checkpoint-every 1 >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 600); do [[ -s k.safetensors ]] && break; sleep 0.05; done
  sleep "$delay"
  kill -KILL $pid
  wait $pid 2>/dev/null || true
  "$grove" eval --checkpoint k.safetensors --device cpu >/dev/null 2>kerr.txt ||
    { cat kerr.txt >&2; fail "the checkpoint after SIGKILL ($delay s) does not load"; }
done

# --version: the project's version, exit code 0.
"$grove" --version >version.txt || fail "grove --version exited non-zero"
grep -Eq '^grove [0-9]+\.[0-9]+\.[0-9]+$' version.txt || { cat version.txt >&2; fail "grove --version"; }

# Mistakes: one line saying what is wrong, exit code 2.
expect_mistake() {  # expect_mistake WORDS ARGS...
  local words=$1
  shift
  local status=0
  "$grove" "$@" >/dev/null 2>mistake.txt || status=$?
  [[ $status == 2 ]] || { cat mistake.txt >&2; fail "grove $*: exit status $status, expected 2"; }
  [[ $(wc -l <mistake.txt) == 1 ]] || { cat mistake.txt >&2; fail "grove $*: not one line"; }
  expect_in "$words" mistake.txt
}
expect_mistake "vgg" train --model vgg
expect_mistake "--bogus" train --model mlp --bogus
expect_mistake "--epochs" train --model mlp --epochs
expect_mistake "batch size: expected at least 1" train --model mlp --batch-size 0 --device cpu
expect_mistake "cuda" train --model mlp --device cuda:7
expect_mistake "--resume needs --checkpoint" train --model mlp --resume --device cpu
expect_mistake "missing.safetensors" eval --checkpoint missing.safetensors
expect_mistake "dataset-fashion-mnist" train --model mlp --data nowhere --device cpu
expect_mistake "frobnicate" frobnicate
# Numbers are checked as typed: no wrap-around of -1, no clamping of a number too large.
expect_mistake "expected a whole number from 0 to 18446744073709551615, got -1" \
  train --model mlp --seed -1 --device cpu
expect_mistake "got -2" train --model gpt --checkpoint-every -2 --device cpu
expect_mistake "got 99999999999999999999" train --model mlp --batch-size 99999999999999999999
expect_mistake "the gpt trains for a number of steps" train --model gpt --epochs 3 --device cpu
expect_mistake "mlp has one fixed shape, but got layers=2; --preset and the size flags apply to gpt" \
  train --model mlp --layers 2 --device cpu --epochs 1 --train-limit 8
expect_mistake "gpt: no preset named 'huge'; the presets are tiny, char, gpt2s" \
  train --model gpt --preset huge --device cpu --steps 1
printf '[train]\nmodle = "gpt"\n' >typo.toml
expect_mistake "--config: INI was not able to parse train.modle (a key names no option" \
  train --config typo.toml --device cpu
token_file wide.bin 300
expect_mistake "holds token ids up to 300, but the model's vocabulary has 128 tokens" \
  train --model gpt --data wide.bin --device cpu --steps 1 --block 16
expect_mistake "gpt: embd (30) must be divisible by heads (4)" \
  train --model gpt --embd 30 --device cpu --steps 1
expect_mistake "--preset: a resumed run keeps the settings it was saved with" \
  train --model gpt --resume --checkpoint s.safetensors --preset char --device cpu --steps 3
: >empty.txt
expect_mistake "empty.txt is empty" train --model gpt --data empty.txt --steps 1 --device cpu
# Where the results cannot be written, before any work (not after the whole run).
expect_mistake "--checkpoint /proc/grove-none/c.safetensors: cannot make the folder" \
  train --model gpt --steps 1 --batch-size 2 --device cpu --checkpoint /proc/grove-none/c.safetensors
expect_mistake "--save-logits /proc/grove-none/l.safetensors: cannot make the folder" \
  eval --checkpoint g.safetensors --device cpu --save-logits /proc/grove-none/l.safetensors
if [[ $have_data == 1 ]]; then
  expect_mistake "larger than the training set" train --model mlp --batch-size 999999 --device cpu
  expect_mistake "holds a mlp model; sampling text needs a gpt checkpoint" \
    sample --checkpoint c.safetensors --device cpu
fi
echo "grove_cli_test: passed"
