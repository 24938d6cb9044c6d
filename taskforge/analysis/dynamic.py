"""Uses of a symbol that lexical references cannot see, found before any test runs.

Two kinds of candidate are risky although no repository code names them:

- methods reached by dynamic dispatch: a class (or a base class in the repo)
  calls `getattr(self, "visit_" + kind)` or `getattr(self, name)`, so every
  method with that prefix is called by name at run time (parsers, visitors);
  removing one breaks everything that dispatches through it;
- symbols the test runner itself uses: when pytest imports the repository
  (pluggy, iniconfig, packaging, ...), removing a name that pytest's own code
  refers to breaks the runner, and with it every test.

The runner's users are dropped before any test runs; dispatch targets often still
make good tasks (a handler only some inputs reach), so they are tried last.
"""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Any, cast

from taskforge.analysis.pyparse import parse as parse_python

# The packages that make up the test runner in a sandbox (what imports before any test).
RUNNER_PACKAGES = ("_pytest", "pytest", "pluggy", "iniconfig", "packaging", "py", "coverage",
                   "pytest_cov", "exceptiongroup", "tomli", "colorama", "tf_guard")


def dispatch_prefixes(root: Path, source_files: list[str]) -> dict[str, set[str]]:
    """{class name: prefixes of methods it calls by computed name}, inherited
    through bases defined in the repository ("" means any method)."""
    own: dict[str, set[str]] = {}
    bases: dict[str, list[str]] = {}
    for rel in source_files:
        try:
            tree = parse_python((root / rel).read_bytes())
        except (SyntaxError, ValueError, OSError):
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            bases.setdefault(node.name, []).extend(
                b.id if isinstance(b, ast.Name) else b.attr for b in node.bases
                if isinstance(b, (ast.Name, ast.Attribute)))
            own.setdefault(node.name, set()).update(_dispatch_in(node))
    out: dict[str, set[str]] = {}

    def resolve(name: str, seen: frozenset) -> set[str]:
        acc = set(own.get(name, set()))
        for b in bases.get(name, []):
            if b not in seen:
                acc |= resolve(b, seen | {b})
        return acc

    for name in own:
        got = resolve(name, frozenset({name}))
        if got:
            out[name] = got
    return out


def _dispatch_in(cls: ast.ClassDef) -> set[str]:
    """Prefixes of computed-name `getattr(self, ...)` lookups in the class's ordinary
    methods whose result is used as a handler: called, returned or bound to a name.
    (Reads of data attributes, as in `yield name, getattr(self, name)`, do not count.)"""
    out: set[str] = set()
    for fn in cls.body:
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or fn.name.startswith("__"):
            continue
        for parent in ast.walk(fn):
            value: ast.expr | None
            if isinstance(parent, ast.Call):
                value = parent.func
            elif isinstance(parent, (ast.Return, ast.Assign, ast.NamedExpr)):
                value = parent.value
            else:
                continue
            prefix = _getattr_prefix(value)
            if prefix is not None:
                out.add(prefix)
    return out


