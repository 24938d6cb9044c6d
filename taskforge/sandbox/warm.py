"""Warm sandboxes: started ahead of need, each used for one solution only.

Starting a container is most of what a verify costs on top of its tests (about
0.2 s to start, 0.05 s to remove, against 0.5 s of tests on a fixture). A pool
keeps a few sandboxes of each recently used shape already running, each with
its own empty host directory mounted where the workspace goes; the caller fills
that directory, runs, and hands the sandbox back, which destroys it (in the
background) and starts a replacement. Nothing is ever reused: every solution
gets a sandbox that no other code has run in, with the spec's full hardening,
so a solution cannot leave anything for the next one.

Backend-neutral: it only calls `open_sandbox` and the Sandbox interface.
"""
from __future__ import annotations

import atexit
import logging
import os
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from taskforge.errors import InfraError
from taskforge.fsutil import rmtree
from taskforge.sandbox.base import Mount, Sandbox, SandboxSpec
from taskforge.sandbox.owner import owned_dir, reap_dirs

log = logging.getLogger(__name__)
_LIVE: "weakref.WeakSet[WarmPool]" = weakref.WeakSet()


@atexit.register
def _close_live() -> None:
    """Pools still open at exit take their sandboxes with them (one hook, not
    one per pool: a trainer makes a pool per batch)."""
    for pool in list(_LIVE):
        pool.close()


@dataclass
class Lease:
    """A started sandbox and the empty host directory mounted at the workspace."""
    sandbox: Sandbox
    workspace: Path
    warm: bool                    # taken ready from the pool (False: started on demand)


