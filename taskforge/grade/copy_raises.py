"""Copies for tests that only expect a raise: inputs exchanged between tests.

A test like ledger's

    def test_rejects_garbage(self):
        for bad in ["", "abc", "1.2.3"]:
            with self.subTest(text=bad):
                with self.assertRaises(ValueError):
                    parse_amount(bad)

compares nothing: its pass carries no secret, so a solution without the
validation that turns the failure into a pass in-process (round 17: seven
ways, from pluggy's hook list to unittest's `_Outcome`) scored 1. What such
a test protects is *which inputs raise*. A block of two copies asks that:

- R(v): the raising test with one of its inputs replaced by an input another
  graded test of the file shows the feature accepting (`assertEqual(
  parse_amount("12.5"), Money("12.50"))`): a correct solution does not raise
  there, so the copy fails, and a forger that passes every "did not raise"
  passes it;
- E(g): that accepting test with its input replaced by the raising one: a
  correct solution raises there, so this copy fails too.

Planted together (a block, copies.choose_copies), each of the two inputs then
stands once where it must raise and once where it must not, in an original
and in a copy alike: which is which is the feature's own question. Every
other input of the raising site goes into a copy of an accepting test too (it
fails there as g does): held-out round 19 raised, only where a raise was
expected, for inputs it had not seen accepted before, and so told v from the
rest by memory; now every input of the site is seen accepted somewhere, and
whether before the raising test runs is the copies' random order. Sound as
far as the graded tests are: a solution passing the accepting test cannot
raise on its input, one passing the raising test must raise on its. Every copy
still runs against the gold at generation (calibrate.py) and is kept only if
the gold fails it, and a block only whole (copy_blocks.whole_blocks).

Pure: parsed test functions in, TestCopy records out.
"""
from __future__ import annotations

import ast
import copy
import hashlib
import json
import random
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import AbstractSet

from taskforge.analysis.pyparse import literal_eval
from taskforge.analysis.testindex import TestRef
from taskforge.grade.helper_calls import HELPERS
from taskforge.grade.seals import module_names
from taskforge.grade.shapes import buildable
from taskforge.grade.vocab import Vocabulary, covering, scaled
from taskforge.grade.vocab import swaps as word_swaps
from taskforge.models import TestCopy
from taskforge.repo.layout import is_test_path

RAISES = frozenset({"raises", "assertRaises", "assertRaisesRegex", "assertRaisesRegexp"})
EQUALS = frozenset({"assertEqual", "assertEquals"})
MAX_BLOCKS = 2                 # alternative blocks per raising site (verify plants one)
HELPER_CALLS = True            # blocks of assertion helpers' calls too (_helper_input); False: red team only
MAX_EXCHANGED = 2              # copies of the raising test in a block, all exchanging the same input
MAX_INPUT = 200                # characters of an input's source: a longer one stays as it is
MAX_PACKAGE_TEXT = 8 << 20     # characters of the package's own source read for examples
MAX_FRESH = 6                  # twins made from each input of a raising site's callee (fresh_copies)
MAX_RESHAPED = 6               # ... and of another shape (reshaped); a table row 2
MAX_SCALED = 3                 # ... and moved along a scale (vocab.scaled); a table row 2
MAX_TWO_SHAPES = 3             # ... and two reshapes away (_reshaped_twice); a table row 2
MAX_TABLE_FRESH = 2            # ... from each row of a parametrize table's input column
MAX_TABLE_ROWS = 48            # rows of one table twinned (drawn at random beyond)
DIGITS_ONLY = "\0"              # fresh_value's alphabet for an accepted input: its digits renamed only
MAX_TRADED_KIND = 2            # twins proposed of each kind of an input a raising block trades (traded_copies)
MAX_VALUED = 6                 # value twins proposed from each input (valued_copies); the gold keeps some
MAX_SWAPS = 48                 # ... word swaps (vocab.swaps) of each input, the words least swapped in first
MAX_TABLE_SWAPS = 16           # ... of each table row
MAX_TWO_EDITS = 24             # characters of an input beyond which no twin two edits away is drawn
VALUED_KEY = "twin:"           # how a value twin's kept value is keyed in GradingPlan.shapes


@dataclass(frozen=True)
class Raising:
    """An input a test expects to raise: the literal it passes (`node`), in a
    call of `callee` whose positional arity is `arity`."""
    fn: ast.FunctionDef | ast.AsyncFunctionDef
    ref: TestRef
    callee: str
    arity: int
    node: ast.Constant
    # The statement expecting the raise (the `with`, or the callable form's
    # expression) and the `for`'s written-out list the input stands in, if any:
    # what a fresh copy (fresh_copies) takes out or replaces.
    stmt: ast.stmt | None = None
    loop: ast.expr | None = None
    # A parametrize column the input comes from (column_inputs), and its row.
    column: Column | None = None
    row: int = -1


@dataclass(frozen=True)
class Column:
    """A parametrize column a raising call takes its input from: the
    decorator's table argument (`table`, which a twin replaces by one row),
    each row's nodes, the input column's index, and the guard's (`guard`:
    the column an `if` around the raise tests for None or falsehood, set to
    None in a twin so that the raise is what it expects; None: every row
    raises). `ids`: the decorator's `ids=` list, which one row outgrows."""
    table: ast.expr
    rows: tuple[tuple[ast.expr, ...], ...]
    index: int
    guard: int | None
    raising: tuple[int, ...]        # the rows whose guard sends them to the raise
    accepted: tuple[int, ...]       # ... and those it sends elsewhere
    ids: ast.expr | None = None


@dataclass(frozen=True)
class Accepted:
    """An input a test shows the feature accepting: the literal first
    argument of a call whose result an equality checks."""
    fn: ast.FunctionDef | ast.AsyncFunctionDef
    ref: TestRef
    callee: str
    arity: int
    node: ast.Constant
    # A value twin's (value_inputs): the call the input is the first
    # argument of, the equality's computed side holding it, and the other side.
    call: ast.Call | None = None
    side: ast.expr | None = None
    other: ast.expr | None = None


def _name(e: ast.expr) -> str | None:
    if isinstance(e, ast.Name):
        return e.id
    if isinstance(e, ast.Attribute):
        return e.attr
    return None


def _body(fn: ast.AST):
    """Every node of a function, nested definitions left out, with its parent."""
    stack: list[tuple[ast.AST, ast.AST | None]] = [(c, fn) for c in ast.iter_child_nodes(fn)]
    while stack:
        node, parent = stack.pop()
        yield node, parent
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        stack.extend((c, node) for c in ast.iter_child_nodes(node))


def _input_call(call: ast.expr) -> tuple[str, ast.Call] | None:
    """A plain call with positional arguments only: (callee as written, call)."""
    if not isinstance(call, ast.Call) or call.keywords or not call.args \
            or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    callee = ast.unparse(call.func)
    return (callee, call) if _name(call.func) not in (None, *RAISES, *EQUALS) else None


def _helper_input(call: ast.Call) -> bool:
    """A call of one of the project's assertion helpers (copies.assert_helpers)
    whose first parameter is an input and every other one an expected value:
    simpleeval's `self.t(expr, should_be)`. Its first argument is the input the
    feature takes, as `f(x)`'s is (red team round 28: 10 of one task's 37
    raising blocks were `self.t(..., 0)`, and no block was made of them)."""
    f = call.func
    # the suite's own helper: `t(...)` or `self.t(...)`, never another object's method of that name
    name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) \
        and isinstance(f.value, ast.Name) and f.value.id == "self" else None
    h = HELPERS.get().get(name) if name else None
    return h is not None and not call.keywords and 2 <= len(call.args) <= len(h[0]) \
        and h[0][0] not in h[1] and all(p in h[1] for p in h[0][1:len(call.args)])


BROAD = frozenset({"Exception", "BaseException", "AssertionError"})


def _catches_assertions(exc: ast.expr) -> bool:
    """Whether an expected class (or tuple) takes an AssertionError: then a
    helper call's failed equality meets the raise, and a block of it asks
    nothing of the feature."""
    names = exc.elts if isinstance(exc, ast.Tuple) else [exc]
    return any(_name(n) in BROAD or not isinstance(n, (ast.Name, ast.Attribute)) for n in names)


