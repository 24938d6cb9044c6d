"""What lets a model answer a task from memory instead of working it out, as
pure decisions over source text and blame dates (repo/blame.py reads them).

Three levers, each a fact a user can check: the age of the removed code (old
code is in every training corpus; `--since` keeps features whose code mostly
changed after a date), upstream docstrings in the statement (their sentences
are retrieval keys, and some say how the code works: "a wrapper around
index_natsorted(seq, alg=ns.LOCALE)"), and definitions that are one call of
code still in the workspace (nothing to work out: they count for no tier).
"""
from __future__ import annotations

import ast
import statistics
from datetime import UTC, datetime

from taskforge.analysis.pyparse import parse as parse_python
from taskforge.models import CodeAge
from taskforge.propose.difficulty import _is_doc

MIN_QUOTE = 16           # shorter docstring lines ("Args:", "Returns") are no retrieval key
FRESH_SHARE = 0.5        # --since: at least this share of the removed lines changed after it


def _parse(text: str) -> ast.Module | None:
    try:
        return parse_python(text)
    except (SyntaxError, ValueError):
        return None


def _nodes(pieces: list[str]):
    """Every node of every piece that parses."""
    for text in pieces:
        tree = _parse(text)
        if tree is not None:
            yield from ast.walk(tree)


def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def wrapped_call(text: str, removed: set[str]) -> str | None:
    """The callee, if `text` is one function whose body (its docstring aside) is
    a single call, returned or not, of a name outside `removed`: a thin wrapper.
    A call of another removed definition is work the task still asks for."""
    tree = _parse(text)
    if tree is None or len(tree.body) != 1:
        return None
    fn = tree.body[0]
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    body = [st for i, st in enumerate(fn.body) if not (i == 0 and _is_doc(st))]
    if len(body) != 1:
        return None
    st = body[0]
    value = st.value if isinstance(st, (ast.Return, ast.Expr)) else None
    if isinstance(value, ast.Await):
        value = value.value
    if not isinstance(value, ast.Call):
        return None
    callee = _dotted(value.func)
    if callee is None:
        return None
    head, last = callee.split(".")[0], callee.split(".")[-1]
    params = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs,
                              *filter(None, (fn.args.vararg, fn.args.kwarg)))}
    if head in removed or last in removed or head in _BUILTINS or (
            head in params and head not in ("self", "cls")):
        return None        # removed code, a builtin or a parameter: not kept code doing the work
    args = [*value.args, *(k.value for k in value.keywords)]
    if not all(_plain(a, removed) for a in args):
        return None        # the arguments compute something: that is work
    return callee


_BUILTINS = frozenset(dir(__import__("builtins")))


def _plain(node: ast.AST, removed: set[str]) -> bool:
    """An argument that passes a value on: a name, an attribute of one, a
    constant, `*args`/`**kwargs`; never one naming removed code."""
    if isinstance(node, ast.Starred):
        node = node.value
    if isinstance(node, ast.Constant):
        return True
    name = _dotted(node)
    return name is not None and not ({name.split(".")[0], name.split(".")[-1]} & removed)


def raised_types(pieces: list[str]) -> list[str]:
    """The exception classes the removed code raises by name, sorted: a fact of
    its contract that a statement can state in its own words."""
    out: set[str] = set()
    for node in _nodes(pieces):
        if isinstance(node, ast.Raise) and node.exc is not None:
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            name = _dotted(exc)
            if name and name.split(".")[-1][:1].isupper():
                out.add(name)
    return sorted(out)


def docstring_lines(pieces: list[str]) -> set[str]:
    """The stripped lines of every docstring in the removed code, long enough
    to be a retrieval key."""
    lines: set[str] = set()
    for node in _nodes(pieces):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=True)
            if doc:
                lines.update(ln.strip() for ln in doc.splitlines() if len(ln.strip()) >= MIN_QUOTE)
    return lines


QUOTES = ('"""', "'''")


def _bare(line: str) -> str:
    """A line without its indent and the quotes a docstring's first or last line has."""
    s = line.strip()
    for q in QUOTES:
        s = s.removeprefix(q).removesuffix(q)
    return s.strip()


def quoted_lines(statement: str, pieces: list[str]) -> int:
    """Lines of `statement` that are a docstring line of the removed code word
    for word."""
    docs = docstring_lines(pieces)
    return sum(1 for ln in statement.splitlines() if _bare(ln) in docs)


def _header_only(signature: str) -> str:
    """The first header of an interface this Python cannot parse, with `...` for
    its body: fail closed, never the docstring."""
    out = []
    for line in signature.splitlines():
        out.append(line)
        if line.rstrip().endswith(":") and not line.lstrip().startswith("@"):
            indent = len(line) - len(line.lstrip())
            return "\n".join(out) + "\n" + " " * (indent + 4) + "...\n"
    return "\n".join(out[:1]) + "\n"


def strip_docstrings(signature: str) -> str:
    """An interface (header, docstring, `...`) without its docstrings, nested
    ones included; only its first header when it does not parse here."""
    tree = _parse(signature)
    if tree is None:
        return _header_only(signature)
    drop: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list) or not body:
            continue
        if _is_doc(body[0]):
            if len(body) == 1 and not isinstance(node, ast.Module):
                continue            # the docstring is the whole body: `...` must take its place
            drop.update(range(body[0].lineno, (body[0].end_lineno or body[0].lineno) + 1))
    lines = signature.splitlines()
    kept = [ln for i, ln in enumerate(lines, 1) if i not in drop]
    text = "\n".join(kept) + ("\n" if signature.endswith("\n") else "")
    return text if _parse(text) is not None else _header_only(signature)


def _day(stamp: int) -> str:
    return datetime.fromtimestamp(stamp, UTC).date().isoformat()


def code_age(stamps: list[int]) -> CodeAge | None:
    """Newest, median and oldest last-change day of the removed lines."""
    if not stamps:
        return None
    return CodeAge(newest=_day(max(stamps)), median=_day(int(statistics.median_low(stamps))),
                   oldest=_day(min(stamps)), lines=len(stamps))


def fresh(stamps: list[int], since: int, share: float = FRESH_SHARE) -> bool:
    """Whether at least `share` of the removed lines last changed at or after
    `since` (a Unix time): the feature is mostly code a model trained before it
    cannot have seen in this form."""
    if not stamps:
        return False
    return sum(1 for s in stamps if s >= since) >= share * len(stamps)
