"""Must-fail tests that look like the real ones: copies of hidden tests.

Everything in the pytest process belongs to the code under test, so any report
it makes can be forged. What a forger cannot do is tell which tests should
pass. Each verify renames the hidden test functions at random and plants, next
to their originals, copies with one expected value changed. A correct solution
fails those copies; anything that makes tests pass without computing the answer
(forged reports, objects equal to everything, answers read from the test's own
constants or frames) makes them pass too, and scores 0.

Only *sound* mutations are made: ones a solution that passes the real test must
fail. The changed literal is the expected side of an equality the test asserts
(`assert f(x) == LIT`, `assertEqual(f(x), LIT)`, a parametrize value or a local
used only there), never an input: `f(x) != LIT'` follows from `f(x) == LIT`.
Where a test asserts no such literal, the weaker fallback negates an assertion
(`assert X` -> `assert not (X)`, `assertTrue` -> `assertFalse`): it catches
forged reports, not objects that are equal to everything.

At generation every candidate copy runs against the gold; the ones the gold
fails, with the outcome of each of their test ids, are the task's copies
(`TestCopy.expect`). At verify a random choice from it is planted, and a solution
passes only if every planted copy ends exactly as it did on the gold.
"""
from __future__ import annotations

import ast
import functools
import io
import math
import random
import re
import secrets
import sys
import textwrap
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import AbstractSet, Any, Literal, NamedTuple, cast

from taskforge.analysis.pyparse import literal_eval
from taskforge.analysis.pyparse import parse as parse_python
from taskforge.analysis.testindex import TestRef, test_ref
from taskforge.grade import copy_blocks as cb
from taskforge.grade import copy_odds, copy_raises, copy_steps, copy_values, vocab
from taskforge.grade.class_tree import ClassTree
from taskforge.grade.copy_steps import alphabet as _alphabet
from taskforge.grade.copy_steps import canonical
from taskforge.grade.helper_calls import HELPERS, Helpers
from taskforge.grade.seals import SealPlan, swapped_classes
from taskforge.models import TestCopy

NAME_TOKEN = "__tf_mutant_name__"
EQUAL_METHODS = {"assertEqual", "assertEquals", "assertListEqual", "assertTupleEqual",
                 "assertDictEqual", "assertSetEqual", "assertSequenceEqual",
                 "assertMultiLineEqual", "assert_equal",
                 # numpy.testing's: a changed value fails them as `==` would (a
                 # copy inside the tolerance passes the gold, so calibration drops it)
                 "assert_array_equal", "assert_allclose", "assert_almost_equal",
                 "assert_array_almost_equal"}
# Assertions and their complements: whichever holds, the other fails. Both
# forms are common in real tests, so a swapped copy looks like any other test.
NEGATABLE = {"assertTrue": "assertFalse", "assertFalse": "assertTrue",
             "assertIsNone": "assertIsNotNone", "assertIsNotNone": "assertIsNone",
             "assertIn": "assertNotIn", "assertNotIn": "assertIn",
             "assertIs": "assertIsNot", "assertIsNot": "assertIs",
             "assertIsInstance": "assertNotIsInstance", "assertNotIsInstance": "assertIsInstance"}
ATOMIC = (ast.Call, ast.Name, ast.Attribute, ast.Subscript)


class CopyStyle(str, Enum):
    """How copy values are drawn.

    EXCHANGED, the default: each test file by a value-free coin
    (one_step_file) gets either the balanced LEGACY sets, or blocks and
    matched values: where tests of one file can form a block
    (grade/copy_blocks.py), their copies exchange the tests' own expected values
    or the forms of their complements, and a reader is right exactly once per
    block size (bench/bench_copies.py: 0.48 against chance 0.49 on held-out
    files); every other test of such a file gets the
    MATCHED copies where its module has values of its profile, else unbalanced
    one-step copies. LEGACY: one-step perturbations, proposed symmetrically as sets of
    one or two copies and each set kept at the odds a reader of the planted
    file gives it (grade/copy_steps.py, `BALANCED`); unbalanced, a
    distinguisher that reads the planted file picks the original about 80% of
    the time (chance 50%). Reading a graded test file is charged by the monitor
    besides. MATCHED draws
    values from the original's profile in its module (grade/copy_values.py): at
    chance too, but for 8% of tests, and nothing for the rest."""
    MATCHED = "matched"    # from the original's profile in its module (grade/copy_values.py)
    LEGACY = "legacy"      # one-step perturbations
    EXCHANGED = "exchanged"   # other tests' expected values, in blocks (grade/copy_blocks.py)


DEFAULT_STYLE = CopyStyle.EXCHANGED
# EXCHANGED: the share of a task's test files whose tests get balanced one-step
# sets rather than blocks and matched values (one_step_file).
ONE_STEP_SHARE = 0.5


def find_def(tree: ast.Module, ref: TestRef) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The definition a node id runs: in its class, or inherited from a base
    class of the same module (unittest suites put tests in mixins). A copy planted
    beside an inherited test is inherited the same way."""
    body: list[ast.stmt] = tree.body
    cls = None
    for name in ref.cls:
        cls = next((n for n in body if isinstance(n, ast.ClassDef) and n.name == name), None)
        if cls is None:
            return None
        body = cls.body
    if cls is None:
        return _own_def(body, ref.func)
    return _method(tree, cls, ref.func, set())


def _own_def(body, func):
    found = None
    for n in body:   # the last definition wins, as at import
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == func:
            found = n
    return found


def _method(tree: ast.Module, cls: ast.ClassDef, func: str, seen: set[str]):
    found = _own_def(cls.body, func)
    if found is not None or cls.name in seen:
        return found
    seen.add(cls.name)
    for base in cls.bases:                      # in the order Python looks them up
        if isinstance(base, ast.Name):
            parent = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == base.id), None)
            if parent is not None:
                found = _method(tree, parent, func, seen)
                if found is not None:
                    return found
    return None


def def_bodies(tree: ast.Module) -> dict[int, list[ast.stmt]]:
    """id(statement) -> the module or class body that holds it, for shadowed:
    worked out once a file (jsonpatch's tests.py: one walk of the whole tree
    per planted test took minutes)."""
    out: dict[int, list[ast.stmt]] = {}
    for body in [tree.body, *(n.body for n in ast.walk(tree) if isinstance(n, ast.ClassDef))]:
        for n in body:
            out[id(n)] = body
    return out


def shadowed(tree: ast.Module, fn: ast.FunctionDef | ast.AsyncFunctionDef,
             bodies: dict[int, list[ast.stmt]] | None = None) -> list:
    """The earlier definitions of `fn`'s name in the body that holds it, which
    `fn` replaces at import (asteval defines `test_dict_comprehension` twice).
    A rename takes them along, so they stay replaced: left under the old name
    they ran, and reported under the hidden test's own id (gold scored 0 for
    a forged id on four of asteval's features). `bodies`: def_bodies(tree)."""
    body = (bodies if bodies is not None else def_bodies(tree)).get(id(fn))
    if body is None:
        return []
    return [n for n in body if n is not fn
            and isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == fn.name]


def span(node) -> tuple[int, int]:
    """1-based first and last line of a definition, decorators included."""
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    return first, node.end_lineno


# ---------------------------------------------------------------- finding sites


@dataclass
class Edit:
    line: int                  # 1-based
    start: int                 # byte offsets: on `line`, and on `end_line` for `end`
    end: int
    text: str
    end_line: int = 0          # 0: the same line


@dataclass
class Site:
    kind: Literal["value", "negation"]
    edits_for: Callable[..., list[Edit]]    # (rng) -> the edits
    where: int
    table: tuple | None = None     # a parametrize table given by name, its value
    column: int = 0                # the expected value's position in each row
    row: int = 0                   # the row this site changes
    # A complement (`is None` / `is not None`, assertTrue / assertFalse, `assert x`
    # / `assert not x`): its family and the form the test has, for copy_blocks.
    polarity: tuple[str, str] | None = None
    # An expected exception: the classes of its kind (builtin, or the
    # project's) the module itself names, which a copy may expect instead.
    choices: tuple[str, ...] | None = None
    # ... and every exception class the module names, once an occurrence
    # (balanced one-step sets take their pool from it, grade/copy_steps.py).
    named: tuple[str, ...] | None = None
    # A literal inside a constructor call on the expected side (`Money("88.85")`):
    # such an equality is computed, so no seal hides the value, and the class's
    # own code sees it as the test builds it (red team 13 echoed it into the
    # answer). Copies go to these sites first.
    built: bool = False


def _module_constants(module: ast.Module) -> dict[str, ast.AST]:
    out: dict[str, ast.AST] = {}
    for node in module.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            out[node.targets[0].id] = node.value
    return out


def _static(node, consts: dict[str, ast.AST], depth: int = 0):
    """The value of a parametrize table built from literals and module constants
    (`TABLE`, `A + B`), or raises ValueError."""
    if depth > 8:
        raise ValueError("too deep")
    if isinstance(node, ast.Name) and node.id in consts:
        return _static(consts[node.id], consts, depth + 1)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        a, b = _static(node.left, consts, depth + 1), _static(node.right, consts, depth + 1)
        if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
            return tuple(a) + tuple(b)
        raise ValueError("not a sequence")
    if isinstance(node, (ast.Tuple, ast.List)):
        return tuple(_static(e, consts, depth + 1) if isinstance(e, (ast.Tuple, ast.List, ast.Name))
                     else literal_eval(e) for e in node.elts)
    return literal_eval(node)


