"""Do the hidden tests constrain the feature? Checked on real runs before a task
is written.

Two probes, both built from the gold source with libcst and run against the
hidden tests in the generation worker:
- stand-ins: every removed body replaced by something that does no work
  (`return None`, `raise NotImplementedError`, return the first argument,
  swallow every exception: a generator that catches what its `with` block
  raises, or a `contextlib.suppress` for a function that returns a context
  manager), and one per exact string the statement states (`return "..."`: the
  statement must not be an answer key). A stand-in that passes every hidden
  test is a reward for doing nothing: the task is dropped.
- gold mutants: one small change to the removed code (a flipped comparison, a
  negated condition, a dropped statement, a return of None, an off-by-one
  constant). The share that fails at least one hidden test is the task's
  mutation score; below the bar the tests cannot tell a wrong implementation
  from a right one.
- partial solutions (issue 24): the gold with one removed public definition
  stubbed (`raise NotImplementedError`, or a plausible constant: a literal the
  gold returns, else one its return annotation names), and stand-ins that raise
  the exception the hidden tests expect, with the text they match
  (`pytest.raises(X, match=...)`, `assertRaises(X)`, `assertRaisesRegex(X, r)`).
  A partial solution that passes every graded hidden test means part of the
  feature is paid for without being written: the task is dropped ("a removed
  symbol is not needed by the graded tests"). Dropping is the honest choice
  that needs no second removal: shrinking the feature to what the tests need
  would have to be validated again (suite green, hidden tests red, leaks).
  Probes run in the worker's warm sandbox; those that change only function
  bodies share one pytest session (validate/variants.py), the rest get one each.
"""
from __future__ import annotations

import ast
import builtins
import random
import re
from collections.abc import Iterable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from typing import cast

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from taskforge.analysis.pyparse import dotted_parts
from taskforge.analysis.pyparse import parse as parse_python
from taskforge.grade.copies import TestRef, find_def, test_ref
from taskforge.models import Adequacy
from taskforge.remove.transform import branch_code
from taskforge.validate.variants import Batch, Outcome, Variant, run_variants

STANDINS = ("return-none", "raise", "identity", "swallow")
CONSTANT = "constant:"          # + a Python literal: `return <literal>`
RAISES = "raises:"              # + a Python expression: `raise <expression>`
MAX_EXPECTED = 3                # stand-ins that raise what the hidden tests expect
MAX_PARTIALS = 6                # partial solutions tried (one pytest session each; raise stubs first)
MAX_CONSTANTS = 3
MAX_MUTANTS = 6
MIN_MUTATION_SCORE = 0.5


@dataclass
class Targets:
    """Which definitions of a module are the removed code: qualified names
    relative to the module (`Class.method`), or every one for a whole module."""
    names: set[str] = field(default_factory=set)
    whole: bool = False
    # Removal.BRANCH: mutants only inside these lines (the removed arm): the rest
    # of the function stayed in the workspace, and the graded tests need not pin it
    lines: tuple[int, int] | None = None

    def hit(self, path: list[str]) -> bool:
        return self.whole or any(".".join(path[:i]) in self.names for i in range(1, len(path) + 1))


def targets_of(symbols, whole_module: str | None) -> dict[str, Targets]:
    """{file: Targets} for the removed symbols."""
    out: dict[str, Targets] = {}
    for s in symbols:
        t = out.setdefault(s.path, Targets())
        if s.kind == "module" or s.module == whole_module:
            t.whole = True
        else:
            t.names.add(s.qualname[len(s.module) + 1:])
    return out


def _doc(body: cst.BaseSuite) -> list[cst.BaseStatement]:
    if isinstance(body, cst.IndentedBlock) and body.body:
        first = body.body[0]
        if isinstance(first, cst.SimpleStatementLine) and len(first.body) == 1 and isinstance(
                first.body[0], cst.Expr) and isinstance(first.body[0].value,
                                                         (cst.SimpleString, cst.ConcatenatedString)):
            return [first]
    return []


def _is_generator(fn: cst.FunctionDef) -> bool:
    found = False

    class V(cst.CSTVisitor):
        def visit_FunctionDef(self, node):
            return node is fn            # nested defs have their own yields

        def visit_Lambda(self, node):
            return False

        def visit_Yield(self, node):
            nonlocal found
            found = True

    fn.visit(V())
    return found


