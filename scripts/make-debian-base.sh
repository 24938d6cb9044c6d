#!/usr/bin/env bash
# Build a local Python base image from Debian packages, for hosts that cannot
# pull from a container registry. With a registry, skip this: the Dockerfile's
# default base (python:3.11-slim) is used instead.
#
#   scripts/make-debian-base.sh [TAG] [SUITE]
#
# Needs root, debootstrap and a reachable Debian mirror (apt's own).
set -euo pipefail
TAG="${1:-taskforge/debian-python:bookworm}"
SUITE="${2:-bookworm}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"

if docker image inspect "$TAG" >/dev/null 2>&1; then
  echo "base image $TAG already exists"; exit 0
fi
command -v debootstrap >/dev/null || { echo "error: debootstrap is not installed (apt-get install debootstrap)" >&2; exit 2; }

ROOT="$(mktemp -d /var/tmp/tf-rootfs.XXXXXX)"
trap 'rm -rf "$ROOT"' EXIT
debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
  "$SUITE" "$ROOT" "$MIRROR" >/tmp/tf-debootstrap.log 2>&1 \
  || { tail -20 /tmp/tf-debootstrap.log >&2; echo "error: debootstrap failed" >&2; exit 1; }
# Trim what a test sandbox never needs.
rm -rf "$ROOT"/var/cache/apt/archives/*.deb "$ROOT"/var/lib/apt/lists/* \
       "$ROOT"/usr/share/doc/* "$ROOT"/usr/share/man/* "$ROOT"/usr/share/locale/*
tar -C "$ROOT" -c . | docker import \
  -c 'ENV LANG=C.UTF-8 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  -c 'CMD ["/bin/bash"]' - "$TAG" >/dev/null
echo "built base image $TAG"