def root_name(node: ast.expr) -> str | None:
    """The name an attribute or subscript chain starts from (`a` of `a.b[1].c`)."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


MUTATORS = frozenset({"append", "extend", "insert", "remove", "pop", "clear", "update", "setdefault",
                      "add", "discard", "popitem", "sort", "reverse"})


def sets_state(fn: ast.AST, roots: AbstractSet[str] | None = None) -> bool:
    """Whether a test function changes what outlives it or what another test's
    call sees: an assignment into (or deletion from, `setattr`, a mutating
    method on) an attribute or item of a name in `roots` (imported modules);
    with `roots` None, of any name the function does not bind itself (`self`
    included); or a `global`."""
    own: set[str] = set()
    if roots is None:
        args = getattr(fn, "args", None)
        params = {a.arg for a in (args.posonlyargs + args.args + args.kwonlyargs) if a.arg != "self"} \
            if args is not None else set()
        own = params | {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}

    def outer(node: ast.expr) -> bool:
        name = root_name(node)
        return name is not None and (name in roots if roots is not None else name not in own)

    for node in ast.walk(fn):
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            return True
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Delete):
            targets = list(node.targets)
        for t in targets:
            for sub in ast.walk(t):
                if isinstance(sub, (ast.Attribute, ast.Subscript)) and outer(sub):
                    return True
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name) and f.id in ("setattr", "delattr") and node.args and outer(
                    ast.Attribute(value=node.args[0], attr="x", ctx=ast.Store())):
                return True
            if isinstance(f, ast.Attribute) and f.attr in MUTATORS \
                    and isinstance(f.value, (ast.Attribute, ast.Subscript)) and outer(f.value):
                return True
    return False


def _plain(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) in (str, bytes, int, float) \
        and len(repr(node.value)) <= MAX_INPUT


def raising_inputs(fn, ref: TestRef, helpers: bool = False) -> list[Raising]:
    """Literal inputs `fn` expects to raise: the only statement of a
    `with raises(E)` / `with self.assertRaises(E)` block is a call of one
    argument, a literal, or the variable of an enclosing `for` over a
    written-out list of literals (each of them then). `helpers`: also the
    input of an assertion helper's call (_helper_input), its arity kept."""
    loops: dict[str, ast.List | ast.Tuple] = {}
    for node, _ in _body(fn):
        if isinstance(node, ast.For) and isinstance(node.target, ast.Name) \
                and isinstance(node.iter, (ast.List, ast.Tuple)) and len(node.iter.elts) >= 2 \
                and all(_plain(e) for e in node.iter.elts):
            loops[node.target.id] = node.iter
    stores: dict[str, int] = {}
    for node, _ in _body(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            stores[node.id] = stores.get(node.id, 0) + 1
    out: list[Raising] = []
    for node, _ in _body(fn):
        call: ast.expr | None = None
        broad = False
        if isinstance(node, (ast.With, ast.AsyncWith)) and len(node.items) == 1 and len(node.body) == 1:
            cm = node.items[0].context_expr
            only = node.body[0]
            if isinstance(cm, ast.Call) and _name(cm.func) in RAISES and cm.args and (
                    isinstance(only, ast.Expr) or isinstance(only, ast.Assign) and len(only.targets) == 1
                    and isinstance(only.targets[0], ast.Name)):
                call = only.value                 # `f(x)` or `_ = f(x)`
                # a helper's own failed assert would meet a broad expectation
                broad = _catches_assertions(cm.args[0])
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) \
                and _name(node.value.func) in RAISES and len(node.value.args) == 3 and not node.value.keywords:
            # the callable form: assertRaises(E, f, x) / pytest.raises(E, f, x)
            _, f, x = node.value.args
            call = ast.Call(func=f, args=[x], keywords=[])
        got = _input_call(call) if call is not None else None
        if got is None or not (len(got[1].args) == 1 or helpers and not broad and _helper_input(got[1])):
            continue
        callee, call = got
        arg, arity = call.args[0], len(call.args)
        if _plain(arg):
            out.append(Raising(fn, ref, callee, arity, arg, node))            # type: ignore[arg-type]
        elif isinstance(arg, ast.Name) and arg.id in loops and stores.get(arg.id) == 1:
            table = loops[arg.id]
            out += [Raising(fn, ref, callee, arity, e, node, table)           # type: ignore[arg-type]
                    for e in table.elts]
    return out


def accepted_inputs(fn, ref: TestRef, helpers: bool = False) -> list[Accepted]:
    """Literal inputs `fn` checks a result of: `assert f(LIT) == X`,
    `self.assertEqual(f(LIT), X)` (either side), f called with one argument;
    `helpers`: also an assertion helper's call as a statement of its own
    (`self.t(LIT, X)`, _helper_input) outside any raising block."""
    out: list[Accepted] = []
    if helpers:
        raising = {id(only) for node, _ in _body(fn) if isinstance(node, (ast.With, ast.AsyncWith))
                   for only in node.body}
        for node, _ in _body(fn):
            if isinstance(node, ast.Expr) and id(node) not in raising and isinstance(node.value, ast.Call) \
                    and (got := _input_call(node.value)) is not None and _helper_input(got[1]) \
                    and _plain(got[1].args[0]):
                out.append(Accepted(fn, ref, got[0], len(got[1].args), got[1].args[0]))  # type: ignore[arg-type]
    for node, _ in _body(fn):
        sides: list[ast.expr] = []
        if isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare) and len(node.test.ops) == 1 \
                and isinstance(node.test.ops[0], ast.Eq):
            sides = [node.test.left, node.test.comparators[0]]
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) \
                and _name(node.value.func) in EQUALS and len(node.value.args) >= 2:
            sides = list(node.value.args[:2])
        for side in sides:
            got = _input_call(side)
            if got is not None and len(got[1].args) == 1 and _plain(got[1].args[0]):
                out.append(Accepted(fn, ref, got[0], 1, got[1].args[0]))     # type: ignore[arg-type]
    return out


def _sealable(st: ast.AST) -> bool:
    """An equality seals.seal_function judges on the host when its expected
    side is computed: `assert A == B`, `x.assertEqual(A, B)` (no message)."""
    if isinstance(st, ast.Assert):
        return True
    return isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) \
        and isinstance(st.value.func, ast.Attribute) and st.value.func.attr in EQUALS \
        and len(st.value.args) == 2 and not st.value.keywords


def _table_rows(dec: ast.Call, consts: dict[str, ast.expr]) -> tuple[list[str], list[tuple[ast.expr, ...]]] | None:
    """A parametrize decorator's argument names and rows (pytest.param
    unwrapped), its table written in place or given by a module constant;
    None where a row carries marks or the table is computed."""
    a = dec.args[0]
    names = [x.strip() for x in a.value.split(",") if x.strip()] \
        if isinstance(a, ast.Constant) and isinstance(a.value, str) else \
        [e.value for e in a.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)] \
        if isinstance(a, (ast.List, ast.Tuple)) else []
    values = dec.args[1]
    if isinstance(values, ast.Name):
        values = consts.get(values.id, values)
    if not names or not isinstance(values, (ast.List, ast.Tuple, ast.Set)):
        return None
    rows: list[tuple[ast.expr, ...]] = []
    for row in values.elts:
        if isinstance(row, ast.Call) and _name(row.func) == "param":
            if any(k.arg == "marks" for k in row.keywords):
                return None         # an xfail row twinned would ask what the project does not
            elts = tuple(row.args)
        else:
            elts = tuple(row.elts) if len(names) > 1 and isinstance(row, (ast.Tuple, ast.List)) else (row,)
        if len(elts) != len(names) or any(isinstance(e, ast.Starred) for e in elts):
            return None
        rows.append(elts)
    return names, rows


def _guard(fn, stmt: ast.stmt) -> tuple[str, bool] | None:
    """Where the raising statement stands, the function's last (no assert
    before it, set-up only): ("", True) as it is; (q, is_none) inside `if q
    is None:` / `if not q:` (or the `else` of `if q is not None:` / `if
    q:`); None otherwise."""
    body = fn.body[-1:]
    if any(isinstance(n, ast.Assert) for s in fn.body[:-1] for n in ast.walk(s)):
        return None                 # it would check the original row's values in the twin
    if stmt in body:
        return "", True
    for s in body:
        if not isinstance(s, ast.If):
            continue
        t = s.test
        if s.body == [stmt]:
            if isinstance(t, ast.Compare) and isinstance(t.left, ast.Name) and len(t.ops) == 1 \
                    and isinstance(t.ops[0], ast.Is) and _none(t.comparators[0]):
                return t.left.id, True
            if isinstance(t, ast.UnaryOp) and isinstance(t.op, ast.Not) and isinstance(t.operand, ast.Name):
                return t.operand.id, False
        if s.orelse == [stmt]:
            if isinstance(t, ast.Compare) and isinstance(t.left, ast.Name) and len(t.ops) == 1 \
                    and isinstance(t.ops[0], ast.IsNot) and _none(t.comparators[0]):
                return t.left.id, True
            if isinstance(t, ast.Name):
                return t.id, False
    return None


def _none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _sends_to_raise(node: ast.expr, is_none: bool) -> bool | None:
    """Whether a row's guard value takes the raise's branch (None: not known
    from its source)."""
    if isinstance(node, ast.Constant):
        return node.value is None if is_none else not node.value
    if isinstance(node, (ast.Call, ast.Tuple, ast.List, ast.Dict, ast.Set)):
        return False if is_none or isinstance(node, ast.Call) else not (
            node.keys if isinstance(node, ast.Dict) else node.elts)
    return None


