"""Sealed expected values: a hidden test's literal expectation judged on the host.

A must-fail copy protects an expected value only as far as statistics cannot
tell it from its copies, and every value in the test process can be read: a
probe that calls the tests (or reads pytest's items) with an object recording
what it is compared with learns the original's value and the copies' alike.
A sealed site is never in the sandbox. In the planted file,

    assert f(x) == 14                 ->  assert __import__("tf_guard").seal((f(x)), "t3f9...")
    self.assertEqual(f(x), "IV")      ->  self.assertTrue(__import__("tf_guard").seal((f(x)), "t..."))
    @parametrize("n, want", [(4, "IV")]) + assert f(n) == want
                                      ->  the `want` column holds tokens, the ids are random

`seal` sends the actual value, reduced to plain data, on the result pipe and
returns True; the host compares it with the literal it kept. A test that
passed in pytest fails unless every seal it must reach (an equality every
completed run of a function with no return or yield reaches, and its row's
token) was reported, and every value reported while it ran equals what its
token wants. The expected side may be a literal or a name every read of which
is such an equality's: a parametrize column, a local, the rows of a `for`.
Sending other tokens or values cannot help: the expected values are not there
to copy, and a wrong one fails the test.

Pure: source in, source and the host's record out (`seal_source`); outcomes
in, failed node ids out (`unsealed`). verify plants, then seals.
"""
from __future__ import annotations

import ast
import builtins as _builtins
import enum
import json
import re
import secrets
import textwrap
from collections import Counter
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any, Callable

from taskforge.analysis.pyparse import dotted_parts, literal_eval
from taskforge.analysis.pyparse import parse as parse_python
from taskforge.analysis.testindex import TestRef, test_ref
from taskforge.grade.seal_rows import condition_reads, inline_tables, row_cells, row_paths
from taskforge.grade.seal_rows import statements as _statements
from taskforge.grade.shapes import buildable, built_side, shape_key, shape_matches
from taskforge.grade.shapes import built as shape_built

SEAL_CALL = '__import__("tf_guard").seal'
SEAL_MATCH = '__import__("tf_guard").seal_match'
SEAL_TRUTH = '__import__("tf_guard").seal_truth'
SEAL_IS = '__import__("tf_guard").seal_is'
# An equality with a computed expectation (`== Money("0")`) stays in the
# sandbox, judged by the expected side's class too where the actual one
# derives from it (tf_guard.seal_eq): an object of a subclass equal to
# everything (red team of 2026-12-05, 6) fails it.
SEAL_EQ = '__import__("tf_guard").seal_eq'
# Polarity seals: what an `assert X` / `assert not X` / `X is None` / `X is not
# None` asks is on the host, so an original and its negated copy read alike.
# They hide which way a test points, not a value: a solution that makes every
# such X truthy is right wherever the test wanted that, so they count as no
# protection (SealPlan.sealed_heads).
TRUTH = "bool "                 # expected "bool True" / "bool False": the truth of the reported value
IDENTITY = "is "                # expected "is None" / "is not True" ...: which singleton it was
SEARCH = "re.search "           # an expected "source" that is a pattern the reported text must contain
RAISED = "raised "              # ... the classes a raised exception must include one of
SWAPPED_FROM = " but "          # ... in a swapped copy: not only with the class it was swapped from
SEAL_RAISED = '__import__("tf_guard").seal_raised'
SHAPE = "shape "                # a built expectation's shape, as the gold built it (grade/shapes.py)
CAPTURE = "capture "            # generation only: report both shapes of the equality keyed so
SEAL_SHAPE = '__import__("tf_guard").seal_shape'
SEAL_CAPTURE = '__import__("tf_guard").seal_capture'
# The rules a task's seals follow, recorded at generation (GradingPlan.seal_rules)
# so that a task keeps the rules its final check verified the gold under:
# 1 pytest's `with raises(E, match=P)` only, 2 (2026-12-05) unittest's forms,
# the callable ones, and a class sealed where its pattern is not, 3 (2026-12-05)
# a computed equality judged leaf by leaf: plain data by its value, classes
# that share no base but object unequal (tf_guard.seal_eq), 4 (2026-12-06) a
# built expectation whose shape the gold's run kept judged on the host
# (grade/shapes.py), 5 (2026-12-07) tables named by a module constant written
# out, and a column picked in a branch sealed in the rows that reach it
# (grade/seal_rows.py).
SEAL_RULES = 5
MAX_PATTERN = 512               # a longer match= pattern stays unsealed
# Characters of exception text a sealed pattern is searched in: what one report
# carries (tf_guard.MAX_SEAL); the pattern has no repeat, so a search is linear
# (a message embedding a large repr is honest: red team of 2026-12-05, 5).
MAX_SEARCHED = 200 * 1024
MAX_SEARCHES = 100              # reports of one match token per test run; more fail it
MAX_VALUE = 200 * 1024         # characters of one encoded value (tf_guard.MAX_SEAL)
MAX_LITERAL = 16 * 1024        # a longer literal stays unsealed: an equal value may not fit MAX_VALUE
MAX_RECORDS = 2000             # seal records kept per test run; more fail it
MAX_HASHED = 1024              # items of a reported set or dict (a literal of more stays unsealed at generation)


@dataclass
class SealPlan:
    """What the host keeps of one verify's seals."""
    expected: dict[str, str] = field(default_factory=dict)          # token -> literal source
    # node-id head ("f.py::C::test_x") -> tokens every run of it must report
    required: dict[str, set[str]] = field(default_factory=dict)
    # head -> token -> the part of the row's id pytest made of the value the token replaced
    parts: dict[str, dict[str, str]] = field(default_factory=dict)
    # head -> new id suffix -> [old id suffix, the row's tokens] (rows with ids of their own)
    rows: dict[str, dict[str, list]] = field(default_factory=dict)

    def merge(self, other: "SealPlan") -> None:
        self.expected.update(other.expected)
        for k, v in other.required.items():
            self.required.setdefault(k, set()).update(v)
        for k, p in other.parts.items():
            self.parts.setdefault(k, {}).update(p)
        for k, r in other.rows.items():
            self.rows.setdefault(k, {}).update(r)
        self.leaky |= other.leaky
        for k, b in other.bare.items():
            self.bare.setdefault(k, set()).update(b)

    # tokens of table rows whose expected value stands in another row of the
    # planted file beside the row's own inputs (a shared constant another test
    # reads, the same table written out twice): they hide nothing
    leaky: set[str] = field(default_factory=set)
    # head -> id suffixes of table rows no value seal reaches (a row whose
    # branch compares nothing, in a function sealed by its rows' tokens only)
    bare: dict[str, set[str]] = field(default_factory=dict)

    def sealed_heads(self, shown: bool = False) -> set[str]:
        """Heads a value seal protects (polarity seals do not, see TRUTH; nor
        do leaky row tokens, unless `shown`: then also the heads whose only
        value seals are rows another test shows the answers of)."""
        leaky = set() if shown else self.leaky
        return {h for h, t in self.required.items() if any(not polarity(self.expected.get(x, "")) for x in t)} \
            | {h for h, p in self.parts.items() if set(p) - leaky} \
            | {h for h, r in self.rows.items() if any(set(toks) - leaky for _, toks in r.values())}

    def old_suffix(self, head: str, suffix: str) -> str:
        """The id suffix the test had before its table was sealed."""
        row = self.rows.get(head, {}).get(suffix)
        if row is not None:
            return row[0]
        parts = self.parts.get(head)
        if not parts:
            return suffix
        return _TOKEN.sub(lambda m: parts.get(m.group(0), m.group(0)), suffix)

    def row_tokens(self, head: str, suffix: str) -> set[str]:
        """The tokens of the row a run of `head` with `suffix` is."""
        row = self.rows.get(head, {}).get(suffix)
        if row is not None:
            return set(row[1])
        parts = self.parts.get(head, {})
        return {t for t in _TOKEN.findall(suffix) if t in parts}


_TOKEN = re.compile(r"t[0-9a-f]{16}")      # tf_guard.TOKEN: what seal takes for a token


# ------------------------------------------------------------- finding sites

