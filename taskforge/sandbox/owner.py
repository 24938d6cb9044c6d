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
