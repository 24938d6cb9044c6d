"""Sandboxes: one interface (Sandbox), one module per backend, loaded lazily.

    docker  containers on a Docker engine (the default)
    bwrap   bubblewrap, no daemon: environments are root filesystem directories
            (taskforge.sandbox.bwrap.rootfs), prepared from each task's recorded recipe
"""
import os
from pathlib import Path

from taskforge.errors import UserError
from taskforge.sandbox.base import ExecResult, Limits, Mount, Sandbox, SandboxSpec, Standby

__all__ = ["BACKENDS", "GENERATION_BACKEND", "RUNTIME", "ExecResult", "Limits", "Mount", "Sandbox", "SandboxSpec",
           "Standby",
           "backend_class", "default_backend", "open_sandbox"]

# The in-sandbox scripts (supervisor, test bootstrap, guard, install helpers):
# plain files, mounted read-only at /opt/tf/lib or piped into a build.
RUNTIME = Path(__file__).resolve().parent / "runtime"

# Generation builds its environments (from a repository) on this backend only;
# grading can use any (environments are rebuilt there from the task's recipe).
GENERATION_BACKEND = "docker"

BACKENDS = {"docker": "taskforge.sandbox.docker.backend:DockerSandbox",
            "bwrap": "taskforge.sandbox.bwrap.backend:BwrapSandbox"}


def default_backend() -> str:
    """$TASKFORGE_SANDBOX, else docker."""
    name = os.environ.get("TASKFORGE_SANDBOX") or "docker"
    if name not in BACKENDS:
        raise UserError(f"unknown sandbox backend {name!r} (TASKFORGE_SANDBOX): "
                        f"choose from {', '.join(BACKENDS)}")
    return name


def backend_class(name: str | None = None) -> type[Sandbox]:
    import importlib

    name = name or default_backend()
    if name not in BACKENDS:
        raise UserError(f"unknown sandbox backend {name!r}: choose from {', '.join(BACKENDS)}")
    module, _, cls = BACKENDS[name].partition(":")
    return getattr(importlib.import_module(module), cls)


def open_sandbox(spec: SandboxSpec, backend: str | None = None) -> Sandbox:
    """A started sandbox of the named backend (close it, or use `with`)."""
    sandbox = backend_class(backend)(spec)
    try:
        sandbox.start()
    except BaseException:
        sandbox.close()
        raise
    return sandbox
