#!/usr/bin/env bash
# Installs the Debian packages grove builds with, if any are missing; on a machine with the CUDA
# toolkit, also the cudnn-frontend headers (fused attention), which Debian lacks: the include/
# of PyPI's nvidia-cudnn-frontend wheel, unpacked into third_party/cudnn-frontend. Nothing else
# is downloaded, and nothing at build or run time.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake ninja-build g++ libeigen3-dev libgtest-dev libgmock-dev libbenchmark-dev zlib1g-dev
  dataset-fashion-mnist libcli11-dev nlohmann-json3-dev libgloo-dev libdnnl-dev python3 python3-pip)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "grove: installing ${missing[*]}"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The cudnn-frontend headers, pinned: a wheel is a zip; only its include/ and licence are kept.
frontend_version=1.32.0
frontend=third_party/cudnn-frontend
if { command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; } &&
  [ "$(cat "$frontend/VERSION" 2>/dev/null)" != "$frontend_version" ]; then
  echo "grove: fetching the cudnn-frontend $frontend_version headers into $frontend"
  wheel_dir=$(mktemp -d)
  trap 'rm -rf "$wheel_dir"' EXIT
  # Optional: without PyPI the build goes on, and 16-bit attention runs the float32 kernels.
  if python3 -m pip download --quiet --no-deps --only-binary=:all: --dest "$wheel_dir" \
    "nvidia-cudnn-frontend==$frontend_version"; then
    rm -rf "$frontend" && mkdir -p "$frontend"
    python3 - "$wheel_dir"/*.whl "$frontend" <<'PY'
import sys, zipfile
wheel, target = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as archive:
    for name in archive.namelist():
        if name.startswith("include/") or "/licenses/" in name:
            archive.extract(name, target)
PY
    echo "$frontend_version" > "$frontend/VERSION"
  else
    echo "grove: could not fetch nvidia-cudnn-frontend $frontend_version from PyPI; building" \
      "without it (16-bit attention runs the float32 kernels)" >&2
  fi
fi
