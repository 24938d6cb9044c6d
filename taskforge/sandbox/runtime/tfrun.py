"""In-sandbox supervisor: run pytest as another user, bound everything it
writes, reap everything it started, and print one JSON line for the host.

    python -I -S /opt/tf/lib/tfrun.py --timeout T [--uid U --gid G] [--naive] -- PYTEST ARGS

Why a separate uid: the code under test runs inside the pytest process and can
do anything that process can. Started as root (the sandbox grants only SETUID
and SETGID), this supervisor drops the pytest child to uid U. The child then
holds no handle to this process's stdout (the stream the host reads), cannot
open /proc/<pid>/fd of a process of another uid, and cannot outlive the run:
when it exits or time runs out, a helper running as U sends SIGKILL to every
process of that uid (double forks and setsid included).

The child writes report events to a private pipe. They are claims, not facts:
this process only bounds and forwards them (the host parses them against a
schema and fails closed), and records what it observed itself: the exit code,
the time, whether the pipe overflowed or closed early, what survived the exit.

`--park` starts the supervisor ahead of need (a warm sandbox): it does its own
start-up, then waits for the run's arguments and environment on stdin (see
read_parked), so a graded run does not pay for an interpreter's start.

`--naive` is the old, same-uid design (`python -m pytest -p tf_guard`, the
workspace first on sys.path), kept so that the red-team suite can show each
attack scoring against it.
"""
import os
import select
import sys
import time

# Only os, select, sys and time at start-up: subprocess, selectors, signal and
# argparse cost 12-15 ms of every graded run before pytest could start.
SIGKILL = 9
STARTED = '{"$tf": "started"}'

HERE = os.path.dirname(os.path.abspath(__file__))
LOG_HEAD = 32 * 1024
LOG_TAIL = 32 * 1024
MAX_RESULTS = 16 * 1024 * 1024
LINT_WORDS = ("flake8", "pycodestyle", "pep8", "mypy", "black", "isort", "pylint", "ruff",
              "codestyle", "pydocstyle")


def environment_prefix() -> str:
    """The venv this interpreter belongs to. The supervisor runs with -S (site
    and the repository's .pth finders cost 20 ms of every graded run), and
    without site a venv's sys.prefix is the base Python's: pyvenv.cfg says."""
    venv = os.path.dirname(os.path.dirname(os.path.abspath(sys.executable)))
    if os.path.isfile(os.path.join(venv, "pyvenv.cfg")):
        return os.path.realpath(venv)
    return os.path.realpath(sys.prefix)


def _listdir(path: str, prefix: str) -> list:
    """Names in `path` starting with `prefix` (glob would import re and fnmatch)."""
    try:
        return sorted(n for n in os.listdir(path) if n.startswith(prefix))
    except OSError:
        return []


def trusted_plugins() -> list:
    """pytest11 entry points of distributions installed in this environment's
    site-packages (never one that a workspace could plant on sys.path). Read
    from the entry_points.txt files directly: importlib.metadata costs 25 ms of
    every graded run."""
    prefix = environment_prefix()
    mods = []
    roots = set()
    for lib in _listdir(prefix, "lib"):
        for py in _listdir(os.path.join(prefix, lib), "python"):
            site = os.path.join(prefix, lib, py, "site-packages")
            if os.path.isdir(site):
                roots.add(os.path.realpath(site))
    for root in sorted(r for r in roots if r.startswith(prefix + os.sep)):
        try:
            names = sorted(os.listdir(root))
        except OSError:
            continue
        for name in names:
            if not name.endswith((".dist-info", ".egg-info")):
                continue
            try:
                with open(os.path.join(root, name, "entry_points.txt"), encoding="utf-8") as fh:
                    text = fh.read()
            except (OSError, UnicodeDecodeError):
                continue
            section = None
            for line in text.splitlines():
                line = line.strip()
                if line.startswith("[") and line.endswith("]"):
                    section = line[1:-1].strip()
                elif section == "pytest11" and "=" in line and not line.startswith(("#", ";")):
                    mod = line.split("=", 1)[1].split(":")[0].strip()
                    # Lint plugins check style, not behaviour, and often break on new pytest.
                    if any(w in mod for w in LINT_WORDS) or mod.startswith("xdist"):
                        continue
                    if mod and mod not in mods:
                        mods.append(mod)
    return sorted(mods)