def plain_literal(node: ast.AST) -> bool:
    """A literal whose value means the same on both sides of the pipe."""
    if isinstance(node, ast.Constant):
        return node.value is not Ellipsis
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return isinstance(node.operand, ast.Constant) and isinstance(node.operand.value, (int, float, complex)) \
            and not isinstance(node.operand.value, bool)
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return all(plain_literal(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(k is not None and plain_literal(k) for k in node.keys) and all(map(plain_literal, node.values))
    return False


def _has(node: ast.AST, kinds: tuple) -> bool:
    """A node of `kinds` in `node` itself (nested definitions aside)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
        return False
    stack = list(ast.iter_child_nodes(node)) if not isinstance(node, kinds) else [node]
    while stack:
        n = stack.pop()
        if isinstance(n, kinds):
            return True
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        stack.extend(ast.iter_child_nodes(n))
    return False


def _always_run(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.stmt]:
    """The top-level statements every completed run of `fn` runs through:
    those before the first that may return (a generator: none)."""
    if any(_has(st, (ast.Yield, ast.YieldFrom)) for st in fn.body):
        return []
    out = []
    for st in fn.body:
        if _has(st, (ast.Return,)):
            break
        out.append(st)
    return out


def reached(body: list[ast.stmt]):
    """The statements of `body` that run whenever it completes: its own,
    those of a `for` over a written-out, non-empty sequence with no break or
    continue in it (every element runs the loop's body through), of a `with`
    of context managers known not to swallow exceptions, and of a `try`
    without handlers (body and finally)."""
    for st in body:
        yield st
        if isinstance(st, ast.For) and isinstance(st.iter, (ast.List, ast.Tuple, ast.Set)) and st.iter.elts \
                and not any(isinstance(e, ast.Starred) for e in st.iter.elts) and not st.orelse \
                and not any(isinstance(n, (ast.Break, ast.Continue)) for b in st.body for n in ast.walk(b)):
            yield from reached(st.body)
        elif isinstance(st, (ast.With, ast.AsyncWith)) and all(_quiet(it.context_expr) for it in st.items):
            yield from reached(st.body)
        elif isinstance(st, ast.Try) and not st.handlers:
            yield from reached(st.body)
            yield from reached(st.finalbody)


def _literal_locals(body: list[ast.stmt], callables: frozenset[str] = frozenset()) -> dict[str, ast.expr]:
    """Names a reached statement assigns a plain literal (`want = "IV"`), or
    a pure transform of one."""
    out: dict[str, ast.expr] = {}
    for st in body:
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name) \
                and literal_cell(st.value, callables) is not None:
            out[st.targets[0].id] = st.value
    return out


def _loop_columns(body: list[ast.stmt]) -> dict[str, list[ast.expr]]:
    """Names a reached `for` over written-out rows binds (`for x, want in
    [(1, "I"), (4, "IV")]`): name -> its cell in each row. Every row runs the
    loop's body (reached), so each literal cell's seal is required."""
    out: dict[str, list[ast.expr]] = {}
    for st in body:
        if not (isinstance(st, ast.For) and isinstance(st.iter, (ast.List, ast.Tuple)) and st.iter.elts):
            continue
        if isinstance(st.target, ast.Name):
            names, rows = [st.target.id], [[e] for e in st.iter.elts]
        elif isinstance(st.target, ast.Tuple) and all(isinstance(t, ast.Name) for t in st.target.elts):
            names = [t.id for t in st.target.elts]                   # type: ignore[attr-defined]
            rows = [list(e.elts) if isinstance(e, (ast.Tuple, ast.List)) and len(e.elts) == len(names)
                    else [] for e in st.iter.elts]
            if not all(rows):
                continue
        else:
            continue
        for i, n in enumerate(names):
            out[n] = [r[i] for r in rows]
    return out


def _parametrize(dec: ast.AST) -> ast.Call | None:
    if isinstance(dec, ast.Call) and isinstance(dec.func, ast.Attribute) and dec.func.attr == "parametrize":
        return dec
    return None


def _argnames(call: ast.Call) -> list[str] | None:
    if not call.args:
        return None
    a = call.args[0]
    if isinstance(a, ast.Constant) and isinstance(a.value, str):
        names = [n.strip() for n in a.value.split(",") if n.strip()]
    elif isinstance(a, (ast.List, ast.Tuple)) and all(isinstance(e, ast.Constant) and isinstance(e.value, str)
                                                      for e in a.elts):
        names = [e.value for e in a.elts]          # type: ignore[attr-defined]
    else:
        return None
    return names if all(n.isidentifier() for n in names) else None


def _escaped(s: str) -> str:
    """pytest's ascii_escaped of a str in an id, then its non-printable translation."""
    out = s.encode("unicode_escape").decode("ascii")
    return out.translate({i: f"\\x{i:02x}" for i in (*range(0, 32), 127)})


@dataclass
class _Edits:
    lines: list[bytes]
    cuts: list[tuple[int, int, int, int, str]] = field(default_factory=list)   # (l0, c0, l1, c1, text)

    def text_of(self, node: ast.AST) -> str:
        l0, c0, l1, c1 = node.lineno, node.col_offset, node.end_lineno, node.end_col_offset  # type: ignore
        if l0 == l1:
            return self.lines[l0 - 1][c0:c1].decode("utf-8")
        parts = [self.lines[l0 - 1][c0:], *self.lines[l0:l1 - 1], self.lines[l1 - 1][:c1]]
        return b"".join(parts).decode("utf-8")

    def replace(self, node: ast.AST, text: str) -> None:
        self.cuts.append((node.lineno, node.col_offset, node.end_lineno, node.end_col_offset, text))  # type: ignore

    def append(self, node: ast.AST, text: str) -> None:
        """`text` right after `node` (its last line's code, before any comment)."""
        self.cuts.append((node.end_lineno, node.end_col_offset, node.end_lineno, node.end_col_offset, text))  # type: ignore

    def indent_of(self, node: ast.AST) -> str | None:
        """The whitespace a statement starts its line with (None: not first on its line)."""
        head = self.lines[node.lineno - 1][:node.col_offset]          # type: ignore[attr-defined]
        return head.decode("utf-8") if not head.strip() else None

    def apply(self) -> str:
        lines = list(self.lines)
        for l0, c0, l1, c1, text in sorted(self.cuts, reverse=True):
            head, tail = lines[l0 - 1][:c0], lines[l1 - 1][c1:]
            lines[l0 - 1:l1] = [head + text.encode("utf-8") + tail]
        return b"".join(lines).decode("utf-8")


def _token() -> str:
    return "t" + secrets.token_hex(8)


# Pure transforms of an expected literal that tests write out (`TEXT
# .strip()`, `dedent(...)`, `set([...])`): the host applies them to the value it
# keeps, so the transformed literal is sealed like a plain one.
_STR_METHODS = frozenset({"strip", "lstrip", "rstrip", "lower", "upper", "casefold", "splitlines", "split",
                          "rsplit", "replace", "expandtabs", "encode", "decode", "title", "capitalize"})
_BUILTINS = frozenset({"set", "frozenset", "list", "tuple", "sorted"})
MAX_TRANSFORMED = 4 * MAX_LITERAL
_BUILTIN_FUNCS: dict[str, Callable[[Any], object]] = {
    "set": set, "frozenset": frozenset, "list": list, "tuple": tuple, "sorted": sorted}


@dataclass(frozen=True)
class Expected:
    """The expected side of a sealable equality: a literal or a sealable name
    (`base`), with the pure transforms (`chain`, innermost first) applied to it."""
    base: ast.expr
    chain: tuple[tuple[str, str, tuple], ...] = ()    # ("m", method, literal args) | ("f", function, ())

    @property
    def name(self) -> str | None:
        return self.base.id if isinstance(self.base, ast.Name) else None


def _unwrap(e: ast.expr, params: set[str], callables: frozenset[str]) -> Expected | None:
    """`e` as a sealable expected side, or None. `callables`: the module's
    names of textwrap.dedent and the transform builtins it does not rebind."""
    chain: list[tuple[str, str, tuple]] = []
    while True:
        if plain_literal(e) or (isinstance(e, ast.Name) and e.id in params):
            return Expected(e, tuple(reversed(chain)))
        if not isinstance(e, ast.Call) or e.keywords or any(isinstance(a, ast.Starred) for a in e.args):
            return None
        f = e.func
        if isinstance(f, ast.Attribute) and f.attr in _STR_METHODS and all(map(plain_literal, e.args)):
            chain.append(("m", f.attr, tuple(literal_eval(a) for a in e.args)))
            e = f.value
        elif len(e.args) == 1 and (callee := ast.unparse(f)) in callables:
            chain.append(("f", callee if callee in _BUILTINS else "dedent", ()))
            e = e.args[0]
        else:
            return None


def literal_cell(e: ast.expr, callables: frozenset[str]) -> Expected | None:
    """A literal, or a pure transform of one (`TEXT.strip()` as a table cell)."""
    got = _unwrap(e, set(), callables)
    return got if got is not None and plain_literal(got.base) else None


def apply_chain(value: object, chain: tuple[tuple[str, str, tuple], ...]) -> object:
    """The value a transformed literal has (ValueError when a step does not
    apply: then the site stays unsealed)."""
    for kind, name, args in chain:
        if kind == "m":
            if not isinstance(value, (str, bytes)) or not hasattr(value, name):
                raise ValueError(name)
            value = getattr(value, name)(*args)
        elif name == "dedent":
            if not isinstance(value, str):
                raise ValueError(name)
            value = textwrap.dedent(value)
        else:
            value = _BUILTIN_FUNCS[name](value)
        if len(repr(value)) > MAX_TRANSFORMED:
            raise ValueError("too long")
    return value


def expected_source(cell_src: str, chain: tuple) -> str | None:
    """What the host keeps for a literal cell under `chain`: the source of
    the value the test compares with, or None when it cannot be kept."""
    whole = f"({cell_src}\n)" if "\n" in cell_src else cell_src    # one written over lines: parenthesised
    try:
        v = apply_chain(literal_eval(whole), chain)
        if not chain:
            return whole
        src = repr(v)
        if isinstance(v, (set, frozenset)) and not v:
            return None                      # repr "set()" is no literal
        return src if literal_eval(src) == v else None
    except Exception:
        return None


def module_callables(tree: ast.AST, bound: Iterable[str]) -> frozenset[str]:
    """The names of pure transforms in a module: how it names textwrap.dedent,
    and the transform builtins it does not bind itself (`bound`: the names it
    binds, module_names)."""
    out = set()
    for n in getattr(tree, "body", []):
        if isinstance(n, ast.Import):
            out |= {f"{a.asname or a.name}.dedent" for a in n.names if a.name == "textwrap"}
        elif isinstance(n, ast.ImportFrom) and n.module == "textwrap":
            out |= {a.asname or a.name for a in n.names if a.name == "dedent"}
    return frozenset(out) | (_BUILTINS - set(bound))


def _guarded(fn: ast.AST) -> set[int]:
    """Statements a caught AssertionError would leave: in a `try` with
    handlers, or a `with` that may swallow exceptions. A sealed equality does
    not raise, so sealing one there would not be what the test does."""
    out: set[int] = set()

    def walk(stmts, inside: bool) -> None:
        for st in stmts:
            if inside:
                out.add(id(st))
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            here = inside
            if isinstance(st, (ast.Try, ast.TryStar)) and st.handlers:
                walk(st.body, True)
                for h in st.handlers:
                    walk(h.body, inside)
                walk(st.orelse, inside)
                walk(st.finalbody, inside)
                continue
            if isinstance(st, (ast.With, ast.AsyncWith)) and not all(_quiet(it.context_expr) for it in st.items):
                here = True
            for name in ("body", "orelse", "finalbody"):
                walk(getattr(st, name, None) or [], here)
            for case in getattr(st, "cases", None) or []:
                walk(case.body, here)
    walk(getattr(fn, "body", []), False)
    return out


# Context managers that never swallow an AssertionError (a `with` of anything
# else may, as pytest.raises(AssertionError) or contextlib.suppress would).
_QUIET_CMS = frozenset({"open", "patch", "object", "dict", "catch_warnings", "warns", "deprecated_call",
                        "TemporaryDirectory", "NamedTemporaryFile", "chdir", "setenv", "context",
                        "assertWarns", "assertWarnsRegex", "assertLogs", "assertNoLogs", "redirect_stdout",
                        "redirect_stderr", "local_context", "localcontext", "capture", "cd", "monkeypatch",
                        "freeze_time", "nullcontext", "lock", "Lock", "RLock", "TestClient", "Client",
                        "Session", "mock_open", "option_context", "errstate", "printoptions",
                        "get_context", "recwarn", "create_connection", "Popen", "tempdir",
                        "TemporaryFile", "ThreadPoolExecutor", "ProcessPoolExecutor"})


def _quiet(cm: ast.expr) -> bool:
    """A context manager (by its callee's name) that never swallows an exception."""
    return isinstance(cm, ast.Call) and _callee(cm) in _QUIET_CMS


def _callee(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")


# Builtin exceptions pytest.raises(Exception) catches: a test's `raises(E)` of
# one of these, or of a class the module imports, is sealed by name.
_BUILTIN_ERRORS = frozenset(n for n, v in vars(_builtins).items()
                            if isinstance(v, type) and issubclass(v, Exception))
MAX_NAMED = 64                  # exception names a module's class seals resolve (more: unsealed)


class RaisesForm(enum.Enum):
    """How a test asks for an exception, which decides how it is planted."""
    PYTEST_WITH = "with pytest.raises(E, match=P)"       # pytest's own context, given Exception
    UNITTEST_WITH = "with self.assertRaises[Regex](E[, P])"  # unittest's own context, given Exception
    CALLABLE = "assertRaises[Regex](E[, P], f, *args)"  # the same callee's context around f(*args)


@dataclass
class RaisesSite:
    """A test's expectation of an exception whose parts the host can keep:
    the exception's class (`classes`, as the test writes them: the raised one
    must be or derive from one of them) and the pattern its text must contain."""
    call: ast.Call
    var: str | None
    classes: tuple[str, ...] | None          # None: E stays as written; else E's class(es) as the test writes them
    pattern: str | None                      # None: no sealable pattern
    form: RaisesForm = RaisesForm.PYTEST_WITH
    target: tuple[ast.AST, ...] = ()          # CALLABLE: f, then its arguments and keywords
    kept: ast.expr | None = None              # a pattern the host cannot keep: searched as written


def module_names(tree: ast.AST) -> dict[str, str]:
    """Every name the module binds -> the dotted path it imports at module
    level ("" for a name bound any other way, which then stays unresolved)."""
    out: dict[str, str] = {}
    for n in getattr(tree, "body", []):
        if isinstance(n, ast.Import):
            for a in n.names:
                out[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(n, ast.ImportFrom):
            for a in n.names:
                module = "." * n.level + (n.module or "")          # relative: ".errors" (package unknown)
                out[a.asname or a.name] = f"{module}.{a.name}" if module else a.name
    for n in ast.walk(tree):
        bound = []
        if isinstance(n, ast.alias):
            out.setdefault((n.asname or n.name).split(".")[0], "")     # imported inside a definition
            continue
        if isinstance(n, ast.ClassDef) and n in getattr(tree, "body", []):
            out.setdefault(n.name, "." + n.name)       # the module's own class: by its name (its module's
            continue                                    # name depends on how pytest imports the file)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound = [n.name]
        elif isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
            bound = [n.id]
        elif isinstance(n, ast.arg):
            bound = [n.arg]
        for b in bound:
            out[b] = ""
    return out


def _exception_texts(e: ast.expr, names: Mapping[str, str]) -> tuple[str, ...] | None:
    """The class(es) `raises` is given as the test writes them (`ParseError`,
    `E.Oops`; a tuple's flattened), each one the module's namespace gives: an
    import or a class of its own, or a builtin Exception. None otherwise."""
    if isinstance(e, ast.Tuple):
        parts = [_exception_texts(x, names) for x in e.elts]
        return None if not e.elts or any(p is None for p in parts) else tuple(x for p in parts for x in p)  # type: ignore
    path = dotted_parts(e)
    if path is None:
        return None
    head = names.get(path[0])
    if head is None and not (len(path) == 1 and path[0] in _BUILTIN_ERRORS) or head == "":
        return None
    return (".".join(path),)


# Callees that ask for an exception, unittest's and numpy.testing's (built on
# unittest): name -> whether a pattern follows the class.
_UNITTEST_RAISES = {"assertRaises": False, "assertRaisesRegex": True, "assertRaisesRegexp": True,
                    "assert_raises": False, "assert_raises_regex": True}


def _pattern_of(e: ast.expr | None) -> str | None | bool:
    """A written pattern the host may search (None: no pattern; False: one it cannot keep)."""
    if e is None:
        return None
    if isinstance(e, ast.Constant) and isinstance(e.value, str) and plain_pattern(e.value):
        return e.value
    return False


def _raises_site(st: ast.stmt, names: Mapping[str, str], rules: int = SEAL_RULES) -> RaisesSite | None:
    """A `with pytest.raises(...)`, `with self.assertRaises[Regex](...)` or a
    statement `assertRaises[Regex](E, [P,] f, *args)` / `pytest.raises(E, f,
    *args)` with something to seal."""
    if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) and rules >= 2:
        call, var = st.value, None
        regex = _UNITTEST_RAISES.get(_callee(call))
        if regex is None and _callee(call) != "raises":
            return None
        lead = 2 if regex else 1                              # E[, P] before the callable
        if len(call.args) <= lead or any(isinstance(a, ast.Starred) for a in call.args[:lead + 1]):
            return None
        form, pattern = RaisesForm.CALLABLE, _pattern_of(call.args[1] if regex else None)
        target = (call.args[lead], *call.args[lead + 1:], *call.keywords)
    elif isinstance(st, ast.With) and len(st.items) == 1 and isinstance(st.items[0].context_expr, ast.Call):
        call, target = st.items[0].context_expr, ()
        v = st.items[0].optional_vars
        if v is not None and not isinstance(v, ast.Name):
            return None
        var = v.id if v is not None else None
        if any(isinstance(a, ast.Starred) for a in call.args):
            return None
        if _callee(call) == "raises":
            if len(call.args) != 1 or any(k.arg != "match" for k in call.keywords):
                return None
            form = RaisesForm.PYTEST_WITH
            pattern = _pattern_of(next((k.value for k in call.keywords if k.arg == "match"), None))
        elif (regex := _UNITTEST_RAISES.get(_callee(call))) is not None and rules >= 2:
            if len(call.args) != (2 if regex else 1) or call.keywords:
                return None
            form, pattern = RaisesForm.UNITTEST_WITH, _pattern_of(call.args[1] if regex else None)
        else:
            return None
    else:
        return None
    kept = None
    if pattern is False and rules < 2:
        return None
    if pattern is False:                      # a pattern the host cannot search: searched in the sandbox
        kept = call.args[1] if form is not RaisesForm.PYTEST_WITH else \
            next(k.value for k in call.keywords if k.arg == "match")
        pattern = None
    classes = _exception_texts(call.args[0], names)
    if classes is None and pattern is None:
        return None
    return RaisesSite(call, var, classes, pattern, form, target, kept)            # type: ignore[arg-type]


def raised_matches(encoded: str | None, expected_src: str) -> bool:
    """Whether the raised exception is an instance of a class the test named:
    the sandbox reports which of the module's exception names (as written,
    resolved in the test module's namespace) are in its class's real MRO, as
    pytest.raises and assertRaises would find; the host wants one of the site's.
    A swapped copy's site (`... but [ORIGINAL]`) is not met by an exception of
    the two classes (and their builtin bases) and no other of the file's: an honest class may derive
    from both (`DegenerateError(ZeroDivisionError, ValueError)`, held-out
    round 15), so the copy cannot tell it from the gold's; one deriving from
    more is the catch-all it is there to catch."""
    got = _reported(encoded, 64 * 1024 - 1)
    body, _, unless = expected_src[len(RAISED):].partition(SWAPPED_FROM)
    try:
        want = literal_eval(body)
        originals = literal_eval(unless) if unless else []
    except (ValueError, SyntaxError):
        return False
    if not (isinstance(got, list) and len(got) <= MAX_NAMED and all(isinstance(g, str) for g in got)):
        return False
    if originals and any(o in got for o in originals) and set(got) <= _lineage({*want, *originals}):
        return False
    return any(w in got for w in want)


def _lineage(names: AbstractSet[str]) -> set[str]:
    """The names, with the builtin exception classes each builtin one derives from."""
    out = set(names)
    for n in names:
        c = getattr(_builtins, n.rpartition(".")[2], None)
        if isinstance(c, type) and issubclass(c, BaseException):
            out |= {k.__name__ for k in c.__mro__}
    return out


_SINGLETONS = {None: "None", True: "True", False: "False"}
_PLAIN_SUBJECT = (ast.Call, ast.Name, ast.Attribute, ast.Subscript)


def _polarity_site(st: ast.stmt, rules: int = SEAL_RULES) -> tuple[ast.expr, str, str, ast.AST] | None:
    """(subject, seal call, what the host keeps, node to replace) of an
    assertion whose direction the file should not show: `assert X`, `assert
    not X` (X a call, name, attribute or subscript), `assert X is [not]
    None/True/False`, and unittest's assertTrue/False/IsNone/IsNotNone;
    rules 3: `assert A [not] in R` too (its subject the comparison)."""
    def singleton(e: ast.expr) -> str | None:
        if isinstance(e, ast.Constant) and (e.value is None or isinstance(e.value, bool)):
            return _SINGLETONS[e.value]
        return None
    if isinstance(st, ast.Assert):
        t = st.test
        if isinstance(t, _PLAIN_SUBJECT):
            return t, SEAL_TRUTH, TRUTH + "True", t
        if isinstance(t, ast.UnaryOp) and isinstance(t.op, ast.Not) and isinstance(t.operand, _PLAIN_SUBJECT):
            return t.operand, SEAL_TRUTH, TRUTH + "False", t
        if rules >= 3 and isinstance(t, ast.Compare) and len(t.ops) == 1 and isinstance(t.ops[0], (ast.In, ast.NotIn)):
            return t, SEAL_TRUTH, TRUTH + ("True" if isinstance(t.ops[0], ast.In) else "False"), t
        if isinstance(t, ast.Compare) and len(t.ops) == 1 and isinstance(t.ops[0], (ast.Is, ast.IsNot)):
            a, b = t.left, t.comparators[0]
            neg = "not " if isinstance(t.ops[0], ast.IsNot) else ""
            if (s := singleton(b)) is not None and singleton(a) is None and not isinstance(a, ast.Constant):
                return a, SEAL_IS, f"{IDENTITY}{neg}{s}", t
            if (s := singleton(a)) is not None and singleton(b) is None and not isinstance(b, ast.Constant):
                return b, SEAL_IS, f"{IDENTITY}{neg}{s}", t
        return None
    if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) and isinstance(st.value.func, ast.Attribute) \
            and len(st.value.args) in (1, 2) and all(k.arg == "msg" for k in st.value.keywords) \
            and not any(isinstance(a, ast.Starred) for a in st.value.args):
        x = st.value.args[0]
        kind = {"assertTrue": (SEAL_TRUTH, TRUTH + "True"), "assertFalse": (SEAL_TRUTH, TRUTH + "False"),
                "assertIsNone": (SEAL_IS, IDENTITY + "None"),
                "assertIsNotNone": (SEAL_IS, IDENTITY + "not None")}.get(st.value.func.attr)
        if kind is not None and (kind[0] == SEAL_IS or isinstance(x, _PLAIN_SUBJECT)) \
                and not (isinstance(x, ast.Call) and ast.unparse(x.func).endswith("tf_guard\").seal")):
            return x, kind[0], kind[1], st.value
    return None


def _compare_site(st: ast.stmt, params: set[str], callables: frozenset[str] = frozenset()
                  ) -> tuple[ast.expr, Expected, ast.AST] | None:
    """(actual, expected, node to replace) of an equality with a literal, or
    with a sealable name, either possibly under pure transforms."""
    def pick(a: ast.expr, b: ast.expr):
        ea, eb = _unwrap(a, params, callables), _unwrap(b, params, callables)
        if eb is not None and ea is None:
            return a, eb
        if ea is not None and eb is None:
            return b, ea
        return None
    if isinstance(st, ast.Assert) and isinstance(st.test, ast.Compare) and len(st.test.ops) == 1 \
            and isinstance(st.test.ops[0], ast.Eq):
        got = pick(st.test.left, st.test.comparators[0])
        return (got[0], got[1], st.test) if got else None
    if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) \
            and isinstance(st.value.func, ast.Attribute) and st.value.func.attr in ("assertEqual", "assertEquals") \
            and not any(isinstance(a, ast.Starred) for a in st.value.args) and (
                (len(st.value.args) == 2 and all(k.arg == "msg" for k in st.value.keywords))
                or (len(st.value.args) == 3 and not st.value.keywords)):
        got = pick(*st.value.args[:2])
        return (got[0], got[1], st.value) if got else None
    return None


def _approx_call(e: ast.expr) -> bool:
    """`approx(...)` / `pytest.approx(...)` as the test writes it."""
    return isinstance(e, ast.Call) and _callee(e) == "approx"


# str's own tests: at a sealed direction, asked of the receiver's str (or
# bytes) by the builtin method, since a subclass of the solution's can answer
# True to every `startswith` (red team of 2026-12-05, 8).
TEXT_TESTS = frozenset({"startswith", "endswith", "isalnum", "isalpha", "isascii", "isdecimal", "isdigit",
                        "isidentifier", "islower", "isnumeric", "isprintable", "isspace", "istitle", "isupper"})
SEAL_TEXT = '__import__("tf_guard").seal_text'


def _text_test(subject: ast.expr, ed: _Edits) -> str:
    """The subject of a sealed direction, a str test (`R.startswith(A)`, `A in
    R`) asked through tf_guard.seal_text; any other as written."""
    if isinstance(subject, ast.Compare) and len(subject.ops) == 1 and isinstance(subject.ops[0], (ast.In, ast.NotIn)):
        return f"{SEAL_TEXT}('in', ({ed.text_of(subject.comparators[0])}), ({ed.text_of(subject.left)}))"
    if isinstance(subject, ast.Call) and isinstance(subject.func, ast.Attribute) and subject.func.attr in TEXT_TESTS \
            and not subject.keywords and not any(isinstance(a, ast.Starred) for a in subject.args):
        args = "".join(f", ({ed.text_of(a)})" for a in subject.args)
        return f"{SEAL_TEXT}({subject.func.attr!r}, ({ed.text_of(subject.func.value)}){args})"
    return ed.text_of(subject)


def _equality(st: ast.stmt) -> tuple[ast.expr, ast.expr, ast.AST, bool] | None:
    """(left, right, node to replace, whether it is unittest's call) of a
    plain equality statement: `assert A == B`, `self.assertEqual(A, B)`."""
    if isinstance(st, ast.Assert) and isinstance(st.test, ast.Compare) and len(st.test.ops) == 1 \
            and isinstance(st.test.ops[0], ast.Eq):
        return st.test.left, st.test.comparators[0], st.test, False
    if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) \
            and isinstance(st.value.func, ast.Attribute) and st.value.func.attr in ("assertEqual", "assertEquals") \
            and not any(isinstance(a, ast.Starred) for a in st.value.args) \
            and len(st.value.args) == 2 and not st.value.keywords:
        return st.value.args[0], st.value.args[1], st.value, True
    return None


def _row(node: ast.expr, width: int) -> tuple[list[ast.expr], ast.Constant | None] | None:
    """A table row's cells and its explicit id (pytest.param(..., id=...)), or
    None when the row is not written out plainly."""
    if isinstance(node, ast.Call) and (getattr(node.func, "attr", None) == "param"
                                       or getattr(node.func, "id", None) == "param"):
        if len(node.args) != width or any(isinstance(a, ast.Starred) for a in node.args) or \
                any(k.arg not in ("id", "marks") for k in node.keywords):
            return None
        rid = next((k.value for k in node.keywords if k.arg == "id"), None)
        if rid is not None and not (isinstance(rid, ast.Constant) and isinstance(rid.value, str)):
            return None
        return list(node.args), rid
    if width == 1:
        return [node], None
    if isinstance(node, (ast.Tuple, ast.List)) and len(node.elts) == width:
        return list(node.elts), None
    return None


def _table(call: ast.Call) -> tuple[list[str], list[tuple[list[ast.expr], ast.Constant | None]]] | None:
    """(argnames, rows with their explicit ids) of a plainly written table."""
    names = _argnames(call)
    if not names or len(call.args) < 2 or not isinstance(call.args[1], (ast.List, ast.Tuple)) or any(
            k.arg not in ("ids",) for k in call.keywords) or len(call.args) > 2:
        return None
    rows = [_row(r, len(names)) for r in call.args[1].elts]
    if not rows or any(r is None for r in rows):
        return None
    ids = next((k.value for k in call.keywords if k.arg == "ids"), None)
    if isinstance(ids, ast.Name) and ids.id == "str":
        ids = None                                  # ids=str: pytest's id of str(value), see id_part
    if ids is not None:
        if not isinstance(ids, (ast.List, ast.Tuple)) or len(ids.elts) != len(rows) or not all(
                isinstance(e, ast.Constant) and isinstance(e.value, str) for e in ids.elts):
            return None
        rows = [(cells, rid or ids.elts[i]) for i, (cells, rid) in enumerate(rows)]   # type: ignore[misc]
    return names, rows                                                                 # type: ignore[return-value]


LONG_ID = 100     # pytest >= 9.2 names a longer str cell by its column and row (parametrize_long_str_id_strategy)


def id_part(cell: "Expected", name: str, index: int, as_str: bool = False,
            known: AbstractSet[str] = frozenset()) -> str:
    """The part of a row's id pytest makes of a literal cell (`as_str`: the
    table's ids are `str` of each value). A str or bytes longer than LONG_ID
    gets `{name}{index}` from pytest 9.2 on and its text before; `known` (the
    test's id suffixes in the task) tells which this environment's pytest made."""
    v = literal_eval(cell.base)
    if cell.chain:
        try:
            v = apply_chain(v, cell.chain)
        except (ValueError, TypeError):
            return f"{name}{index}"
    if as_str:
        v = str(v)
    if isinstance(v, (str, bytes)) and len(v) > LONG_ID and any(
            re.search(rf"(^\[|-){re.escape(name)}{index}(-|\]$)", k) for k in known):
        return f"{name}{index}"
    if isinstance(v, str):
        return _escaped(v)
    if isinstance(v, bytes):
        return v.decode("ascii", "backslashreplace")
    if v is None or isinstance(v, (bool, int, float, complex)):
        return str(v)
    return f"{name}{index}"


def seal_function(fn: ast.FunctionDef | ast.AsyncFunctionDef, ed: _Edits, plan: SealPlan,
                  heads: list[str], callables: frozenset[str] = frozenset(),
                  known: AbstractSet[str] = frozenset(), raise_sites: Mapping[int, RaisesSite] | None = None,
                  named: tuple[str, ...] = (), rules: int = SEAL_RULES,
                  origins: Mapping[str, str] | None = None, shapes: Mapping[str, str] | None = None,
                  capture: bool = False, swapped: Mapping[str, AbstractSet[str]] | None = None,
                  row_texts: list[tuple[str, str, list[str]]] | None = None, twin: str | None = None) -> None:
    """Seal one planted test function: its equalities with a literal (or a
    pure transform of one, `TEXT.strip()`), and the names such an
    equality compares with (a parametrize column, a local assigned a literal,
    the rows of a `for`), when every read of the name is the expected side of
    an equality, under one transform, and one of them is reached: each literal
    cell becomes a token. An equality every completed run reaches must report;
    one elsewhere (in an `if`, a loop over computed values, a function that
    may return early) is checked when it reports, so its literal is not in the
    sandbox either. An equality where a caught AssertionError would end the
    block (`try`, a `with` that may swallow it) stays as written. A row whose
    id pytest makes from its values shows the token in place of the value's
    part; a row with an id of the project's gets a random one. The host maps
    both back (SealPlan.old_suffix); a mapping pytest does not reproduce (ids
    it had to number apart) shows at generation, where the gold must pass
    sealed (calibrate.final_check), and leaves the test unsealed. An equality with a built expectation
    (`== Money("88.85")`) whose shape the gold's run kept (`shapes`, by
    shapes.shape_key) is judged on the host by that shape; `capture` (at
    generation) has every such equality report both shapes instead.
    `swapped`: in a copy that swapped exception classes, new -> the originals.
    `twin`: the function is a value twin (copy_raises.valued_copies) and this
    the key of its value: its `X == X` (the same call on both sides) is
    judged by the shape the gold's run gave X, kept as `shapes[twin]`."""
    swapped = swapped or {}
    body = list(reached(_always_run(fn)))
    raise_sites = raise_sites or {}
    reached_ids = {id(st) for st in body}
    guarded = _guarded(fn)
    calls = [c for c in map(_parametrize, fn.decorator_list) if c is not None]
    tables = {id(c): t for c in calls if (t := _table(c)) is not None}
    args = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)}
    columns: dict[str, tuple[ast.Call, int]] = {}          # argname -> (its table, its column)
    seen: set[str] = set()
    for c in calls:
        for n in _argnames(c) or []:
            if n in seen:
                columns.pop(n, None)
                continue
            seen.add(n)
            t = tables.get(id(c))
            if t is None or n not in args:
                continue
            col = t[0].index(n)
            if any(literal_cell(cells[col], callables) for cells, _ in t[1]) and (
                    len(calls) == 1 or all(rid is None for _, rid in t[1])):
                columns[n] = (c, col)
    locals_ = _literal_locals(body, callables)
    loops = _loop_columns(body)
    stores: dict[str, int] = {}
    loads: dict[str, int] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Name):
            d = loads if isinstance(node.ctx, ast.Load) else stores
            d[node.id] = d.get(node.id, 0) + 1
    names = set(columns) | set(locals_) | set(loops)
    sites = [(st, got) for st in _statements(fn)
             if id(st) not in guarded and (got := _compare_site(st, names, callables)) is not None]
    reads: dict[str, int] = {}
    chains: dict[str, set] = {}
    reached_reads: set[str] = set()
    for st, (_, expected, _) in sites:
        if expected.name is not None:
            reads[expected.name] = reads.get(expected.name, 0) + 1
            chains.setdefault(expected.name, set()).add(expected.chain)
            if id(st) in reached_ids:
                reached_reads.add(expected.name)
    # A name is sealed when the equalities are all its reads, under one
    # transform, and one is reached; under a transform, every cell must be a
    # literal the host can transform (a computed one would be compared
    # untransformed in the sandbox).
    def cells_of(n: str) -> list[ast.expr]:
        if n in locals_:
            return [locals_[n]]
        if n in loops:
            return loops[n]
        c, col = columns[n]
        return [cells[col] for cells, _ in tables[id(c)][1]]

    def chain_of(n: str) -> tuple:
        return next(iter(chains[n]))

    sealed = {n for n in names if n in reached_reads and reads.get(n) == loads.get(n)
              and stores.get(n, 0) == (0 if n in columns else 1) and len(chains.get(n, ())) == 1}
    def transformable(c: ast.expr, chain: tuple) -> bool:
        lit = literal_cell(c, callables)
        return lit is not None and expected_source(ed.text_of(lit.base), lit.chain + chain) is not None

    sealed = {n for n in sealed if not chain_of(n) or all(transformable(c, chain_of(n)) for c in cells_of(n))}
    branch_rows = _branch_columns(fn, body, calls, tables, columns, sealed, args, stores, loads, reads, chains,
                                  sites, callables) if rules >= 5 else {}
    sealed |= set(branch_rows)
    kept: dict[int, str | None] = {                  # a literal site -> what the host keeps of it
        id(st): expected_source(ed.text_of(got[1].base), got[1].chain)
        if len(ed.text_of(got[1].base)) <= MAX_LITERAL else None
        for st, got in sites if got[1].name is None}
    sites = [(st, got) for st, got in sites
             if (got[1].name is not None and got[1].name in sealed) or kept.get(id(st)) is not None]
    raising = [(st, rm) for st in _statements(fn)
               if id(st) not in guarded and (rm := raise_sites.get(id(st))) is not None
               and ed.indent_of(st) is not None]
    valued = {id(st) for st, _ in sites}
    # Directions only where every run reaches them: a bounded number of
    # reports (an assert in a loop over computed values may run millions of
    # times), and nothing a silenced seal could skip.
    pointing = [(st, ps) for st in body
                if id(st) not in guarded and id(st) not in valued and (ps := _polarity_site(st, rules)) is not None]
    pointed = {id(st) for st, _ in pointing}
    strict = [(st, eq) for st in _statements(fn)
              if id(st) not in valued and id(st) not in pointed and (eq := _equality(st)) is not None]
    if not sites and not raising and not pointing and not strict:
        return
    tokens: set[str] = set()
    # `want = Money("88.85")` read only as the expected side of such equalities:
    # sealed at every read or at none, and then never built in the sandbox.
    built_locals: dict[str, ast.Assign] = {}
    if (shapes or capture) and origins is not None and rules >= 4:
        built_locals = {st.targets[0].id: st for st in body
                        if isinstance(st, ast.Assign) and len(st.targets) == 1
                        and isinstance(st.targets[0], ast.Name) and stores.get(st.targets[0].id) == 1
                        and st.targets[0].id not in args and shape_built(st.value, origins)}

    def built_of(left: ast.expr, right: ast.expr, st: ast.stmt) -> tuple[ast.expr, ast.expr, str] | None:
        """(actual, expected as written, key) of a sealable built equality."""
        if not (shapes or capture) or origins is None or rules < 4 or id(st) in guarded:
            return None             # never where a caught AssertionError ends the block: a shape seal does not raise
        if twin is not None and isinstance(left, ast.Call) and ast.dump(left) == ast.dump(right):
            return left, right, twin
        for a, b in ((left, right), (right, left)):
            if isinstance(b, ast.Name) and b.id in built_locals and not buildable(a, origins) \
                    and not (isinstance(a, ast.Name) and a.id in built_locals):
                return a, b, shape_key(built_locals[b.id].value, origins)
        side = built_side(left, right, origins)
        return (side[0], side[1], shape_key(side[1], origins)) if side is not None else None

    eligible = {id(st): bs for st, (left, right, _, _) in strict if (bs := built_of(left, right, st)) is not None}
    for n, assign in list(built_locals.items()):
        uses = [bs for bs in eligible.values() if isinstance(bs[1], ast.Name) and bs[1].id == n]
        if len(uses) != loads.get(n, 0) or not uses or not (capture or uses[0][2] in shapes):  # type: ignore[operator]
            built_locals.pop(n)
            for sid in [k for k, bs in eligible.items() if isinstance(bs[1], ast.Name) and bs[1].id == n]:
                eligible.pop(sid)
        elif not capture:
            ed.replace(assign.value, "None")
    for st, (left, right, node, unit) in strict:
        if rules >= 3 and _approx_call(left) and not _approx_call(right):
            left, right = right, left   # tf_guard.seal_eq trusts an approx on the right only
        strictness = ", 3" if rules >= 3 else ""
        text = f"{SEAL_EQ}(({ed.text_of(left)}), ({ed.text_of(right)}){strictness})"
        built = eligible.get(id(st))
        if built is not None:
            key = built[2]
            if capture or key in shapes:                                                 # type: ignore[operator]
                btok = _token()
                plan.expected[btok] = (CAPTURE + key) if capture else (SHAPE + shapes[key])  # type: ignore[index]
                if id(st) in reached_ids and not capture:
                    tokens.add(btok)
                call = SEAL_CAPTURE if capture else SEAL_SHAPE
                shown = f"({ed.text_of(built[1])}), " if capture else ""
                flipped = ", True" if capture and built[1] is left else ""      # the test's own order for its ==
                text = f"{call}(({ed.text_of(built[0])}), {shown}{btok!r}{flipped})"
        if unit:
            text = f"{ed.text_of(st.value.func)[:-len(st.value.func.attr)]}assertTrue({text})"
        ed.replace(node, text)
    for st, (subject, call, keep, node) in pointing:
        ptok = _token()
        plan.expected[ptok] = keep
        tokens.add(ptok)
        shown = _text_test(subject, ed) if rules >= 3 else ed.text_of(subject)
        text = f"{call}(({shown}), {ptok!r})"
        if isinstance(st, ast.Expr):
            text = f"{ed.text_of(st.value.func)[:-len(st.value.func.attr)]}assertTrue({text})"  # type: ignore
        ed.replace(node, text)
    if len(named) > MAX_NAMED:
        raising = [(st, rm) for st, rm in raising if rm.classes is None]
    for i, (raise_st, site) in enumerate(raising):
        bound = site.var or f"_tf_raised_{i}"
        given = ed.text_of(site.call.args[0])
        after: list[str] = []
        if site.classes is not None:
            ctok = _token()
            plan.expected[ctok] = RAISED + repr(list(site.classes)) + (
                SWAPPED_FROM + repr(sorted(swapped[site.classes[0]]))
                if len(site.classes) == 1 and site.classes[0] in swapped else "")
            given = "Exception"
            after.append(f"assert {SEAL_RAISED}({bound}, {ctok!r}, globals(), {tuple(named)!r})")
            if id(raise_st) in reached_ids:
                tokens.add(ctok)
        if site.pattern is not None:
            mtok = _token()
            plan.expected[mtok] = SEARCH + repr(site.pattern)
            after.append(f"assert {SEAL_MATCH}({bound}, {mtok!r})")
            if id(raise_st) in reached_ids:
                tokens.add(mtok)
        indent = ed.indent_of(raise_st)
        tail = "".join(f"\n{indent}{a}" for a in after)
        func = ed.text_of(site.call.func)
        if site.form is RaisesForm.PYTEST_WITH:
            if site.kept is not None:
                given += ", match=" + ed.text_of(site.kept)
        elif _UNITTEST_RAISES.get(_callee(site.call)):  # a Regex callee: its pattern, or "" (matches all)
            given += ", " + (ed.text_of(site.kept) if site.kept is not None else '""')
        if site.form is RaisesForm.CALLABLE:
            # the callee and its arguments evaluated first, as the call would:
            # an exception there is not the one the test expects
            f, *rest = site.target
            pos = "".join(f"{ed.text_of(a)}, " for a in rest if not isinstance(a, ast.keyword))
            kws = ", ".join(f"{k.arg!r}: ({ed.text_of(k.value)})" if k.arg else f"**({ed.text_of(k.value)})"
                            for k in rest if isinstance(k, ast.keyword))
            call = f"_tf_call_{i}"
            ed.replace(raise_st, f"{call} = (({ed.text_of(f)}), ({pos}), {{{kws}}})\n"
                                 f"{indent}with {func}({given}) as {bound}:\n"
                                 f"{indent}    {call}[0](*{call}[1], **{call}[2]){tail}")
            continue
        end = raise_st.items[0].optional_vars or site.call
        ed.cuts.append((site.call.lineno, site.call.col_offset, end.end_lineno, end.end_col_offset,  # type: ignore
                        f"{func}({given}) as {bound}"))
        ed.append(raise_st, tail)

    def tokenize(cell: ast.expr, chain: tuple = ()) -> str | None:
        lit = literal_cell(cell, callables)
        if lit is None or len(ed.text_of(lit.base)) > MAX_LITERAL:
            return None              # compared in the sandbox, as the test would (tf_guard.seal)
        src = expected_source(ed.text_of(lit.base), lit.chain + chain)
        if src is None:
            return None
        tok = _token()
        plan.expected[tok] = src
        ed.replace(cell, repr(tok))
        return tok

    for n in sealed - set(columns):
        for cell in cells_of(n):
            if (tok := tokenize(cell, chain_of(n))) is not None:
                tokens.add(tok)
    for st, (actual, expected, node) in sites:
        if expected.name is not None:
            arg = expected.name
        else:
            tok = _token()
            plan.expected[tok] = kept[id(st)]                                            # type: ignore[assignment]
            if id(st) in reached_ids:
                tokens.add(tok)
            arg = repr(tok)
        call = f"{SEAL_CALL}(({ed.text_of(actual)}), {arg})"
        if isinstance(st, ast.Expr):
            call = f"{ed.text_of(st.value.func)[:-len(st.value.func.attr)]}assertTrue({call})"  # type: ignore
        ed.replace(node, call)
    for h in heads:
        plan.required.setdefault(h, set()).update(tokens)
    tokened: set[int] = set()                                   # rows of the table that got a token
    by_row: dict[int, tuple[ast.Constant, set[str]]] = {}      # a row with its own id -> its tokens
    # rows whose ids pytest numbered apart: (table, row) -> (row node, old suffix, tokens)
    numbered: dict[tuple[int, int], tuple[ast.Call, ast.expr, str, set[str]]] = {}
    for n in sealed & set(columns):
        c, col = columns[n]
        _, rows = tables[id(c)]
        as_str = any(k.arg == "ids" and isinstance(k.value, ast.Name) and k.value.id == "str"
                     for k in c.keywords)
        apart = _numbered_rows(c, tables[id(c)], callables, known)
        for i, (cells, rid) in enumerate(rows):
            cell = cells[col]
            lit = literal_cell(cell, callables)
            part = id_part(lit, n, i, as_str, known) if lit is not None else ""
            # a column picked in a branch: a token only in the rows that reach its equality
            tok = tokenize(cell, chain_of(n)) if n not in branch_rows or i in branch_rows[n] else None
            if tok is not None:
                tokened.add(i)
            if tok is not None and row_texts is not None:
                row_texts.append((tok, ast.unparse(cell), [ast.unparse(x) for j, x in enumerate(cells)
                                                           if j != col and not _trivial(x)]))
            if i in apart:
                entry = numbered.setdefault((id(c), i), (c, c.args[1].elts[i], apart[i], set()))  # type: ignore
                if tok is not None:
                    entry[3].add(tok)
                continue
            if tok is None:
                continue
            if rid is None:
                for h in heads:
                    plan.parts.setdefault(h, {})[tok] = part
            else:
                by_row.setdefault(id(rid), (rid, set()))[1].add(tok)
    if rules >= 5 and len(calls) == 1 and id(calls[0]) in tables and tokened \
            and not any(not polarity(plan.expected.get(t, "")) for t in tokens):
        # sealed by its rows' tokens alone: a row that got none is protected by nothing
        suffixes = _row_suffixes(calls[0], tables[id(calls[0])], callables, known)
        if suffixes is not None:
            for h in heads:
                plan.bare.setdefault(h, set()).update(
                    sfx for i, sfx in enumerate(suffixes) if i not in tokened and sfx in known)
    for rid, toks in by_row.values():
        new = "p" + secrets.token_hex(6)
        ed.replace(rid, repr(new))
        for h in heads:
            plan.rows.setdefault(h, {})[f"[{new}]"] = [f"[{_escaped(str(rid.value))}]", set(toks)]
    for table, node, old, toks in numbered.values():
        new = "p" + secrets.token_hex(6)
        param = ed.text_of(table.func)[:-len("mark.parametrize")] + "param"
        end, stop = int(node.end_lineno or 0), int(node.end_col_offset or 0)
        if isinstance(node, ast.Call):                    # pytest.param(a, b): its id before the last ")"
            ed.cuts.append((end, stop - 1, end, stop - 1, f", id={new!r}"))
        else:                                             # (a, b) / [a, b]: its brackets become the call's
            ed.cuts.append((node.lineno, node.col_offset, node.lineno, node.col_offset + 1, f"{param}("))
            ed.cuts.append((end, stop - 1, end, stop, f", id={new!r})"))
        for h in heads:
            plan.rows.setdefault(h, {})[f"[{new}]"] = [old, set(toks)]


