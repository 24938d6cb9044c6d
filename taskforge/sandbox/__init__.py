"""Sandboxes: one interface (Sandbox), one module per backend, loaded lazily.

    docker  containers on a Docker engine (the default)
    bwrap   bubblewrap, no daemon: environments are root filesystem directories
            (taskforge.sandbox.rootfs), prepared from each task's recorded recipe
"""
import os

from taskforge.errors import UserError
from taskforge.sandbox.base import ExecResult, Limits, Mount, Sandbox, SandboxSpec

__all__ = ["BACKENDS", "ExecResult", "Limits", "Mount", "Sandbox", "SandboxSpec",
           "backend_class", "default_backend", "open_sandbox"]

BACKENDS = {"docker": "taskforge.sandbox.docker:DockerSandbox",
            "bwrap": "taskforge.sandbox.bwrap:BwrapSandbox"}


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
