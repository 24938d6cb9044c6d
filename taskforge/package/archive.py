"""Deterministic tar.gz archives of a directory tree: the same tree gives the
same bytes, on any run, so shards built twice are byte-identical and an
archive's sha256 can serve as its content address.

Members are sorted by path, with mtime 0, uid/gid 0, no user or group names,
and modes reduced to 0644/0755 (0755 for executables and directories).
`.git` directories are left out: a workspace's repository is rebuilt from its
files (see `shards.row_to_task`).
"""
from __future__ import annotations

import gzip
import hashlib
import io
import os
import stat
import tarfile
from pathlib import Path

from taskforge.errors import UserError


def _info(name: str, kind: bytes, mode: int, size: int = 0, link: str = "") -> tarfile.TarInfo:
    ti = tarfile.TarInfo(name)
    ti.type, ti.mode, ti.size, ti.linkname = kind, mode, size, link
    ti.mtime, ti.uid, ti.gid, ti.uname, ti.gname = 0, 0, 0, "", ""
    return ti


def pack(root: Path, executables: set[str] | None = None) -> bytes:
    """tar.gz of `root` without `.git`. `executables`, when given, decides the
    exec bit by path (a workspace's git index knows it; its files on disk were
    normalised to 0644 by `package.write_task`); otherwise the disk decides."""
    entries: list[tuple[str, Path]] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        base = Path(dirpath)
        for name in dirnames + filenames:
            p = base / name
            entries.append((p.relative_to(root).as_posix(), p))
    entries.sort()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for rel, p in entries:
            st = p.lstat()
            if stat.S_ISLNK(st.st_mode):
                tar.addfile(_info(rel, tarfile.SYMTYPE, 0o777, link=os.readlink(p)))
            elif stat.S_ISDIR(st.st_mode):
                tar.addfile(_info(rel, tarfile.DIRTYPE, 0o755))
            elif stat.S_ISREG(st.st_mode):
                is_exec = (rel in executables) if executables is not None else bool(st.st_mode & 0o111)
                data = p.read_bytes()
                tar.addfile(_info(rel, tarfile.REGTYPE, 0o755 if is_exec else 0o644, len(data)),
                            io.BytesIO(data))
            # sockets, fifos and devices have no place in a task
    return gzip.compress(buf.getvalue(), compresslevel=9, mtime=0)


def unpack(data: bytes, dest: Path, what: str = "archive") -> None:
    """Extract into `dest` with the `data` filter: no absolute paths, no `..`,
    no links leaving `dest`, no special files."""
    dest.mkdir(parents=True, exist_ok=True)
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            tar.extractall(dest, filter="data")
    except (tarfile.TarError, OSError, EOFError, gzip.BadGzipFile) as exc:
        raise UserError(f"corrupt {what}: {exc}") from None


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
