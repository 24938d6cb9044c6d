"""Shared fixtures: real git repos made from fixtures/repos/, a real Docker
engine, and generate runs shared across the tests of a session."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "repos"
FIXTURE_NAMES = ["textkit", "geomlib", "ledger"]
# The CLI of this checkout: never whatever `taskforge` comes first on PATH (on
# a machine where another checkout is installed, that one would be tested).
CLI = [sys.executable, "-m", "taskforge"]


def checkout_first(pythonpath: str) -> str:
    """`pythonpath` with this checkout at its head (once)."""
    rest = [p for p in pythonpath.split(os.pathsep) if p and p != str(ROOT)]
    return os.pathsep.join([str(ROOT), *rest])


def cli_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for a CLI subprocess: this checkout first on the import path."""
    merged = {**os.environ, **(env or {})}
    merged["PYTHONPATH"] = checkout_first(merged.get("PYTHONPATH", ""))
    return merged


# Every process a test starts (the CLI, Ray's node processes, a bench script)
# imports this checkout, whatever else is installed or wherever it runs.
os.environ["PYTHONPATH"] = checkout_first(os.environ.get("PYTHONPATH", ""))


def run_cli(*args, env: dict[str, str] | None = None, **kw) -> subprocess.CompletedProcess:
    """`taskforge ARGS` from this checkout, output captured as text."""
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    return subprocess.run([*CLI, *map(str, args)], env=cli_env(env), **kw)


def make_git_repo(src: Path, dest: Path) -> Path:
    """Copy a fixture tree and commit it: tests see a real git repository."""
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache",
                                                             "*.egg-info"))
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "GIT_AUTHOR_DATE": "2024-01-01T00:00:00+0000",
           "GIT_COMMITTER_DATE": "2024-01-01T00:00:00+0000", "PATH": "/usr/bin:/bin"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "fixture"]):
        subprocess.run(["git", "-c", "init.defaultBranch=main", *args], cwd=dest, env=env, check=True)
    return dest


ENGINE_FIXTURES = {"docker_engine"}


@pytest.fixture(scope="session")
def confwriter_tasks(base_image, tmp_path_factory):
    """generate (cases offered by default) on confwriter: every value goes through `format_value`,
    so the writers of single types can only leave as bodies (Removal.BODY), and
    format_duration's negative case is an arm of its own (Removal.BRANCH)."""
    from taskforge.orchestrate.pipeline import Options, generate

    repo = make_git_repo(FIXTURES / "confwriter", tmp_path_factory.mktemp("repo") / "confwriter")
    out = tmp_path_factory.mktemp("tasks-confwriter")
    report = generate(str(repo), out, Options(max_tasks=8, jobs=2))   # cases by default
    return out, report


def confwriter_task(confwriter_tasks, name: str):
    """(task directory, record) of the confwriter task removing `name`."""
    from taskforge.package.store import load_task

    out, report = confwriter_tasks
    for tid in report.tasks:
        rec = load_task(out / tid).record
        if rec.feature.name == f"confwriter.writer.{name}":
            return out / tid, rec
    raise AssertionError(f"no task for {name}: {report.model_dump_json(indent=1)[:3000]}")


def graded_edit(task: Path, which: str, rel: str, marker: str, new: str, backend: str, request, tmp_path: Path):
    """verify of the gold, the empty solution, or the task's workspace with
    `marker` in file `rel` replaced by `new` (a hand-written solution), on
    `backend` (bwrap: the task's environment prepared first)."""
    from taskforge.grade.verify import Solution, verify

    if backend == "bwrap":
        request.getfixturevalue("bwrap_env")(task)
    if which == "gold":
        sol = Solution.gold()
    elif which == "empty":
        sol = Solution.empty()
    else:
        ws = tmp_path / "ws"
        shutil.copytree(task / "workspace", ws)
        path = ws / rel
        text = path.read_text()
        assert marker in text
        path.write_text(text.replace(marker, new))
        sol = Solution.from_dir(ws)
    return verify(task, sol, backend=backend)


def pytest_collection_modifyitems(config, items):
    """A test that reaches the Docker engine through a fixture is marked `docker`,
    so `pytest -m "not docker"` is the fast tier that runs with no engine at all;
    tests that talk to the engine without one carry the mark themselves."""
    for item in items:
        if ENGINE_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.docker)
    # Attacks whose graded runs replay in the fast tier (tests/test_grading_replay.py)
    # run end to end only when asked (or when their runs are being recorded).
    if not (os.environ.get("TASKFORGE_REDTEAM_FULL") or os.environ.get("TASKFORGE_RECORD_CASES")):
        kept = [i for i in items if not i.get_closest_marker("redteam_full")]
        if len(kept) < len(items):
            config.hook.pytest_deselected(items=[i for i in items if i.get_closest_marker("redteam_full")])
            items[:] = kept


@pytest.fixture(scope="session")
def docker_engine():
    """The real engine; a test that needs it fails (never skips) when it is absent."""
    from taskforge.sandbox.docker.engine import client

    return client()


@pytest.fixture(scope="session")
def base_image(docker_engine):
    from taskforge.sandbox.docker.images import ensure_base_image

    return ensure_base_image(log=lambda s: None)


