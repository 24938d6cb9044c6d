"""End to end on the bundled fixtures with a real engine, real git, real pytest:
generate yields valid tasks, and every task grades gold 1 and empty 0."""
from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess

import pytest

from taskforge.grade.verify import Solution, verify, verify_many
from taskforge.leaks.audit import audit
from taskforge.models import GenerateReport
from taskforge.package.store import load_task
from tests.conftest import CLI, FIXTURE_NAMES


def defined_tests(path) -> set[tuple[str, ...]]:
    """(func,) and (Class, func) of every test defined in a file."""
    tree = ast.parse(path.read_text())
    out = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            out.add((node.name,))
        elif isinstance(node, ast.ClassDef):
            out |= {(node.name, f.name) for f in node.body if isinstance(f, ast.FunctionDef)}
    return out


def defined_names(path, module: str) -> set[str]:
    """Qualified names of the top-level defs and their methods in a file."""
    if not path.exists():
        return set()
    out = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(f"{module}.{node.name}")
        if isinstance(node, ast.ClassDef):
            out |= {f"{module}.{node.name}.{m.name}" for m in node.body
                    if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))}
    return out


CACHE_NAMES = {"__pycache__", ".pytest_cache", ".mypy_cache", ".coverage"}


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_generate_yields_valid_tasks(generated, name):
    out, report = generated(name)
    assert len(report.tasks) >= 5, report.model_dump_json(indent=1)
    on_disk = GenerateReport.model_validate_json((out / "report.json").read_text())
    assert on_disk.tasks == report.tasks
    funnel = [s.count for s in report.funnel]
    assert funnel == sorted(funnel, reverse=True), "funnel must only narrow"
    assert report.funnel[-1].count == len(report.tasks)
    assert report.funnel[0].count == len(report.drops) + len(report.tasks)
    assert report.baseline_passing >= 40
    for d in report.drops:
        assert d.reason, d
    for tid in report.tasks:
        task = load_task(out / tid)
        rec = task.record
        assert rec.instance_id == tid
        assert rec.FAIL_TO_PASS and rec.PASS_TO_PASS
        assert not set(rec.FAIL_TO_PASS) & set(rec.PASS_TO_PASS)
        assert rec.patch.startswith("diff --git") and rec.test_patch.startswith("diff --git")
        for f in ("problem_statement.md", "gold.patch", "test.patch", "task.json"):
            assert (out / tid / f).is_file()
        ws = task.workspace
        # One fresh commit, nothing else in git.
        log = subprocess.run(["git", "rev-list", "--all"], cwd=ws, capture_output=True, text=True)
        assert log.stdout.split() == [rec.base_commit]
        status = subprocess.run(["git", "status", "--porcelain"], cwd=ws, capture_output=True, text=True)
        assert status.stdout == ""
        if name == "textkit":       # committed as 100755: the mode survives packaging
            assert os.access(ws / "scripts" / "check.sh", os.X_OK)
        for p in ws.rglob("*"):
            assert p.name not in CACHE_NAMES and not p.name.endswith(".pyc"), p
        # The hidden tests are not in the workspace; the removed code is not either.
        for nodeid in rec.FAIL_TO_PASS:
            file, _, rest = nodeid.partition("::")
            path = tuple(rest.split("[")[0].split("::"))
            ws_file = ws / file
            assert not ws_file.exists() or path not in defined_tests(ws_file), nodeid
        for sym in rec.feature.symbols:
            assert sym.qualname not in defined_names(ws / sym.path, sym.qualname.rsplit(".", 2)[0]
                                                     if sym.kind == "method" else
                                                     sym.qualname.rsplit(".", 1)[0]), sym.qualname
        # No leak of the removed code anywhere: workspace, git objects, image.
        leaks = audit(out / tid)
        assert leaks.findings == [], [f.line() for f in leaks.findings]
        assert leaks.needles > 0            # it searched for the removed code, and found none
        # The statement names the interface, never the body.
        assert rec.feature.symbols[0].qualname.rsplit(".", 1)[-1] in rec.problem_statement
        assert "```python" in rec.problem_statement


