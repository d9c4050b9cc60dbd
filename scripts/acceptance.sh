#!/usr/bin/env bash
# The models' acceptance runs on real data (minutes, not part of the tests): each reference model
# trained with the program, eagerly and graphed, printing one JSON line per run.
#   mlp: 5 epochs (test accuracy >= 0.88); cnn: 3 epochs (>= 0.90); both for 1 epoch with the
#   anchors' settings (SGD lr 0.1, momentum 0.9, batch 128: libtorch reaches 0.822 and 0.871);
#   gpt: 2000 steps (validation loss well below the corpus's unigram entropy, printed first).
#   DEVICE=cuda scripts/acceptance.sh   # on a GPU (default: cpu)
#   PRECISION=bf16 DEVICE=cuda scripts/acceptance.sh   # in bf16 (or fp16; default: grove's)
#   GROVE=path/to/grove RUNS="mlp cnn" scripts/acceptance.sh
set -euo pipefail
cd "$(dirname "$0")/.."
grove=${GROVE:-build/models/program/grove}
device=${DEVICE:-cpu}
runs=${RUNS:-mlp cnn anchors gpt}
[[ -x $grove ]] || { echo "acceptance: build grove first (scripts/demo.sh builds it)" >&2; exit 1; }
precision=()
[[ -n ${PRECISION:-} ]] && precision=(--precision "$PRECISION")
train() { "$grove" train --device "$device" --plain --json "${precision[@]}" "$@"; }
for run in $runs; do
  case $run in
    mlp) for mode in eager graphed; do train --model mlp --mode $mode --epochs 5; done ;;
    cnn) for mode in eager graphed; do train --model cnn --mode $mode --epochs 3; done ;;
    anchors) for model in mlp cnn; do train --model $model --epochs 1 --schedule constant; done ;;
    gpt) for mode in eager graphed; do train --model gpt --mode $mode --steps 2000; done ;;
    *) echo "acceptance: unknown run '$run' (mlp, cnn, anchors, gpt)" >&2; exit 2 ;;
  esac
done