def _trivial(e: ast.expr) -> bool:
    """A cell that ties a row to nothing: None, True, False."""
    return isinstance(e, ast.Constant) and (e.value is None or isinstance(e.value, bool))


def leaky_tokens(sealed: str, row_texts: list[tuple[str, str, list[str]]]) -> set[str]:
    """Row tokens whose expected cell stands in another row of the sealed
    file (a tuple or list literal) beside one of the row's other cells: a
    table shared with a test that stays as written, or written twice. A
    reader matches the row by its inputs and has the value (held-out round
    18 did, from isodate's PARSE_TEST_CASES)."""
    if not row_texts:
        return set()
    try:
        tree = parse_python(sealed)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set()
    rows = [{ast.unparse(e) for e in n.elts} for n in ast.walk(tree)
            if isinstance(n, (ast.Tuple, ast.List)) and len(n.elts) >= 2]
    return {tok for tok, want, others in row_texts
            if any(want in r and any(o in r for o in others) for r in rows)}


def _branch_columns(fn: ast.AST, body: list[ast.stmt], calls: list[ast.Call], tables: Mapping[int, tuple],
                    columns: Mapping[str, tuple], sealed: AbstractSet[str], args: AbstractSet[str],
                    stores: Mapping[str, int], loads: Mapping[str, int], reads: Mapping[str, int],
                    chains: Mapping[str, set], sites: list, callables: frozenset[str]) -> dict[str, set[int]]:
    """Columns of a function's one table that pick its expectation in a
    branch (seal_rows): name -> the rows in which its cell becomes a token.
    Such a column is read only by equalities and by `if` tests the rows
    decide (`if altstr:`, `if expected is None:`); a row's cell becomes a
    token where the row reaches one of its equalities and a token (a truthy
    str, not None) takes the same branches the cell took. A row whose way to
    such an equality passes an `if` it does not decide leaves the column
    unsealed: the host could not say whether its token must be reported."""
    if len(calls) != 1 or id(calls[0]) not in tables:
        return {}
    names, rows = tables[id(calls[0])]
    conds: dict[str, set[str]] = {}
    cond_loads: dict[str, int] = {}
    ifs: dict[int, set[int]] = {}               # an if -> the statements inside it
    for st in _statements(fn):
        if not isinstance(st, ast.If):
            continue
        ifs[id(st)] = {id(x) for x in _statements(ast.Module(body=[st], type_ignores=[]))} - {id(st)}
        got = condition_reads(st.test)
        if got is None:
            continue
        for n, hows in got.items():
            conds.setdefault(n, set()).update(hows)
        for node in ast.walk(st.test):
            if isinstance(node, ast.Name):
                cond_loads[node.id] = cond_loads.get(node.id, 0) + 1
    if not ifs:
        return {}
    fixed = {n for n in names if n in args and not stores.get(n)}
    paths = [row_paths(body, {k: v for k, v in row_cells(names, cells).items() if k in fixed}, reached)
             for cells, _ in rows]
    out: dict[str, set[int]] = {}
    for n in columns:
        if n in sealed or n not in fixed or chains.get(n) != {()} or "value" in conds.get(n, ()) \
                or reads.get(n, 0) + cond_loads.get(n, 0) != loads.get(n, 0):
            continue
        at = {id(st) for st, got in sites if got[1].name == n}
        col = names.index(n)
        chosen: set[int] = set()
        for i, (cells, _) in enumerate(rows):
            seen, open_ = paths[i]
            if any(at & ifs[o] for o in open_):
                break
            if not at & seen or literal_cell(cells[col], callables) is None:
                continue
            try:
                v = literal_eval(cells[col])
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                continue
            if ("truth" in conds.get(n, ()) and not v) or ("none" in conds.get(n, ()) and v is None):
                continue                          # a token would take the other branch
            chosen.add(i)
        else:
            if chosen:
                out[n] = chosen
    return out


