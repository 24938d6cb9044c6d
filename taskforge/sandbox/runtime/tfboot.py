"""Start pytest for a graded run: monitor first, guard by path, no shadowing.

    python -s /opt/tf/lib/tfboot.py [PYTEST ARGS]

Run as a script (never `-m`), sys.path[0] is this read-only directory, not the
workspace, so the workspace cannot replace pytest, the guard or the standard
library: the directory is taken off sys.path again and the workspace goes to
the end of it, where `python -m pytest` users expect to import from it without
it ranking above anything installed. The guard is loaded from its file.

Before any workspace code runs, an audit hook (which CPython cannot remove) is
installed as a monitor: when code of the package under test performs an act
that honest code rarely needs (frame or code-object tricks, gc walks, trace
hooks, /proc, ctypes, bytecode loading, dynamic code, processes, signals,
network, opening a graded test file), one line per (act, site) goes to the
result pipe at once, before the act returns.

Which code is the tests' (never charged) is decided by identity, not by name.
The host lists the task's shipped test files (TF_TEST_FILES, paths in the
workspace, `!` before a graded one). A code object is test code only if the
import system itself produced it from one of them: at the audit `exec` event,
called from pytest's assertion-rewriting loader or importlib's own
SourceFileLoader (code objects taken at start-up, before any workspace code,
and compared by identity), for a file whose inode, size and times are still
those it had at start-up, compiled from its source (importlib's compile of it
seen; a .pyc of a listed file that exists when it is opened is planted bytecode).
That module's code and every code object nested in its constants are then
registered; `frame.f_code` counts as test code iff it is one of them.

What holds: a solution choosing co_filename (compile under a test's name,
code.replace), __file__, f_globals, module names or sys.modules entries, or
loading a `test_*.txt` with any loader, gets no test status: such code is
package code, and compiling under a borrowed name (a test file's, an installed
file's, `<frozen ...>`) or loading a non-.py workspace file as code is itself
charged. Running before the test modules are imported (conftest imports the
package) does not help: only the listed files, unchanged, become test code,
and a frame is the package's unless it is registered or lies in the image's
read-only directories (stdlib, the environment, this directory). A thread
the package starts acts for it: every thread starter (`_thread`'s and the
copies `threading` keeps) is wrapped here, so a thread remembers the package
site that started it and an act at the bottom of its stack with no package
frame (a stdlib function given to a pool) is charged there; loading `_thread`
afresh, for unwrapped starters, is charged itself, and so is an act with no
package frame on a thread that did not start through them (a starter taken
out of a wrapper's closure). A test's frame handed out
(sys._getframe, tb_frame) is no act, since f_back hands it out unaudited; its
code object is.
What does not: f_back and f_locals raise no audit event, so a package frame
that walks up from its own frame to a test frame's locals without reading its
f_code is invisible (the copy tests catch what it reads); a caller who
patches the import machinery itself (a loader method or pytest's rewrite
functions, set as class or module attributes, which are not audited) and
restores it can get its code registered; source that reaches the package
through a cache (linecache filled by pytest's own tracebacks) or a child
process raises no open event; marshal.load (from a file) carries no data in
its event and is charged as loading bytecode. An attacker who silences the
pipe before its first audited act goes unseen, and acts CPython does not audit
(os.dup2, writes to inherited fds) are invisible: the grade rests on the
copy tests, and the monitor is reported beside it.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
WS = "/workspace/"

# /proc files a process may read about the machine or itself: sizes, counts,
# limits. Anything else there (another process, file descriptors, memory,
# environment) is charged, and so is every write.
PROC_SYSTEM = {"meminfo", "cpuinfo", "stat", "loadavg", "uptime", "version", "filesystems",
               "mounts", "swaps", "cgroups", "partitions", "diskstats", "vmstat", "zoneinfo",
               "buddyinfo", "pressure", "sys", "devices", "crypto", "modules", "misc"}
PROC_OWN = {"status", "stat", "statm", "limits", "cgroup", "mountinfo", "mounts", "io", "sched",
            "schedstat", "comm", "cmdline", "oom_score", "oom_score_adj", "personality",
            "loginuid", "sessionid", "task", "numa_maps", "cpuset", "wchan",
            "timerslack_ns", "autogroup", "coredump_filter", "smaps_rollup"}


def proc_verdict(path, own_pid, write=False):
    """None if opening `path` (normalised, under /proc) is fine for package code,
    else the finding kind ("proc-access": descriptors, memory, environment,
    another process, a listing of them all, any write)."""
    parts = [p for p in path.split("/") if p][1:]          # after "proc"
    if not parts:
        return "proc-access"            # listing /proc: every process on the machine
    head = parts[0]
    own = head in ("self", "thread-self") or head == str(own_pid)
    if not own and head.isdigit():
        return "proc-access"            # another process
    if write:
        return "proc-access"
    if not own:
        return None if head in PROC_SYSTEM else "proc-access"
    rest = parts[1:]
    if rest[:1] == ["task"] and len(rest) >= 2:
        rest = rest[2:]                 # one of our own threads: the same rules
    if not rest:
        return None
    return None if rest[0] in PROC_OWN else "proc-access"


def is_writing(args):
    """An `open` audit event's (path, mode, flags) opens for writing."""
    mode = args[1] if len(args) > 1 else None
    flags = args[2] if len(args) > 2 else None
    if isinstance(flags, int) and flags & (os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT):
        return True
    return isinstance(mode, str) and any(c in mode for c in "wax+")


