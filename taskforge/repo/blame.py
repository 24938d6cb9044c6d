"""When each line of a file last changed, from git blame: the I/O shell
around propose/recall.py's decisions on code age."""
from __future__ import annotations

import subprocess
from pathlib import Path

from taskforge.errors import UserError


def no_history(repo: Path) -> str | None:
    """Why blame dates would say nothing about when the code was written, or
    None: a shallow clone dates every old line at its cut-off commit, and a
    repository of one commit (an sdist taskforge committed, an import) at that
    commit."""
    res = subprocess.run(["git", "-C", str(repo), "rev-parse", "--is-shallow-repository"],
                         capture_output=True, text=True, timeout=60)
    if res.returncode != 0 or res.stdout.strip() != "false":
        return "a shallow clone"
    res = subprocess.run(["git", "-C", str(repo), "rev-list", "--count", "--max-count=2", "HEAD"],
                         capture_output=True, text=True, timeout=60)
    if res.returncode != 0 or res.stdout.strip() in ("", "0", "1"):
        return "one commit (an sdist or an import: no history)"
    return None


def require_history(repo: Path, source: str) -> None:
    """`--since` reads blame dates; refuse a clone that has none to give."""
    why = no_history(repo)
    if why:
        raise UserError(f"--since needs the repository's history: {source} is {why} "
                        "(clone it in full, or drop --since)")


IGNORE_REVS = ".git-blame-ignore-revs"


class Blame:
    """Per-file committer times of each line at HEAD, read once a file."""

    def __init__(self, repo: Path):
        self.repo = repo
        self._files: dict[str, list[int]] = {}

    def times(self, rel: str) -> list[int]:
        """Committer time (Unix) of each line of `rel`, line 1 first; [] when git
        cannot blame it (not committed, binary)."""
        if rel not in self._files:
            self._files[rel] = self._read(rel)
        return self._files[rel]

    def lines(self, rel: str, start: int, end: int) -> list[int]:
        """The times of lines start..end (1-based, inclusive) of `rel`."""
        return self.times(rel)[max(0, start - 1):end]

    def _read(self, rel: str) -> list[int]:
        try:
            # -w: a whitespace-only reformat does not make old code new; the
            # project's own list of mass reformats is skipped too.
            ignore = (["--ignore-revs-file", IGNORE_REVS]
                      if (self.repo / IGNORE_REVS).is_file() else [])
            res = subprocess.run(["git", "-C", str(self.repo), "blame", "-w", "--line-porcelain",
                                  *ignore, "HEAD", "--", rel], capture_output=True, timeout=300)
        except subprocess.TimeoutExpired:
            return []
        if res.returncode != 0:
            return []
        out: list[int] = []
        current = 0
        for line in res.stdout.split(b"\n"):
            if line.startswith(b"committer-time "):
                current = int(line.split()[1])
            elif line.startswith(b"\t"):
                out.append(current)
        return out


def span_times(blame: Blame, spans) -> list[int]:
    """The times of every line in `spans` (objects with path, start, end: the
    removed definitions), each line once however the spans nest."""
    seen: dict[tuple[str, int], int] = {}
    for s in spans:
        for i, t in enumerate(blame.lines(s.path, s.start, s.end), s.start):
            seen[(s.path, i)] = t
    return list(seen.values())