def pytest_unique(ids: list[str]) -> list[str]:
    """The ids pytest (>= 8) gives a table's rows whose ids repeat: each
    repeated one numbered in order, "_" before the number after a digit."""
    counts = Counter(ids)
    if all(v == 1 for v in counts.values()):
        return list(ids)
    out, nexts = list(ids), Counter[str]()
    for i, x in enumerate(ids):
        if counts[x] > 1:
            sep = "_" if x and x[-1].isdigit() else ""
            new = f"{x}{sep}{nexts[x]}"
            while new in set(out):
                nexts[x] += 1
                new = f"{x}{sep}{nexts[x]}"
            out[i] = new
            nexts[x] += 1
    return out


def _float_constant(e: ast.expr) -> str | None:
    """pytest's id part of `math.nan`, `-math.inf`, `float("nan")` and the like."""
    sign = ""
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
        sign, e = "-", e.operand
    path = dotted_parts(e)
    if path in (["math", "inf"], ["math", "nan"]):
        return sign + path[-1]
    if isinstance(e, ast.Call) and getattr(e.func, "id", None) == "float" and len(e.args) == 1 and \
            isinstance(e.args[0], ast.Constant) and isinstance(e.args[0].value, str) and not e.keywords:
        try:
            return str(-float(e.args[0].value) if sign else float(e.args[0].value))
        except ValueError:
            return None
    return None


