"""pytest plugin of generation's probe batches: one session, many variants of
the package's code, each run in a child forked after collection.

Loaded by tfboot.py when TF_VARIANTS names a batch file. Stand-ins, partial
solutions and gold mutants differ from the gold only inside function bodies,
so a variant is switched in the way mutation testers do it, without a fresh
interpreter, pytest start and collection for each: the parent collects the
hidden tests once on the gold tree; for each variant a forked child sets the
`__code__` of the live functions whose bodies differ to the variant's
compiled code, runs the collected items (--maxfail applies), and sends its
reports back; the parent kills a child past the variant's time limit. What
the children do is gone with them, so one variant's state (caches, globals,
fixtures) never reaches the next.

The variant's files are also written to the tree while its child runs (and
the gold's put back after), so code that reads them again (a subprocess, a
spawned pool, importlib.reload, inspect.getsource) sees what a fresh session
would. A variant is not switched, and the host runs it in a session of its
own, when switching could differ from a fresh session: a changed function
that ran before the fork (at import or collection: its gold results are
already in the collected tests) or has a generator or coroutine alive, one
with no live function object, a module pytest rewrote the asserts of, a change
outside the functions it can switch (PEP 695 scopes, lambdas), threads alive
at the fork (a child has only the forking one). A method whose variant drops
`super()` gets a bare `__class__` reference so that its closure matches. The
host sends only variants whose module-level code is the gold's
(taskforge/validate/variants.switchable) and runs again, fresh, a stop
variant whose child ran out of time or sent nothing.

Batch file (JSON): {"results": path, "timeout": seconds, "tests": [node ids],
"hang": {"factor", "floor"} | null, "variants": [{"name", "files": {path:
source}, "stop": bool}]}. With "hang", the gold runs first in a child of its
own; a variant's child without "stop" then gets factor x the gold's seconds
(at least floor, at most timeout), and each of its tests factor x that
test's time in the gold's child (at least floor: a mutant that hangs in the
first of ten tests stops there), and if the gold does not pass there no
variant is switched. A variant with "stop" that passes every listed test
ends the batch. Results are written after each variant: {name: {"reports":
[...]} | {"timed_out": true, "hang": stopped under the whole timeout} |
{"unswitched": why} | {"error": why}}, and {"__gold__": {"seconds", "ok"}}.
"""
import json
import os
import select
import sys
import time
import types

import pytest

SPEC: dict = {}          # set by tfboot.py from the batch file before pytest starts
CO_NEWLOCALS = 0x2
TOOL_ID = 4              # sys.monitoring tool id (0-2 and 5 are named by CPython)
GOLD = "__gold__"        # the results' record of the gold's own child (validate/variants.GOLD)

_targets: set = set()
_ran: set = set()        # (real path, first line) of target-file code run before the fork
_reports: list = []
_tick_fd: list = []      # in a child: [fd, its (st_dev, st_ino)], a byte down it as each test ends


def _paths(path: str) -> set:
    return {path, os.path.realpath(path)}


def _watch(targets: set) -> None:
    """Record which code of the target files runs until collection ends:
    sys.monitoring where it exists (every other code location reports once),
    else a profile function."""
    _targets.update(targets)
    mon = getattr(sys, "monitoring", None)
    if mon is not None:
        try:
            mon.use_tool_id(TOOL_ID, "taskforge-variants")
        except ValueError:
            mon = None
    if mon is not None:
        def started(code, offset):
            if code.co_filename in _targets and code.co_name != "<module>":
                _ran.add((os.path.realpath(code.co_filename), code.co_firstlineno))
            return mon.DISABLE

        mon.register_callback(TOOL_ID, mon.events.PY_START, started)
        mon.set_events(TOOL_ID, mon.events.PY_START)
        return

    def profile(frame, event, arg):
        # Not frame.f_code: reading it is an audited act, judged by the monitor
        # on every call. At a call event f_lineno is the code's first line.
        if event == "call":
            file = frame.f_globals.get("__file__")
            if file in _targets:
                _ran.add((os.path.realpath(file), frame.f_lineno))

    import threading

    sys.setprofile(profile)
    threading.setprofile(profile)       # threads started at import or collection too


