"""A real multi-node Ray cluster on this machine: a head and two worker nodes,
each started with `ray start` as its own node processes. No node relies on
another's environments: each worker keeps its own TASKFORGE_ROOTFS store (the
daemonless backend), and w2 talks to its own dockerd (own data root and
socket), so every environment a node grades in is one it realised itself from
the task's recipe. One test generates from three repositories and grades 200+
pairs through the cluster; others grade on the per-node engines, and kill a
worker node mid-run."""
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

from tests.conftest import CLI

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


def node_id(name: str) -> str:
    """The Ray node id of worker node `name` (started with resource tf_<name>)."""
    import ray

    ids = [n["NodeID"] for n in ray.nodes() if n["Alive"] and f"tf_{name}" in n["Resources"]]
    assert len(ids) == 1, ids
    return ids[0]


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
def cluster(tmp_path_factory, bwrap_base, base_image, second_engine):
    import ray

    root = tmp_path_factory.mktemp("ray-cluster")
    port = free_port()
    address = f"127.0.0.1:{port}"
    subprocess.run(["ray", "stop", "--force"], capture_output=True, timeout=120)
    ray_cli("start", "--head", f"--port={port}", "--num-cpus=0", "--include-dashboard=false",
            "--disable-usage-stats")
    stores = {}
    engines = {"w1": os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock"),
               "w2": second_engine}
    for name in NODES:
        stores[name] = root / name / "rootfs"
        ray_cli("start", f"--address={address}", "--num-cpus=1", f'--resources={{"tf_{name}": 1}}',
                env={"TASKFORGE_NODE": name, "TASKFORGE_ROOTFS": str(stores[name]),
                     "DOCKER_HOST": engines[name]})
    ray.init(address=address, logging_level="ERROR", log_to_driver=False)
    deadline = time.monotonic() + 60
    while len([n for n in ray.nodes() if n["Alive"]]) < 3 and time.monotonic() < deadline:
        time.sleep(0.5)
    assert len([n for n in ray.nodes() if n["Alive"]]) == 3
    try:
        yield {"address": address, "stores": stores, "root": root, "engines": engines}
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
    results = generate_corpus(repos, out, Options(max_tasks=2, jobs=1), address=cluster["address"])
    return out, results


