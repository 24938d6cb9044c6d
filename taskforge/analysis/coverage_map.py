"""Which tests execute which lines, from coverage.py's per-test contexts.

pytest-cov's `--cov-context=test` labels every line hit with the test id and
phase (`tests/t.py::test_x|run`). Lines run at import carry the empty context
and belong to nobody: a test is tied to a symbol only through its body lines.
Those import-time lines are kept apart (`ran_at_import`): a function whose body
ran while the package or the suite was imported is needed before any test
starts, so removing it breaks tests no test id points at.
"""
from __future__ import annotations

from pathlib import Path

from coverage import CoverageData


class CoverageMap:
    def __init__(self, by_file: dict[str, dict[int, frozenset[str]]],
                 imported: dict[str, frozenset[int]] | None = None):
        self.by_file = by_file
        self.imported = imported or {}

    @classmethod
    def load(cls, db: Path, container_root: str = "/workspace") -> "CoverageMap":
        data = CoverageData(basename=str(db))
        data.read()
        by_file: dict[str, dict[int, frozenset[str]]] = {}
        imported: dict[str, frozenset[int]] = {}
        prefix = container_root.rstrip("/") + "/"
        for measured in data.measured_files():
            if not measured.startswith(prefix):
                continue
            rel = measured[len(prefix):]
            lines: dict[int, frozenset[str]] = {}
            at_import: set[int] = set()
            for lineno, contexts in data.contexts_by_lineno(measured).items():
                ids = frozenset(c.rsplit("|", 1)[0] for c in contexts if c)
                if ids:
                    lines[lineno] = ids
                if "" in contexts:
                    at_import.add(lineno)
            by_file[rel] = lines
            imported[rel] = frozenset(at_import)
        return cls(by_file, imported)

    def tests_for(self, path: str, lines: set[int]) -> set[str]:
        table = self.by_file.get(path, {})
        out: set[str] = set()
        for ln in lines:
            out |= table.get(ln, frozenset())
        return out

    def ran_at_import(self, path: str, lines: set[int]) -> set[int]:
        """Those of `lines` that ran outside every test (import, collection)."""
        return set(lines) & self.imported.get(path, frozenset())

    def measured(self, path: str) -> bool:
        return path in self.by_file
