"""In-sandbox supervisor: run pytest as another user, bound everything it
writes, reap everything it started, and print one JSON line for the host.

    python -I -S /opt/tf/lib/tfrun.py --timeout T [--uid U --gid G] [--naive] -- PYTEST ARGS

Why a separate uid: the code under test runs inside the pytest process and can
do anything that process can. Started as root (the sandbox grants only SETUID
and SETGID, and DAC_READ_SEARCH for the workspace walk), this supervisor drops
the pytest child to uid U. The child then holds no handle to this process's
stdout (the stream the host reads), cannot open /proc/<pid>/fd of a process of
another uid, and cannot outlive the run:
when it exits or time runs out, a reaper process running as U sends SIGKILL to every
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


def site_packages(prefix: str) -> list:
    """This environment's site-packages directories, resolved, and only those
    still inside it once resolved: a link out leads to what it does not own."""
    roots = set()
    for lib in _listdir(prefix, "lib"):
        for py in _listdir(os.path.join(prefix, lib), "python"):
            site = os.path.join(prefix, lib, py, "site-packages")
            if os.path.isdir(site):
                roots.add(os.path.realpath(site))
    return sorted(r for r in roots if r.startswith(prefix + os.sep))


def _entry_points(root: str):
    """The text of each distribution's entry_points.txt in `root`, by name
    (a missing or unreadable one is no plugin)."""
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return
    for name in names:
        if not name.endswith((".dist-info", ".egg-info")):
            continue
        try:
            with open(os.path.join(root, name, "entry_points.txt"), encoding="utf-8") as fh:
                text = fh.read()
        except (OSError, UnicodeDecodeError):
            continue
        yield text


def pytest11_modules(text: str) -> list:
    """The modules an entry_points.txt names in its [pytest11] section."""
    mods = []
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
            mods.append(mod)
    return mods


def trusted_plugins() -> list:
    """pytest11 entry points of distributions installed in this environment's
    site-packages (never one that a workspace could plant on sys.path). Read
    from the entry_points.txt files directly: importlib.metadata costs 25 ms of
    every graded run."""
    mods: list = []
    for root in site_packages(environment_prefix()):
        for text in _entry_points(root):
            for mod in pytest11_modules(text):
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
        reaper = os.fork()
        if reaper == 0:
            try:
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
                os.kill(-1, SIGKILL)
            finally:
                os._exit(0)
        os.waitpid(reaper, 0)
    return alive


class Output:
    """What the run wrote, bounded: the log as its head and tail with the
    middle only counted (a test printing forever costs this process no more
    than both), the result events whole up to MAX_RESULTS, past which the run
    is ended."""

    def __init__(self) -> None:
        self.head, self.tail, self.total = b"", b"", 0
        self.results = bytearray()
        self.overflow = False

    def add_log(self, chunk: bytes) -> None:
        self.total += len(chunk)
        if len(self.head) < LOG_HEAD:
            take = LOG_HEAD - len(self.head)
            self.head, chunk = self.head + chunk[:take], chunk[take:]
        if chunk:
            self.tail = (self.tail + chunk)[-LOG_TAIL:]

    def add_results(self, chunk: bytes) -> bool:
        """False, and overflow set, when `chunk` would take the results past
        MAX_RESULTS: the chunk is dropped and the run is ended."""
        if len(self.results) + len(chunk) > MAX_RESULTS:
            self.overflow = True
            return False
        self.results += chunk
        return True

    def log(self) -> bytes:
        """Head, a note of how much was cut, tail."""
        log = self.head
        if self.total > len(self.head) + len(self.tail):
            log += b"\n[... %d bytes of output cut ...]\n" % (self.total - len(self.head) - len(self.tail))
        return log + self.tail


class Watch:
    """The run from its start to its end: reads both pipes, reaps the child and
    whatever it left the moment it exits, and ends the run at the deadline, past
    the workspace bound or on a results overflow. A turn of the loop waits at
    most 0.1 s for output, so no check waits long for the next."""

    def __init__(self, proc, streams: dict, deadline: float, growth, reap_uid) -> None:
        self.proc, self.streams, self.deadline = proc, streams, deadline
        self.growth, self.reap_uid = growth, reap_uid
        self.out = Output()
        self.timed_out = False
        self.over_limit = ""
        self.code: "int | None" = None
        self.exited_at: "float | None" = None
        self.alive_after_exit = 0
        self.poller = select.poll()
        for fd in streams:
            self.poller.register(fd, select.POLLIN)
        if proc.fd is not None:
            self.poller.register(proc.fd, select.POLLIN)       # readable at exit: no polling

    def run(self) -> None:
        """Watch to the end, then leave nothing of the run behind, then the
        workspace check the last pass may have missed."""
        while not self.turn(time.monotonic()):
            pass
        self.settle()
        self.check_growth_at_end()

    def turn(self, now: float) -> bool:
        """One turn of the loop; True when the run is over."""
        if self.out_of_bounds(now):
            return True
        if self.code is None:
            self.check_exit(now)
        if self.exited_at is not None and (not self.streams or now - self.exited_at > 0.5):
            return True
        wait = min(max(self.deadline - now, 0.01), 0.1)
        if not self.streams and self.proc.fd is None:
            # Both pipes closed and no pidfd: the exit is a moment away.
            self.proc.wait(wait)
            return False
        self.drain(wait)
        return self.out.overflow

    def out_of_bounds(self, now: float) -> bool:
        """Past the deadline, or (while the child runs) past the workspace bound."""
        if now >= self.deadline:
            self.timed_out = True
            return True
        if self.growth is not None and self.code is None:
            self.over_limit = self.growth.tick(now) or ""
            if self.over_limit:
                return True
        return False

    def check_exit(self, now: float) -> None:
        """Reap the child if it has exited, and at once all that it left."""
        self.code = self.proc.poll()
        if self.code is not None:
            self.exited_at = now
            if self.proc.fd is not None:
                self.poller.unregister(self.proc.fd)
            # Nothing of the run may outlive it: whatever still runs is an escapee.
            self.alive_after_exit = reap(self.reap_uid, self.proc.pid)

    def drain(self, wait: float) -> None:
        """Read what the pipes have, waiting up to `wait` seconds for it."""
        for fd, _ in self.poller.poll(wait * 1000):
            if fd not in self.streams:
                continue                                # the pidfd: reaped in check_exit
            if not self.read(fd):
                return

    def read(self, fd: int) -> bool:
        """One chunk of `fd` into the output (EOF: stop watching it); False
        once the results overflow."""
        chunk = os.read(fd, 65536)
        if not chunk:
            self.poller.unregister(fd)
            del self.streams[fd]
            return True
        if self.streams[fd] == "res":
            return self.out.add_results(chunk)
        self.out.add_log(chunk)
        return True

    def settle(self) -> None:
        """If the loop ended with the child still running (we ended the run),
        kill all of it and reap it; the exit code then says it was killed."""
        if self.code is None:
            reap(self.reap_uid, self.proc.pid)
            self.code = self.proc.wait(5)
            if self.timed_out or self.out.overflow or self.over_limit:
                self.code = -9

    def check_growth_at_end(self) -> None:
        """What the last pass missed (Python ignores SIGXFSZ: a write past the
        file limit fails, and the run may end before the next pass)."""
        g = self.growth
        if g is not None and not self.over_limit and not self.timed_out:
            self.over_limit = g.over(*g.total(g.base[1] + g.max_entries + 1)) or ""

    def report(self, seconds: float, separated: bool, naive: bool) -> dict:
        """The line for the host: what this process observed, and the child's
        claims (log, results) as the bounded bytes they were."""
        out = self.out
        return {"$tf": "run", "exit_code": self.code, "seconds": round(seconds, 4),
                "timed_out": self.timed_out, "output_bytes": out.total, "results_bytes": len(out.results),
                "overflow": out.overflow, "over_limit": self.over_limit,
                "separated": separated, "naive": naive, "alive_after_exit": self.alive_after_exit,
                "log": out.log().decode("utf-8", "replace"),
                "results": bytes(out.results).decode("utf-8", "replace")}


def plugin_args() -> list:
    """`-p MOD` for each trusted plugin: the child runs with autoload off, so
    these are the only entry-point plugins it loads."""
    plugins = []
    for p in trusted_plugins():
        plugins += ["-p", p]
    return plugins


def unpark():
    """(options, pytest arguments) of the run a parked supervisor is handed,
    its environment applied to this process's (the child's is copied from it)."""
    args, extra = read_parked()
    os.environ.update(extra)
    opts, pytest_args = parse_args(args)
    if opts["park"]:
        raise SystemExit("tfrun.py: a parked run cannot park again")
    return opts, pytest_args


def configure(argv):
    """(options, pytest arguments, plugin arguments). The plugin scan comes
    first: it is start-up work, which a parked supervisor does before its run
    arrives."""
    opts, pytest_args = parse_args(argv)
    plugins = plugin_args()
    if opts["park"]:
        opts, pytest_args = unpark()
    return opts, pytest_args, plugins


def separates(opts) -> bool:
    """Whether pytest runs as another uid: only root can switch to one, and the
    naive design (and a uid of 0) means the same uid as this process."""
    uid = opts["uid"]
    return not opts["naive"] and uid is not None and os.getuid() == 0 and uid != 0


def run_as(opts, separated: bool):
    """(uid, gid) of the pytest child, or (None, None) to leave it this one's;
    the gid defaults to the uid."""
    if not separated:
        return None, None
    uid, gid = opts["uid"], opts["gid"]
    return uid, (gid if gid is not None else uid)


def announce_started() -> None:
    """Before any workspace code exists in a process: the host tells "our side
    never got the tests going" (no such line: an infrastructure error) from
    "the tests went wrong" (the solution's doing) by this line alone."""
    sys.stdout.write(STARTED + "\n")
    sys.stdout.flush()


def child_command(naive: bool, plugins: list, pytest_args: list, result_fd: int):
    """(argv, env) of the pytest child: the report pipe's fd, plugin autoload
    off (only the trusted plugins load), and the tests' entry point."""
    env = dict(os.environ)
    env["TF_RESULT_FD"] = str(result_fd)
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    if naive:
        env["PYTHONPATH"] = HERE
        argv = [sys.executable, "-m", "pytest", "-p", "tf_guard", *plugins, *pytest_args]
    else:
        # A script path, not -m: sys.path[0] is this read-only directory, never the cwd.
        argv = [sys.executable, "-s", os.path.join(HERE, "tfboot.py"), *plugins, *pytest_args]
    return argv, env


def main() -> int:
    """Start-up, the STARTED line, pytest spawned as the run's uid, watched to
    its end, then the one JSON line (2: pytest could not be started)."""
    opts, pytest_args, plugins = configure(sys.argv[1:])
    separated = separates(opts)
    uid, gid = run_as(opts, separated)
    announce_started()
    res_r, res_w = os.pipe()
    argv, env = child_command(opts["naive"], plugins, pytest_args, res_w)
    log_r, log_w = os.pipe()
    growth = Growth(os.getcwd(), *opts["growth"]) if opts["growth"] else None
    start = time.monotonic()
    try:
        pid = spawn(argv, env, log_w, res_w, uid, gid,
                    file_bytes=growth.max_bytes + (1 << 20) if growth else None)
    except OSError as exc:
        sys.stderr.write(f"tfrun.py: {exc}\n")
        return 2
    proc = Child(pid)
    os.close(res_w)
    os.close(log_w)
    watch = Watch(proc, {log_r: "log", res_r: "res"}, start + opts["timeout"], growth, uid)
    watch.run()
    meta = watch.report(time.monotonic() - start, separated, opts["naive"])
    sys.stdout.write(dump_json(meta) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
