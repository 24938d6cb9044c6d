#!/usr/bin/env bash
# The RL environment frameworks' real packages for tests/test_frameworks_*.py (the
# pyproject extras skyrl, openenv, verifiers), into this interpreter.
set -euo pipefail
cd "$(dirname "$0")/.."
quiet() { grep -v -E "^WARNING: (Location|Running pip)|requires .* but you have" || true; }
python3 -m pip install -q -e '.[test,frameworks]' 2>&1 | quiet
python3 -c "import skyrl_gym, openenv.core, verifiers.v1, taskforge_verifiers" || { echo "the frameworks' packages do not import"; exit 1; }
