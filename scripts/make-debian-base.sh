#!/usr/bin/env bash
# Build a local Python base image from Debian packages, for hosts that cannot
# pull from a container registry. With a registry, skip this: the Dockerfile's
# default base (python:3.11-slim) is used instead.
#
#   scripts/make-debian-base.sh [TAG] [SUITE]
#
# The root filesystem comes from scripts/make-debian-rootfs.sh and is kept in
# $TASKFORGE_DEBIAN_ROOTFS (default /var/lib/taskforge/debian-SUITE), where the
# bubblewrap backend uses it too. Needs root, debootstrap and a Debian mirror.
set -euo pipefail
TAG="${1:-taskforge/debian-python:bookworm}"
SUITE="${2:-bookworm}"
ROOT="${TASKFORGE_DEBIAN_ROOTFS:-/var/lib/taskforge/debian-$SUITE}"

if docker image inspect "$TAG" >/dev/null 2>&1; then
  echo "base image $TAG already exists"; exit 0
fi
bash "$(dirname "$0")/make-debian-rootfs.sh" "$ROOT" "$SUITE"
tar -C "$ROOT" -c . | docker import \
  -c 'ENV LANG=C.UTF-8 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  -c 'CMD ["/bin/bash"]' - "$TAG" >/dev/null
echo "built base image $TAG"
