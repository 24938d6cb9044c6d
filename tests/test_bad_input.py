"""Bad input gets one clear line on stderr, a non-zero exit, and leaves
nothing half-written behind."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import CLI, FIXTURES, make_git_repo


def run_cli(*args, env=None):
    return subprocess.run([*CLI, *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=900)


def assert_one_line_error(res, *needles, code=None):
    assert res.returncode != 0
    if code is not None:
        assert res.returncode == code, (res.returncode, res.stderr)
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("error: "), lines[0]
    assert "Traceback" not in res.stderr
    for n in needles:
        assert n in lines[0], lines[0]


def write_repo(root: Path, files: dict[str, str]) -> Path:
    tmp = root.with_name(root.name + "-src")
    for rel, text in files.items():
        (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp / rel).write_text(text)
    return make_git_repo(tmp, root)


PYPROJECT = """[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"
[project]
name = "{name}"
version = "0.1.0"
"""


def assert_generate_fails(tmp_path, name: str, files: dict[str, str], *needles, code=2):
    """generate on a repo made of `files` fails with one line and writes nothing."""
    repo = write_repo(tmp_path / name, files)
    res = run_cli("generate", str(repo), "--out", str(tmp_path / "out"))
    assert_one_line_error(res, *needles, code=code)
    assert not (tmp_path / "out").exists()


def test_missing_repo(tmp_path):
    res = run_cli("generate", str(tmp_path / "nope"), "--out", str(tmp_path / "out"))
    assert_one_line_error(res, "no such repository", code=2)
    assert not (tmp_path / "out").exists()


def test_not_a_git_repository(tmp_path):
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "x.py").write_text("x = 1\n")
    res = run_cli("generate", str(tmp_path / "plain"), "--out", str(tmp_path / "out"))
    assert_one_line_error(res, "not a git repository", code=2)
    assert not (tmp_path / "out").exists()


def test_not_a_python_repository(tmp_path):
    assert_generate_fails(tmp_path, "js", {"index.js": "module.exports = 1;\n", "README.md": "hi\n"},
                          "not a Python repository")


def test_repository_without_tests(tmp_path):
    assert_generate_fails(tmp_path, "notests", {"pyproject.toml": PYPROJECT.format(name="nt"),
                                                "nt/__init__.py": "def f():\n    return 1\n"},
                          "no tests found")


def test_syntax_error(tmp_path):
    assert_generate_fails(tmp_path, "syntax", {
        "pyproject.toml": PYPROJECT.format(name="bad"),
        "bad/__init__.py": "def f(:\n    return 1\n",
        "tests/test_bad.py": "def test_x():\n    assert True\n"}, "syntax error in bad/__init__.py")


def test_unknown_ref(tmp_path):
    repo = make_git_repo(FIXTURES / "textkit", tmp_path / "textkit")
    res = run_cli("generate", str(repo), "--ref", "no-such-tag", "--out", str(tmp_path / "out"))
    assert_one_line_error(res, "no such ref", code=2)


def test_no_docker_engine(tmp_path):
    repo = make_git_repo(FIXTURES / "textkit", tmp_path / "textkit")
    res = run_cli("generate", str(repo), "--out", str(tmp_path / "out"),
                  env={"DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock"})
    assert_one_line_error(res, "cannot reach the Docker engine", code=3)
    assert not (tmp_path / "out").exists()


def test_suite_red_at_baseline(tmp_path, base_image):
    tests = "".join(f"def test_{i}():\n    from red import f\n    assert f() == 2\n\n" for i in range(6))
    assert_generate_fails(tmp_path, "red", {"pyproject.toml": PYPROJECT.format(name="red"),
                                            "red/__init__.py": "def f():\n    return 1\n",
                                            "tests/test_red.py": tests},
                          "red at baseline", "6 of 6")


def test_suite_that_does_not_collect(tmp_path, base_image):
    assert_generate_fails(tmp_path, "nocollect", {
        "pyproject.toml": PYPROJECT.format(name="nocollect"),
        "nocollect/__init__.py": "def f():\n    return 1\n",
        "tests/test_a.py": "import not_installed_anywhere\n\ndef test_a():\n    assert True\n"},
        "does not collect at baseline")


@pytest.fixture(scope="module")
def one_task(generated):
    out, report = generated("ledger")
    return out / report.tasks[0]


@pytest.mark.parametrize("damage", ["no-task-json", "bad-json", "bad-field", "no-workspace",
                                    "no-hidden", "missing-dir"])
def test_damaged_task(one_task, tmp_path, damage):
    task = tmp_path / "task"
    shutil.copytree(one_task, task, symlinks=True)
    needle = {"no-task-json": "task.json is missing", "bad-json": "not valid JSON",
              "bad-field": "FAIL_TO_PASS", "no-workspace": "workspace/ is missing",
              "no-hidden": "hidden/ is missing", "missing-dir": "no such task directory"}[damage]
    if damage == "no-task-json":
        (task / "task.json").unlink()
    elif damage == "bad-json":
        (task / "task.json").write_text("{not json")
    elif damage == "bad-field":
        data = json.loads((task / "task.json").read_text())
        data["FAIL_TO_PASS"] = "not a list"
        (task / "task.json").write_text(json.dumps(data))
    elif damage == "no-workspace":
        shutil.rmtree(task / "workspace")
    elif damage == "no-hidden":
        shutil.rmtree(task / "hidden")
    else:
        shutil.rmtree(task)
    res = run_cli("verify", str(task), "--gold")
    assert_one_line_error(res, needle, code=2)


def test_verify_needs_exactly_one_solution(one_task):
    res = run_cli("verify", str(one_task))
    assert_one_line_error(res, "exactly one", code=2)
    res = run_cli("verify", str(one_task), "--gold", "--empty")
    assert_one_line_error(res, "exactly one", code=2)


def test_verify_patch_that_does_not_apply_scores_zero(one_task, tmp_path):
    bad = tmp_path / "bad.patch"
    bad.write_text("diff --git a/nope.py b/nope.py\n--- a/nope.py\n+++ b/nope.py\n@@ -1 +1 @@\n-x\n+y\n")
    res = run_cli("verify", str(one_task), "--patch", str(bad), "--json")
    assert res.returncode == 1
    data = json.loads(res.stdout)
    assert data["reward"] == 0.0 and data["error"] is None
    assert any("patch-rejected" in t for t in data["tampering"])


@pytest.mark.parametrize("json_mode", [False, True])
def test_a_stopped_verify_says_so(one_task, json_mode):
    """SIGTERM mid-verify: exit 130 and one line saying it was interrupted
    (and the JSON object under --json), as generate says it; typer ended the
    other commands with 130 and no word."""
    import signal
    import time

    from tests.conftest import cli_env
    from tests.test_resume import _owned_by

    args = [*CLI, "verify", str(one_task), "--gold", *(["--json"] if json_mode else [])]
    proc = subprocess.Popen(args, env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while proc.poll() is None and not _owned_by(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.05)        # its sandbox started: the verify is under way
    assert proc.poll() is None, "the verify ended before it could be stopped"
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, (proc.returncode, err[-300:])
    assert err.strip().splitlines() == ["error: interrupted"], err[-300:]
    if json_mode:
        assert json.loads(out) == {"error": "interrupted", "kind": "interrupted"}


def test_verify_without_engine_is_infrastructure_error(one_task, tmp_path):
    res = run_cli("verify", str(one_task), "--gold", "--json",
                  env={"DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock"})
    assert res.returncode == 3
    data = json.loads(res.stdout)
    assert data["reward"] is None and "Docker engine" in data["error"]


@pytest.mark.parametrize("args, code, needle", [
    (["generate", "/no/such/repo", "--out", "OUT"], 2, "no such repository"),
    (["generate", "--bogus-flag"], 2, "--bogus-flag"),
    (["generate", "http://127.0.0.1:9/nothing.git", "--out", "OUT"], 3, "Failed to connect"),
    (["stats", "--stats", "/no/such/stats.jsonl"], 2, "no such stats file"),
])
def test_json_mode_answers_errors_in_json(tmp_path, args, code, needle):
    """A caller parsing stdout under --json learns why (it read nothing before), and
    a failed clone names git's cause, not GitPython's quoting (`cannot clone URL: '`)."""
    args = [str(tmp_path / "out") if a == "OUT" else a for a in args]
    res = run_cli(*args, "--json")
    assert_one_line_error(res, needle, code=code)
    answer = json.loads(res.stdout)
    assert needle in answer["error"] and answer["kind"] in ("user", "infra", "usage"), answer
    assert not (tmp_path / "out").exists()


def test_stable_repository_names():
    """The shard `repo` column and the split hash: no temporary paths, no credentials."""
    from taskforge.repo.source import stable_name

    assert stable_name("https://user:tok@GitHub.com/Org/Lib.git/") == "github.com/org/lib"
    assert stable_name("git@github.com:org/lib.git") == "github.com/org/lib"
    assert stable_name("ssh://git@host:2222/org/lib") == "host/org/lib"
    assert stable_name("/tmp/tmpab12/lib") == "lib"


def test_new_commands_refuse_bad_input_in_one_line(tmp_path):
    """corpus, env prepare and --sandbox: bad input is one line and a non-zero exit."""
    assert_one_line_error(run_cli("corpus", "--out", str(tmp_path / "o")), "no repositories", code=2)
    assert_one_line_error(run_cli("corpus", "--from", str(tmp_path / "missing.toml"), "--out",
                                  str(tmp_path / "o")), "cannot read", code=2)
    assert_one_line_error(run_cli("verify", str(tmp_path), "--gold", "--sandbox", "lxc"),
                          "--sandbox must be one of", code=2)
    res = run_cli("env", "prepare", str(tmp_path / "nope"))
    assert_one_line_error(res, "nope", code=3)
    assert not (tmp_path / "o").exists()