def column_inputs(fn, ref: TestRef, consts: dict[str, ast.expr]) -> list[Raising]:
    """The rows of a parametrize table a test's only raising statement takes
    its input from (`with raises(E): f(x, ...)`, x a column of plain str,
    bytes or int literals; of str ones where there are both, the one with
    most distinct values), at the top level or behind a guard on another
    column (`if expected is None:`, isodate's shape). Each row is a Raising
    with its Column; a row the guard sends elsewhere stands as an accepted
    input (Column.accepted). [] for any other shape."""
    stmts = [node for node, _ in _body(fn) if isinstance(node, (ast.With, ast.AsyncWith)) and any(
        isinstance(i.context_expr, ast.Call) and _name(i.context_expr.func) in RAISES for i in node.items)]
    if len(stmts) != 1 or len(stmts[0].items) != 1 or len(stmts[0].body) != 1:
        return []
    stmt = stmts[0]
    only = stmt.body[0]
    call = only.value if isinstance(only, (ast.Expr, ast.Assign)) else None
    if not isinstance(call, ast.Call) or _name(call.func) in (None, *RAISES, *EQUALS) \
            or any(isinstance(a, ast.Starred) for a in call.args):
        return []
    where = _guard(fn, stmt)
    if where is None:
        return []
    for dec in fn.decorator_list:
        if not (isinstance(dec, ast.Call) and _name(dec.func) == "parametrize" and len(dec.args) >= 2):
            continue
        got = _table_rows(dec, consts)
        if got is None:
            continue
        names, rows = got
        ids = next((k.value for k in dec.keywords if k.arg == "ids"), None)
        if ids is not None and not isinstance(ids, (ast.List, ast.Tuple)):
            continue                 # ids computed: one row keeps them working
        guard = names.index(where[0]) if where[0] in names else None
        if where[0] and (guard is None or any(isinstance(a, ast.Name) and a.id == where[0] for a in call.args)):
            continue                 # (the guard's None itself the input that raises: isodate's test_format)
        decided = [True if guard is None else _sends_to_raise(r[guard], where[1]) for r in rows]
        ranked: list[tuple[bool, int, int]] = []        # (str or bytes, distinct values, column)
        for arg in call.args:
            if not (isinstance(arg, ast.Name) and arg.id in names) or names.index(arg.id) == guard:
                continue
            i = names.index(arg.id)
            kinds = {type(r[i].value) if _plain(r[i]) else None for r in rows}        # type: ignore[attr-defined]
            if len(kinds) == 1 and not kinds & {None, bool}:
                ranked.append((bool(kinds & {str, bytes}), len({ast.dump(r[i]) for r in rows}), i))
        if not ranked or None in decided:
            continue
        best = max(ranked)[2]
        col = Column(dec.args[1], tuple(rows), best, guard,
                     tuple(k for k, d in enumerate(decided) if d), tuple(k for k, d in enumerate(decided) if not d),
                     ids)
        return [Raising(fn, ref, ast.unparse(call.func), len(call.args), rows[k][best],     # type: ignore[arg-type]
                        stmt, None, col, k) for k in range(len(rows))]
    return []


def package_sources(root: Path) -> list[str]:
    """The repository's own Python source files outside its tests, in path
    order, up to MAX_PACKAGE_TEXT characters in all."""
    parts: list[str] = []
    total = 0
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(".git/") or is_test_path(rel):
            continue
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        total += len(text)
        if total > MAX_PACKAGE_TEXT:
            break
        parts.append(text)
    return parts


def package_text(sources: list[str]) -> str:
    """package_sources as one text: where docstrings show inputs as examples,
    which the statement then quotes."""
    return "\n".join(sources)


def shown_elsewhere(tree: ast.Module, package: str) -> Callable[[object], bool]:
    """Whether an input is shown outside the two places a block exchanges it
    between: as a literal twice or more in the test module (another test's
    table: textkit's `(1994, "MCMXCIV")` beside from_roman's tests), or quoted
    in the package's source (a docstring's example, which the statement
    quotes: ledger's `'$1,234.56'`). Held-out round 20 told the original
    raising test from its copy by exactly that: the member holding the input
    shown valid elsewhere is the copy."""
    counts: Counter[tuple[type, object]] = Counter((type(n.value), n.value) for n in ast.walk(tree)
                     if isinstance(n, ast.Constant) and type(n.value) in (str, bytes, int, float))

    def shown(value: object) -> bool:
        if counts[(type(value), value)] > 1:
            return True
        if isinstance(value, str):
            return any(form in package for form in (repr(value), f'"{value}"', f"'{value}'", f"``{value}``"))
        return False
    return shown


def _src(lines: list[str], node: ast.expr) -> str:
    raw = lines[node.lineno - 1].encode("utf-8")
    return raw[node.col_offset:node.end_col_offset].decode("utf-8")


def exchange_blocks(tests: list[tuple[TestRef, ast.FunctionDef | ast.AsyncFunctionDef]], lines: list[str],
                    rng: random.Random, render: Callable, edit: Callable,
                    shown: Callable[[object], bool] = lambda value: False,
                    alike: Callable[[object, object], bool] | None = None) -> list[TestCopy]:
    """Blocks of copies (_block) for each raising site of `tests` (one
    file's graded test functions) whose callee another of them shows
    accepting an input of the same type, up to MAX_BLOCKS alternatives at
    different inputs; never an exchanged input `shown` elsewhere
    (shown_elsewhere), and given `alike(r, a)`, only an input it holds alike
    with the raising one (same_kinds: a lent input whose twins the raising
    input's cannot match goes ungraded in those forms, held-out round 27:
    "12.345 eur" lent beside "   " lost every twin, and a parser of
    lower-case codes only scored 1). `render(lines, fn, edits)` gives a
    copy's source (copies._named), `edit(line, start, end, text)` an edit."""
    accepted = [a for ref, fn in tests for a in accepted_inputs(fn, ref, helpers=HELPER_CALLS)]
    out: list[TestCopy] = []
    for ref, fn in tests:
        sites: dict[str, list[Raising]] = {}        # a callee the test expects to raise -> its inputs
        for r in raising_inputs(fn, ref, helpers=HELPER_CALLS):
            sites.setdefault(r.callee, []).append(r)
        for inputs in sites.values():
            places = [r for r in inputs if not shown(r.node.value) and "\n" not in _src(lines, r.node)]
            rng.shuffle(places)
            made = 0
            for r in places:                       # alternatives: verify plants one block a test
                if made >= MAX_BLOCKS:
                    break
                got = _block(fn, ref, r, inputs, accepted, lines, rng, render, edit, shown, alike)
                out += got
                made += bool(got)
    return out


def _host(accepted: list[Accepted], r: Raising, fn, value: object,
          shown: Callable[[object], bool] | None = None) -> list[Accepted]:
    """Accepting calls of r's callee, in another test, whose input has the
    type of `value` and is not it (and, given `shown`, is shown nowhere else)."""
    return [a for a in accepted if a.callee == r.callee and a.arity == r.arity and a.fn is not fn
            and (r.arity == 1 or _same_context(a, r))
            and type(a.node.value) is type(value) and a.node.value != value
            and (shown is None or not shown(a.node.value))]


def _same_context(a: Accepted, r: Raising) -> bool:
    """A helper's calls exchange only inside one class, between tests that
    change nothing the helper may read (`self.s`, a module's limit): the same
    name in another class may call another function (a review's find: two
    `check` helpers, one strict and one that upper-cases first), and an input
    the helper accepted under other settings is no fact about these."""
    return a.ref.cls == r.ref.cls and a.ref.file == r.ref.file \
        and not sets_state(a.fn) and not sets_state(r.fn)


