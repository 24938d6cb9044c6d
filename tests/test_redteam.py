"""Red team: real attacks on real tasks through the real engine.

Every attack in tests/redteam_kit.py starts from a wrong implementation of the
removed feature and is graded twice: by the naive grader (every defence off:
run the tests, believe what they report), where it must score 1, which shows the
attack works, and by taskforge's grader, where it must score 0 with the finding
that stopped it. Targets: a fixture function with parametrized tests (textkit
`to_roman`), a fixture method tested through a class and a value object
(geomlib `midpoint`), and a real library from the package index (inflection
`dasherize`, parametrized over a module-level table).

Honest solutions must keep scoring 1 under the same grader, and hostile ones
(crashes, floods, bombs) must cost nobody else their reward.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from redteam_kit import ATTACKS, Target, append, backends_of, case_id, wrong_solution  # noqa: E402

from taskforge.grade.findings import Severity  # noqa: E402
from taskforge.grade.verify import Defences, Solution, verify, verify_many  # noqa: E402
from taskforge.orchestrate.pipeline import Options, generate  # noqa: E402
from tests.conftest import BACKENDS, CLI  # noqa: E402

TARGETS = {
    "roman": Target(match=".numerals.to_roman-", module="textkit/numerals.py", func="to_roman",
                    wrong='def to_roman(number):\n    if not 0 < number < 4000:\n'
                          '        raise ValueError("out of range")\n    return "I" * number\n',
                    init="textkit/__init__.py", tests="tests/test_numerals.py",
                    oracle_param="numeral"),
    "midpoint": Target(match=".measure.midpoint-", module="src/geomlib/ops/measure.py",
                       func="midpoint", wrong="def midpoint(a, b):\n    return a\n",
                       init="src/geomlib/__init__.py", tests="tests/test_ops.py"),
    "real": Target(match=".dasherize-", module="inflection/__init__.py", func="dasherize",
                   wrong="def dasherize(word):\n    return word\n",
                   init="inflection/__init__.py", tests="test_inflection.py",
                   oracle_param="expected"),
}
FIXTURE_OF = {"roman": ("textkit", "numerals.to_roman"), "midpoint": ("geomlib", "measure.midpoint")}
REAL = ("inflection", "0.5.1", "inflection.dasherize")


@pytest.fixture(scope="session")
def redteam_tasks(fixture_repos, base_image, tmp_path_factory):
    """target name -> task directory, generated on first use."""
    cache: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in cache:
            t = TARGETS[name]
            out = tmp_path_factory.mktemp(f"rt-{name}")
            if name == "real":
                from taskforge.repo.sdist import repo_from_sdist

                repo = repo_from_sdist(REAL[0], REAL[1], tmp_path_factory.mktemp("rt-sdist"))
                only = REAL[2]
            else:
                repo, only = fixture_repos[FIXTURE_OF[name][0]], FIXTURE_OF[name][1]
            report = generate(str(repo), out, Options(max_tasks=1, jobs=2, only=(only,), min_statements=0))
            tid = next(x for x in report.tasks if t.match in x)
            cache[name] = out / tid
        return cache[name]

    return get


CASES = [(a, target) for a in ATTACKS for target in a.targets]
# Every attack on every sandbox backend, ours on warm sandboxes as serve runs it:
# docker, and bwrap (no daemon; the environment built from the task's recipe).
# Graded end to end on every run, one per family of defence and per backend:
# what acts on files (restored tests, unshipped plugins, shadowing, bytecode, the
# static scan), what the sandbox and supervisor do (the event stream's order,
# its bound, the exit, the escapee) and the monitor. The rest run end to end
# with TASKFORGE_REDTEAM_FULL=1 (and when recorded); their recorded runs replay
# through the grading core in the fast tier (tests/test_grading_replay.py).
END_TO_END = {("visible-test-patches-the-runner", "roman"), ("ini-loads-package-plugin", "roman"),
              ("patch-reports-at-import", "real"), ("forge-from-atexit", "roman"),
              ("flood-the-pipe", "roman"), ("crash-mid-stream", "roman"), ("shadow-the-guard", "roman"),
              ("always-equal-sourceless-pyc", "roman"), ("oracle-settrace", "roman"),
              ("escape-and-forge-the-host-stream", "roman")}


PARAMS = [pytest.param(a, t, b, id=case_id(a.name, t, b),
                       marks=([pytest.mark.network] if t == "real" else [])
                       + ([pytest.mark.bwrap] if b == "bwrap" else [pytest.mark.docker])
                       + ([] if (a.name, t) in END_TO_END else [pytest.mark.redteam_full]))
          for a, t in CASES for b in backends_of(a)]
# Where scripts/record_grading_cases.sh has the graded runs written (grade/cases.py).
RECORD = os.environ.get("TASKFORGE_RECORD_CASES")


@pytest.fixture(scope="module")
def warm_pools():
    """Our grader as `serve` and `verify-batch` run it: sandboxes started ahead
    (on bwrap, with the supervisor parked), one pool per backend."""
    from taskforge.sandbox.warm import WarmPool

    pools: dict[str, WarmPool] = {}

    def get(backend: str) -> WarmPool:
        if backend not in pools:
            pools[backend] = WarmPool(per_shape=1, backend=backend)
        return pools[backend]
    yield get
    for pool in pools.values():
        pool.close()


def recorder(name: str | None):
    """A `verify(record=...)` callback that keeps the graded run as `name`, when
    runs are being recorded; else None."""
    if not (RECORD and name):
        return None
    from taskforge.grade.cases import save

    def keep(case):
        case.name = name
        save(case, Path(RECORD))
    return keep


def grade(task: Path, sol: Path, defences: Defences | None = None, timeout: float | None = None,
          pool=None, backend: str | None = None, case: str | None = None):
    """Verify the tree `sol`; `case` names the run when runs are recorded."""
    t0 = time.monotonic()
    res = verify(task, Solution.from_dir(sol), timeout=timeout, defences=defences, pool=pool,
                 backend=backend, record=recorder(case))
    assert res.error is None, res.error
    assert time.monotonic() - t0 < (timeout or 300) + 60, "verify overran its time limit"
    return res


def test_the_suite_is_big_enough():
    assert len(CASES) >= 30
    assert {"roman", "midpoint", "real"} <= {t for _, t in CASES}


@pytest.mark.parametrize("attack,target,backend", PARAMS)
def test_attack(attack, target, backend, redteam_tasks, tmp_path, request):
    task = redteam_tasks(target)
    if backend == "bwrap":
        request.getfixturevalue("bwrap_env")(task)
    pool = request.getfixturevalue("warm_pools")(backend)
    t = TARGETS[target]
    sol = tmp_path / "solution"
    attack.build(task, sol, t)
    name = case_id(attack.name, target, backend)
    naive = grade(task, sol, Defences.naive(), timeout=attack.timeout, backend=backend,
                  case=f"{name}.naive")
    assert naive.reward == 1.0, ("the attack does not even beat the naive grader",
                                 naive.model_dump_json(indent=1))
    ours = grade(task, sol, timeout=attack.timeout, pool=pool, backend=backend, case=f"{name}.ours")
    assert ours.reward == 0.0, ours.model_dump_json(indent=1)
    fatal = {f.kind.value for f in ours.findings if f.severity is Severity.FATAL}
    failed = ours.f2p_failures or ours.p2p_regressions
    assert fatal or failed, ours.model_dump_json(indent=1)
    if attack.kinds:      # the defence that stopped it says so
        seen = {f.kind.value for f in ours.findings}
        assert seen & set(attack.kinds), (attack.kinds, [f.text() for f in ours.findings])


# ------------------------------------------------------------- honest solutions

def honest_gold(task: Path, dest: Path) -> Path:
    shutil.copytree(task / "workspace", dest)
    subprocess.run(["git", "apply", str(task / "gold.patch")], cwd=dest, check=True)
    return dest


@pytest.mark.parametrize("target", ["roman", "midpoint", pytest.param("real", marks=pytest.mark.network)])
def test_gold_as_a_patch_and_as_a_tree_scores_one(target, redteam_tasks, tmp_path):
    task = redteam_tasks(target)
    res = verify(task, Solution.from_patch((task / "gold.patch").read_text()),
                 record=recorder(f"honest-gold-patch@{target}"))
    assert res.reward == 1.0, res.model_dump_json(indent=1)
    assert res.copies_planted >= 1 and res.copies_matched == res.copies_planted
    res = grade(task, honest_gold(task, tmp_path / "gold"), case=f"honest-gold-tree@{target}")
    assert res.reward == 1.0, res.model_dump_json(indent=1)
    assert not [f for f in res.findings if f.severity is not Severity.INFO], res.findings


@pytest.mark.parametrize("target,backend", [
    pytest.param(t, b, id=f"{t}@{b}", marks=[pytest.mark.bwrap] if b == "bwrap" else [pytest.mark.docker])
    for t in ("roman", "midpoint") for b in ("docker", "bwrap")])
def test_the_attacks_honest_twin_scores_one(target, backend, redteam_tasks, tmp_path, request):
    """The gold, graded as test_attack grades ours (warm sandbox, same backend)."""
    task = redteam_tasks(target)
    if backend == "bwrap":
        request.getfixturevalue("bwrap_env")(task)
    pool = request.getfixturevalue("warm_pools")(backend)
    res = grade(task, honest_gold(task, tmp_path / "gold"), pool=pool, backend=backend,
                case=f"honest-twin@{target}@{backend}")
    assert res.reward == 1.0, res.model_dump_json(indent=1)
    assert res.copies_planted >= 1 and res.copies_matched == res.copies_planted


def test_gold_with_an_unrelated_always_equal_sentinel(redteam_tasks, tmp_path):
    """An always-equal object the tests never compare (a sentinel, as libraries
    define) is flagged for review, not scored, where every hidden test has value
    copies: the copies decide. (Where some have none, the construct scores 0.)"""
    sentinel = '''\
        class _Missing:
            def __eq__(self, other):
                return True
            __hash__ = object.__hash__

        MISSING = _Missing()
        '''
    task = redteam_tasks("midpoint")
    sol = honest_gold(task, tmp_path / "s")
    append(sol / TARGETS["midpoint"].module, sentinel)
    res = grade(task, sol, case="honest-always-equal-sentinel@midpoint")
    assert res.reward == 1.0, res.model_dump_json(indent=1)
    assert [f.severity for f in res.findings if f.kind.value == "always-equal"] == [Severity.REVIEW]


def test_honest_tests_that_read_their_own_data_files(fixture_repos, base_image, tmp_path):
    """A hidden test handing package code a path to its own data file (and to its
    own source, as click.File(default=__file__) does) is not cheating."""
    from conftest import make_git_repo

    src = tmp_path / "src"
    shutil.copytree(Path(__file__).resolve().parent.parent / "fixtures" / "repos" / "textkit", src)
    (src / "textkit" / "loader.py").write_text(textwrap.dedent('''\
        def count_lines(path):
            """Number of non-empty lines in a text file."""
            with open(path, encoding="utf-8") as fh:
                return sum(1 for line in fh if line.strip())
        '''))
    (src / "tests" / "data").mkdir()
    (src / "tests" / "data" / "words.txt").write_text("alpha\nbeta\n\ngamma\n")
    (src / "tests" / "test_loader.py").write_text(textwrap.dedent('''\
        import os
        from textkit.loader import count_lines

        HERE = os.path.dirname(__file__)

        def test_count_lines_of_data():
            assert count_lines(os.path.join(HERE, "data", "words.txt")) == 3

        def test_count_lines_of_own_source():
            assert count_lines(__file__) == 9
        '''))
    repo = make_git_repo(src, tmp_path / "repo")
    out = tmp_path / "tasks"
    report = generate(str(repo), out, Options(max_tasks=1, jobs=2, only=("loader.count_lines",),
                                              min_statements=0))
    assert report.tasks, report.model_dump_json(indent=1)
    res = verify(out / report.tasks[0], Solution.gold())
    assert res.reward == 1.0, res.model_dump_json(indent=1)


def pyproject(src: Path, name: str, extra: str = "") -> None:
    (src / "pyproject.toml").write_text(
        f'[project]\nname = "{name}"\nversion = "0.1"\n[build-system]\nrequires = ["setuptools"]\n'
        f'build-backend = "setuptools.build_meta"\n[tool.setuptools]\npackages = ["{name}"]\n{extra}')


def test_doctest_only_feature(base_image, tmp_path):
    """A feature whose only tests are doctests (a text file run with
    --doctest-glob): no test function to mutate or rename, nothing planted in a
    file pytest does not collect, and the gold still scores 1."""
    from conftest import make_git_repo

    src = tmp_path / "src"
    (src / "dt").mkdir(parents=True)
    (src / "dt" / "__init__.py").write_text("")
    (src / "dt" / "core.py").write_text(
        "def double(x):\n    return 2 * x\n\n\ndef half(x):\n    return x / 2\n")
    (src / "tests").mkdir()
    (src / "tests" / "test_core.py").write_text(
        "from dt.core import half\n\n\ndef test_half():\n    assert half(4) == 2\n\n\n"
        "def test_half_odd():\n    assert half(3) == 1.5\n")
    (src / "tests" / "usage.txt").write_text(
        "Doubling\n========\n\n>>> from dt.core import double\n>>> double(21)\n42\n")
    pyproject(src, "dt", '[tool.pytest.ini_options]\naddopts = "--doctest-glob=*.txt"\n')
    repo = make_git_repo(src, tmp_path / "repo")
    out = tmp_path / "tasks"
    report = generate(str(repo), out, Options(max_tasks=1, jobs=2, only=("core.double",), min_statements=0,
                                             require_copies=False))
    assert report.tasks, report.model_dump_json(indent=1)
    task = out / report.tasks[0]
    from taskforge.package.store import load_task

    rec = load_task(task).record
    assert rec.FAIL_TO_PASS == ["tests/usage.txt::usage.txt"]
    assert rec.grading.hidden_functions == 0 and rec.grading.copies == []
    assert verify(task, Solution.gold()).reward == 1.0
    assert verify(task, Solution.empty()).reward == 0.0


# ------------------------------------------------- hostile, and one bad apple

def test_a_batch_survives_its_worst_items(redteam_tasks, tmp_path):
    """A malformed stream, a 100 MiB flood of output, a crash mid-stream and a
    task directory that is not one, in one batch with golds: each bad item gets
    0 (or an error) with a finding, the golds keep their 1, no traceback."""
    task = redteam_tasks("roman")
    t = TARGETS["roman"]
    flood = wrong_solution(task, tmp_path / "flood", t)
    append(flood / t.init, '''\
        import sys
        _line = "x" * 1023 + "\\n"
        for _ in range(100 * 1024):
            sys.stdout.write(_line)
            sys.stderr.write(_line)
        ''')
    crash = wrong_solution(task, tmp_path / "crash", t)
    append(crash / t.init, "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n")
    malformed = wrong_solution(task, tmp_path / "malformed", t)
    append(malformed / t.init, '''\
        import os, sys
        _fd = sys.modules["tf_guard"]._FD
        os.write(_fd, b'{"$report_type": "TestReport", "when": "call"}\\n[1, 2]\\n\\x00\\xff\\n')
        ''')
    pairs = [(task, Solution.gold()), (task, Solution.from_dir(flood)),
             (task, Solution.from_dir(crash)), (task, Solution.from_dir(malformed)),
             (tmp_path / "not-a-task", Solution.gold()), (task, Solution.gold())]
    import resource

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    results = verify_many(pairs, workers=3)
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert [r.reward for r in results] == [1.0, 0.0, 0.0, 0.0, None, 1.0], \
        [(r.reward, r.error, r.tampering) for r in results]
    assert results[4].error and "no such task" in results[4].error
    kinds = [{f.kind.value for f in r.findings} for r in results]
    assert "early-exit" in kinds[2]
    assert "malformed-event" in kinds[3]
    assert grown_mb < 200, f"host memory grew by {grown_mb:.0f} MB"


def test_cli_verify_batch_json_with_a_bad_item(redteam_tasks, tmp_path):
    import json

    task = redteam_tasks("roman")
    lines = [{"task": str(task), "solution": "gold"}, {"task": str(tmp_path / "nope"), "solution": "gold"},
             {"task": str(task), "solution": "empty"}]
    (tmp_path / "pairs.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    res = subprocess.run([*CLI, "verify-batch", str(tmp_path / "pairs.jsonl"), "--workers", "2",
                          "--json"], capture_output=True, text=True)
    assert "Traceback" not in res.stderr, res.stderr
    rewards = [json.loads(x)["reward"] for x in res.stdout.splitlines()]
    assert rewards == [1.0, None, 0.0]


def no_process_matching(marker: str) -> bool:
    out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    return marker not in out


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("bomb", ["fork", "memory", "loop-at-import", "huge-output", "sleeper"])
def test_resource_attacks_score_zero_and_leave_nothing(bomb, backend, redteam_tasks, tmp_path,
                                                       request):
    task = redteam_tasks("roman")
    if backend == "bwrap":
        request.getfixturevalue("bwrap_env")(task)
    t = TARGETS["roman"]
    sol = wrong_solution(task, tmp_path / "s", t)
    marker = f"tf-redteam-sleeper-{os.getpid()}"
    code = {
        "fork": "import os\nfor _ in range(100000):\n    try:\n        os.fork()\n    except OSError:\n        pass\n",
        "memory": "blocks = []\nwhile True:\n    blocks.append(bytearray(64 * 1024 * 1024))\n",
        "loop-at-import": "while True:\n    pass\n",
        "huge-output": "import sys\nwhile True:\n    sys.stdout.write('x' * 1023 + '\\n')\n",
        # argv[0] is the marker (dash's exec has no -a: a shell line would not rename it).
        "sleeper": f"import subprocess\nsubprocess.Popen(['{marker}', '600'], executable='/bin/sleep',"
                   " start_new_session=True)\n",
    }[bomb]
    append(sol / t.init, code)
    t0 = time.monotonic()
    res = grade(task, sol, timeout=30, backend=backend)
    assert res.reward == 0.0, res.model_dump_json(indent=1)
    assert time.monotonic() - t0 < 90
    assert no_process_matching(marker)
    if backend != "docker":
        return
    from taskforge.sandbox.owner import owner_token

    docker_engine = request.getfixturevalue("docker_engine")
    left = docker_engine.containers.list(all=True, ignore_removed=True, filters={"label": [
        "taskforge.role=verify", f"taskforge.owner={owner_token()}"]})
    # The module's warm pool keeps idle sandboxes ready; this verify's is cold.
    assert not [c for c in left if "taskforge.warm" not in (c.labels or {})], left


def test_the_time_limit_follows_the_task(redteam_tasks):
    """An infinite loop no longer holds a worker for the 900 s default: the limit
    comes from the task's measured run."""
    from taskforge.package.store import load_task

    rec = load_task(redteam_tasks("roman")).record
    assert rec.grading.timeout is not None and rec.grading.timeout <= 60
    assert rec.grading.measured_seconds > 0