def _first_arg(fn: cst.FunctionDef, in_class: bool) -> str | None:
    params = [*fn.params.posonly_params, *fn.params.params]
    static = any(isinstance(d.decorator, cst.Name) and d.decorator.value == "staticmethod"
                 for d in fn.decorators)
    if in_class and not static:
        params = params[1:]
    return params[0].name.value if params else None


def standin_body(kind: str, fn: cst.FunctionDef, in_class: bool) -> list[str]:
    """Source lines of a body that does no work."""
    if kind.startswith(CONSTANT):
        return [f"return {kind[len(CONSTANT):]}"]
    if kind.startswith(RAISES):
        return [f"raise {kind[len(RAISES):]}"]
    if kind == "raise":
        return ["raise NotImplementedError"]
    if fn.name.value == "__init__":
        return ["pass"]
    if kind == "identity":
        arg = _first_arg(fn, in_class)
        return [f"return {arg}" if arg else "return None"]
    if kind == "swallow":
        if _is_generator(fn):
            return ["try:", "    yield", "except BaseException:", "    pass"]
        return ["return __import__('contextlib').suppress(BaseException)"]
    return ["return None"]


class _Bodies(cst.CSTTransformer):
    """Replace the bodies of target functions (docstrings kept)."""

    def __init__(self, targets: Targets, kind: str):
        self.targets, self.kind = targets, kind
        self.path: list[str] = []
        self.classes: list[bool] = []
        self.changed = False

    def visit_ClassDef(self, node):
        self.path.append(node.name.value)
        self.classes.append(True)

    def leave_ClassDef(self, original, updated):
        self.path.pop()
        self.classes.pop()
        return updated

    def visit_FunctionDef(self, node):
        self.path.append(node.name.value)
        self.classes.append(False)
        return False if self.targets.hit(self.path) else True   # a replaced body: no descent

    def leave_FunctionDef(self, original, updated):
        hit = self.targets.hit(self.path)
        self.path.pop()
        self.classes.pop()
        if not hit:
            return updated
        in_class = bool(self.classes) and self.classes[-1]
        lines = standin_body(self.kind, original, in_class)
        stmts = cst.parse_module("\n".join(lines) + "\n").body
        self.changed = True
        return updated.with_changes(body=cst.IndentedBlock(body=[*_doc(original.body), *stmts]))


def standins(files: dict[str, str], targets: dict[str, Targets],
             constants: Sequence[str] = (), raises: Sequence[str] = ()
             ) -> dict[str, dict[str, str]]:
    """{stand-in name: {file: content}}, for the files holding removed code.
    `constants` are Python literals (the statement's required strings);
    `raises` are exception expressions (`expected_raises`)."""
    out: dict[str, dict[str, str]] = {}
    trees = {rel: cst.parse_module(code) for rel, code in files.items()}   # immutable: parsed once
    for kind in [*STANDINS, *(CONSTANT + c for c in constants[:MAX_CONSTANTS]),
                 *(RAISES + r for r in raises[:MAX_EXPECTED])]:
        changes = {}
        for rel in files:
            tr = _Bodies(targets[rel], kind)
            new = trees[rel].visit(tr)
            if tr.changed:
                changes[rel] = new.code
        if changes and changes not in out.values():
            out[kind] = changes
    return out


# ---------------------------------------------------------------- gold mutants

_FLIP = {cst.Equal: cst.NotEqual, cst.NotEqual: cst.Equal, cst.LessThan: cst.GreaterThanEqual,
         cst.GreaterThanEqual: cst.LessThan, cst.GreaterThan: cst.LessThanEqual,
         cst.LessThanEqual: cst.GreaterThan, cst.In: cst.NotIn, cst.NotIn: cst.In,
         cst.Is: cst.IsNot, cst.IsNot: cst.Is}


