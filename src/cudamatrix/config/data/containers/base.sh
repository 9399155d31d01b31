#!/usr/bin/env bash
# The local base image, for machines with no registry: a minimal Debian rootfs made by
# debootstrap (Python and its headers, packaging, g++ 12 and 11 for nvcc's host side),
# imported into Docker. Its tag and packages come from the installed cudamatrix.
#   containers/base.sh [TAG]      (root; needs debootstrap and a running Docker engine)
# `cudamatrix run --provider docker` does the same on its own when the tag is missing.
set -euo pipefail
spec() { python3 -c "from cudamatrix.providers.docker import $1; print($1)"; }
tag="${1:-$(spec BASE_TAG)}"
packages="$(spec BASE_PACKAGES)"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT
debootstrap --variant=minbase --include="$packages" bookworm "$root" "$mirror"
tar -C "$root" -c . | docker import --change 'CMD ["/bin/bash"]' - "$tag"
