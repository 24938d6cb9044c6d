"""Tables the seals can reach in real suites: module constants and branches.

Real libraries rarely write a parametrize table inline. isodate's

    PARSE_TEST_CASES = (("PT36H", timedelta(hours=36), D_DEFAULT, "P1DT12H"), ...)

    @pytest.mark.parametrize("durationstring, expectation, format, altstr", PARSE_TEST_CASES)
    def test_format_parse(durationstring, expectation, format, altstr):
        if altstr:
            assert duration_isoformat(expectation, format) == altstr
        else:
            assert duration_isoformat(expectation, format) == durationstring

reads a table another test shares (so its cells cannot become tokens in
place) and picks its expectation in a branch (so neither equality is reached
by every row). Measured on isodate and hyperlink (bench/bench_seals.py), such
tests were 297 of 321 graded ids, none protected. Two pure steps reach them:

- `inline_tables`: a target test's `parametrize(..., NAME)` or `for ... in
  NAME:` over a module constant (one assignment, a written-out list or tuple)
  gets the constant's text in place of the name, which seal_function can then seal row by row; a
  constant no other code reads any more is emptied, so its values are not in
  the sandbox either.
- `row_paths`: which statements each row of a table reaches, following the
  `if`s whose test is decided by the row's own literal cells (`if altstr:`,
  `if expected is None:`). A column read only by equalities and by such tests
  is sealed in the rows that reach one of its equalities, and required there.
"""
from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from taskforge.analysis.pyparse import literal_eval

UNKNOWN = None          # a test the row's cells do not decide


@dataclass(frozen=True)
class Cell:
    """What a condition can know of one row's cell: its literal value, or
    only that it is an expression (a call, a name) assumed not None."""
    literal: bool
    value: object = None


def _stores(tree: ast.AST) -> dict[str, int]:
    out: dict[str, int] = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
            out[n.id] = out.get(n.id, 0) + 1
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            for name in n.names:
                out[name] = out.get(name, 0) + 2            # never a plain constant
    return out


def module_tables(tree: ast.Module) -> dict[str, ast.Assign]:
    """Module constants that are written-out tables: NAME = [...] / (...),
    assigned once in the whole module."""
    stores = _stores(tree)
    out = {}
    for st in tree.body:
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name) \
                and isinstance(st.value, (ast.List, ast.Tuple)) and st.value.elts \
                and stores.get(st.targets[0].id) == 1:
            out[st.targets[0].id] = st
    return out


def _segment(lines: list[bytes], node: ast.AST) -> str:
    l0, c0, l1, c1 = node.lineno, node.col_offset, node.end_lineno, node.end_col_offset  # type: ignore[attr-defined]
    if l0 == l1:
        return lines[l0 - 1][c0:c1].decode("utf-8")
    return b"".join([lines[l0 - 1][c0:], *lines[l0:l1 - 1], lines[l1 - 1][:c1]]).decode("utf-8")


def inline_tables(code: str, tree: ast.Module, defs: Iterable[ast.FunctionDef | ast.AsyncFunctionDef]) -> str:
    """`code` with each of `defs`' parametrize tables that name a module
    table (module_tables) written out in place of the name, and each such
    constant no other code then reads emptied (`()`). Unchanged when there
    is nothing to inline."""
    tables = module_tables(tree)
    if not tables:
        return code
    lines = code.encode("utf-8").splitlines(keepends=True)
    cuts: list[tuple[int, int, int, int, str]] = []
    inlined: dict[str, int] = {}
    for fn in defs:
        named = [dec.args[1] for dec in fn.decorator_list
                 if isinstance(dec, ast.Call) and isinstance(dec.func, ast.Attribute)
                 and dec.func.attr == "parametrize" and len(dec.args) == 2]
        # ... and the rows a `for` in its body runs through (hyperlink's
        # `for (ref, expected) in relativeLinkTestsForRFC3986:`)
        named += [st.iter for st in statements(fn) if isinstance(st, ast.For)]
        for arg in named:
            assign = tables.get(arg.id) if isinstance(arg, ast.Name) else None
            if assign is None or assign.lineno >= fn.lineno:
                continue
            text = "(" + _segment(lines, assign.value) + "\n)"
            cuts.append((arg.lineno, arg.col_offset, arg.end_lineno, arg.end_col_offset, text))  # type: ignore
            inlined[arg.id] = inlined.get(arg.id, 0) + 1                                     # type: ignore
    if not cuts:
        return code
    loads: dict[str, int] = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            loads[n.id] = loads.get(n.id, 0) + 1
        elif isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in inlined:
            loads[n.value] = loads.get(n.value, 0) + 1        # `__all__ = ["CASES"]`, getattr(m, "CASES")
    for name, count in inlined.items():
        if loads.get(name, 0) == count:
            v = tables[name].value
            cuts.append((v.lineno, v.col_offset, v.end_lineno, v.end_col_offset, "()"))  # type: ignore
    for l0, c0, l1, c1, text in sorted(cuts, reverse=True):
        head, tail = lines[l0 - 1][:c0], lines[l1 - 1][c1:]
        lines[l0 - 1:l1] = [head + text.encode("utf-8") + tail]
    return b"".join(lines).decode("utf-8")