def test_the_final_checks_empty_run_sees_what_the_full_one_sees_of_the_hidden_tests(generated):
    """The final check grades the empty solution on the hidden tests' files
    only (calibrate.final_check): their failures are those of a whole-suite
    run, and the rest of the suite does not run."""
    out, report = generated("textkit")
    task = out / report.tasks[0]
    full = verify(task, Solution.empty())
    part = verify(task, Solution.empty(), hidden_only=True)
    assert full.error is None and part.error is None
    assert part.f2p_failures == full.f2p_failures and part.f2p_failures
    files = {t.split("::")[0] for t in full.f2p_failures}
    whole = {t.nodeid: t.outcome for t in full.tests}
    for t in part.tests:
        if t.nodeid.split("::")[0] in files:
            assert t.outcome == whole[t.nodeid], (t.nodeid, t.outcome, whole[t.nodeid])
        else:
            assert t.outcome == "missing" and whole[t.nodeid] == "passed", t.nodeid   # not run here
    assert any(t.nodeid.split("::")[0] not in files for t in part.tests)


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_every_task_grades_gold_one_and_empty_zero(generated, name):
    out, report = generated(name)
    pairs = []
    for tid in report.tasks:
        pairs += [(out / tid, Solution.gold()), (out / tid, Solution.empty())]
    from taskforge.sandbox.warm import WarmPool

    with WarmPool(per_shape=2) as pool:
        results = verify_many(pairs, workers=2, timeout=300, pool=pool)
    assert pool.taken_warm >= len(pairs) // 2, (pool.taken_warm, pool.taken_cold)
    for (task, sol), res in zip(pairs, results):
        assert res.error is None, (task.name, res.error)
        if sol.kind == "gold":
            assert res.reward == 1.0, (task.name, res.f2p_failures, res.p2p_regressions)
            assert res.f2p_passed == res.f2p_total > 0
        else:
            assert res.reward == 0.0, task.name
            assert res.f2p_passed < res.f2p_total


def test_ids_are_stable_across_runs(generated, fixture_repos, tmp_path):
    from taskforge.orchestrate.pipeline import Options, generate

    out, report = generated("textkit")
    again = generate(str(fixture_repos["textkit"]), tmp_path / "again", Options(max_tasks=6, jobs=1))
    assert again.tasks == report.tasks
    first = json.loads((out / report.tasks[0] / "task.json").read_text())
    second = json.loads((tmp_path / "again" / report.tasks[0] / "task.json").read_text())
    for key in ("FAIL_TO_PASS", "PASS_TO_PASS", "patch", "test_patch", "base_commit",
                "problem_statement"):
        assert first[key] == second[key], key


def test_cli_verify_reports_json_and_exit_codes(generated):
    out, report = generated("ledger")
    task = out / report.tasks[0]
    gold = subprocess.run([*CLI, "verify", str(task), "--gold", "--json"],
                          capture_output=True, text=True)
    assert gold.returncode == 0, gold.stderr
    data = json.loads(gold.stdout)
    assert data["reward"] == 1.0 and data["error"] is None
    assert {t["outcome"] for t in data["tests"]} == {"passed"}
    empty = subprocess.run([*CLI, "verify", str(task), "--empty"], capture_output=True, text=True)
    assert empty.returncode == 1
    assert "reward: 0.0" in empty.stdout
    patch = subprocess.run([*CLI, "verify", str(task), "--patch", str(task / "gold.patch")],
                           capture_output=True, text=True)
    assert patch.returncode == 0, patch.stdout + patch.stderr