def _block(fn, ref: TestRef, r: Raising, inputs: list[Raising], accepted: list[Accepted], lines: list[str],
           rng: random.Random, render: Callable, edit: Callable, shown: Callable[[object], bool],
           alike: Callable[[object, object], bool] | None = None) -> list[TestCopy]:
    """One block at the raising input `r`: up to MAX_EXCHANGED copies of the
    raising test, each with `r` replaced by another input accepting tests
    show (all at the same place, so that original and copies are each one
    step from every other: no member is the centre a reader could pick, and
    a blind pick is right one time in MAX_EXCHANGED + 1), one copy of an
    accepting test holding `r`, and one holding each other input of the site
    ("raise, where a raise is expected, any input not seen accepted", held-out
    round 19, then meets every input accepted somewhere). [] when it cannot
    be made whole."""
    g = _src(lines, r.node)
    pool = [a for a in _host(accepted, r, fn, r.node.value, shown)
            if alike is None or alike(r.node.value, a.node.value)]
    rng.shuffle(pool)
    chosen: list[Accepted] = []
    for a in pool:
        if len(chosen) < MAX_EXCHANGED and a.node.value not in {c.node.value for c in chosen} \
                and "\n" not in _src(lines, a.node):
            chosen.append(a)
    if not chosen:
        return []
    block = f"raises:{ref.func}:{r.node.lineno}:{r.node.col_offset}"
    out: list[TestCopy] = []
    for a in chosen:
        v = _src(lines, a.node)
        text = render(lines, fn, [edit(r.node.lineno, r.node.col_offset, r.node.end_col_offset, v)])
        if text is None:
            return []
        out.append(TestCopy(
            file=ref.file, cls=list(ref.cls), func=ref.func, kind="value", block=block, raising=True,
            trades=[repr(r.node.value), repr(a.node.value)],
            group=f"{ref.func}@{r.node.lineno}:{r.node.col_offset}:0", source=text,
            site=f"line {r.node.lineno}: input {g[:40]} exchanged for {v[:40]} (line {a.node.lineno})"))
    # each input of the site, `r` first, into one copy of an accepting test
    # (for `r`, one of the tests that lent an input: each lent input then
    # stands once where it must raise and once where it must not, as `r` does)
    for other in [r, *(x for x in inputs if x is not r)]:
        hosts = [rng.choice(chosen)] if other is r else _host(accepted, r, fn, other.node.value)
        if not hosts or "\n" in _src(lines, other.node):
            return []
        b = rng.choice(hosts)
        text = render(lines, b.fn, [edit(b.node.lineno, b.node.col_offset, b.node.end_col_offset,
                                         _src(lines, other.node))])
        if text is None:
            return []
        out.append(TestCopy(
            file=b.ref.file, cls=list(b.ref.cls), func=b.ref.func, kind="value", block=block, raising=True,
            trades=[repr(r.node.value), repr(b.node.value)] if other is r else [],
            group=f"{b.ref.func}@{b.node.lineno}:{b.node.col_offset}:0", source=text,
            site=f"line {b.node.lineno}: input {_src(lines, b.node)[:40]} exchanged for "
                 f"{_src(lines, other.node)[:40]} (line {other.node.lineno})"))
    return out


# ------------------------------------------------------------------ fresh inputs

def fresh_value(value: object, rng: random.Random, alphabets: tuple[str, ...] = ()) -> object | None:
    """A near twin of an input: one letter or digit of it renamed, every
    occurrence alike, to another of its kind the input does not use, from the
    first of `alphabets` that has one (for a raising input, the letters the
    callee's raising and accepted inputs both use, then the raising ones',
    then the accepted ones': "IIII" -> "XXXX", not "MMMM", which a validator
    allowing M{0,4} accepts (held-out round 22), nor "AAAA", which any parser
    rejects; `DIGITS_ONLY` first: only its digits renamed). Renaming keeps
    which characters repeat and where, so the input's defect most likely
    survives: "IIII" -> "XXXX" (four of a kind), "VX" -> "VC" (a V
    subtracted), "1.2.3" -> "1.7.3" (two dots), "--5" -> "--4".
    Round 21 showed why not any one-letter change: "IIII" -> "IMII" asks a
    rule no graded test asks, and a lenient, defensible validator scored 0 on
    it. A number has one digit renamed, never its first to 0. None where
    there is nothing to rename (`""`, `"$"`, 0, a float)."""
    if isinstance(value, bool) or not isinstance(value, (str, bytes, int)):
        return None
    if isinstance(value, int):
        if value == 0:
            return None          # a boundary, not a pattern
        text = str(abs(value))
        olds = sorted(set(text))
        rng.shuffle(olds)
        for old in olds:
            pool = [d for d in "0123456789" if d not in text and not (d == "0" and text[0] == old)]
            if pool:
                new = int(text.replace(old, rng.choice(pool)))
                return -new if value < 0 else new
        return None
    text = value.decode("latin-1") if isinstance(value, bytes) else value
    digits_only = DIGITS_ONLY in alphabets
    olds = sorted({ch for ch in text if ch.isascii() and (ch.isdigit() if digits_only else ch.isalnum())})
    rng.shuffle(olds)
    for old in olds:
        kind = str.isdigit if old.isdigit() else str.isupper if old.isupper() else str.islower
        every = "0123456789" if old.isdigit() else \
            "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if old.isupper() else "abcdefghijklmnopqrstuvwxyz"
        pool = next((own for own in (sorted({x for x in alphabet if x.isascii() and x.isalnum() and kind(x)
                                             and x not in text}) for alphabet in alphabets) if own),
                    [x for x in every if x not in text])
        if any(ch == old and (i == 0 or not text[i - 1].isdigit()) for i, ch in enumerate(text)):
            pool = [x for x in pool if x != "0"]        # no leading zero made ("12.5" -> "02.5")
        if pool:
            new_text = text.replace(old, rng.choice(pool))
            return new_text.encode("latin-1") if isinstance(value, bytes) else new_text
    return None


def _raise_call(r: Raising) -> ast.Call | None:
    """The `raises(E)` / `assertRaises(E, ...)` call of r's statement."""
    stmt = r.stmt
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        cm = stmt.items[0].context_expr
        return cm if isinstance(cm, ast.Call) else None
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        return stmt.value
    return None


def _twin_host(r: Raising) -> bool:
    """Whether r's statement can hold a twin: a raise expected of a class
    alone (a message pattern would be the original input's, which a twin's
    message need not match, for the gold too)."""
    call = _raise_call(r)
    return call is not None and _name(call.func) in ("raises", "assertRaises") and bool(call.args) \
        and not call.keywords


def _twin_edits(lines: list[str], r: Raising, value: object, edit: Callable) -> list:
    """Edits that put `value` where r's input stands, a raise of any
    Exception expected (which class the gold raises on an input no test shows
    is not the test's to fix: the twin asks whether it raises): a `for`'s list
    cut to the one value (the others, the planted block's exchanged input
    perhaps among them, would point at the original), a parametrize table cut
    to r's row with the value in its input column and None in its guard's
    (the row's other columns, the call's other arguments, as the test has
    them), else the literal replaced."""
    lit = repr(value)
    call = _raise_call(r)
    assert call is not None                 # _twin_host chose r
    e = call.args[0]
    out = [edit(e.lineno, e.col_offset, e.end_col_offset, "Exception", e.end_lineno)]
    if r.column is not None:
        c = r.column
        text = "".join(lines)
        cells = [lit if i == c.index else "None" if i == c.guard else
                 (ast.get_source_segment(text, node) or "") for i, node in enumerate(c.rows[r.row])]
        row = cells[0] if len(cells) == 1 else "(" + ", ".join(cells) + ")"
        t = c.table
        out.append(edit(t.lineno, t.col_offset, t.end_col_offset, f"[{row}]", t.end_lineno))
        if c.ids is not None:
            out.append(edit(c.ids.lineno, c.ids.col_offset, c.ids.end_col_offset, "None", c.ids.end_lineno))
        return out
    if r.loop is not None:
        t = r.loop
        return out + [edit(t.lineno, t.col_offset, t.end_col_offset, f"({lit},)", t.end_lineno)]
    return out + [edit(r.node.lineno, r.node.col_offset, r.node.end_col_offset, lit, r.node.end_lineno)]


def _module_facts(tests: list[tuple[TestRef, ast.FunctionDef | ast.AsyncFunctionDef]],
                  module: ast.Module | None) -> tuple[set[tuple[type, object]], dict[str, ast.expr]]:
    """The literals of the test file (or of the tests, without it), which no
    twin may equal, and its module constants, which may name a table."""
    nodes = ast.walk(module) if module is not None else (n for _, fn in tests for n in ast.walk(fn))
    literals: set[tuple[type, object]] = {(type(n.value), n.value) for n in nodes if isinstance(n, ast.Constant)}
    consts: dict[str, ast.expr] = {}
    if module is not None:
        consts = {s.targets[0].id: s.value for s in module.body if isinstance(s, ast.Assign)
                  and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name)}
    return literals, consts


def _renamings(source: object, rng: random.Random, alphabets: tuple[str, ...], want: int, tries: int,
               skip: Callable[[object], bool] = lambda v: False) -> list[object]:
    """Up to `want` distinct renamings of `source` (fresh_value), in `tries` draws."""
    got: list[object] = []
    for _ in range(tries):
        if len(got) >= want:
            break
        value = fresh_value(source, rng, alphabets)
        if value is None:
            break
        if value not in got and not skip(value):
            got.append(value)
    return got


def _twin(ref: TestRef, node: ast.expr, source: object, value: object, text: str, valued: bool = False,
          accepted: bool = False, word: str = "") -> TestCopy:
    """A twin's record: `node` is the input it renames, as the test has it."""
    tag, says = ("valued", "valued as the gold values it") if valued else ("fresh", "decided as the gold decides it")
    return TestCopy(file=ref.file, cls=list(ref.cls), func=ref.func, kind="value", fresh=repr(source),
                    trades=[repr(value)], fresh_accepted=accepted, valued=valued, word=word,
                    group=f"{ref.func}@{tag}:{node.lineno}:{node.col_offset}", source=text,
                    site=f"line {node.lineno}: input {repr(source)[:40]} twinned as {repr(value)[:40]}, {says}")