def _unwatch() -> None:
    mon = getattr(sys, "monitoring", None)
    if mon is not None and mon.get_tool(TOOL_ID) == "taskforge-variants":
        mon.set_events(TOOL_ID, 0)
        mon.register_callback(TOOL_ID, mon.events.PY_START, None)
        mon.free_tool_id(TOOL_ID)
    else:
        import threading

        sys.setprofile(None)
        threading.setprofile(None)


def start(spec: dict) -> None:
    SPEC.clear()
    SPEC.update(spec)
    _watch(_target_files(spec))


def _target_files(spec: dict) -> set:
    """Every path (as given and resolved) of a file some variant changes."""
    files: set = set()
    for v in spec.get("variants", []):
        for path in v.get("files", {}):
            files |= _paths(path)
    return files


def units(code, out=None, counts=None) -> dict:
    """{(qualname, n): code} of the module's functions and methods (the n-th of
    that name: a property's getter and setter share one), not of nested ones."""
    out = {} if out is None else out
    counts = {} if counts is None else counts
    for c in code.co_consts:
        if not isinstance(c, types.CodeType):
            continue
        q = getattr(c, "co_qualname", None)
        if q is None or "<" in q:
            continue
        if c.co_flags & CO_NEWLOCALS:
            k = counts.get(q, 0)
            counts[q] = k + 1
            out[(q, k)] = c
        else:                       # a class body
            units(c, out, counts)
    return out


def residual(code, unit_ids: set):
    """The shape of a module's code with its switchable functions left out:
    what switching cannot change, so it must be the gold's."""
    consts = tuple(("unit",) if id(c) in unit_ids else
                   residual(c, unit_ids) if isinstance(c, types.CodeType) else (type(c).__name__, repr(c))
                   for c in code.co_consts)
    return (code.co_code, code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars,
            code.co_flags, getattr(code, "co_exceptiontable", b""), consts)


def shape(code):
    """What a function does, without where its lines are."""
    consts = tuple(shape(c) if isinstance(c, types.CodeType) else (type(c).__name__, repr(c))
                   for c in code.co_consts)
    return (code.co_code, code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars,
            code.co_flags, code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount,
            getattr(code, "co_exceptiontable", b""), consts)


def live_functions(files: set) -> dict:
    """{(file, qualname, first line): [function]} of every live function object
    whose code comes from one of `files` (decorated ones and aliases too)."""
    import gc

    out: dict = {}
    for obj in gc.get_objects():
        if type(obj) is types.FunctionType:
            code = obj.__code__
            if code.co_filename in files:
                key = (os.path.realpath(code.co_filename),
                       getattr(code, "co_qualname", code.co_name), code.co_firstlineno)
                out.setdefault(key, []).append(obj)
    return out


def _with_class_cell(source: str, path: str, keys: set):
    """`source` compiled with a bare `__class__` first in each function `keys`
    names ((qualname, n) as units() counts them): a stand-in that drops
    super() then closes over the same cell as the gold's method."""
    import ast

    tree = ast.parse(source, path)
    counts: dict = {}

    def walk(body, prefix):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                q = prefix + node.name
                k = counts.get(q, 0)
                counts[q] = k + 1
                if (q, k) in keys:
                    ref = ast.Expr(ast.Name("__class__", ast.Load()))
                    ast.copy_location(ref, node.body[0])
                    ast.copy_location(ref.value, node.body[0])
                    node.body.insert(0, ref)
            elif isinstance(node, ast.ClassDef):
                walk(node.body, prefix + node.name + ".")

    walk(tree.body, "")
    return compile(ast.fix_missing_locations(tree), path, "exec", dont_inherit=True)


def _module_of(real: str):
    """The loaded module of this file, or None."""
    for mod in list(sys.modules.values()):
        f = getattr(mod, "__file__", None)
        if isinstance(f, str) and os.path.realpath(f) == real:
            return mod
    return None