def parse_args(argv):
    """(options, pytest arguments): the supervisor's own before `--`."""
    cut = argv.index("--") if "--" in argv else len(argv)
    opts = {"timeout": 900.0, "uid": None, "gid": None, "naive": False, "park": False, "growth": None}
    own = argv[:cut]
    i = 0
    while i < len(own):
        name = own[i]
        if name in ("--naive", "--park"):
            opts[name[2:]] = True
        elif name == "--workspace-growth" and i + 1 < len(own):
            i += 1
            try:
                size, _, count = own[i].partition(":")
                opts["growth"] = (int(size), int(count))
            except ValueError:
                raise SystemExit(f"tfrun.py: bad value for {name}: {own[i]!r}") from None
        elif name in ("--timeout", "--uid", "--gid") and i + 1 < len(own):
            i += 1
            try:
                opts[name[2:]] = float(own[i]) if name == "--timeout" else int(own[i])
            except ValueError:
                raise SystemExit(f"tfrun.py: bad value for {name}: {own[i]!r}") from None
        else:
            raise SystemExit(f"tfrun.py: unknown argument {name!r}")
        i += 1
    return opts, argv[cut + 1:]


def read_all(fd) -> bytes:
    """Everything `fd` gives up to EOF."""
    chunks: list = []
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def read_parked(fd=0):
    """The run's arguments and environment, as the host hands them to a parked
    supervisor: stdin up to EOF, NUL-separated fields: the argument count, the
    arguments (as after tfrun.py on a command line), then KEY=VALUE entries.
    (No json: it imports re, 12 ms.)"""
    fields = read_all(fd).decode("utf-8", "surrogateescape").split("\0")
    try:
        n = int(fields[0])
    except ValueError:
        raise SystemExit("tfrun.py: no arguments came for the parked run") from None
    if n < 0 or len(fields) < 1 + n:
        raise SystemExit("tfrun.py: the parked run's arguments are cut short")
    env = {}
    for entry in fields[1 + n:]:
        key, eq, value = entry.partition("=")
        if eq and key:
            env[key] = value
    return fields[1:1 + n], env


class Growth:
    """How much the tests add to the workspace (the cwd, a directory of the
    host's): bytes on disk and entries, measured against the tree as it was
    before they started. The walk is iterative (a deep chain costs it nothing)
    and spread out: at most BUDGET seconds of it a tick (a tick is at most
    0.1 s), a pass at most once a second, so it never takes more than a tenth
    of a core nor holds a directory a writer is filling for long; a normal tree
    is one tick a second. Past the bound the run ends; a writer is stopped
    within a pass of the bound."""
    BUDGET = 0.01
    EVERY = 1.0

    def __init__(self, root, max_bytes, max_entries):
        self.root, self.max_bytes, self.max_entries = root, max_bytes, max_entries
        self.base = self.total()
        self.walk = None
        self.next_pass = 0.0
        self.acc = [0, 0]

    def _entries(self):
        stack = [self.root]
        while stack:
            try:
                it = os.scandir(stack.pop())
            except OSError:
                continue
            with it:
                for e in it:
                    try:
                        st = e.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if e.is_dir(follow_symlinks=False):
                        stack.append(e.path)
                    yield st.st_blocks * 512

    def total(self, limit=None):
        n = b = 0
        for size in self._entries():
            n, b = n + 1, b + size
            if limit is not None and n >= limit:
                break
        return b, n

    def over(self, b, n):
        grew_b, grew_n = b - self.base[0], n - self.base[1]
        if grew_b > self.max_bytes:
            return f"the run wrote {grew_b >> 20} MiB into the workspace (the bound is {self.max_bytes >> 20} MiB)"
        if grew_n > self.max_entries:
            return f"the run made {grew_n} files in the workspace (the bound is {self.max_entries})"
        return None

    def tick(self, now):
        """The reason the run is over the bound, or None (so far)."""
        if self.walk is None:
            if now < self.next_pass:
                return None
            self.walk, self.acc = self._entries(), [0, 0]
        end = now + self.BUDGET
        while True:
            for _ in range(256):
                try:
                    size = next(self.walk)
                except StopIteration:
                    self.walk, self.next_pass = None, now + self.EVERY
                    return self.over(*self.acc)
                self.acc[0] += size
                self.acc[1] += 1
            if time.monotonic() >= end:
                return self.over(*self.acc)       # a partial pass already over counts


