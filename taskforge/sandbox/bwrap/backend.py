"""Bubblewrap backend: sandboxes with no Docker daemon, for pods and hosts without one.

Each exec is one `bwrap` process: the environment's root filesystem (see
rootfs.py) bound read-only at /, fresh /proc, /dev (with a writable /dev/shm,
as Docker has) and a size-capped /tmp, new PID, IPC, UTS and (with network
"none") network namespaces, every capability dropped, Docker's default profile's denials as a seccomp filter
(seccomp.py: no uid-wide kernel keyrings, no new namespaces), the spec's mounts
bound in. Commands run as the spec's
user through setpriv; the supervisor (user "0:0") keeps exactly SETUID and
SETGID, as in the Docker backend, to drop pytest to that user.

What the Docker backend gets from the engine:
- limits: a cgroup per sandbox (v2 or v1: memory, pids, cpu), entered by the
  bwrap process before it execs, so everything it starts is counted;
- nothing left behind: bwrap is PID 1's parent in its namespace and dies with
  us (--die-with-parent); when the namespace's init ends, the kernel kills the
  rest; close() kills whatever the cgroup still holds and removes it;
- /tmp is per exec (a tmpfs of each bwrap), where Docker's lasts the
  container's life: state that must outlive a command lives in /workspace.

With `spec.standby`, start() also launches that command's bwrap and leaves it
waiting on stdin; the matching exec hands it its arguments there. A warm
sandbox (WarmPool) thus has the graded run's bwrap and interpreter already up.

Runs as root (like dockerd); a start costs a fork and some mounts (~10 ms).
"""
from __future__ import annotations

import io
import os
import signal
import subprocess
import threading
import time
import uuid
from pathlib import Path
from typing import Any, cast

from taskforge.errors import InfraError
from taskforge.sandbox.base import MAX_OUTPUT, ExecResult, Sandbox, SandboxSpec, standby_payload
from taskforge.sandbox.bwrap import rootfs, seccomp

SHM_BYTES = 64 * 1024 * 1024      # Docker's default /dev/shm

CGROUP_ROOT = Path("/sys/fs/cgroup")


class Cgroup:
    """One sandbox's cgroup, v2 or v1; `ok` False when this host gives none
    (limits then fall back to rlimits on the bwrap process)."""

    def __init__(self, name: str, memory_mb: int, pids: int, cpus: float):
        self.dirs: list[Path] = []
        self.ok = False
        try:
            if (CGROUP_ROOT / "cgroup.controllers").is_file():       # v2
                parent = CGROUP_ROOT / "taskforge"
                parent.mkdir(exist_ok=True)
                try:
                    (parent / "cgroup.subtree_control").write_text("+memory +pids +cpu")
                except OSError:
                    pass
                d = parent / name
                d.mkdir()
                self.dirs = [d]
                (d / "memory.max").write_text(str(memory_mb * 1024 * 1024))
                (d / "memory.swap.max").write_text("0") if (d / "memory.swap.max").exists() else None
                (d / "pids.max").write_text(str(pids))
                (d / "cpu.max").write_text(f"{int(cpus * 100000)} 100000")
            else:                                                      # v1
                for ctl, settings in (
                        ("memory", {"memory.limit_in_bytes": memory_mb * 1024 * 1024}),
                        ("pids", {"pids.max": pids}),
                        ("cpu", {"cpu.cfs_period_us": 100000,
                                 "cpu.cfs_quota_us": int(cpus * 100000)})):
                    d = CGROUP_ROOT / ctl / "taskforge" / name
                    d.mkdir(parents=True)
                    self.dirs.append(d)
                    for key, value in settings.items():
                        (d / key).write_text(str(value))
            self.ok = True
        except OSError:
            self.remove()
            self.ok = False

    def enter(self) -> None:
        """In the child before exec: this process and all it starts are counted."""
        pid = str(os.getpid())
        for d in self.dirs:
            with open(d / "cgroup.procs", "w") as fh:
                fh.write(pid)

    def pids(self) -> set[int]:
        out: set[int] = set()
        for d in self.dirs:
            try:
                out |= {int(x) for x in (d / "cgroup.procs").read_text().split()}
            except (OSError, ValueError):
                pass
        return out

    def remove(self) -> None:
        for _ in range(50):
            left = self.pids()
            if not left:
                break
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.02)
        for d in self.dirs:
            try:
                d.rmdir()
            except OSError:
                pass
        self.dirs = []


