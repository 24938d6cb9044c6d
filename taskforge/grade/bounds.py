"""What verify accepts from a solution before the host parses, applies or copies it.

The host does work on a solution before any sandbox does: it applies the patch
(git's binary patches inflate a thousandfold), copies and walks the tree, and
reads the changed sources. Each is bounded here, the same for every solution
form: the patch text itself (its size, and the files, paths and inflated sizes
its headers name, read before anything applies it), then the tree it made,
walked iteratively with every bound checked as it goes (a walk stops at the
first breach, so a 60,000-file or 3,000-deep tree costs no more than the limit).
A bound that is hit is the solution's doing: reward 0 with an `over-limit`
finding, never an exception and never None.
"""
from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel

from taskforge.package.writer import ApplyLimits


class Bounds(BaseModel):
    """The limits; generous for any honest solution (a reimplemented feature is a
    few files and a few hundred KiB), and each far below what hurts a host."""
    patch_bytes: int = 8 << 20            # the diff text
    file_bytes: int = 16 << 20            # any one file of the tree
    tree_bytes: int = 512 << 20           # the whole tree (apparent sizes: sparse files count)
    extra_files: int = 10_000             # entries beyond twice the workspace's files
    depth: int = 48                       # path components of any entry
    path_chars: int = 1024                # characters of any relative path
    apply_memory: int = 512 << 20         # RLIMIT_AS of git apply / patch
    apply_seconds: float = 60.0           # cut to the task's time limit by verify

    def max_entries(self, workspace_files: int) -> int:
        return 2 * workspace_files + self.extra_files

    def apply_limits(self, seconds: float | None = None) -> ApplyLimits:
        return ApplyLimits(memory=self.apply_memory, file_bytes=self.file_bytes,
                           seconds=min(self.apply_seconds, seconds or self.apply_seconds))


# ------------------------------------------------------------------ the patch text

_PATH_HEADER = re.compile(r"^(?:diff --git a/(\S+) b/|\+\+\+ (?:b/)?|rename to |copy to )(\S[^\n]*)$",
                          re.M)
_FILE_HEADER = re.compile(r"^(?:diff --git |\+\+\+ )", re.M)
_GIT_HEADER = re.compile(r"^diff --git ", re.M)
_BINARY_SIZE = re.compile(r"^(?:literal|delta) (\d+)[ \t\r]*$", re.M)


@dataclass
class PatchFacts:
    """What a diff's headers say it would create, read without applying it."""
    size: int                            # bytes, UTF-8
    files: int                           # file headers (an over-count never under-counts)
    paths: set[str] = field(default_factory=set)   # every path a header names
    largest_binary: int = 0              # the largest inflated size a binary hunk names


def path_depth(rel: str) -> int:
    return len([p for p in rel.split("/") if p])


def patch_facts(text: str) -> PatchFacts:
    """Headers of a git or plain unified diff: `diff --git` lines when there are
    any (each also has `---`/`+++`), else `+++` lines; paths from every header
    that names one; binary hunks' `literal N` / `delta N` (N: bytes once inflated)."""
    git = len(_GIT_HEADER.findall(text))
    facts = PatchFacts(size=len(text.encode("utf-8", "replace")), files=git or len(_FILE_HEADER.findall(text)))
    for m in _PATH_HEADER.finditer(text):
        for rel in (m.group(1), m.group(2)):
            if rel and rel != "/dev/null":
                facts.paths.add(rel.split("\t")[0].rstrip("\r"))
    facts.largest_binary = max((int(n) for n in _BINARY_SIZE.findall(text)), default=0)
    return facts


def _never(rel: str) -> bool:
    return False


def path_breach(rel: str, bounds: Bounds) -> str | None:
    depth = path_depth(rel)
    if depth > bounds.depth:
        return f"{rel[:80]}... is {depth} directories deep (at most {bounds.depth})"
    if len(rel) > bounds.path_chars:
        return f"a path of {len(rel)} characters (at most {bounds.path_chars}): {rel[:80]}..."
    return None


