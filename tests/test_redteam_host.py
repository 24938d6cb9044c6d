"""Red team, the host's side: attacks on the grader's memory, time, result and
cleanup rather than on the tests (issue 23), end to end on a real task.

Each attack runs through the CLI (`python -m taskforge verify TASK ... --json`)
in a child whose children's peak RSS is read: ours must score 0 with a finding,
within the task's time limit plus a few seconds, under 1 GiB, on Docker and on
bubblewrap. Without the bound (`Defences(bounds=False)`, the naive grader, or
the unbounded step itself in a child) each one overruns, blows memory, bloats
the result or crashes. Honest twins (a 300 KB module, a few hundred files, as a
patch and as a tree) keep their 1.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import hostkit  # noqa: E402

from taskforge.grade.verify import Defences, Solution, verify  # noqa: E402
from taskforge.package.store import load_task  # noqa: E402
from tests.test_redteam import redteam_tasks, warm_pools  # noqa: E402,F401 - fixtures

ROOT = Path(__file__).resolve().parent.parent
SLACK = 15.0                     # seconds past the task's time limit
MEMORY_MB = 1024
BACKEND_PARAMS = [pytest.param("docker", marks=pytest.mark.docker, id="docker"),
                  pytest.param("bwrap", marks=pytest.mark.bwrap, id="bwrap")]

_WRAP = textwrap.dedent('''\
    import json, os, resource, signal, subprocess, sys, time
    out, timeout, argv = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
    t0 = time.monotonic()
    with open(out, "wb") as fh:
        proc = subprocess.Popen(argv, stdout=fh, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            rc = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)      # its own group: what it started goes too
            proc.wait()
            rc = None
    print(json.dumps({"rc": rc, "seconds": time.monotonic() - t0,
                      "maxrss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
    ''')


@dataclass
class Measured:
    rc: int | None               # None: killed at the timeout
    seconds: float
    maxrss_mb: float             # the largest process among the child's descendants
    out: bytes

    @property
    def result(self) -> dict:
        return json.loads(self.out)


def measured(argv: list[str], tmp: Path, timeout: float = 600) -> Measured:
    """Run argv in a fresh child; its time, its descendants' peak RSS, its stdout."""
    out = tmp / f"out-{time.monotonic_ns()}"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    res = subprocess.run([sys.executable, "-c", _WRAP, str(out), str(timeout), *argv],
                         capture_output=True, text=True, env=env, cwd=tmp)
    m = json.loads(res.stdout)
    return Measured(m["rc"], m["seconds"], m["maxrss_mb"], out.read_bytes())


def cli_verify(task: Path, solution: list[str], backend: str, tmp: Path) -> Measured:
    return measured([sys.executable, "-m", "taskforge", "verify", str(task), *solution, "--json",
                     "--sandbox", backend], tmp)


def host_step(task: Path, patch: Path, tmp: Path, timeout: float, bounds: bool = False) -> Measured:
    """The host-side prepare step alone (bounds off unless asked), in a child."""
    code = ("import sys; from pathlib import Path\n"
            "from taskforge.grade.verify import Defences, Solution, prepare\n"
            "from taskforge.package.store import load_task\n"
            "found, plan = prepare(load_task(sys.argv[1]), Solution.from_patch_file(sys.argv[2]),\n"
            "                      Path(sys.argv[3]), Defences(bounds=sys.argv[4] == '1'), 30.0)\n"
            "print([f.kind.value for f in found], plan is not None)\n")
    return measured([sys.executable, "-c", code, str(task), str(patch), str(tmp / "tree"),
                     "1" if bounds else "0"], tmp, timeout=timeout)


def limit(task: Path) -> float:
    return load_task(task).record.grading.timeout or 900.0


def bounded_zero(m: Measured, task: Path, kinds: set[str]) -> dict:
    """Ours: reward 0 with one of `kinds`, in time, in memory, a small result."""
    assert m.rc == 1, m.out[-2000:]
    r = m.result
    assert r["reward"] == 0.0 and r["error"] is None, r
    seen = {f["kind"] for f in r["findings"]}
    assert seen & kinds, (kinds, [f["detail"] for f in r["findings"]][:5])
    assert m.seconds < limit(task) + SLACK, m.seconds
    assert m.maxrss_mb < MEMORY_MB, m.maxrss_mb
    assert len(m.out) < 200_000
    return r