def statements(fn: ast.AST):
    """Every statement of a function, nested blocks included, nested definitions not."""
    stack = list(getattr(fn, "body", []))
    while stack:
        st = stack.pop()
        yield st
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for name in ("body", "orelse", "finalbody", "handlers", "cases"):
            for child in getattr(st, name, None) or []:
                if isinstance(child, ast.stmt):
                    stack.append(child)
                elif hasattr(child, "body"):             # except handlers, match cases
                    stack.extend(child.body)


def row_cells(names: list[str], cells: list[ast.expr]) -> dict[str, Cell]:
    """A row's cells as conditions see them: plain literals by value, any
    other expression as an object assumed not None."""
    out = {}
    for n, c in zip(names, cells):
        try:
            out[n] = Cell(True, literal_eval(c))
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            out[n] = Cell(False)
    return out


def decide(test: ast.expr, row: Mapping[str, Cell]) -> bool | None:
    """The truth of an `if` test under a row's cells, or UNKNOWN. Decided:
    a column's truth (`if n`, `not n`), `n is None` / `is not None`, `n ==`
    / `!=` a literal, and `and` / `or` of those. An expression cell is taken
    to be not None (a wrong guess fails the gold at generation, which then
    leaves the test unsealed) and of unknown truth."""
    if isinstance(test, ast.Name) and test.id in row:
        c = row[test.id]
        return bool(c.value) if c.literal else UNKNOWN
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        got = decide(test.operand, row)
        return UNKNOWN if got is UNKNOWN else not got
    if isinstance(test, ast.BoolOp):
        vals = [decide(v, row) for v in test.values]
        stop = isinstance(test.op, ast.Or)                    # the value that decides an or / an and
        if stop in vals:
            return stop
        return UNKNOWN if UNKNOWN in vals else not stop
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        left, op, right = test.left, test.ops[0], test.comparators[0]
        if isinstance(left, ast.Constant) and isinstance(right, ast.Name):
            left, right = right, left
        if not (isinstance(left, ast.Name) and left.id in row and isinstance(right, ast.Constant)):
            return UNKNOWN
        c = row[left.id]
        if isinstance(op, (ast.Is, ast.IsNot)) and right.value is None:
            is_none = c.literal and c.value is None
            return is_none if isinstance(op, ast.Is) else not is_none
        if isinstance(op, (ast.Eq, ast.NotEq)) and c.literal and type(c.value) in (str, int, bool, bytes, type(None)):
            same = type(c.value) is type(right.value) and c.value == right.value
            return same if isinstance(op, ast.Eq) else not same
    return UNKNOWN


def condition_reads(test: ast.expr) -> dict[str, set[str]] | None:
    """Names an `if` test of decide's forms reads, each with how: "truth"
    (`n`, `not n`), "none" (`n is None`), "value" (`n == "x"`); None for a
    test of another form."""
    out: dict[str, set[str]] = {}
    stack = [test]
    while stack:
        t = stack.pop()
        if isinstance(t, ast.Name):
            out.setdefault(t.id, set()).add("truth")
        elif isinstance(t, ast.UnaryOp) and isinstance(t.op, ast.Not):
            stack.append(t.operand)
        elif isinstance(t, ast.BoolOp):
            stack.extend(t.values)
        elif isinstance(t, ast.Compare) and len(t.ops) == 1 and isinstance(t.left, ast.Name) \
                and isinstance(t.comparators[0], ast.Constant):
            op, value = t.ops[0], t.comparators[0].value
            if isinstance(op, (ast.Is, ast.IsNot)) and value is None:
                out.setdefault(t.left.id, set()).add("none")
            elif isinstance(op, (ast.Eq, ast.NotEq)):
                out.setdefault(t.left.id, set()).add("value")
            else:
                return None
        else:
            return None
    return out


def row_paths(body: list[ast.stmt], row: Mapping[str, Cell], reached) -> tuple[set[int], set[int]]:
    """(ids of the statements a row reaches, ids of the `if`s on its way
    whose test the row does not decide). `reached` is seals.reached: the
    statements a run always goes through, without descending into `if`s;
    here an `if` the row decides is followed into its branch. `row`: only
    columns the function never assigns."""
    seen: set[int] = set()
    open_: set[int] = set()

    def walk(stmts: list[ast.stmt]) -> None:
        for st in reached(stmts):
            seen.add(id(st))
            if isinstance(st, ast.If):
                got = decide(st.test, row)
                if got is UNKNOWN:
                    open_.add(id(st))
                else:
                    walk(st.body if got else st.orelse)
    walk(body)
    return seen, open_
