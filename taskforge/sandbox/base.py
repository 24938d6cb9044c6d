"""The one interface every sandbox backend implements.

A sandbox is a place to run commands against a workspace directory of the
host, with the repository's environment image. Generation keeps one warm
sandbox per worker and runs many commands in it (the code is the repository's
own); verification opens a fresh, hardened one per call (the code is an agent's).
Backends: docker (taskforge.sandbox.docker), bwrap (taskforge.sandbox.bwrap).
"""
from __future__ import annotations

import abc
import io
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from taskforge.errors import InfraError, UserError
from taskforge.fsutil import SANDBOX_UID  # the unprivileged user code under test runs as
from taskforge.models import EnvironmentRecipe


@dataclass(frozen=True)
class EnvironmentRequest:
    """A task's environment as a backend needs it: its name, the recipe that
    makes it, and the tree it is installed from. The layer that reads tasks
    makes one (package.store.Task.environment_request); a backend never loads a
    task."""
    name: str
    recipe: EnvironmentRecipe | None       # None: made by a taskforge that recorded none
    repo: str
    commit: str
    label: str                             # the task's id, for messages
    install_tree: Callable[[Path], Path]   # lays the project out at the given path

    def recipe_or_fail(self, why: str) -> EnvironmentRecipe:
        if self.recipe is None:
            raise UserError(f"{self.label} records no environment recipe (made by an older "
                            f"taskforge){why}")
        return self.recipe


class Limits(BaseModel):
    memory_mb: int = 2048
    pids: int = 256
    cpus: float = 1.0
    tmp_mb: int = 512
    # What a run may add to its workspace (a host directory): past either, the
    # supervisor ends the run and says so (taskforge/sandbox/runtime/tfrun.py).
    workspace_growth_mb: int = 1024
    workspace_growth_files: int = 20_000


class Mount(BaseModel):
    host: str
    container: str
    read_only: bool = False


class Standby(BaseModel):
    """A command started with the sandbox and left waiting, so that a warm
    sandbox skips a process start: the first exec whose argv begins with
    `serves`, as `user`, hands it the rest of that argv and its env on stdin
    (standby_payload) instead of starting a process. `command` must read them
    (tfrun.py --park does). Backends that cannot keep one run that exec as usual."""
    command: list[str]
    serves: list[str]
    user: str = "0:0"


class SandboxSpec(BaseModel):
    image: str
    mounts: list[Mount] = Field(default_factory=list)
    network: Literal["none", "host"] = "none"
    hardened: bool = True          # read-only root, no capabilities, non-root user
    user: str = f"{SANDBOX_UID}:{SANDBOX_UID}"   # who the code under test runs as
    # The supervisor runs as root with only SETUID/SETGID (and DAC_READ_SEARCH, to
    # measure the workspace whatever modes the tests set) to drop the tests to
    # `user`; the backend grants exactly that (see taskforge/sandbox/runtime/tfrun.py).
    supervisor: bool = True
    limits: Limits = Field(default_factory=Limits)
    env: dict[str, str] = Field(default_factory=dict)
    workdir: str = "/workspace"
    labels: dict[str, str] = Field(default_factory=dict)
    standby: Standby | None = None


class ExecResult(BaseModel):
    exit_code: int | None
    output: str
    seconds: float
    timed_out: bool = False
    overflow: bool = False         # the command wrote past MAX_OUTPUT: it was killed


MAX_OUTPUT = 24 * 1024 * 1024      # what the host reads of one command, at most


def standby_payload(args: list[str], env: dict[str, str]) -> bytes:
    """What a parked standby command reads on stdin up to EOF: NUL-separated,
    the argument count, the arguments, then KEY=VALUE entries (the reader,
    runtime/tfrun.py read_parked, cannot afford json's import)."""
    for text in [*args, *env, *env.values()]:
        if "\0" in text:
            raise InfraError("an argument or environment entry holds a NUL byte")
    fields = [str(len(args)), *args, *(f"{k}={v}" for k, v in env.items())]
    return "\0".join(fields).encode("utf-8", "surrogateescape")


class EnvironmentStore(abc.ABC):
    """Where a backend keeps the environments a SandboxSpec.image names (Docker:
    images; bubblewrap: root filesystem directories). Every backend has one; a
    Sandbox only runs in what its store holds. Apart from the box so that each
    class has one role (issue 27), as SWE-ReX keeps deployment and runtime apart."""

    @abc.abstractmethod
    def exists(self, name: str) -> bool: ...

    @abc.abstractmethod
    def build_task(self, req: EnvironmentRequest, log: Callable[[str], None]) -> None:
        """Build the environment `req` names from its recipe over `req.install_tree`."""

    @abc.abstractmethod
    def ensure_base(self, python: str, log: Callable[[str], None]) -> str:
        """The base environment for a Python version (built unless present); its name."""

    def prepare_task(self, req: EnvironmentRequest, log: Callable[[str], None]) -> str:
        """The environment a task names, realised here from the recipe it records
        (on a node that never saw generation) unless present; returns its name."""
        if not self.exists(req.name):
            self.build_task(req, log)
        return req.name


class GenerationStore(EnvironmentStore):
    """A store generation builds in: environments made from a repository's
    install script, and read back whole for the leak audit. One backend has one
    (sandbox.GENERATION_BACKEND); grading needs only an EnvironmentStore."""

    @abc.abstractmethod
    def ensure_environment(self, tree: Path, repo_name: str, commit: str, base: str, script: str,
                           log: Callable[[str], None]) -> tuple[str, float]:
        """A repository's environment from its install `script` run over `tree`;
        returns (name, seconds spent building)."""

    @abc.abstractmethod
    def generated_files(self, name: str) -> dict[str, str]:
        """Files the environment's install wrote into the tree (a version file
        written from git metadata), which a git clone lacks."""

    @abc.abstractmethod
    def environment_id(self, name: str) -> str:
        """A content id of environment `name` (caches of its files key on it)."""

    @abc.abstractmethod
    def export(self, name: str) -> AbstractContextManager[io.RawIOBase]:
        """The environment's filesystem as a tar stream (the leak audit reads it)."""


class Sandbox(abc.ABC):
    """A running sandbox. Use as a context manager: closing destroys it. Where
    its environments come from is the backend's EnvironmentStore."""

    def __init__(self, spec: SandboxSpec):
        self.spec = spec

    # -- housekeeping of this backend's boxes (no-ops where boxes die with their owner)

    @classmethod
    def reap_orphans(cls, owner_alive) -> int:
        """Remove sandboxes whose owning process (`owner_alive(token)` False) died
        without closing them; returns how many. Backends whose sandboxes die
        with their owner have nothing to do."""
        return 0

    @classmethod
    def remove_leftovers(cls) -> int:
        """Remove every sandbox of this backend still around; returns how many."""
        return 0

    @classmethod
    def check(cls) -> str | None:
        """Why this backend cannot run sandboxes here right now, or None (health checks)."""
        return None

    # -- the box ---------------------------------------------------------------

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