def _ids(user: str) -> tuple[int, int]:
    uid, _, gid = user.partition(":")
    try:
        return int(uid), int(gid or uid)
    except ValueError:
        raise InfraError(f"the bubblewrap backend needs a numeric user, not {user!r}") from None


class BwrapSandbox(Sandbox):
    def __init__(self, spec: SandboxSpec):
        super().__init__(spec)
        self.root: Path | None = None
        self.cgroup: Cgroup | None = None
        self._procs: set[subprocess.Popen] = set()
        self._lock = threading.Lock()
        self._parked: subprocess.Popen | None = None

    @classmethod
    def check(cls) -> str | None:
        try:
            rootfs.bwrap()
            seccomp.program()
        except InfraError as exc:
            return exc.message
        return None if os.geteuid() == 0 else "the bubblewrap backend runs as root (like dockerd)"

    @property
    def started(self) -> bool:
        return self.root is not None

    def start(self) -> None:
        if self.root is not None:
            return
        rootfs.bwrap()
        if not rootfs.exists(self.spec.image):
            rootfs.meta(self.spec.image)      # raises, saying how to prepare it
        root = rootfs.path_for(self.spec.image)
        rootfs.check_usable(root)
        for m in self.spec.mounts:
            if not (root / m.container.lstrip("/")).exists():
                raise InfraError(f"environment {self.spec.image} has no mount point {m.container}")
            if not Path(m.host).exists():
                raise InfraError(f"cannot mount {m.host}: it does not exist")
        lim = self.spec.limits
        self.cgroup = Cgroup(f"sb-{uuid.uuid4().hex[:16]}", lim.memory_mb, lim.pids, lim.cpus)
        self.env = dict(rootfs.meta(self.spec.image).get("env") or rootfs.ENV)
        self.root = root
        if self.spec.standby is not None:
            try:
                self._parked = self._launch(list(self.spec.standby.command), None, {},
                                            self.spec.standby.user, stdin=subprocess.PIPE)
            except InfraError:
                self.close()
                raise

    def _take_parked(self, argv: list[str], user: str) -> subprocess.Popen | None:
        """The parked standby process if `argv` is its command (as the same
        user) and it is still waiting; it serves one exec only."""
        sb = self.spec.standby
        if (self._parked is None or sb is None or argv[:len(sb.serves)] != sb.serves
                or _ids(user) != _ids(sb.user)):
            return None
        proc, self._parked = self._parked, None
        if proc.poll() is not None:
            return None
        return proc

    def _argv(self, argv: list[str], timeout: float | None, env: dict[str, str],
              user: str, seccomp_fd: int | None = None) -> list[str]:
        """The bwrap command line; `timeout` None: no kill timer inside (a
        parked command, whose exec bounds it from here)."""
        spec = self.spec
        uid, gid = _ids(user)
        cmd = [rootfs.bwrap(), "--ro-bind", str(self.root), "/", "--proc", "/proc", "--dev", "/dev",
               "--size", str(spec.limits.tmp_mb * 1024 * 1024), "--perms", "1777",
               "--tmpfs", "/tmp",
               # POSIX semaphores and shared memory (multiprocessing.Lock, Value) need
               # a writable /dev/shm, as Docker gives every container (64 MiB).
               "--size", str(SHM_BYTES), "--perms", "1777", "--tmpfs", "/dev/shm",
               "--unshare-pid", "--unshare-ipc", "--unshare-uts",
               "--unshare-cgroup-try", "--die-with-parent", "--new-session"]
        if spec.network == "none":
            cmd.append("--unshare-net")
        for m in spec.mounts:
            cmd += ["--ro-bind" if m.read_only else "--bind", m.host, m.container]
        cmd += ["--chdir", spec.workdir, "--clearenv"]
        home = "/root" if uid == 0 else "/tmp"
        for k, v in {**self.env, "HOME": home, **spec.env, **env}.items():
            cmd += ["--setenv", k, v]
        cmd += ["--cap-drop", "ALL"]
        if seccomp_fd is not None:
            cmd += ["--seccomp", str(seccomp_fd)]
        if uid == 0:
            if spec.supervisor or not spec.hardened:
                cmd += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
            if spec.supervisor:          # the workspace walk reads 0700 directories too (docker backend)
                cmd += ["--cap-add", "CAP_DAC_READ_SEARCH"]
            inner = []
        else:
            # setpriv needs SETUID/SETGID for the switch; the switch itself clears them.
            cmd += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
            inner = ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups",
                     "--inh-caps=-all", "--no-new-privs", "--"]
        if timeout is None:
            return cmd + ["--", *inner, *argv]
        kill_after = str(max(1, int(timeout + 0.999)))
        return cmd + ["--", *inner, "timeout", "-s", "KILL", kill_after, *argv]

    def exec(self, argv, timeout, env=None, user=None) -> ExecResult:
        if self.root is None:
            raise InfraError("the sandbox is not started")
        argv, user = list(argv), user or self.spec.user
        parked = self._take_parked(argv, user)
        started = time.monotonic()
        if parked is not None:
            assert self.spec.standby is not None        # a parked process implies it
            payload = standby_payload(argv[len(self.spec.standby.serves):], env or {})
            try:
                stdin = cast("io.BufferedWriter", parked.stdin)
                stdin.write(payload)
                stdin.close()
            except OSError:
                self._kill(parked)            # it died waiting: start the command anew
                parked = None
        if parked is not None:
            return self._collect(parked, timeout, started)
        return self._collect(self._launch(argv, timeout, env or {}, user), timeout, started)

    def _launch(self, argv: list[str], timeout: float | None, env: dict[str, str], user: str,
                stdin: int = subprocess.DEVNULL) -> subprocess.Popen:
        """One bwrap for `argv`; hardened: under the syscall filter (seccomp.py)."""
        fd = seccomp.filter_fd() if self.spec.hardened else None
        try:
            return self._popen(self._argv(argv, timeout, env, user, fd), stdin,
                               () if fd is None else (fd,))
        finally:
            if fd is not None:
                os.close(fd)

    def _popen(self, cmd: list[str], stdin: int = subprocess.DEVNULL,
               pass_fds: tuple[int, ...] = ()) -> subprocess.Popen:
        cg = self.cgroup
        lim = self.spec.limits

        def enter() -> None:
            if cg is not None and cg.ok:
                cg.enter()
            else:
                import resource

                mem = lim.memory_mb * 1024 * 1024
                resource.setrlimit(resource.RLIMIT_AS, (mem, mem))

        try:
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    stdin=stdin, start_new_session=True,
                                    preexec_fn=enter, close_fds=True, pass_fds=pass_fds)
        except OSError as exc:
            raise InfraError(f"cannot start bwrap: {exc}") from None
        with self._lock:
            self._procs.add(proc)
        return proc

    def _collect(self, proc: subprocess.Popen, timeout: float, started: float) -> ExecResult:
        """Read `proc`'s output to its end (bounded) and its exit."""
        chunks: list[bytes] = []
        box: dict[str, Any] = {"size": 0, "overflow": False}

        def read() -> None:
            while True:
                # stdout=PIPE: a buffered reader, never None
                chunk = cast("io.BufferedReader", proc.stdout).read1(65536)
                if not chunk:
                    return
                box["size"] += len(chunk)
                if box["size"] > MAX_OUTPUT:
                    box["overflow"] = True
                    self._kill(proc)
                    return
                chunks.append(chunk)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        # Wait for the end of the output, not on the process: Popen.wait(timeout)
        # polls, 50 ms apart after the first few, and that was half this
        # backend's overhead. Nothing in the namespace outlives bwrap, so EOF
        # comes when the command is over.
        reader.join(timeout + 15)
        code = None
        if not reader.is_alive():
            try:
                code = proc.wait(5)
            except subprocess.TimeoutExpired:
                code = None
        seconds = time.monotonic() - started
        if code is None or box["overflow"]:
            self._kill(proc)
            reader.join(5)
            with self._lock:
                self._procs.discard(proc)
            return ExecResult(exit_code=None, output="", seconds=seconds,
                              timed_out=not box["overflow"], overflow=box["overflow"])
        reader.join(5)
        with self._lock:
            self._procs.discard(proc)
        out = b"".join(chunks).decode("utf-8", "replace")
        if code == 1 and out.startswith("bwrap:"):
            raise InfraError(f"bwrap failed: {out.strip()[:200]}")
        return ExecResult(exit_code=code, output=out, seconds=seconds,
                          timed_out=code in (124, 137) and seconds >= timeout)

    @staticmethod
    def _kill(proc: subprocess.Popen) -> None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            pass

    def close(self) -> None:
        if self.root is None:
            return
        self.root = None
        self._parked = None
        with self._lock:
            procs, self._procs = list(self._procs), set()
        for proc in procs:
            self._kill(proc)
        if self.cgroup is not None:
            self.cgroup.remove()
            self.cgroup = None
