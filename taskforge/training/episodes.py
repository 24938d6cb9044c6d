"""Episodes: a task's workspace in a sandbox that an agent drives turn by turn.

An agent (SWE-agent, OpenHands, mini-swe-agent, SkyRL's SWE agents) reads files,
edits, runs the visible tests, then submits. An episode gives it exactly the
task's workspace in the task's environment image (no hidden tests, no network,
resource limits), runs its commands with a per-command timeout and an output
cap, and grades a submission with `verify` in a fresh sandbox, with every
defence on: what the agent did in the episode's sandbox never reaches grading
except as its diff.

Every read and write of the agent's tree happens inside the sandbox, never
through host paths the agent controls (a symlink swapped in mid-read would
otherwise make the host read or write outside). The diff is built on the host
from a tar stream of the tree, as data.

`Episodes` holds many at once, closes the ones idle past their limit, and
closes all on shutdown. Nothing here is Docker-specific: the Sandbox interface.
"""
from __future__ import annotations

import base64
import io
import logging
import secrets
import tarfile
import tempfile
import threading
import time
from pathlib import Path

from pydantic import BaseModel, Field

from taskforge.errors import InfraError, UserError
from taskforge.fsutil import copy_tree, rmtree, share_with_sandbox
from taskforge.package.store import load_task
from taskforge.repo.layout import walk_all
from taskforge.sandbox import Limits, Mount, Sandbox, SandboxSpec, open_sandbox

log = logging.getLogger(__name__)

MAX_FILE_BYTES = 4 * 1024 * 1024        # one read or write
MAX_TREE_BYTES = 64 * 1024 * 1024       # the whole tree, for a diff
_CHUNK = 96 * 1024                      # base64 text per argv (one arg is at most 128 KiB)


class NoEpisode(UserError):
    """An episode id that is not open (never was, closed, or expired)."""


class EpisodeLimits(BaseModel):
    command_timeout: float = Field(default=60.0, gt=0)       # default per command
    max_command_timeout: float = Field(default=600.0, gt=0)  # what a command may ask for
    output_chars: int = Field(default=20_000, ge=200)        # kept of a command's output: head and tail
    idle_seconds: float = Field(default=900.0, gt=0)         # closed when unused this long
    memory_mb: int = 2048
    pids: int = 256
    cpus: float = 1.0


class CommandResult(BaseModel):
    output: str
    exit_code: int | None
    timed_out: bool = False
    truncated: bool = False
    seconds: float


def _cap(text: str, limit: int) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    head, tail = limit * 2 // 3, limit // 3
    cut = len(text) - head - tail
    return f"{text[:head]}\n[... {cut} characters cut ...]\n{text[-tail:]}", True


# Run inside the sandbox with the tree as the working directory. argv only: no
# shell parses agent-given paths or contents.
_READ = ("import base64,sys;f=open(sys.argv[1],'rb');d=f.read(int(sys.argv[2])+1);"
         "sys.stdout.write(base64.b64encode(d).decode())")
_WRITE = ("import base64,os,sys;p=sys.argv[1];d=os.path.dirname(p);"
          "d and os.makedirs(d,exist_ok=True);"
          "open(p,'ab' if sys.argv[3]=='1' else 'wb').write(base64.b64decode(sys.argv[2]))")
_LIST = ("import json,os,sys\n"
         "p=sys.argv[1]\n"
         "if not os.path.isdir(p): print('null'); sys.exit(0)\n"
         "out=[]\n"
         "for r,ds,fs in os.walk(p):\n"
         " ds[:]=sorted(d for d in ds if not d.startswith('.') and d!='__pycache__')\n"
         " depth=0 if r==p else os.path.relpath(r,p).count(os.sep)+1\n"
         " if depth>=2: ds[:]=[]\n"
         " out+=[os.path.normpath(os.path.join(r,n))+('/' if n in ds else '') for n in ds+sorted(fs)\n"
         "       if not n.startswith('.')]\n"
         " if len(out)>int(sys.argv[2]): break\n"
         "print(json.dumps(sorted(out)[:int(sys.argv[2])]))")
_TAR = ("import base64,io,os,sys,tarfile\n"
        "b=io.BytesIO();t=tarfile.open(fileobj=b,mode='w:gz')\n"
        "for r,ds,fs in os.walk('.'):\n"
        " ds[:]=[d for d in ds if d not in ('.git','__pycache__')]\n"
        " for f in fs:\n"
        "  p=os.path.join(r,f)\n"
        "  if os.path.isfile(p) and not os.path.islink(p): t.add(p,recursive=False)\n"
        "t.close();sys.stdout.write(base64.b64encode(b.getvalue()).decode())")