def _literal(node) -> bool:
    if isinstance(node, ast.Constant):
        return node.value is not None and node.value is not Ellipsis
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return bool(node.elts) and all(_literal(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return bool(node.values) and all(k is not None and _literal(k) for k in node.keys) \
            and all(_literal(v) for v in node.values)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return isinstance(node.operand, ast.Constant) and isinstance(node.operand.value, (int, float))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "join" \
            and isinstance(node.func.value, ast.Constant) and isinstance(node.func.value.value, str) \
            and len(node.args) == 1 and not node.keywords and isinstance(node.args[0], (ast.List, ast.Tuple)):
        # `"\n".join(["spam  41.9", "eggs  451"])`: an expected text written a line
        # at a time (tabulate's tests); its lines are its values
        return _literal(node.args[0])
    if isinstance(node, ast.Call) and _call_name(node) in ("approx", "pytest.approx") and node.args:
        # With its own tolerance the windows of original and copy may overlap.
        return _literal(node.args[0]) and not node.keywords and len(node.args) == 1
    if isinstance(node, ast.Call) and _call_name(node).split(".")[-1][:1].isupper():
        # A value built from literals (`Point(2, -1)`): a constructor call, not the
        # code under test, so it can stand on the expected side.
        return all(_literal(a) for a in node.args) and all(
            k.arg is not None and _literal(k.value) for k in node.keywords) and bool(
            node.args or node.keywords)
    return False


def _call_name(node: ast.Call) -> str:
    f = node.func
    if isinstance(f, ast.Name):
        return f.id
    if isinstance(f, ast.Attribute):
        return (f.value.id + "." if isinstance(f.value, ast.Name) else "") + f.attr
    return ""


def _constants(node) -> list[ast.expr]:
    """Mutable constants inside a literal: numbers (with their sign), strings,
    bytes, booleans. In `approx(...)` and constructor calls only the positional
    arguments are values: `abs=5` or `lt=20` is a tolerance, and changing it is
    not a claim a correct answer must fail."""
    if isinstance(node, ast.Constant):
        ok = (node.value is not None and node.value is not Ellipsis
              and not isinstance(node.value, complex) and node.lineno == node.end_lineno)
        return [node] if ok else []
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) \
            and isinstance(node.operand, ast.Constant) and node.lineno == node.end_lineno:
        return [node]                   # "-5" as one token: copies may cross zero
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [c for e in node.elts for c in _constants(e)]
    if isinstance(node, ast.Dict):
        return [c for e in [*node.keys, *node.values] if e is not None for c in _constants(e)]
    if isinstance(node, ast.Call):
        return [c for a in node.args for c in _constants(a)]
    return []


def _plain_statements(body) -> list[ast.stmt]:
    """The statements of a test that always run: not inside a loop, a branch or a
    try (an assertion in a loop over the result holds vacuously when it is empty)."""
    out = []
    for node in body:
        out.append(node)
        if isinstance(node, (ast.With, ast.AsyncWith)):
            out += _plain_statements(node.body)
        elif isinstance(node, ast.For) and not node.orelse and _fixed_iteration(node.iter):
            out += _plain_statements(node.body)      # `for bad in (0, -3, 4000):` always runs
    return out


def _none_swap(c: ast.Compare) -> Edit:
    """Replace the operator between the computed side and None."""
    assert c.left.end_lineno is not None and c.left.end_col_offset is not None  # set by the parser
    return Edit(c.left.end_lineno, c.left.end_col_offset, c.comparators[0].col_offset,
                " is not " if isinstance(c.ops[0], ast.Is) else " is ", c.comparators[0].lineno
                if c.comparators[0].lineno != c.left.end_lineno else 0)


def _fixed_iteration(node) -> bool:
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return bool(node.elts) and all(_literal(e) for e in node.elts)
    if isinstance(node, ast.Call) and _call_name(node) == "range":
        return all(isinstance(a, ast.Constant) for a in node.args) and bool(node.args)
    return False


# Exceptions no one of which derives from another: a copy that expects a sibling
# of the exception the test expects fails whenever the real test passes.
SWAPPABLE = ("ValueError", "TypeError", "KeyError", "IndexError", "AttributeError",
             "RuntimeError", "ZeroDivisionError", "OverflowError", "LookupError")


# A project's own exception class may derive from any common builtin; these two
# it almost never does (the gold run drops a copy it passes, so a guess is safe).
FOR_CUSTOM = ("ZeroDivisionError", "OverflowError")
_CUSTOM_EXC = re.compile(r"(Error|Exception|Exc|Failure|Invalid|Warning)$")


def _unrelated(a: str, b: str) -> bool:
    import builtins

    # `builtins.ArithmeticError` is ArithmeticError: the last part decides.
    x, y = (getattr(builtins, n.rpartition(".")[2], None) for n in (a, b))
    if not (isinstance(x, type) and isinstance(y, type)):
        return a != b and a.rpartition(".")[2] != b.rpartition(".")[2]
    return x is not y and not issubclass(x, y) and not issubclass(y, x)


def _imported(module: ast.Module | None, skip: Callable[[str], bool] = lambda name: False) -> set[str]:
    """Names a test module binds by importing them (not aliases it assigns
    itself), less those of absolute imports of modules `skip` names."""
    out: set[str] = set()
    for node in (module.body if module is not None else []):
        if isinstance(node, ast.ImportFrom) and node.module != "builtins" \
                and not (node.level == 0 and skip(node.module or "")):
            out |= {a.asname or a.name for a in node.names}
        elif isinstance(node, ast.Import):
            out |= {(a.asname or a.name).split(".")[0] for a in node.names if not skip(a.name)}
    return out


def _raises_site(call, imported: AbstractSet[str] = frozenset()) -> ast.Name | ast.Attribute | None:
    """The exception class of `pytest.raises(X)` / `self.assertRaises(X)`, when it
    is a builtin that can be swapped for an unrelated one."""
    if not isinstance(call, ast.Call) or not call.args:
        return None
    name = _call_name(call)
    if name not in ("pytest.raises", "raises", "self.assertRaises", "assertRaises"):
        if not (isinstance(call.func, ast.Attribute) and call.func.attr == "assertRaises"):
            return None
    exc = call.args[0]
    if exc.lineno != exc.end_lineno:
        return None
    if isinstance(exc, ast.Name) and (exc.id in SWAPPABLE or (
            _CUSTOM_EXC.search(exc.id) and exc.id in imported)):
        return exc
    # `mod.SomeError`: the project's own exception, named through its module.
    if isinstance(exc, ast.Attribute) and isinstance(exc.value, ast.Name) \
            and exc.value.id in imported and exc.value.id != "builtins" \
            and _CUSTOM_EXC.search(exc.attr):
        return exc
    return None


def _plain_nodes(fn) -> list[ast.AST]:
    nodes = []
    for stmt in _plain_statements(fn.body):
        if isinstance(stmt, (ast.With, ast.AsyncWith, ast.For, ast.AsyncFor, ast.While, ast.If,
                             ast.Try, ast.Match, ast.FunctionDef, ast.AsyncFunctionDef,
                             ast.ClassDef)) or type(stmt).__name__ == "TryStar":
            continue
        nodes += list(ast.walk(stmt))
    return nodes


def _eq_sides(node) -> list[ast.AST]:
    """Literal operands of an asserted equality whose other side is computed."""
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq):
        a, b = node.left, node.comparators[0]
        return [s for s, o in ((a, b), (b, a)) if _literal(s) and not _literal(o)]
    if isinstance(node, ast.Compare) and all(isinstance(op, ast.Eq) for op in node.ops):
        # `f(a) == f(b) == 6`: every link must hold, so a changed literal end fails.
        chain = [node.left, *node.comparators]
        return [s for i, s in enumerate(chain) if _literal(s) and any(
            not _literal(o) for o in chain[max(0, i - 1):i] + chain[i + 1:i + 2])]
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Is):
        # `is True` -> `is False` (never `is not True`: None passes both)
        b = node.comparators[0]
        if isinstance(b, ast.Constant) and isinstance(b.value, bool):
            return [b]
    return []


def _none_check(node):
    """`x is None` / `x is not None` with x computed: the other is its complement."""
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Is, ast.IsNot)) \
            and isinstance(node.comparators[0], ast.Constant) and node.comparators[0].value is None \
            and not _literal(node.left):
        return node
    return None


def _equal_call(node: ast.Call) -> bool:
    """`self.assertEqual(a, b)`, or a bare `assert_equal(a, b)` (numpy.testing's,
    or a project's own of that name: tabulate's prints both sides and asserts
    `==`)."""
    f = node.func
    return (isinstance(f, ast.Attribute) and f.attr in EQUAL_METHODS) or (
        isinstance(f, ast.Name) and f.id in EQUAL_METHODS and not f.id.startswith("assertE"))


def _equality_uses(fn, nodes=None) -> list[tuple[ast.AST, ast.AST]]:
    """(one side, the other) for every asserted equality in `nodes` (default: the
    whole test)."""
    uses: list[tuple[ast.AST, ast.AST]] = []
    for node in (ast.walk(fn) if nodes is None else nodes):
        if isinstance(node, ast.Assert):
            test = node.test
            if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq):
                uses.append((test.left, test.comparators[0]))
                uses.append((test.comparators[0], test.left))
            elif isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(
                    test.ops[0], ast.Is) and isinstance(test.comparators[0], ast.Name):
                # `f(x) is expected`, a parameter holding True or False: the copy's
                # row holds the other one (rows of other values are no site).
                uses.append((test.comparators[0], test.left))
        elif isinstance(node, ast.Call) and _equal_call(node) and len(node.args) >= 2:
            uses.append((node.args[0], node.args[1]))
            uses.append((node.args[1], node.args[0]))
        elif isinstance(node, ast.Call) and (bound := _helper_args(node, HELPERS.get())) is not None:
            uses += [(side, ast.Tuple(elts=bound[1], ctx=ast.Load())) for side in bound[0]]
    return uses


# The project's own assertion helpers, known while propose runs (assert_helpers).


def assert_helpers(root: Path, max_bytes: int = 1 << 20) -> dict[str, tuple[tuple[str, ...], frozenset[str]]]:
    """The project's assertion helpers (markdown's `assertMarkdownRenders(self,
    source, expected)`, asteval's `isvalue(interp, sym, val)`) whose parameters
    are only ever one side of an asserted equality in their body: an argument
    given to such a parameter is an expected value, as `assertEqual`'s is. Any
    name but a test's (asteval's suite checks through `isvalue`; 18 of its
    candidates had no copy when only `assert*` names counted). A name defined
    twice differently is left out."""
    found: dict[str, set[tuple[tuple[str, ...], frozenset[str]]]] = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).parts
        if any(p.startswith(".") or p in ("node_modules", "site-packages") for p in rel):
            continue
        try:
            st = path.stat()
        except OSError:
            continue
        if st.st_size > max_bytes:
            continue
        key = (str(path), st.st_size, st.st_mtime_ns)
        if key not in _HELPERS_OF_FILE:
            if len(_HELPERS_OF_FILE) > 4096:
                _HELPERS_OF_FILE.clear()
            _HELPERS_OF_FILE[key] = _file_helpers(path)
        for name, params, exp in _HELPERS_OF_FILE[key]:
            found.setdefault(name, set()).add((params, exp))
    return {name: next(iter(v)) for name, v in found.items() if len(v) == 1}


# (path, size, mtime) -> its helpers: propose runs once per candidate on one tree.
_HELPERS_OF_FILE: dict[tuple[str, int, int], list[tuple[str, tuple[str, ...], frozenset[str]]]] = {}