def _raising_hosts(raising: list[Raising]) -> dict[str, Raising]:
    """A callee -> a raising statement to hold its twins: the first alone in
    its test (other raising statements would stay in the twin as written,
    the planted block's exchanged input perhaps among them)."""
    hosts: dict[str, Raising] = {}
    for r in raising:
        if len({id(x.stmt) for x in raising if x.fn is r.fn}) == 1 and _twin_host(r):
            hosts.setdefault(r.callee, r)
    return hosts


def fresh_copies(tests: list[tuple[TestRef, ast.FunctionDef | ast.AsyncFunctionDef]], lines: list[str],
                 rng: random.Random, render: Callable, edit: Callable,
                 module: ast.Module | None = None, vocab: tuple[Vocabulary, ...] = ()) -> list[TestCopy]:
    """Copies of a raising test, the raise still expected, on a near twin
    (fresh_value) of an input of the callee: of a raising input (letters or
    digits renamed), or of an input another test shows accepted (digits only:
    `"12.5"` -> `"17.5"`), up to MAX_FRESH per input, and of a raising input
    up to MAX_RESHAPED of another shape (reshaped: "VX" -> "XV", "--5" ->
    "---5"). Calibration runs them on
    the gold and keeps each with the gold's outcome, so a twin the gold
    rejects must pass and one it accepts must fail (verify asks every copy to
    end as on the gold); a twin of an accepted input only where the gold
    accepts it (`TestCopy.fresh_accepted`: what rejects it is no graded
    test's question).

    Why: the exchanged blocks only ever reuse inputs the graded tests show, so
    a solution with the hidden suite's raising inputs memorised as a blacklist,
    and no validation of its own, passed every block (held-out round 19,
    tk_memo/lg_memo). A twin is an input no test shows: a solution must decide
    it as the feature does. Shaped as the raising test (round 21 told a twin
    called bare from a real call by the test frame's locals), and of both
    outcomes, so that "raise, where a raise is expected, on any input not
    memorised" fails the accepted twins. The risk is an honest solution
    deciding a twin otherwise than the gold where the statement is silent;
    renaming keeps the shape of an input whose outcome a graded test fixes.

    A parametrize table's input column (column_inputs: isodate's
    `if expected is None: with raises(E): parse_date(s, digits)`) gives
    twins of each row (up to MAX_TABLE_ROWS rows, MAX_TABLE_FRESH each), in
    the test as written with its table cut to the one row, the guard sending
    it to the raise: a raising row's letters or digits renamed, an accepted
    row's digits. `module` (the test file) gives the tables named by a
    module constant and the literals no twin may equal.

    `fresh` names the input renamed: verify plants no twin of an input a
    planted block trades (its twins would point at the original's input)."""
    out: list[TestCopy] = []
    literals, consts = _module_facts(tests, module)
    raising = [r for ref, fn in tests for r in raising_inputs(fn, ref)]
    accepted = [a for ref, fn in tests for a in accepted_inputs(fn, ref)]
    letters: dict[tuple[str, bool], set[str]] = {}     # what the callee's raising, accepted inputs are made of
    for own, xs in ((True, raising), (False, accepted)):
        for x in xs:
            if isinstance(x.node.value, str):
                letters.setdefault((x.callee, own), set()).update(x.node.value)
    hosts = _raising_hosts(raising)
    # host, input, alphabets, whether a test shows it accepted, renamings and
    # reshapings wanted (a raising input's only: a digit fewer or more in an
    # accepted one asks what the tests never do, "$1,234.56" -> "$1,24.56" of
    # a lenient gold)
    sources: list[tuple[Raising, object, tuple[str, ...], bool, int, int]] = []
    done: set[tuple[str, object]] = set()          # (callee or table's test, input)
    for r in raising:
        if r.callee in hosts and (r.callee, r.node.value) not in done:
            done.add((r.callee, r.node.value))
            bad, good = letters.get((r.callee, True), set()), letters.get((r.callee, False), set())
            sources.append((hosts[r.callee], r.node.value,
                            tuple("".join(sorted(x)) for x in (bad & good, bad, good)), False, MAX_FRESH,
                            MAX_RESHAPED))
    for a in accepted:
        if a.callee in hosts and (a.callee, a.node.value) not in done:
            done.add((a.callee, a.node.value))
            sources.append((hosts[a.callee], a.node.value, (DIGITS_ONLY,), True, MAX_FRESH, 0))
    for ref, fn in tests:
        rows = column_inputs(fn, ref, consts)
        if not rows or not _twin_host(rows[0]):
            continue
        col = rows[0].column
        assert col is not None                      # column_inputs gives rows of a column
        bad = {ch for k in col.raising if isinstance(v := rows[k].node.value, str) for ch in v}
        good = {ch for k in col.accepted if isinstance(v := rows[k].node.value, str) for ch in v}
        picked = sorted(rng.sample(range(len(rows)), min(len(rows), MAX_TABLE_ROWS)))
        for k in picked:
            raises = k in col.raising
            if (ref.func, rows[k].node.value) in done:
                continue
            done.add((ref.func, rows[k].node.value))
            sources.append((rows[k], rows[k].node.value,
                            tuple("".join(sorted(x)) for x in (bad & good, bad, good)) if raises
                            else (DIGITS_ONLY,), not raises, MAX_TABLE_FRESH, MAX_TABLE_FRESH if raises else 0))
    for host, source, alphabets, shown_accepted, wanted, reshapes in sources:
        values = _renamings(source, rng, alphabets, wanted, 8 * MAX_FRESH, lambda v: (type(v), v) in literals)
        kinds = [TwinKind.RENAMED] * len(values)
        shapes = [v for v in reshaped(source) if v not in values and (type(v), v) not in literals] \
            if reshapes else []
        rng.shuffle(shapes)
        twice = _reshaped_twice(source, shapes, values, literals) if reshapes else []
        rng.shuffle(twice)
        for kind, more in ((TwinKind.RESHAPED, shapes[:reshapes]),
                           (TwinKind.TWICE, twice[:min(reshapes, MAX_TWO_SHAPES)])):
            values += more
            kinds += [kind] * len(more)
        if reshapes:                    # a raising input moved along a scale its feature reads
            far = [v for v in scaled(source, vocab) if v not in values
                   and (type(v), v) not in literals][:min(reshapes, MAX_SCALED)]
            values += far
            kinds += [TwinKind.SCALED] * len(far)
        for value, kind in zip(values, kinds):
            text = render(lines, host.fn, _twin_edits(lines, host, value, edit))
            if text is None:
                break
            out.append(_twin(host.ref, host.node, source, value, text, accepted=shown_accepted)
                       .model_copy(update={"twin_kind": kind.value}))
    return out


class TwinKind(StrEnum):
    """How a near twin of a raising site's input (fresh_copies) was made:
    verify._twins plants each input's kinds in turn."""
    RENAMED = "renamed"
    RESHAPED = "reshaped"
    TWICE = "twice"
    SCALED = "scaled"


class TradedEdit(StrEnum):
    """How a traded twin (traded_edits) differs from its input."""
    CASE = "case"
    DIGITS = "digits"
    SCALED = "scaled"
    SWAP = "swap"
    DELETE = "delete"
    DOUBLE = "double"


def traded_edits(value: object, rng: random.Random, vocab: tuple[Vocabulary, ...] = ()
                 ) -> list[tuple[object, TradedEdit]]:
    """Twins of an input a raising block trades, each with its kind, made
    alike whichever side it stands on: its case changed, a letter swapped
    with a neighbour, deleted or doubled (letter_reshaped), its digits
    renamed, moved along a scale the feature reads (vocab.scaled); up to
    MAX_TRADED_KIND of each kind. No word swaps: one inside a
    raising input asks what the tests leave open ("IIII" -> "IXIII", which a
    lenient but exact rule-set validator accepts, and the gold does not).
    Nothing here depends on whether the input raises; which of
    them the gold keeps does (a deleted letter mostly keeps a good numeral
    good, a doubled one a bad numeral bad: round 26's reader told the sides
    apart by that alone), so verify._traded plants each kind equally often
    for every input of a block."""
    out: list[tuple[object, TradedEdit]] = []
    if isinstance(value, str):
        out += [(value.upper(), TradedEdit.CASE), (value.lower(), TradedEdit.CASE)]
        letters = letter_reshaped(value)
        rng.shuffle(letters)
        out += [(t, TradedEdit.SWAP if len(t) == len(value) else  # type: ignore[arg-type]
                 TradedEdit.DELETE if len(t) < len(value) else TradedEdit.DOUBLE)  # type: ignore[arg-type]
                for t in letters]
    out += [(t, TradedEdit.DIGITS) for t in _renamings(value, rng, (DIGITS_ONLY,), MAX_TRADED_KIND, 16)]
    out += [(t, TradedEdit.SCALED) for t in scaled(value, vocab)]
    seen: set[object] = {value}
    kept: list[tuple[object, TradedEdit]] = []
    for t, kind in out:
        if t not in seen and sum(k is kind for _, k in kept) < MAX_TRADED_KIND:
            seen.add(t)
            kept.append((t, kind))
    return kept