class Episode:
    """One task's workspace in a running sandbox. Use as a context manager, or
    close() it; `submit()` grades the current tree and leaves the episode open."""

    def __init__(self, task_dir: str | Path, limits: EpisodeLimits | None = None,
                 backend: str = "docker"):
        self.task = load_task(task_dir)
        self.limits = limits or EpisodeLimits()
        self.id = secrets.token_hex(8)
        self.lock = threading.Lock()           # one command at a time, like a terminal
        self.last_used = time.monotonic()
        self.closed = False
        self.commands = 0
        self._dir = Path(tempfile.mkdtemp(prefix=f"tf-episode-{self.id}-"))
        self.tree = self._dir / "workspace"
        self.sandbox: Sandbox | None = None
        try:
            copy_tree(self.task.workspace, self.tree)
            share_with_sandbox(self.tree)
            rec = self.task.record
            spec = SandboxSpec(
                image=rec.image_name, mounts=[Mount(host=str(self.tree), container="/workspace")],
                network="none", supervisor=False, env={"HOME": "/tmp", **rec.test_env},
                limits=Limits(memory_mb=self.limits.memory_mb, pids=self.limits.pids,
                              cpus=self.limits.cpus),
                labels={"taskforge.role": "episode", "taskforge.task": rec.instance_id[:60]})
            self.sandbox = open_sandbox(spec, backend)
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------ agent's turns
    def run(self, command: str, timeout: float | None = None) -> CommandResult:
        """A bash command in the workspace, as the sandbox user."""
        t = min(timeout or self.limits.command_timeout, self.limits.max_command_timeout)
        with self._turn():
            assert self.sandbox is not None     # __init__ set it or raised
            res = self.sandbox.exec(["bash", "-c", command], timeout=t)
            self.commands += 1
        out, cut = _cap(res.output, self.limits.output_chars)
        if res.overflow:
            out, cut = out + "\n[output too large: the command was killed]", True
        return CommandResult(output=out, exit_code=res.exit_code, timed_out=res.timed_out,
                             truncated=cut, seconds=round(res.seconds, 3))

    def read(self, path: str) -> str:
        """A file of the workspace (relative to it), as text."""
        with self._turn():
            assert self.sandbox is not None     # __init__ set it or raised
            res = self.sandbox.exec(["python3", "-c", _READ, _rel(path), str(MAX_FILE_BYTES)],
                                    timeout=30)
        if res.exit_code != 0:
            raise UserError(f"cannot read {path}: {_last_line(res.output)}")
        data = base64.b64decode(res.output.strip() or b"")
        if len(data) > MAX_FILE_BYTES:
            raise UserError(f"{path} is larger than {MAX_FILE_BYTES} bytes")
        return data.decode("utf-8", "replace")

    def write(self, path: str, content: str) -> None:
        """Create or replace a file of the workspace (parents made as needed)."""
        data = content.encode()
        if len(data) > MAX_FILE_BYTES:
            raise UserError(f"{path}: content larger than {MAX_FILE_BYTES} bytes")
        text = base64.b64encode(data).decode()
        chunks = [text[i:i + _CHUNK] for i in range(0, len(text), _CHUNK)] or [""]
        with self._turn():
            assert self.sandbox is not None     # __init__ set it or raised
            for n, chunk in enumerate(chunks):
                res = self.sandbox.exec(["python3", "-c", _WRITE, _rel(path), chunk,
                                         "1" if n else "0"], timeout=30)
                if res.exit_code != 0:
                    raise UserError(f"cannot write {path}: {_last_line(res.output)}")

    def listing(self, path: str, limit: int = 1000) -> list[str] | None:
        """A directory's files and folders two levels deep (folders end in /), or
        None when `path` is not a directory. Paths relative to the workspace."""
        import json

        rel = "." if Path(path).as_posix() in (".", "/workspace", "/workspace/") else _rel(path)
        with self._turn():
            assert self.sandbox is not None     # __init__ set it or raised
            res = self.sandbox.exec(["python3", "-c", _LIST, rel, str(limit)], timeout=30)
        if res.exit_code != 0:
            raise UserError(f"cannot list {path}: {_last_line(res.output)}")
        try:
            entries = json.loads(res.output.strip().splitlines()[-1])
        except (ValueError, IndexError):
            raise UserError(f"cannot list {path}: {_last_line(res.output)}") from None
        return entries if isinstance(entries, list) else None

    def diff(self) -> str:
        """The workspace's changes as a git-style patch against the task's base commit."""
        from taskforge.package.writer import make_patches

        with self._turn():
            assert self.sandbox is not None     # __init__ set it or raised
            res = self.sandbox.exec(["python3", "-c", _TAR], timeout=120)
        if res.exit_code != 0 or res.overflow:
            raise UserError(f"cannot read the workspace: {_last_line(res.output) or 'too large'}")
        now = _tree_from_tar(base64.b64decode(res.output.strip() or b""))
        base = self.task.workspace
        before = {rel for rel in walk_all(base) if not _skipped(rel)}
        changes: dict[str, bytes | None] = {}
        for rel, data in now.items():
            if rel not in before or (base / rel).read_bytes() != data:
                changes[rel] = data
        for rel in before - set(now):
            changes[rel] = None
        return make_patches(base, changes)[0] if changes else ""

    def submit(self, timeout: float | None = None):
        """Grade the current tree (its diff) with verify, in a fresh sandbox."""
        from taskforge.grade.verify import Solution, verify

        patch = self.diff()
        self.touch()
        return verify(self.task.dir, Solution.from_patch(patch), timeout=timeout)

    # ------------------------------------------------------------ lifecycle
    def touch(self) -> None:
        self.last_used = time.monotonic()

    def close(self) -> None:
        """Destroy the sandbox and the episode's copy. Idempotent."""
        self.closed = True
        if self.sandbox is not None:
            try:
                self.sandbox.close()
            except Exception as exc:  # noqa: BLE001 - closing must not fail: the copy still goes
                log.warning("closing the sandbox of episode %s: %s", self.id, exc)
        rmtree(self._dir)

    def _turn(self):
        if self.closed:
            raise UserError(f"episode {self.id} is closed")
        self.touch()
        return self.lock

    def __enter__(self) -> "Episode":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _rel(path: str) -> str:
    p = Path(path)
    if p.is_absolute():
        try:
            p = p.relative_to("/workspace")
        except ValueError:
            raise UserError(f"{path}: paths are relative to the workspace") from None
    if ".." in p.parts or not p.parts:
        raise UserError(f"{path}: not a path inside the workspace")
    return p.as_posix()