def _rewritten(mod) -> bool:
    """Whether pytest's assertion rewriter loaded the module: its code has
    rewritten asserts that a compile here would not have."""
    return type(getattr(mod, "__loader__", None)).__name__ == "AssertionRewritingHook"


class Gold:
    """One target file as the session loaded it, compiled once for every variant."""

    def __init__(self, path: str):
        self.path, self.real = path, os.path.realpath(path)
        with open(path, encoding="utf-8") as f:
            self.text = f.read()
        self.code: types.CodeType | None = None
        try:
            self.code = compile(self.text, path, "exec", dont_inherit=True)
        except (SyntaxError, ValueError, RecursionError):
            pass
        self.units = units(self.code) if self.code is not None else {}
        self.residual = residual(self.code, {id(c) for c in self.units.values()}) if self.code else None
        self.module = _module_of(self.real)


def plan(variant: dict, golds: dict, live: dict, suspended: set):
    """[(functions, code)] that switch `variant` in, or the reason it cannot be."""
    patches = []
    for path, source in variant["files"].items():
        g = golds[path]
        real, gold = g.real, g.units
        try:
            if g.code is None:
                raise SyntaxError(path)
            new_mod = compile(source, path, "exec", dont_inherit=True)
            new = units(new_mod)
            cells = {k for k, c in gold.items()
                     if k in new and "__class__" in c.co_freevars and "__class__" not in new[k].co_freevars}
            if cells:
                new_mod = _with_class_cell(source, path, cells)
                new = units(new_mod)
        except (SyntaxError, ValueError, RecursionError) as exc:
            return f"does not compile: {type(exc).__name__}"
        if gold.keys() != new.keys():
            return f"other functions in {path}"
        if g.residual != residual(new_mod, {id(c) for c in new.values()}):
            return f"changes outside the functions it can switch in {path}"
        changed = [(key, old, new[key]) for key, old in gold.items() if shape(new[key]) != shape(old)]
        if g.module is None and not any(k[0] == real for k in live):
            continue        # never imported: a test that imports it reads the variant's file
        if changed and _rewritten(g.module):
            return f"pytest rewrote the asserts of {path}"
        for key, old, code in changed:
            if (real, old.co_firstlineno) in _ran:
                return f"{key[0]} ran before the tests"
            if (real, old.co_firstlineno) in suspended:
                return f"{key[0]} has a generator or coroutine alive"
            if code.co_freevars != old.co_freevars:
                return f"{key[0]} closes over other names"
            fns = live.get((real, key[0], old.co_firstlineno))
            if not fns:
                return f"{key[0]} is not loaded"
            patches.append((fns, code))
    return patches


def suspended_frames(files: set) -> set:
    """(real path, first line) of generators and coroutines of the target files
    alive now: created before the fork, they run the gold's code whatever the
    function's __code__ becomes."""
    import gc

    out = set()
    for obj in gc.get_objects():
        code = getattr(obj, "gi_code", None) if isinstance(obj, types.GeneratorType) else \
            getattr(obj, "cr_code", None) if isinstance(obj, types.CoroutineType) else \
            getattr(obj, "ag_code", None) if isinstance(obj, types.AsyncGeneratorType) else None
        if code is not None and code.co_filename in files:
            out.add((os.path.realpath(code.co_filename), code.co_firstlineno))
    return out


def _passed_all(reports: list, tests: list) -> bool:
    state: dict = {}
    for r in reports:
        nid = r["nodeid"]
        if r["outcome"] != "passed" and not (r["when"] == "teardown" and r["outcome"] == "skipped"):
            state[nid] = False
        elif r["when"] == "call" and not r.get("subtest"):
            state.setdefault(nid, True)
    return all(state.get(t) for t in tests)


def _teardown(session) -> None:
    """What a --maxfail stop leaves set up (pytest < 8 skips it): a fresh
    session's end would tear it down, and a fixture's files would stay."""
    state = getattr(session, "_setupstate", None)
    for name, args in (("teardown_exact", (None,)), ("teardown_all", ())):
        fn = getattr(state, name, None)
        if fn is not None:
            try:
                fn(*args)
            except Exception:
                pass
            return