def pyc_source(pyc, prefix=None):
    """(directory, module stem) of the source a cached .pyc stands for, in a
    __pycache__ beside it or under sys.pycache_prefix; None otherwise."""
    d, name = os.path.split(pyc)
    stem = name.split(".")[0]
    if os.path.basename(d) == "__pycache__":
        return os.path.dirname(d), stem
    if prefix and d.startswith(prefix.rstrip("/") + "/"):
        return "/" + d[len(prefix.rstrip("/")):].lstrip("/"), stem
    return None


def read_test_files(environ):
    """(shipped test files, graded ones): the host's list, taken out of the
    environment before any workspace code can read it. Long lists come
    compressed ("z:" + base64 of zlib)."""
    raw = environ.pop("TF_TEST_FILES", "")
    if raw.startswith("z:"):
        import binascii
        import zlib

        raw = zlib.decompress(binascii.a2b_base64(raw[2:])).decode("utf-8")
    files, graded = [], []
    for line in raw.split("\n"):
        if not line:
            continue
        if line.startswith("!"):
            line = line[1:]
            graded.append(line)
        files.append(line)
    return files, graded


def _install_monitor(fd, ws=WS, test_files=(), graded=()):
    """Install the audit hook. Its state lives only in this closure."""
    write, dumps, getframe = os.write, json.dumps, sys._getframe
    getcwd, normpath, join, realpath = os.getcwd, os.path.normpath, os.path.join, os.path.realpath
    stat, exists, getpid = os.stat, os.path.exists, os.getpid
    ws = ws.rstrip("/") + "/"
    seen = set()          # (kind, site)
    # Threads inside the hook (its own reads raise events too). Per thread: one
    # thread's busy hook must not blind the monitor to another thread's acts.
    busy = set()
    from _thread import get_ident
    high = {"code-swap", "gc-walk", "trace-hook", "proc-access", "bytecode",
            "ctypes", "test-code-access", "graded-test-read", "name-spoof", "foreign-loader",
            "test-tampered", "unwatched-code"}
    frame_attrs = {"tb_frame", "f_code", "gi_frame", "gi_code", "cr_frame", "cr_code",
                   "ag_frame", "ag_code"}
    simple = {
        "sys._current_frames": "frame-inspection",
        "gc.get_objects": "gc-walk", "gc.get_referrers": "gc-walk", "gc.get_referents": "gc-walk",
        "sys.settrace": "trace-hook", "sys.setprofile": "trace-hook",
        "marshal.load": "bytecode", "code.__new__": "bytecode",
        "ctypes.dlopen": "ctypes", "ctypes.dlsym": "ctypes", "ctypes.cdata": "ctypes",
        "ctypes.addressof": "ctypes", "ctypes.string_at": "ctypes", "ctypes.call_function": "ctypes",
        # A forked child keeps this hook; a program the package starts (any
        # interpreter, `cat`) or a subinterpreter does not, and can read the
        # planted tests unseen.
        "os.fork": "process", "os.forkpty": "process", "subprocess.Popen": "unwatched-code",
        "os.posix_spawn": "unwatched-code", "os.system": "unwatched-code", "os.exec": "unwatched-code",
        "os.spawn": "unwatched-code", "cpython.PyInterpreterState_New": "unwatched-code",
        "os.kill": "signal", "os.killpg": "signal",
        "signal.pthread_kill": "signal", "sys.addaudithook": "audit-hook",
    }
    watched = frozenset(simple) | {"object.__getattr__", "object.__setattr__", "open",
                                   "os.listdir", "os.scandir", "compile", "exec",
                                   "socket.connect", "socket.getaddrinfo", "import",
                                   "sys._getframe", "marshal.loads"}

    # The image's read-only directories: code there is installed code, never
    # the package's (nothing at run time can write a file there).
    installed = tuple(sorted({os.path.join(p, "") for p in
                              {sys.prefix, sys.base_prefix, sys.exec_prefix, HERE}
                              for p in (p, realpath(p)) if p and p != "/"})) + ("<frozen ",)
    stdlib = os.path.dirname(os.__file__)
    ctypes_dir = join(stdlib, "ctypes", "")
    loaders = ("<frozen ", join(stdlib, "importlib", ""), join(stdlib, "runpy.py"),
               join(stdlib, "pkgutil.py"), join(stdlib, "zipimport.py"))
    # Frames whose reads of a test frame are the standard library's own
    # bookkeeping (logging's caller lookup, warnings' stacklevel).
    quiet = (join(stdlib, "logging", ""), join(stdlib, "warnings.py"))

    snap = {}             # realpath -> (dev, ino, size, mtime_ns, ctime_ns) at start-up
    names = {}            # the path as given (and its realpath) -> realpath
    by_inode = {}         # (dev, ino) -> (workspace-relative path, graded)
    pyc_keys = {}         # (directory, stem) -> realpath
    graded = set(graded)
    for rel in test_files:
        p = join(ws, rel)
        try:
            real = realpath(p)
            st = stat(real)
        except OSError:
            continue
        snap[real] = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        names[p] = names[real] = real
        by_inode[(st.st_dev, st.st_ino)] = (rel, rel in graded)
        pyc_keys[(os.path.dirname(real), os.path.basename(real)[:-3])] = real
    try:
        proc_dev = stat("/proc").st_dev
    except OSError:
        proc_dev = None
    registered = {}       # id(code) -> code: the tests' own code objects
    tainted = set()       # listed files that may not become test code any more
    from_source = set()   # listed files importlib compiled from source, not yet executed
    trusted = {}          # name -> code object of the import system, taken now

    def rel_of(real):
        return real[len(ws):] if real.startswith(ws) else real

    def is_test(co):
        return registered.get(id(co)) is co

    def package_site(depth, walk, skip=()):
        """file:line of the package frame responsible, or None: the nearest frame
        on the stack that is neither installed code nor test code (an act
        laundered through the standard library, pytest or any other installed
        code is still the package's), unless a test frame comes first. Frames
        under `skip` are passed over; then, without `walk`, only the first frame
        counts."""
        f = getframe(depth)
        bottom = None
        while f is not None:
            co = f.f_code
            if is_test(co):
                return None
            fn = co.co_filename
            if skip and fn.startswith(skip):
                bottom, f = f, f.f_back
                continue
            if not fn.startswith(installed):
                return f"{fn[len(ws):] if fn.startswith(ws) else fn[:100]}:{f.f_lineno}"
            if not walk:
                return None
            bottom, f = f, f.f_back
        if not walk:
            return None
        return thread_site(bottom)

    def thread_site(bottom):
        """The bottom of a stack with no package frame: a thread the package
        started (or one started by such a thread) acts for the package, even
        when its stack holds only installed code (a stdlib function as the
        target). A thread that did not start through the wrapped starters
        (their originals dug out of a wrapper) is charged as the package's."""
        me = get_ident()
        if me == main_thread:
            return None
        if bottom is not None and bottom.f_code is boot_code:
            return origins.get(me)
        return "<a thread started around the monitor>:0"

    origins = {}          # thread ident -> the package site that started it (None: not the package)
    guards = set()        # the monitor's wrappers around starters
    main_thread = get_ident()

    from functools import partial

    def boot(site, function, *a, **k):
        """The bottom frame of every thread started through `spawner`."""
        origins[get_ident()] = site
        return function(*a, **k)

    boot_code = boot.__code__

    def spawner(start):
        """`start` (a thread-starting builtin) that remembers, in the new
        thread, which package site started it."""
        def started_by(function, *args, **kwargs):
            me = get_ident()
            busy.add(me)          # its own stack walk is no act of the package's
            try:
                site = package_site(2, True)
            except Exception:  # noqa: BLE001 - the monitor never breaks the run it watches
                site = None
            finally:
                busy.discard(me)
            return start(partial(boot, site, function), *args, **kwargs)
        return started_by

    def report(kind, site, detail):
        key = (kind, site)
        if key in seen:
            return
        # Review kinds are capped; the acts that score are always reported, so
        # that a flood of harmless ones cannot hide them.
        if len(seen) >= 200 and kind not in high:
            return
        if len(seen) >= 5000:
            return
        seen.add(key)
        line = dumps({"$report_type": "Monitor", "kind": kind, "site": site,
                      "detail": str(detail)[:200]}) + "\n"
        try:
            write(fd, line.encode())
        except OSError:
            pass

    def register(co):
        stack = [co]
        while stack:
            c = stack.pop()
            if id(c) in registered:
                continue
            registered[id(c)] = c
            stack.extend(k for k in c.co_consts if type(k) is code_type)

    def unchanged(real):
        try:
            st = stat(real)
        except OSError:
            return False
        return snap[real] == (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)

    def loaded_by_import_system(co, real):
        """The import system itself is executing `co`, made from `real`'s source."""
        f = getframe(3)           # the frame that called exec (hook, on_exec, here)
        if f is None:
            return False
        fc = f.f_code
        if fc is trusted.get("rewrite_exec"):
            loader = f.f_locals.get("self")
            return type(loader) is trusted.get("rewrite_hook")
        if fc is trusted["call_removed"]:
            back = f.f_back
            if back is None or back.f_code is not trusted["loader_exec"]:
                return False
            loader = back.f_locals.get("self")
            if type(loader) is not trusted["source_loader"] or real not in from_source:
                return False
            try:
                same = realpath(loader.path) == real
            except (TypeError, ValueError, AttributeError):
                return False
            from_source.discard(real)
            return same
        return False

    def on_exec(co):
        fn = getattr(co, "co_filename", None)
        if not isinstance(fn, str):
            return
        real = names.get(fn)
        if real is None and fn.startswith(ws):
            real = realpath(fn)
            if real not in snap:
                real = None
        if real is not None and real not in tainted and loaded_by_import_system(co, real):
            if unchanged(real):
                register(co)
            else:
                tainted.add(real)
                report("test-tampered", f"{rel_of(real)}:0",
                       f"{rel_of(real)} changed after the run started")
            return
        if fn == "<string>":
            site = package_site(3, False)
            if site is not None:
                report("dynamic-code", site, "exec")

    def imported_source(f):
        """`f` (the caller of compile) is importlib's SourceFileLoader compiling
        the file it has just read: _call_with_frames_removed <- source_to_code
        <- get_code, the loader of exactly that class."""
        if f is None or f.f_code is not trusted["call_removed"]:
            return False
        f = f.f_back
        if f is None or f.f_code is not trusted["source_to_code"]:
            return False
        f = f.f_back
        return f is not None and f.f_code is trusted["get_code"] and \
            type(f.f_locals.get("self")) is trusted["source_loader"]

    def on_compile(args):
        try:
            fn = os.fspath(args[1])
        except (TypeError, IndexError):
            return
        if isinstance(fn, bytes):
            fn = fn.decode("utf-8", "replace")
        if not isinstance(fn, str):
            return
        if imported_source(getframe(2)):       # the frame that called compile
            real = names.get(fn) or (realpath(fn) if fn.startswith(ws) else None)
            if real in snap:
                from_source.add(real)
                return
            if not fn.startswith(ws):
                return          # the import system compiling a file it read there
        path = fn if not fn.startswith(ws) else normpath(fn)
        if path.startswith(ws):
            if not path.endswith(".py"):
                site = package_site(3, False, loaders)
                if site is not None:
                    report("foreign-loader", site, f"compiles {path[len(ws):][:100]} as code")
                return
            if realpath(path) in snap:
                site = package_site(3, True)
                if site is not None:
                    report("name-spoof", site, f"compiles code named {path[len(ws):][:100]}")
                return
        elif fn.startswith(installed):
            site = package_site(3, True)
            if site is not None:
                report("name-spoof", site, f"compiles code named {fn[:100]}")
            return
        site = package_site(3, False)
        if site is not None:
            report("dynamic-code", site, "compile")

    def on_open(event, args):
        path = args[0] if args else None
        if isinstance(path, bytes):
            path = path.decode("utf-8", "replace")
        if not isinstance(path, str):
            return
        if not path.startswith("/"):      # relative to the cwd
            path = normpath(join(getcwd(), path))
        elif "/." in path or "//" in path:
            path = normpath(path)
        writing = event == "open" and is_writing(args)
        if path.endswith(".pyc") and pyc_keys:
            key = pyc_source(path, getattr(sys, "pycache_prefix", None))
            real = pyc_keys.get(key) if key else None
            if real is not None and exists(path):
                # No listed test file has bytecode at start-up: someone wrote it.
                tainted.add(real)
                report("bytecode", f"{rel_of(real)}:0", f"planted bytecode {path[-120:]}")
            return
        if path == "/proc" or path.startswith("/proc/"):
            kind, detail = proc_verdict(path, getpid(), writing), path[:120]
        elif path.startswith(installed):
            return                        # read-only: no link into /proc or the tests
        else:
            # By what the path is, not how it is spelt: a symlink, a hard link or
            # a relative path to a test file, a link into /proc. (The stat comes
            # before the stack walk: most opens are neither.)
            try:
                st = stat(path)
            except (OSError, ValueError):
                return
            hit = by_inode.get((st.st_dev, st.st_ino))
            if proc_dev is not None and st.st_dev == proc_dev:
                real = realpath(path)
                kind = proc_verdict(real, getpid(), writing) if real.startswith("/proc") else "proc-access"
                detail = f"{path[:60]} -> {real[:60]}"
            elif hit is not None and event == "open":
                rel, is_graded = hit
                kind = "graded-test-read" if is_graded or writing else "test-file-read"
                detail = (f"{'writes' if writing else 'opens'} {rel}"
                          + ("" if path == join(ws, rel) else f" as {path[:80]}"))
            else:
                return
        if kind is not None:
            site = package_site(3, True)
            if site is None and kind == "graded-test-read":
                site = under_test(3)
            if site is not None:
                report(kind, site, detail)

    def under_test(depth):
        """file:line of the test frame under which installed code alone opened a
        graded test file: a standard-library callable the package installed as
        a special method (`__del__ = partial(linecache.getlines, path)`) runs
        there with no package frame. A test that does this itself does so on
        the gold too, and is exempt by its file."""
        f = getframe(depth)
        while f is not None:
            co = f.f_code
            if is_test(co):
                return f"{rel_of(co.co_filename)}:{f.f_lineno}"
            if not co.co_filename.startswith(installed):
                return None
            f = f.f_back
        return None

    def test_frame(obj, attr):
        """The test frame or test code `obj.attr` hands out, if it does."""
        if attr == "f_code":
            return is_test(obj.f_code)
        if attr in ("gi_code", "cr_code", "ag_code"):
            return is_test(getattr(obj, attr))
        target = getattr(obj, attr, None)
        return target is not None and is_test(target.f_code)

    def hook(event, args):
        if event not in watched:
            return
        me = get_ident()
        if me in busy:
            return
        busy.add(me)
        try:
            kind, detail, walk, skip = simple.get(event), event, True, ()
            if kind == "ctypes":
                # ctypes used by the package itself, not by the standard library
                # on its behalf (multiprocessing.Value imports it).
                walk, skip = False, (ctypes_dir,)
            elif kind == "trace-hook" and getframe(1).f_code is trusted.get("thread_bootstrap"):
                return        # a new thread taking the hook threading.settrace set
            elif kind == "bytecode" and event == "marshal.load" and \
                    getframe(1).f_code is trusted.get("compile_bytecode"):
                return
            if kind is None:
                if event == "exec":
                    on_exec(args[0])
                    return
                if event == "compile":
                    on_compile(args)
                    return
                if event in ("open", "os.listdir", "os.scandir"):
                    on_open(event, args)
                    return
                if event == "marshal.loads":
                    if getframe(1).f_code is trusted.get("compile_bytecode"):
                        return    # the import system loading a cached module
                    if not holds_code(args[0]):
                        return    # data (a cache): marshal is a fast serialiser
                    kind = "bytecode"
                elif event == "sys._getframe":
                    # A frame is not code: f_back reaches the same frame with no
                    # event at all, and the caller's module name (namedtuple's,
                    # enum's idiom) is honest. Its f_code is charged when read.
                    kind = "frame-inspection"
                    if args and is_test(args[0].f_code):
                        detail = "sys._getframe of a test frame"
                elif event == "object.__getattr__":
                    attr = args[1]
                    if attr in ("__defaults__", "__kwdefaults__") and any(args[0] is g for g in guards):
                        kind, detail = "code-swap", "digs out a starter the monitor wraps"
                    elif attr == "__code__":
                        # The code of a test function, read by package code: the
                        # graded tests' constants, or a way to tell them apart.
                        co = getattr(args[0], "__code__", None)
                        if not is_test(co):
                            return
                        if co.co_name.startswith("test"):
                            kind, detail = "test-code-access", f"reads the code of {co.co_name}"
                        else:
                            kind, detail = "test-file-read", f"reads the code of {co.co_name}"
                    elif attr not in frame_attrs:
                        return
                    elif test_frame(args[0], attr):
                        # A test's code object (its constants, its names) is the
                        # act; a test's frame handed out is as f_back gives it.
                        kind = "test-code-access" if attr.endswith("_code") else "frame-inspection"
                        detail, skip = f"{type(args[0]).__name__}.{attr} of a test", quiet
                    else:
                        kind, detail = "frame-inspection", f"{type(args[0]).__name__}.{attr}"
                elif event == "object.__setattr__":
                    # Only the package's own statement counts (namedtuple sets
                    # __defaults__ for honest code, through the standard library).
                    if args[1] != "__code__":
                        return
                    kind, detail, walk = "code-swap", "sets __code__", False
                elif event in ("socket.connect", "socket.getaddrinfo"):
                    host = args[1] if event == "socket.connect" else args[0]
                    if isinstance(host, tuple):
                        host = host[0] if host else ""
                    host = str(host)
                    if host in ("127.0.0.1", "localhost", "::1", "") or host.startswith("127."):
                        return
                    kind, detail = "network", host[:80]
                elif event == "import":
                    mod = str(args[0]).split(".")[0]
                    if mod in ("_thread", "_posixsubprocess", "_imp"):
                        # Loaded afresh, it has the starters unwrapped.
                        kind, detail = "code-swap", f"imports {mod} afresh"
                    elif mod not in ("_pytest", "pytest", "pluggy", "tf_guard", "unittest"):
                        return
                    else:
                        kind, detail = "runner-import", mod
                else:
                    return
            if skip is quiet:
                # A read done by logging or warnings for their own caller lookup.
                f = getframe(1)
                if f is not None and f.f_code.co_filename.startswith(quiet):
                    return
                skip = ()
            site = package_site(2, walk, skip)
            if site is not None:
                report(kind, site, detail)
        except Exception:  # noqa: BLE001 - the monitor never breaks the run it watches
            pass
        finally:
            busy.discard(me)

    import marshal

    loads = marshal.loads
    code_type = type(_install_monitor.__code__)
    containers = (tuple, list, set, frozenset)

    def holds_code(data):
        """Marshal data that decodes to (or contains) a code object."""
        try:
            obj = loads(data)
        except Exception:  # noqa: BLE001 - what marshal refuses loads nothing
            return False
        stack, budget = [obj], 1_000_000
        while stack and budget:
            budget -= 1
            o = stack.pop()
            if type(o) is code_type:
                return True
            if isinstance(o, containers):
                stack.extend(o)
            elif isinstance(o, dict):
                stack.extend(o.keys())
                stack.extend(o.values())
        return bool(stack)              # too large to look through: charged

    sys.addaudithook(hook)
    # The import system's own code, taken before any workspace code can run.
    import importlib._bootstrap as bs
    import importlib._bootstrap_external as bx

    trusted["call_removed"] = bs._call_with_frames_removed.__code__
    trusted["loader_exec"] = bx._LoaderBasics.exec_module.__code__
    trusted["source_to_code"] = bx.SourceLoader.source_to_code.__code__
    trusted["get_code"] = bx.SourceLoader.get_code.__code__
    trusted["source_loader"] = bx.SourceFileLoader
    trusted["compile_bytecode"] = bx._compile_bytecode.__code__
    try:
        from _pytest.assertion import rewrite

        trusted["rewrite_exec"] = rewrite.AssertionRewritingHook.exec_module.__code__
        trusted["rewrite_hook"] = rewrite.AssertionRewritingHook
    except (ImportError, AttributeError):
        pass                    # no rewriting: pytest imports through importlib

    # Every way to start a thread, wrapped before any workspace code runs (the
    # thread-start audit event is 3.13's only).
    import _thread
    import threading

    for owner, starters in ((_thread, ("start_new_thread", "start_new", "start_joinable_thread")),
                            (threading, ("_start_new_thread", "_start_joinable_thread"))):
        for starter in starters:
            if getattr(owner, starter, None) is not None:
                setattr(owner, starter, spawner(getattr(owner, starter)))
    trusted["thread_bootstrap"] = threading.Thread._bootstrap_inner.__code__

    # subprocess and multiprocessing start programs through fork_exec, which
    # raises no audit event (multiprocessing.util.spawnv_passfds calls it
    # directly). The original sits in a keyword default: reading one of those
    # is an audited act, reading a closure cell is not.
    import _posixsubprocess

    def fork_exec(*args, _fork_exec=_posixsubprocess.fork_exec, **kwargs):
        me = get_ident()
        if me not in busy:
            busy.add(me)
            try:
                site = package_site(2, True)
                if site is not None:
                    argv = args[0] if args and isinstance(args[0], (list, tuple)) else ()
                    report("unwatched-code", site, "starts " + " ".join(
                        os.fsdecode(a) if isinstance(a, (bytes, str)) else "?" for a in argv[:3])[:120])
            except Exception:  # noqa: BLE001 - the monitor never breaks the run it watches
                pass
            finally:
                busy.discard(me)
        return _fork_exec(*args, **kwargs)

    guards.add(fork_exec)
    _posixsubprocess.fork_exec = fork_exec

    # A second copy of a builtin module is made from its state at start-up, with
    # the starters unwrapped; an extension module's raises the "import" event.
    import _imp

    def create_builtin(spec, _create=_imp.create_builtin):
        name = getattr(spec, "name", None)
        me = get_ident()
        if name in ("_thread", "_posixsubprocess", "_imp") and name in sys.modules and me not in busy:
            busy.add(me)
            try:
                site = package_site(2, True)
                if site is not None:
                    report("code-swap", site, f"makes a second {name}")
            except Exception:  # noqa: BLE001 - the monitor never breaks the run it watches
                pass
            finally:
                busy.discard(me)
        return _create(spec)

    guards.add(create_builtin)
    _imp.create_builtin = create_builtin


def main() -> None:
    fd = int(os.environ.get("TF_RESULT_FD", "-1"))
    ws = os.environ.pop("TF_WORKSPACE", "") or WS
    files, graded = read_test_files(os.environ)
    if sys.path and os.path.abspath(sys.path[0] or ".") == HERE:
        sys.path.pop(0)
    if fd >= 0:
        _install_monitor(fd, ws, files, graded)
    import importlib.util

    spec = importlib.util.spec_from_file_location("tf_guard", os.path.join(HERE, "tf_guard.py"))
    assert spec is not None and spec.loader is not None     # a .py file always has a loader
    guard = importlib.util.module_from_spec(spec)
    sys.modules["tf_guard"] = guard
    spec.loader.exec_module(guard)
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.append(cwd)
    import pytest

    sys.exit(pytest.main(sys.argv[1:], plugins=[guard]))


if __name__ == "__main__":
    main()