def test_missing_image_is_infrastructure_not_zero(redteam_tasks, tmp_path):
    import json

    task = redteam_tasks("roman")
    bad = tmp_path / "task"
    shutil.copytree(task, bad)
    data = json.loads((bad / "task.json").read_text())
    data["image_name"] = "taskforge/env-does-not-exist:nope"
    (bad / "task.json").write_text(json.dumps(data))
    res = verify(bad, Solution.gold(), timeout=60)
    assert res.reward is None and res.error and "not found" in res.error


@pytest.mark.parametrize("kind", ["parent", "symlink"])
def test_patch_that_escapes_the_workspace(redteam_tasks, kind):
    """verify applies diffs as root on the host: a diff naming ../x, or one that
    plants a symlink to write through, must touch nothing outside its copy."""
    task = redteam_tasks("roman")
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


def test_hidden_tests_collected_through_another_module_are_not_left_readable(base_image, tmp_path):
    """lark's tests/__main__.py imports the test classes that pytest collects: the
    import goes with the hidden tests, but the module that defines them must not
    stay in the workspace (an agent would read what it is graded on)."""
    from conftest import make_git_repo

    src = tmp_path / "src"
    (src / "gr").mkdir(parents=True)
    (src / "gr" / "__init__.py").write_text("")
    (src / "gr" / "core.py").write_text(
        "def greet(name):\n    return f'hello {name}'\n\n\ndef shout(text):\n    return text.upper()\n")
    (src / "tests").mkdir()
    (src / "tests" / "__init__.py").write_text("")
    (src / "tests" / "cases.py").write_text(textwrap.dedent('''\
        from gr.core import greet, shout


        class TestGreet:
            def test_hello(self):
                assert greet("ada") == "hello ada"


        class TestShout:
            def test_upper(self):
                assert shout("hey") == "HEY"
        '''))
    (src / "tests" / "test_all.py").write_text("from tests.cases import TestGreet, TestShout  # noqa\n")
    pyproject(src, "gr")
    repo = make_git_repo(src, tmp_path / "repo")
    out = tmp_path / "tasks"
    report = generate(str(repo), out, Options(max_tasks=2, jobs=2, min_statements=0))
    for tid in report.tasks:
        ws = out / tid / "workspace"
        text = "".join(p.read_text() for p in ws.rglob("*.py"))
        assert "def test_hello" not in text or "greet" not in tid, tid
        assert "def test_upper" not in text or "shout" not in tid, tid
    drops = {d.candidate: d.reason for d in report.drops}
    assert any("stays readable" in r for r in drops.values()) or not report.tasks, drops