def _file_helpers(path: Path) -> list[tuple[str, tuple[str, ...], frozenset[str]]]:
    """assert_helpers for one file: (name, parameters after self, expected ones)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return []
    if "assert" not in text:
        return []
    try:
        tree = parse_python(text)
    except (SyntaxError, ValueError):
        return []
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("test") \
                and node.name not in EQUAL_METHODS:
            params = [a.arg for a in node.args.posonlyargs + node.args.args]
            if params[:1] in (["self"], ["cls"]):
                params = params[1:]
            exp = set.intersection(*(_expected_names(way) for way in _paths(node))) & set(params)
            if exp:
                out.append((node.name, tuple(params), frozenset(exp)))
    return out


def _paths(fn, limit: int = 8) -> list[ast.FunctionDef]:
    """`fn` as straight-line functions, one per way through its top-level
    if/else statements (asteval's `isvalue` checks with numpy's
    `assert_allclose` or with `==`): a parameter expected on every path is
    expected whichever runs. Each condition stays as an expression, so its
    loads still count. At most `limit` paths; an `if` without an `else` stays
    whole (a path may skip its check)."""
    def ways(body: list[ast.stmt]) -> list[list[ast.stmt]]:
        out: list[list[ast.stmt]] = [[]]
        for st in body:
            if isinstance(st, ast.If) and st.orelse:
                alts = [[ast.Expr(value=st.test), *w] for w in ways(st.body) + ways(st.orelse)]
                out = [p + a for p in out for a in alts][:limit]
            else:
                out = [p + [st] for p in out]
        return out

    paths = ways(fn.body)
    if len(paths) == 1:
        return [fn]
    return [ast.FunctionDef(name=fn.name, args=fn.args, body=p, decorator_list=[], returns=None)
            for p in paths]


def _helper_args(node: ast.Call, helpers: Helpers) -> tuple[list[ast.expr], list[ast.expr]] | None:
    """(arguments to the helper's expected parameters, the others) of a call to
    one of the project's assertion helpers, or None."""
    f = node.func
    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
    h = helpers.get(name) if name else None
    if h is None or any(isinstance(a, ast.Starred) for a in node.args) \
            or any(k.arg is None for k in node.keywords) or len(node.args) > len(h[0]):
        return None
    bound: dict[str, ast.expr] = dict(zip(h[0], node.args))
    bound.update({k.arg: k.value for k in node.keywords if k.arg is not None})
    return [v for p, v in bound.items() if p in h[1]], [v for p, v in bound.items() if p not in h[1]]


def _expected_names(fn) -> set[str]:
    """Names (parameters, locals) whose every use is one side of an asserted
    equality whose other side does not use them: expected values. A use that
    is only printed (tabulate's `assert_equal` prints both sides first) decides
    nothing."""
    loads: dict[str, int] = {}
    printed = {id(n) for c in ast.walk(fn) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
               and c.func.id == "print" for n in ast.walk(c)}
    for n in ast.walk(fn):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and id(n) not in printed:
            loads[n.id] = loads.get(n.id, 0) + 1
    as_expected: dict[str, int] = {}
    for side, other in _equality_uses(fn, _plain_nodes(fn)):
        if isinstance(side, ast.Name):
            if not any(isinstance(x, ast.Name) and x.id == side.id for x in ast.walk(other)):
                as_expected[side.id] = as_expected.get(side.id, 0) + 1
    return {name for name, n in as_expected.items() if loads.get(name) == n}


def _param_names(dec: ast.Call) -> list[str]:
    if not dec.args:
        return []
    a = dec.args[0]
    if isinstance(a, ast.Constant) and isinstance(a.value, str):
        return [x.strip() for x in a.value.split(",") if x.strip()]
    if isinstance(a, (ast.List, ast.Tuple)) and all(
            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in a.elts):
        # Every element passes the filter (checked just above): it only narrows the type.
        return [e.value for e in a.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return []


def _rows(values) -> list[list[ast.AST]]:
    """Each parametrize row's argument nodes (pytest.param(...) unwrapped)."""
    if not isinstance(values, (ast.List, ast.Tuple)):
        return []
    rows: list[list[ast.AST]] = []
    for row in values.elts:
        if isinstance(row, ast.Call) and _call_name(row) in ("pytest.param", "param"):
            rows.append(list(row.args))
        elif isinstance(row, (ast.Tuple, ast.List)):
            rows.append(list(row.elts))
        else:
            rows.append([row])
    return rows


def _exits_early(fn) -> bool:
    """A test that may return or skip before its assertions: a wrong answer can
    pass a copy the way it passes the original."""
    stack = list(fn.body)
    while stack:
        n = stack.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue            # a nested definition's own returns
        stack.extend(ast.iter_child_nodes(n))
        if isinstance(n, (ast.Return, ast.Continue, ast.Break)):
            return True
        if isinstance(n, ast.Call) and _call_name(n).split(".")[-1] in ("skip", "skipTest", "xfail",
                                                                        "importorskip"):
            return True
    return False


def _value_site(const: ast.expr, built: bool = False) -> Site:
    return Site("value", lambda rng, c=const: _mutate_constant(c, rng), const.lineno, built=built)


def _side_sites(side: ast.AST, makers: AbstractSet[str] = frozenset()) -> list[Site]:
    """The value sites of one literal side; `built` when a call of one of the
    `makers` (names imported from outside the stdlib) holds them."""
    built = isinstance(side, ast.Call) and _call_name(side).partition(".")[0] in makers
    if isinstance(side, (ast.Tuple, ast.List, ast.Set, ast.Dict)):
        return [site for e in ast.iter_child_nodes(side) if isinstance(e, ast.expr)
                for site in _side_sites(e, makers)]
    return [_value_site(c, built) for c in _constants(side)]


def makers_of(module: ast.Module | None) -> set[str]:
    """Names a test module imports from outside the stdlib and pytest: calling
    one may run the project's code, which then sees its literal arguments."""
    return _imported(module, _foreign)


def _foreign(module: str) -> bool:
    """A module whose code no solution writes: the stdlib's, or the test runner's."""
    top = module.partition(".")[0]
    return top in sys.stdlib_module_names or top in ("pytest", "_pytest", "hypothesis")


def built_first(sites_: list[Site]) -> list[Site]:
    """Sites in their order, those of built expectations first (a stable sort on
    the test's shape, never on a value)."""
    return sorted(sites_, key=lambda st: not st.built)


def _literal_sites(plain: list[ast.AST], expected: set[str], makers: AbstractSet[str] = frozenset()
                   ) -> list[Site]:
    """Asserted equalities against literals, in the body: `assert f(x) == 3`,
    `self.assertEqual(f(x), 3)`, `expected = 3`."""
    out: list[Site] = []
    for node in plain:
        if isinstance(node, ast.Assert):
            out += [site for side in _eq_sides(node.test) for site in _side_sites(side, makers)]
        elif isinstance(node, ast.Call) and _equal_call(node) and len(node.args) >= 2:
            a, b = node.args[0], node.args[1]
            for side, other in ((a, b), (b, a)):
                if _literal(side) and not _literal(other):
                    out += _side_sites(side, makers)
        elif isinstance(node, ast.Call) and (bound := _helper_args(node, HELPERS.get())) is not None:
            # The helper computes inside: its expected argument is a site even
            # beside literal inputs (the gold's run drops what is not sound).
            out += [_value_site(c) for side in bound[0] if _literal(side) for c in _constants(side)]
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id in expected \
                and _literal(node.value):
            out += _side_sites(node.value, makers)     # `expected = Money("88.85")` is built too
    return out


def _table_sites(values_node: ast.expr, names: list[str], i: int, consts: dict[str, ast.AST]) -> list[Site]:
    """A parametrize table given by name: the copy and the original are both
    written out, so that nothing but one value tells them apart."""
    try:
        table = _static(values_node, consts)
    except (ValueError, SyntaxError, TypeError):
        return []
    rows = [r if len(names) > 1 else (r,) for r in table]
    if not (rows and all(isinstance(r, tuple) and len(r) == len(names) for r in rows)):
        return []
    v = values_node
    return [Site("value", lambda rng, v=v: [Edit(v.lineno, v.col_offset, v.end_col_offset, "\1", v.end_lineno)],
                 v.lineno, table=tuple(table), column=i, row=k) for k in range(len(rows))]


def _param_sites(fn, expected: set[str], by_identity: set[str], consts: dict[str, ast.AST]) -> list[Site]:
    """Parametrized expected values (a literal table, or one given by name).
    A name the test compares by identity mutates only as a bool."""
    out: list[Site] = []
    for dec in fn.decorator_list:
        if not (isinstance(dec, ast.Call) and _call_name(dec).endswith("parametrize") and len(dec.args) >= 2):
            continue
        names = _param_names(dec)
        values_node = dec.args[1]
        for i, name in enumerate(names):
            if name not in expected:
                continue
            if not isinstance(values_node, (ast.List, ast.Tuple)):
                out += _table_sites(values_node, names, i, consts)
                continue
            for row in _rows(values_node):
                if len(row) == len(names) and _literal(row[i]) and (
                        name not in by_identity or isinstance(row[i], ast.Constant)
                        and isinstance(cast(ast.Constant, row[i]).value, bool)):
                    out += [_value_site(c) for c in _constants(row[i])]
    return out


def _none_sites(plain: list[ast.AST]) -> list[Site]:
    """`is None` against `is not None`."""
    return [Site("value", lambda rng, c=node.test: [_none_swap(c)], node.test.lineno,
                 polarity=("is-none", "is" if isinstance(cast(ast.Compare, node.test).ops[0], ast.Is)
                           else "is not"))
            for node in plain if isinstance(node, ast.Assert) and _none_check(node.test) is not None]


def _complement_sites(plain: list[ast.AST]) -> list[Site]:
    """Complements: `assertTrue` and `assertFalse`, `assert x` and `assert not x`."""
    out: list[Site] = []
    for node in plain:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in NEGATABLE and node.func.end_lineno == node.func.lineno \
                and node.args and not _literal(node.args[0]):
            f = node.func
            out.append(Site("value", lambda rng, f=f: [
                Edit(f.end_lineno, f.end_col_offset - len(f.attr), f.end_col_offset,
                     NEGATABLE[f.attr])], node.lineno,
                polarity=("|".join(sorted((f.attr, NEGATABLE[f.attr]))), f.attr)))
        elif isinstance(node, ast.Assert) and not _eq_sides(node.test) and _none_check(node.test) is None:
            t = node.test
            if isinstance(t, ast.UnaryOp) and isinstance(t.op, ast.Not) and isinstance(t.operand, ATOMIC) \
                    and not _literal(t.operand):
                out.append(Site("value", lambda rng, t=t: [
                    Edit(t.lineno, t.col_offset, t.operand.col_offset, "")], node.lineno,
                    polarity=("assert", "not")))
            elif isinstance(t, ATOMIC) and not _literal(t) and not (
                    isinstance(t, ast.Compare) and len(t.ops) > 1):
                out.append(Site("value", lambda rng, t=t: [
                    Edit(t.lineno, t.col_offset, t.col_offset, "not ")], node.lineno,
                    polarity=("assert", "")))
    return out


def _named_exceptions(module: ast.Module | None, imported: AbstractSet[str]) -> list[str]:
    """Exception classes the module names, as it writes them: builtins and the
    names (`Err`, `mod.Err`) it imports."""
    import builtins

    out: list[str] = []
    for node in ast.walk(module) if module is not None else ():
        if isinstance(node, ast.Name) and _CUSTOM_EXC.search(node.id):
            b = getattr(builtins, node.id, None)
            if (isinstance(b, type) and issubclass(b, BaseException)) or node.id in imported:
                out.append(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id in imported and node.value.id != "builtins" and _CUSTOM_EXC.search(node.attr):
            out.append(f"{node.value.id}.{node.attr}")
    return out


def _is_builtin_exc(name: str) -> bool:
    import builtins

    b = getattr(builtins, name, None) if "." not in name else None
    return isinstance(b, type) and issubclass(b, BaseException)


def exception_choices(orig: str, named: list[str]) -> tuple[str, ...]:
    """What a copy of `pytest.raises(orig)` may expect instead: classes of the
    same kind (builtin, or the project's) that the module itself names, so that
    neither kind nor a count in the file tells the original (a project's error
    swapped for ZeroDivisionError was told 80% of the time)."""
    kind = _is_builtin_exc(orig)
    return tuple(sorted({n for n in named if _is_builtin_exc(n) == kind and _unrelated(n, orig)}))


def _exception_sites(fn, imported: AbstractSet[str], named: list[str] | None = None) -> list[Site]:
    """Expected exceptions: a copy expects an unrelated one the module names
    (`named`, see exception_choices; None: the fixed pools of old)."""
    out: list[Site] = []
    for stmt in _plain_statements(fn.body):
        calls = ([item.context_expr for item in stmt.items] if isinstance(stmt, (ast.With, ast.AsyncWith))
                 else [stmt.value] if isinstance(stmt, ast.Expr) else [])
        for call in calls:
            exc = _raises_site(call, imported)
            if exc is not None:
                choices = None if named is None else exception_choices(ast.unparse(exc), named)
                if choices == ():
                    continue
                out.append(Site("value", lambda rng, x=exc: [
                    Edit(x.lineno, x.col_offset, x.end_col_offset, "\2")], exc.lineno, choices=choices,
                    named=None if named is None else tuple(named)))
    return out


def sites(fn, module: ast.Module | None = None) -> list[Site]:
    """Every sound mutation of a test function, value sites first.

    Worked out once per parsed function, module and assert helpers in force
    (HELPERS): one proposal asks for each test's sites about twenty times
    (balanced, legacy and matched copies, the reader's scores), and walking
    the function anew each time was half a small file's proposal. Entries hold
    the objects themselves, compared by identity (nothing mutates a parsed
    tree); a Site draws its edits from the rng it is given, so one can be
    shared. At most _SITES_MODULES parsed modules are kept alive by it, as by
    _module_facts: a calibration parses its test files afresh, and a key per
    function alone would have kept hundreds of large parses."""
    helpers = HELPERS.get()
    key = (id(module), id(helpers))
    with _SITES_LOCK:
        entry = _SITES.get(key)
        if entry is None or entry[0] is not module or entry[1] is not helpers:
            while len(_SITES) >= _SITES_MODULES:
                _SITES.pop(next(iter(_SITES)))
            entry = _SITES[key] = (module, helpers, {})
        by_fn = entry[2]
        hit = by_fn.get(id(fn))
        if hit is not None and hit[0] is fn:
            return list(hit[1])
    found = _sites(fn, module)
    with _SITES_LOCK:
        if len(by_fn) >= _SITES_PER_MODULE:
            by_fn.clear()
        by_fn[id(fn)] = (fn, found)
    return list(found)


_SITES_MODULES, _SITES_PER_MODULE = 16, 4096
_SITES_LOCK = threading.Lock()
_SITES: dict[tuple[int, int], tuple[Any, Any, dict[int, tuple[Any, tuple[Site, ...]]]]] = {}


def _sites(fn, module: ast.Module | None) -> tuple[Site, ...]:
    if _exits_early(fn):
        return ()
    consts, imported, makers, named = _module_facts(module)
    expected = _expected_names(fn)
    by_identity = {t.comparators[0].id for t in ast.walk(fn) if isinstance(t, ast.Compare)
                   and len(t.ops) == 1 and isinstance(t.ops[0], ast.Is)
                   and isinstance(t.comparators[0], ast.Name)}
    plain = _plain_nodes(fn)
    return tuple(_literal_sites(plain, expected, makers) + _param_sites(fn, expected, by_identity, consts)
                 + _none_sites(plain) + _complement_sites(plain)
                 + _exception_sites(fn, imported, named))


@functools.lru_cache(maxsize=16)
def _module_facts(module: ast.Module | None
                  ) -> tuple[dict[str, ast.AST], set[str], set[str], list[str] | None]:
    """What sites() reads of the whole module (its constants, imported names,
    makers, named exceptions), worked out once per parsed module: a
    proposal asks for every test's sites several times, and each walk of the
    module cost more than the test's own (a third of propose's time). Keyed
    by the module object, which nothing mutates once parsed."""
    if module is None:
        return {}, _imported(None), makers_of(None), None
    imported = _imported(module)
    return _module_constants(module), imported, makers_of(module), _named_exceptions(module, imported)


# ------------------------------------------------------------ changing literals


_STR_PREFIX = re.compile(r"^([rRbBuU]*)('''|\"\"\"|'|\")")


def _mutate_constant(c: ast.expr, rng: random.Random) -> list[Edit]:
    """A new token for the constant, of the same type and written the same way."""
    assert c.end_col_offset is not None     # set by the parser
    return [Edit(c.lineno, c.col_offset, c.end_col_offset, "\0")]   # filled in by render()


def _new_token(token: str, value, rng: random.Random) -> str | None:
    if isinstance(value, bool):
        return "False" if value else "True"
    if isinstance(value, int):
        # Both directions, across zero too (the sign is part of the token), so
        # that the smallest of original and copies is not always the original.
        return canonical(token, value + rng.choice((-3, -2, -1, 1, 2, 3)))
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return None
        # Relative to the value, keeping its sign: a jump in magnitude or a sign
        # change would show which of them is the original.
        factor = 1 + rng.choice((-1, 1)) * rng.uniform(0.05, 0.4)
        new = value * factor if value else rng.choice((-1, 1)) * rng.uniform(0.05, 0.4)
        digits = max(2, len(repr(value).split(".")[-1].split("e")[0]))
        new = float(f"{new:.{digits}g}") if abs(new) >= 1e-4 else new
        return repr(new) if new != value and abs(new - value) > 1e-6 * max(1.0, abs(value)) else None
    if isinstance(value, (str, bytes)):
        m = _STR_PREFIX.match(token)
        if not m or "f" in m.group(1).lower():
            return None
        prefix, quote = m.groups()
        body = token[len(prefix) + len(quote): len(token) - len(quote)]
        edit = _edit_number_text if _NUMBER_TEXT.fullmatch(body) else _edit_text
        for _ in range(30):
            new_body = edit(body, rng)
            if new_body is None:
                return None
            cand = prefix + quote + new_body + quote
            try:
                if literal_eval(cand) != value:
                    return cand
            except (ValueError, SyntaxError):
                continue
        return None
    return None


# A string that spells a number ("1102.50", "-3", "12,000", "7.5%"): its copies
# keep its format (red team 11 told "1112.050" from "1102.50" by its decimals).
_NUMBER_TEXT = copy_steps.NUMBER_TEXT


def _edit_number_text(body: str, rng: random.Random) -> str | None:
    """One nonzero digit of a number written as text replaced by another nonzero
    digit: the length, separators, decimals and zeros (its roundness) stay."""
    places = [i for i, ch in enumerate(body) if ch in "123456789"]
    if not places:
        return None
    i = rng.choice(places)
    return body[:i] + rng.choice([d for d in "123456789" if d != body[i]]) + body[i + 1:]


_SITE_CHANGE = re.compile(r"^line [^:]*: (.+) -> (.+)$")


def format_tell(site: str) -> bool:
    """Whether a stored copy's change (`line 23: "1102.50" -> "1112.050"`) gives
    the copy away by its format: a string that spells a number changed into one
    of another shape. Tasks written before copies kept that shape still hold
    such copies; verify leaves them out (red team 12 won with them)."""
    m = _SITE_CHANGE.match(site)
    if not m:
        return False
    try:
        old, new = literal_eval(m.group(1)), literal_eval(m.group(2))
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return False
    if not (isinstance(old, str) and isinstance(new, str) and _NUMBER_TEXT.fullmatch(old)):
        return False
    # length, signs, separators, and a leading zero ("10.00" -> "00.00")
    return re.sub(r"\d", "d", old) != re.sub(r"\d", "d", new) or _LEADING_ZERO.match(old) is None and \
        _LEADING_ZERO.match(new) is not None


_LEADING_ZERO = re.compile(r"[+-]?0\d")


def _insert_letter(body: str, rng: random.Random) -> str:
    """One letter or digit inserted, of the kind before it, away from escapes."""
    i = rng.randint(0, len(body))
    if i > 0 and body[i - 1] == "\\":
        i -= 1
    own = sorted({x for x in body if x.isascii() and x.isalnum()})
    pool = _alphabet(body[i - 1] if i > 0 else "")
    return body[:i] + rng.choice(own if own and rng.random() < 0.8 else pool) + body[i:]


def _replace_letter(body: str, i: int, rng: random.Random) -> str:
    """The letter or digit at `i` replaced by another of its kind. Letters the
    string already uses look like a real value ("XIV" -> "XIX"), so a reader
    cannot tell the copy from the original by its alphabet."""
    ch = body[i]
    kind = str.isdigit if ch.isdigit() else str.isupper if ch.isupper() else str.islower
    own = sorted({x for x in body if x.isascii() and x.isalnum() and kind(x) and x != ch})
    choices = own if own and rng.random() < 0.8 else [x for x in _alphabet(ch) if x != ch]
    return body[:i] + rng.choice(choices) + body[i + 1:]


def _edit_text(body: str, rng: random.Random) -> str | None:
    """Replace, delete or insert one letter or digit, away from escapes."""
    safe = [i for i, ch in enumerate(body) if ch.isalnum() and ch.isascii()
            and (i == 0 or body[i - 1] != "\\")]
    op = rng.choice(["insert"] + (["replace", "replace", "delete"] if safe else []))
    if op == "insert":
        return _insert_letter(body, rng)
    i = rng.choice(safe)
    if op == "delete":
        return body[:i] + body[i + 1:]
    return _replace_letter(body, i, rng)


# ------------------------------------------------------------------- rendering


def _apply(lines: list[str], edits: list[Edit]) -> list[str] | None:
    """Apply byte-offset edits to 1-based `lines` (a copy is returned; an edit
    over several lines leaves the text of the region on its first line)."""
    out = list(lines)
    for e in sorted(edits, key=lambda e: (e.line, e.start), reverse=True):
        last = e.end_line or e.line
        first_raw = out[e.line - 1].encode("utf-8")
        last_raw = out[last - 1].encode("utf-8")
        if e.end > len(last_raw) or e.start > len(first_raw):
            return None
        merged = (first_raw[:e.start] + e.text.encode("utf-8") + last_raw[e.end:]).decode("utf-8")
        out[e.line - 1:last] = [merged] + [""] * (last - e.line)
    return out


def _mutate_table(site: Site, rng: random.Random, base=None, value=None) -> tuple | None:
    """The table with the site's value changed (to `value` when given; else from
    `base`, a previous copy's value, when given; never back to the original)."""
    assert site.table is not None           # only a table site's edits come here
    rows = [list(r) if isinstance(r, tuple) else [r] for r in site.table]
    single = not isinstance(site.table[0], tuple)
    orig = rows[site.row][site.column]
    if value is not None:
        rows[site.row][site.column] = value
        return tuple(r[0] if single else tuple(r) for r in rows)
    v = orig if base is None else base
    if not isinstance(v, (str, bytes, int, float)):
        return None
    for _ in range(10):
        tok = _new_token(repr(v), v, rng)
        if tok is not None:
            new = literal_eval(tok)
            if new != v and new != orig:
                rows[site.row][site.column] = new
                return tuple(r[0] if single else tuple(r) for r in rows)
    return None


def _named(src_lines: list[str], fn, edits: list[Edit]) -> str | None:
    """The function's source with `edits` applied and NAME_TOKEN as its name."""
    first, last = span(fn)
    changed = _apply(src_lines, edits)
    if changed is None:
        return None
    def_line = changed[fn.lineno - 1]
    new_def = re.sub(r"\bdef\s+" + re.escape(fn.name) + r"\b", "def " + NAME_TOKEN, def_line, count=1)
    if new_def == def_line:
        return None
    changed[fn.lineno - 1] = new_def
    text = "".join(changed[first - 1:last])
    if not text.endswith("\n"):
        text += "\n"
    indent = len(text) - len(text.lstrip(" \t"))
    try:
        parse_python(("if 1:\n" + text) if indent else text)
    except SyntaxError:
        return None
    return text


def base_text(src_lines: list[str], fn) -> str | None:
    """The test function's source as its copies are rendered, unchanged."""
    return _named(src_lines, fn, [])


def _render(src_lines: list[str], fn, site: Site, rng: random.Random, base=None, chosen=None
            ) -> tuple[str, str, str, object] | None:
    """(copy source, what changed, the original rewritten or "", the new value).
    `base`: a previous copy's new value, to change instead of the original's;
    `chosen`: the new value itself (a token, an exception's name, a table cell)."""
    edits = site.edits_for(rng)
    if not edits:
        return None
    what = "negated an assertion"
    new: str | None
    if edits[0].text == "\1":
        assert site.table is not None       # "\1" edits are made only for table sites
        e = edits[0]
        new_table = _mutate_table(site, rng, base, chosen)
        if new_table is None:
            return None
        copy = _named(src_lines, fn, [Edit(e.line, e.start, e.end, repr(new_table), e.end_line)])
        original = _named(src_lines, fn, [Edit(e.line, e.start, e.end, repr(tuple(site.table)),
                                               e.end_line)])
        if copy is None or original is None:
            return None
        changed = next(f"{a!r} -> {b!r}" for a, b in zip(site.table, new_table) if a != b)
        row = new_table[site.row]
        value = row[site.column] if isinstance(row, tuple) else row
        return copy, f"line {site.where}: {changed[:80]}", original, value
    if edits[0].text == "\2":
        e = edits[0]
        orig = src_lines[e.line - 1].encode("utf-8")[e.start:e.end].decode("utf-8")
        start = orig if base is None else base
        pool = site.choices if site.choices is not None else SWAPPABLE if orig in SWAPPABLE else FOR_CUSTOM
        options = [x for x in pool if _unrelated(x, orig) and _unrelated(x, start)]
        if not options and chosen is None:
            return None
        new = chosen if isinstance(chosen, str) else rng.choice(options)
        text = _named(src_lines, fn, [Edit(e.line, e.start, e.end, new)])
        return (text, f"line {site.where}: {orig} -> {new}", "", new) if text is not None else None
    if edits[0].text == "\0":
        e = edits[0]
        raw = src_lines[e.line - 1].encode("utf-8")
        token = raw[e.start:e.end].decode("utf-8")
        try:
            value = literal_eval(token)
            start = token if base is None else base
            new = chosen if isinstance(chosen, str) else _new_token(start, literal_eval(start), rng)
            if new is None or literal_eval(new) == value:
                return None
        except (ValueError, SyntaxError):
            return None
        edits = [Edit(e.line, e.start, e.end, new)]
        what = f"{token[:40]} -> {new[:40]}"
        text = _named(src_lines, fn, edits)
        same = canonical(token, value)
        original = "" if same == token else _named(src_lines, fn, [Edit(e.line, e.start, e.end, same)])
        if text is None or original is None:
            return None
        return text, f"line {site.where}: {what}", original, new
    text = _named(src_lines, fn, edits)
    return (text, f"line {site.where}: {what}", "", None) if text is not None else None


def _token(lines: list[str], site: Site, rng: random.Random) -> str:
    e = site.edits_for(rng)[0]
    if site.table is not None or e.text == "\2":
        return "\x00"
    return lines[e.line - 1].encode("utf-8")[e.start:e.end].decode("utf-8", "replace")


def _numbers_of(fn) -> list:
    """The numbers a test function writes, signs included."""
    out: list = []
    negated: set[int] = set()
    for n in ast.walk(fn):
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub) and isinstance(n.operand, ast.Constant) \
                and copy_values._is_number(n.operand.value):
            out.append(-cast(float, n.operand.value))
            negated.add(id(n.operand))
        elif isinstance(n, ast.Constant) and copy_values._is_number(n.value) and id(n) not in negated:
            out.append(n.value)
    return out


def _local(fn, v, row=()) -> tuple[list[str], list]:
    """The strings and numbers around a site: its table row's other cells, then
    the rest of its test (the site's own occurrence left out)."""
    cells = [x for x in row if x is not v]
    strs = [x for x in cells if isinstance(x, str)]
    nums = [x for x in cells if copy_values._is_number(x)]
    fs = [n.value for n in ast.walk(fn) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    fnums = _numbers_of(fn)
    for pool in (fs, fnums):
        if v in pool and not isinstance(v, bool):
            pool.remove(v)
    return strs + fs, nums + fnums


def _source_of(lines: list[str], e: Edit) -> str:
    if not e.end_line or e.end_line == e.line:
        return lines[e.line - 1].encode("utf-8")[e.start:e.end].decode("utf-8", "replace")
    first = lines[e.line - 1].encode("utf-8")[e.start:].decode("utf-8", "replace")
    last = lines[e.end_line - 1].encode("utf-8")[:e.end].decode("utf-8", "replace")
    return first + "".join(lines[e.line:e.end_line - 1]) + last


# Complements (`is None` / `is not None`, assertTrue / assertFalse, `assert x` /
# `assert not x`, True / False) have one other value and a prior a reader can
# estimate from the module (and from every test file): not copied when matched.
def _table_names(lines: list[str], e: Edit) -> list[str]:
    """The module constants a table site's source names (TestCopy.tables)."""
    return sorted(set(re.findall(r"[A-Za-z_]\w*", _source_of(lines, e))))


MATCHED_COMPLEMENTS = False
# Expected exceptions: swapped for the module's other exception classes (used as
# often; builtins under their prior), a reader still picked the original in 70%
# of 53 held-out pairs (bench/bench_copies.py, 2026-12): not copied when matched.
MATCHED_EXCEPTIONS = False


def matched_values(lines: list[str], fn, ctx: copy_values.Context, site: Site, rng: random.Random,
                   k: int) -> tuple[list, list[str]] | None:
    """The values of a site's copies under CopyStyle.MATCHED, and the module
    constants its table names (see TestCopy.tables), or None: no copy can pass
    for the original there."""
    e = site.edits_for(rng)[0]
    if site.table is not None:
        row = site.table[site.row]
        v = row[site.column] if isinstance(row, tuple) else row
        names = _table_names(lines, e)
        # A table other code also names would show the original as the copy of it.
        if any(ctx.names[n] != 1 for n in names):
            return None
        strs, nums = _local(fn, v, row if isinstance(row, tuple) else ())
        toks = (copy_values.string_values(repr(v), v, ctx, rng, k, strs) if isinstance(v, str)
                else copy_values.number_values(repr(v), v, ctx, nums, rng, k) if copy_values._is_number(v) else None)
        return ([literal_eval(t) for t in toks], names) if toks else None
    if e.text == "\2":
        if not MATCHED_EXCEPTIONS:
            return None
        exc = _source_of(lines, e)
        found = copy_values.exception_values(exc, ctx, rng, k)
        return (found, []) if found else None
    if e.text == "\0":
        token = _source_of(lines, e)
        try:
            v = literal_eval(token)
        except (ValueError, SyntaxError):
            return None
        if isinstance(v, bool):
            return ([None], []) if MATCHED_COMPLEMENTS else None
        strs, nums = _local(fn, v)
        if isinstance(v, str):
            toks = copy_values.string_values(token, v, ctx, rng, k, strs)
        elif copy_values._is_number(v):
            toks = copy_values.number_values(token, v, ctx, nums, rng, k)
        else:
            return None
        return (toks, []) if toks else None
    return ([None], []) if MATCHED_COMPLEMENTS else None


class Reader:
    """One test file as copy_odds' reader sees it, to balance one-step copies."""

    def __init__(self, lines: list[str], text: str, corpus: copy_odds.Corpus, hidden: Sequence = (),
                 size: int = 1, classes: Callable[[], ClassTree] | None = None) -> None:
        self.lines, self.text, self.corpus = lines, text, corpus
        self.classes = classes          # the tree's class bases, read when a set needs them
        self.hidden = list(hidden)      # the file's hidden test functions: copies of them are planted too
        self.size = size                # copies a set: the task's, settled before any draw
        self._seen: dict[int, tuple[str, copy_odds.Context] | None] = {}
        self._loads: Counter | None = None
        self._tree: ast.Module | None = None
        self._blanked: dict[int, str] = {}     # id(fn) -> _without_values(fn): every other test's context needs it

    def loads(self, tree: ast.Module) -> Counter:
        """How often each name is read in the module (a parametrize table's
        constant that another test uses gets no balanced set)."""
        if self._loads is None:
            self._loads = Counter(n.id for n in ast.walk(tree)
                                  if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load))
        return self._loads

    def _own(self, fn) -> tuple[str, copy_odds.Context] | None:
        if id(fn) not in self._seen:
            own = _named(self.lines, fn, [])
            self._seen[id(fn)] = None if own is None else (own, self._context(fn))
        return self._seen[id(fn)]

    def _context(self, fn) -> copy_odds.Context:
        """The module as a reader of the planted file sees it around `fn`'s
        group: `fn` gone, and every other hidden test as often as it stands
        there with a set of copies (each copy repeats all of its text but one
        value; review of 6cb59ba, finding 8). The repeats leave out the other
        test's expected values, which its copies change: counted 1 + size
        times, a value two tests share looked original, and such tests lost
        most of their sets (review 2026-12-04-copy-sets-review-2, finding 6)."""
        first, last = span(fn)
        rest = self.lines[:first - 1] + self.lines[last:]
        extra = []
        for other in self.hidden:
            if other is not fn:
                extra += [textwrap.dedent(self._without_values(other))] * self.size
        return copy_odds.Context.without("".join(rest) + "\n\n" + "\n\n".join(extra), [])

    def _without_values(self, fn) -> str:
        """`fn`'s text with each expected value or class a copy may change
        written as `_`."""
        if id(fn) not in self._blanked:
            self._blanked[id(fn)] = self._blank(fn)
        return self._blanked[id(fn)]

    def _blank(self, fn) -> str:
        a, b = span(fn)
        lines = [ln.encode("utf-8") for ln in self.lines[a - 1:b]]
        if self._tree is None:
            self._tree = parse_python(self.text)
        cuts: dict[int, list[tuple[int, int]]] = {}
        for site in sites(fn, self._tree):
            if site.kind != "value" or site.table is not None:
                continue
            e = site.edits_for(random.Random(0))[0]
            if e.text in ("\0", "\2") and not (e.end_line and e.end_line != e.line) and a <= e.line <= b:
                cuts.setdefault(e.line - a, []).append((e.start, e.end))
        for i, spans in cuts.items():
            for start, end in sorted(set(spans), reverse=True):
                lines[i] = lines[i][:start] + b"_" + lines[i][end:]
        return b"".join(lines).decode("utf-8", "replace")

    def scores(self, fn, copies: list[str], original: str | None = None) -> list[float] | None:
        """The reader's score of the original (as planted) and each copy, side by
        side; zeros where the reader would not group them (it sees no group);
        None where it cannot weigh them (such a set is not kept)."""
        seen = self._own(fn)
        if seen is None:
            return None
        try:
            got = copy_odds.set_scores(original or seen[0], copies, seen[1], self.corpus)
        except (OverflowError, ValueError, ArithmeticError, RecursionError, MemoryError):
            return None
        return got if got is not None else [0.0] * (len(copies) + 1)


def set_size(root: Path, refs) -> int:
    """Copies in each one-step set of a task: two where fewer than four hidden
    tests have a value site (a guess is then right one time in three, not two),
    else one, as verify.choose_copies plants. Settled from the tests' shape
    before any draw, so that no refusal sets it (review of 731a903, finding 6)."""
    trees: dict[str, ast.Module | None] = {}
    with_sites = 0
    for r in refs:
        if r.file not in trees:
            try:
                trees[r.file] = parse_python((root / r.file).read_text(encoding="utf-8"))
            except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
                trees[r.file] = None
        tree = trees[r.file]
        fn = find_def(tree, r) if tree is not None else None
        with_sites += fn is not None and any(s.kind == "value" for s in sites(fn, tree))
        if with_sites >= 4:
            return 1
    return 2


# One-step copies are kept as sets at the reader's odds (copy_steps.keep); off,
# the copies the reader picks the original of 0.75-0.83 of the time.
BALANCED = True


def propose(root: Path, nodeids: list[str], seed: str, sites_per_test: int = 2,
            values_per_site: int = 2, style: CopyStyle | None = None,
            removed: AbstractSet[str] = frozenset(), corpus: copy_odds.Corpus | None = None
            ) -> list[TestCopy]:
    """Candidate copies of the test functions behind `nodeids` (not yet validated).

    Per test: up to `sites_per_test` literals; balanced (the default), one
    set of `set_size` copies each (grade/copy_steps.py), else `values_per_site`
    replacements each. Copies of one test only ever differ from it at the same
    literal: copies that changed different literals would outvote the real
    value at each one ("IV" in the original and in the copy that changed "XIV").
    `removed`: names the feature's removal takes out of the workspace (no
    exchange block swaps an exception class the solution will define).
    `corpus`: the reader's prior (default: the tree's test files), less each
    file's own share."""
    token = HELPERS.set(assert_helpers(root))
    try:
        return _propose(root, nodeids, seed, sites_per_test, values_per_site, style, removed, corpus)
    finally:
        HELPERS.reset(token)


def _propose(root: Path, nodeids: list[str], seed: str, sites_per_test: int, values_per_site: int,
             style: CopyStyle | None, removed: AbstractSet[str], corpus: copy_odds.Corpus | None
             ) -> list[TestCopy]:
    style = style or DEFAULT_STYLE
    readers: dict[str, Reader | None] = {}
    classes = functools.cache(lambda: ClassTree.of(root))

    size: list[int] = []

    def reader_of(file: str, lines: list[str], text: str, tree: ast.Module) -> Reader | None:
        nonlocal corpus
        if not BALANCED:
            return None
        if not size:
            size.append(set_size(root, refs))
        if file not in readers:
            if corpus is None:
                corpus = copy_odds.corpus_of_tree(root)
            hidden = [f for r in refs if r.file == file and (f := find_def(tree, r)) is not None]
            readers[file] = Reader(lines, text, corpus.minus(copy_odds.corpus_of_texts([text])), hidden,
                                   size[0], classes)
        return readers[file]

    rng = random.Random(seed)
    refs = sorted({r for r in map(test_ref, nodeids) if r is not None},
                  key=lambda r: (r.file, r.cls, r.func))
    parsed: dict[str, tuple[ast.Module, list[str], str] | None] = {}
    contexts: dict[str, copy_values.Context] = {}
    exchanged: dict[str, list] = {}
    out: list[TestCopy] = []
    for ref in refs:
        if ref.file not in parsed:
            try:
                text = (root / ref.file).read_text(encoding="utf-8")
                parsed[ref.file] = (parse_python(text), text.splitlines(keepends=True), text)
            except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
                parsed[ref.file] = None
        entry = parsed[ref.file]
        if entry is None:
            continue
        tree, lines, text = entry
        fn = find_def(tree, ref)
        if fn is None or (not ref.cls and used_by_name(tree, ref.func)):
            continue        # a test called by name elsewhere: the call would point at the original
        if style is CopyStyle.EXCHANGED:
            exchanged.setdefault(ref.file, []).append((ref, fn))
            continue
        if style is CopyStyle.MATCHED:
            ctx = contexts.get(ref.file) or contexts.setdefault(ref.file, copy_values.Context.of(tree))
            out += _matched_copies(ref, lines, fn, ctx, _value_sites(fn, tree, lines, text, rng), rng,
                                   sites_per_test, values_per_site)
            continue
        out += _legacy_copies(ref, lines, fn, tree, text, rng, sites_per_test, values_per_site,
                              reader_of(ref.file, lines, text, tree), removed)
    for file, tests in exchanged.items():
        entry = parsed[file]
        assert entry is not None            # only parsed files are listed
        tree, lines, text = entry
        if one_step_file(seed, file):
            # The file's tier by a coin that sees no value: a test that reached
            # the balanced sets only when blocks and matched values refused it
            # would name its original by what they refuse (0, round numbers:
            # review 2026-12-04-copy-sets-review-2, finding 1).
            for ref, fn in tests:
                out += _legacy_copies(ref, lines, fn, tree, text, rng, sites_per_test, values_per_site,
                                      reader_of(file, lines, text, tree), removed)
            continue
        out += _exchanged_copies(tests, tree, lines, rng, removed)
        # Every test keeps copies outside its block too, planted only where the
        # block is not (no block could take the test, or the gold passed one of
        # the block's copies and calibrate.py dropped it): values matched to the
        # original's profile where the module has them (at chance as well), and
        # unbalanced one-step copies, easier to read but still a defence
        # against forged results, for the tests that have neither.
        ctx = copy_values.Context.of(tree)
        for ref, fn in tests:
            out += _matched_copies(ref, lines, fn, ctx, _value_sites(fn, tree, lines, text, rng), rng,
                                   sites_per_test, values_per_site)
            out += _legacy_copies(ref, lines, fn, tree, text, rng, sites_per_test, values_per_site,
                                  None, removed)
    # Tests that only expect a raise: inputs exchanged with a test accepting
    # one (grade/copy_raises.py), whatever the style; drawn last, from a stream
    # of their own, so that the other copies are drawn as before.
    own = random.Random(rng.random())
    by_file: dict[str, list] = {}
    for ref in refs:
        entry = parsed.get(ref.file)
        fn = find_def(entry[0], ref) if entry is not None else None
        if entry is not None and fn is not None and (ref.cls or not used_by_name(entry[0], ref.func)):
            by_file.setdefault(ref.file, []).append((ref, fn))
    sources = copy_raises.package_sources(root) if by_file else []
    package = copy_raises.package_text(sources)
    traded: dict[str, set[str]] = {}
    words = tuple(vocab.read_vocabularies(sources, removed))
    for file, tests in by_file.items():
        tree, lines = parsed[file][0], parsed[file][1]                                  # type: ignore[index]
        blocks = copy_raises.exchange_blocks(tests, lines, own, _named, Edit,
                                             copy_raises.shown_elsewhere(tree, package),
                                             copy_raises.same_kinds(words))
        traded[file] = {t for m in blocks for t in m.trades}
        out += blocks
    # ... and near twins of their inputs, from a stream of their own
    twins = random.Random(own.random())
    for file, tests in by_file.items():
        out += copy_raises.fresh_copies(tests, parsed[file][1], twins, _named, Edit,                    # type: ignore[index]
                                        module=parsed[file][0], vocab=words)                      # type: ignore[index]
    # ... and value twins of the inputs equalities show, from one more stream
    valued = random.Random(own.random())
    for file, tests in by_file.items():
        out += copy_raises.valued_copies(tests, parsed[file][1], valued, _named, Edit,                  # type: ignore[index]
                                         module=parsed[file][0], vocab=words)                     # type: ignore[index]
        out += copy_raises.table_valued_copies(tests, parsed[file][1], valued, _named, Edit,            # type: ignore[index]
                                               module=parsed[file][0], vocab=words)               # type: ignore[index]
    # ... and twins of the inputs the blocks trade, alike for each, from the last
    lent = random.Random(own.random())
    for file, tests in by_file.items():
        out += copy_raises.traded_copies(tests, parsed[file][1], traded[file], lent, _named, Edit,      # type: ignore[index]
                                         module=parsed[file][0], vocab=words)                     # type: ignore[index]
    return mark_built(out, parsed)


def mark_built(copies_: list[TestCopy], parsed: dict[str, tuple[ast.Module, list[str], str] | None]
               ) -> list[TestCopy]:
    """Each copy's `built` (it changes a literal of a package-built expectation)
    and `test_built` (its test has one): a test with such a site is protected
    only by copies there (protected_tests), and verify plants them first."""
    places: dict[tuple, set[tuple[int, int]]] = {}
    for m in copies_:
        key = (m.file, tuple(m.cls), m.func)
        if key in places:
            continue
        entry = parsed.get(m.file)
        tree = entry[0] if entry else None
        fn = find_def(tree, TestRef(m.file, tuple(m.cls), m.func)) if tree else None
        places[key] = set() if fn is None else _places(
            [st for st in sites(fn, tree) if st.kind == "value" and st.built])
    for m in copies_:
        where = places[(m.file, tuple(m.cls), m.func)]
        m.test_built = bool(where)
        m.built = group_place(m.group) in where
    return copies_


def group_place(group: str) -> tuple[int, int] | None:
    """(line, column) of the literal a single-site group changes ("func@12:8:0")."""
    _, at, rest = group.rpartition("@")
    parts = rest.split(":")
    if not at or len(parts) < 2 or not (parts[0].isdigit() and parts[1].isdigit()):
        return None
    return int(parts[0]), int(parts[1])


def one_step_file(seed: str, file: str) -> bool:
    """Whether a test file of the task gets balanced one-step sets (else
    exchange blocks and matched values): a coin of the task's seed and the
    file's path alone, so that which tier a test reaches says nothing of its
    values."""
    return random.Random(f"{seed}\0tier\0{file}").random() < ONE_STEP_SHARE


def _value_sites(fn, tree: ast.Module, lines: list[str], text: str, rng: random.Random) -> list[Site]:
    """A test's value sites, the literals that occur least in the file first."""
    values = [s for s in sites(fn, tree) if s.kind == "value"]
    rng.shuffle(values)
    values.sort(key=lambda s: text.count(_token(lines, s, rng)))
    return values


def _legacy_copies(ref: TestRef, lines: list[str], fn, tree: ast.Module, text: str, rng: random.Random,
                   sites_per_test: int, values_per_site: int, reader: Reader | None = None,
                   removed: AbstractSet[str] = frozenset()) -> list[TestCopy]:
    """CopyStyle.LEGACY: one-step perturbations of up to `sites_per_test` literals.
    With a `reader`, balanced sets (_balanced_copies); a test every set of which
    was refused, and every test without a reader, gets `values_per_site`
    copies a literal, all kept (the grader before issue 23)."""
    if reader is not None:
        # Its own stream, drawn from the shared one: how many draws a test's
        # sets take never moves the other tiers' draws.
        own = random.Random(rng.random())
        sets = _balanced_copies(ref, lines, fn, tree, own, sites_per_test, reader, removed)
        built = [st for st in sites(fn, tree) if st.kind == "value" and st.built]
        if sets and built and not {group_place(m.group) for m in sets} & _places(built):
            # No set held at a package-built expectation: one-step copies there
            # too, which verify plants for this test (an echo of what the
            # constructor saw passes every copy elsewhere, red team 13's c09).
            own.shuffle(built)
            return sets + _loose_copies(ref, lines, fn, built, own, 1, values_per_site, removed)
        if sets:
            return sets
        # Every set refused: copies the reader may tell apart are still better
        # than none, which an oracle or a blind forger passes for free. They
        # say nothing of the balanced groups of other tests.
    return _loose_copies(ref, lines, fn, _value_sites(fn, tree, lines, text, rng), rng, sites_per_test,
                         values_per_site, removed)


def _places(sites_: list[Site]) -> set[tuple[int, int]]:
    return {(e.line, e.start) for st in sites_ for e in st.edits_for(random.Random(0))[:1]}


def _loose_copies(ref: TestRef, lines: list[str], fn, sites_: list[Site], rng: random.Random,
                  sites_per_test: int, values_per_site: int, removed: AbstractSet[str]) -> list[TestCopy]:
    """Unbalanced one-step copies of up to `sites_per_test` of `sites_`."""
    out: list[TestCopy] = []
    made = 0
    for site in sites_:
        if made >= sites_per_test:
            break
        e = site.edits_for(rng)[0]
        group = f"{ref.func}@{e.line}:{e.start}:{site.row}"
        # A named table is written out in the original and its copies: the
        # constant goes from the planted file once nothing uses it, or its rows
        # would name the original (drop_unused_constants).
        tables = _table_names(lines, e) if site.table is not None else []
        texts: set[str] = set()
        # The copies form a chain of one-letter changes with the original at a
        # random place in it (its middle one time in three), so that "the one
        # closest to both others" is no better than a guess.
        chain = rng.random() < 2 / 3
        prev = None
        for _ in range(values_per_site * 3):
            if len(texts) >= values_per_site:
                break
            r = _render(lines, fn, site, rng, base=prev if chain else None)
            if r is None or r[0] in texts:
                continue
            names = {_source_of(lines, e).rpartition(".")[2], str(r[3]).rpartition(".")[2]}
            if e.text == "\2" and names & set(removed):
                continue    # a class the removal takes out: an honest subclass would pass its copy
            prev = r[3]
            texts.add(r[0])
            out.append(TestCopy(file=ref.file, cls=list(ref.cls), func=ref.func, kind="value",
                              group=group, site=r[1], source=r[0], original=r[2], tables=tables))
        made += bool(texts)
    return out


class Proposal(NamedTuple):
    propose: copy_steps.Propose      # how a site's copies are drawn
    original: str                    # the original's value as planted: a token, a class's name, a form
    chosen: Callable[[str], object]  # a drawn value as _render takes it


def proposal_of(lines: list[str], site: Site, rng: random.Random,
                removed: AbstractSet[str] = frozenset(), classes: Callable[[], ClassTree] | None = None
                ) -> Proposal | None:
    """How a site's copies are proposed. None: the site has no one-step copies.
    `removed`: names the feature's removal takes out (no exception set holds
    one: a solution's own class may subclass another member, and pass its copy).
    `classes`: the tree's class bases; two project classes it cannot show
    apart are related (without it, related by name only)."""
    edits = site.edits_for(rng)
    if not edits:
        return None
    e = edits[0]
    raw = lines[e.line - 1].encode("utf-8")
    if e.text == "\1":
        assert site.table is not None
        row = site.table[site.row]
        cell = row[site.column] if isinstance(row, tuple) else row
        if not isinstance(cell, (str, bytes, int, float)):
            return None
        return Proposal(copy_steps.value_copies, repr(cell), literal_eval)
    if e.text == "\2":
        if site.named is None:
            return None
        orig = raw[e.start:e.end].decode("utf-8")
        if orig.rpartition(".")[2] in removed:
            return None
        # The site's pool, the same whichever member is the original: classes
        # of the original's kind the module names outside the site, that could
        # be a site's class themselves (a builtin outside SWAPPABLE never is,
        # so it would always be a copy: review 2026-12-04-copy-sets-review-2).
        outside = Counter(site.named)
        outside[orig] -= 1
        kind = _is_builtin_exc(orig)
        pool = [n for n, c in outside.items() if c > 0 and _is_builtin_exc(n) == kind
                and (n in SWAPPABLE or not kind) and n.rpartition(".")[2] not in removed]
        def related(a: str, b: str) -> bool:
            return not _unrelated(a, b) or (not kind and classes is not None and classes().related(a, b))
        return Proposal(copy_steps.exception_copies(pool, related), orig, str)
    if e.text == "\0":
        token = raw[e.start:e.end].decode("utf-8")
        try:
            value = literal_eval(token)
        except (ValueError, SyntaxError):
            return None
        return Proposal(copy_steps.value_copies, canonical(token, value), str)
    return None     # a fixed change (a negated form): two forms only, see copy_steps


def _balanced_copies(ref: TestRef, lines: list[str], fn, tree: ast.Module, rng: random.Random,
                     sites_per_test: int, reader: Reader, removed: AbstractSet[str] = frozenset()
                     ) -> list[TestCopy]:
    """Sets of `reader.size` copies, one proposed per site (symmetrically,
    copy_steps) and kept with copy_steps.keep under the reader's scores: a
    planted set shows its original at a uniformly random place as far as the
    reader can tell. A refused set is not drawn again; the next site is tried
    instead. Sites are tried in a random order, never by their values (rarest
    first made reaching a site depend on its original: review of 731a903,
    finding 5), up to `sites_per_test` kept."""
    out: list[TestCopy] = []
    made = 0
    k = reader.size
    order = [s for s in sites(fn, tree) if s.kind == "value"]
    rng.shuffle(order)
    order = built_first(order)
    loads = reader.loads(tree)
    for site in order:
        if made >= sites_per_test:
            break
        found = proposal_of(lines, site, rng, removed, reader.classes)
        if found is None:
            continue
        e = site.edits_for(rng)[0]
        tables = _table_names(lines, e) if site.table is not None else []
        if any(loads[n] != 1 for n in tables):
            continue    # a table another test uses stays in the file with the original's rows
        try:
            picked = found.propose(found.original, k, rng)
        except (ValueError, SyntaxError, ArithmeticError, MemoryError, RecursionError):
            picked = None
        if picked is None:
            continue
        if not _same_local_counts(fn, e, site, [found.original, *picked]):
            continue    # a member named elsewhere in the test: it would be the original
        rendered = [_render(lines, fn, site, rng, chosen=found.chosen(t)) for t in picked]
        rs = [r for r in rendered if r is not None]
        if len(rs) != k or len({r[0] for r in rs}) != k:
            continue
        scores = reader.scores(fn, [r[0] for r in rs], rs[0][2] or None)
        if scores is None or rng.random() >= copy_steps.keep(scores):
            continue
        made += 1
        out += [TestCopy(file=ref.file, cls=list(ref.cls), func=ref.func, kind="value",
                         group=f"{ref.func}@{e.line}:{e.start}:{site.row}:{k}", site=r[1], source=r[0],
                         original=r[2], tables=tables, balanced=k) for r in rs]
    return out


def _same_local_counts(fn, e: Edit, site: Site, members: list[str]) -> bool:
    """Whether every member of a set is named as often in the test outside the
    site (and, for a table's cell, in the table's other cells). A copy changes
    one place, so a value or class the test names elsewhere too is the
    original's (review 2026-12-04-copy-sets-review-2, finding 4: "the class
    named elsewhere in the test" read 0.62-0.71 against 0.5). The rest of the
    test is the same whichever member is the original, so refusing on it keeps
    the set's balance."""
    exc = e.text == "\2"
    try:
        values = [m.rpartition(".")[2] if exc else literal_eval(m) for m in members]
    except (ValueError, SyntaxError):
        return False
    found: list[object] = []
    inner: set[int] = set()
    for node in ast.walk(fn):
        line, col = getattr(node, "lineno", 0), getattr(node, "col_offset", -1)
        if line == e.line and e.start <= col < max(e.end, e.start + 1) or id(node) in inner:
            continue
        if exc:
            if isinstance(node, ast.Name):
                found.append(node.id)
            elif isinstance(node, ast.Attribute):
                found.append(node.attr)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(
                node.operand, ast.Constant) and isinstance(node.operand.value, (int, float)):
            inner.add(id(node.operand))
            found.append(-node.operand.value)
        elif isinstance(node, ast.Constant):
            found.append(node.value)
    if site.table is not None:
        for r, row in enumerate(site.table):
            cells = row if isinstance(row, tuple) else (row,)
            found += [c for i, c in enumerate(cells) if (r, i) != (site.row, site.column)]

    def count(v: object) -> int:
        return sum(1 for c in found if type(c) is type(v) and c == v)
    return len({count(v) for v in values}) == 1


def whole_sets(kept: Sequence, proposed: Sequence) -> list:
    """The kept copies of balanced sets whose every proposed copy was kept: a
    set that lost a copy to the gold's run would have the size a refusal gives,
    which the balance does not cover. Other copies pass through."""
    def key(c) -> tuple:
        return (c.file, tuple(c.cls), c.func, c.group)
    want = Counter(key(c) for c in proposed if c.balanced)
    have = Counter(key(c) for c in kept if c.balanced)
    return [c for c in kept if not c.balanced or have[key(c)] == want[key(c)]]


_SIMPLE_STR = re.compile(r"""^(['"])([^'"\\\r\n]*)\1$""")


def _slot_of(lines: list[str], fn, site: Site, rng: random.Random, index: int, owner
             ) -> cb.Slot | None:
    """The site as an exchangeable slot: a plain number, a simply quoted string,
    an expected exception class or a complement (`True`/`False` included); None
    for any other site."""
    if site.table is not None:
        return None
    e = site.edits_for(rng)[0]
    if e.end_line and e.end_line != e.line:
        return None
    token = _source_of(lines, e)
    family = ""
    value: object
    if site.polarity is not None:
        kind, (family, value) = cb.SlotKind.POLARITY, site.polarity
    elif e.text == "\2":
        kind, value = cb.SlotKind.EXCEPTION, token
    elif e.text == "\0":
        try:
            value = literal_eval(token)
        except (ValueError, SyntaxError):
            return None
        if isinstance(value, bool) and token in ("True", "False"):
            kind, family, value = cb.SlotKind.POLARITY, "bool", token
        elif isinstance(value, str) and _SIMPLE_STR.match(token):
            kind = cb.SlotKind.STRING
        elif copy_values._is_number(value) and not isinstance(value, bool) and (
                not isinstance(value, float) or math.isfinite(value)) and not re.match(
                r"-?0[xXoObB]", token):
            kind = cb.SlotKind.NUMBER         # written in decimal: the copies are
        else:
            return None
    else:
        return None
    first, last = span(fn)
    blanked = list(lines)
    raw = blanked[e.line - 1].encode("utf-8")
    blanked[e.line - 1] = (raw[:e.start] + b" " + raw[e.end:]).decode("utf-8", "replace")
    body = "".join(blanked[first - 1:last])
    words = cb.words_of(body)
    if kind is cb.SlotKind.POLARITY:
        # The form is the family and whether the test's own words lean negative
        # (its name is random in the planted file, so it does not count).
        return cb.Slot(index=index, owner=owner, kind=kind, value=value, words=words,
                       form=f"{family}:{cb.negative_cue(words - {fn.name})}")
    strs, nums = _local(fn, value) if kind is not cb.SlotKind.EXCEPTION else _local(fn, None)
    return cb.Slot(index=index, owner=owner, kind=kind, value=value, strings=tuple(strs),
                   numbers=tuple(float(x) for x in nums), words=words,
                   form=token[:1] if kind is cb.SlotKind.STRING else "")


def _exchanged_copies(tests: list, tree: ast.Module, lines: list[str], rng: random.Random,
                      removed: AbstractSet[str] = frozenset()) -> list[TestCopy]:
    """CopyStyle.EXCHANGED: the copies of one file's tests, in blocks whose tests
    exchange their expected values (see grade/copy_blocks.py). An exception class
    the removal takes out is never exchanged: the solution defines it again, and
    may derive it from the other class of the block (an honest choice the copy
    expecting that class would then pass)."""
    slots: list[cb.Slot] = []
    where: list[tuple[TestRef, object, Site]] = []
    for ref, fn in tests:
        for site in sites(fn, tree):
            if site.kind != "value":
                continue
            slot = _slot_of(lines, fn, site, rng, len(where), (tuple(ref.cls), ref.func))
            if slot is not None and not (slot.kind is cb.SlotKind.EXCEPTION
                                         and str(slot.value).rpartition(".")[2] in removed):
                slots.append(slot)
                where.append((ref, fn, site))
    out: list[TestCopy] = []
    for n, block in enumerate(cb.form_blocks(slots, rng)):
        made: list[TestCopy] = []
        for member in block:
            ref, fn, site = where[member.index]
            e = site.edits_for(rng)[0]
            quote = _source_of(lines, e)[:1]
            for other in block:
                if other is member:
                    continue
                # A complement's copy is its complement edit (a `True`/`False`
                # literal is the other's token), the value the other test has.
                chosen = (quote + str(other.value) + quote if member.kind is cb.SlotKind.STRING
                          else canonical(repr(other.value), other.value)
                          if member.kind is cb.SlotKind.NUMBER else str(other.value))
                r = _render(lines, fn, site, rng, chosen=chosen)
                if r is None:
                    break
                made.append(TestCopy(file=ref.file, cls=list(ref.cls), func=ref.func, kind="value",
                                     group=f"{ref.func}@{e.line}:{e.start}:{site.row}", site=r[1],
                                     source=r[0], original=r[2], block=f"{ref.file}#{n}"))
        if len(made) == len(block) * (len(block) - 1):
            out += made                   # a block is whole or absent
    return out


def _matched_copies(ref: TestRef, lines: list[str], fn, ctx: copy_values.Context, values: list[Site],
                     rng: random.Random, sites_per_test: int, k: int) -> list[TestCopy]:
    out: list[TestCopy] = []
    made = 0
    for site in values:
        if made >= sites_per_test:
            break
        found = matched_values(lines, fn, ctx, site, rng, k)
        if found is None:
            continue
        vals, tables = found
        e = site.edits_for(rng)[0]
        group = f"{ref.func}@{e.line}:{e.start}:{site.row}"
        texts: set[str] = set()
        for val in vals:
            r = _render(lines, fn, site, rng, chosen=val)
            if r is None or r[0] in texts:
                continue
            texts.add(r[0])
            out.append(TestCopy(file=ref.file, cls=list(ref.cls), func=ref.func, kind="value",
                              group=group, site=r[1], source=r[0], original=r[2], tables=tables,
                              matched=True))
        made += bool(texts)
    return out


_FLIP = re.compile(r"^line \d+: (True|False) -> (True|False)$")


def is_complement(copy: TestCopy) -> bool:
    """A copy that swaps an assertion for its complement (`not`, `is not None`,
    assertFalse, True for False). It stops forged reports, not an object equal
    to everything: that object is truthy, so it passes `assert x` and fails
    `assert not x` exactly as the gold's value does."""
    if copy.cross:      # a crossed copy: every site it changes (grade/copy_cross.py)
        return all(p.endswith("negated an assertion") or bool(_FLIP.match(p))
                   for p in copy.site.split(" | "))
    return copy.site.endswith("negated an assertion") or bool(_FLIP.match(copy.site))


def protected_tests(copies: Iterable[TestCopy]) -> set[tuple[str, tuple[str, ...], str]]:
    """(file, classes, function) of the tests a value copy protects: one that
    only negates an assertion does not (an object making every such assertion
    true fails it exactly as the gold does: red team of 2026-12-05, 8), nor
    does a near twin of an input (copy_raises.fresh_copies): it asks the
    feature on a new input, and a forger may pass it as the gold does."""
    # A test with a package-built expectation (`Money("88.85")`) is protected
    # only by copies that change one: the package's constructor sees that
    # literal, so a solution can echo it, and copies elsewhere in the test
    # pass such an echo by failing on their own site (red team 13, c09).
    return {(m.file, tuple(m.cls), m.func) for m in copies if m.kind == "value" and not is_complement(m)
            and not m.fresh and (m.built or not m.test_built)}


def is_swap(m: TestCopy) -> bool:
    """A copy that only swaps exception classes (`raises(ValueError)` ->
    `raises(ZeroDivisionError)`): it protects which class a test expects and
    when, never a value the feature computes."""
    parts = m.site.split(" | ")
    return all(swapped_classes(p) for p in parts)


def value_protected(copies: Iterable[TestCopy]) -> set[tuple[str, tuple[str, ...], str]]:
    """The tests protected_tests names, less those whose only protecting
    copies swap exception classes."""
    return protected_tests(m for m in copies if not is_swap(m))


# ------------------------------------------------------------ planting, naming


@dataclass
class Plan:
    """What one run planted: random name -> the test it stands for."""
    originals: dict[str, TestRef] = field(default_factory=dict)   # new name -> original test
    copies: dict[str, TestCopy] = field(default_factory=dict)      # new name -> copy
    seals: SealPlan = field(default_factory=SealPlan)               # sealed sites (grade/seals.py)

    def _unsealed_id(self, nodeid: str) -> str:
        """The id with the parameter id it had before a sealed table was given random ones."""
        head, sep, params = nodeid.partition("[")
        return head + self.seals.old_suffix(head, sep + params) if sep else nodeid

    def original_id(self, nodeid: str) -> str:
        """The id a renamed test had before renaming (unchanged if not renamed)."""
        nodeid = self._unsealed_id(nodeid)
        parts = nodeid.split("::")
        name, sep, params = parts[-1].partition("[")
        ref = self.originals.get(name)
        if ref is None:
            return nodeid
        return "::".join(parts[:-1] + [ref.func + sep + params])

    def copy_of(self, nodeid: str) -> tuple[str, str] | None:
        """(planted name, id suffix) for a planted copy's id: its file and
        classes must be exactly where it was planted (a report under a made-up
        path with the same name is not the copy's)."""
        head, sep, params = self._unsealed_id(nodeid).partition("[")
        parts = head.split("::")
        m = self.copies.get(parts[-1])
        if m is None or parts[:-1] != [m.file, *m.cls]:
            return None
        return parts[-1], sep + params


def new_name(func: str, taken: set[str]) -> str:
    """A random name that pytest and unittest still collect. Nothing of the
    original's name is kept: a shared prefix would show which tests have copies
    and which do not. (unittest runs methods in name order: a class whose tests
    depend on their order is caught at generation, and graded without renaming
    or copies.)"""
    if func.startswith("test_"):
        prefix = "test_"
    elif func.startswith("test"):
        prefix = "test"
    else:
        prefix = func.split("_", 1)[0] + "_"
    while True:
        name = prefix + secrets.token_hex(6)
        if name not in taken:
            taken.add(name)
            return name


def _splice(lines: list[str], spans: dict[tuple, tuple[int, int, ast.FunctionDef | ast.AsyncFunctionDef]],
            names: dict[tuple, str], rewrites: dict[tuple, str], inserts: dict[int, list[str]]) -> str:
    """The file with each test under its new name (or rewritten to its copies'
    shape) and the copies inserted before the 0-based line indexes of `inserts`."""
    starts = {first - 1: (last, key) for key, (first, last, _) in spans.items()}
    out: list[str] = []
    i = 0
    while i <= len(lines):
        out += inserts.get(i, [])
        if i == len(lines):
            break
        if i not in starts:
            out.append(lines[i])
            i += 1
            continue
        last, key = starts[i]
        fn = spans[key][2]
        new = names.get(key, key[1])
        if key in rewrites:
            out.append(rewrites[key].replace(NAME_TOKEN, new))
        else:
            block = lines[i:last]
            d = fn.lineno - 1 - i
            block[d] = _renamed_def(block[d], key[1], new)
            out += block
        i = last
    return "".join(out)


def _renamed_def(line: str, old: str, new: str) -> str:
    """A `def old` line as `def new`."""
    return re.sub(r"\bdef\s+" + re.escape(old) + r"\b", "def " + new, line, count=1)


def used_by_name(tree: ast.Module, func: str) -> bool:
    """Whether the module uses its global `func` as a plain name elsewhere
    (`test_text(...)` in another test). Such a test is planted without copies:
    the use would point at the original among them (plant and propose check)."""
    return any(isinstance(n, ast.Name) and n.id == func for n in ast.walk(tree)) \
        and bool(_global_uses(tree, func))


def _binds(scope: ast.AST, name: str) -> bool:
    """Whether `name` is local to a function or class scope (a parameter, an
    assignment, a def or import of that name), not declared global."""
    body: list[ast.AST] = []
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        body = list(scope.body)
    elif isinstance(scope, ast.Lambda):
        body = [scope.body]
    nodes: list[ast.AST] = []
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        a = scope.args
        if any(x.arg == name for x in [*a.posonlyargs, *a.args, *a.kwonlyargs,
                                      *([a.vararg] if a.vararg else []), *([a.kwarg] if a.kwarg else [])]):
            return True
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        nodes.append(node)
        if isinstance(node, ast.Global) and name in node.names:
            return False
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name == name:
                return True
            continue                    # a nested scope's own bindings are its own
        if isinstance(node, ast.Lambda):
            continue
        stack.extend(ast.iter_child_nodes(node))
    return any((isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, (ast.Store, ast.Del)))
               or (isinstance(n, ast.alias) and (n.asname or n.name.split(".")[0]) == name)
               for n in nodes)


def _global_uses(tree: ast.Module, name: str) -> list[ast.Name]:
    """The `ast.Name` nodes of `name` that mean the module's global (no function
    scope between them and the module binds it; a class body that binds it
    shadows it for its own lines only, not for its methods)."""
    out: list[ast.Name] = []
    scopes = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)

    def expr(node: ast.AST, shadowed: bool) -> None:
        if isinstance(node, scopes):
            scope(node, shadowed)
            return
        if isinstance(node, ast.Name) and node.id == name and not shadowed:
            out.append(node)
        for child in ast.iter_child_nodes(node):
            expr(child, shadowed)

    def scope(node: ast.AST, shadowed: bool) -> None:
        # decorators, defaults and bases are evaluated in the enclosing scope
        outer: list[ast.AST] = [*getattr(node, "decorator_list", []), *getattr(node, "bases", []),
                                *getattr(node, "keywords", [])]
        body: list[ast.AST] = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            args = node.args
            outer += [*args.defaults, *[d for d in args.kw_defaults if d is not None]]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            body = list(node.body)
        elif isinstance(node, ast.Lambda):
            body = [node.body]
        for o in outer:
            expr(o, shadowed)
        own = shadowed or _binds(node, name)
        for st in body:
            if isinstance(node, ast.ClassDef) and isinstance(st, scopes):
                scope(st, shadowed)        # a method does not see its class's names
            else:
                expr(st, own)

    for st in tree.body:
        expr(st, False)
    return out


