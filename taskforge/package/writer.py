"""Write a validated candidate as a task directory, atomically.

DIR/<task_id>/
  task.json             TaskRecord (SWE-bench fields + taskforge's own)
  problem_statement.md  what to implement (interface only)
  gold.patch            restores the removed code
  test.patch            restores the hidden tests
  workspace/            the stripped repo as the agent gets it: one fresh commit, no caches
  hidden/               the task's own copy of every test file and test config (never
                        shown to the agent; restored over the solution before grading)
"""
from __future__ import annotations

import hashlib
import os
import re
import resource
import shutil
import signal
import stat
import struct
import subprocess
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

from taskforge.fsutil import atomic_write, copy_tree
from taskforge.gitutil import git
from taskforge.repo.layout import walk

SCRUB_DIRS = {".git", "__pycache__", ".venv", ".tox", ".nox", ".eggs", ".mypy_cache",
              ".pytest_cache", ".ruff_cache", ".hypothesis", "htmlcov", ".pytype", ".pyre"}
SCRUB_TOP_DIRS = {"build", "dist", "wheelhouse"}
SCRUB_SUFFIXES = (".pyc", ".pyo", ".orig", ".rej", ".whl")


def task_id(repo_name: str, commit: str, qualname: str, kind: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", repo_name).strip("-.") or "repo"
    h = hashlib.sha256(f"{repo_name}\0{commit}\0{kind}\0{qualname}".encode()).hexdigest()[:8]
    return f"{slug}__{qualname}-{h}"


def scrub(tree: Path) -> list[str]:
    """Remove caches, bytecode, build output and VCS data; returns what went."""
    gone = []
    for dirpath, dirnames, filenames in os.walk(tree, topdown=True):
        rel_dir = Path(dirpath).relative_to(tree)
        for d in list(dirnames):
            top = rel_dir == Path(".")
            if d in SCRUB_DIRS or d.endswith(".egg-info") or (top and d in SCRUB_TOP_DIRS):
                shutil.rmtree(Path(dirpath) / d, ignore_errors=True)
                dirnames.remove(d)
                gone.append((rel_dir / d).as_posix())
        for f in filenames:
            if f.endswith(SCRUB_SUFFIXES) or f.startswith(".coverage"):
                (Path(dirpath) / f).unlink(missing_ok=True)
                gone.append((rel_dir / f).as_posix())
    return gone


def fresh_repo(tree: Path) -> str:
    """Make `tree` a new git repository with one commit and nothing else."""
    git(tree, "init", "-q", "--template=")
    git(tree, "config", "core.logAllRefUpdates", "false")
    git(tree, "add", "-A")
    git(tree, "commit", "-q", "--no-verify", "-m", "Initial commit")
    sha = git(tree, "rev-parse", "HEAD").strip()
    for extra in ("hooks", "logs", "description", "COMMIT_EDITMSG", "info", "branches"):
        p = tree / ".git" / extra
        shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink(missing_ok=True)
    normalize_index(tree / ".git" / "index")
    return sha


def normalize_index(path: Path) -> None:
    """Zero the stat data (times, device, inode, owner) in a git index so two runs
    write the same bytes. Git then re-reads each file once to see it is unchanged."""
    data = bytearray(path.read_bytes())
    if data[:4] != b"DIRC":
        return
    version, count = struct.unpack(">II", data[4:12])
    if version not in (2, 3):
        return
    pos = 12
    for _ in range(count):
        data[pos:pos + 24] = bytes(24)             # ctime, mtime, dev, ino
        data[pos + 28:pos + 36] = bytes(8)         # uid, gid (mode at +24 stays)
        flags = struct.unpack(">H", data[pos + 60:pos + 62])[0]
        name_at = pos + 62 + (2 if version == 3 and flags & 0x4000 else 0)
        end = data.index(b"\0", name_at)
        length = end - pos
        pos += length + (8 - length % 8)            # 1-8 NULs pad each entry to 8 bytes
    body = bytes(data[:-20])
    path.write_bytes(body + hashlib.sha1(body).digest())


_HEADER = re.compile(r"^(?:diff --git |--- |\+\+\+ |rename from |rename to |copy from |copy to )(.*)$",
                     re.M)
_PARENT = re.compile(r"(?:^|[/\s])\.\.(?:[/\s]|$)")
# Every header line that carries a mode, as git apply and GNU patch read them:
# the mode is whatever follows (strtoul in base 8), "index A..B MODE" after the
# first space past the "..".
_MODE_LINE = re.compile(r"^(?:new file mode|deleted file mode|new mode|old mode)(.*)$", re.M)
_INDEX_LINE = re.compile(r"^index [^\n]*?\.\.[^ \n]*( [^\n]*)?$", re.M)
_SPACE = " \t\n\v\f\r"


def header_mode(text: str) -> int | None:
    """A mode header's value as git reads it (C strtoul, base 8, into an unsigned
    int: leading blanks and a sign allowed, digits up to the first non-octal), or
    None where there are no digits. `0120000`, `120000` and `+0120000` are one mode."""
    s = text.lstrip(_SPACE)
    neg = s[:1] == "-"
    if s[:1] in "+-":
        s = s[1:]
    digits = len(s) - len(s.lstrip("01234567"))
    if not digits:
        return None
    value = min(int(s[:digits], 8), (1 << 64) - 1)       # strtoul saturates at ULONG_MAX
    if neg:
        value = -value % (1 << 64)
    return value & 0xFFFFFFFF


def is_link_mode(text: str) -> bool:
    """Whether a mode header makes a symbolic link (stat.S_ISLNK of its value)."""
    mode = header_mode(text)
    return mode is not None and stat.S_ISLNK(mode)


def links_in(diff: str) -> str | None:
    """The first header line of `diff` whose mode is a symbolic link's, or None."""
    for m in _MODE_LINE.finditer(diff):
        if is_link_mode(m.group(1)):
            return m.group(0)
    for m in _INDEX_LINE.finditer(diff):
        if m.group(1) and is_link_mode(m.group(1)):
            return m.group(0)
    return None


_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')
_HIGH_OCTAL = re.compile(r"[23][0-7]{2}")        # a byte past ASCII, as git writes it


def unquoted_path(q: str) -> str | None:
    """A path git quoted C-style (what `git diff` writes for a name with bytes
    past ASCII under the default core.quotepath: `"docs/caf\\303\\251.md"`), as
    text; None for any other escape (git writes none for a printable ASCII
    character, so `\\155` for "m" is a disguise) or bytes that are no UTF-8."""
    out, i = bytearray(), 0
    while i < len(q):
        if q[i] != "\\":
            out += q[i].encode("utf-8")
            i += 1
        elif _HIGH_OCTAL.fullmatch(q[i + 1:i + 4]):
            out.append(int(q[i + 1:i + 4], 8))
            i += 4
        else:
            return None
    try:
        return out.decode("utf-8")
    except UnicodeDecodeError:
        return None


_HUNK = re.compile(r"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")


def headers_of(diff: str) -> str:
    """`diff` with the lines of its hunks left out, as git apply reads it: a hunk
    holds as many old and new lines as its `@@` line counts, so a line it holds
    that reads `--- x` (a deleted `-- x`) is content, never a file header (red
    team 11: an honest patch deleting such a line would have been refused)."""
    out: list[str] = []
    old = new = 0
    for line in diff.splitlines():
        if old > 0 or new > 0:
            if line.startswith("\\"):
                continue                # "\ No newline at end of file"
            tag = line[:1]
            if tag in (" ", ""):
                old, new = old - 1, new - 1
            elif tag == "-":
                old -= 1
            elif tag == "+":
                new -= 1
            else:                       # a corrupt hunk: git refuses it; read on as headers
                old = new = 0
                out.append(line)
            continue
        m = _HUNK.match(line)
        if m:
            old, new = int(m.group(1) or 1), int(m.group(2) or 1)     # "0": an empty side
        out.append(line)
    return "\n".join(out)


def unsafe_diff(diff: str) -> str | None:
    """Why a diff may not be applied on the host, or None. Every path must stay
    inside the workspace: no `..` component, no escaped names but git's own
    quoting of a UTF-8 name (judged as it unquotes: an honest `docs/café.md`
    scored 0 as "quoted", red team of 2026-12-05, 9), and no symbolic links,
    which could lead a later write out of the tree."""
    for m in _HEADER.finditer(headers_of(diff)):
        names = [unquoted_path(q) for q in _QUOTED.findall(m.group(1))]
        rest = _QUOTED.sub(" ", m.group(1))
        if None in names or "\\" in rest or '"' in rest:
            return f"quoted or escaped path in {m.group(0)[:120]!r}"
        if _PARENT.search(rest) or any(_PARENT.search(n) for n in names if n is not None):
            return f"unsafe path in {m.group(0)[:120]!r}"
    link = links_in(diff)
    if link:
        return f"creates or changes a symbolic link ({link[:80]!r})"
    return None


class ApplyLimits(NamedTuple):
    """Bounds for applying an untrusted diff on the host: git's binary patches
    inflate (a megabyte of patch can hold a gigabyte of file, and git holds it
    in memory twice), so the patch tools run under an address-space and a
    file-size rlimit, and against a deadline."""
    memory: int = 512 << 20          # RLIMIT_AS of git apply / patch, bytes
    file_bytes: int = 16 << 20       # RLIMIT_FSIZE: no file written may grow past this
    seconds: float = 60.0


class ApplyError(Exception):
    """A patch tool hit a bound (killed by a signal, or out of time)."""


def _limited(limits: ApplyLimits):
    def set_limits() -> None:        # runs in the child between fork and exec: no locks
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory, limits.memory))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    return set_limits


