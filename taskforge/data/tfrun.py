"""In-sandbox test runner: run pytest under the guard plugin, time it, bound
its output, and print the results on this process's own stdout.

Mounted read-only at /opt/tf/lib (also baked into the base image). The host
reads this process's stdout through the engine: JSON lines from the guard
plugin, then one {"$tf": "run", ...} line with the exit code and the bare
duration of the test run. The code under test never gets this stdout: pytest
writes its console to a separate pipe (kept as a bounded log), and this
process makes itself non-dumpable so the same uid cannot reach its fds
through /proc.

    python -I /opt/tf/lib/tfrun.py OUT TIMEOUT -- python -m pytest ...
"""
import json
import os
import selectors
import signal
import subprocess
import sys
import time

HEAD = 64 * 1024
TAIL = 256 * 1024
MAX_RESULTS = 64 * 1024 * 1024
LINT_WORDS = ("flake8", "pycodestyle", "pep8", "mypy", "black", "isort", "pylint", "ruff",
              "codestyle", "pydocstyle")


def _non_dumpable() -> None:
    try:
        import ctypes

        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
    except Exception:
        pass


def trusted_plugins() -> list:
    """pytest11 entry points of distributions installed in this environment's
    site-packages (never one that a workspace could plant on sys.path)."""
    from importlib import metadata

    prefix = os.path.realpath(sys.prefix)
    mods = []
    for dist in metadata.distributions():
        try:
            where = os.path.realpath(str(dist.locate_file("")))
        except Exception:
            continue
        if not where.startswith(prefix + os.sep):
            continue
        for ep in dist.entry_points:
            if ep.group == "pytest11":
                mod = ep.value.split(":")[0].strip()
                # Lint plugins check style, not behaviour, and often break on new pytest.
                if any(w in mod for w in LINT_WORDS) or mod.startswith("xdist"):
                    continue
                if mod and mod not in mods:
                    mods.append(mod)
    return sorted(mods)


def main() -> int:
    _non_dumpable()
    out, timeout = sys.argv[1], float(sys.argv[2])
    argv = sys.argv[sys.argv.index("--") + 1:]
    os.makedirs(out, exist_ok=True)
    if len(argv) >= 3 and argv[1:3] == ["-m", "pytest"]:
        extra = []
        for p in trusted_plugins():
            extra += ["-p", p]
        argv = argv[:3] + ["-p", "tf_guard"] + extra + argv[3:]
    res_r, res_w = os.pipe()
    env = dict(os.environ)
    env["TF_RESULT_FD"] = str(res_w)
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    here = os.path.dirname(os.path.abspath(__file__))
    env["PYTHONPATH"] = here
    start = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True, env=env,
                            pass_fds=(res_w,))
    os.close(res_w)
    head, tail, total, timed_out = b"", b"", 0, False
    results = bytearray()
    deadline = start + timeout
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ, "log")
    sel.register(res_r, selectors.EVENT_READ, "res")
    open_streams = 2
    exited_at = None
    while open_streams:
        now = time.monotonic()
        if now >= deadline:
            timed_out = True
            break
        if exited_at is None and proc.poll() is not None:
            exited_at = now
        if exited_at is not None and now - exited_at > 0.5:
            break  # a background child still holds a pipe: stop reading
        for key, _ in sel.select(timeout=min(deadline - now, 0.2)):
            fd = key.fileobj if isinstance(key.fileobj, int) else key.fileobj.fileno()
            chunk = os.read(fd, 65536)
            if not chunk:
                sel.unregister(key.fileobj)
                open_streams -= 1
                continue
            if key.data == "res":
                if len(results) < MAX_RESULTS:
                    results += chunk
                continue
            total += len(chunk)
            if len(head) < HEAD:
                take = HEAD - len(head)
                head, chunk = head + chunk[:take], chunk[take:]
            if chunk:
                tail = (tail + chunk)[-TAIL:]
    try:
        code = proc.wait(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        timed_out, code = True, -9
    seconds = time.monotonic() - start
    try:  # leave nothing behind in the session: background children included
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    if timed_out:
        code = -9
    try:
        with open(os.path.join(out, "log.txt"), "wb") as fh:
            fh.write(head)
            if total > len(head) + len(tail):
                fh.write(b"\n[... %d bytes of output cut ...]\n" % (total - len(head) - len(tail)))
            fh.write(tail)
    except OSError:
        pass
    meta = {"$tf": "run", "exit_code": code, "seconds": round(seconds, 4),
            "timed_out": timed_out, "output_bytes": total}
    sys.stdout.buffer.write(bytes(results))
    sys.stdout.buffer.write(b"\n" + json.dumps(meta).encode() + b"\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