def _getattr_prefix(node) -> str | None:
    """For `getattr(self|cls, <computed>)`: the constant prefix of the name ('' if none)."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "getattr" and len(node.args) >= 2):
        return None
    obj, name = node.args[0], node.args[1]
    if not (isinstance(obj, ast.Name) and obj.id in ("self", "cls")):
        return None
    if isinstance(name, ast.Constant):
        return None                       # a literal name is a lexical reference
    if isinstance(name, ast.BinOp) and isinstance(name.op, ast.Add) \
            and isinstance(name.left, ast.Constant) and isinstance(name.left.value, str):
        return name.left.value
    if isinstance(name, ast.JoinedStr) and name.values and isinstance(name.values[0], ast.Constant):
        return str(name.values[0].value)
    return ""


def dispatched(method_name: str, cls: str | None, prefixes: dict[str, set[str]]) -> str | None:
    """The prefix under which `cls.method_name` is called by computed name, if any."""
    if cls is None or method_name.startswith("__"):
        return None
    for p in sorted(prefixes.get(cls, ())):
        if method_name.startswith(p):
            return p
    return None


def runner_users(image_scan, packages: list[str], python: str = "3.11"
                 ) -> tuple[set[int], set[int]] | None:
    """When the test runner (in the environment image) imports one of the
    repository's packages on this Python: (ids of the runner files that import it,
    ids of every runner file), else None. An import under
    `if sys.version_info < (3, 11)` does not count."""
    if image_scan is None:
        return None
    idx = image_scan.index
    version = tuple(int(x) for x in python.split(".")[:2])
    users: set[int] = set()
    for pkg in packages:
        for i in idx.files_with({pkg.encode()}):
            rel = idx.files[i]
            if not _is_runner_file(rel):
                continue
            try:
                if _imports(parse_python((image_scan.root / rel).read_bytes()), pkg, version):
                    users.add(i)
            except (OSError, SyntaxError, ValueError):
                continue
    if not users:
        return None
    return users, {i for i, rel in enumerate(idx.files) if _is_runner_file(rel)}


def _is_runner_file(rel: str) -> bool:
    return rel.endswith(".py") and "!" not in rel and any(
        f"site-packages/{r}/" in rel or rel.endswith(f"site-packages/{r}.py") for r in RUNNER_PACKAGES)


def _imports(tree: ast.Module, pkg: str, version: tuple[int, ...]) -> bool:
    """Does this module import `pkg` at run time on `version`?"""
    def walk(nodes, live: bool) -> bool:
        for n in nodes:
            if isinstance(n, ast.If):
                cond = _version_test(n.test, version)
                if walk(n.body, live and cond is not False) or walk(n.orelse, live and cond is not True):
                    return True
                continue
            if live and isinstance(n, ast.Import) and any(
                    a.name == pkg or a.name.startswith(pkg + ".") for a in n.names):
                return True
            if live and isinstance(n, ast.ImportFrom) and not n.level and n.module and (
                    n.module == pkg or n.module.startswith(pkg + ".")):
                return True
            for field in ("body", "orelse", "finalbody", "handlers"):
                inner = getattr(n, field, None)
                if isinstance(inner, list) and walk(inner, live):
                    return True
        return False

    return walk(tree.body, True)


def _version_test(test, version: tuple[int, ...]) -> bool | None:
    """The value of `sys.version_info <op> (3, N)` on `version`, or None if it is not one."""
    import operator

    if not (isinstance(test, ast.Compare) and len(test.ops) == 1
            and isinstance(test.left, ast.Attribute) and test.left.attr == "version_info"
            and isinstance(test.comparators[0], ast.Tuple)):
        return None
    try:
        # An element that is not a constant has no .value: AttributeError, below.
        other = tuple(int(e.value) for e in cast("list[Any]", test.comparators[0].elts))
    except (AttributeError, TypeError, ValueError):
        return None
    ops = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge}
    op = ops.get(type(test.ops[0]))
    return op(version[:len(other)], other) if op else None


def used_by_runner(sym, users: tuple[set[int], set[int]] | None, image_scan) -> str | None:
    """A runner file that uses `sym`, when the runner imports the repository.
    Top-level names count in the files that import it. Methods are called on objects
    passed anywhere in the runner, so any runner file counts, but only for a
    distinctive name (`set_blocked`, `load_setuptools_entrypoints`): a `get` or
    `parse` there is somebody else's."""
    if users is None or len(sym.name) < 3:
        return None
    idx = image_scan.index
    if sym.kind == "method":
        if not ("_" in sym.name.strip("_") or len(sym.name) >= 12) or sym.name.startswith("_"):
            return None
        ids = users[1]
    else:
        ids = users[0]
    hit = ids & idx.files_with({sym.name.encode()})
    return idx.files[min(hit)] if hit else None


def hopeless_check(root: Path, layout, image_scan, python: str = "3.11"):
    """(hopeless, late) for features.propose: `hopeless(symbol)` is a reason the symbol
    cannot be removed (the test runner uses it), `late(symbol)` says it is reached by
    computed name, so its removal often breaks far more than its own tests: such
    candidates are tried last rather than dropped (many still make good tasks)."""
    prefixes = dispatch_prefixes(root, layout.source_files)
    users = runner_users(image_scan, list(layout.packages), python)

    def hopeless(sym) -> str | None:
        where = used_by_runner(sym, users, image_scan)
        return f"the test runner uses it: {where} (which imports this repository)" if where else None

    def late(sym) -> bool:
        return sym.kind == "method" and dispatched(sym.name, sym.cls, prefixes) is not None

    return hopeless, late
