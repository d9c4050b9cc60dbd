#!/usr/bin/env bash
# README command 1: install what is missing, build grove, run the main job: train the reference
# MLP on Fashion-MNIST for one epoch (on the GPU when there is one), with its metrics, a plot of them
# and a checkpoint in runs/, then evaluate the checkpoint.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build --target grove -j "$(nproc)"
grove=./build/models/program/grove
mkdir -p runs
"$grove" info
"$grove" train --model mlp --epochs 1 --metrics runs/mlp.csv --checkpoint runs/mlp.safetensors
"$grove" plot runs/mlp.csv -o runs/mlp.svg
"$grove" eval --checkpoint runs/mlp.safetensors
echo "grove: metrics in runs/mlp.csv, their plot in runs/mlp.svg, the checkpoint in runs/mlp.safetensors"
echo "grove: the program is $grove; put it on PATH with: export PATH=\"$PWD/build/models/program:\$PATH\""
