"""Arms of a function's `if` statements as features (Removal.BRANCH).

Why: a small library is often one entry point whose every test goes through
one dispatcher (a template expander's operators, a writer's value types), so
neither its definitions nor its bodies can go without taking most of the suite
(uritemplate: `expand` takes 45 of 58 tests). Each arm of such a dispatcher is
a feature of its own with tests of its own: "negative durations", "the `+`
operator". Removing one arm keeps the condition and every other path, so the
tests that never take it stay green, and the ones that do are the hidden tests.
"""
from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

MAX_ARMS = 3                 # arms offered per function, the largest first
MAX_CONDITION = 160          # characters of a condition shown in a statement
WINDOW = 8                   # tokens in a window compared with the rest of the package (copied)
MAX_COPIED = 0.6             # share of an arm's windows found elsewhere past which it is a copy
_TOKEN = re.compile(r"[A-Za-z_]\w*|\d[\w.]*|\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'|[^\s\w]")
_COMMENT = re.compile(r"(?m)#[^\n]*$")


@dataclass(frozen=True)
class Arm:
    """One arm of an if/elif/else chain inside a function: lines `line`..`end`
    (its first statement's first line, its last statement's last line)."""
    line: int
    end: int
    when: str                            # the arm's own condition, "" for an else
    after: tuple[str, ...] = field(default=())   # conditions of the earlier arms of its chain, all false
    statements: int = 0

    @property
    def lines(self) -> set[int]:
        return set(range(self.line, self.end + 1))


def _count(stmts: list[ast.stmt]) -> int:
    """Statements in `stmts`, nested ones included, `pass` and `...` aside."""
    n = 0
    for st in stmts:
        for node in ast.walk(st):
            if isinstance(node, ast.stmt) and not isinstance(node, ast.Pass) and not (
                    isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
                    and node.value.value is Ellipsis):
                n += 1
    return n


def _scoped(stmts: list[ast.stmt]) -> bool:
    """Whether removing `stmts` would change the function beyond this arm: a
    `global`/`nonlocal` declares for the whole function, and a yield or await
    the arm alone holds would change what kind of function it is."""
    for st in stmts:
        for node in ast.walk(st):
            if isinstance(node, (ast.Global, ast.Nonlocal, ast.Yield, ast.YieldFrom, ast.Await)):
                return True
    return False


def _own_ifs(fn: ast.FunctionDef | ast.AsyncFunctionDef):
    """The `if` statements of fn's own body (not of nested functions or classes),
    each chain's head once: an `elif` is read with its chain."""
    tails: set[int] = set()
    stack: list[ast.AST] = list(fn.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.If):
            if id(node) not in tails:
                yield node
            if len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If):
                tails.add(id(node.orelse[0]))
        stack.extend(ast.iter_child_nodes(node))


def arms(fn: ast.FunctionDef | ast.AsyncFunctionDef, code: str, min_statements: int = 3) -> list[Arm]:
    """The arms of fn's if/elif/else chains that can go alone: at least
    `min_statements` statements, nothing in them scoping the whole function,
    up to MAX_ARMS, the largest first (ties in source order)."""
    out: list[Arm] = []
    for head in _own_ifs(fn):
        before: list[str] = []
        node: ast.If | None = head
        while node is not None:
            when = " ".join((ast.get_source_segment(code, node.test) or "").split())
            out.append(_arm(node.body, when, tuple(before), code))
            before.append(when)
            rest = node.orelse
            if len(rest) == 1 and isinstance(rest[0], ast.If):
                node = rest[0]
                continue
            if rest:
                out.append(_arm(rest, "", tuple(before), code))
            node = None
    kept = [a for a in out if a.statements >= max(1, min_statements) and a.line > 0]
    kept.sort(key=lambda a: (-a.statements, a.line))
    return kept[:MAX_ARMS]


