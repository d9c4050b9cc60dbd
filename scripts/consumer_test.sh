#!/usr/bin/env bash
# grove as a library: installs a built grove into a prefix (cmake --install) and builds and runs
# tests/consumer, a program that finds it with find_package(grove CONFIG) and links grove::grove
# alone. Usage: scripts/consumer_test.sh [build dir] (default: build; it must be built).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
prefix="$build/consumer-prefix"
rm -rf "$prefix" "$build/consumer"
cmake --install "$build" --prefix "$prefix" >/dev/null
cmake -S tests/consumer -B "$build/consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$PWD/$prefix" >/dev/null
cmake --build "$build/consumer" >/dev/null
"$build/consumer/grove_consumer"
echo "grove: the installed package builds and runs a consumer"
