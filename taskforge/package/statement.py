"""The problem statement: a template, no LLM. It names what was removed and the
interface the hidden tests use (signatures and docstrings), never the code; it
states the exact strings the hidden tests require that nothing in the workspace
shows (a task graded on an unstated message measures recall, not skill); and it
points at the workspace's own documentation of the feature. It claims no
description it does not give."""
from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import jinja2

from taskforge.analysis.pyparse import parse as parse_python
from taskforge.analysis.symbols import Symbol
from taskforge.analysis.testindex import test_ref
from taskforge.models import Removal, StatementStyle
from taskforge.propose.branches import Arm, condition
from taskforge.propose.recall import strip_docstrings

KIND_WORD = {"function": "function", "method": "method", "class": "class", "module": "module",
             "cluster": "feature", "combined": "features"}
MAX_REQUIRED = 30          # more unstated exact strings than this: the task is a test dump
REQUIRED_PER_LINES = 10    # ... unless the feature is large: one more per 10 removed lines


def required_limit(removed_lines: int) -> int:
    """How many unstated exact strings a statement may carry: MAX_REQUIRED, and
    one more per REQUIRED_PER_LINES removed lines. A 400-line formatter pins
    many outputs and is a task; a 20-line function pinning 50 is a test dump."""
    return MAX_REQUIRED + max(0, removed_lines) // REQUIRED_PER_LINES
DOC_FILES = re.compile(r"^(README|CHANGELOG|CHANGES|HISTORY|NEWS)[^/]*$|^docs?/.*\.(md|rst|txt)$",
                       re.I)
_REPR = re.compile(r"^[A-Za-z_][\w.]*\(.*\)$", re.S)


class Underspecified(Exception):
    """The hidden tests assert more unstated exact strings than a statement can carry."""


def _message_like(s: str) -> bool:
    """A message, repr or format, as opposed to a computed value: prose or a call."""
    s = s.strip()
    return len(s) >= 4 and (bool(re.search(r"[A-Za-z]\s+\S", s)) or bool(_REPR.match(s)))


