"""The stage layers of docs/architecture.md, as import-linter contracts
(pyproject.toml): kept by the tree, and broken by one upward import, also one
hidden inside a function or reached through another module."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

LINT = [sys.executable, "-c", "from importlinter.cli import lint_imports_command as m; m()"]


def lint(root: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([*LINT, "--config", str(root / "pyproject.toml"), "--no-cache"],
                          cwd=root, env=env, capture_output=True, text=True, timeout=300)


def test_the_tree_keeps_every_contract():
    res = lint(ROOT)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    assert "0 broken" in res.stdout


@pytest.mark.parametrize("module,line,broken", [
    # A backend loading a task (the environment recipe is handed to it instead).
    ("sandbox/base.py", "from taskforge.package.store import load_task", "taskforge.sandbox"),
    # Inside a function: still an import.
    ("repo/blame.py", "def _probe():\n    from taskforge.package import writer\n    return writer",
     "taskforge.repo"),
    # The record models reaching up into grading.
    ("models.py", "from taskforge.grade.findings import Finding", "taskforge.models"),
    # Training reaching the generation pipeline.
    ("training/curriculum.py", "from taskforge.orchestrate import pipeline", "taskforge.training"),
    # The Docker SDK outside its backend.
    ("grade/verify.py", "import docker", "taskforge.grade"),
])
def test_an_upward_import_breaks_a_contract(tmp_path, module, line, broken):
    root = tmp_path / "tree"
    root.mkdir()
    shutil.copytree(ROOT / "taskforge", root / "taskforge",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
    path = root / "taskforge" / module
    path.write_text(path.read_text() + "\n\n" + line + "  # noqa\n")
    res = lint(root)
    assert res.returncode != 0 and "BROKEN" in res.stdout, res.stdout[-3000:]
    assert f"{broken}." in res.stdout or f"{broken} " in res.stdout, res.stdout[-3000:]
