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
            tree = ast.parse((root / rel).read_bytes())
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


def runner_users(image_scan, packages: list[str]) -> tuple[set[int], str] | None:
    """Files of the test runner (in the environment image) that import one of the
    repository's packages: (their ids in the image index, an example path), or None."""
    import re

    if image_scan is None:
        return None
    idx = image_scan.index
    users: set[int] = set()
    for pkg in packages:
        imports = re.compile(rf"^\s*(?:import|from)\s+{re.escape(pkg)}\b".encode(), re.M)
        for i in idx.files_with({pkg.encode()}):
            rel = idx.files[i]
            if not rel.endswith(".py") or not any(f"site-packages/{r}/" in rel
                                                  or rel.endswith(f"site-packages/{r}.py")
                                                  for r in RUNNER_PACKAGES):
                continue
            try:
                if imports.search((image_scan.root / rel).read_bytes()):
                    users.add(i)
            except OSError:
                continue
    if not users:
        return None
    # The runner imports the repository: a name any runner file uses is used by the runner.
    runner = {i for i, rel in enumerate(idx.files) if rel.endswith(".py") and any(
        f"site-packages/{r}/" in rel or rel.endswith(f"site-packages/{r}.py") for r in RUNNER_PACKAGES)}
    return runner, idx.files[min(users)]


def used_by_runner(name: str, users: tuple[set[int], str] | None, image_scan) -> str | None:
    """A runner file that imports the repository and names `name`, if any."""
    if users is None or len(name) < 3:
        return None
    ids, _ = users
    hit = ids & image_scan.index.files_with({name.encode()})
    return image_scan.index.files[min(hit)] if hit else None


def hopeless_check(root: Path, layout, image_scan):
    """(hopeless, late) for features.propose: `hopeless(symbol)` is a reason the symbol
    cannot be removed (the test runner uses it), `late(symbol)` says it is reached by
    computed name, so its removal often breaks far more than its own tests: such
    candidates are tried last rather than dropped (many still make good tasks)."""
    prefixes = dispatch_prefixes(root, layout.source_files)
    users = runner_users(image_scan, list(layout.packages))

    def hopeless(sym) -> str | None:
        where = used_by_runner(sym.name, users, image_scan)
        return f"the test runner uses it: {where} (which imports this repository)" if where else None

    def late(sym) -> bool:
        return sym.kind == "method" and dispatched(sym.name, sym.cls, prefixes) is not None

    return hopeless, late