def _direct(node: ast.AST) -> list[str]:
    """String literals that are a compared value itself (or sit in a literal
    container), not arguments of a call: `f("in") == "out"` gives "out" only."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return [s for e in node.elts for s in _direct(e)]
    if isinstance(node, ast.Dict):
        return [s for e in [*node.keys, *node.values] if e is not None for s in _direct(e)]
    return []


def _param_columns(fn: ast.AST) -> dict[str, list[ast.expr]]:
    """Parameter -> its cells over the inline `@pytest.mark.parametrize` tables
    of a test function (a `pytest.param(...)` row's positional cells)."""
    out: dict[str, list[ast.expr]] = {}
    for dec in getattr(fn, "decorator_list", []):
        if not (isinstance(dec, ast.Call) and isinstance(dec.func, ast.Attribute)
                and dec.func.attr == "parametrize" and len(dec.args) >= 2):
            continue
        head, rows = dec.args[0], dec.args[1]
        if isinstance(head, ast.Constant) and isinstance(head.value, str):
            names = [n.strip() for n in head.value.split(",") if n.strip()]
        elif isinstance(head, (ast.List, ast.Tuple)) and all(
                isinstance(e, ast.Constant) and isinstance(e.value, str) for e in head.elts):
            names = [str(e.value) for e in head.elts if isinstance(e, ast.Constant)]
        else:
            continue
        if not isinstance(rows, (ast.List, ast.Tuple)):
            continue
        for row in rows.elts:
            if isinstance(row, ast.Call) and (row.func.attr if isinstance(row.func, ast.Attribute)
                                              else getattr(row.func, "id", "")) == "param":
                cells = list(row.args)
            elif len(names) == 1:
                cells = [row]
            elif isinstance(row, (ast.Tuple, ast.List)):
                cells = list(row.elts)
            else:
                continue
            for name, cell in zip(names, cells):
                out.setdefault(name, []).append(cell)
    return out


def _checks(fn: ast.AST, columns: bool = False) -> list[tuple[ast.AST, list[str]]]:
    """(statement, expected strings) for the asserts, assert* calls and `match=`
    arguments of a test function. `columns`: a compared name (or `match=` name)
    that is a parametrize column gives that column's strings (email_validator's
    `assert str(exc.value) == error_msg` over a table of messages: a correct
    implementation with its own wording scored 0, the statement silent)."""
    cols = _param_columns(fn) if columns else {}

    def direct(node: ast.AST) -> list[str]:
        if isinstance(node, ast.Name) and node.id in cols:
            return [s for c in cols[node.id] for s in _direct(c)]
        return _direct(node)

    out = []
    for node in ast.walk(fn):
        strings: list[str] = []
        if isinstance(node, ast.Assert):
            for cmp in ast.walk(node.test):
                if isinstance(cmp, ast.Compare):
                    for side in [cmp.left, *cmp.comparators]:
                        strings += [s for s in direct(side) if _message_like(s)]
        elif isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else \
                node.func.id if isinstance(node.func, ast.Name) else ""
            if name.startswith("assert") and name not in ("assertTrue", "assertFalse"):
                strings = [s for a in node.args for s in direct(a) if _message_like(s)]
            for kw in node.keywords:
                if kw.arg == "match" and isinstance(kw.value, ast.Constant) and isinstance(
                        kw.value.value, str) and kw.value.value.strip():
                    strings.append(MATCH + kw.value.value)
                elif kw.arg == "match" and isinstance(kw.value, ast.Name) and kw.value.id in cols:
                    strings += [MATCH + t for t in direct(kw.value) if t.strip()]
        if strings:
            out.append((node, strings))
    return out


MATCH = "\0match:"      # marks a `match=` pattern among asserted strings


def _assertions(fn: ast.AST) -> list[ast.AST]:
    """The asserts and assert* calls of a test function."""
    return [n for n in ast.walk(fn) if isinstance(n, ast.Assert) or (
        isinstance(n, ast.Call) and (n.func.attr if isinstance(n.func, ast.Attribute) else
                                     n.func.id if isinstance(n.func, ast.Name) else "").startswith("assert"))]


def told_in_full(src: Path, ids: list[str]) -> set[str]:
    """The ids among `ids` whose test checks nothing but strings the statement
    states (required_strings) or the workspace shows: every assertion of the
    test compares against such a string. A seal hides nothing from a solution
    there, so without a value copy such a test is unprotected: red team 13
    passed a lone sealed test of tomli-w's `format_decimal` with a lookup
    table of the statement's quoted output."""
    out: set[str] = set()
    trees: dict[str, ast.Module | None] = {}
    for nid in ids:
        ref = test_ref(nid)
        if ref is None:
            continue
        if ref.file not in trees:
            try:
                trees[ref.file] = parse_python((src / ref.file).read_text(encoding="utf-8"))
            except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
                trees[ref.file] = None
        tree = trees[ref.file]
        fn = next((f for cls, f in _functions(tree) if cls == tuple(ref.cls) and f.name == ref.func),
                  None) if tree is not None else None
        if fn is None:
            continue
        asserts = _assertions(fn)
        checked = {id(node) for node, _ in _checks(fn)}
        if asserts and all(id(a) in checked for a in asserts):
            out.add(nid)
    return out


def required_strings(src: Path, f2p: list[str], workspace_text: str,
                     limit: int = MAX_REQUIRED, code_text: str | None = None) -> list[str]:
    """The exact strings the hidden tests assert (messages, reprs, formats) that
    appear nowhere in the workspace, as statement lines. The strings only, never
    the assertion: the call that produces one stays the agent's to work out, so
    the list is a specification, not an answer key. A `match=` pattern counts
    as shown only in `code_text` (the workspace's Python files, when given):
    "timezone minute" inside a changelog's "Reject out-of-range timezone
    minutes" says nothing of a message's words (a correct parse with its own
    message scored 0)."""
    by_file: dict[str, set[tuple[tuple[str, ...], str]]] = {}
    for nid in f2p:
        ref = test_ref(nid)
        if ref is not None:
            by_file.setdefault(ref.file, set()).add((tuple(ref.cls), ref.func))
    lines: list[str] = []
    for rel in sorted(by_file):
        try:
            code = (src / rel).read_text(encoding="utf-8")
            tree = parse_python(code)
        except (OSError, SyntaxError, UnicodeDecodeError):
            continue
        want = by_file[rel]
        for cls, fn in _functions(tree):
            if (cls, fn.name) not in want:
                continue
            for _node, strings in _checks(fn, columns=True):
                for text in strings:
                    pattern = text.startswith(MATCH)
                    value = text[len(MATCH):] if pattern else text
                    if value in (code_text if pattern and code_text is not None else workspace_text):
                        continue
                    shown = repr(value)          # exact: never shortened or re-spaced
                    line = (f"an error message matching the pattern {shown}" if pattern
                            else shown)
                    if line not in lines:
                        lines.append(line)
    if len(lines) > limit:
        raise Underspecified(f"under-specified: the hidden tests assert {len(lines)} exact "
                             f"strings the workspace never shows (at most {limit} can be "
                             f"stated for a feature of this size)")
    return lines


MAX_COLLABORATORS = 6


def collaborator_methods(src: Path, f2p: list[str], removed: str, elsewhere: str,
                         limit: int = MAX_COLLABORATORS) -> list[str]:
    """Methods the feature calls on objects it is handed, where the hidden tests
    hand it stand-ins of their own (translationstring's tests pass a string
    whose `interpolate()` returns a marker, and want the marker back): a
    natural implementation that does the same work another way fails them.
    A method counts when a class in a hidden test file defines it, the removed
    code calls it (`.name(`) and code outside the removal defines it too (a
    protocol of the repository's, not a name the tests made up)."""
    defined: set[str] = set()
    files = sorted({r.file for r in map(test_ref, f2p) if r is not None})
    for rel in files:
        try:
            tree = parse_python((src / rel).read_text(encoding="utf-8"))
        except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                defined |= {st.name for st in node.body
                            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef))
                            and not st.name.startswith(("test", "__", "setUp", "tearDown"))}
    out = [name for name in sorted(defined)
           if re.search(r"\." + re.escape(name) + r"\(", removed)
           and re.search(r"\bdef\s+" + re.escape(name) + r"\s*\(", elsewhere)]
    return out[:limit]


