#!/usr/bin/env bash
# A Debian root filesystem directory with python3, from debootstrap: no Docker.
# The bubblewrap backend's environments start from it (TASKFORGE_ROOTFS_BASE),
# and scripts/make-debian-base.sh imports it as a Docker base image.
#
#   scripts/make-debian-rootfs.sh DIR [SUITE]
#
# Needs root, debootstrap and a reachable Debian mirror (apt's own). DIR is
# written beside itself and renamed into place; an existing DIR is kept.
set -euo pipefail
DIR="${1:?usage: make-debian-rootfs.sh DIR [SUITE]}"
SUITE="${2:-bookworm}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"

if [ -x "$DIR/usr/bin/python3" ]; then
  chmod 755 "$DIR"      # one made by an older version of this script kept mktemp's 0700
  echo "root filesystem $DIR already exists"; exit 0
fi
command -v debootstrap >/dev/null || { echo "error: debootstrap is not installed (apt-get install debootstrap)" >&2; exit 2; }
mkdir -p "$(dirname "$DIR")"
TMP="$(mktemp -d "$(dirname "$DIR")/.tf-rootfs.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT
debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates,locales \
  "$SUITE" "$TMP" "$MIRROR" >/tmp/tf-debootstrap.log 2>&1 \
  || { tail -20 /tmp/tf-debootstrap.log >&2; echo "error: debootstrap failed" >&2; exit 1; }
# Trim what a test sandbox never needs.
rm -rf "$TMP"/var/cache/apt/archives/*.deb "$TMP"/var/lib/apt/lists/* \
       "$TMP"/usr/share/doc/* "$TMP"/usr/share/man/* "$TMP"/usr/share/locale/*
# mktemp -d made it 0700: the sandbox user (uid 1000) could not even reach /.
chmod 755 "$TMP"
mv "$TMP" "$DIR"
trap - EXIT
echo "built root filesystem $DIR"