def _renamed_calls(text: str, names: dict[tuple, str]) -> str:
    """`text` with every use of a renamed module-level test function by its old
    name (emoji's `test_text_multiple_times` calls `test_text(...)`) under its
    new one, so renaming breaks no test. Only names that mean the module's
    global change: a parameter, a local, a class attribute, a keyword argument
    or a method of that name stay. Such a test has no copies (used_by_name), so
    the call points at no original among copies."""
    old_new = {func: new for (cls, func), new in names.items() if not cls}
    if not old_new or not any(re.search(r"\b%s\b" % re.escape(o), text) for o in old_new):
        return text
    try:
        tree = parse_python(text)
    except (SyntaxError, ValueError):
        return text
    lines = io.StringIO(text).readlines()          # ast numbers lines by "\n" alone
    edits: list[tuple[int, int, str, str]] = []
    for old, new in old_new.items():
        for n in _global_uses(tree, old):
            raw = lines[n.lineno - 1].encode("utf-8")
            col = len(raw[:n.col_offset].decode("utf-8", errors="replace"))
            if lines[n.lineno - 1][col:col + len(old)] == old:      # where ast says it is
                edits.append((n.lineno, col, old, new))
    for row, col, old, new in sorted(set(edits), reverse=True):
        line = lines[row - 1]
        lines[row - 1] = line[:col] + new + line[col + len(old):]
    return "".join(lines)