def spawn(argv, env, out_fd, keep_fd, uid=None, gid=None, file_bytes=None):
    """Start `argv` in a new session with stdout/stderr on `out_fd`, stdin on
    /dev/null, only `keep_fd` inherited, and (when given) as uid/gid with no
    supplementary groups. A failed exec raises OSError here, as Popen would."""
    err_r, err_w = os.pipe2(os.O_CLOEXEC)
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.dup2(out_fd, 1)
            os.dup2(out_fd, 2)
            try:
                # The OOM killer's first choice: a memory bomb ends the tests,
                # not the supervisor whose line says what happened.
                with open("/proc/self/oom_score_adj", "w") as fh:
                    fh.write("1000")
            except OSError:
                pass
            if file_bytes is not None:
                # No single file past the workspace's bound, even between two passes.
                import resource

                resource.setrlimit(resource.RLIMIT_FSIZE, (file_bytes, file_bytes))
            if uid is not None:
                os.setgroups([])
                os.setregid(gid, gid)
                os.setreuid(uid, uid)
            os.set_inheritable(keep_fd, True)
            os.closerange(3, keep_fd)
            os.closerange(keep_fd + 1, err_w)
            os.closerange(err_w + 1, 65536)
            os.execve(argv[0], argv, env)
        except BaseException as exc:  # noqa: BLE001 - report and never return into the parent's code
            try:
                os.write(err_w, repr(exc).encode()[:1000])
            finally:
                os._exit(127)
    os.close(err_w)
    msg = read_all(err_r)
    os.close(err_r)
    if msg:
        os.waitpid(pid, 0)
        raise OSError(f"cannot start {argv[0]}: {msg.decode('utf-8', 'replace')}")
    return pid


def dump_json(meta: dict) -> str:
    """One JSON object of str/int/float/bool/None values. The json package
    imports re (12 ms); its C string escaper alone does not."""
    try:
        from _json import encode_basestring_ascii as quote
    except ImportError:  # pragma: no cover - CPython always has it
        import json

        return json.dumps(meta)
    out = []
    for key, value in meta.items():
        if value is None:
            text = "null"
        elif value is True or value is False:
            text = "true" if value else "false"
        elif isinstance(value, (int, float)):
            text = repr(value)
        else:
            text = quote(str(value))
        out.append(quote(key) + ": " + text)
    return "{" + ", ".join(out) + "}"


class Child:
    """The pytest process: its exit code once reaped, and a descriptor that
    becomes readable when it exits (pidfd; None on kernels before 5.3)."""

    def __init__(self, pid):
        self.pid = pid
        self.code = None
        try:
            self.fd = os.pidfd_open(pid)
        except (AttributeError, OSError):
            self.fd = None

    def poll(self):
        if self.code is None:
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                self.code = os.waitstatus_to_exitcode(status)
        return self.code

    def wait(self, timeout):
        end = time.monotonic() + timeout
        while self.poll() is None and time.monotonic() < end:
            time.sleep(0.005)
        return self.code


def reap(uid, pid):
    """Kill every process the run left: as `uid` (kill -1 reaches exactly that
    uid's processes), else the child's session. Returns how many were alive."""
    if uid is None or os.getuid() == uid:
        try:
            os.killpg(pid, SIGKILL)
        except OSError:
            pass
        return 0
    alive = 0
    try:
        for name in os.listdir("/proc"):
            if name.isdigit() and name != "1":
                try:
                    if os.stat("/proc/" + name).st_uid == uid:
                        alive += 1
                except OSError:
                    pass
    except OSError:
        pass
    for _ in range(3):               # a fork bomb may refill between rounds
        helper = os.fork()
        if helper == 0:
            try:
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
                os.kill(-1, SIGKILL)
            finally:
                os._exit(0)
        os.waitpid(helper, 0)
    return alive