def _row_suffixes(call: ast.Call, table: tuple[list[str], list], callables: frozenset[str],
                  known: AbstractSet[str]) -> list[str] | None:
    """Each row's id suffix as pytest makes it ("[a-b0]"), where the table has
    no ids= (None otherwise); the caller keeps only those the task knows."""
    names, rows = table
    if any(k.arg == "ids" for k in call.keywords):
        return None
    parts = []
    for i, (cells, rid) in enumerate(rows):
        if rid is not None:
            parts.append(_escaped(str(rid.value)))
            continue
        lits = [literal_cell(x, callables) for x in cells]
        parts.append("-".join(id_part(lit, names[j], i, False, known) if lit is not None else
                              _float_constant(cells[j]) or f"{names[j]}{i}" for j, lit in enumerate(lits)))
    return [f"[{m}]" for m in pytest_unique(parts)]


def _numbered_rows(call: ast.Call, table: tuple[list[str], list], callables: frozenset[str],
                   known: AbstractSet[str]) -> dict[int, str]:
    """Rows of a table whose ids pytest numbered apart (equal values twice):
    row -> the id suffix it has in the task. Sealed, such rows differ in their
    tokens and lose the number, so they are given ids of their own (mapped
    back like a row's own id). Only where every row is a bracketed tuple or a
    pytest.param without an id, of one `pytest.mark.parametrize` table
    without ids=, and the numbered ids are the task's (`known`)."""
    names, rows = table
    text = call.args[1]
    path = dotted_parts(call.func)
    if not known or any(k.arg == "ids" for k in call.keywords) or not path or path[-2:] != ["mark", "parametrize"]:
        return {}
    parts = []
    for i, (cells, rid) in enumerate(rows):
        node = text.elts[i]                                                   # type: ignore[attr-defined]
        if rid is not None or not (isinstance(node, (ast.Tuple, ast.List, ast.Call)) and len(names) > 1) or \
                (isinstance(node, ast.Tuple) and node.col_offset == node.elts[0].col_offset):
            return {}                                    # a tuple without brackets: nothing to call
        lits = [literal_cell(x, callables) for x in cells]
        parts.append("-".join(id_part(lit, names[j], i, False, known) if lit is not None else
                              _float_constant(cells[j]) or f"{names[j]}{i}" for j, lit in enumerate(lits)))
    made = pytest_unique(parts)
    apart = {i: f"[{m}]" for i, (m, p) in enumerate(zip(made, parts)) if m != p}
    return apart if apart and set(apart.values()) <= known else {}


