"""A real multi-node Ray cluster on this machine: a head and two worker nodes,
each started with `ray start` as its own node processes. Worker nodes keep
their environments apart (each its own TASKFORGE_ROOTFS store) and grade with
the daemonless backend, so no node relies on another's environments. One
test generates from three repositories and grades 200+ pairs through the
cluster; the other kills a worker node mid-run."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.ray, pytest.mark.bwrap]

NODES = ("w1", "w2")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ray_cli(*args: str, env: dict | None = None) -> None:
    res = subprocess.run(["ray", *args], capture_output=True, text=True, timeout=180,
                         env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0", **(env or {})})
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]


def node_pids(name: str) -> list[int]:
    """Every process of worker node `name` (raylet, its workers): they inherit
    the TASKFORGE_NODE it was started with."""
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if f"TASKFORGE_NODE={name}".encode() in env:
            out.append(int(pid))
    return out


def kill_node(name: str) -> list[int]:
    """SIGKILL every process of worker node `name`, as if its machine died."""
    killed = []
    for pid in node_pids(name):
        try:
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
        except OSError:
            pass
    return killed


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, bwrap_base, base_image):
    import ray

    root = tmp_path_factory.mktemp("ray-cluster")
    port = free_port()
    address = f"127.0.0.1:{port}"
    subprocess.run(["ray", "stop", "--force"], capture_output=True, timeout=120)
    ray_cli("start", "--head", f"--port={port}", "--num-cpus=0", "--include-dashboard=false",
            "--disable-usage-stats")
    stores = {}
    for name in NODES:
        stores[name] = root / name / "rootfs"
        ray_cli("start", f"--address={address}", "--num-cpus=1",
                env={"TASKFORGE_NODE": name, "TASKFORGE_ROOTFS": str(stores[name])})
    ray.init(address=address, logging_level="ERROR", log_to_driver=False)
    deadline = time.monotonic() + 60
    while len([n for n in ray.nodes() if n["Alive"]]) < 3 and time.monotonic() < deadline:
        time.sleep(0.5)
    assert len([n for n in ray.nodes() if n["Alive"]]) == 3
    try:
        yield {"address": address, "stores": stores, "root": root}
    finally:
        ray.shutdown()
        subprocess.run(["ray", "stop", "--force"], capture_output=True, timeout=120)


@pytest.fixture(scope="module")
def corpus(cluster, fixture_repos):
    """Three fixture repositories generated through the cluster's worker nodes."""
    from taskforge.orchestrate.cluster import generate_corpus
    from taskforge.orchestrate.pipeline import Options

    out = cluster["root"] / "tasks"
    repos = [str(fixture_repos[n]) for n in ("textkit", "geomlib", "ledger")]
    results = generate_corpus(repos, out, Options(max_tasks=3, jobs=1), address=cluster["address"])
    return out, results


