#!/usr/bin/env bash
# README command 1: install what is missing, build grove, run the main job.
# (Until the training issue lands, the main job is `grove demo`: a tour of the core layer.)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build --target grove -j "$(nproc)"
./build/models/grove demo