def _plant_file(path: Path, rel: str, file_refs: list[TestRef], copies: list[TestCopy], plan: Plan,
                taken: set[str], rename: bool, rng: random.Random, place: str) -> None:
    """plant() for one file: its tests renamed into `plan`, its copies placed."""
    try:
        text = path.read_text(encoding="utf-8")
        module = parse_python(text)
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    inserts: dict[int, list[str]] = {}         # before this 0-based line index
    names: dict[tuple, str] = {}               # (cls, func) -> the name it runs under
    spans: dict[tuple, tuple[int, int, ast.FunctionDef | ast.AsyncFunctionDef]] = {}
    bodies: dict[int, list[ast.stmt]] | None = None
    for ref in sorted(file_refs, key=lambda r: (r.cls, r.func)):
        fn = find_def(module, ref)
        if fn is None:
            continue
        first, last = span(fn)
        spans[(ref.cls, ref.func)] = (first, last, fn)
        if rename:
            name = new_name(ref.func, taken)
            plan.originals[name] = ref
            names[(ref.cls, ref.func)] = name
            if bodies is None:
                bodies = def_bodies(module)
            for early in shadowed(module, fn, bodies):
                lines[early.lineno - 1] = _renamed_def(lines[early.lineno - 1], ref.func, name)
    rewrites: dict[tuple, str] = {}            # (cls, func) -> rewritten original
    groups: dict[tuple, list[TestCopy]] = {}
    pending: list[tuple[int, TestCopy, str]] = []   # (before this line, copy, its name)
    for m in copies:
        if m.file != rel or (not m.cls and used_by_name(module, m.func)):
            continue
        key = (tuple(m.cls), m.func)
        if key not in spans:
            fn = find_def(module, TestRef(rel, tuple(m.cls), m.func))
            if fn is None:
                continue
            first, last = span(fn)
            spans[key] = (first, last, fn)
        groups.setdefault(key, []).append(m)
    for key, ms in groups.items():
        first, last, _ = spans[key]
        # The original takes a uniformly random place among its k copies
        # (k + 1 slots), so its position says nothing.
        # In an order of this verify's own: a cross comes in the product's
        # order, where the original is the member that restores it (review
        # 2026-12-05-cross-review, finding 1).
        rng.shuffle(ms)
        k = len(ms)
        slot = rng.randrange(k + 1) if place == "random" else (k if place == "before" else 0)
        for i, m in enumerate(ms):
            name = new_name(m.func, taken)
            plan.copies[name] = m
            if m.original:
                rewrites.setdefault(key, m.original)
            at = (first - 1) if i < slot else last
            pending.append((at, m, name))
    if rename:
        remap = raising_last(names, [(m, n) for _, m, n in pending], rng)
        if remap:
            names = {k: remap.get(n, n) for k, n in names.items()}
            pending = [(at, m, remap.get(n, n)) for at, m, n in pending]
            plan.originals = {remap.get(n, n): r for n, r in plan.originals.items()}
            plan.copies = {remap.get(n, n): c for n, c in plan.copies.items()}
    for at, m, name in pending:
        inserts.setdefault(at, []).append(m.source.replace(NAME_TOKEN, name))
    if not names and not inserts:
        return
    tables = {n for ms in groups.values() for m in ms for n in m.tables}
    planted = _renamed_calls(_splice(lines, spans, names, rewrites, inserts), names)
    path.write_text(drop_unused_constants(planted, tables), encoding="utf-8")