def test_rerun_resumes_without_redoing_finished_tasks(generated, fixture_repos, tmp_path):
    """A rerun over a finished run's output (a copy of the session's geomlib run,
    its journal included) with one task deleted and a half-assembled one left
    behind: only the deleted task is written again."""
    from taskforge.orchestrate.pipeline import Options, generate

    done, first = generated("geomlib")
    out = tmp_path / "out"
    shutil.copytree(done, out, symlinks=True)
    stamps = {t: (out / t / "task.json").stat().st_mtime_ns for t in first.tasks}
    (out / ".tmp-interrupted-task").mkdir()          # what a killed run leaves behind
    victim = first.tasks[-1]
    subprocess.run(["rm", "-rf", str(out / victim)], check=True)
    second = generate(str(fixture_repos["geomlib"]), out, Options(max_tasks=6, jobs=2))
    assert second.resumed.baseline, second.model_dump_json(indent=1)
    assert second.tasks == first.tasks
    for t in first.tasks[:-1]:
        assert (out / t / "task.json").stat().st_mtime_ns == stamps[t], "finished task redone"
    assert (out / victim / "task.json").is_file()
    assert not list(out.glob(".tmp-*"))


@pytest.mark.parametrize("name,kind", [("textkit", "module"), ("geomlib", "class")])
def test_whole_module_and_class_features(fixture_repos, base_image, tmp_path, name, kind):
    from taskforge.orchestrate.pipeline import Options, generate

    out = tmp_path / "out"
    report = generate(str(fixture_repos[name]), out, Options(max_tasks=2, jobs=2,
                                                             kinds=(kind,)))
    assert report.tasks, report.model_dump_json(indent=1)
    kinds = set()
    pairs = []
    for tid in report.tasks:
        rec = load_task(out / tid).record
        kinds.add(rec.feature.kind)
        if rec.feature.kind == "module":
            removed = rec.feature.symbols[0].path
            assert not (out / tid / "workspace" / removed).exists()
            assert f"+++ b/{removed}" in rec.patch
        pairs += [(out / tid, Solution.gold()), (out / tid, Solution.empty())]
    assert kinds == {kind}
    for (task, sol), res in zip(pairs, verify_many(pairs, workers=2, timeout=300)):
        assert res.reward == (1.0 if sol.kind == "gold" else 0.0), (task.name, sol.kind, res)


def test_every_task_reports_what_a_model_could_recite(generated):
    """No code age for the fixture's one commit (its date says nothing of when the
    code was written; the dated history is the --since test's), the statement's
    style, and its lines copied from the removed docstrings."""
    out, report = generated("textkit")
    for tid in report.tasks:
        rec = load_task(out / tid).record
        c = rec.contamination
        assert c.code_age is None and c.quoted_lines is not None, (tid, c)
        assert c.statement_style == "upstream"
        docs = [ln.strip() for s in rec.feature.symbols for ln in s.signature.splitlines()
                if len(ln.strip()) >= 16 and ln.strip() in rec.problem_statement]
        assert c.quoted_lines <= len(docs) + 1, (tid, c.quoted_lines, docs)


def _dated_commit(repo, message: str, date: str) -> None:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date,
           "PATH": "/usr/bin:/bin"}
    for args in (["add", "-A"], ["commit", "-q", "-m", message]):
        subprocess.run(["git", "-c", "init.defaultBranch=main", *args], cwd=repo, env=env,
                       check=True, capture_output=True)


