"""Import cycles, checked in CI (.ci/run) and by pre-commit: no cycle between
taskforge's modules, counting imports inside functions too (a function-level
import hides a cycle, it does not remove it; a package's __init__ re-exporting
its own modules is not a cycle).

The layers, the Docker SDK's one home and the backends' own modules are
import-linter contracts in pyproject.toml (`lint-imports`), which this script
no longer checks by hand.

    python scripts/check_imports.py      # exit 1 and one line per violation
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "taskforge"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in PKG.rglob("*.py")
            if "runtime" not in p.relative_to(PKG).parts}


def imports(path: Path, known: set[str]) -> tuple[set[str], set[str]]:
    """(taskforge modules imported, third-party top-level names imported)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = module_name(path)
    out: set[str] = set()
    third: set[str] = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        for name in names:
            if not name.startswith("taskforge"):
                third.add(name.split(".")[0])
                continue
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name and name != here and not here.startswith(name + "."):
                out.add(name)
    return out, third


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def main() -> int:
    mods = modules()
    graph: dict[str, set[str]] = {}
    problems = []
    for name, path in sorted(mods.items()):
        deps, _ = imports(path, set(mods))
        # A package's __init__ that re-exports its children depends on them, not the reverse.
        graph[name] = {d for d in deps if not (path.name == "__init__.py" and d.startswith(name + "."))}
    for comp in cycles(graph):
        problems.append("import cycle: " + " -> ".join(comp))
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