MAX_CHECKED = 40
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def _words(name: str) -> list[str]:
    """A test's or a symbol's name as lower-case words (snake and camel case)."""
    return [w.lower() for w in _CAMEL.sub("_", name).split("_") if w]


def checked_behaviours(f2p: list[str], names: list[str], limit: int = MAX_CHECKED) -> list[str]:
    """What the hidden tests check, in their authors' words: each test's name
    as words ("test_from_roman_lowercase_and_whitespace" -> "from roman
    lowercase and whitespace"), its class's too. A well-kept suite names its
    edge cases; a statement that left them out gave a correct-looking
    implementation 0 (textkit's from_roman rejected " xiv "). Names only,
    never a parametrize id or a value: no expected value is shown, so no copy
    is given away (the planted tests are renamed at random anyway). A name
    whose words are all the feature's own (`test_from_roman`) says nothing
    and is left out; at most `limit` lines."""
    own = {w for n in names for w in _words(n.rsplit(".", 1)[-1])}
    out: list[str] = []
    for nid in sorted(f2p):
        ref = test_ref(nid)
        if ref is None:
            continue
        words = _words(ref.func)
        if words[:1] == ["test"]:
            words = words[1:]
        cls = [w for c in ref.cls for w in _words(c) if w != "test"]
        if not words or set(words + cls) <= own | {"test", "tests"}:
            continue
        line = (" ".join(cls) + ": " if cls else "") + " ".join(words)
        if line not in out:
            out.append(line)
    return out[:limit]


def _functions(tree: ast.Module):
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield (), node
        elif isinstance(node, ast.ClassDef):
            for st in node.body:
                if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    yield (node.name,), st