def targets(fail_to_pass: list[str], renamed: Mapping[tuple, str] | None = None,
            skip: Iterable[tuple] = ()) -> dict[str, dict[tuple[tuple[str, ...], str], str]]:
    """file -> (classes, function name) -> node-id head of the graded tests'
    functions: under the name each runs as (`renamed`: (file, classes, name) ->
    new name), those of `skip` ((file, classes, name)) left out."""
    renamed, skip = renamed or {}, set(skip)
    out: dict[str, dict[tuple[tuple[str, ...], str], str]] = {}
    for nid in fail_to_pass:
        ref = test_ref(nid)
        if ref is None or (ref.file, ref.cls, ref.func) in skip:
            continue
        name = renamed.get((ref.file, ref.cls, ref.func), ref.func)
        out.setdefault(ref.file, {})[(ref.cls, name)] = "::".join([ref.file, *ref.cls, name])
    return out


def seal_source(code: str, targets: Mapping[tuple[tuple[str, ...], str], str],
                find: Callable, suffixes: Mapping[str, AbstractSet[str]] | None = None,
                rules: int = SEAL_RULES, shapes: Mapping[str, str] | None = None,
                capture: bool = False, swaps: Mapping[str, Mapping[str, AbstractSet[str]]] | None = None,
                valued: Mapping[str, str] | None = None) -> tuple[str, SealPlan]:
    """`code` with the sites of `targets` ((classes, function) -> node-id
    head) sealed, and what the host keeps. `find(tree, TestRef)` is the
    definition a test runs (copies.find_def: inherited methods too).
    `suffixes`: head -> the id suffixes (`[...]`) its rows have in the task,
    where pytest's id of a cell depends on its version (id_part).
    `rules`: the task's SEAL_RULES. `shapes`, `capture`: built expectations
    (grade/shapes.py). `swaps`: head -> a copy's swapped exception classes
    (new -> originals, swapped_classes). `valued`: head -> the key of a
    value twin's captured value (copy_raises.valued_copies). Unparseable code
    is left alone."""
    plan = SealPlan()
    suffixes = suffixes or {}
    try:
        tree = parse_python(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return code, plan
    def defs_of(tree: ast.AST) -> dict[int, tuple[ast.FunctionDef | ast.AsyncFunctionDef, list[str]]]:
        by_def: dict[int, tuple[ast.FunctionDef | ast.AsyncFunctionDef, list[str]]] = {}
        for (cls, func), head in targets.items():
            found = find(tree, TestRef("", cls, func))
            if found is not None:
                by_def.setdefault(id(found), (found, []))[1].append(head)
        return by_def
    by_def = defs_of(tree)
    source = code
    row_texts: list[tuple[str, str, list[str]]] = []
    if rules >= 5:                  # tables named by a module constant, written out (seal_rows)
        inlined = inline_tables(code, tree, [fn for fn, _ in by_def.values()])
        if inlined != code:
            try:
                tree, source = parse_python(inlined), inlined
                by_def = defs_of(tree)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                pass
    ed = _Edits(source.encode("utf-8").splitlines(keepends=True))
    names_of = module_names(tree)
    callables = module_callables(tree, names_of)
    raise_sites = {id(st): site for fn in ast.walk(tree) if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
                   for st in _statements(fn) if (site := _raises_site(st, names_of, rules)) is not None}
    # every exception class the module's raises sites name, as written: what
    # each class seal resolves, the same at every site of the file, so that
    # it tells nothing of which one a site (or a copy) expects
    named = tuple(sorted({c for site in raise_sites.values() for c in site.classes or ()}))
    for fn, heads in by_def.values():
        known = set().union(*(suffixes.get(h, ()) for h in heads))
        swapped: dict[str, set[str]] = {}
        for h in heads:
            for new, olds in (swaps or {}).get(h, {}).items():
                swapped.setdefault(new, set()).update(olds)
        twin = next((valued[h] for h in heads if valued and h in valued), None)
        seal_function(fn, ed, plan, heads, callables, known, raise_sites, named, rules, names_of, shapes, capture,
                      swapped, row_texts, twin)
    if not ed.cuts:
        return code, plan           # nothing sealed: no table need be written out either
    out = ed.apply()
    plan.leaky = leaky_tokens(out, row_texts)
    return out, plan


_SWAP = re.compile(r"line \d+: ([A-Za-z_][\w.]*) -> ([A-Za-z_][\w.]*)$")


def swapped_classes(site: str) -> dict[str, set[str]]:
    """A copy's exception swaps from its site text ("line 138: ValueError ->
    ZeroDivisionError", parts joined by " | "): new class -> the originals."""
    out: dict[str, set[str]] = {}
    for part in site.split(" | "):
        m = _SWAP.fullmatch(part.strip())
        if m and m.group(1) not in ("True", "False", "None"):
            out.setdefault(m.group(2), set()).add(m.group(1))
    return out


def id_suffixes(ids: Iterable[str]) -> dict[str, set[str]]:
    """head -> the `[...]` suffixes of parametrized ids."""
    out: dict[str, set[str]] = {}
    for nid in ids:
        head, sep, rest = nid.partition("[")
        if sep:
            out.setdefault(head, set()).add(sep + rest)
    return out


# ------------------------------------------------------------- the host's side

def decode(value: object, depth: int = 0) -> object:
    """tf_guard's plain-data encoding back to a value; ValueError when malformed."""
    if depth > 100:
        raise ValueError("too deep")
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, dict) and len(value) == 1:
        (tag, v), = value.items()
        if tag == "i" and isinstance(v, str) and len(v) <= 5000:
            return int(v)
        if tag == "f" and isinstance(v, str):
            return float.fromhex(v)
        if tag == "c" and isinstance(v, list) and len(v) == 2:
            return complex(float.fromhex(v[0]), float.fromhex(v[1]))
        if tag == "s" and isinstance(v, str):
            return v
        if tag == "b" and isinstance(v, str):
            return bytes.fromhex(v)
        if tag in ("l", "t", "S", "d") and isinstance(v, list):
            if tag in ("S", "d") and len(v) > MAX_HASHED:
                raise ValueError("too many to hash")     # colliding hashes would make building it quadratic
            items = [decode(x, depth + 1) for x in v]
            if tag == "l":
                return items
            if tag == "t":
                return tuple(items)
            if tag == "S":
                return frozenset(items)
            if all(isinstance(p, tuple) and len(p) == 2 for p in items):
                return dict(items)           # type: ignore[arg-type]
    raise ValueError("not an encoded value")


