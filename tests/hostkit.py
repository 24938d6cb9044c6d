"""Solutions that go after the grader's host rather than the tests: its memory
and time (a module too big to parse, a binary patch that inflates, a patch of
60,000 files), its result (a flood of monitor events), its cleanup (a
directory chain deeper than a recursive walk can go) and its tree (a symlink
mode spelled another way). Built for a textkit task (tests/test_redteam.py's
`roman` target); used by tests/test_redteam_host.py and by hand to measure.
"""
from __future__ import annotations

import base64
import hashlib
import shutil
import subprocess
import textwrap
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

PKG = "textkit"


def _b85_lines(data: bytes) -> Iterator[str]:
    """git's binary-patch lines: a length character, then base85 of up to 52 bytes."""
    for i in range(0, len(data), 52):
        chunk = data[i:i + 52]
        n = len(chunk)
        yield (chr(ord("A") + n - 1) if n <= 26 else chr(ord("a") + n - 27)) \
            + base64.b85encode(chunk, pad=True).decode()


def literal_patch(rel: str, size: int, chunks: Callable[[], Iterator[bytes]]) -> str:
    """A new file as git writes a binary patch (`literal`, deflated, base85),
    streamed: a gigabyte of zeros costs a megabyte of patch and no memory here."""
    sha = hashlib.sha1(b"blob %d\0" % size)
    comp = zlib.compressobj(9)
    deflated = []
    for c in chunks():
        sha.update(c)
        deflated.append(comp.compress(c))
    deflated.append(comp.flush())
    body = "\n".join(_b85_lines(b"".join(deflated)))
    return (f"diff --git a/{rel} b/{rel}\nnew file mode 100644\nindex {'0' * 40}..{sha.hexdigest()}\n"
            f"GIT binary patch\nliteral {size}\n{body}\n\n")


def module_source(kib: int) -> bytes:
    """About `kib` KiB of honest-looking Python: many small functions."""
    out, i, size = [], 0, 0
    while size < kib * 1024:
        fn = (f"def helper_{i}(value, scale=3):\n    \"\"\"Scaled copies of value ({i}).\"\"\"\n"
              f"    if value > {i}:\n        return [value * scale + {i} for _ in range(4)]\n"
              f"    table = {{'a': value, 'b': (scale, {i})}}\n    return table.get('a', None)\n\n\n")
        out.append(fn)
        size += len(fn)
        i += 1
    return "".join(out).encode()


def big_module_patch(mib: int) -> str:
    """A valid module of `mib` MiB, shipped as a binary patch (about 1/200 of it)."""
    data = module_source(mib * 1024)
    return literal_patch(f"{PKG}/_tables.py", len(data), lambda: iter([data]))


def huge_file_patch(mib: int) -> str:
    """A file of `mib` MiB of zeros in a binary patch of about mib KiB."""
    block = bytes(1 << 20)
    return literal_patch(f"{PKG}/blob.bin", mib << 20, lambda: (block for _ in range(mib)))


def text_new_file(rel: str, text: str) -> str:
    lines = text.splitlines(keepends=True)
    return (f"diff --git a/{rel} b/{rel}\nnew file mode 100644\n--- /dev/null\n+++ b/{rel}\n"
            f"@@ -0,0 +1,{len(lines)} @@\n" + "".join("+" + ln for ln in lines))


def many_files_patch(n: int, per_dir: int = 1000) -> str:
    """`n` new one-line modules (60,000 of them are 6 MB of patch)."""
    return "".join(text_new_file(f"{PKG}/gen{i // per_dir}/m{i}.py", f"X = {i}\n") for i in range(n))


def deep_patch(levels: int) -> str:
    """One file at the bottom of a chain of `levels` directories."""
    return text_new_file("/".join(["d"] * levels) + "/f.txt", "bottom\n")


def symlink_patch(mode_line: str, name: str = "escape") -> str:
    """A new symlink to /tmp with `mode_line` as its mode header."""
    return (f"diff --git a/{name} b/{name}\n{mode_line}\n--- /dev/null\n+++ b/{name}\n"
            "@@ -0,0 +1 @@\n+/tmp\n\\ No newline at end of file\n")


def gold_tree(task: Path, dest: Path) -> Path:
    shutil.copytree(task / "workspace", dest)
    subprocess.run(["git", "apply", str(task / "gold.patch")], cwd=dest, check=True)
    return dest