def test_since_keeps_only_features_written_after_the_day(base_image, tmp_path):
    """A history: textkit without its numerals in 2020, the numerals added in
    2026. `--since 2026-01-01` proposes only what the second commit wrote, and
    `--statement-style own` shows no upstream docstring."""
    from tests.conftest import FIXTURES

    repo = tmp_path / "textkit"
    shutil.copytree(FIXTURES / "textkit", repo,
                    ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache", "*.egg-info"))
    late = {p: (repo / p).read_text() for p in ("textkit/numerals.py", "tests/test_numerals.py")}
    for p in late:
        (repo / p).unlink()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    _dated_commit(repo, "old", "2020-01-01T00:00:00+0000")
    for p, text in late.items():
        (repo / p).write_text(text)
    _dated_commit(repo, "numerals", "2026-03-01T00:00:00+0000")
    res = subprocess.run([*CLI, "generate", str(repo), "--out", str(tmp_path / "out"),
                          "--max-tasks", "2", "--since", "2026-01-01", "--statement-style", "own",
                          "--json"], capture_output=True, text=True, timeout=1200)
    assert res.returncode == 0, res.stderr[-3000:]
    report = GenerateReport.model_validate_json(res.stdout)
    assert report.tasks, report.model_dump_json(indent=1)[-3000:]
    old = [d for d in report.drops if d.reason.startswith("older than --since")]
    assert old and all("2020-01-01" in d.reason for d in old), old[:3]
    assert not any(d.candidate.startswith("textkit.numerals") for d in old)
    for tid in report.tasks:
        rec = load_task(tmp_path / "out" / tid).record
        assert {s.path for s in rec.feature.symbols} == {"textkit/numerals.py"}, tid
        c = rec.contamination
        assert c.code_age.oldest >= "2026-03-01" and c.statement_style == "own", c
        assert c.code_age.lines >= rec.sizes.removed_lines, (c, rec.sizes)
        assert c.quoted_lines == 0 and '"""' not in rec.problem_statement, rec.problem_statement


def test_a_test_file_that_does_not_collect_is_left_out_not_the_repository(base_image, tmp_path):
    """markdown's suite: one test module sets `warnings.simplefilter('error')` at
    import, so pytest's warning about another module's imported `TestSuite`
    class becomes a collection error there. The baseline leaves that file out
    (--ignore, in the task's options too) and the rest makes tasks."""
    from taskforge.orchestrate.pipeline import Options, generate
    from tests.conftest import FIXTURES, make_git_repo

    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "textkit", src)
    (src / "tests" / "test_zz_strict.py").write_text(
        "import warnings\nwarnings.simplefilter('error')\n\n\ndef test_strict():\n    assert True\n")
    (src / "tests" / "test_zzz_suite.py").write_text(
        "from unittest import TestSuite\n\n\ndef test_suite_built():\n    assert TestSuite() is not None\n")
    repo = make_git_repo(src, tmp_path / "repo")
    out = tmp_path / "out"
    report = generate(str(repo), out, Options(max_tasks=1, jobs=2))
    assert report.uncollected_files == ["tests/test_zzz_suite.py"]
    assert report.tasks, report.model_dump_json(indent=1)
    rec = load_task(out / report.tasks[0]).record
    assert "--ignore=tests/test_zzz_suite.py" in rec.test_options


def test_a_test_that_hangs_at_baseline_is_left_out_not_the_repository(base_image, tmp_path):
    """A test that never ends (loguru's fork pool that never gets its task)
    times the baseline out: the test that was running is deselected (in the
    tasks' options too) and the baseline runs again."""
    from taskforge.orchestrate.pipeline import Options, generate
    from tests.conftest import FIXTURES, make_git_repo

    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "textkit", src)
    (src / "tests" / "test_zz_hangs.py").write_text(
        "import time\n\n\ndef test_fine():\n    assert True\n\n\n"
        "def test_waits_forever():\n    while True:\n        time.sleep(1)\n")
    repo = make_git_repo(src, tmp_path / "repo")
    out = tmp_path / "out"
    report = generate(str(repo), out, Options(max_tasks=1, jobs=2, timeout=25))
    assert report.hung_tests == ["tests/test_zz_hangs.py::test_waits_forever"]
    assert report.tasks, report.model_dump_json(indent=1)
    rec = load_task(out / report.tasks[0]).record
    assert "--deselect=tests/test_zz_hangs.py::test_waits_forever" in rec.test_options