_REFUSED = object()


def _reported(encoded: str | None, limit: int) -> object:
    """A report decoded, or _REFUSED when it is missing, over `limit`
    characters or malformed: a wrong value, never the host's failure."""
    if encoded is None or len(encoded) > limit:
        return _REFUSED
    try:
        return decode(json.loads(encoded))
    except (ValueError, TypeError, RecursionError, OverflowError, MemoryError):
        return _REFUSED


def polarity(expected_src: str) -> bool:
    """A seal of a direction, or of what a hedge can cover: an exception
    class (one class can derive from several) or a pattern (one message can
    hold several). It keeps the expectation off the sandbox but is no
    protection against a forger the way a value is."""
    return expected_src.startswith((TRUTH, IDENTITY, RAISED, SEARCH))


def _polarity_matches(encoded: str | None, expected_src: str) -> bool:
    """A polarity seal: the reported kind ("True", "False", "None", "other")
    against what the host kept."""
    got = _reported(encoded, 63)
    if expected_src.startswith(TRUTH):
        return got in ("True", "False") and got == expected_src[len(TRUTH):]
    want = expected_src[len(IDENTITY):]
    negated = want.startswith("not ")
    return got in ("None", "True", "False", "other") and (got == want.removeprefix("not ")) != negated


def plain_pattern(pattern: str) -> bool:
    """A match= pattern the host may search attacker text with: short, with
    no repeat at all (bounded ones nest into exponential backtracking, red
    team of 2026-12-05: `(a|aa){1,25}b`) and no backreference, so a search
    costs at most the text's length times the pattern's."""
    if len(pattern) > MAX_PATTERN:
        return False
    import re._parser as sre
    try:
        parsed = sre.parse(pattern)
    except Exception:
        return False
    banned = {sre.MAX_REPEAT, sre.MIN_REPEAT, sre.GROUPREF, sre.GROUPREF_EXISTS,
              getattr(sre, "POSSESSIVE_REPEAT", sre.MAX_REPEAT)}

    def simple(items) -> bool:
        for op, av in items:
            if op in banned:
                return False
            if op is sre.SUBPATTERN and not simple(av[-1]):
                return False
            if op is sre.BRANCH and not all(simple(b) for b in av[1]):
                return False
            if op in (sre.ASSERT, sre.ASSERT_NOT) and not simple(av[1]):
                return False
            if op is getattr(sre, "ATOMIC_GROUP", None) and not simple(av):
                return False
        return True
    return simple(parsed)