def with_gold(task: Path, extra: str) -> str:
    """The gold patch followed by `extra` (both apply to the workspace)."""
    return (task / "gold.patch").read_text() + extra


def append(path: Path, code: str) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("\n" + textwrap.dedent(code))


DEEP_AT_IMPORT = '''\
import os as _os
_here = _os.getcwd()
try:
    _os.chdir(_os.path.dirname(_os.path.abspath(__file__)))
    for _ in range({levels}):
        _os.mkdir("d")
        _os.chdir("d")
finally:
    _os.chdir(_here)
'''

FLOOD = '''\
import json as _json, os as _os, sys as _sys
_fd = getattr(_sys.modules.get("tf" + "_guard"), "_FD", -1)
if _fd >= 0:
    _line = '{{"$report_type": "Monitor", "kind": "process", "site": "textkit/x.py:%d", "detail": "%s"}}\\n'
    _buf = "".join(_line % (_i, "p") for _i in range({n})).encode()
    while _buf:
        _buf = _buf[_os.write(_fd, _buf):]
'''


def deep_at_import(task: Path, dest: Path, levels: int = 3000) -> Path:
    """The gold, whose package makes a chain of `levels` directories when imported."""
    gold_tree(task, dest)
    append(dest / PKG / "__init__.py", DEEP_AT_IMPORT.format(levels=levels))
    return dest


WRITES_AT_IMPORT = '''\
import os as _os
_dir = _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "litter")
_os.makedirs(_dir, mode={mode}, exist_ok=True)
_os.chmod(_dir, {mode})
_block = b"x" * (1 << 20)
for _i in range({files}):
    open(_os.path.join(_dir, str(_i)), "wb").close()
for _i in range({chunks}):
    with open(_os.path.join(_dir, "blob%d" % (_i // {per_file})), "ab") as _fh:
        _fh.write(_block)
'''


def writes_at_import(task: Path, dest: Path, mib: int = 0, files: int = 0, per_file_mib: int = 256,
                     mode: int = 0o755) -> Path:
    """The gold, whose package writes `files` empty files and `mib` MiB (in files
    of `per_file_mib`) into the workspace when imported: the host's disk pays.
    `mode`: the directory's (0o700: one the sandbox's root cannot read unaided)."""
    gold_tree(task, dest)
    append(dest / PKG / "__init__.py", WRITES_AT_IMPORT.format(files=files, chunks=mib, per_file=per_file_mib,
                                                               mode=oct(mode)))
    return dest


def flood(task: Path, dest: Path, n: int = 150_000) -> Path:
    """The gold, whose package writes `n` well-formed, distinct monitor events on
    the result pipe when imported (of a kind that alone costs nothing)."""
    gold_tree(task, dest)
    append(dest / PKG / "__init__.py", FLOOD.format(n=n))
    return dest


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def delta_bomb_patch(task: Path, rel: str, mib: int) -> str:
    """A git binary `delta` hunk that rebuilds workspace file `rel` as `mib` MiB by
    copying it over and over: a few bytes of delta per copy, so the header's
    delta size is small and only the result is large (a header check alone
    cannot see it; the apply's own bounds must)."""
    base = (task / "workspace" / rel).read_bytes()
    n = len(base)
    assert 0 < n < 1 << 16
    copy = bytes([0x80 | 0x10 | 0x20]) + bytes([n & 0xFF, n >> 8])   # offset 0, size n
    reps, tail = divmod(mib << 20, n)
    ops = copy * reps + (bytes([0x80 | 0x10 | 0x20, tail & 0xFF, tail >> 8]) if tail else b"")
    delta = _varint(n) + _varint(mib << 20) + ops
    sha = hashlib.sha1(b"blob %d\0" % (mib << 20))
    block = base * ((1 << 20) // n + 1)
    done = 0
    while done < mib << 20:                  # the result's hash, streamed
        take = min(len(block) - (len(block) % n), (mib << 20) - done)
        sha.update(block[:take])
        done += take
    old = hashlib.sha1(b"blob %d\0" % n + base).hexdigest()
    body = "\n".join(_b85_lines(zlib.compress(delta, 9)))
    return (f"diff --git a/{rel} b/{rel}\nindex {old}..{sha.hexdigest()} 100644\n"
            f"GIT binary patch\ndelta {len(delta)}\n{body}\n\n")
