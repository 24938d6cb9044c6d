"""Grading on a Ray cluster: one grader actor per node, each with that node's
backend, warm sandboxes and environments (realised from the task's recipe when
the node never saw it). The reward API, `serve --ray` and `verify-batch --ray`
use it; it knows tasks and the grader, never the generation pipeline, so the
training layer owns it and orchestrate only reaches it from the CLI."""
from __future__ import annotations

import threading
from pathlib import Path

from taskforge.errors import UserError
from taskforge.rayconn import _ray, alive_nodes, connect

__all__ = ["ClusterGrader", "alive_nodes", "solution_json"]


def _grader_class():
    ray = _ray()

    @ray.remote(num_cpus=0)
    class Grader:
        """Grades on the node it lives on, with that node's backend and environments."""

        def __init__(self, backend: str | None, warm: int):
            from taskforge.sandbox import default_backend
            from taskforge.sandbox.warm import WarmPool

            self.backend = backend or default_backend()
            self.pool = WarmPool(per_shape=warm, backend=self.backend) if warm else None
            self.node = ray.get_runtime_context().get_node_id()
            self.ready: set[str] = set()

        def shutdown(self) -> None:
            if self.pool is not None:
                self.pool.close()

        def grade(self, task: str, solution: dict, timeout: float | None) -> dict:
            from taskforge.errors import TaskforgeError
            from taskforge.grade.verify import verify

            try:
                self._environment(task)
                res = verify(task, _solution(solution), timeout=timeout, pool=self.pool,
                             backend=self.backend)
                out = res.model_dump(mode="json")
            except TaskforgeError as exc:
                out = {"instance_id": task, "reward": None, "error": exc.message}
            out["node"] = self.node
            return out

        def reward(self, task: str, solution_str: str, timeout: float | None) -> dict:
            """The reward API's grading (patch extraction, the unsafe-diff check,
            verify) on this node: a RewardResult as data."""
            from taskforge.errors import TaskforgeError
            from taskforge.grade.answer import RewardResult, grade_task

            try:
                self._environment(task)
                res = grade_task(task, solution_str, timeout, pool=self.pool, backend=self.backend)
            except TaskforgeError as exc:
                res = RewardResult(instance_id=Path(task).name, reward=None,
                                   infra_error=exc.message, reason=f"infrastructure: {exc.message}")
            return {**res.model_dump(mode="json"), "node": self.node}

        def _environment(self, task: str) -> None:
            """The task's environment on this node, realised from its recipe if missing."""
            if task in self.ready:
                return
            from taskforge.package.store import load_task
            from taskforge.sandbox import environment_store

            environment_store(self.backend).prepare_task(
                load_task(task).environment_request(), log=lambda s: None)
            self.ready.add(task)

    return Grader


def _solution(obj: dict):
    from taskforge.grade.verify import Solution

    kind = obj.get("kind")
    if kind == "gold":
        return Solution.gold()
    if kind == "empty":
        return Solution.empty()
    if kind == "patch":
        return Solution.from_patch(obj["patch"])
    if kind == "dir":
        return Solution.from_dir(obj["path"])
    raise UserError(f"unknown solution {obj!r}")


def _lost(pair, exc: BaseException) -> dict:
    return {"instance_id": str(pair[0]), "reward": None,
            "error": f"infrastructure: {str(exc).splitlines()[0][:200]}"}


def solution_json(sol) -> dict:
    """A Solution as data an actor on another node can rebuild."""
    if sol.kind in ("gold", "empty"):
        return {"kind": sol.kind}
    if sol.kind == "patch":
        return {"kind": "patch", "patch": sol.patch}
    return {"kind": "dir", "path": str(sol.path)}


