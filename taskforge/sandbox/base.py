"""The one interface every sandbox backend implements.

A sandbox is a place to run commands against a workspace directory of the
host, with the repository's environment image. Generation keeps one warm
sandbox per worker and runs many commands in it (the code is the repository's
own); verification opens a fresh, hardened one per call (the code is an agent's).
Backends: docker (taskforge.sandbox.docker); bubblewrap and Ray slot in here.
"""
from __future__ import annotations

import abc
from typing import Literal

from pydantic import BaseModel, Field


class Limits(BaseModel):
    memory_mb: int = 2048
    pids: int = 256
    cpus: float = 1.0
    tmp_mb: int = 512


class Mount(BaseModel):
    host: str
    container: str
    read_only: bool = False


class SandboxSpec(BaseModel):
    image: str
    mounts: list[Mount] = Field(default_factory=list)
    network: Literal["none", "host"] = "none"
    hardened: bool = True          # read-only root, no capabilities, non-root user
    user: str = "1000:1000"        # who the code under test runs as
    # The supervisor runs as root with only SETUID/SETGID to drop the tests to
    # `user`; the backend grants exactly that (see taskforge/data/tfrun.py).
    supervisor: bool = True
    limits: Limits = Field(default_factory=Limits)
    env: dict[str, str] = Field(default_factory=dict)
    workdir: str = "/workspace"
    labels: dict[str, str] = Field(default_factory=dict)


class ExecResult(BaseModel):
    exit_code: int | None
    output: str
    seconds: float
    timed_out: bool = False
    overflow: bool = False         # the command wrote past MAX_OUTPUT: it was killed


MAX_OUTPUT = 24 * 1024 * 1024      # what the host reads of one command, at most


class Sandbox(abc.ABC):
    """A running sandbox. Use as a context manager: closing destroys it."""

    def __init__(self, spec: SandboxSpec):
        self.spec = spec

    @classmethod
    def check(cls) -> str | None:
        """Why this backend cannot run sandboxes here right now, or None (health checks)."""
        return None

    @abc.abstractmethod
    def start(self) -> None: ...

    @abc.abstractmethod
    def exec(self, argv: list[str], timeout: float, env: dict[str, str] | None = None,
             user: str | None = None) -> ExecResult:
        """Run argv; never blocks much past `timeout` seconds, never holds more
        than MAX_OUTPUT bytes of its output (past that it is killed, `overflow`)."""

    @abc.abstractmethod
    def close(self) -> None:
        """Destroy the sandbox and everything running in it. Idempotent."""

    @property
    @abc.abstractmethod
    def started(self) -> bool: ...

    def __enter__(self) -> "Sandbox":
        if not self.started:
            self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()