def _sites(fn: cst.FunctionDef) -> list[tuple[str, cst.CSTNode, cst.CSTNode]]:
    """(operator, node, replacement) for every simple mutation in a function."""
    out: list[tuple[str, cst.CSTNode, cst.CSTNode]] = []
    doc = set(map(id, _doc(fn.body)))

    class V(cst.CSTVisitor):
        def visit_ComparisonTarget(self, node):
            new = _FLIP.get(type(node.operator))
            if new is not None:
                out.append(("flip-comparison", node, node.with_changes(operator=new())))

        def visit_If(self, node):
            test = node.test
            wrapped = test.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()]) \
                if hasattr(test, "lpar") and not test.lpar else test
            out.append(("negate-condition", node, node.with_changes(
                test=cst.UnaryOperation(operator=cst.Not(), expression=wrapped))))

        def visit_Return(self, node):
            if node.value is not None and not (isinstance(node.value, cst.Name)
                                               and node.value.value == "None"):
                out.append(("return-none", node, node.with_changes(value=cst.Name("None"))))

        def visit_BinaryOperation(self, node):
            swap = {cst.Add: cst.Subtract, cst.Subtract: cst.Add}.get(type(node.operator))
            if swap is not None:
                out.append(("swap-arithmetic", node, node.with_changes(operator=swap())))

        def visit_Integer(self, node):
            try:        # not ast.literal_eval: it parses, and workers run at once
                n = int(node.value.replace("_", ""), 0)
            except ValueError:
                return
            out.append(("off-by-one", node, node.with_changes(value=str(n + 1))))

        def visit_Name(self, node):
            if node.value in ("True", "False"):
                out.append(("swap-bool", node, node.with_changes(
                    value="False" if node.value == "True" else "True")))

        def visit_SimpleStatementLine(self, node):
            if id(node) in doc or len(node.body) != 1:
                return
            st = node.body[0]
            if isinstance(st, (cst.Assign, cst.AugAssign, cst.AnnAssign)) or (
                    isinstance(st, cst.Expr) and isinstance(st.value, cst.Call)):
                out.append(("drop-statement", node, node.with_changes(body=[cst.Pass()])))

    fn.body.visit(V())
    return out


class _Find(cst.CSTVisitor):
    def __init__(self, targets: Targets):
        self.targets = targets
        self.path: list[str] = []
        self.found: list[cst.FunctionDef] = []

    def visit_ClassDef(self, node):
        self.path.append(node.name.value)

    def leave_ClassDef(self, node):
        self.path.pop()

    def visit_FunctionDef(self, node):
        self.path.append(node.name.value)
        if self.targets.hit(self.path):
            self.found.append(node)
            return False
        return True

    def leave_FunctionDef(self, node):
        self.path.pop()


@dataclass
class GoldMutant:
    operator: str
    file: str
    changes: dict[str, str]


def gold_mutants(files: dict[str, str], targets: dict[str, Targets], seed: str,
                 limit: int = MAX_MUTANTS) -> list[GoldMutant]:
    """Up to `limit` one-change mutants of the removed code, spread over operators
    and definitions, chosen by `seed` (the task id: the same every run)."""
    trees = {rel: cst.parse_module(code) for rel, code in files.items()}
    sites = []
    for rel, tree in sorted(trees.items()):
        finder = _Find(targets[rel])
        tree.visit(finder)
        span = targets[rel].lines
        where = MetadataWrapper(tree, unsafe_skip_copy=True).resolve(PositionProvider) if span else {}
        for fn in finder.found:
            for op, node, new in _sites(fn):
                if span is None or span[0] <= where[node].start.line <= span[1]:
                    sites.append((op, rel, node, new))
    rng = random.Random(seed)
    rng.shuffle(sites)
    picked: list[tuple[str, str, cst.CSTNode, cst.CSTNode]] = []
    ops: dict[str, list[tuple[str, str, cst.CSTNode, cst.CSTNode]]] = {}
    for site in sites:                      # round-robin over operators
        ops.setdefault(site[0], []).append(site)
    queues = [ops[k] for k in sorted(ops)]
    while len(picked) < limit and any(queues):
        for q in queues:
            if q and len(picked) < limit:
                picked.append(q.pop())
    out = []
    for op, rel, node, new in picked:
        # node is inside the module, so the module is what comes back
        code = cast(cst.Module, trees[rel].deep_replace(node, new)).code
        if code != files[rel]:
            out.append(GoldMutant(operator=op, file=rel, changes={rel: code}))
    return out


# ---------------------------------------------------------------- partial solutions

class Stub(StrEnum):
    """How one removed definition is left unwritten in a partial solution."""
    RAISE = "raise"             # raise NotImplementedError
    CONSTANT = "constant"       # return a plausible constant


@dataclass(frozen=True)
class Unit:
    """A removed public definition a partial solution may leave unwritten:
    `name` is relative to its module (`Class.method`)."""
    file: str
    name: str
    is_class: bool = False