class ClusterGrader:
    """Actors pinned one per node (per_node each); `grade_many` keeps them all
    busy and replaces an actor lost with its node by one wherever Ray can
    place it, its unfinished items sent again. Thread-safe: `serve` and the
    reward API call it from many threads at once, sharing one view of load."""

    MAX_TRIES = 3

    def __init__(self, address: str | None = None, per_node: int = 1, backend: str | None = None,
                 warm: int = 1):
        connect(address)
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        self._cls = _grader_class()
        self._args = (backend, warm)
        nodes = [n for n in alive_nodes() if n.get("Resources", {}).get("CPU", 0) > 0] \
            or alive_nodes()
        self.actors = [self._cls.options(scheduling_strategy=NodeAffinitySchedulingStrategy(
            n["NodeID"], soft=False)).remote(*self._args)
            for n in nodes for _ in range(max(1, per_node))]
        self.replaced = 0
        self._lock = threading.Lock()
        self._load = [0] * len(self.actors)
        self._generation = [0] * len(self.actors)

    def grade_many(self, pairs: list[tuple[str | Path, object]], timeout: float | None = None,
                   per_actor: int = 2, progress=None) -> list[dict]:
        """Results in input order: VerifyResult fields plus `node`. An actor lost
        with its node is restarted elsewhere and its calls retried; a call that
        still fails comes back with reward None and `error` (infrastructure)."""
        calls = [(str(Path(task).resolve()), solution_json(sol), timeout) for task, sol in pairs]
        return self._run("grade", calls, per_actor, progress,
                         lambda i, exc: _lost(pairs[i], exc))

    def reward_many(self, items: list[tuple[str | Path, str]], timeout: float | None = None,
                    per_actor: int = 2) -> list[dict]:
        """The reward API over the cluster: RewardResult fields per (task
        directory, model output), in input order."""
        calls = [(str(Path(task).resolve()), text, timeout) for task, text in items]

        def lost(i: int, exc: BaseException) -> dict:
            msg = f"infrastructure: {str(exc).splitlines()[0][:200]}"
            return {"instance_id": Path(items[i][0]).name, "reward": None, "infra_error": msg,
                    "reason": msg}

        return self._run("reward", calls, per_actor, None, lost)

    def _submit(self, method: str, args: tuple) -> tuple:
        with self._lock:
            a = min(range(len(self.actors)), key=self._load.__getitem__)
            self._load[a] += 1
            ref = getattr(self.actors[a], method).remote(*args)
            return ref, a, self._generation[a]

    def _release(self, a: int) -> None:
        with self._lock:
            self._load[a] -= 1

    def _replace(self, a: int, generation: int) -> None:
        """A new actor, anywhere, for one lost with its node (once per loss)."""
        with self._lock:
            if generation == self._generation[a]:
                self._generation[a] += 1
                self.actors[a] = self._cls.remote(*self._args)
                self.replaced += 1

    def _run(self, method: str, calls: list[tuple], per_actor: int, progress, lost) -> list[dict]:
        ray = _ray()
        from ray.exceptions import RayActorError

        results: list[dict | None] = [None] * len(calls)
        pending: dict = {}
        todo = list(range(len(calls)))
        tries = [0] * len(calls)
        done = 0
        while todo or pending:
            # Throttled per actor, but a call with nothing in flight always submits
            # (other threads may hold every slot; Ray queues it at the actor).
            while todo and (min(self._load) < per_actor or not pending):
                i = todo.pop(0)
                tries[i] += 1
                ref, a, gen = self._submit(method, calls[i])
                pending[ref] = (i, a, gen)
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                i, a, gen = pending.pop(ref)
                self._release(a)
                try:
                    results[i] = ray.get(ref)
                except RayActorError as exc:
                    # The actor went with its node: a new one, and the item again
                    # (grading is deterministic for a given answer).
                    self._replace(a, gen)
                    if tries[i] < self.MAX_TRIES:
                        todo.insert(0, i)
                        continue
                    results[i] = lost(i, exc)
                except Exception as exc:  # noqa: BLE001 - that item's infrastructure error
                    results[i] = lost(i, exc)
                done += 1
                if progress:
                    progress(done, len(calls))
        return [r for r in results if r is not None]

    def close(self) -> None:
        """Destroy the actors' warm sandboxes, then the actors."""
        ray = _ray()
        try:
            ray.get([a.shutdown.remote() for a in self.actors], timeout=120)
        except Exception:  # noqa: BLE001 - an actor lost with its node has nothing left
            pass
        for actor in self.actors:
            try:
                ray.kill(actor, no_restart=True)
            except Exception:  # noqa: BLE001 - already gone with its node
                pass
        self.actors = []