def main() -> int:
    opts, pytest_args = parse_args(sys.argv[1:])
    plugins = []
    for p in trusted_plugins():
        plugins += ["-p", p]
    if opts["park"]:
        args, extra = read_parked()
        os.environ.update(extra)
        opts, pytest_args = parse_args(args)
        if opts["park"]:
            raise SystemExit("tfrun.py: a parked run cannot park again")
    uid, gid, naive = opts["uid"], opts["gid"], opts["naive"]
    separated = (not naive and uid is not None and os.getuid() == 0 and uid != 0)
    # Before any workspace code exists in a process: the host tells "our side
    # never got the tests going" (no such line: an infrastructure error) from
    # "the tests went wrong" (the solution's doing) by this line alone.
    sys.stdout.write(STARTED + "\n")
    sys.stdout.flush()
    res_r, res_w = os.pipe()
    env = dict(os.environ)
    env["TF_RESULT_FD"] = str(res_w)
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    if naive:
        env["PYTHONPATH"] = HERE
        argv = [sys.executable, "-m", "pytest", "-p", "tf_guard", *plugins, *pytest_args]
    else:
        # A script path, not -m: sys.path[0] is this read-only directory, never the cwd.
        argv = [sys.executable, "-s", os.path.join(HERE, "tfboot.py"), *plugins, *pytest_args]
    log_r, log_w = os.pipe()
    growth = Growth(os.getcwd(), *opts["growth"]) if opts["growth"] else None
    start = time.monotonic()
    try:
        pid = spawn(argv, env, log_w, res_w, uid if separated else None,
                    (gid if gid is not None else uid) if separated else None,
                    file_bytes=growth.max_bytes + (1 << 20) if growth else None)
    except OSError as exc:
        sys.stderr.write(f"tfrun.py: {exc}\n")
        return 2
    proc = Child(pid)
    os.close(res_w)
    os.close(log_w)
    head, tail, total = b"", b"", 0
    results = bytearray()
    timed_out = overflow = False
    deadline = start + opts["timeout"]
    poller = select.poll()
    streams = {log_r: "log", res_r: "res"}
    for fd in streams:
        poller.register(fd, select.POLLIN)
    if proc.fd is not None:
        poller.register(proc.fd, select.POLLIN)       # readable at exit: no polling
    code = None
    exited_at = None
    alive_after_exit = 0
    over_limit = ""
    while True:
        now = time.monotonic()
        if now >= deadline:
            timed_out = True
            break
        if growth is not None and code is None:
            over_limit = growth.tick(now) or ""
            if over_limit:
                break
        if code is None:
            code = proc.poll()
            if code is not None:
                exited_at = now
                if proc.fd is not None:
                    poller.unregister(proc.fd)
                # Nothing of the run may outlive it: whatever still runs is an escapee.
                alive_after_exit = reap(uid if separated else None, proc.pid)
        if exited_at is not None and (not streams or now - exited_at > 0.5):
            break
        if not streams and proc.fd is None:
            # Both pipes closed and no pidfd: the exit is a moment away.
            proc.wait(min(max(deadline - now, 0.01), 0.1))
            continue
        for fd, _ in poller.poll(min(max(deadline - now, 0.01), 0.1) * 1000):
            if fd not in streams:
                continue                                # the pidfd: reaped above
            chunk = os.read(fd, 65536)
            if not chunk:
                poller.unregister(fd)
                del streams[fd]
                continue
            if streams[fd] == "res":
                if len(results) + len(chunk) > MAX_RESULTS:
                    overflow = True
                    break
                results += chunk
                continue
            total += len(chunk)
            if len(head) < LOG_HEAD:
                take = LOG_HEAD - len(head)
                head, chunk = head + chunk[:take], chunk[take:]
            if chunk:
                tail = (tail + chunk)[-LOG_TAIL:]
        if overflow:
            break
    if code is None:
        reap(uid if separated else None, proc.pid)
        code = proc.wait(5)
        if timed_out or overflow or over_limit:
            code = -9
    if growth is not None and not over_limit and not timed_out:
        # What the last pass missed (Python ignores SIGXFSZ: a write past the
        # file limit fails, and the run may end before the next pass).
        over_limit = growth.over(*growth.total(growth.base[1] + growth.max_entries + 1)) or ""
    seconds = time.monotonic() - start
    log = head
    if total > len(head) + len(tail):
        log += b"\n[... %d bytes of output cut ...]\n" % (total - len(head) - len(tail))
    log += tail
    meta = {"$tf": "run", "exit_code": code, "seconds": round(seconds, 4),
            "timed_out": timed_out, "output_bytes": total, "results_bytes": len(results),
            "overflow": overflow, "over_limit": over_limit,
            "separated": separated, "naive": naive, "alive_after_exit": alive_after_exit,
            "log": log.decode("utf-8", "replace"),
            "results": bytes(results).decode("utf-8", "replace")}
    sys.stdout.write(dump_json(meta) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
