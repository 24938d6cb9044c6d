"""Sandboxes: one interface (Sandbox), one module per backend, loaded lazily."""
from taskforge.sandbox.base import ExecResult, Limits, Mount, Sandbox, SandboxSpec

__all__ = ["ExecResult", "Limits", "Mount", "Sandbox", "SandboxSpec", "open_sandbox"]

BACKENDS = {"docker": "taskforge.sandbox.docker:DockerSandbox"}


def open_sandbox(spec: SandboxSpec, backend: str = "docker") -> Sandbox:
    """A started sandbox of the named backend (close it, or use `with`)."""
    import importlib

    module, _, cls = BACKENDS[backend].partition(":")
    sandbox = getattr(importlib.import_module(module), cls)(spec)
    try:
        sandbox.start()
    except BaseException:
        sandbox.close()
        raise
    return sandbox