@pytest.fixture(scope="session")
def second_engine(base_image):
    """Another dockerd on this machine, as a second node's own engine: its own
    data root, exec root and socket, no bridge (sandboxes run without a network
    and environment builds on the host's). It starts holding only the local
    base image, as a node given the base by its registry would (no registry
    here: loaded from the first engine). Yields its DOCKER_HOST."""
    import os
    import signal
    import tempfile
    import time

    import docker

    root = Path(tempfile.mkdtemp(prefix="tfe2-", dir="/tmp"))     # short: socket paths
    sock = f"unix://{root}/d.sock"
    log = open(root / "dockerd.log", "wb")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DOCKER_", "TASKFORGE_NODE"))}
    proc = subprocess.Popen(["dockerd", "--data-root", str(root / "data"), "--exec-root",
                             str(root / "x"), "--pidfile", str(root / "d.pid"), "-H", sock,
                             "--bridge=none", "--iptables=false", "--ip-masq=false"],
                            stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                docker.DockerClient(base_url=sock, timeout=120).close()
                break
            except Exception:  # noqa: BLE001 - not up yet
                assert proc.poll() is None and time.monotonic() < deadline, \
                    (root / "dockerd.log").read_text()[-2000:]
                time.sleep(0.5)
        from taskforge.sandbox.docker.images import base_arg

        name = base_arg()
        save = subprocess.Popen(["docker", "save", name], stdout=subprocess.PIPE)
        load = subprocess.run(["docker", "load", "-q"], stdin=save.stdout, capture_output=True,
                              env={**os.environ, "DOCKER_HOST": sock}, timeout=600)
        save.wait(600)
        assert load.returncode == 0 and save.returncode == 0, load.stderr[-2000:]
        yield sock
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(30)
        mounts = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()
                  if line.split()[1].startswith(str(root))]
        for m in sorted(mounts, key=len, reverse=True):
            subprocess.run(["umount", "-l", m], capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def fixture_repos(tmp_path_factory):
    root = tmp_path_factory.mktemp("repos")
    return {name: make_git_repo(FIXTURES / name, root / name) for name in FIXTURE_NAMES}


@pytest.fixture(scope="session")
def generated(fixture_repos, base_image, tmp_path_factory):
    """generate on each fixture once per session: name -> (out dir, report)."""
    from taskforge.orchestrate.pipeline import Options, generate

    cache = {}

    def get(name: str, max_tasks: int = 6):
        key = (name, max_tasks)
        if key not in cache:
            out = tmp_path_factory.mktemp(f"tasks-{name}")
            report = generate(str(fixture_repos[name]), out, Options(max_tasks=max_tasks, jobs=2))
            cache[key] = (out, report)
        return cache[key]

    return get


@pytest.fixture(scope="module")
def tasks(generated):
    """Three textkit tasks: (their output dir, their ids), for reward and serve tests."""
    out, report = generated("textkit")
    return out, sorted(report.tasks)[:3]


@pytest.fixture(scope="module")
def shard_dir(tasks, tmp_path_factory):
    """Those tasks written as shards."""
    from taskforge.training import shards

    out, ids = tasks
    d = tmp_path_factory.mktemp("shards") / "s"
    shards.write_shards([out / i for i in ids], d)
    return d


BACKENDS = [pytest.param("docker", marks=pytest.mark.docker), pytest.param("bwrap", marks=pytest.mark.bwrap)]


@pytest.fixture(scope="session")
def bwrap_base():
    """The daemonless backend's base environment (a root filesystem directory),
    set up from $TASKFORGE_ROOTFS_BASE (.ci/run makes one with debootstrap). A
    test that needs it fails, never skips, when it is absent."""
    from taskforge.sandbox.bwrap import rootfs

    rootfs.ensure_base("3.11", log=lambda s: None)
    return rootfs.base_name("3.11")


@pytest.fixture(scope="session")
def bwrap_env():
    """Task directory -> its environment prepared without Docker (cached by name)."""
    from taskforge.sandbox.bwrap import rootfs

    def prepare(task) -> str:
        from taskforge.package.store import load_task

        rootfs.prepare_task(load_task(task).environment_request(), log=lambda s: None)
        return str(task)

    return prepare


def pkg_worker(root: Path, files: dict[str, str]):
    """A generation worker (validate.checks.Worker, its sandbox started) on a
    small git repository of package `pkg` holding `files`, its environment
    built. The caller closes it."""
    from taskforge.env.detect import detect
    from taskforge.orchestrate.pipeline import build_environment
    from taskforge.repo.layout import scan
    from taskforge.repo.source import fetch
    from taskforge.validate.checks import RunArgs, Worker

    repo = root / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "pkg" / "__init__.py").write_text("")
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    (repo / "pyproject.toml").write_text(
        '[project]\nname = "pkg"\nversion = "0.1"\n[build-system]\nrequires = ["setuptools"]\n'
        'build-backend = "setuptools.build_meta"\n[tool.setuptools]\npackages = ["pkg"]\n')
    for args in (["init", "-q"], ["add", "-A"],
                 ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "x"]):
        subprocess.run(["git", *args], cwd=repo, check=True)
    src = fetch(str(repo), root / "clone")
    plan = detect(src.path, scan(src.path))
    image, _ = build_environment(src, plan, lambda s: None)
    return Worker(src.path, image, root / "scratch", 0,
                  run_args=RunArgs(options=plan.test_options, paths=plan.test_paths, env=plan.env))
