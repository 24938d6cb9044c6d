"""Static checks of a solution before it is graded.

What runs in the test process can defeat any in-process guard, so verify also
looks at what the solution changed: planted start-up hooks (sitecustomize,
.pth, dist-info with entry points) are removed, and new code that reaches into
the test runner, patches builtins, or makes objects equal to everything is
flagged. Findings are "kind: detail" strings; FATAL kinds score 0.
"""
from __future__ import annotations

import ast
import filecmp
import shutil
from pathlib import Path

from taskforge.layout import is_protected_path, walk

FATAL = {"runner-patched", "plugin-from-package", "read-test-file", "network",
         "runner-internals", "always-equal", "canary", "early-exit", "exit-code",
         "missing-results", "timeout", "builtins-patched"}
STARTUP_FILES = {"sitecustomize.py", "usercustomize.py"}
RUNNER_MODULES = {"_pytest", "pytest", "pluggy", "py"}


def is_fatal(finding: str) -> bool:
    return finding.split(":", 1)[0] in FATAL


def remove_startup_hooks(tree: Path, workspace: Path) -> list[str]:
    """Delete files that would run code at interpreter start or plant plugins."""
    notes = []
    for p in sorted(tree.rglob("*")):
        rel = p.relative_to(tree).as_posix()
        if not p.exists() or (workspace / rel).exists():
            continue
        name = p.name
        if (p.is_file() and (name in STARTUP_FILES or name.endswith(".pth"))) or (
                p.is_dir() and (name.endswith(".dist-info") or name.endswith(".egg-info"))):
            shutil.rmtree(p) if p.is_dir() else p.unlink()
            notes.append(f"removed-startup-hook: {rel}")
    return notes


def changed_sources(tree: Path, workspace: Path) -> list[str]:
    out = []
    for rel in walk(tree):
        if not rel.endswith(".py") or is_protected_path(rel):
            continue
        orig = workspace / rel
        if not orig.is_file() or not filecmp.cmp(tree / rel, orig, shallow=False):
            out.append(rel)
    return out


def _imports(tree: ast.AST) -> set[str]:
    mods = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            mods |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            mods.add(node.module.split(".")[0])
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id == "__import__" and node.args and isinstance(node.args[0], ast.Constant):
            mods.add(str(node.args[0].value).split(".")[0])
    return mods


def _dotted(node) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def _always_equal(fn: ast.FunctionDef) -> bool:
    body = [s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    return (len(body) == 1 and isinstance(body[0], ast.Return)
            and isinstance(body[0].value, ast.Constant) and body[0].value.value is True)


def scan_solution(tree: Path, workspace: Path) -> list[str]:
    """Findings for the package files a solution added or changed."""
    findings = []
    for rel in changed_sources(tree, workspace):
        try:
            new = ast.parse((tree / rel).read_bytes())
        except (SyntaxError, ValueError):
            continue                    # the tests will fail on it
        old_imports = set()
        if (workspace / rel).is_file():
            try:
                old_imports = _imports(ast.parse((workspace / rel).read_bytes()))
            except (SyntaxError, ValueError):
                pass
        for mod in sorted((_imports(new) - old_imports) & RUNNER_MODULES):
            findings.append(f"runner-internals: {rel} imports {mod}")
        for node in ast.walk(new):
            if isinstance(node, (ast.Assign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    d = _dotted(t)
                    root = d.split(".")[0]
                    if root in ("unittest", "_pytest", "pytest", "pluggy") and "." in d:
                        findings.append(f"runner-internals: {rel} assigns {d}")
                    if root in ("builtins", "__builtins__") and "." in d or d == "__builtins__":
                        findings.append(f"builtins-patched: {rel} assigns {d}")
            elif isinstance(node, ast.Call) and _dotted(node.func) == "setattr" and node.args:
                d = _dotted(node.args[0])
                if d.split(".")[0] in ("unittest", "_pytest", "pytest", "builtins", "sys"):
                    findings.append(f"runner-internals: {rel} calls setattr on {d}")
            elif isinstance(node, ast.FunctionDef) and node.name == "__eq__" and _always_equal(node):
                findings.append(f"always-equal: {rel} defines an __eq__ that is always True")
            elif isinstance(node, ast.Call) and _dotted(node.func) in ("sys.exit", "os._exit", "exit",
                                                                       "quit", "os.kill"):
                findings.append(f"exits: {rel} calls {_dotted(node.func)}")
    return findings