def searched(encoded: str | None, pattern: str) -> bool:
    """Whether the reported exception text contains what match= asks, as
    pytest's ExceptionInfo.match searches it."""
    got = _reported(encoded, MAX_VALUE)
    return isinstance(got, str) and len(got) <= MAX_SEARCHED and plain_pattern(pattern) \
        and re.search(pattern, got) is not None


def matches(encoded: str | None, expected_src: str) -> bool:
    """Whether a reported value equals the literal its token wants (or, for a
    sealed match=, contains its pattern)."""
    if expected_src.startswith((TRUTH, IDENTITY)):
        return _polarity_matches(encoded, expected_src)
    if expected_src.startswith(RAISED):
        return raised_matches(encoded, expected_src)
    if expected_src.startswith(SHAPE):
        return shape_matches(encoded, expected_src[len(SHAPE):])
    if expected_src.startswith(CAPTURE):
        return True                        # generation's capture run: kept, not judged
    if expected_src.startswith(SEARCH):
        try:
            return searched(encoded, literal_eval(expected_src[len(SEARCH):]))
        except Exception:                  # never the host's failure: the report is not what the token wants
            return False
    got = _reported(encoded, MAX_VALUE)
    if got is _REFUSED:
        return False
    try:
        return bool(got == literal_eval(expected_src))
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError, OverflowError):
        return False


def unsealed(outcomes: Mapping[str, str], records: Mapping[str, list[tuple[str, str | None]]],
             plan: SealPlan) -> set[str]:
    """Reported node ids that passed in pytest but fail their seals: a seal
    they must reach went unreported, or a value reported while they ran is
    not the one its token wants (or names no token of this run)."""
    failed: set[str] = set()
    for nid, outcome in outcomes.items():
        if outcome != "passed":
            continue
        head, sep, rest = nid.partition("[")
        need = set(plan.required.get(head, ())) | plan.row_tokens(head, sep + rest)
        got = records.get(nid, [])
        if not need and not got:
            continue
        if len(got) > MAX_RECORDS:
            failed.add(nid)
            continue
        seen = {tok for tok, _ in got}
        searches = Counter(tok for tok, _ in got if plan.expected.get(tok, "").startswith(SEARCH))
        if searches and max(searches.values()) > MAX_SEARCHES:
            failed.add(nid)
            continue
        if not need <= seen or any(tok not in plan.expected or not matches(v, plan.expected[tok])
                                   for tok, v in got):
            failed.add(nid)
    return failed


def rows_unreported(reported: Iterable[str], plan: SealPlan) -> list[str]:
    """Heads of sealed tables that ran, a sealed row of which no reported id
    carries (its token, or the random id its own id became). Every row of a
    table that runs is reported under the id pytest made, so such a row's
    report came under another id: one the test process changed (pytest's
    items are reachable from package code, and their `_id` is writable) so that
    the host would find no seal to ask for (red team of 2026-12-05)."""
    suffixes: dict[str, set[str]] = {}
    for nid in reported:
        head, sep, rest = nid.partition("[")
        if sep:
            suffixes.setdefault(head, set()).add(sep + rest)
    out = []
    for head in sorted(set(plan.parts) | set(plan.rows)):
        got = suffixes.get(head)
        if not got:
            continue                  # the table never ran (its module did not collect): failed anyway
        tokens = {t for sfx in got for t in _TOKEN.findall(sfx)}
        if set(plan.parts.get(head, {})) - tokens or set(plan.rows.get(head, {})) - got:
            out.append(head)
    return out
