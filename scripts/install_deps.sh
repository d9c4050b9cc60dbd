#!/usr/bin/env bash
# Installs the Debian packages grove builds with, if any are missing. Nothing else is downloaded.
set -euo pipefail

packages=(cmake ninja-build g++ libeigen3-dev libgtest-dev libgmock-dev libbenchmark-dev zlib1g-dev
  dataset-fashion-mnist libcli11-dev nlohmann-json3-dev libgloo-dev libdnnl-dev python3)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$package")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "grove: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