# Return annotations -> a constant of that type.
_BY_ANNOTATION = {"int": "0", "float": "0.0", "str": "''", "bytes": "b''", "bool": "False",
                  "list": "[]", "dict": "{}", "tuple": "()", "set": "set()"}
_LITERALS = (cst.Integer, cst.Float, cst.SimpleString, cst.List, cst.Dict, cst.Tuple,
             cst.Set, cst.UnaryOperation)


def units_of(files: dict[str, str], targets: dict[str, Targets]) -> list[Unit]:
    """The public definitions of the removed code, in source order: top-level
    functions and classes, and the public methods of a removed class (a class
    is a unit, and so is each of its methods). Dunders other than `__call__`
    are left to the class unit."""
    out: list[Unit] = []
    for rel in sorted(files):
        t = targets[rel]
        for node in cst.parse_module(files[rel]).body:
            if not isinstance(node, (cst.FunctionDef, cst.ClassDef)):
                continue
            name = node.name.value
            inside = t.hit([name])
            if isinstance(node, cst.FunctionDef):
                if inside and not name.startswith("_"):
                    out.append(Unit(rel, name))
                continue
            if name.startswith("_"):
                continue                  # a private class: not the interface
            if inside:
                out.append(Unit(rel, name, is_class=True))
            body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
            for m in body:
                if isinstance(m, cst.FunctionDef) and t.hit([name, m.name.value]) and (
                        not m.name.value.startswith("_") or m.name.value == "__call__"):
                    out.append(Unit(rel, f"{name}.{m.name.value}"))
    return out


def _own_returns(fn: cst.FunctionDef) -> list[cst.BaseExpression]:
    """The values of `fn`'s own return statements (not those of nested defs)."""
    found: list[cst.BaseExpression] = []

    class V(cst.CSTVisitor):
        def visit_FunctionDef(self, node):
            return node is fn

        def visit_Lambda(self, node):
            return False

        def visit_Return(self, node):
            if node.value is not None:
                found.append(node.value)

    fn.visit(V())
    return found


def plausible_constant(fn: cst.FunctionDef) -> str | None:
    """A constant a partial solution might return for `fn`: the first literal the
    gold itself returns, else the empty value of its return annotation, else
    None when the gold returns something (None when the gold returns nothing:
    then `return None` is the gold's own behaviour, not a stub)."""
    if fn.name.value == "__init__":
        return None
    values = _own_returns(fn)
    for v in values:
        if isinstance(v, _LITERALS) or (isinstance(v, cst.Name) and v.value in ("True", "False")):
            return cst.Module([]).code_for_node(v)
    if fn.returns is not None:
        ann = fn.returns.annotation
        base = ann.value if isinstance(ann, cst.Subscript) else ann
        name = base.value if isinstance(base, cst.Name) else None
        if name is not None and name.lower() in _BY_ANNOTATION:
            return _BY_ANNOTATION[name.lower()]
    if any(not (isinstance(v, cst.Name) and v.value == "None") for v in values):
        return "None"
    return None


def _function(tree: cst.Module, name: str) -> cst.FunctionDef | None:
    """The top-level function or method `name` (`Class.method`) of `tree`."""
    body: Sequence[cst.CSTNode] = tree.body
    found: cst.FunctionDef | cst.ClassDef | None = None
    for part in name.split("."):
        found = next((n for n in body if isinstance(n, (cst.FunctionDef, cst.ClassDef))
                      and n.name.value == part), None)
        if found is None:
            return None
        body = found.body.body if isinstance(found.body, cst.IndentedBlock) else ()
    return found if isinstance(found, cst.FunctionDef) else None


def stub(code: str, unit: Unit, how: Stub, tree: cst.Module | None = None) -> str | None:
    """`code` with `unit`'s body (or every method of a class unit) replaced, or
    None when that stub does not apply (a constant for a class, or for a
    function that returns nothing). `tree`: `code` already parsed."""
    tree = tree if tree is not None else cst.parse_module(code)
    kind = "raise"
    if how is Stub.CONSTANT:
        fn = None if unit.is_class else _function(tree, unit.name)
        const = plausible_constant(fn) if fn is not None else None
        if const is None:
            return None
        kind = CONSTANT + const
    tr = _Bodies(Targets(names={unit.name}), kind)
    new = tree.visit(tr).code
    return new if tr.changed and new != code else None