def doc_pointers(files: dict[str, str], names: list[str], limit: int = 6) -> list[str]:
    """`file:line` of documentation lines in the workspace that name the feature."""
    names = [n for n in names if len(n) >= 4]
    if not names:
        return []
    pat = re.compile(r"(?<![\w.])(?:%s)(?![\w])" % "|".join(map(re.escape, sorted(set(names)))))
    out = []
    for rel in sorted(files):
        if not DOC_FILES.search(rel):
            continue
        for i, line in enumerate(files[rel].splitlines(), 1):
            if pat.search(line):
                out.append(f"{rel}:{i}")
                if len(out) >= limit:
                    return out
    return out


def _display(s: Symbol) -> str:
    return f"{s.cls}.{s.name}" if s.kind == "method" else s.name


@functools.cache
def _template() -> jinja2.Template:
    env = jinja2.Environment(loader=jinja2.PackageLoader("taskforge.package", "templates"),
                             autoescape=False, trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=True, undefined=jinja2.StrictUndefined)
    env.filters["code"] = lambda x: f"`{x}`"
    return env.get_template("statement.md.j2")


def first_changed_line(old: str, new: str) -> int | None:
    """The first line (1-based) at which `new` differs from `old`: where a
    removal that leaves everything above it alone (a case's arm) now stands."""
    before, after = old.splitlines(), new.splitlines()
    for i, (a, b) in enumerate(zip(before, after), 1):
        if a != b:
            return i
    return min(len(before), len(after)) + 1 if len(before) != len(after) else None


def problem_statement(repo_name: str, root: Symbol, symbols: list[Symbol],
                      exports: list[str], touched: list[str], hidden_count: int,
                      kind: str | None = None, required: list[str] | None = None,
                      docs: list[str] | None = None, style: StatementStyle = StatementStyle.UPSTREAM,
                      raises: list[str] | None = None, collaborators: list[str] | None = None,
                      checked: list[str] | None = None, removal: Removal = Removal.DEFINITIONS,
                      arm: Arm | None = None, arm_at: int | None = None) -> str:
    """The statement, rendered from templates/statement.md.j2: this supplies the
    values (what was removed, what to show), the template every word. `style`
    OWN: the interface without the upstream docstrings (their sentences are
    retrieval keys and sometimes say how the code works), and what the code
    raises, read off it, in the template's words. `arm_at`: the workspace line
    where a case now raises (first_changed_line), which tells two arms of one
    condition apart (asteval's on_functiondef has two `if is_lambda` chains:
    their statements were byte-identical)."""
    kind = str(kind or root.kind)
    own = style is StatementStyle.OWN
    public = [s for s in symbols if s.public and s.kind not in ("module", "assignment")]
    many = kind in ("cluster", "combined")
    assigned: dict[str, list[Symbol]] = {}
    for s in symbols:
        if s.kind == "assignment" and s.public:
            assigned.setdefault(s.path, []).append(s)
    return _template().render(
        kind=kind, body=removal is Removal.BODY, repo=repo_name,
        branch=condition(arm) if removal is Removal.BRANCH and arm is not None else "", arm_at=arm_at,
        documented=strip_docstrings(root.signature) != root.signature, root=root, root_display=_display(root),
        what=KIND_WORD.get(kind, kind), public=public, many=many,
        names=", ".join(f"`{_display(s)}`" for s in public),
        files=", ".join(f"`{f}`" for f in sorted({s.path for s in symbols})),
        tests=f"{hidden_count} hidden test{'s' if hidden_count != 1 else ''}",
        required=required or [], shown=public if many else [root],
        sig=lambda s: (strip_docstrings(s.signature) if own else s.signature).rstrip(),
        raises=(raises or []) if own else [],
        elsewhere=[s for s in public if kind == "module" and s.module != root.module],
        assigned=sorted(assigned.items()),
        helpers=[s for s in symbols if s is not root and not s.public] if kind != "module" else [],
        exports=exports, docs=docs or [], touched=touched, collaborators=collaborators or [],
        checked=checked or [])
