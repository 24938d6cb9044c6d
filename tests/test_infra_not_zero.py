"""Our failures are never the solution's 0 (issue 22).

A sandbox that cannot even start the tests (a root filesystem the sandbox
user cannot search, a runner that is not there, an exec that fails) is an
infrastructure error: reward None, `error` set, exit 3. The supervisor says
that it started on its own stream before any workspace code exists, so a
solution can neither forge that line nor suppress it; a solution that ends
the test session after that line still scores 0.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from taskforge.errors import InfraError
from taskforge.grade import verify as verify_mod
from taskforge.grade.events import STARTED, supervisor_started
from taskforge.grade.verify import Solution, verify
from taskforge.package.store import load_task
from taskforge.sandbox import Mount
from taskforge.sandbox.bwrap import rootfs
from tests.conftest import BACKENDS, ROOT, run_cli
from tests.test_runtime_scripts import load

# ----------------------------------------------------------------- fast tier


def test_the_host_and_the_supervisor_agree_on_the_started_line():
    assert load("tfrun").STARTED == STARTED
    assert supervisor_started(f"{STARTED}\n{{\"$tf\": \"run\"}}\n")
    # The tests' own output reaches the host only inside the supervisor's JSON
    # line (escaped), never as a line of its own; a sandbox's complaint is not it.
    assert not supervisor_started("setpriv: failed to execute timeout: Permission denied\n")
    assert not supervisor_started("")
    assert not supervisor_started(f"  {STARTED}\n")


@pytest.mark.parametrize("mode, bad", [(0o755, []), (0o711, []), (0o700, ["/"]), (0o750, ["/"])])
def test_a_tree_is_usable_only_when_the_sandbox_user_can_search_its_root(tmp_path, mode, bad):
    root = tmp_path / "tree"
    for rel in ("usr/bin", "opt/tf/venv/bin"):
        (root / rel).mkdir(parents=True)
    os.chmod(root, mode)
    try:
        assert rootfs.unusable(root) == bad
    finally:
        os.chmod(root, 0o755)


def test_an_unsearchable_directory_deeper_in_the_tree_is_named(tmp_path):
    root = tmp_path / "tree"
    (root / "opt/tf/venv/bin").mkdir(parents=True)
    os.chmod(root / "opt/tf", 0o700)
    try:
        assert rootfs.unusable(root) == ["/opt/tf"]
        with pytest.raises(InfraError) as err:
            rootfs.check_usable(root)
        assert f"chmod o+rx {root}/opt/tf" in err.value.message and not err.value.retry
    finally:
        os.chmod(root / "opt/tf", 0o755)


def test_the_rootfs_script_makes_a_searchable_root():
    """debootstrap goes into `mktemp -d` (0700): the script must open it up before
    renaming it into place, and open up a tree an older version left."""
    text = (ROOT / "scripts/make-debian-rootfs.sh").read_text()
    assert text.index('chmod 755 "$TMP"') < text.index('mv "$TMP" "$DIR"')
    assert 'chmod 755 "$DIR"' in text


# ------------------------------------------------------------ real sandboxes


@pytest.fixture
def task_on(generated, bwrap_env):
    def get(backend: str) -> Path:
        out, report = generated("textkit")
        task = out / sorted(report.tasks)[0]
        if backend == "bwrap":
            bwrap_env(task)
        return task
    return get


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_sandbox_that_cannot_start_the_tests_is_an_infrastructure_error(
        backend, task_on, tmp_path, monkeypatch):
    """The runner's directory is empty: python cannot open the supervisor, so no
    test ever runs. Before the started line, this graded the gold 0 with an
    early-exit finding."""
    task = task_on(backend)
    empty = tmp_path / "no-runner"
    empty.mkdir()
    os.chmod(empty, 0o755)
    monkeypatch.setattr(verify_mod, "runner_mount",
                        lambda: Mount(host=str(empty), container="/opt/tf/lib", read_only=True))
    monkeypatch.setattr(verify_mod, "INFRA_RETRIES", 0)
    res = verify(task, Solution.gold(), backend=backend)
    assert res.reward is None and res.error and "did not start" in res.error, res
    assert not res.resolved


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_solution_that_ends_the_session_early_still_scores_0(backend, task_on, tmp_path):
    """The supervisor started, then the package under test ends the process at
    import: that is the solution's doing."""
    task = task_on(backend)
    rec = load_task(task).record
    sol = tmp_path / "sol"
    shutil.copytree(task / "workspace", sol, ignore=shutil.ignore_patterns(".git"))
    subprocess.run(["git", "apply", "-"], cwd=sol, input=rec.patch, text=True, check=True)
    init = next(p for p in sorted(sol.rglob("__init__.py")) if "tests" not in p.parts)
    init.write_text("import os\nos._exit(0)\n" + init.read_text())
    res = verify(task, Solution.from_dir(sol), backend=backend)
    assert res.error is None and res.reward == 0.0, res
    assert any("early-exit" in t or "exit" in t for t in res.tampering), res.tampering


