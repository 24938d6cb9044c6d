"""Small filesystem helpers: atomic writes, shared dirs, tree copies."""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from taskforge.sandbox.base import SANDBOX_UID


def umask() -> int:
    """The process umask, read without setting it (os.umask would race threads)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022


def readable(path: Path) -> None:
    """The mode a plain open()/mkdir() would have given: mkstemp and mkdtemp make
    0600/0700, which a trainer reading shards as another user cannot open."""
    os.chmod(path, (0o777 if path.is_dir() else 0o666) & ~umask())


def atomic_write(path: Path, data: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data.encode() if isinstance(data, str) else data)
        readable(Path(tmp))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def share_with_sandbox(path: Path) -> None:
    """Let the sandbox's non-root user write to a host directory tree."""
    try:
        for dirpath, _dirs, filenames in os.walk(path):
            os.chown(dirpath, SANDBOX_UID, SANDBOX_UID)
            for name in filenames:
                os.chown(os.path.join(dirpath, name), SANDBOX_UID, SANDBOX_UID, follow_symlinks=False)
    except PermissionError:
        for dirpath, _dirs, filenames in os.walk(path):
            os.chmod(dirpath, 0o777)
            for name in filenames:
                p = os.path.join(dirpath, name)
                if not os.path.islink(p):
                    os.chmod(p, 0o666)


def copy_tree(src: Path, dst: Path) -> None:
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".git"), symlinks=True,
                    dirs_exist_ok=True)


def rmtree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
