#!/usr/bin/env bash
# One command from a fresh clone (Docker running): install taskforge, build the
# sandbox base image, generate tasks from a bundled fixture, and grade one; as
# root, also set up the daemonless backend (bubblewrap) and grade it there.
#
#   bash scripts/demo.sh [OUT_DIR]
#
# Exits non-zero unless every reward it prints is the expected one: the gold
# patch 1 and the empty solution 0, on each backend it grades with.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-demo-tasks}"
tf() { python3 -m taskforge "$@"; }      # the taskforge this checkout just installed
fail() { echo "demo failed: $*" >&2; exit 1; }
# verify's exit code is its verdict: 0 resolved (reward 1), 1 not (reward 0), 3 infrastructure.
expect() {
  local want="$1"; shift
  local rc=0
  tf verify "$@" || rc=$?
  [ "$rc" = "$want" ] || fail "taskforge verify $* exited $rc, expected $want ($([ "$want" = 0 ] && echo 'reward 1' || echo 'reward 0'))"
}

bash scripts/install-trainers.sh      # taskforge, its test deps and the trainers' packages
docker info >/dev/null 2>&1 || { echo "error: no Docker engine answers (start dockerd)" >&2; exit 3; }

# Without a registry, python:3.11-slim cannot be pulled: build a local Debian base.
if [ -z "${TASKFORGE_BASE_IMAGE:-}" ] && ! docker image inspect python:3.11-slim >/dev/null 2>&1 \
   && ! docker pull -q python:3.11-slim >/dev/null 2>&1; then
  bash scripts/make-debian-base.sh taskforge/debian-python:bookworm
fi
tf image build

REPO="$(mktemp -d)/textkit"
cp -r fixtures/repos/textkit "$REPO"
git -C "$REPO" init -q && git -C "$REPO" add -A \
  && git -C "$REPO" -c user.name=demo -c user.email=demo@localhost commit -qm "textkit fixture"

tf generate "$REPO" --out "$OUT" --max-tasks 5
TASK="$(ls -d "$OUT"/*/ | head -1)"
[ -f "$TASK/task.json" ] || fail "generate wrote no task into $OUT"
echo "--- gold patch of $TASK"
expect 0 "$TASK" --gold
echo "--- empty solution of $TASK"
expect 1 "$TASK" --empty
backends="Docker"

# The daemonless backend: a debootstrap tree as its base (also what the test
# suite's bwrap tests use), the task's environment built from its recipe, the
# same grading with no Docker.
if [ "$(id -u)" = 0 ]; then
  if ! command -v bwrap >/dev/null || ! command -v debootstrap >/dev/null; then
    apt-get update -qq && apt-get install -y -qq bubblewrap debootstrap >/dev/null
  fi
  bash scripts/make-debian-rootfs.sh /var/lib/taskforge/debian-bookworm bookworm
  tf env prepare "$TASK"
  echo "--- gold patch of $TASK, no Docker (bubblewrap)"
  DOCKER_HOST=unix:///nonexistent expect 0 "$TASK" --gold --sandbox bwrap
  echo "--- empty solution of $TASK, no Docker (bubblewrap)"
  DOCKER_HOST=unix:///nonexistent expect 1 "$TASK" --empty --sandbox bwrap
  backends="Docker and bubblewrap"
else
  echo "(not root: skipped the bubblewrap backend; see README, 'Grading without a Docker daemon')"
fi
echo "demo passed: gold 1.0 and empty 0.0 on $backends"
