"""Measure what a removal asks of the agent, statically, before any test runs.

Why static: the measures decide which candidates are worth validating at all
(the minimum size) and in what order (a spread over tiers), so they must cost
nothing. Cyclomatic complexity is counted here in a few lines (the mccabe
definition over `ast`) rather than by a dependency: it runs on snippets that
are not whole files.
"""
from __future__ import annotations

import ast
import textwrap

from taskforge.analysis.pyparse import parse as parse_python
from taskforge.models import Difficulty, Tier

# A tier is a fact about the removal a person can check by reading the diff.
# HARD is what a strong agent does not answer in a minute: a multi-file feature
# of 150 lines or more, or 300 lines in one file (issue 24: a 22-line module and
# a 134-line cluster, "hard" by the old bar of 40 lines, fell in 0.1-1.3 minutes).
HARD_LINES, HARD_FILES, HARD_LINES_ONE_FILE = 150, 2, 300
MEDIUM_LINES, MEDIUM_COMPLEXITY, MEDIUM_PUBLIC, MEDIUM_FILES = 15, 5, 2, 2

_BRANCHES = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.IfExp, ast.ExceptHandler,
             ast.With, ast.AsyncWith, ast.Assert, ast.match_case)


WRAP = "if True:"           # a method whose body has a column-0 line cannot be dedented


def snippet(code: str, start: int, end: int) -> str:
    """Lines start..end (1-based, inclusive) of `code`, so that they parse: dedented,
    or (a column-0 comment or string line inside a method) under `if True:`."""
    lines = code.splitlines()[start - 1:end]
    text = textwrap.dedent("\n".join(lines)) + "\n"
    if lines and lines[0][:1] in (" ", "\t") and _parse(text) is None:
        text = WRAP + "\n" + "\n".join(lines) + "\n"
    return text


def _parse(text: str) -> ast.Module | None:
    try:
        return parse_python(text)
    except SyntaxError:
        return None


def _is_doc(st: ast.stmt) -> bool:
    return isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant) and isinstance(
        st.value.value, str)


def _trivial(st: ast.stmt) -> bool:
    return isinstance(st, ast.Pass) or (isinstance(st, ast.Expr) and isinstance(
        st.value, ast.Constant) and st.value.value is Ellipsis)


def _defs(tree: ast.AST):
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def statements(tree: ast.AST) -> int:
    """Statements inside function bodies, docstrings, `pass` and `...` aside: the
    work an implementation has to write (a class's field list counts too)."""
    n = 0
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list) or isinstance(node, ast.Module):
            continue
        for i, st in enumerate(body):
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            if (i == 0 and _is_doc(st)) or _trivial(st):
                continue
            n += 1
        for extra in ("orelse", "finalbody"):
            n += sum(1 for st in getattr(node, extra, []) or [] if not _trivial(st))
    return n


def statements_in(code: str, start: int, end: int) -> int:
    """`statements` of lines start..end of `code` (one definition)."""
    tree = _parse(snippet(code, start, end))
    return statements(tree) if tree is not None else 0


def _own_nodes(fn: ast.AST):
    """The nodes of a function's own body: nested defs are counted on their own
    (as functions of `tree`), so their bodies are not walked here."""
    stack = list(ast.iter_child_nodes(fn))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            stack.extend(ast.iter_child_nodes(node))


def complexity(tree: ast.AST) -> int:
    """McCabe complexity summed over every function in `tree` (1 + decisions each)."""
    total = 0
    for fn in _defs(tree):
        c = 1
        for node in _own_nodes(fn):
            if isinstance(node, _BRANCHES):
                c += 1
            elif isinstance(node, ast.BoolOp):
                c += len(node.values) - 1
            elif isinstance(node, ast.comprehension):
                c += 1 + len(node.ifs)
        total += c
    return total


def code_lines(tree: ast.AST, text: str) -> int:
    """Lines holding code: blanks, comments and docstrings are not work."""
    doc_lines: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and _is_doc(body[0]):
            doc_lines.update(range(body[0].lineno, (body[0].end_lineno or body[0].lineno) + 1))
    n = 0
    for i, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if s and not s.startswith("#") and i not in doc_lines and not (i == 1 and s == WRAP):
            n += 1
    return n


def measure(pieces: list[str], files: int, symbols: int, public: int, fan_out: int,
            hidden_tests: int = 0) -> Difficulty:
    """Difficulty of removing `pieces` (the source of each removed definition)."""
    lines = stmts = cc = 0
    for text in pieces:
        tree = _parse(text)
        if tree is None:
            lines += sum(1 for ln in text.splitlines() if ln.strip())
            continue
        lines += code_lines(tree, text)
        stmts += statements(tree)
        cc += complexity(tree)
    d = Difficulty(removed_lines=lines, statements=stmts, files=files, symbols=symbols,
                   public_symbols=public, complexity=cc, centrality=fan_out,
                   hidden_tests=hidden_tests)
    return rate(d)


def rate(d: Difficulty) -> Difficulty:
    """Score and tier. HARD: 150 removed lines or more over two files or more, or
    300 in one. MEDIUM: 15 lines, complexity 5, two public definitions or two
    files. `taskforge harden` makes HARD tasks where the model solves these."""
    d.score = round(d.removed_lines / 10 + d.complexity / 3 + 2 * max(0, d.files - 1)
                    + max(0, d.public_symbols - 1) + d.centrality / 10, 2)
    if ((d.removed_lines >= HARD_LINES and d.files >= HARD_FILES)
            or d.removed_lines >= HARD_LINES_ONE_FILE):
        d.tier = Tier.HARD
    elif (d.removed_lines >= MEDIUM_LINES or d.complexity >= MEDIUM_COMPLEXITY
          or d.public_symbols >= MEDIUM_PUBLIC or d.files >= MEDIUM_FILES):
        d.tier = Tier.MEDIUM
    else:
        d.tier = Tier.EASY
    return d