class WarmPool:
    """Per shape (a spec minus its workspace directory), up to `per_shape` started
    sandboxes; at most `max_shapes` shapes, the least recently used dropped first."""

    def __init__(self, per_shape: int = 2, max_shapes: int = 4, backend: str | None = None,
                 workspace: str = "/workspace"):
        from taskforge.sandbox import default_backend

        self.per_shape = max(0, per_shape)
        self.max_shapes = max(1, max_shapes)
        self.backend = backend or default_backend()
        self.mount_point = workspace
        self._ready: OrderedDict[str, list[Lease]] = OrderedDict()
        self._specs: dict[str, SandboxSpec] = {}
        self._filling: dict[str, int] = {}
        self._lock = threading.Lock()
        self._closed = False
        self._threads: list[threading.Thread] = []
        self._leases: dict[int, Lease] = {}    # taken and not given back
        self.started = self.taken_warm = self.taken_cold = self.failed = 0
        _LIVE.add(self)
        reap_dirs()       # what pools of killed processes left in the temporary directory

    # -- public -----------------------------------------------------------------
    def take(self, spec: SandboxSpec) -> Lease:
        """A started sandbox for `spec` with a fresh, empty workspace directory.
        `spec`'s own workspace mount (if any) is replaced by the lease's."""
        key = self._key(spec)
        with self._lock:
            if self._closed:
                raise InfraError("the warm sandbox pool is closed")
            self._specs[key] = spec
            self._ready.setdefault(key, [])
            self._ready.move_to_end(key)
            ready = self._ready[key]
            lease = ready.pop() if ready else None
            evicted = self._evict()
        for old in evicted:
            self._discard(old)
        if lease is None:
            self._refill(key)     # for the next caller; this one starts its own now
        if lease is not None:
            self.taken_warm += 1
        else:
            self.taken_cold += 1
            lease = self._start(spec)
            lease.warm = False
        with self._lock:
            self._leases[id(lease)] = lease
        return lease

    def give_back(self, lease: Lease, spec: SandboxSpec | None = None) -> None:
        """Destroy a used sandbox and its directory, then start its replacement,
        off the caller's path. Replacing here, not at take(), keeps the start
        from competing with the tests the taken sandbox is running."""
        with self._lock:
            self._leases.pop(id(lease), None)

        def swap() -> None:
            try:
                self._discard(lease)
            finally:                    # a slot is refilled whatever its cleanup did
                if spec is not None:
                    self._refill(self._key(spec))
        self._background(swap)

    def prefill(self, spec: SandboxSpec, wait: bool = True, timeout: float = 120) -> None:
        """Start `per_shape` sandboxes for `spec` now (a server warming up)."""
        key = self._key(spec)
        with self._lock:
            self._specs[key] = spec
            self._ready.setdefault(key, [])
        threads = self._refill(key)
        if wait:
            for t in threads:
                t.join(timeout)

    def ready(self, spec: SandboxSpec) -> int:
        with self._lock:
            return len(self._ready.get(self._key(spec), []))

    def close(self) -> None:
        """Destroy every sandbox, idle or still leased, and wait for the background
        work. Idempotent."""
        with self._lock:
            self._closed = True
            leases = [lease for ready in self._ready.values() for lease in ready]
            leases += list(self._leases.values())
            self._leases.clear()
            self._ready.clear()
            threads, self._threads = self._threads, []
        for t in threads:
            t.join(60)
        for lease in leases:
            self._discard(lease)
        # A refill that finished after the join above put its sandbox back: none
        # can now (closed), but one already past the check may have.
        with self._lock:
            late = [lease for ready in self._ready.values() for lease in ready]
            self._ready.clear()
        for lease in late:
            self._discard(lease)

    def __enter__(self) -> "WarmPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- internals --------------------------------------------------------------
    def _key(self, spec: SandboxSpec) -> str:
        """What makes two specs interchangeable: all but the workspace directory
        and the labels (a per-task label would make every task its own shape)."""
        return self._shape(spec).model_dump_json()

    def _shape(self, spec: SandboxSpec) -> SandboxSpec:
        mounts = [m for m in spec.mounts if m.container != self.mount_point]
        labels = {"taskforge.role": spec.labels.get("taskforge.role", "sandbox"),
                  "taskforge.warm": "1"}
        return spec.model_copy(update={"mounts": mounts, "labels": labels})

    def _start(self, spec: SandboxSpec) -> Lease:
        from taskforge.fsutil import share_with_sandbox
        from taskforge.sandbox import open_sandbox

        scratch = owned_dir("tf-warm-")
        workspace = scratch / "workspace"
        workspace.mkdir()
        share_with_sandbox(workspace)
        shape = self._shape(spec)
        mounts = [Mount(host=str(workspace), container=self.mount_point), *shape.mounts]
        try:
            sandbox = open_sandbox(shape.model_copy(update={"mounts": mounts}), self.backend)
        except BaseException:
            rmtree(scratch)
            raise
        self.started += 1
        return Lease(sandbox=sandbox, workspace=workspace, warm=True)

    def _evict(self) -> list[Lease]:
        """Shapes past max_shapes, least recently used first (lock held)."""
        out = []
        while len(self._ready) > self.max_shapes:
            key, leases = self._ready.popitem(last=False)
            self._specs.pop(key, None)
            out += leases
        return out

    def _refill(self, key: str) -> list[threading.Thread]:
        with self._lock:
            if self._closed or key not in self._ready:
                return []
            want = self.per_shape - len(self._ready[key]) - self._filling.get(key, 0)
            if want <= 0:
                return []
            self._filling[key] = self._filling.get(key, 0) + want
            spec = self._specs[key]
        return [self._background(self._fill_one, key, spec) for _ in range(want)]

    def _fill_one(self, key: str, spec: SandboxSpec) -> None:
        try:
            lease = self._start(spec)
        except Exception:  # noqa: BLE001 - a failed warm start costs nothing: take starts one
            self.failed += 1
            lease = None
        with self._lock:
            self._filling[key] = max(0, self._filling.get(key, 0) - 1)
            keep = lease is not None and not self._closed and key in self._ready
            if keep:
                assert lease is not None        # keep implies it
                self._ready[key].append(lease)
        if lease is not None and not keep:
            self._discard(lease)

    def _discard(self, lease: Lease) -> None:
        """Destroy a sandbox and its directory; never raises (a solution shapes that
        directory: a 3,000-deep chain would make shutil.rmtree raise RecursionError
        in this background thread, and the slot would never be refilled)."""
        try:
            lease.sandbox.close()
        except Exception as exc:  # noqa: BLE001 - logged; the directory still goes
            log.warning("closing a warm sandbox: %s", exc)
        finally:
            rmtree(lease.workspace.parent)

    def _background(self, fn, *args) -> threading.Thread:
        t = threading.Thread(target=fn, args=args, daemon=True, name="tf-warm")
        with self._lock:
            self._threads = [x for x in self._threads if x.is_alive()]
            self._threads.append(t)
        t.start()
        return t


def pool_size_from_env(default: int = 2) -> int:
    """$TASKFORGE_WARM: sandboxes kept ready per shape (0 turns warming off)."""
    try:
        return max(0, int(os.environ.get("TASKFORGE_WARM", default)))
    except ValueError:
        return default
