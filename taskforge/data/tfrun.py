"""In-sandbox test runner: run one command, time it, bound its output.

Lives in the sandbox image at /opt/tf/bin/tfrun.py. The host reads OUT/run.json
for the exit code and the bare duration of the test run (the "test time" that
taskforge's overhead is measured against) and OUT/log.txt for a bounded log.

    python /opt/tf/bin/tfrun.py OUT TIMEOUT -- python -m pytest ...
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


def main() -> int:
    out, timeout = sys.argv[1], float(sys.argv[2])
    argv = sys.argv[sys.argv.index("--") + 1:]
    os.makedirs(out, exist_ok=True)
    start = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    head, tail, total, timed_out = b"", b"", 0, False
    deadline = start + timeout
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    exited_at = None
    while True:
        now = time.monotonic()
        if now >= deadline:
            timed_out = True
            break
        if exited_at is None and proc.poll() is not None:
            exited_at = now
        if exited_at is not None and now - exited_at > 0.5:
            break  # a background child still holds the pipe: stop reading
        if not sel.select(timeout=min(deadline - now, 0.2)):
            continue
        chunk = os.read(proc.stdout.fileno(), 65536)
        if not chunk:
            break
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
    with open(os.path.join(out, "log.txt"), "wb") as fh:
        fh.write(head)
        if total > len(head) + len(tail):
            fh.write(b"\n[... %d bytes of output cut ...]\n" % (total - len(head) - len(tail)))
        fh.write(tail)
    with open(os.path.join(out, "run.json"), "w") as fh:
        json.dump({"exit_code": code, "seconds": round(seconds, 4),
                   "timed_out": timed_out, "output_bytes": total}, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