def _run_tool(argv: list[str], tree: Path, text: str, limits: ApplyLimits | None,
              deadline: float | None) -> subprocess.CompletedProcess:
    timeout = None if deadline is None else max(0.1, deadline - time.monotonic())
    try:
        raw = subprocess.run(argv, cwd=tree, input=text.encode("utf-8", "surrogateescape"),
                             capture_output=True, timeout=timeout,
                             preexec_fn=_limited(limits) if limits else None)
        res = subprocess.CompletedProcess(argv, raw.returncode, raw.stdout.decode("utf-8", "replace"),
                                          raw.stderr.decode("utf-8", "replace"))
    except subprocess.TimeoutExpired:
        raise ApplyError(f"{argv[0]} took over {limits.seconds if limits else timeout:.0f} s "
                         "to apply the patch") from None
    if limits is not None and res.returncode < 0:
        sig = -res.returncode
        why = ("a file over the size limit" if sig == signal.SIGXFSZ else
               "the memory limit" if sig in (signal.SIGSEGV, signal.SIGABRT, signal.SIGKILL) else
               f"signal {sig}")
        raise ApplyError(f"{argv[0]} was stopped applying the patch: {why}")
    if limits is not None and "out of memory" in res.stderr.lower():
        raise ApplyError(f"{argv[0]} ran out of memory applying the patch (limit "
                         f"{limits.memory >> 20} MiB)")
    return res


