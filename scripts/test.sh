#!/usr/bin/env bash
# README command 2: install what is missing, build everything, run the whole test suite, build a
# program against the installed package, then build and run the tests once more under
# AddressSanitizer + UndefinedBehaviorSanitizer.
# Exits non-zero if any build step or test fails. Tests labelled `gpu` skip without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
jobs="$(nproc)"

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure -j "$jobs"
scripts/consumer_test.sh build  # grove installed as a CMake package, used by another project

# Sanitizers: host code only (GROVE_CUDA=OFF keeps this build short), every CPU test but the
# training runs on real data (label `training`: minutes in a debug build; their code paths run
# under the sanitizers in the smaller models tests).
cmake -S . -B build-sanitize -G Ninja -DCMAKE_BUILD_TYPE=Debug -DGROVE_SANITIZE=ON \
  -DGROVE_CUDA=OFF -DGROVE_BUILD_BENCH=OFF
cmake --build build-sanitize -j "$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-sanitize --output-on-failure -j "$jobs" -LE "gpu|training"
echo "grove: all tests passed"
