"""The tests test this checkout: a CLI subprocess runs this tree's code, never
whatever `taskforge` comes first on PATH (on a machine where another checkout
is installed, that one would be tested and pass or fail for it)."""
from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT, cli_env, run_cli

RUNNERS = {"run", "Popen", "check_output", "check_call", "call"}


def test_the_cli_a_test_runs_is_this_checkout_even_with_another_on_path(tmp_path):
    decoy = tmp_path / "bin"
    decoy.mkdir()
    (decoy / "taskforge").write_text("#!/bin/sh\necho decoy taskforge\nexit 9\n")
    (decoy / "taskforge").chmod(0o755)
    res = run_cli("--help", env={"PATH": f"{decoy}{os.pathsep}{os.environ['PATH']}"},
                  cwd=tmp_path, timeout=120)
    assert res.returncode == 0 and "decoy" not in res.stdout, (res.returncode, res.stdout[-500:])
    where = subprocess.run([sys.executable, "-c", "import taskforge; print(taskforge.__file__)"],
                           env=cli_env(), cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert Path(where.stdout.strip()).resolve().is_relative_to(ROOT), where.stdout


def bare_cli_calls(source: str) -> list[int]:
    """Lines where a subprocess is started with "taskforge" as its program."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and node.args):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else \
            node.func.id if isinstance(node.func, ast.Name) else ""
        first = node.args[0]
        if name in RUNNERS and isinstance(first, (ast.List, ast.Tuple)) and first.elts \
                and isinstance(first.elts[0], ast.Constant) and first.elts[0].value == "taskforge":
            out.append(node.lineno)
    return out


def test_the_finder_sees_a_bare_call():
    assert bare_cli_calls('import subprocess\nsubprocess.run(["taskforge", "verify"])\n') == [2]
    assert bare_cli_calls('subprocess.run([*CLI, "verify"])\n') == []


def test_no_test_starts_the_taskforge_on_path():
    found = {p.name: lines for p in sorted((ROOT / "tests").glob("*.py"))
             for lines in [bare_cli_calls(p.read_text())] if lines}
    found |= {f"bench/{p.name}": lines for p in sorted((ROOT / "bench").glob("*.py"))
              for lines in [bare_cli_calls(p.read_text())] if lines}
    assert found == {}, f"use tests.conftest.CLI / run_cli: {found}"
