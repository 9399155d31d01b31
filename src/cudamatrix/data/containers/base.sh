#!/usr/bin/env bash
# The local base image, for machines with no registry: a minimal Debian rootfs made by
# debootstrap (Python, packaging, g++ 12 and 11 for nvcc's host side), imported into Docker.
#   containers/base.sh [TAG]      (root; needs debootstrap and a running Docker engine)
# `cudamatrix run --provider docker` does the same on its own when the tag is missing.
set -euo pipefail
tag="${1:-cudamatrix/base:bookworm-gcc11}"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT
debootstrap --variant=minbase --include=python3,python3-packaging,g++,g++-11 bookworm "$root" "$mirror"
tar -C "$root" -c . | docker import --change 'CMD ["/bin/bash"]' - "$tag"