def test_symlinks_and_files_in_the_way_never_write_outside_or_mask(redteam_tasks, tmp_path):
    """A solution tree whose test directory is a symlink to a host directory, or a
    patch that turns the test directory into a file: the grader writes nothing
    outside its copy, and the answer is a 0 (the solution's doing), never None."""
    task = redteam_tasks("roman")
    t = TARGETS["roman"]
    host = tmp_path / "host-dir"
    host.mkdir()
    sol = wrong_solution(task, tmp_path / "s", t)
    shutil.rmtree(sol / "tests")
    (sol / "tests").symlink_to(host)
    (sol / "textkit" / "escape.dist-info").symlink_to("/usr/share")
    res = verify(task, Solution.from_dir(sol))
    assert res.error is None and res.reward == 0.0, res.model_dump_json(indent=1)
    assert list(host.iterdir()) == []
    assert any(f.kind.value == "removed-symlink" for f in res.findings)
    files = sorted(p.relative_to(task / "workspace").as_posix()
                   for p in (task / "workspace" / "tests").glob("*.py"))
    patch = "".join(f"diff --git a/{f} b/{f}\ndeleted file mode 100644\n--- a/{f}\n+++ /dev/null\n"
                    + "".join(f"@@ -1,{len(lines)} +0,0 @@\n" + "".join("-" + ln for ln in lines)
                              for lines in [(task / "workspace" / f).read_text().splitlines(True)] if lines)
                    for f in files)
    patch += "diff --git a/tests b/tests\nnew file mode 100644\n--- /dev/null\n+++ b/tests\n@@ -0,0 +1 @@\n+x\n"
    res = verify(task, Solution.from_patch(patch))
    assert res.error is None and res.reward == 0.0, res.model_dump_json(indent=1)