def partials(files: dict[str, str], targets: dict[str, Targets],
             limit: int = MAX_PARTIALS) -> dict[str, dict[str, str]]:
    """{`stub-raise:Class.method` ...: {file: content}}: the gold with one
    removed public definition stubbed, every unit both ways where it applies.
    Raising stubs come first (cheapest to fail); at most `limit`."""
    out: dict[str, dict[str, str]] = {}
    units = units_of(files, targets)
    if len(units) < 2:
        # One public unit: stubbing it is stubbing the whole feature, which the
        # stand-ins (raise, return None, the constants) already try. Probing it
        # again tripled generate's time on single-function features.
        return out
    trees: dict[str, cst.Module] = {}
    for how in Stub:
        for u in units:
            if len(out) >= limit:
                return out
            tree = trees.get(u.file) or trees.setdefault(u.file, cst.parse_module(files[u.file]))
            new = stub(files[u.file], u, how, tree)
            if new is not None:
                out[f"stub-{how.value}:{u.name}"] = {u.file: new}
    return out


# ------------------------------------------------ what the hidden tests expect raised

@dataclass(frozen=True)
class Expected:
    """An exception a hidden test expects: an expression that names the class
    from the package's own code (`__import__('pkg.errors', fromlist=['E']).E`
    or a builtin), and a text that matches what the test matches."""
    exc: str
    text: str = ""

    @property
    def raise_expr(self) -> str:
        return f"{self.exc}({self.text!r})" if self.text else self.exc


_RAISES_FUNCS = {"raises"}
_ASSERT_RAISES = {"assertRaises", "assertRaisesRegex", "assertRaisesRegexp", "failUnlessRaises"}


def text_matching(pattern: str) -> str:
    """A text `re.search(pattern, text)` finds: the pattern read as a literal
    (escapes dropped, anchors stripped; then its metacharacters dropped too), or
    "" when none of those matches."""
    lit = re.sub(r"\\(.)", r"\1", pattern.removeprefix("^").removesuffix("$"))
    bare = re.sub(r"\\(.)|[\^$()\[\]+*?{}|]", lambda m: m.group(1) or "", pattern)
    for cand in (lit, bare, pattern):
        try:
            if re.search(pattern, cand):
                return cand
        except re.error:
            return ""
    return ""