def same_kinds(vocab: tuple[Vocabulary, ...] = ()) -> Callable[[object, object], bool]:
    """Whether a block may lend input `a` at raising input `r`: the kinds
    of traded twin their texts allow (traded_edits) are the same, so that
    verify._traded, planting only kinds all the block's inputs share,
    leaves none of `a`'s forms ungraded ("12.345 eur" lent beside "--5"
    lost its case twins, and a parser of lower-case codes only scored 1),
    and neither input is told by having fewer kinds: with `a`'s a subset of
    `r`'s, the lent input was whichever had fewer (a fresh review of round 27's
    code; no planted pair of the fixtures differed)."""
    known: dict[tuple[type, object], set[TradedEdit]] = {}

    def kinds(value: object) -> set[TradedEdit]:           # asked once per input, not per pair
        key = (type(value), value)
        if key not in known:
            known[key] = {k for _, k in traded_edits(value, random.Random(0), vocab)}
        return known[key]
    return lambda r, a: bool(kinds(a)) and kinds(a) == kinds(r)


def traded_copies(tests: list[tuple[TestRef, ast.FunctionDef | ast.AsyncFunctionDef]], lines: list[str],
                  traded: set[str], rng: random.Random, render: Callable, edit: Callable,
                  module: ast.Module | None = None, vocab: tuple[Vocabulary, ...] = ()) -> list[TestCopy]:
    """Twins (traded_edits) of each input an exchange block of `tests` trades
    (`traded`: the inputs' reprs), in the raising test's shape as
    fresh_copies makes them, marked `traded`; calibration keeps a twin of the
    raising input only where the gold rejects it too, one of an accepted
    input only where the gold accepts it (`fresh_accepted`).

    Why: a value twin says its input is accepted, so verify plants none of a
    traded input (it would point at the block's original), and a lent input
    lost every twin: when "  xlii " was the only lendable input, a parser of
    upper case only with that one input memorised scored 1 (held-out round
    25, F1: tk_upper; lg_lowcode, lg_shapes). These twins are made alike for
    both sides of a block and each asks what its input's own test fixes, so
    verify plants the same number of each."""
    literals, _ = _module_facts(tests, module)
    raising = [r for ref, fn in tests for r in raising_inputs(fn, ref)]
    accepted = [a for ref, fn in tests for a in accepted_inputs(fn, ref)]
    hosts = _raising_hosts(raising)
    sources: dict[tuple[str, str], tuple[object, bool]] = {}       # (callee, repr) -> (input, accepted)
    for x, ok in [(r, False) for r in raising] + [(a, True) for a in accepted]:
        key = (x.callee, repr(x.node.value))
        if key[1] in traded and x.callee in hosts:
            sources.setdefault(key, (x.node.value, ok))
    out: list[TestCopy] = []
    for (callee, _), (source, ok) in sorted(sources.items()):
        host = hosts[callee]
        for value, kind in traded_edits(source, rng, vocab):
            if (type(value), value) in literals:
                continue
            text = render(lines, host.fn, _twin_edits(lines, host, value, edit))
            if text is None:
                break
            out.append(_twin(host.ref, host.node, source, value, text, accepted=ok)
                       .model_copy(update={"traded": kind.value}))
    return out


_LEADING_ZERO = re.compile(r"(?<![0-9])0[0-9]")


def reshaped(value: object) -> list[object]:
    """Twins of a raising input of another shape than a renaming: one
    character deleted, one doubled, two neighbours swapped, each once, in
    order; never empty, never a digit
    run given a leading zero it did not have (a strict format's question,
    not the feature's). Why: renamings of a raising input are mostly still
    rejected (every one of ledger's), so a solution raising on the memorised
    raising inputs and all their renamings passed every twin (held-out
    rounds 21-22: lg_ball, lg_c3, tk_c4). One character more or less often
    makes a bad input good ("VX" -> "X", "1.2.3" -> "1.23") or stays bad
    ("--5" -> "---5"), which only the feature's own check tells apart."""
    if isinstance(value, bool) or not isinstance(value, (str, bytes, int)):
        return []
    text = value.decode("latin-1") if isinstance(value, bytes) else str(abs(value)) if isinstance(value, int) \
        else value
    ok = [i for i, ch in enumerate(text) if ch.isascii() and ch.isprintable()]
    out: list[str] = []
    for i in ok:
        out += [text[:i] + text[i + 1:], text[:i + 1] + text[i:]]
        if i + 1 in ok and text[i] != text[i + 1]:
            out.append(text[:i] + text[i + 1] + text[i] + text[i + 2:])
    zeros = len(_LEADING_ZERO.findall(text))
    got: list[object] = []
    for t in dict.fromkeys(out):
        if not t or t == text or len(_LEADING_ZERO.findall(t)) > zeros or (
                isinstance(value, int) and (t[0] == "0")):
            continue
        got.append(t.encode("latin-1") if isinstance(value, bytes) else
                   (-int(t) if value < 0 else int(t)) if isinstance(value, int) else t)
    return got


def _reshaped_twice(source: object, once: list[object], taken: list[object],
                    literals: set[tuple[type, object]]) -> list[object]:
    """Twins of a raising input two reshapes away (reshaped of each of
    `once`), of an input up to MAX_TWO_EDITS characters, none of `once`,
    `taken` or the file's literals. Why: the one-step neighbourhood of the
    tests' raising inputs is small and public, so a lenient parse plus a
    blacklist of its rejected members passed every twin while accepting
    "IIIIII", "VV" and "IC" (held-out round 24, tk_lenient); two steps make
    that list many times longer, and only the feature's own rule decides
    "IIII" -> "IIIIII" or "VX" -> "VVXX"."""
    if len(str(source)) > MAX_TWO_EDITS:
        return []
    seen = set(once) | set(taken) | {source}
    out = [t for x in once for t in reshaped(x) if t not in seen and (type(t), t) not in literals]
    return list(dict.fromkeys(out))


def digit_twin(m: TestCopy) -> bool:
    """Whether a twin (fresh_copies) renamed digits only, as every twin of an
    accepted input does: it does not show its input was a raising one."""
    try:
        source, twin = literal_eval(m.fresh), literal_eval(m.trades[0] if m.trades else "None")
    except (ValueError, SyntaxError):
        return False
    if isinstance(source, int) and isinstance(twin, int):
        return True
    if not (isinstance(source, (str, bytes)) and isinstance(twin, (str, bytes))) \
            or type(twin) is not type(source) or len(source) != len(twin):
        return False
    text = source.decode("latin-1") if isinstance(source, bytes) else source
    other = twin.decode("latin-1") if isinstance(twin, bytes) else twin
    return all(a == b or a.isdigit() for a, b in zip(text, str(other)))


# ------------------------------------------------------------------ value twins

def letter_reshaped(value: object) -> list[object]:
    """Twins of an accepted input of another shape, by its letters only: one
    ASCII letter deleted, doubled, or swapped with a neighbouring letter
    ("MCMXCIV" -> "MCMXCV", "  xlii " -> "  xxlii "). Digits, separators and
    signs stay as they are: "$1,234.56" -> "$1,24.56" is accepted by a
    lenient gold and refused by a strict honest parser, a question no test
    asks (round 22)."""
    if not isinstance(value, (str, bytes)):
        return []
    text = value.decode("latin-1") if isinstance(value, bytes) else value
    letter = [ch.isascii() and ch.isalpha() for ch in text]
    out: list[str] = []
    for i, ok in enumerate(letter):
        if not ok:
            continue
        out += [text[:i] + text[i + 1:], text[:i + 1] + text[i:]]
        if i + 1 < len(text) and letter[i + 1] and text[i] != text[i + 1]:
            out.append(text[:i] + text[i + 1] + text[i] + text[i + 2:])
    got = [t for t in dict.fromkeys(out) if t.strip() and t != text]
    return [t.encode("latin-1") for t in got] if isinstance(value, bytes) else list(got)


_DIGIT_RUN = re.compile(r"[0-9]+")


def _first_run(text: str) -> re.Match | None:
    """An input's first digit run, unless a grouping separator touches it
    ("$1,234.56": a digit more or fewer there asks about grouping)."""
    m = _DIGIT_RUN.search(text)
    if m is None or {text[m.end():m.end() + 1], text[max(0, m.start() - 1):m.start()]} & {",", "_", "'"}:
        return None
    return m


