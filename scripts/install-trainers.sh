#!/usr/bin/env bash
# The trainers' real packages for tests/test_trainers.py, on CPU: TRL and
# transformers with their dependencies, verl and OpenRLHF without theirs (a GPU
# stack and pins that conflict with each other); the pyproject `trainers` extra
# lists what their reward paths import.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q -e '.[test,trainers]' 2>&1 | grep -v -E "^WARNING: (Location|Running pip)|requires .* but you have" || true
python3 -m pip install -q --no-deps verl==0.9.1 openrlhf==0.11.2 2>&1 | grep -v -E "^WARNING: (Location|Running pip)|requires .* but you have" || true
python3 -c "import trl, verl, openrlhf.utils.agent" || { echo "the trainers' packages do not import"; exit 1; }
