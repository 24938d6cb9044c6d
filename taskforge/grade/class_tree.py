"""The project's classes and their bases, read from the tree's source text.

An exception set is refused when two members may be related (a copy expecting
the base class passes for a solution raising the subclass, and the gold's run
drops exactly the sets whose original is the subclass: review
2026-12-04-copy-sets-review-2, finding 3). Related means one names the other
among its ancestors by name, or either is not defined in the tree (it may
derive from anything), so only classes the tree shows apart are swapped.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

_CLASS = re.compile(r"^[ \t]*class[ \t]+(\w+)[ \t]*(?:\(([^)]*)\))?[ \t]*:", re.M)
MAX_BYTES = 2_000_000        # a file larger than this is data, not class definitions
SKIP_DIRS = {"__pycache__", "node_modules", "venv", "site-packages", "build", "dist"}


def bases_of(text: str) -> dict[str, set[str]]:
    """Class name -> the last part of each base named in its header (keywords
    such as metaclass= left out), for every class statement of `text`."""
    out: dict[str, set[str]] = {}
    for m in _CLASS.finditer(text):
        names = set()
        for part in (m.group(2) or "").split(","):
            part = part.strip()
            if part and "=" not in part and not part.startswith("*"):
                names.add(part.rpartition(".")[2])
        out.setdefault(m.group(1), set()).update(names)
    return out


class ClassTree:
    """Ancestors by name of every class the tree's Python files define."""

    def __init__(self, bases: dict[str, set[str]]) -> None:
        self.bases = bases
        self._up: dict[str, frozenset[str]] = {}

    @classmethod
    def of(cls, root: Path) -> "ClassTree":
        bases: dict[str, set[str]] = {}
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS and not d.startswith(".")]
            for name in filenames:
                if not name.endswith(".py"):
                    continue
                path = Path(dirpath) / name
                try:
                    if path.is_symlink() or path.stat().st_size > MAX_BYTES:
                        continue
                    text = path.read_text(encoding="utf-8", errors="replace")
                except OSError:
                    continue
                for k, v in bases_of(text).items():
                    bases.setdefault(k, set()).update(v)
        return cls(bases)

    def ancestors(self, name: str) -> frozenset[str]:
        name = name.rpartition(".")[2]
        if name not in self._up:
            seen: set[str] = set()
            todo = list(self.bases.get(name, ()))
            while todo:
                b = todo.pop()
                if b not in seen:
                    seen.add(b)
                    todo += self.bases.get(b, ())
            self._up[name] = frozenset(seen)
        return self._up[name]

    def related(self, a: str, b: str) -> bool:
        """Whether the classes named `a` and `b` may be one another's base."""
        x, y = a.rpartition(".")[2], b.rpartition(".")[2]
        if x == y or x not in self.bases or y not in self.bases:
            return True
        return x in self.ancestors(y) or y in self.ancestors(x)
