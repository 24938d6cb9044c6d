"""Candidate validations spread over a Ray cluster: remote workers on other nodes.

One repository's generate runs on one node, but its candidates are many
independent validations. With `Options.remote_workers = N`, generate starts N Ray
actors (spread over the cluster, one CPU each) once its environment is built.
Each realises the repository there: the tree shipped through the object store,
the environment built on that node from the same recipe and under the same
name (its own engine or store, never the driver's), then one warm sandbox.

On the driver a `RemoteWorker` stands in for a local `Worker`: the settling
code edits a local copy of the tree as always, and a test run ships the edited
files to its actor, which applies them, runs, and puts its tree back. Remote workers
join `validate_all`'s workers as they become ready (a node still building its
environment costs nothing). A remote worker lost with its node raises WorkerLost: that
candidate is settled again by another worker and nothing it half did is kept,
so the task set is the one a run on one machine writes.
"""
from __future__ import annotations

import io
import logging
import tarfile
import uuid
from pathlib import Path

from taskforge.errors import InfraError
from taskforge.validate.checks import TreeCopy

logger = logging.getLogger(__name__)


class WorkerLost(InfraError):
    """A remote worker died (its node with it) in the middle of a run."""


def tree_archive(root: Path) -> bytes:
    """The tree as a gzip tar, without .git (what a Worker copies)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=1) as tar:
        tar.add(root, arcname=".", filter=lambda ti: None if ti.name == "./.git"
                or ti.name.startswith("./.git/") else ti)
    return buf.getvalue()


def _actor_class():
    from taskforge.rayconn import _ray

    ray = _ray()

    @ray.remote(num_cpus=1, max_restarts=0, max_task_retries=0)
    class ValidationActor:
        """The repository and its environment on this node, one warm sandbox over it."""

        def __init__(self, archive: bytes, image: str, repo_name: str, commit: str,
                     python: str, script: str, run_args) -> None:
            from taskforge.orchestrate.state import make_scratch
            from taskforge.sandbox import generation_store
            from taskforge.validate.checks import Worker

            self.scratch = make_scratch()
            src = self.scratch / "src"
            src.mkdir()
            with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
                tar.extractall(src, filter="data")
            envs = generation_store()
            base = envs.ensure_base(python, log=logger.info)
            name, _ = envs.ensure_environment(src, repo_name, commit, base, script, log=logger.info)
            if name != image:
                raise InfraError(f"this node's environment is {name}, the driver's {image}")
            self.worker = Worker(src, image, self.scratch, 0, run_args=run_args)
            self.node = ray.get_runtime_context().get_node_id()

        def ready(self) -> str:
            return self.node

        def run(self, edits: dict, args: list[str], timeout: float, extra_args):
            w = self.worker
            w.reset()
            w.apply(edits)
            try:
                result = w.runner.run(args, timeout=timeout, extra_args=extra_args)
            finally:
                w.reset()
            result.coverage_file = None            # a path on this node only
            return result

        def run_batch(self, tests: list[str], timeout: float, args: list[str], variants: list):
            """A probe batch (validate/variants.py) on this node's gold tree:
            (outcomes, test seconds, the probes it did not run and why)."""
            from taskforge.validate.variants import Batch

            self.worker.reset()
            batch = Batch(self.worker, tests, timeout, args)
            return batch.run(variants), batch.test_seconds, batch.unswitched

        def close(self) -> None:
            from taskforge.fsutil import rmtree

            self.worker.close()
            rmtree(self.scratch)

    return ValidationActor


class _RemoteRunner:
    def __init__(self, worker: "RemoteWorker"):
        self.worker = worker

    def run(self, args: list[str], timeout: float, cov_sources: list[str] | None = None,
            extra_args: list[str] | None = None):
        if cov_sources is not None:
            raise InfraError("coverage runs stay on the driver's own workers")
        w = self.worker
        return w.remote_call(lambda actor: actor.run.remote(w.edits(), list(args), timeout, extra_args))


class RemoteWorker(TreeCopy):
    """A Worker whose test runs happen on an actor on another node."""

    def __init__(self, src: Path, scratch: Path, n: int, actor, node: str):
        super().__init__(src, scratch, n)
        self.actor = actor
        self.node = node
        self.runs = 0
        self.lost = False
        self.runner = _RemoteRunner(self)

    def remote_call(self, call):
        """`call(actor)`'s result: a lost node is a WorkerLost, never a verdict."""
        from taskforge.rayconn import _ray

        ray = _ray()
        try:
            result = ray.get(call(self.actor))
        except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError,
                ray.exceptions.NodeDiedError, ray.exceptions.WorkerCrashedError) as exc:
            self.lost = True
            raise WorkerLost(f"remote worker on node {self.node[:12]} lost: "
                             f"{str(exc).splitlines()[0][:160]}") from None
        self.runs += 1
        return result

    def batch(self, tests: list[str], timeout: float, args: list[str], variants: list):
        """A probe batch run on the actor's node (validate/variants.Batch)."""
        return self.remote_call(lambda actor: actor.run_batch.remote(list(tests), timeout, list(args),
                                                                      list(variants)))

    def close(self) -> None:
        from taskforge.rayconn import _ray

        ray = _ray()
        try:
            if not self.lost:
                ray.get(self.actor.close.remote(), timeout=120)
        except Exception as exc:  # noqa: BLE001 - an actor already gone has nothing to close
            logger.info("closing a remote worker: %s", exc)
        _kill(self.actor)


def _kill(actor) -> None:
    from taskforge.rayconn import _ray

    try:
        _ray().kill(actor, no_restart=True)
    except Exception as exc:  # noqa: BLE001 - already dead, or the cluster is gone
        logger.info("killing a remote worker: %s", exc)


class RemoteWorkers:
    """N remote workers starting on the cluster; `joined()` hands over the
    ones that became ready since the last call, as RemoteWorkers."""

    def __init__(self, n: int, src: Path, scratch: Path, image: str, repo_name: str,
                 commit: str, python: str, script: str, run_args, first_index: int = 1000):
        from taskforge.rayconn import _ray, connect

        connect()
        ray = _ray()
        self.src, self.scratch = src, scratch
        self.next_index = first_index
        self.workers: list[RemoteWorker] = []
        archive = ray.put(tree_archive(src))
        cls = _actor_class()
        tag = uuid.uuid4().hex[:8]
        self.pending = {}
        for i in range(n):
            actor = cls.options(name=f"tf-remote-{tag}-{i}", namespace="taskforge",
                                scheduling_strategy="SPREAD").remote(
                archive, image, repo_name, commit, python, script, run_args)
            self.pending[actor.ready.remote()] = actor
        self.failed: list[str] = []

    def joined(self) -> list[RemoteWorker]:
        from taskforge.rayconn import _ray

        ray = _ray()
        if not self.pending:
            return []
        done, _ = ray.wait(list(self.pending), num_returns=len(self.pending), timeout=0)
        out = []
        for ref in done:
            actor = self.pending.pop(ref)
            try:
                node = ray.get(ref)
            except Exception as exc:  # noqa: BLE001 - an actor that cannot start is one fewer
                self.failed.append(str(exc).splitlines()[0][:200])
                _kill(actor)
                continue
            w = RemoteWorker(self.src, self.scratch, self.next_index, actor, node)
            self.next_index += 1
            self.workers.append(w)
            out.append(w)
        return out

    @property
    def runs(self) -> int:
        return sum(w.runs for w in self.workers)

    def close(self) -> None:
        for actor in self.pending.values():
            _kill(actor)
        self.pending = {}
        for w in self.workers:
            w.close()