def pairs_of(out: Path, results: list[dict], n: int):
    from taskforge.grade.verify import Solution

    tasks = [Path(r["out"]) / t for r in results for t in r["tasks"]]
    return [(tasks[i % len(tasks)], Solution.gold() if (i // len(tasks)) % 2 == 0 else Solution.empty())
            for i in range(n)]


def test_generate_and_grade_on_a_multi_node_cluster(cluster, corpus):
    import ray

    from taskforge.orchestrate.cluster import ClusterGrader

    out, results = corpus
    assert [r.get("error") for r in results] == [None] * 3, results
    assert all(len(r["tasks"]) >= 1 for r in results), results
    assert json.loads((out / "corpus.json").read_text()) == results
    workers = {n["NodeID"] for n in ray.nodes() if n["Alive"] and n["Resources"].get("CPU")}
    assert {r["node"] for r in results} <= workers          # generated on worker nodes

    pairs = pairs_of(out, results, 200)
    grader = ClusterGrader(address=cluster["address"], backend="bwrap", warm=0)
    try:
        graded = grader.grade_many(pairs)
    finally:
        grader.close()
    want = [1.0 if sol.kind == "gold" else 0.0 for _, sol in pairs]
    assert [g.get("error") for g in graded] == [None] * len(pairs)
    assert [g["reward"] for g in graded] == want
    assert {g["node"] for g in graded} == workers             # both worker nodes graded
    # Each worker node realised the environments itself, in its own store.
    for store in cluster["stores"].values():
        assert any(p.name.startswith("taskforge_env-") for p in store.iterdir()), store


def test_a_worker_node_killed_mid_run_loses_nothing(cluster, corpus):
    import ray

    from taskforge.orchestrate.cluster import ClusterGrader

    out, results = corpus
    pairs = pairs_of(out, results, 120)
    want = [1.0 if sol.kind == "gold" else 0.0 for _, sol in pairs]
    grader = ClusterGrader(address=cluster["address"], backend="bwrap", warm=0)
    done = []
    killed = []

    def kill_when_under_way() -> None:
        while len(done) < 20:
            time.sleep(0.1)
        killed.extend(kill_node("w1"))

    killer = threading.Thread(target=kill_when_under_way, daemon=True)
    killer.start()
    try:
        graded = grader.grade_many(pairs, progress=lambda n, total: done.append(n))
    finally:
        grader.close()
    killer.join(5)
    assert killed, "the worker node was not killed"
    assert len(done) == len(pairs) and len(graded) == len(pairs)
    assert [g.get("error") for g in graded] == [None] * len(pairs), \
        [g.get("error") for g in graded if g.get("error")][:3]
    assert [g["reward"] for g in graded] == want               # identical to an uninterrupted run
    alive = [n for n in ray.nodes() if n["Alive"] and n["Resources"].get("CPU")]
    assert len(alive) == 1                                      # w1 is gone


def test_a_worker_node_killed_mid_generation_loses_no_task(cluster, corpus, fixture_repos):
    """A node dies while it generates: Ray runs its repository again on another
    node, which resumes from the repository's journal. The task set is the one
    the uninterrupted run wrote."""
    from taskforge.orchestrate.cluster import generate_corpus
    from taskforge.orchestrate.pipeline import Options

    _, uninterrupted = corpus
    ray_cli("start", f"--address={cluster['address']}", "--num-cpus=1",
            env={"TASKFORGE_NODE": "w3", "TASKFORGE_ROOTFS": str(cluster["root"] / "w3")})
    out = cluster["root"] / "tasks-again"
    repos = [str(fixture_repos[n]) for n in ("textkit", "geomlib", "ledger")]
    killed = []

    def kill_when_under_way() -> None:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not any(out.glob("*/.state/baseline*")):
            time.sleep(0.2)
        time.sleep(3)                              # into validation
        killed.extend(kill_node("w2"))

    killer = threading.Thread(target=kill_when_under_way, daemon=True)
    killer.start()
    results = generate_corpus(repos, out, Options(max_tasks=3, jobs=1), address=cluster["address"])
    killer.join(5)
    assert killed, "the worker node was not killed"
    assert [r.get("error") for r in results] == [None] * 3, results
    assert [r["tasks"] for r in results] == [r["tasks"] for r in uninterrupted]


def test_the_readme_commands_on_the_cluster(cluster, corpus, fixture_repos, tmp_path):
    """README's "Running on a Ray cluster": the CLI joins through RAY_ADDRESS."""
    out, results = corpus
    env = {**os.environ, "RAY_ADDRESS": cluster["address"]}
    gen = subprocess.run(["taskforge", "corpus", str(fixture_repos["textkit"]), "--out",
                          str(tmp_path / "tasks"), "--max-tasks", "1", "--ray", "--json"],
                         capture_output=True, text=True, env=env, timeout=900)
    assert gen.returncode == 0 and "Traceback" not in gen.stderr, gen.stderr[-2000:]
    row = json.loads(gen.stdout.splitlines()[0])
    assert len(row["tasks"]) == 1 and (Path(row["out"]) / row["tasks"][0] / "task.json").is_file()
    task = Path(results[0]["out"]) / results[0]["tasks"][0]
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("".join(json.dumps({"task": str(task), "solution": s}) + "\n"
                             for s in ("gold", "empty", "gold")))
    res = subprocess.run(["taskforge", "verify-batch", str(pairs), "--ray", "--sandbox", "bwrap",
                          "--json"], capture_output=True, text=True, env=env, timeout=600)
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr[-2000:]
    assert [json.loads(x)["reward"] for x in res.stdout.splitlines()] == [1.0, 0.0, 1.0]


NOTE_ONLY = """diff --git a/NOTES.md b/NOTES.md
new file mode 100644
--- /dev/null
+++ b/NOTES.md
@@ -0,0 +1 @@
+to do: the feature
"""


def test_the_reward_api_and_serve_grade_on_the_cluster(cluster, corpus, tmp_path, monkeypatch):
    """$TASKFORGE_RAY sends the reward API's grading to actors on the worker
    nodes; `serve --ray` does the same behind HTTP."""
    import ray

    from taskforge.training import rewards
    from tests.test_server import call, server

    out, results = corpus
    tasks = [Path(r["out"]) / t for r in results for t in r["tasks"]]
    workers = {n["NodeID"] for n in ray.nodes() if n["Alive"] and n["Resources"].get("CPU")}
    items, want = [], []
    for i in range(24):
        task = tasks[i % len(tasks)]
        gold = (task / "gold.patch").read_text()
        answer = ["```diff\n" + gold + "```", "", "```diff\n" + NOTE_ONLY + "```"][i % 3]
        items.append({"solution_str": answer, "ground_truth": task.name,
                      "extra_info": {"instance_id": task.name, "task_dir": str(task)}})
        want.append(1.0 if i % 3 == 0 else 0.0)
    monkeypatch.setenv("TASKFORGE_RAY", cluster["address"])
    monkeypatch.setenv("TASKFORGE_SANDBOX", "bwrap")
    monkeypatch.setattr(rewards, "_CLUSTER", [])
    try:
        got = rewards.score_many(items, stats=False)
        single = rewards.score(items[0]["solution_str"], items[0]["ground_truth"],
                               items[0]["extra_info"], stats=False)
        grader = rewards.process_cluster()
        rows = grader.reward_many([(it["extra_info"]["task_dir"], it["solution_str"])
                                   for it in items[:12]])
    finally:
        for g in rewards._CLUSTER:
            g.close()
    assert [r.infra_error for r in got] == [None] * len(items), [r.reason for r in got]
    assert [r.reward for r in got] == want
    assert single.reward == 1.0
    assert [r["reward"] for r in rows] == want[:12]
    assert {r["node"] for r in rows} == workers               # graded on the worker nodes

    # serve --ray: the same answers over HTTP, graded on the worker nodes.
    env_tasks = tmp_path / "tasks"
    env_tasks.mkdir()
    for t in tasks:
        (env_tasks / t.name).symlink_to(t)
    monkeypatch.setenv("RAY_ADDRESS", cluster["address"])
    monkeypatch.delenv("TASKFORGE_RAY")
    with server(env_tasks, tmp_path, "--ray", "--sandbox", "bwrap") as base:
        status, health, _ = call(base, "/health")
        assert status == 200 and health["ray"] == len(workers), health
        body = {"items": [{"instance_id": it["extra_info"]["instance_id"],
                           "solution": it["solution_str"]} for it in items[:9]]}
        status, res, _ = call(base, "/reward/batch", body, timeout=600)
    assert status == 200, res
    assert [r["reward"] for r in res["results"]] == want[:9], res