def patch_breach(facts: PatchFacts, bounds: Bounds, max_entries: int,
                 known: Callable[[str], bool] = _never) -> str | None:
    """Why a diff is refused before it is applied, or None. `known(rel)`: the
    workspace has that path already (its own depth is no breach)."""
    if facts.size > bounds.patch_bytes:
        return f"the patch is over {bounds.patch_bytes >> 20} MiB"
    if facts.files > max_entries:
        return f"the patch names {facts.files} files (at most {max_entries})"
    for rel in sorted(facts.paths, key=lambda r: (-path_depth(r), -len(r))):
        why = path_breach(rel, bounds)
        if why is None:
            break                        # the deepest left is within bounds; length next
        if not known(rel):
            return f"the patch names {why}"
    for rel in sorted(facts.paths, key=len, reverse=True):
        if len(rel) <= bounds.path_chars:
            break
        if not known(rel):
            return f"the patch names {path_breach(rel, bounds)}"
    if facts.largest_binary > bounds.file_bytes:
        return (f"a binary hunk of the patch inflates to {facts.largest_binary} bytes "
                f"(at most {bounds.file_bytes >> 20} MiB a file)")
    return None


# ------------------------------------------------------------------ the tree

@dataclass
class Survey:
    """An iterative walk of a tree that stopped at the first bound it broke."""
    entries: int = 0
    bytes: int = 0
    deepest: int = 0
    symlinks: list[str] = field(default_factory=list)   # relative paths, never followed
    breach: str | None = None


def entry_breach(rel: str, size: int, survey: Survey, bounds: Bounds, max_entries: int) -> str | None:
    """Why one more entry (`rel`, `size` bytes, already counted in `survey`)
    breaks a bound, or None."""
    why = path_breach(rel, bounds)
    if why:
        return why
    if size > bounds.file_bytes:
        return f"{rel[:120]} is {size} bytes (at most {bounds.file_bytes >> 20} MiB a file)"
    if survey.bytes > bounds.tree_bytes:
        return f"the tree is over {bounds.tree_bytes >> 20} MiB"
    if survey.entries > max_entries:
        return f"the tree has over {max_entries} files and directories"
    return None


def survey(root: Path, bounds: Bounds, max_entries: int, skip: frozenset[str] = frozenset(),
           known: Callable[[str, int], bool] | None = None) -> Survey:
    """Walk `root` with an explicit stack (never recursion: os.walk recurses in
    3.11), not following symlinks, skipping directories named in `skip`, and
    stop at the first breach: the walk never goes deeper or longer than the
    bounds, so its paths stay far below PATH_MAX. `known(rel, size)`: the
    workspace has that entry, as large (a task's own deep or big file is no breach)."""
    out = Survey()
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        with os.scandir(root / rel_dir if rel_dir else root) as it:
            for e in it:
                rel = f"{rel_dir}/{e.name}" if rel_dir else e.name
                st = e.stat(follow_symlinks=False)
                out.entries += 1
                size = st.st_size if stat.S_ISREG(st.st_mode) else 0
                out.bytes += size
                out.deepest = max(out.deepest, path_depth(rel))
                why = entry_breach(rel, size, out, bounds, max_entries)
                if why and not (known is not None and out.bytes <= bounds.tree_bytes
                                and out.entries <= max_entries and known(rel, size)):
                    out.breach = why
                    return out
                if stat.S_ISLNK(st.st_mode):
                    out.symlinks.append(rel)
                elif stat.S_ISDIR(st.st_mode) and e.name not in skip:
                    stack.append(rel)
    return out


def in_workspace(workspace: Path) -> Callable[[str, int], bool]:
    """`known` for survey: the workspace has `rel`, at least `size` bytes."""
    def known(rel: str, size: int) -> bool:
        try:
            return os.lstat(workspace / rel).st_size >= size
        except OSError:
            return False
    return known