@pytest.fixture(scope="module")
def roman(redteam_tasks, request):       # noqa: F811 - the imported fixture
    return redteam_tasks("roman")


def on(backend: str, task: Path, request) -> None:
    if backend == "bwrap":
        request.getfixturevalue("bwrap_env")(task)


def write(tmp: Path, name: str, text: str) -> Path:
    p = tmp / name
    p.write_text(text)
    return p


# ---------------------------------------------------------------- the attacks, bounded

PATCH_ATTACKS = {
    # name: (patch builder on the task, finding kinds ours must report)
    "module-24mib-in-a-binary-patch": (lambda t: hostkit.with_gold(t, hostkit.big_module_patch(24)),
                                       {"over-limit"}),
    "module-4mib-too-big-to-scan": (lambda t: hostkit.with_gold(t, hostkit.big_module_patch(4)),
                                    {"unscannable"}),
    "file-1gib-in-a-1mib-patch": (lambda t: hostkit.with_gold(t, hostkit.huge_file_patch(1024)),
                                  {"over-limit"}),
    "delta-1gib-in-a-few-kb": (lambda t: hostkit.with_gold(t, hostkit.delta_bomb_patch(
        t, "textkit/formatting.py", 1024)), {"over-limit"}),
    "60000-files": (lambda t: hostkit.with_gold(t, hostkit.many_files_patch(60_000)), {"over-limit"}),
    "chain-1100-deep-in-the-patch": (lambda t: hostkit.with_gold(t, hostkit.deep_patch(1100)),
                                     {"over-limit"}),
    "symlink-mode-0120000": (lambda t: hostkit.with_gold(t, hostkit.symlink_patch(
        "new file mode 0120000")), {"patch-rejected"}),
}


@pytest.mark.parametrize("backend", BACKEND_PARAMS)
@pytest.mark.parametrize("name", list(PATCH_ATTACKS))
def test_patch_attack_is_bounded(name, backend, roman, tmp_path, request):
    on(backend, roman, request)
    build, kinds = PATCH_ATTACKS[name]
    patch = write(tmp_path, "p.diff", build(roman))
    bounded_zero(cli_verify(roman, ["--patch", str(patch)], backend, tmp_path), roman, kinds)


TREE_ATTACKS = {
    "chain-3000-deep-at-import": (lambda t, d: hostkit.deep_at_import(t, d), {"over-limit"}),
    "150000-monitor-events": (lambda t, d: hostkit.flood(t, d), {"monitor-flood"}),
    # The fresh attack's A2 and A8: the workspace is a directory of the host's.
    "3gib-written-at-import": (lambda t, d: hostkit.writes_at_import(t, d, mib=3072), {"over-limit"}),
    "one-2gib-file-at-import": (lambda t, d: hostkit.writes_at_import(t, d, mib=2048, per_file_mib=4096),
                                {"over-limit"}),
    "300000-files-at-import": (lambda t, d: hostkit.writes_at_import(t, d, files=300_000), {"over-limit"}),
    # Red team of 2026-12-05 (9): a directory the tests made 0700 was skipped by
    # the supervisor's walk (root with SETUID/SETGID only): 3 GiB went uncounted.
    "1500mib-in-a-0700-dir": (lambda t, d: hostkit.writes_at_import(t, d, mib=1500, mode=0o700), {"over-limit"}),
}


@pytest.mark.parametrize("backend", BACKEND_PARAMS)
@pytest.mark.parametrize("name", list(TREE_ATTACKS))
def test_tree_attack_is_bounded(name, backend, roman, tmp_path, request):
    on(backend, roman, request)
    build, kinds = TREE_ATTACKS[name]
    sol = build(roman, tmp_path / "s")
    r = bounded_zero(cli_verify(roman, ["--solution", str(sol)], backend, tmp_path), roman, kinds)
    if name.startswith("150000"):
        assert len(r["findings"]) <= 101, len(r["findings"])