def run_twins(value: object, rng: random.Random) -> list[object]:
    """Twins of an accepted input whose first digit run is one digit longer
    (a digit from 1-9 put first) or shorter (its first digit dropped, never
    leaving a leading zero): "12.5" -> "412.5", "2.5". Renamed digits keep
    every digit's place, so a rule re-filling the memorised inputs' digit
    templates passed every renamed twin with no parsing at all (held-out
    round 24, lg_tmpl); a run of another length needs the feature's own
    reading of the number. Only where the callee's accepted inputs show that
    run at more than one length (valued_copies): a fixed-width field (a
    date's year) made longer asks what no test does."""
    if not isinstance(value, str):
        return []
    m = _first_run(value)
    if m is None:
        return []
    run = m.group()
    out: list[object] = [value[:m.start()] + rng.choice("123456789") + value[m.start():]]
    if len(run) >= 2 and run[1] != "0":
        out.append(value[:m.start()] + run[1:] + value[m.end():])
    return out


def valued_key(m: TestCopy) -> str:
    """The key of a value twin's value (GradingPlan.shapes): the copy's identity."""
    what = json.dumps([m.file, list(m.cls), m.func, m.group, list(m.trades), m.fresh])
    return VALUED_KEY + hashlib.sha256(what.encode()).hexdigest()[:24]


def _valued_edits(host: Accepted, value: object, edit: Callable) -> list:
    """The host's equality as `A' == A'`: both sides its computed side with
    the input replaced by the twin (`f(value)`), which seals.seal_function
    judges by the gold's value."""
    side, other = host.side, host.other
    assert side is not None and other is not None      # value_inputs sets both
    text = ast.unparse(_swapped(side, host.node, value))
    return [edit(n.lineno, n.col_offset, n.end_col_offset, text, n.end_lineno) for n in (side, other)]


def _swapped(side: ast.expr, node: ast.Constant, value: object) -> ast.expr:
    """A copy of `side` with its literal `node` replaced by `value`."""
    where = (node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)

    class Swap(ast.NodeTransformer):
        def visit_Constant(self, n: ast.Constant) -> ast.AST:
            same = (n.lineno, n.col_offset, n.end_lineno, n.end_col_offset) == where
            return ast.Constant(value) if same else n                 # type: ignore[arg-type]
    return Swap().visit(copy.deepcopy(side))


def value_inputs(fn, ref: TestRef, names: dict[str, str]) -> list[Accepted]:
    """Inputs a value twin may rename in `fn`'s own equality statements
    (`assert A == B`, `x.assertEqual(A, B)`): the literal first argument of
    each call in the computed side, the side an expectation is not
    (shapes.buildable: built from literals and what the module imports,
    calling only constructors). `Version.parse("1.2.3").bump_build()`,
    `resolve(doc, "/a")`: the first argument is the subject; a later one is
    mostly a mode or a separator, whose twin asks what no test does."""
    out: list[Accepted] = []
    for st in fn.body:
        if not _sealable(st):
            continue
        sides = _equality_sides(st)
        if sides is None:
            continue
        for side, other in (sides, sides[::-1]):
            if buildable(side, names) or not buildable(other, names) and not isinstance(other, ast.Constant):
                continue
            for call in (n for n in ast.walk(side) if isinstance(n, ast.Call)):
                if call.args and _plain(call.args[0]):
                    out.append(Accepted(fn, ref, ast.unparse(call.func), len(call.args),
                                        call.args[0], call, side, other))  # type: ignore[arg-type]
    return out


def word_inputs(accepted: list[Accepted], vocab: tuple[Vocabulary, ...]) -> list[Accepted]:
    """The other literal arguments of value_inputs' calls that are a word
    of a vocabulary the feature reads (`parse_amount("3", currency="JPY")`):
    their twins swap the word (vocab.swaps), nothing else."""
    words = {w.lower() for v in vocab for w in v}
    out: list[Accepted] = []
    for a in accepted:
        assert a.call is not None                      # value_inputs sets it
        for node in a.call.args[1:] + [k.value for k in a.call.keywords]:
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.lower() in words:
                out.append(Accepted(a.fn, a.ref, a.callee, a.arity, node, a.call, a.side, a.other))
    return out


def _slot(a: Accepted) -> str:
    """Which argument of its call an input is (its first, a later one, a keyword)."""
    if a.call is None or not a.call.args or a.node is a.call.args[0]:
        return "0"
    return next((k.arg or "**" for k in a.call.keywords if k.value is a.node),
                str(next((i for i, x in enumerate(a.call.args) if x is a.node), "?")))