def _last_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:200] if lines else ""


def _skipped(rel: str) -> bool:
    parts = rel.split("/")
    return ".git" in parts or "__pycache__" in parts


def _tree_from_tar(blob: bytes) -> dict[str, bytes]:
    """Regular files of a tar stream, read as data (never extracted to disk)."""
    out: dict[str, bytes] = {}
    total = 0
    try:
        with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
            for m in tar:
                if not m.isreg():
                    continue
                rel = Path(m.name).as_posix().removeprefix("./")
                if rel.startswith("/") or ".." in rel.split("/") or _skipped(rel):
                    continue
                total += m.size
                if total > MAX_TREE_BYTES:
                    raise UserError(f"the workspace is larger than {MAX_TREE_BYTES} bytes")
                f = tar.extractfile(m)
                out[rel] = f.read() if f else b""
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise UserError(f"cannot read the workspace: {exc}") from None
    return out


_REAPER_JOIN_SECONDS = 120.0   # a sandbox's removal, with room for a loaded engine


class Episodes:
    """Many episodes at once, by id; the idle ones are closed by a reaper thread."""

    def __init__(self, limits: EpisodeLimits | None = None, max_episodes: int = 64,
                 backend: str = "docker"):
        self.limits = limits or EpisodeLimits()
        self.max_episodes = max_episodes
        self.backend = backend
        self._by_id: dict[str, Episode] = {}
        self._lock = threading.Lock()
        self._pending = 0
        self._stop = threading.Event()
        self._reaper = threading.Thread(target=self._reap, name="tf-episode-reaper", daemon=True)
        self._reaper.start()
        self.expired = 0

    def start(self, task_dir: str | Path) -> Episode:
        """A new episode; refused once close_all has run, and one whose sandbox
        was still starting when close_all ran is closed, not kept: the pool
        promised that nothing of it outlives close_all."""
        with self._lock:
            if self._stop.is_set():
                raise InfraError("the episodes are closed")
            if len(self._by_id) + self._pending >= self.max_episodes:
                raise InfraError(f"{self.max_episodes} episodes are open: close one first")
            self._pending += 1
        try:
            ep = Episode(task_dir, self.limits, self.backend)
        finally:
            with self._lock:
                self._pending -= 1
        with self._lock:
            late = self._stop.is_set()
            if not late:
                self._by_id[ep.id] = ep
        if late:
            ep.close()
            raise InfraError("the episodes were closed while this one started")
        return ep

    def get(self, episode_id: str) -> Episode:
        with self._lock:
            ep = self._by_id.get(episode_id)
        if ep is None or ep.closed:
            raise NoEpisode(f"no open episode {episode_id!r}")
        ep.touch()
        return ep

    def close(self, episode_id: str) -> None:
        with self._lock:
            ep = self._by_id.pop(episode_id, None)
        if ep is None:
            raise NoEpisode(f"no open episode {episode_id!r}")
        ep.close()

    def open_ids(self) -> list[str]:
        with self._lock:
            return sorted(self._by_id)

    def close_all(self) -> None:
        """Close every open episode, and wait for the reaper's closes in flight: an
        expired episode leaves the live set before its sandbox is gone, so without
        the wait a container could outlive the pool."""
        self._stop.set()
        with self._lock:
            eps, self._by_id = list(self._by_id.values()), {}
        for ep in eps:
            ep.close()
        if self._reaper is not threading.current_thread():
            self._reaper.join(timeout=_REAPER_JOIN_SECONDS)

    def _reap(self) -> None:
        while not self._stop.wait(min(5.0, self.limits.idle_seconds / 4)):
            now = time.monotonic()
            with self._lock:
                idle = [i for i, e in self._by_id.items()
                        if now - e.last_used > self.limits.idle_seconds and not e.lock.locked()]
                eps = [self._by_id.pop(i) for i in idle]
                # Expired once out of the live set, not once destroyed (a container's
                # removal takes a while): the count agrees with open_ids().
                for ep in eps:
                    ep.closed = True
                self.expired += len(eps)
            for ep in eps:
                ep.close()