@pytest.mark.docker
def test_a_deep_chain_in_a_warm_sandbox_is_cleaned_and_the_slot_refilled(roman, warm_pools, tmp_path):  # noqa: F811
    """In a warm pool the cleanup runs in a background thread: it must remove the
    chain and start the replacement (a RecursionError there used to leave the
    slot empty for good)."""
    from taskforge.grade.testrun import runner_mount, supervisor_standby
    from taskforge.sandbox import Limits, SandboxSpec

    pool = warm_pools("docker")
    rec = load_task(roman).record
    spec = SandboxSpec(image=rec.image_name, mounts=[runner_mount()], limits=Limits(),
                       supervisor=True, standby=supervisor_standby(),
                       labels={"taskforge.role": "verify"})              # verify's shape
    sol = hostkit.deep_at_import(roman, tmp_path / "s")
    res = verify(roman, Solution.from_dir(sol), pool=pool, backend="docker")
    assert res.reward == 0.0 and res.error is None, res.model_dump_json(indent=1)
    assert any(f.kind.value == "over-limit" for f in res.findings)
    deadline = time.monotonic() + 180

    def chains() -> list[Path]:
        return [d for d in Path("/tmp").glob("tf-warm-*") if (d / "workspace" / "textkit" / "d").exists()]
    while (chains() or pool.ready(spec) < pool.per_shape) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not chains(), chains()
    assert pool.ready(spec) == pool.per_shape, (pool.started, pool.failed)


# ---------------------------------------------------------------- without the bounds

@pytest.mark.docker
def test_without_the_cap_a_flood_scores_one_and_bloats_the_result(roman, tmp_path):
    """The naive grader (every event kept) with the monitor on: the gold with
    150,000 forged events scores 1 and the result is tens of MB."""
    sol = hostkit.flood(roman, tmp_path / "s")
    d = Defences.naive().model_copy(update={"monitor": True})
    res = verify(roman, Solution.from_dir(sol), defences=d)
    assert res.reward == 1.0 and len(res.findings) > 100_000, len(res.findings)
    assert len(res.model_dump_json()) > 10_000_000


def _peak_bytes_under(root: Path, stop) -> list[int]:
    """A thread's running maximum of the bytes on disk under `root`."""
    import threading

    peak = [0]

    def watch():
        while not stop.is_set():
            total = 0
            for dirpath, _, files in os.walk(root):
                for f in files:
                    try:
                        total += os.lstat(os.path.join(dirpath, f)).st_blocks * 512
                    except OSError:
                        pass
            peak[0] = max(peak[0], total)
            stop.wait(0.2)
    threading.Thread(target=watch, daemon=True).start()
    return peak


@pytest.mark.docker
def test_without_the_workspace_bound_the_host_disk_pays(roman, tmp_path, monkeypatch):
    """Bounds off: the gold that writes 3 GiB into its workspace at import scores
    1, and those bytes land in the host's temporary directory."""
    import tempfile
    import threading

    sol = hostkit.writes_at_import(roman, tmp_path / "s", mib=3072)
    host_tmp = tmp_path / "host-tmp"
    host_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(host_tmp))
    stop = threading.Event()
    peak = _peak_bytes_under(host_tmp, stop)
    try:
        res = verify(roman, Solution.from_dir(sol), defences=Defences(bounds=False))
    finally:
        stop.set()
    assert res.reward == 1.0 and res.error is None, res.model_dump_json(indent=1)
    assert peak[0] > 2 << 30, peak[0]


@pytest.mark.docker
def test_without_the_post_run_check_a_deep_chain_is_a_free_pass(roman, tmp_path):
    """Bounds off: the gold that plants a 3,000-deep chain scores 1; the old
    cleanup (shutil.rmtree) could not even remove what it left."""
    sol = hostkit.deep_at_import(roman, tmp_path / "s", levels=1200)
    res = verify(roman, Solution.from_dir(sol), defences=Defences(bounds=False))
    assert res.reward == 1.0 and res.error is None, res.model_dump_json(indent=1)
    probe = tmp_path / "probe"
    shutil.copytree(sol, probe, ignore=shutil.ignore_patterns(".git"))
    subprocess.run([sys.executable, "-c", "import textkit"], cwd=probe, check=True,
                   env={**os.environ, "PYTHONPATH": str(probe)})
    # In a fresh interpreter: a library imported by an earlier test may have
    # raised this process's recursion limit.
    old = subprocess.run([sys.executable, "-c", "import shutil, sys; shutil.rmtree(sys.argv[1])", str(probe)],
                         capture_output=True, text=True, timeout=300)
    assert old.returncode != 0 and "RecursionError" in old.stderr, old.stderr[-2000:]
    from taskforge.fsutil import rmtree
    assert rmtree(probe) == []