def valued_copies(tests: list[tuple[TestRef, ast.FunctionDef | ast.AsyncFunctionDef]], lines: list[str],
                  rng: random.Random, render: Callable, edit: Callable,
                  module: ast.Module | None = None, vocab: tuple[Vocabulary, ...] = ()) -> list[TestCopy]:
    """Value twins: an accepting test's equality (`assertEqual(parse_amount(
    "12.5"), Money("12.50"))`, a statement of the function's own) on a near
    twin of its input, stored as `parse_amount("17.5") == parse_amount(
    "17.5")`. Calibration keeps a twin only where the gold passes it (it
    takes the input); the capture run keeps the shape of the gold's value on
    it (GradingPlan.shapes[valued_key]); verify plants it sealed, the value
    judged on the host (seals.seal_function's `twin`), so that nothing in the
    sandbox says what it should be.

    Why: every other copy of an equality test changes what is expected,
    never the input, and raising twins ask only whether an input raises: a
    lookup of the memorised accepted inputs' values, plus an allowlist of the
    twins the gold takes, scored 1 on every task of held-out round 23. A
    value twin asks the feature's value on an input no test shows.

    Twins of an accepted input: its digits renamed (fresh_value), and its
    letters reshaped once or twice (letter_reshaped: from_roman's inputs have
    no digits), each in its own statement; of a raising input (its letters
    or digits renamed, its shape changed: "VX" -> "XV", "--5" -> "-5"), in
    the first such statement of the same callee. Up to MAX_VALUED of each.
    And, where the removed code reads a word list of the repository's own
    (`vocab`, grade/vocab.py), twins with one word of an input swapped for
    another of its list (a currency code, a symbol, a numeral's letters),
    also in the call's other arguments (word_inputs): a feature knowing
    only the cases the tests show scored 1 (held-out round 24, lg_nocur)."""
    literals, _ = _module_facts(tests, module)
    raising = [r for ref, fn in tests for r in raising_inputs(fn, ref)]
    names = module_names(module) if module is not None else {}
    accepted = [a for ref, fn in tests for a in value_inputs(fn, ref, names)]
    hosts: dict[str, Accepted] = {}             # a callee -> the first statement calling it on one literal
    for a in accepted:
        if a.arity == 1 and a.side is a.call:
            hosts.setdefault(a.callee, a)
    bad: dict[str, set[str]] = {}
    good: dict[str, set[str]] = {}
    for xs, into in ((raising, bad), (accepted, good)):
        for x in xs:
            if isinstance(x.node.value, str):
                into.setdefault(x.callee, set()).update(x.node.value)

    def drawn(pool: list[object], want: int) -> list[object]:
        pool = list(pool)
        rng.shuffle(pool)
        return pool[:want]

    widths: dict[str, set[int]] = {}          # a callee -> the lengths its accepted inputs' first runs show
    for a in accepted:
        if isinstance(a.node.value, str) and (m := _first_run(a.node.value)) is not None:
            widths.setdefault(a.callee, set()).add(len(m.group()))
    sources: list[tuple[Accepted, object, list[object]]] = []
    worded: dict[tuple[str, str, object], str] = {}  # (callee, slot, twin) -> the word it swaps in (vocab.swaps)
    counts: dict[str, int] = {}                       # words swapped in so far (vocab.covering)
    for a in accepted:
        v = a.node.value
        runs = run_twins(v, rng) if len(widths.get(a.callee, ())) > 1 else []
        # letters reshaped only where there are no digits to rename: "12.345
        # eur" -> "12.345 uer" asks whether any three letters are a currency
        digitless = isinstance(v, (str, bytes)) and not any(chr(c).isdigit() if isinstance(c, int) else c.isdigit()
                                                            for c in v)
        once = letter_reshaped(v) if digitless else []
        twice: list[object] = []
        if digitless and len(v) <= MAX_TWO_EDITS:                                  # type: ignore[arg-type]
            twice = [t for x in once for t in letter_reshaped(x) if t != v and t not in once]
            twice = list(dict.fromkeys(twice))
        found = word_swaps(v, vocab)
        swaps: list[object] = list(covering(found, counts, MAX_SWAPS, rng))
        worded.update({(a.callee, _slot(a), t): w for t, w in found})
        sources.append((a, v, runs + _renamings(v, rng, (DIGITS_ONLY,), MAX_VALUED, 8 * MAX_VALUED)
                        + drawn(once, MAX_VALUED // 2) + drawn(twice, MAX_VALUED // 2) + swaps))
    for a in word_inputs(accepted, vocab):
        found = word_swaps(a.node.value, vocab)
        swaps = list(covering(found, counts, MAX_SWAPS, rng))
        worded.update({(a.callee, _slot(a), t): w for t, w in found})
        sources.append((a, a.node.value, swaps))
    for r in raising:
        host = hosts.get(r.callee)
        if host is None:
            continue
        b, g = bad.get(r.callee, set()), good.get(r.callee, set())
        alphabets = tuple("".join(sorted(x)) for x in (b & g, b, g))
        half = MAX_VALUED // 2
        sources.append((host, r.node.value, _renamings(r.node.value, rng, alphabets, half, 8 * half)
                        + drawn(reshaped(r.node.value), MAX_VALUED)))
    out: list[TestCopy] = []
    done: set[tuple[str, str, type, object]] = set()
    for host, source, values in sources:
        for value in values:
            key = (host.callee, _slot(host), type(value), value)
            if value == source or (type(value), value) in literals or key in done:
                continue
            done.add(key)
            text = render(lines, host.fn, _valued_edits(host, value, edit))
            if text is None:
                break
            out.append(_twin(host.ref, host.node, source, value, text, valued=True,
                             word=worded.get((host.callee, _slot(host), value), "")))
    return out


MAX_TABLE_VALUED = 3           # value twins proposed from each row's input cell (table_valued_copies)


@dataclass(frozen=True)
class _TableEquality:
    """A parametrize table's equality `A == exp`: the statement, A, the
    expected column's name, the statements to neutralise (others reading it)."""
    stmt: ast.stmt
    actual: ast.expr
    expected: ast.Name
    exp: str
    quiet: tuple[ast.stmt, ...]


def _equality_sides(st: ast.stmt) -> tuple[ast.expr, ast.expr] | None:
    if isinstance(st, ast.Assert) and isinstance(st.test, ast.Compare) and len(st.test.ops) == 1 \
            and isinstance(st.test.ops[0], ast.Eq):
        return st.test.left, st.test.comparators[0]
    if _sealable(st) and not isinstance(st, ast.Assert):
        return st.value.args[0], st.value.args[1]               # type: ignore[attr-defined]
    return None


def _table_equality(fn, names: list[str]) -> _TableEquality | None:
    """The equality of a table test a value twin asks: a statement of the
    function's own, or the one statement of the branch a value neither None nor
    false takes in its last `if` on the expected column (`if exp is None:
    <raise> else: assert f(x) == exp`); the expected column read nowhere
    else but in top-level asserts and calls, which a twin neutralises."""
    last = fn.body[-1] if fn.body else None
    where: list[tuple[ast.stmt, str | None]] = [(st, None) for st in fn.body]
    if isinstance(last, ast.If):
        t = last.test
        if isinstance(t, ast.Compare) and isinstance(t.left, ast.Name) and len(t.ops) == 1 and _none(t.comparators[0]):
            op = t.ops[0]
            branch = last.orelse if isinstance(op, ast.Is) else last.body if isinstance(op, ast.IsNot) else []
            where = [(branch[0], t.left.id)] if len(branch) == 1 else []
        elif isinstance(t, ast.UnaryOp) and isinstance(t.op, ast.Not) and isinstance(t.operand, ast.Name):
            where = [(last.orelse[0], t.operand.id)] if len(last.orelse) == 1 else []
        elif isinstance(t, ast.Name):
            where = [(last.body[0], t.id)] if len(last.body) == 1 else []
        else:
            where = []
    for st, guard in where:
        sides = _equality_sides(st)
        if sides is None:
            continue
        for actual, expected in (sides, sides[::-1]):
            if not (isinstance(expected, ast.Name) and expected.id in names) or guard not in (None, expected.id):
                continue
            if not any(isinstance(n, ast.Call) for n in ast.walk(actual)) or any(
                    isinstance(n, ast.Name) and n.id == expected.id for n in ast.walk(actual)):
                continue
            quiet = []
            ok = True
            for top in fn.body:
                if top is st or (guard is not None and top is last):
                    continue
                if any(isinstance(n, ast.Name) and n.id == expected.id for n in ast.walk(top)):
                    if isinstance(top, (ast.Assert, ast.Expr)):
                        quiet.append(top)
                    else:
                        ok = False
            if ok:
                return _TableEquality(st, actual, expected, expected.id, tuple(quiet))
    return None


def table_valued_copies(tests: list[tuple[TestRef, ast.FunctionDef | ast.AsyncFunctionDef]], lines: list[str],
                        rng: random.Random, render: Callable, edit: Callable,
                        module: ast.Module | None = None, vocab: tuple[Vocabulary, ...] = ()) -> list[TestCopy]:
    """Value twins of a parametrize table's equality (`assert from_roman(
    numeral) == expected`; semver's `assert bump_build(version) ==
    expected`): the test on one row, an input cell the equality's computed
    side reads replaced by a near twin (a row the equality checks: digits
    renamed, or letters reshaped where it has none; a row its guard sends
    elsewhere, a raise: renamed or reshaped as raising inputs are), the
    expected cell by True (what takes the equality's branch; the original
    row's expectation would show a sealed value), the equality as `A == A`,
    and other top-level asserts on the expected column made `pass`; a row's
    words swapped within the feature's vocabularies too. Kept and judged as
    valued_copies' twins are."""
    literals, consts = _module_facts(tests, module)
    text = "".join(lines)
    out: list[TestCopy] = []
    counts: dict[str, int] = {}                  # words swapped in so far (vocab.covering)
    for ref, fn in tests:
        decs = [d for d in fn.decorator_list if isinstance(d, ast.Call) and _name(d.func) == "parametrize"]
        if len(decs) != 1 or len(decs[0].args) < 2:
            continue
        dec = decs[0]
        got = _table_rows(dec, consts)
        if got is None or not got[1]:
            continue
        names, rows = got
        eq = _table_equality(fn, names)
        if eq is None or eq.exp not in names:
            continue
        e = names.index(eq.exp)
        reads = {n.id for n in ast.walk(eq.actual) if isinstance(n, ast.Name)}
        inputs = [i for i, n in enumerate(names) if n in reads and n != eq.exp
                  and all(_plain(r[i]) for r in rows)]
        ids = next((k.value for k in dec.keywords if k.arg == "ids"), None)
        table = dec.args[1]
        if not inputs or isinstance(table, ast.Name):
            continue                        # a table named by a constant: seal_rows writes it out, not this
        picked = sorted(rng.sample(range(len(rows)), min(len(rows), MAX_TABLE_ROWS)))
        done: set[tuple[int, type, object]] = set()
        for i in inputs:
            good = {ch for r in rows if not _none(r[e]) and isinstance(v := r[i].value, str)  # type: ignore[attr-defined]
                    for ch in v}
            bad = {ch for r in rows if _none(r[e]) and isinstance(v := r[i].value, str)        # type: ignore[attr-defined]
                   for ch in v}
            for k in picked:
                cell = rows[k][i]
                source = cell.value                                                    # type: ignore[attr-defined]
                raising = _none(rows[k][e])
                if raising:
                    alphabets = tuple("".join(sorted(x)) for x in (bad & good, bad, good))
                    pool = [fresh_value(source, rng, alphabets)] + reshaped(source)
                else:
                    digitless = isinstance(source, str) and not any(c.isdigit() for c in source)
                    pool = [fresh_value(source, rng, (DIGITS_ONLY,)) for _ in range(2)] + (
                        letter_reshaped(source) if digitless else [])
                head, tail = pool[:2], pool[2:]
                rng.shuffle(tail)
                values = [v for v in head + tail if v is not None][:MAX_TABLE_VALUED + 2]
                found = [] if raising else word_swaps(source, vocab)
                words = dict(found)
                # word swaps apart, the words least swapped in first
                for want, group in ((MAX_TABLE_VALUED, values),
                                    (MAX_TABLE_SWAPS, covering(found, counts, MAX_TABLE_SWAPS, rng))):
                    kept = 0
                    for value in group:
                        if kept >= want:
                            break
                        key = (i, type(value), value)
                        if value == source or (type(value), value) in literals or key in done:
                            continue
                        done.add(key)
                        cells = [repr(value) if j == i else "True" if j == e else
                                 (ast.get_source_segment(text, c) or "") for j, c in enumerate(rows[k])]
                        row = cells[0] if len(cells) == 1 else "(" + ", ".join(cells) + ")"
                        a = ast.get_source_segment(text, eq.actual) or ast.unparse(eq.actual)
                        x = eq.expected
                        edits = [edit(table.lineno, table.col_offset, table.end_col_offset, f"[{row}]",
                                      table.end_lineno),
                                 edit(x.lineno, x.col_offset, x.end_col_offset, f"({a})", x.end_lineno)]
                        edits += [edit(q.lineno, q.col_offset, q.end_col_offset, "pass", q.end_lineno)
                                  for q in eq.quiet]
                        if ids is not None:
                            edits.append(edit(ids.lineno, ids.col_offset, ids.end_col_offset, "None",
                                              ids.end_lineno))
                        src = render(lines, fn, edits)
                        if src is None:
                            break
                        kept += 1
                        out.append(_twin(ref, cell, source, value, src, valued=True,
                                         word=words.get(value, "") if isinstance(value, str) else ""))
    return out