def raising_last(names: Mapping[tuple, str], copies: list[tuple[TestCopy, str]], rng: random.Random
                 ) -> dict[str, str]:
    """Random names traded so that, in a class, the tests of a raising block
    (grade/copy_raises.py) whose copies accept an input sort before the
    raising test and its copies: unittest runs a class's methods in name
    order, and a solution raising, where a raise is expected, for inputs it
    had not seen accepted won when the raising test happened to run first
    (held-out round 19). pytest runs functions in file order, copies beside
    their originals, so either order of the two families loses there.
    Within each family the names stay at random. old name -> new name."""
    raising = {(tuple(m.cls), m.block.split(":")[1]) for m, _ in copies if m.raising and m.block.startswith("raises:")}
    accepting = {(tuple(m.cls), m.func) for m, _ in copies if m.raising} - raising
    remap: dict[str, str] = {}
    for cls in sorted({k[0] for k in raising if k[0]}):
        def members(keys: set, cls: tuple = cls) -> list[str]:
            return [n for k, n in names.items() if (tuple(k[0]), k[1]) in keys and tuple(k[0]) == cls] + \
                [n for m, n in copies if (tuple(m.cls), m.func) in keys and tuple(m.cls) == cls]
        early, late = members(accepting), members(raising)
        if not early or not late:
            continue
        pool = sorted(early + late)
        first, last = pool[:len(early)], pool[len(early):]
        rng.shuffle(first)
        rng.shuffle(last)
        remap.update(zip(early, first))
        remap.update(zip(late, last))
    return remap