def _child(session, patches, w: int, basetemp: str, tick: int) -> None:
    """In the forked child: switch the variant in, run the items, send the reports
    (and a byte down `tick` as each test ends, for the per-test limits)."""
    try:
        os.setpgid(0, 0)
        st = os.fstat(tick)
        _tick_fd[:] = [tick, (st.st_dev, st.st_ino)]
        factory = getattr(session.config, "_tmp_path_factory", None)
        if factory is not None and hasattr(factory, "_given_basetemp"):
            # tmp_path under a directory of this variant's, which the parent
            # removes: a child ends with os._exit, before pytest's own cleanup.
            from pathlib import Path

            factory._given_basetemp = Path(basetemp)
            factory._basetemp = None
        for fns, code in patches:
            for fn in fns:
                fn.__code__ = code
        _reports.clear()
        from _pytest.main import pytest_runtestloop as loop

        try:
            loop(session)
        except (session.Failed, session.Interrupted):
            pass
        _teardown(session)
        data = json.dumps({"reports": _reports}).encode()
    except BaseException as exc:       # the child must exit here, never return into pytest
        data = json.dumps({"error": f"{type(exc).__name__}: {exc}"[:300]}).encode()
    try:
        while data:
            data = data[os.write(w, data[:65536]):]
    finally:
        os._exit(0)


def _wait(pid: int, r: int, deadline: float, tick: int, ends: list, per_test=None):
    """(what the child sent, None | "limit" | "test": what it ran out of). The
    child's exit ends the wait, not the pipe's end: a process it forked may
    hold the pipe open, and a test may close it early (os.closerange). `ends`
    gets the monotonic time each test ended (a byte on `tick`); with
    `per_test`, the test after the n-th end has per_test[n] seconds."""
    chunks: list = []
    exited = eof = tick_eof = False
    start = time.monotonic()
    while not exited:
        now = time.monotonic()
        left = deadline - now
        if per_test and not tick_eof and len(ends) < len(per_test):
            # Past the gold's last test (session teardown), and once the child
            # can no longer tick (a test closed the pipe), the whole limit only.
            test_left = (ends[-1] if ends else start) + per_test[len(ends)] - now
            if test_left <= 0 and test_left < left:
                return chunks, "test"
            left = min(left, test_left)
        if left <= 0:
            return chunks, "limit"
        watch = [fd for fd, done in ((r, eof), (tick, tick_eof)) if not done]
        ready: list = []
        if watch:
            ready = select.select(watch, [], [], min(left, 0.05))[0]
        else:
            time.sleep(min(left, 0.05))
        for fd in ready:
            chunk = os.read(fd, 65536)
            if fd == tick:
                ends.extend([time.monotonic()] * len(chunk))
                tick_eof = not chunk
            elif chunk:
                chunks.append(chunk)
            else:
                eof = True
        exited = os.waitpid(pid, os.WNOHANG)[0] == pid
    os.set_blocking(r, False)
    while not eof:
        try:
            chunk = os.read(r, 65536)
        except BlockingIOError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    return chunks, None


def _run_one(session, patches, timeout: float, basetemp: str, per_test=None) -> dict:
    """One child's result; "ends": each test's end, in seconds from the fork."""
    r, w = os.pipe()
    tr, tw = os.pipe()
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        os.close(tr)
        _child(session, patches, w, basetemp, tw)
    os.close(w)
    os.close(tw)
    ends: list = []
    try:
        chunks, ran_out = _wait(pid, r, t0 + timeout, tr, ends, per_test)
    finally:
        os.close(r)
        os.close(tr)
    if ran_out:
        for kill in (os.killpg, os.kill):
            try:
                kill(pid, 9)
            except OSError:
                pass
        os.waitpid(pid, 0)
        return {"timed_out": True, "test_limit": ran_out == "test"}
    try:
        out = json.loads(b"".join(chunks) or b"{}") or {"error": "the child sent nothing"}
    except ValueError:
        return {"error": "the child's reports are not JSON"}
    out["ends"] = [round(e - t0, 4) for e in ends]
    return out