@pytest.mark.parametrize("name", ["module-8mib-scanned",         # the static scan: > 1 GiB
                                  "file-1gib-in-a-1mib-patch"])  # git apply holds the file twice
def test_the_unbounded_host_step_overruns_memory(name, roman, tmp_path):
    """The host's prepare step alone, bounds off, in a child: what each attack
    costs without them (killed at the task's time limit plus the slack)."""
    text = {"module-8mib-scanned": lambda: hostkit.with_gold(roman, hostkit.big_module_patch(8)),
            "file-1gib-in-a-1mib-patch": lambda: hostkit.with_gold(roman, hostkit.huge_file_patch(1024))}[name]()
    patch = write(tmp_path, "p.diff", text)
    m = host_step(roman, patch, tmp_path, timeout=limit(roman) + SLACK)
    from taskforge.fsutil import rmtree
    rmtree(tmp_path / "tree")                   # a gigabyte, for one
    assert m.maxrss_mb > 1024, m


def test_the_unbounded_host_step_takes_150000_files_and_its_time(roman, tmp_path):
    """150,000 new files, bounds off: the step takes the patch, and many times
    what the bounded one takes to refuse it
    (a ratio: on CI's machine the unbounded step took 25 s one day, 26 s with
    2.5 times the files another; a fixed number of seconds was noise)."""
    patch = write(tmp_path, "p.diff", hostkit.with_gold(roman, hostkit.many_files_patch(150_000)))
    ours = host_step(roman, patch, tmp_path, timeout=limit(roman) + SLACK, bounds=True)
    assert ours.rc == 0 and b"over-limit" in ours.out and ours.out.rstrip().endswith(b"False"), ours
    from taskforge.fsutil import rmtree
    rmtree(tmp_path / "tree")
    m = host_step(roman, patch, tmp_path, timeout=limit(roman) + SLACK)
    rmtree(tmp_path / "tree")
    assert m.rc is None or m.out.rstrip().endswith(b"True"), m
    assert m.rc is None or m.seconds > 5 * ours.seconds, (m.seconds, ours.seconds)


# ---------------------------------------------------------------- honest twins

@pytest.mark.parametrize("backend", BACKEND_PARAMS)
@pytest.mark.parametrize("name", ["module-300kib", "400-files"])
def test_honest_large_patches_keep_their_one(name, backend, roman, tmp_path, request):
    on(backend, roman, request)
    extra = (hostkit.text_new_file("textkit/_data.py", hostkit.module_source(300).decode())
             if name == "module-300kib" else hostkit.many_files_patch(400, per_dir=100))
    patch = write(tmp_path, "p.diff", hostkit.with_gold(roman, extra))
    m = cli_verify(roman, ["--patch", str(patch)], backend, tmp_path)
    assert m.rc == 0 and m.result["reward"] == 1.0, m.out[-3000:]
    assert m.maxrss_mb < MEMORY_MB and m.seconds < limit(roman) + SLACK, m


@pytest.mark.parametrize("backend", BACKEND_PARAMS)
def test_an_honest_cache_in_the_workspace_keeps_its_one(backend, roman, tmp_path, request):
    """A package that writes 200 MiB and 2,000 files of its own into the
    workspace is well inside the bound."""
    on(backend, roman, request)
    sol = hostkit.writes_at_import(roman, tmp_path / "s", mib=200, files=2000, per_file_mib=50)
    m = cli_verify(roman, ["--solution", str(sol)], backend, tmp_path)
    assert m.rc == 0 and m.result["reward"] == 1.0, m.out[-3000:]


@pytest.mark.docker
def test_an_honest_large_tree_keeps_its_one(roman, tmp_path):
    sol = hostkit.gold_tree(roman, tmp_path / "s")
    (sol / "textkit" / "_data.py").write_bytes(hostkit.module_source(300))
    for i in range(300):
        (sol / "textkit" / f"gen{i // 100}").mkdir(exist_ok=True)
        (sol / "textkit" / f"gen{i // 100}" / f"m{i}.py").write_text(f"X = {i}\n")
    m = cli_verify(roman, ["--solution", str(sol)], "docker", tmp_path)
    assert m.rc == 0 and m.result["reward"] == 1.0, m.out[-3000:]