def _imports(tree: ast.Module) -> dict[str, tuple[str, str | None]]:
    """local name -> (module, attribute or None for a module) for absolute imports."""
    out: dict[str, tuple[str, str | None]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                out[a.asname or a.name] = (node.module, a.name)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    out[a.asname] = (a.name, None)
                else:
                    top = a.name.split(".")[0]
                    out.setdefault(top, (top, None))
    return out


def exception_expr(node: ast.expr, imports: dict[str, tuple[str, str | None]]) -> str | None:
    """An expression for the exception class `node` names in a test module,
    valid inside the package's code: a builtin by name, anything imported as
    `__import__(module, fromlist=[name]).name` (lazily, so no import cycle).
    None for a class the test module defines itself or a name it cannot place."""
    if isinstance(node, ast.Tuple) and node.elts:
        node = node.elts[0]
    parts = dotted_parts(node)
    if parts is None:
        return None
    head, rest = parts[0], parts[1:]
    if head in imports:
        module, attr = imports[head]
        path = ([attr] if attr else []) + rest
        if not path:
            return None
        if attr is None and len(path) > 1:        # `import a` then `a.b.Error`
            module, path = ".".join([module, *path[:-1]]), path[-1:]
        elif attr is not None and len(path) > 1:  # `from a import b` then `b.Error`
            module, path = f"{module}.{attr}", path[1:]
        if len(path) != 1:
            return None
        return f"__import__({module!r}, fromlist=[{path[0]!r}]).{path[0]}"
    if not rest:
        obj = getattr(builtins, head, None)
        if isinstance(obj, type) and issubclass(obj, BaseException):
            return head
    return None


def _str_arg(node: ast.expr | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def expected_in(fn: ast.AST, imports: dict[str, tuple[str, str | None]]) -> list[Expected]:
    """The exceptions (with text) one test function expects, in source order."""
    out: list[Expected] = []
    for node in ast.walk(fn):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
        if name in _RAISES_FUNCS:
            match = next((_str_arg(k.value) for k in node.keywords if k.arg == "match"), None)
        elif name in _ASSERT_RAISES:
            match = _str_arg(node.args[1]) if name != "assertRaises" and name != \
                "failUnlessRaises" and len(node.args) > 1 else next(
                (_str_arg(k.value) for k in node.keywords if k.arg == "expected_regex"), None)
        else:
            continue
        exc = exception_expr(node.args[0], imports)
        if exc is not None:
            out.append(Expected(exc, text_matching(match) if match else ""))
    return out


def expected_raises(sources: dict[str, str], f2p: Iterable[str]) -> list[Expected]:
    """What the hidden tests expect raised, most often expected first (ties in
    first-seen order). `sources`: {test file: its text} of the hidden tests."""
    counts: dict[Expected, int] = {}
    trees: dict[str, tuple[ast.Module, dict[str, tuple[str, str | None]]]] = {}
    seen: set[TestRef] = set()
    for nid in f2p:
        ref = test_ref(nid)
        if ref is None or ref in seen or ref.file not in sources:
            continue
        seen.add(ref)
        if ref.file not in trees:
            try:
                tree = parse_python(sources[ref.file])
            except (SyntaxError, ValueError):
                continue
            trees[ref.file] = (tree, _imports(tree))
        tree, imports = trees[ref.file]
        fn = find_def(tree, ref)
        for e in expected_in(fn, imports) if fn is not None else ():
            counts[e] = counts.get(e, 0) + 1
    return sorted(counts, key=lambda e: -counts[e])


def hidden_sources(root, f2p: Iterable[str]) -> dict[str, str]:
    """{test file: text} under `root` for the files the hidden test ids name."""
    out = {}
    for ref in filter(None, map(test_ref, f2p)):
        if ref.file not in out:
            try:
                out[ref.file] = (root / ref.file).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
    return out


def check(worker, f2p: list[str], symbols, whole_module: str | None, seed: str,
          timeout: float, mutants: int = MAX_MUTANTS, constants: Sequence[str] = (),
          partial: bool = True, batch: bool = True,
          arm: tuple[int, int] | None = None) -> tuple[Adequacy, float]:
    """Run the stand-ins, the partial solutions and the gold mutants against the
    hidden tests on the worker (its tree is the gold: the source as cloned).
    Those that change only function bodies share one pytest session, switched
    in after collection (validate/variants.py); the rest get one session each.
    Returns the measures and the test seconds spent; stops at the first
    stand-in or partial solution that passes every test. `arm`: the lines of
    a removed branch of the one symbol, where the mutants go."""
    targets = targets_of(symbols, whole_module)
    if arm is not None:
        for t in targets.values():
            t.lines = arm
    files = {rel: (worker.src / rel).read_text(encoding="utf-8") for rel in targets}
    result = Adequacy()
    spent = 0.0
    args = ["--continue-on-collection-errors", "--tb=no", "--maxfail=1"]

    def single(changes: dict[str, str]) -> Outcome:
        nonlocal spent
        worker.reset()
        worker.apply(changes)
        try:
            r = worker.runner.run(f2p, timeout=timeout, extra_args=args)
        finally:
            worker.reset()
        spent += r.test_seconds
        n = sum(1 for t in f2p if r.outcomes.get(t) == "passed")
        return Outcome(passed=n, ok=not r.timed_out and not r.collect_errors and n == len(f2p))

    literals = [c for c in constants if c[:1] in "'\""]        # not "an error message ..."
    raises = [e.raise_expr for e in expected_raises(hidden_sources(worker.src, f2p), f2p)]
    probes: list[tuple[str, Variant]] = []
    stand = standins(files, targets, literals, raises)
    if arm is not None and symbols:
        stand.update(arm_standins(files, symbols[0], arm[0], raises[:MAX_EXPECTED]))
    for name, changes in stand.items():
        probes.append(("standin", Variant(f"s{len(probes)}:{name}", changes, stop=True)))
    if partial:
        found = partials(files, targets, limit=MAX_PARTIALS + 1)
        result.partials_skipped = max(0, len(found) - MAX_PARTIALS)
        for name, changes in list(found.items())[:MAX_PARTIALS]:
            probes.append(("partial", Variant(f"p{len(probes)}:{name}", changes, stop=True)))
    for m in gold_mutants(files, targets, seed, mutants):
        probes.append(("mutant", Variant(f"m{len(probes)}", m.changes)))
    kinds = {v.name: kind for kind, v in probes}
    runner = Batch(worker, f2p, timeout, args) if batch else None
    done = run_variants([v for _, v in probes], lambda rel: (worker.src / rel).read_text(encoding="utf-8"),
                        runner.run if runner else None, single)
    if runner:
        spent += runner.test_seconds
    result.batched = sum(1 for _, o in done if o.batched)
    result.hung = sum(1 for _, o in done if o.hung)
    for v, o in done:
        kind, name = kinds[v.name], v.name.partition(":")[2]
        if kind == "standin":
            result.standins[name] = o.passed
            if o.ok:
                result.standins_passing_all.append(name)
        elif kind == "partial":
            result.partials[name] = o.passed
            if o.ok:
                result.partials_passing_all.append(name)
        else:
            result.mutants += 1
            result.mutants_killed += not o.ok
    if result.mutants and not (result.standins_passing_all or result.partials_passing_all):
        result.mutation_score = round(result.mutants_killed / result.mutants, 3)
    return result, spent


ARM_STANDINS = {"arm-pass": "pass", "arm-return-none": "return None"}


def arm_standins(files: dict[str, str], sym, arm: int, raises: Sequence[str] = ()) -> dict[str, dict[str, str]]:
    """Removal.BRANCH: the gold with the removed arm doing nothing (`pass`: the
    function goes on past the `if`), returning None, or raising what the
    hidden tests expect (`raises`: expected_raises' expressions). Why: the whole-function
    stand-ins fail a branch's tests whatever they check, since the function's
    other paths go with them, so they proved nothing of the arm (a fresh
    review of the first branch tasks); an arm that is only a fast path, or
    whose tests a fall-through passes, is no task."""
    out: dict[str, dict[str, str]] = {}
    code = files.get(sym.path)
    if code is None:
        return out
    for name, stmt in [*ARM_STANDINS.items(), *(("arm-" + RAISES + r, f"raise {r}") for r in raises)]:
        new = branch_code(code, sym.cls if sym.kind == "method" else None, sym.name, sym.start, arm, stmt)
        if new is not None and new != code:
            out[name] = {sym.path: new}
    return out


@contextmanager
def _gold_of(task_dir, prefix: str):
    """(task, the removed code's files, a gold tree): the written
    task with its gold applied in a temporary directory, for the probes a
    policy that does too little would submit."""
    import tempfile
    from pathlib import Path

    from taskforge.fsutil import copy_tree
    from taskforge.package.store import load_task
    from taskforge.package.writer import apply_patch

    task = load_task(task_dir)
    rec = task.record
    whole = rec.feature.symbols[0].module if rec.feature.kind == "module" else None
    targets = targets_of(rec.feature.symbols, whole)
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        gold = Path(tmp) / "gold"
        copy_tree(task.workspace, gold)
        err = apply_patch(gold, rec.patch)
        if err:
            raise RuntimeError(f"the gold patch does not apply: {err}")
        yield task, targets, gold


def standin_solutions(task_dir) -> dict[str, str]:
    """{stand-in name: a patch against the task's workspace} for a written task:
    what a policy that does no work would submit. Tests and audits grade them."""
    from taskforge.package.writer import make_patches

    with _gold_of(task_dir, "tf-standin-") as (task, targets, gold):
        files = {rel: (gold / rel).read_text(encoding="utf-8") for rel in targets}
        out = {}
        for name, changes in standins(files, targets).items():
            [diff] = make_patches(task.workspace, {rel: c.encode() for rel, c in changes.items()})
            out[name] = diff
        return out


def partial_solutions(task_dir) -> dict[str, str]:
    """{`stub-raise:name` ...: a patch against the task's workspace} for a written
    task: the gold with one removed public definition stubbed. Each must score
    0 (bench/bench_partials.py measures how many do not)."""
    from taskforge.package.writer import make_patches

    with _gold_of(task_dir, "tf-partial-") as (task, targets, gold):
        files = {rel: (gold / rel).read_text(encoding="utf-8") for rel in targets}
        # The whole gold (re-exports in other files too), but for the stub.
        touched = {rel: (gold / rel).read_bytes() for rel in {*task.record.feature.touched_files, *targets}
                   if (gold / rel).is_file()}
        out = {}
        for name, changes in partials(files, targets, limit=10_000).items():
            full: dict[str, bytes | None] = {**touched,
                                             **{rel: c.encode() for rel, c in changes.items()}}
            [diff] = make_patches(task.workspace, full)
            out[name] = diff
        return out