def _timed(session, patches, limit: float, per_test=None):
    """(_run_one's result, seconds) of one child, its tmp_path root removed after."""
    import shutil
    import tempfile

    t0 = time.monotonic()
    base = tempfile.mkdtemp(prefix="tf-variant-")
    try:
        return _run_one(session, patches, limit, os.path.join(base, "t"), per_test), time.monotonic() - t0
    finally:
        shutil.rmtree(base, ignore_errors=True)


def per_test_limits(ends: list, factor: float, floor: float) -> list:
    """Each test's limit from the gold child's test ends: factor x the gold's
    time for it, at least floor. A mutant that hangs in its first test of ten
    stops there, not at ten times the whole run."""
    gaps = [b - a for a, b in zip([0.0, *ends], ends)]
    return [max(floor, factor * g) for g in gaps]


def _write(path: str, results: dict) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(results, f)
    os.replace(tmp, path)


def _put(files: dict) -> None:
    for path, text in files.items():
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session):
    """Every variant in turn, then no tests of the session's own (returns True)."""
    import threading

    _unwatch()                  # as late as can be: conftest hooks after collection are watched
    results: dict = {}
    files = _target_files(SPEC)
    live = live_functions(files)
    suspended = suspended_frames(files)
    threads = threading.active_count()
    golds = {path: Gold(path) for v in SPEC["variants"] for path in v["files"]}
    gold = {path: g.text for path, g in golds.items()}
    sys.stdout.flush()
    sys.stderr.flush()
    limit = full = float(SPEC["timeout"])
    hang = SPEC.get("hang")
    per_test = None
    plans = {v["name"]: plan(v, golds, live, suspended) if threads == 1 else f"{threads} threads alive at the fork"
             for v in SPEC["variants"]}
    if hang and any(not isinstance(p, str) for p in plans.values()):
        # The gold in a child first: its time sets the mutants' limit, and a
        # gold that fails here shows that children are no fresh sessions for
        # these tests (every variant then runs fresh).
        out, secs = _timed(session, [], limit)
        ok = _passed_all(out.get("reports", []), SPEC["tests"])
        results[GOLD] = {"seconds": round(secs, 3), "ok": ok}
        if ok:
            limit = min(limit, max(float(hang["floor"]), float(hang["factor"]) * secs))
            per_test = per_test_limits(out.get("ends") or [], float(hang["factor"]), float(hang["floor"])) or None
        else:
            why = "the gold " + ("ran out of time" if out.get("timed_out") else "fails") + " in a forked child"
            plans = dict.fromkeys(plans, why)
    for v in SPEC["variants"]:
        patches = plans[v["name"]]
        if isinstance(patches, str):
            results[v["name"]] = {"unswitched": patches}
        else:
            # A stop variant (a stand-in, a partial solution) keeps the whole
            # limit: one that passes slowly must be seen passing.
            mine = full if v.get("stop") else limit
            _put(v["files"])        # what a subprocess, a reload or getsource reads
            try:
                out, secs = _timed(session, patches, mine, None if v.get("stop") else per_test)
            finally:
                _put({path: gold[path] for path in v["files"]})
            out.pop("ends", None)
            if out.get("timed_out"):
                out["hang"] = mine < full or bool(out.pop("test_limit", False))
            results[v["name"]] = out
            out["seconds"] = round(secs, 3)
            if v.get("stop") and _passed_all(out.get("reports", []), SPEC["tests"]):
                _write(SPEC["results"], results)
                break
        _write(SPEC["results"], results)
    return True


def pytest_runtest_logreport(report):
    ev = {"nodeid": report.nodeid, "when": report.when, "outcome": report.outcome}
    if hasattr(report, "wasxfail"):
        ev["wasxfail"] = True
    if type(report).__name__ != "TestReport":
        ev["subtest"] = True
    _reports.append(ev)
    if _tick_fd and report.when == "teardown" and not ev.get("subtest"):
        fd, ident = _tick_fd
        try:
            # A test that closed the pipe (os.closerange) may have reused its
            # number for a file of its own: never a byte into that.
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) == ident:
                os.write(fd, b".")
                return
        except OSError:
            pass
        _tick_fd.clear()