def pairs_of(out: Path, results: list[dict], n: int):
    from taskforge.grade.verify import Solution

    tasks = [Path(r["out"]) / t for r in results for t in r["tasks"]]
    return [(tasks[i % len(tasks)], Solution.gold() if (i // len(tasks)) % 2 == 0 else Solution.empty())
            for i in range(n)]


def test_generate_and_grade_on_a_multi_node_cluster(cluster, corpus):
    import ray

    from taskforge.training.raygrade import ClusterGrader

    out, results = corpus
    assert [r.get("error") for r in results] == [None] * 3, results
    assert all(len(r["tasks"]) >= 1 for r in results), results
    assert json.loads((out / "corpus.json").read_text())["rows"] == results
    workers = {n["NodeID"] for n in ray.nodes() if n["Alive"] and n["Resources"].get("CPU")}
    assert {r["node"] for r in results} <= workers          # generated on worker nodes

    pairs = pairs_of(out, results, 24)
    grader = ClusterGrader(address=cluster["address"], backend="bwrap")
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


def test_nodes_with_their_own_engines_realise_environments_from_the_recipe(cluster, corpus):
    """Grading on Docker where the worker nodes do not share an engine: w2's
    dockerd holds none of the tasks' environments (removed first), so its
    actor builds each from the recipe the task records, under the task's own
    name, in its own engine; both nodes grade, every reward is right."""
    import docker
    import ray

    from taskforge.package.store import load_task
    from taskforge.training.raygrade import ClusterGrader

    out, results = corpus
    engines = {n: docker.DockerClient(base_url=url, timeout=120)
               for n, url in cluster["engines"].items()}
    assert engines["w1"].info()["DockerRootDir"] != engines["w2"].info()["DockerRootDir"]
    pairs = pairs_of(out, results, 18)
    names = sorted({load_task(t).record.image_name for t, _ in pairs})
    for name in names:
        try:
            engines["w2"].images.remove(name, force=True)
        except docker.errors.ImageNotFound:
            pass
    assert not [n for n in names if engines["w2"].images.list(name=n)]
    grader = ClusterGrader(address=cluster["address"], backend="docker", warm=1)
    try:
        graded = grader.grade_many(pairs)
    finally:
        grader.close()
    want = [1.0 if sol.kind == "gold" else 0.0 for _, sol in pairs]
    assert [g.get("error") for g in graded] == [None] * len(pairs), \
        [g.get("error") for g in graded if g.get("error")][:3]
    assert [g["reward"] for g in graded] == want
    workers = {n["NodeID"] for n in ray.nodes() if n["Alive"] and n["Resources"].get("CPU")}
    assert {g["node"] for g in graded} == workers
    w2 = node_id("w2")
    graded_on_w2 = {load_task(t).record.image_name for (t, _), g in zip(pairs, graded)
                    if g["node"] == w2}
    built = {n for n in names if engines["w2"].images.list(name=n)}
    assert graded_on_w2 and built == graded_on_w2, (built, graded_on_w2)
    for client in engines.values():
        client.close()


def test_candidate_validations_spread_over_the_cluster(cluster, corpus, fixture_repos, tmp_path):
    """One repository's candidates validated by remote workers on the worker nodes
    beside one local worker. One remote worker is killed as soon as it is ready: the
    candidate it was given is settled again by another worker. The task set is
    the one the corpus run (one node's own worker) wrote."""
    import ray

    from taskforge.orchestrate.pipeline import Options, generate

    _, results = corpus
    want = next(r for r in results if r["repo"] == str(fixture_repos["geomlib"]))["tasks"]
    killed: list[str] = []

    def kill_the_first_remote_worker() -> None:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            names = sorted(a["name"] for a in ray.util.list_named_actors(all_namespaces=True)
                           if a["name"].startswith("tf-remote-"))
            if names:
                actor = ray.get_actor(names[0], namespace="taskforge")
                ray.get(actor.ready.remote(), timeout=600)
                ray.kill(actor, no_restart=True)
                killed.append(names[0])
                return
            time.sleep(0.1)

    killer = threading.Thread(target=kill_the_first_remote_worker, daemon=True)
    killer.start()
    report = generate(str(fixture_repos["geomlib"]), tmp_path / "tasks",
                      Options(max_tasks=2, jobs=1, remote_workers=2))
    killer.join(5)
    assert killed, "no remote worker was killed"
    assert sorted(report.tasks) == want
    assert report.remote_workers == 2 and report.remote_runs > 0, report.model_dump_json(indent=1)
    assert report.remote_workers_lost == 1, report.model_dump_json(indent=1)
    assert not [a for a in ray.util.list_named_actors(all_namespaces=True)
                if a["name"].startswith("tf-remote-")]          # none left behind


def test_a_worker_node_killed_mid_run_loses_nothing(cluster, corpus):
    import ray

    from taskforge.training.raygrade import ClusterGrader

    out, results = corpus
    pairs = pairs_of(out, results, 36)
    want = [1.0 if sol.kind == "gold" else 0.0 for _, sol in pairs]
    grader = ClusterGrader(address=cluster["address"], backend="bwrap")
    done = []
    killed = []

    def kill_when_under_way() -> None:
        while len(done) < 12:
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
    assert grader.replaced >= 1, "no actor was lost mid-run: the kill came too late"
    # The head marks a node dead only after its health checks time out, which
    # can come after the last grade: wait for it rather than race it.
    deadline = time.monotonic() + 120
    while True:
        alive = [n for n in ray.nodes() if n["Alive"] and n["Resources"].get("CPU")]
        if len(alive) == 1 or time.monotonic() > deadline:
            break
        time.sleep(1)
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
    results = generate_corpus(repos, out, Options(max_tasks=2, jobs=1), address=cluster["address"])
    killer.join(5)
    assert killed, "the worker node was not killed"
    assert [r.get("error") for r in results] == [None] * 3, results
    assert [r["tasks"] for r in results] == [r["tasks"] for r in uninterrupted]


def test_the_readme_commands_on_the_cluster(cluster, corpus, fixture_repos, tmp_path):
    """README's "Running on a Ray cluster": the CLI joins through RAY_ADDRESS."""
    out, results = corpus
    env = {**os.environ, "RAY_ADDRESS": cluster["address"]}
    # One worker node is left (the others were killed): the corpus task takes its
    # CPU, so its remote worker never starts, and the run must not wait for it.
    gen = subprocess.run([*CLI, "corpus", str(fixture_repos["textkit"]), "--out",
                          str(tmp_path / "tasks"), "--max-tasks", "1", "--ray", "--remote-workers", "1",
                          "--json"], capture_output=True, text=True, env=env, timeout=900)
    assert gen.returncode == 0 and "Traceback" not in gen.stderr, gen.stdout[-4000:] + gen.stderr[-2000:]
    row = json.loads(gen.stdout.splitlines()[0])
    assert len(row["tasks"]) == 1 and (Path(row["out"]) / row["tasks"][0] / "task.json").is_file()
    one = subprocess.run([*CLI, "generate", str(fixture_repos["ledger"]), "--out",
                          str(tmp_path / "one"), "--max-tasks", "1", "--remote-workers", "1", "--json"],
                         capture_output=True, text=True, env=env, timeout=900)
    assert one.returncode == 0 and "Traceback" not in one.stderr, one.stderr[-2000:]
    report = json.loads(one.stdout)
    # Whether the remote worker joined before the one task was settled is a race; the
    # remote workers test above checks that they do the work.
    assert len(report["tasks"]) == 1 and "remote_runs" in report, report
    task = Path(results[0]["out"]) / results[0]["tasks"][0]
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("".join(json.dumps({"task": str(task), "solution": s}) + "\n"
                             for s in ("gold", "empty", "gold")))
    res = subprocess.run([*CLI, "verify-batch", str(pairs), "--ray", "--sandbox", "bwrap",
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