def plant(tree: Path, nodeids: list[str], copies: list[TestCopy], rename: bool = True,
          rng: random.Random | None = None, place: str = "random") -> Plan:
    """Rename the tests behind `nodeids` at random and put each copy beside its
    original, before or after it (`place`: "random", "before", "after"), in
    `tree` (edited in place)."""
    rng = rng or random.SystemRandom()
    plan = Plan()
    refs = {r for r in map(test_ref, nodeids) if r is not None}
    by_file: dict[str, list] = {}
    for r in refs:
        by_file.setdefault(r.file, []).append(r)
    for m in copies:
        by_file.setdefault(m.file, [])
    taken: set[str] = set()
    for rel, file_refs in sorted(by_file.items()):
        _plant_file(tree / rel, rel, file_refs, copies, plan, taken, rename, rng, place)
    return plan


def drop_unused_constants(text: str, names: AbstractSet[str]) -> str:
    """`text` without the module-level `NAME = ...` definitions of `names` that
    nothing in it uses any more (tables written out in their tests)."""
    if not names:
        return text
    try:
        module = parse_python(text)
    except (SyntaxError, ValueError):
        return text
    used = {n.id for n in ast.walk(module) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    lines = text.splitlines(keepends=True)
    for node in reversed(module.body):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and node.targets[0].id in names and node.targets[0].id not in used \
                and node.end_lineno is not None:
            del lines[node.lineno - 1:node.end_lineno]
    return "".join(lines)
