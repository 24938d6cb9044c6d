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

`--naive` is the old, same-uid design (`python -m pytest -p tf_guard`, the
workspace first on sys.path), kept so that the red-team suite can show each
attack scoring against it.
"""
import os
import selectors
import signal
import subprocess
import sys
import time

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


def trusted_plugins() -> list:
    """pytest11 entry points of distributions installed in this environment's
    site-packages (never one that a workspace could plant on sys.path). Read
    from the entry_points.txt files directly: importlib.metadata costs 25 ms of
    every graded run."""
    import glob

    prefix = environment_prefix()
    mods = []
    roots = {os.path.realpath(p) for p in glob.glob(os.path.join(prefix, "lib*", "python*",
                                                                 "site-packages"))}
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
    import argparse

    cut = argv.index("--") if "--" in argv else len(argv)
    ap = argparse.ArgumentParser(prog="tfrun.py")
    ap.add_argument("--timeout", type=float, default=900.0)
    ap.add_argument("--uid", type=int)
    ap.add_argument("--gid", type=int)
    ap.add_argument("--naive", action="store_true")
    return vars(ap.parse_args(argv[:cut])), argv[cut + 1:]


def reap(uid, pid):
    """Kill every process the run left: as `uid` (kill -1 reaches exactly that
    uid's processes), else the child's session. Returns how many were alive."""
    if uid is None or os.getuid() == uid:
        try:
            os.killpg(pid, signal.SIGKILL)
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
                os.kill(-1, signal.SIGKILL)
            finally:
                os._exit(0)
        os.waitpid(helper, 0)
    return alive


def main() -> int:
    opts, pytest_args = parse_args(sys.argv[1:])
    uid, gid, naive = opts["uid"], opts["gid"], opts["naive"]
    separated = (not naive and uid is not None and os.getuid() == 0 and uid != 0)
    res_r, res_w = os.pipe()
    env = dict(os.environ)
    env["TF_RESULT_FD"] = str(res_w)
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    plugins = []
    for p in trusted_plugins():
        plugins += ["-p", p]
    if naive:
        env["PYTHONPATH"] = HERE
        argv = [sys.executable, "-m", "pytest", "-p", "tf_guard", *plugins, *pytest_args]
    else:
        # A script path, not -m: sys.path[0] is this read-only directory, never the cwd.
        argv = [sys.executable, "-s", os.path.join(HERE, "tfboot.py"), *plugins, *pytest_args]
    kwargs = {}
    if separated:
        kwargs = {"user": uid, "group": gid if gid is not None else uid, "extra_groups": []}
    log_r, log_w = os.pipe()
    start = time.monotonic()
    proc = subprocess.Popen(argv, stdout=log_w, stderr=log_w, stdin=subprocess.DEVNULL,
                            start_new_session=True, env=env, pass_fds=(res_w,),
                            close_fds=True, **kwargs)
    os.close(res_w)
    os.close(log_w)
    import json  # noqa: E402 - imported while pytest starts: 9 ms off every run's critical path
    head, tail, total = b"", b"", 0
    results = bytearray()
    timed_out = overflow = False
    deadline = start + opts["timeout"]
    sel = selectors.DefaultSelector()
    sel.register(log_r, selectors.EVENT_READ, "log")
    sel.register(res_r, selectors.EVENT_READ, "res")
    code = None
    exited_at = None
    alive_after_exit = 0
    while True:
        now = time.monotonic()
        if now >= deadline:
            timed_out = True
            break
        if code is None:
            code = proc.poll()
            if code is not None:
                exited_at = now
                # Nothing of the run may outlive it: whatever still runs is an escapee.
                alive_after_exit = reap(uid if separated else None, proc.pid)
        if exited_at is not None and (not sel.get_map() or now - exited_at > 0.5):
            break
        if not sel.get_map():
            # Both pipes closed: the exit is a moment away. Waiting on the process,
            # not on an empty selector, saves up to 0.1 s per run.
            try:
                proc.wait(timeout=min(max(deadline - now, 0.01), 0.1))
            except subprocess.TimeoutExpired:
                pass
            continue
        for key, _ in sel.select(timeout=min(max(deadline - now, 0.01), 0.1)):
            chunk = os.read(key.fd, 65536)
            if not chunk:
                sel.unregister(key.fd)
                continue
            if key.data == "res":
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
        try:
            code = proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        if timed_out or overflow:
            code = -9
    seconds = time.monotonic() - start
    log = head
    if total > len(head) + len(tail):
        log += b"\n[... %d bytes of output cut ...]\n" % (total - len(head) - len(tail))
    log += tail
    meta = {"$tf": "run", "exit_code": code, "seconds": round(seconds, 4),
            "timed_out": timed_out, "output_bytes": total, "results_bytes": len(results),
            "overflow": overflow,
            "separated": separated, "naive": naive, "alive_after_exit": alive_after_exit,
            "log": log.decode("utf-8", "replace"),
            "results": bytes(results).decode("utf-8", "replace")}
    sys.stdout.write(json.dumps(meta) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
