"""Sandboxes: two interfaces, the box (Sandbox) and where its environments are
kept (EnvironmentStore), each implemented once per backend, loaded lazily.

    docker  containers on a Docker engine (the default)
    bwrap   bubblewrap, no daemon: environments are root filesystem directories
            (taskforge.sandbox.bwrap.rootfs), prepared from each task's recorded recipe
"""
import importlib
import os
from enum import StrEnum
from pathlib import Path

from taskforge.errors import UserError
from taskforge.sandbox.base import (
    EnvironmentStore,
    ExecResult,
    GenerationStore,
    Limits,
    Mount,
    Sandbox,
    SandboxSpec,
    Standby,
)

__all__ = ["BACKENDS", "GENERATION_BACKEND", "RUNTIME", "Backend", "EnvironmentStore", "ExecResult",
           "GenerationStore", "Limits", "Mount", "Sandbox", "SandboxSpec", "Standby",
           "backend_class", "default_backend", "environment_store", "generation_store", "open_sandbox"]

# The in-sandbox scripts (supervisor, test bootstrap, guard, install scripts):
# plain files, mounted read-only at /opt/tf/lib or piped into a build.
RUNTIME = Path(__file__).resolve().parent / "runtime"


class Backend(StrEnum):
    DOCKER = "docker"
    BWRAP = "bwrap"


# Generation builds its environments (from a repository) on this backend only;
# grading can use any (environments are rebuilt there from the task's recipe).
GENERATION_BACKEND = Backend.DOCKER

# Each backend's box and environment store, as module:class (imported on use:
# the Docker SDK loads only where Docker is used).
BACKENDS = {Backend.DOCKER: "taskforge.sandbox.docker.backend:DockerSandbox",
            Backend.BWRAP: "taskforge.sandbox.bwrap.backend:BwrapSandbox"}
STORES = {Backend.DOCKER: "taskforge.sandbox.docker.store:DockerImages",
          Backend.BWRAP: "taskforge.sandbox.bwrap.store:RootfsStore"}


def default_backend() -> str:
    """$TASKFORGE_SANDBOX, else docker."""
    name = os.environ.get("TASKFORGE_SANDBOX") or "docker"
    if name not in BACKENDS:
        raise UserError(f"unknown sandbox backend {name!r} (TASKFORGE_SANDBOX): "
                        f"choose from {', '.join(BACKENDS)}")
    return name


def _backend(name: str | None) -> Backend:
    name = name or default_backend()
    if name not in BACKENDS:
        raise UserError(f"unknown sandbox backend {name!r}: choose from {', '.join(BACKENDS)}")
    return Backend(name)


def _load(ref: str):
    module, _, cls = ref.partition(":")
    return getattr(importlib.import_module(module), cls)


def backend_class(name: str | None = None) -> type[Sandbox]:
    """The box class of the named backend (default: default_backend())."""
    return _load(BACKENDS[_backend(name)])


def environment_store(name: str | None = None) -> EnvironmentStore:
    """Where the named backend keeps environments (grading prepares tasks' there)."""
    store: EnvironmentStore = _load(STORES[_backend(name)])()
    return store


def generation_store() -> GenerationStore:
    """The store generation builds environments in and the leak audit reads."""
    store = environment_store(GENERATION_BACKEND)
    assert isinstance(store, GenerationStore)
    return store


def open_sandbox(spec: SandboxSpec, backend: str | None = None) -> Sandbox:
    """A started sandbox of the named backend (close it, or use `with`)."""
    sandbox = backend_class(backend)(spec)
    try:
        sandbox.start()
    except BaseException:
        sandbox.close()
        raise
    return sandbox