def _arm(stmts: list[ast.stmt], when: str, after: tuple[str, ...], code: str) -> Arm:
    """An arm, or one of line 0 where it cannot go alone (_scoped), or where it
    is a one-line suite (`if x: y`), which has no block of its own to cut."""
    first = code.splitlines()[stmts[0].lineno - 1][:stmts[0].col_offset]
    if _scoped(stmts) or first.strip():
        return Arm(line=0, end=0, when=when, after=after)
    end = max(st.end_lineno or st.lineno for st in stmts)
    return Arm(line=stmts[0].lineno, end=end, when=when, after=after, statements=_count(stmts))


def find_function(tree: ast.Module, cls: str | None, name: str, line: int
                  ) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The function `name` (a method of top-level class `cls`) whose definition,
    decorators included, starts on `line`."""
    body = tree.body
    if cls is not None:
        owner = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls), None)
        if owner is None:
            return None
        body = owner.body
    for n in body:
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name and \
                min([n.lineno, *(d.lineno for d in n.decorator_list)]) == line:
            return n
    return None


def arm_text(code: str, arm: Arm) -> str:
    """The arm's lines, dedented."""
    return textwrap.dedent("\n".join(code.splitlines()[arm.line - 1:arm.end]))


def arm_source(code: str, arm: Arm) -> str:
    """The arm's statements as a function's body, so that difficulty measures
    them as the work they are (its statements count inside a function)."""
    return "def _arm():\n" + textwrap.indent(arm_text(code, arm), "    ") + "\n"


def condition(arm: Arm) -> str:
    """The arm's condition in words for a statement: its own test, or that the
    earlier arms' tests are all false (an `else`); each cut to MAX_CONDITION."""
    def cut(s: str) -> str:
        return s if len(s) <= MAX_CONDITION else s[:MAX_CONDITION - 3] + "..."
    if arm.when:
        return f"`{cut(arm.when)}`"
    return " and ".join(f"not `{cut(w)}`" for w in arm.after) or "the `else`"


def module_windows(text: str) -> set[tuple[str, ...]]:
    """Every WINDOW-token window of a module's source (comments aside)."""
    toks = _TOKEN.findall(_COMMENT.sub("", text))
    return {tuple(toks[i:i + WINDOW]) for i in range(max(0, len(toks) - WINDOW + 1))}


def copied(arm_text: str, elsewhere: list[set[tuple[str, ...]]]) -> float:
    """The share of the arm's WINDOW-token windows (comments aside) that stand
    in one of `elsewhere` (module_windows of every other module, and of its own
    module with the arm cut out). Why: an arm the package holds again (slugify's
    two transliterations, inflection's pluralize loop beside singularize's with
    one name changed) is a task answered by pasting, which the leak scan, blind
    to code that stays in the package, does not catch (a fresh review: both
    scored 1 pasted)."""
    mine = module_windows(arm_text)
    if not mine:
        return 0.0
    return sum(1 for w in mine if any(w in e for e in elsewhere)) / len(mine)


def without(code: str, arm: Arm) -> str:
    """`code` with the arm's lines left out."""
    lines = code.splitlines(keepends=True)
    return "".join(lines[:arm.line - 1] + lines[arm.end:])


def nested_twins(cases: list[tuple[Arm, AbstractSet[str]]]) -> dict[int, int]:
    """Index of each case -> the index of a case around it with the same hidden
    tests: one task with a smaller copy of itself (croniter's `_calc_next@531`
    inside `@511`, 13 tests each, a fresh review's find). The outermost stays;
    a nested case with tests of its own is a task of its own (a family)."""
    out: dict[int, int] = {}
    for i, (arm, hidden) in enumerate(cases):
        around = [j for j, (other, theirs) in enumerate(cases)
                  if j != i and other.line <= arm.line and arm.end <= other.end
                  and (other.line, other.end) != (arm.line, arm.end) and theirs == hidden]
        if around:
            out[i] = min(around, key=lambda j: (cases[j][0].line, -cases[j][0].end))
    return out

