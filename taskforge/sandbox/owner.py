"""Who owns a sandbox or a scratch directory: host, pid and the pid's start
time, so a later run can remove what a dead one left (a recycled pid is not
mistaken for the owner)."""
from __future__ import annotations

import os
import socket
from pathlib import Path


def _start_time(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return "?"


def owner_token() -> str:
    """Who owns a container or scratch dir: host, pid and the pid's start time
    (so a recycled pid is not mistaken for the owner)."""
    pid = os.getpid()
    return f"{socket.gethostname()}:{pid}:{_start_time(pid)}"


def owner_alive(token: str) -> bool:
    try:
        host, pid, start = token.rsplit(":", 2)
        pid_i = int(pid)
    except ValueError:
        return True                   # not ours to judge
    if host != socket.gethostname():
        return True
    try:
        os.kill(pid_i, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return _start_time(pid_i) == start


# Scratch directories of ours in the temporary directory, each with an .owner
# file: a generate run's, a warm sandbox's, a verify's graded tree.
SCRATCH_PREFIXES = ("taskforge-", "tf-warm-", "tf-verify-")


def owned_dir(prefix: str) -> Path:
    """A new scratch directory that names its owner, so that what a killed
    process leaves behind (a warm pool's filled workspaces) is removed later."""
    import tempfile

    assert prefix in SCRATCH_PREFIXES, prefix
    d = Path(tempfile.mkdtemp(prefix=prefix))
    (d / ".owner").write_text(owner_token() + "\n")
    return d


def reap_dirs() -> int:
    """Remove the scratch directories whose owner died; returns how many.
    A directory with no .owner file (an older taskforge's, or one still being
    made) is left alone."""
    import tempfile

    from taskforge.fsutil import rmtree

    n = 0
    for prefix in SCRATCH_PREFIXES:
        for d in Path(tempfile.gettempdir()).glob(prefix + "*"):
            try:
                token = (d / ".owner").read_text().strip()
            except OSError:
                continue
            if not owner_alive(token):
                rmtree(d)
                n += 1
    return n
