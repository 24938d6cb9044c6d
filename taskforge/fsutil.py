"""Small filesystem helpers: atomic writes, shared dirs, tree copies."""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

SANDBOX_UID = 1000


def atomic_write(path: Path, data: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data.encode() if isinstance(data, str) else data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def share_with_sandbox(path: Path) -> None:
    """Let the sandbox's non-root user write to a host directory tree."""
    try:
        for dirpath, dirnames, filenames in os.walk(path):
            os.chown(dirpath, SANDBOX_UID, SANDBOX_UID)
            for name in filenames:
                os.chown(os.path.join(dirpath, name), SANDBOX_UID, SANDBOX_UID, follow_symlinks=False)
    except PermissionError:
        for dirpath, dirnames, filenames in os.walk(path):
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