@pytest.mark.bwrap
def test_a_tree_the_sandbox_user_cannot_search_is_refused_with_exit_3(task_on):
    """The fault a fresh machine met: the environment's root was 0700. verify
    says what is wrong and how to fix it, as an infrastructure error."""
    task = task_on("bwrap")
    root = rootfs.path_for(load_task(task).record.image_name)
    mode = root.stat().st_mode & 0o7777
    os.chmod(root, 0o700)
    try:
        res = run_cli("verify", task, "--gold", "--sandbox", "bwrap", "--json", timeout=300,
                      env={"DOCKER_HOST": "unix:///nonexistent/docker.sock"})
    finally:
        os.chmod(root, mode)
    assert res.returncode == 3 and "Traceback" not in res.stderr, (res.returncode, res.stderr)
    got = json.loads(res.stdout)
    assert got["reward"] is None and str(root) in got["error"] and "chmod" in got["error"], got


@pytest.mark.bwrap
def test_a_base_copied_from_a_private_tree_is_usable(task_on, tmp_path, monkeypatch):
    """A source tree made in `mktemp -d` (0700) and a fresh store: the base and
    environment trees copied from it are searchable, and the gold scores 1."""
    source = os.environ.get("TASKFORGE_ROOTFS_BASE") or rootfs.default_base("3.11")
    assert source, "set TASKFORGE_ROOTFS_BASE (scripts/make-debian-rootfs.sh DIR)"
    private = tmp_path / "private-src"
    subprocess.run(["cp", "-a", "--reflink=auto", source, str(private)], check=True)
    os.chmod(private, 0o700)
    store = tmp_path / "store"
    task = task_on("docker")            # the task only; its environment is built below
    env = {"TASKFORGE_ROOTFS": str(store), "TASKFORGE_ROOTFS_BASE": str(private),
           "DOCKER_HOST": "unix:///nonexistent/docker.sock"}
    prep = run_cli("env", "prepare", task, "--json", env=env, timeout=1500)
    assert prep.returncode == 0, prep.stderr[-2000:]
    built = [Path(json.loads(line)["path"]) for line in prep.stdout.splitlines()]
    assert built and all(p.is_relative_to(store) for p in built), built
    for tree in [*built, *store.iterdir()]:
        if tree.is_dir() and not tree.name.startswith("."):
            assert rootfs.unusable(tree) == [], tree
    gold = run_cli("verify", task, "--gold", "--sandbox", "bwrap", "--json", env=env, timeout=300)
    assert json.loads(gold.stdout)["reward"] == 1.0, gold.stdout[-2000:]


def test_the_two_base_recipes_generate_the_same_locales():
    text = (ROOT / "Dockerfile").read_text()
    assert f'ARG LOCALES="{rootfs.LOCALES}"' in text
    assert "locales" in (ROOT / "scripts/make-debian-rootfs.sh").read_text()


def test_a_base_tree_is_named_by_its_recipe(monkeypatch):
    before = rootfs.base_name("3.11")
    monkeypatch.setattr(rootfs, "BASE_SETUP", rootfs.BASE_SETUP + "true\n")
    assert rootfs.base_name("3.11") != before
