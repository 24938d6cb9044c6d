"""Small filesystem functions: atomic writes, shared dirs, tree copies, removal."""
from __future__ import annotations

import logging
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

# The uid code under test runs as, in every sandbox: trees it must write are
# handed to it (share_with_sandbox).
SANDBOX_UID = 1000


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


log = logging.getLogger(__name__)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass
class _Level:
    """One directory on the way down: its name in its parent, its identity, and
    the subdirectories still to empty."""
    name: str
    ident: tuple[int, int]
    subdirs: list[str] = field(default_factory=list)


def rmtree(path: str | Path) -> list[str]:
    """Remove a tree that a solution may have shaped; never raises, never recurses.

    shutil.rmtree recurses (Python 3.11) and a 3,000-deep chain of directories,
    easy to make from inside a sandbox, makes it raise RecursionError; a path
    that deep is also longer than PATH_MAX. This walks with one directory
    descriptor at a time (down by name, O_NOFOLLOW; up by "..", checked to be
    the directory it came from), keeps only names on its stack, does not cross
    into another filesystem, and returns what it could not remove (also logged),
    so that a failed cleanup never costs a caller its result."""
    errors: list[str] = []
    try:
        _rmtree(Path(path), errors)
    except Exception as exc:  # noqa: BLE001 - cleanup must never raise
        errors.append(f"{path}: {type(exc).__name__}: {exc}")
    if errors:
        log.warning("could not remove all of %s: %s%s", path, errors[0],
                    f" (and {len(errors) - 1} more)" if len(errors) > 1 else "")
    return errors


def _rmtree(top: Path, errors: list[str]) -> None:
    try:
        st = os.lstat(top)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(st.st_mode):
        os.unlink(top)
        return
    fd = os.open(top, _DIR_FLAGS)
    dev = st.st_dev
    try:
        levels = [_Level("", (st.st_dev, st.st_ino), _empty(fd, dev, errors, top.as_posix()))]
        while levels:
            cur = levels[-1]
            if cur.subdirs:
                name = cur.subdirs.pop()
                try:
                    child = os.open(name, _DIR_FLAGS, dir_fd=fd)
                except OSError as exc:
                    errors.append(f"{name}: {exc.strerror}")
                    continue
                cst = os.fstat(child)
                os.close(fd)
                fd = child
                levels.append(_Level(name, (cst.st_dev, cst.st_ino),
                                     _empty(fd, dev, errors, name)))
                continue
            levels.pop()
            if not levels:
                break
            up = os.open("..", _DIR_FLAGS, dir_fd=fd)
            ust = os.fstat(up)
            os.close(fd)
            fd = up
            if (ust.st_dev, ust.st_ino) != levels[-1].ident:
                errors.append(f"{cur.name}: its parent moved while it was being removed")
                return
            try:
                os.rmdir(cur.name, dir_fd=fd)
            except OSError as exc:
                errors.append(f"{cur.name}: {exc.strerror}")
    finally:
        os.close(fd)
    try:
        os.rmdir(top)
    except OSError as exc:
        errors.append(f"{top}: {exc.strerror}")


def _empty(fd: int, dev: int, errors: list[str], where: str) -> list[str]:
    """Unlink every non-directory in the directory `fd`; its subdirectories on
    this filesystem (a mount point inside is left alone, as rm --one-file-system does)."""
    subdirs = []
    with os.scandir(fd) as it:
        entries = list(it)
    for e in entries:
        try:
            if e.is_dir(follow_symlinks=False):
                if e.stat(follow_symlinks=False).st_dev == dev:
                    subdirs.append(e.name)
                else:
                    errors.append(f"{where}/{e.name}: another filesystem, left alone")
            else:
                os.unlink(e.name, dir_fd=fd)
        except FileNotFoundError:
            continue
        except OSError as exc:
            errors.append(f"{where}/{e.name}: {exc.strerror}")
    return subdirs
