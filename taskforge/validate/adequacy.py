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
"""
from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import cast

import libcst as cst

from taskforge.models import Adequacy

STANDINS = ("return-none", "raise", "identity", "swallow")
CONSTANT = "constant:"          # + a Python literal: `return <literal>`
MAX_CONSTANTS = 3
MAX_MUTANTS = 6
MIN_MUTATION_SCORE = 0.5


@dataclass
class Targets:
    """Which definitions of a module are the removed code: qualified names
    relative to the module (`Class.method`), or every one for a whole module."""
    names: set[str] = field(default_factory=set)
    whole: bool = False

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
             constants: Sequence[str] = ()) -> dict[str, dict[str, str]]:
    """{stand-in name: {file: content}}, for the files holding removed code.
    `constants` are Python literals (the statement's required strings)."""
    out: dict[str, dict[str, str]] = {}
    for kind in [*STANDINS, *(CONSTANT + c for c in constants[:MAX_CONSTANTS])]:
        changes = {}
        for rel, code in files.items():
            tr = _Bodies(targets[rel], kind)
            new = cst.parse_module(code).visit(tr)
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
        for fn in finder.found:
            for op, node, new in _sites(fn):
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


def check(worker, f2p: list[str], symbols, whole_module: str | None, seed: str,
          timeout: float, mutants: int = MAX_MUTANTS, constants: Sequence[str] = ()
          ) -> tuple[Adequacy, float]:
    """Run the stand-ins and gold mutants against the hidden tests on the worker
    (its tree is the gold: the source as cloned). Returns the measures and the
    test seconds spent."""
    targets = targets_of(symbols, whole_module)
    files = {rel: (worker.src / rel).read_text(encoding="utf-8") for rel in targets}
    result = Adequacy()
    spent = 0.0
    args = ["--continue-on-collection-errors", "--tb=no", "--maxfail=1"]

    def passed_all(changes: dict[str, str]) -> tuple[bool, int]:
        nonlocal spent
        worker.reset()
        worker.apply(changes)
        try:
            r = worker.runner.run(f2p, timeout=timeout, extra_args=args)
        finally:
            worker.reset()
        spent += r.test_seconds
        n = sum(1 for t in f2p if r.outcomes.get(t) == "passed")
        ok = not r.timed_out and not r.collect_errors and n == len(f2p)
        return ok, n

    literals = [c for c in constants if c[:1] in "'\""]        # not "an error message ..."
    for name, changes in standins(files, targets, literals).items():
        ok, n = passed_all(changes)
        result.standins[name] = n
        if ok:
            result.standins_passing_all.append(name)
            return result, spent          # dropped anyway: no need to go on
    tried = gold_mutants(files, targets, seed, mutants)
    for m in tried:
        ok, _ = passed_all(m.changes)
        result.mutants += 1
        result.mutants_killed += not ok
    if result.mutants:
        result.mutation_score = round(result.mutants_killed / result.mutants, 3)
    return result, spent


def standin_solutions(task_dir) -> dict[str, str]:
    """{stand-in name: a patch against the task's workspace} for a written task:
    what a policy that does no work would submit. Tests and audits grade them."""
    import tempfile
    from pathlib import Path

    from taskforge.fsutil import copy_tree
    from taskforge.package.store import load_task
    from taskforge.package.writer import apply_patch, make_patches

    task = load_task(task_dir)
    rec = task.record
    whole = rec.feature.symbols[0].module if rec.feature.kind == "module" else None
    targets = targets_of(rec.feature.symbols, whole)
    with tempfile.TemporaryDirectory(prefix="tf-standin-") as tmp:
        gold = Path(tmp) / "gold"
        copy_tree(task.workspace, gold)
        err = apply_patch(gold, rec.patch)
        if err:
            raise RuntimeError(f"the gold patch does not apply: {err}")
        files = {rel: (gold / rel).read_text(encoding="utf-8") for rel in targets}
        out = {}
        for name, changes in standins(files, targets).items():
            [diff] = make_patches(task.workspace, {rel: c.encode() for rel, c in changes.items()})
            out[name] = diff
        return out