def apply_patch(tree: Path, text: str, limits: ApplyLimits | None = None) -> str | None:
    """Apply a unified diff to a tree (git apply, then patch -p1); the error line,
    or None. With `limits`, the tools run bounded and a bound that is hit raises
    ApplyError (the patch's doing, not a patch that merely does not apply)."""
    if not text.strip():
        return None
    why = unsafe_diff(text)
    if why:
        return why
    deadline = time.monotonic() + limits.seconds if limits else None
    # Never --unsafe-paths: a diff naming ../x must not write outside the tree (verify
    # applies agents' diffs as root). git apply also refuses to write through symlinks;
    # GNU patch, the fallback, ignores "dangerous" names with .. or absolute paths.
    res = _run_tool(["git", "apply", "--whitespace=nowarn", "-"], tree, text, limits, deadline)
    if res.returncode != 0:
        res2 = _run_tool(["patch", "-p1", "--forward", "--batch", "--silent"], tree, text, limits,
                         deadline) if shutil.which("patch") else res
        if res2.returncode != 0:
            msg = (res.stderr or res.stdout).strip().splitlines()
            return msg[0] if msg else "patch does not apply"
    return None


def make_patches(base: Path, *groups: dict[str, bytes | None]) -> list[str]:
    """Git-style diffs, one per group, each turning `base` (a tree) into `base`
    with that group's files applied. One scratch repository serves every group."""
    with tempfile.TemporaryDirectory(prefix="tf-patch-") as tmp:
        t = Path(tmp)
        every = [rel for g in groups for rel in g]
        for rel in every:
            if (base / rel).is_file():
                (t / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(base / rel, t / rel)
        git(t, "init", "-q", "--template=")
        git(t, "add", "-A")
        git(t, "commit", "-q", "--allow-empty", "--no-verify", "-m", "base")
        for g in groups:
            for rel, data in g.items():
                p = t / rel
                if data is None:
                    p.unlink(missing_ok=True)
                else:
                    p.parent.mkdir(parents=True, exist_ok=True)
                    p.write_bytes(data)
        git(t, "add", "-A")
        return [git(t, "diff", "--cached", "--binary", "--no-color", "--no-ext-diff",
                    "--full-index", "--no-renames", "--", *sorted(g)) if g else ""
                for g in groups]


def write_task(out_dir: Path, tid: str, src: Path, source_changes: dict[str, str | None],
               test_changes: dict[str, str | None], protected: list[str], build_record,
               leak_check=None, final_check=None) -> Path:
    """Assemble the task in a temp dir next to its destination, then rename it in.
    `final_check(tmp_dir)` runs on the finished directory first (it may raise)."""
    final = out_dir / tid
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{tid[:40]}-", dir=out_dir))
    try:
        ws = tmp / "workspace"
        copy_tree(src, ws)
        for rel, content in {**source_changes, **test_changes}.items():
            p = ws / rel
            if content is None:
                p.unlink(missing_ok=True)
            else:
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_text(content, encoding="utf-8")
        scrub(ws)
        if leak_check is not None:
            leak_check(ws)          # scrubs text leaks; raises LeakError on what remains
        base_commit = fresh_repo(ws)
        hidden = tmp / "hidden"
        for rel in protected:
            if (src / rel).is_file():
                (hidden / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src / rel, hidden / rel)
        def originals(rels):
            return {rel: (src / rel).read_bytes() if (src / rel).is_file() else None
                    for rel in sorted(rels)}

        gold, test_patch = make_patches(ws, originals(source_changes), originals(test_changes))
        n_files = sum(1 for _ in walk(ws))
        record = build_record(base_commit=base_commit, patch=gold, test_patch=test_patch,
                              workspace_files=n_files)
        atomic_write(tmp / "task.json", record.model_dump_json(indent=2) + "\n")
        atomic_write(tmp / "problem_statement.md", record.problem_statement)
        atomic_write(tmp / "gold.patch", gold)
        atomic_write(tmp / "test.patch", test_patch)
        # Normal modes, but the executable bit as committed: a workspace whose
        # `git status` shows changes before the agent acts misleads it.
        for p in [tmp, *tmp.rglob("*")]:
            if not p.is_symlink():
                p.chmod(0o755 if p.is_dir() or p.stat().st_mode & 0o100 else 0o644)
        if final_check is not None:
            final_check(tmp)
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
        return final
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


