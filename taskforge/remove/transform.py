"""Remove a feature with libcst: its definitions, the imports and __all__
entries that re-export it, and the tests that depend on it.

Each transform is a small CSTTransformer; the plan functions decide what to
drop and return new file contents keyed by repo-relative path (None = delete).
Test files are cut as text at ast positions into exactly what the libcst
stripper makes (strip_tests): libcst's tree of a huge generated test file
does not fit in memory.
"""
from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass, field
from typing import AbstractSet

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from taskforge.analysis import bigfiles
from taskforge.analysis.pyparse import parse as parse_python
from taskforge.analysis.symbols import RepoIndex, Symbol, attribute_root, dotted, resolve_relative
from taskforge.analysis.testindex import TestModule, is_test_name

_PASS = cst.SimpleStatementLine([cst.Pass()])
TOP_KINDS = ("function", "class", "assignment")     # module-level definitions


def _fix_last_comma(items, original):
    """The new last element takes the old last element's comma (trailing style kept)."""
    items = list(items)
    if items and original:
        items[-1] = items[-1].with_changes(comma=original[-1].comma)
    return items


def _is_test_def(node) -> bool:
    return isinstance(node, cst.FunctionDef) and is_test_name(node.name.value)


class _Stripper(cst.CSTTransformer):
    """Drops top-level defs, methods, import aliases and __all__ entries."""

    def __init__(self, module: str, is_package: bool, drop_top: AbstractSet[str] = frozenset(),
                 drop_methods: dict[str, set[str]] | None = None,
                 drop_bindings: AbstractSet[tuple[str, str]] = frozenset(),
                 drop_all: AbstractSet[str] = frozenset(),
                 drop_tests: AbstractSet[tuple[str, ...]] = frozenset()):
        self.module, self.is_package = module, is_package
        self.drop_top, self.drop_methods = set(drop_top), drop_methods or {}
        self.drop_bindings, self.drop_all = set(drop_bindings), set(drop_all)
        self.drop_tests = set(drop_tests)
        self.depth = 0
        self.changed = False

    # -- nesting: only module-level defs and their direct methods are touched
    def visit_ClassDef(self, node):
        self.depth += 1
        return self.depth <= 1          # methods of top-level classes, nothing deeper

    def visit_FunctionDef(self, node):
        self.depth += 1
        return False                    # function bodies are never edited: skip them (speed)

    def leave_FunctionDef(self, original, updated):
        self.depth -= 1
        if self.depth == 0 and (original.name.value in self.drop_top
                                or (original.name.value,) in self.drop_tests):
            self.changed = True
            return cst.RemoveFromParent()
        return updated

    def leave_ClassDef(self, original, updated):
        self.depth -= 1
        if self.depth != 0:
            return updated
        name = original.name.value
        if name in self.drop_top or (name,) in self.drop_tests:
            self.changed = True
            return cst.RemoveFromParent()
        drop = set(self.drop_methods.get(name, ())) | {
            p[1] for p in self.drop_tests if len(p) == 2 and p[0] == name}
        if not drop or not isinstance(updated.body, cst.IndentedBlock):
            return updated
        return self._without_methods(updated, updated.body, drop)

    def _without_methods(self, updated, block: cst.IndentedBlock, drop: set[str]):
        """The class without the dropped methods (`pass` if nothing is left), or
        RemoveFromParent for a test class whose every test is hidden."""
        had_tests = any(_is_test_def(s) for s in block.body)
        body = [s for s in block.body if not (isinstance(s, cst.FunctionDef) and s.name.value in drop)]
        if len(body) != len(block.body):
            self.changed = True
        if self.drop_tests and had_tests and not any(_is_test_def(s) for s in body):
            return cst.RemoveFromParent()   # a test class whose every test is hidden goes whole
        return updated.with_changes(body=block.with_changes(body=body or [_PASS]))

    def leave_ImportFrom(self, original, updated):
        if isinstance(updated.names, cst.ImportStar) or not self.drop_bindings:
            return updated
        src = resolve_relative(self.module, self.is_package, len(original.relative),
                               dotted(original.module))
        keep = [a for a in updated.names if (src, dotted(a.name)) not in self.drop_bindings]
        if len(keep) == len(updated.names):
            return updated
        self.changed = True
        if not keep:
            return cst.RemoveFromParent()
        return updated.with_changes(names=_fix_last_comma(keep, updated.names))

    def _filter_all(self, updated, value):
        if not self.drop_all or not isinstance(value, (cst.List, cst.Tuple)):
            return updated
        keep = [e for e in value.elements if not (
            isinstance(e.value, cst.SimpleString) and e.value.evaluated_value in self.drop_all)]
        if len(keep) == len(value.elements):
            return updated
        self.changed = True
        keep = _fix_last_comma(keep, value.elements)
        if isinstance(value, cst.Tuple) and len(keep) == 1 and not isinstance(keep[0].comma, cst.Comma):
            keep[0] = keep[0].with_changes(comma=cst.Comma())   # ("a") would be a string
        return updated.with_changes(value=value.with_changes(elements=keep))

    def _dropped_assignment(self, targets) -> bool:
        """A module-level `NAME = value` that is part of the feature."""
        return (self.depth == 0 and len(targets) == 1 and isinstance(targets[0], cst.Name)
                and targets[0].value in self.drop_top)

    def leave_Assign(self, original, updated):
        if self._dropped_assignment([t.target for t in updated.targets]) or (
                self.depth == 0 and len(updated.targets) == 1
                and attribute_root(updated.targets[0].target) in self.drop_top):
            # `NAME = value`, or `NAME.attr = value` on a definition that goes
            self.changed = True
            return cst.RemoveFromParent()
        if any(isinstance(t.target, cst.Name) and t.target.value == "__all__" for t in updated.targets):
            return self._filter_all(updated, updated.value)
        return updated

    def leave_AugAssign(self, original, updated):
        if isinstance(updated.target, cst.Name) and updated.target.value == "__all__":
            return self._filter_all(updated, updated.value)
        return updated

    def leave_AnnAssign(self, original, updated):
        if updated.value is not None and self._dropped_assignment([updated.target]):
            self.changed = True
            return cst.RemoveFromParent()
        if isinstance(updated.target, cst.Name) and updated.target.value == "__all__" and updated.value:
            return self._filter_all(updated, updated.value)
        return updated

    def leave_SimpleStatementLine(self, original, updated):
        if not updated.body:
            return cst.RemoveFromParent()
        return updated

    def leave_IndentedBlock(self, original, updated):
        if not updated.body:
            return updated.with_changes(body=[_PASS])
        return updated


def strip_module(code: str | cst.Module, module: str, is_package: bool, **drops) -> tuple[cst.Module, bool]:
    tree = code if isinstance(code, cst.Module) else cst.parse_module(code)
    t = _Stripper(module, is_package, **drops)
    new = tree.visit(t)
    return new, t.changed


@dataclass
class SourceRemoval:
    """What removing a feature does to the package (tests handled separately)."""
    symbols: list[Symbol]
    changes: dict[str, str | None] = field(default_factory=dict)
    exported: set[tuple[str, str]] = field(default_factory=set)   # (module, name) bindings gone
    removed_lines: int = 0


def exported_bindings(index: RepoIndex, top: list[Symbol]) -> set[tuple[str, str]]:
    """(module, name) pairs through which removed top-level names are reachable."""
    exported = {(s.module, s.name) for s in top}
    changed = True
    while changed:
        changed = False
        for mod in index.modules.values():
            for b in mod.bindings:
                if b.name and (b.module, b.name) in exported and (mod.module, b.local) not in exported:
                    exported.add((mod.module, b.local))
                    changed = True
            for star in mod.star_imports:
                for (m, n) in list(exported):
                    if m == star and not n.startswith("_") and (mod.module, n) not in exported:
                        exported.add((mod.module, n))
                        changed = True
    return exported


def _module_drops(mod, top: list[Symbol], methods: list[Symbol],
                  exported: set[tuple[str, str]]) -> dict:
    """strip_module's drop_* arguments for one source module."""
    drop_methods: dict[str, set[str]] = {}
    for m in methods:
        if m.module == mod.module:
            assert m.cls is not None        # a method's symbol always names its class
            drop_methods.setdefault(m.cls, set()).add(m.name)
    return {"drop_top": {s.name for s in top if s.module == mod.module},
            "drop_methods": drop_methods,
            "drop_bindings": {(b.module, b.name) for b in mod.bindings
                              if b.name and (b.module, b.name) in exported},
            "drop_all": {n for (m, n) in exported if m == mod.module}}


def remove_source(index: RepoIndex, symbols: list[Symbol]) -> SourceRemoval:
    top = [s for s in symbols if s.kind in TOP_KINDS]
    methods = [s for s in symbols if s.kind == "method" and not any(
        t.kind == "class" and t.module == s.module and t.name == s.cls for t in top)]
    exported = exported_bindings(index, top)
    out = SourceRemoval(symbols=symbols, exported=exported)
    for mod in index.modules.values():
        drops = _module_drops(mod, top, methods, exported)
        if not any(drops.values()):
            continue
        new, changed = strip_module(mod.tree or mod.code, mod.module, mod.is_package, **drops)
        if changed:
            out.changes[mod.path] = new.code
    out.removed_lines = sum(s.end - s.start + 1 + sum(b - a + 1 for a, b in s.attached)
                            for s in symbols if not (s.kind == "method" and s not in methods))
    return out


class _Hollower(cst.CSTTransformer):
    """Replaces one function's body (a top-level function, or a method of a
    top-level class, the one whose definition starts on `line`: a property's
    setter shares its getter's name) by its docstring and `raise NotImplementedError`."""
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, cls: str | None, name: str, line: int):
        self.cls, self.name, self.line = cls, name, line
        self.stack: list[str] = []
        self.changed = False

    def visit_ClassDef(self, node):
        self.stack.append(node.name.value)
        return len(self.stack) == 1 and node.name.value == self.cls

    def leave_ClassDef(self, original, updated):
        self.stack.pop()
        return updated

    def visit_FunctionDef(self, node):
        self.stack.append(node.name.value)
        return False                    # bodies are replaced whole, never looked into

    def leave_FunctionDef(self, original, updated):
        path = tuple(self.stack)
        self.stack.pop()
        if path != ((self.cls, self.name) if self.cls else (self.name,)) or self.changed:
            return updated
        pos = self.get_metadata(PositionProvider, original)
        first = min([pos.start.line, *(self.get_metadata(PositionProvider, d).start.line
                                       for d in original.decorators)])
        if first != self.line:
            return updated
        self.changed = True
        body = updated.body
        doc = []
        if isinstance(body, cst.IndentedBlock) and body.body and updated.get_docstring(clean=False) is not None:
            doc = [body.body[0]]
        stmts = [*doc, cst.parse_statement("raise NotImplementedError")]
        block = body.with_changes(body=stmts) if isinstance(body, cst.IndentedBlock) else cst.IndentedBlock(stmts)
        return updated.with_changes(body=block)


def hollow_code(code: str | cst.Module, cls: str | None, name: str, line: int) -> str | None:
    """The module's text with the body of function `name` (a method of `cls`)
    whose definition starts on `line` hollowed, or None where there is none."""
    t = _Hollower(cls, name, line)
    new = MetadataWrapper(code if isinstance(code, cst.Module) else cst.parse_module(code)).visit(t)
    return new.code if t.changed else None


def hollow_source(index: RepoIndex, sym: Symbol) -> SourceRemoval:
    """Removal.BODY: `sym` (a function or method) keeps its decorators, signature
    and docstring; its body becomes `raise NotImplementedError`. Nothing is
    unbound, so nothing else changes."""
    mod = index.modules[sym.module]
    return _in_place(mod, sym, hollow_code(mod.tree or mod.code, sym.cls if sym.kind == "method" else None,
                                           sym.name, sym.start))


def _in_place(mod, sym: Symbol, new: str | None) -> SourceRemoval:
    """A removal inside `sym` that leaves it defined (a body, an arm): its
    module's new text, if there is one, and the lines that went."""
    out = SourceRemoval(symbols=[sym])
    if new is not None:
        out.changes[mod.path] = new
        out.removed_lines = max(0, mod.code.count("\n") - new.count("\n") + 1)
    return out


class _ArmCutter(cst.CSTTransformer):
    """Replaces the statements of one arm of an if/elif/else (the block whose
    first statement starts on `arm`) inside one function (as _Hollower finds
    it) by `raise NotImplementedError`; the condition and every other arm stay."""
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, cls: str | None, name: str, line: int, arm: int, stmt: str = "raise NotImplementedError"):
        self.cls, self.name, self.line, self.arm, self.stmt = cls, name, line, arm, stmt
        self.stack: list[str] = []
        self.inside = 0                 # depth inside the target function
        self.changed = False

    def visit_ClassDef(self, node):
        self.stack.append(node.name.value)

    def leave_ClassDef(self, original, updated):
        self.stack.pop()
        return updated

    def visit_FunctionDef(self, node):
        self.stack.append(node.name.value)
        if self.inside:
            self.inside += 1
            return True
        if tuple(self.stack) == ((self.cls, self.name) if self.cls else (self.name,)):
            pos = self.get_metadata(PositionProvider, node)
            first = min([pos.start.line, *(self.get_metadata(PositionProvider, d).start.line
                                           for d in node.decorators)])
            if first == self.line:
                self.inside = 1
        return True

    def leave_FunctionDef(self, original, updated):
        self.stack.pop()
        if self.inside:
            self.inside -= 1
        return updated

    def _cut(self, original, updated):
        body = original.body
        if self.inside != 1 or self.changed or not isinstance(body, cst.IndentedBlock) or not body.body:
            return updated
        if self.get_metadata(PositionProvider, body.body[0]).start.line != self.arm:
            return updated
        self.changed = True
        return updated.with_changes(body=updated.body.with_changes(
            body=[cst.parse_statement(self.stmt)]))

    def leave_If(self, original, updated):
        return self._cut(original, updated)

    def leave_Else(self, original, updated):
        return self._cut(original, updated)


def branch_code(code: str | cst.Module, cls: str | None, name: str, line: int, arm: int,
                stmt: str = "raise NotImplementedError") -> str | None:
    """The module's text with the arm starting on line `arm` of function `name`
    (a method of `cls`, defined on `line`) replaced by `stmt` (adequacy's
    stand-ins put `pass` or `return None` there), or None where there is no
    such arm (a one-line `if x: y` suite is none)."""
    t = _ArmCutter(cls, name, line, arm, stmt)
    new = MetadataWrapper(code if isinstance(code, cst.Module) else cst.parse_module(code)).visit(t)
    return new.code if t.changed else None


def branch_source(index: RepoIndex, sym: Symbol, arm: int) -> SourceRemoval:
    """Removal.BRANCH: the arm of an `if` in `sym` starting on line `arm` goes
    (propose.branches); the function, its condition and its callers stay."""
    mod = index.modules[sym.module]
    return _in_place(mod, sym, branch_code(mod.tree or mod.code, sym.cls if sym.kind == "method" else None,
                                           sym.name, sym.start, arm))


# -- hidden tests out of a test file ------------------------------------------------
#
# The libcst stripper above is the definition of the edit, but libcst keeps a full
# concrete syntax tree: about a gigabyte for a 1.4 MB generated test file. Test files
# are therefore edited as text: the standard library's ast (a tenth of the memory)
# says which statements go, and the lines they own are cut out exactly as libcst
# would drop the nodes. libcst's ownership rules, which the cuts follow:
#   * a statement owns the blank and comment lines above it (`leading_lines`), except
#     the module's first statement, whose lines are the module header;
#   * an indented block owns the lines after its last statement up to the last one
#     that starts with the block's indentation (its `footer`), innermost block first;
#   * a block left empty gets `pass` at its indentation, before its footer.
# Shapes this does not reproduce (a whole `a; b` statement going, an emptied one-line
# suite, a lone `\r` line ending, a byte-order mark, code ast cannot parse) go to
# libcst at any size (as bigfiles' line stripper sent `a; b` files to libcst), and
# so do files up to HUGE with a match statement (_has_match).

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_TRIES = (ast.Try, ast.TryStar)
_BODY_ONLY = (ast.With, ast.AsyncWith, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_REST_OF_LINE = re.compile(r"[ \t\f]*(#[^\r\n]*)?\r?\n")


class _Unsupported(Exception):
    """A shape the line editor does not reproduce byte for byte: libcst edits it."""


@functools.lru_cache(maxsize=4)
def _string_lines(code: str) -> frozenset[int]:
    """Lines that continue a multi-line string: text there is not a comment or a
    blank line, whatever it looks like (a header's docstring argument, say)."""
    out: set[int] = set()
    for node in ast.walk(_parsed(code)):
        if isinstance(node, (ast.Constant, ast.JoinedStr)) and node.end_lineno and node.end_lineno > node.lineno:
            out.update(range(node.lineno + 1, node.end_lineno + 1))
    return frozenset(out)


@functools.lru_cache(maxsize=4)
def _parsed(code: str) -> ast.Module:
    """ast of a test file, kept for the next request: generation strips the same
    file for many features, and a huge file takes a second to parse."""
    try:
        return parse_python(code)
    except (SyntaxError, ValueError) as exc:
        raise _Unsupported(str(exc)) from None


class _Text:
    """The source as lines with their offsets; ast columns (UTF-8 bytes) as str offsets."""

    def __init__(self, code: str):
        if code.startswith("\ufeff") or re.search(r"\r(?!\n)", code):
            raise _Unsupported("byte-order mark or lone \\r line ending")
        self.trailing_newline = code.endswith("\n") or not code
        # The file's newline, from its first line (a last line without one takes it).
        self.newline = "\r\n" if "\r\n" in code[:code.find("\n") + 1] else "\n"
        self.code = code if self.trailing_newline else code + self.newline
        self.lines = [line + "\n" for line in self.code.split("\n")[:-1]]
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line))
        self.string_lines: frozenset[int] = frozenset()

    def col(self, lineno: int, byte_col: int) -> int:
        line = self.lines[lineno - 1]
        return byte_col if line.isascii() else len(line.encode()[:byte_col].decode("utf-8", "replace"))

    def offset(self, lineno: int, byte_col: int) -> int:
        return self.starts[lineno - 1] + self.col(lineno, byte_col)

    def blank(self, lineno: int) -> bool:
        """No code on the line: whitespace, maybe a comment (a line inside a
        multi-line string, `# ...` as it may look, is code)."""
        text = self.lines[lineno - 1].strip()
        return (not text or text.startswith("#")) and lineno not in self.string_lines

    def indent(self, st: ast.stmt) -> str | None:
        """The indentation before a statement; None when code precedes it on its line
        (a one-line suite such as `if x: pass`, or the `b` of `a; b`)."""
        prefix = self.lines[st.lineno - 1][:self.col(st.lineno, st.col_offset)]
        return prefix if not prefix.strip() else None

    def alone(self, st: ast.stmt) -> bool:
        """Nothing but whitespace and a comment share the statement's lines."""
        assert st.end_lineno is not None and st.end_col_offset is not None
        rest = self.lines[st.end_lineno - 1][self.col(st.end_lineno, st.end_col_offset):]
        return self.indent(st) is not None and _REST_OF_LINE.fullmatch(rest) is not None


def _is_elif(node: ast.If, text: _Text) -> bool:
    if len(node.orelse) != 1 or not isinstance(node.orelse[0], ast.If):
        return False
    inner = node.orelse[0]
    return text.lines[inner.lineno - 1][text.col(inner.lineno, inner.col_offset):].startswith("elif")


def _last_if_block(node: ast.If, text: _Text) -> list[ast.stmt]:
    while _is_elif(node, text):
        inner = node.orelse[0]
        assert isinstance(inner, ast.If)
        node = inner
    return node.orelse or node.body


def _last_block(node: ast.stmt, text: _Text) -> list[ast.stmt] | None:
    """The block a compound statement ends with (an `elif` chain followed to its end)."""
    if isinstance(node, ast.If):
        return _last_if_block(node, text)
    if isinstance(node, _LOOPS):
        return node.orelse or node.body
    if isinstance(node, _TRIES):
        return node.finalbody or node.orelse or (node.handlers[-1].body if node.handlers else node.body)
    if isinstance(node, _BODY_ONLY):
        return node.body
    if isinstance(node, ast.Match):
        return node.cases[-1].body
    return None


def _closing_indents(node: ast.stmt, text: _Text) -> list[str]:
    """Indentation of every block that closes where the statement ends, innermost first."""
    out = []
    while (block := _last_block(node, text)) is not None:
        indent = text.indent(block[0])
        if indent is None:              # one-line suite: no footer
            break
        out.append(indent)
        node = block[-1]
    return out[::-1]


def _blocks(node: ast.stmt) -> list[list[ast.stmt]]:
    """The statement lists of a control-flow statement (not of defs and classes)."""
    if isinstance(node, (ast.If, *_LOOPS)):
        return [node.body, node.orelse]
    if isinstance(node, _TRIES):
        return [node.body, *(h.body for h in node.handlers), node.orelse, node.finalbody]
    if isinstance(node, (ast.With, ast.AsyncWith)):
        return [node.body]
    if isinstance(node, ast.Match):
        return [c.body for c in node.cases]
    return []


def _first_line(st: ast.stmt) -> int:
    return min([st.lineno, *(d.lineno for d in getattr(st, "decorator_list", ()))])


class _LineStripper:
    """Works out the text cuts (start, end, replacement) of strip_module(drop_tests=hidden,
    drop_bindings=...) on a test file. The walk mirrors _Stripper: "top" is anything
    outside classes and functions (control-flow blocks included), "class" the inside
    of a top-level class; function bodies and nested classes are never looked into."""

    def __init__(self, text: _Text, module: str, is_package: bool,
                 hidden: AbstractSet[tuple[str, ...]], drop_bindings: AbstractSet[tuple[str, str]]):
        self.text, self.module, self.is_package = text, module, is_package
        self.hidden, self.drop_bindings = hidden, drop_bindings
        self.cuts: list[tuple[int, int, str]] = []
        self.tests_left: dict[int, int] = {}       # id(kept class) -> its tests left

    def run(self, tree: ast.Module) -> int:
        """Collect the cuts; the number of module-level tests left."""
        gone = [self._top(st) for st in tree.body]
        self._cut_block(tree.body, gone, module=True)
        if self.cuts and tree.body:
            self.cuts.append(self._lost_footer(tree.body[-1]))
        left = 0
        for st, g in zip(tree.body, gone):
            if isinstance(st, _DEFS) and not g:
                left += is_test_name(st.name)
            elif isinstance(st, ast.ClassDef) and not g:
                left += self.tests_left.get(id(st), 0)
        return left

    def _top(self, st: ast.stmt) -> bool:
        """Whether a statement outside classes and functions goes."""
        if isinstance(st, _DEFS):
            return (st.name,) in self.hidden
        if isinstance(st, ast.ClassDef):
            return self._class(st)
        return self._member(st, self._top)

    def _in_class(self, st: ast.stmt) -> bool:
        return self._member(st, self._in_class)

    def _member(self, st: ast.stmt, visit) -> bool:
        """Imports are edited; control-flow blocks are walked with `visit`."""
        if isinstance(st, ast.ImportFrom):
            return self._import(st)
        for block in _blocks(st):
            self._cut_block(block, [visit(inner) for inner in block])
        return False

    def _class(self, cls: ast.ClassDef) -> bool:
        """Hidden methods out; the class goes whole when it had tests and none is left."""
        if (cls.name,) in self.hidden:
            return True
        mark = len(self.cuts)
        drop = {p[1] for p in self.hidden if len(p) == 2 and p[0] == cls.name}
        gone = [(isinstance(st, _DEFS) and st.name in drop) or self._in_class(st) for st in cls.body]
        tests = [g for st, g in zip(cls.body, gone) if isinstance(st, _DEFS) and is_test_name(st.name)]
        if drop and tests and all(tests):
            del self.cuts[mark:]        # edits inside go with it
            return True
        self.tests_left[id(cls)] = tests.count(False)
        self._cut_block(cls.body, gone)
        return False

    def _import(self, st: ast.ImportFrom) -> bool:
        """Dropped names out of `from m import ...`; True when none is left."""
        if not self.drop_bindings or any(a.name == "*" for a in st.names):
            return False
        src = resolve_relative(self.module, self.is_package, st.level, st.module)
        keep = [(src, a.name) not in self.drop_bindings for a in st.names]
        if all(keep):
            return False
        if not any(keep):
            return True
        self.cuts.append(self._kept_names(st, keep))
        return False

    def _kept_names(self, st: ast.ImportFrom, keep: list[bool]) -> tuple[int, int, str]:
        """The statement with only the kept names. A name keeps the text up to the next
        name (its comma and what follows it); the last kept name takes the old last
        name's comma and closing text, as _fix_last_comma does."""
        o, code = self.text.offset, self.text.code
        assert st.end_lineno is not None and st.end_col_offset is not None
        first, end = o(st.lineno, st.col_offset), o(st.end_lineno, st.end_col_offset)
        starts = [o(a.lineno, a.col_offset) for a in st.names]
        last_alias = st.names[-1]
        assert last_alias.end_lineno is not None and last_alias.end_col_offset is not None
        last_end = o(last_alias.end_lineno, last_alias.end_col_offset)
        kept = [i for i, k in enumerate(keep) if k]
        parts = [code[first:starts[0]], *(code[starts[i]:starts[i + 1]] for i in kept[:-1])]
        tail = kept[-1]
        alias = st.names[tail]
        assert alias.end_lineno is not None and alias.end_col_offset is not None
        parts += [code[starts[tail]:o(alias.end_lineno, alias.end_col_offset)], code[last_end:end]]
        return first, end, "".join(parts)

    def _cut_block(self, stmts: list[ast.stmt], gone: list[bool], module: bool = False) -> None:
        """Cut the statements that go with the lines they own; `pass` for an emptied block."""
        if not any(gone):
            return
        emptied = all(gone) and not module
        for i, g in enumerate(gone):
            if g:
                start, end = self._region(stmts, i, module)
                self.cuts.append((start, end, self._pass(stmts[0]) if emptied and i == 0 else ""))

    def _pass(self, first: ast.stmt) -> str:
        indent = self.text.indent(first)
        if indent is None:
            raise _Unsupported("emptied one-line suite")
        return indent + "pass" + self.text.newline

    def _region(self, stmts: list[ast.stmt], i: int, module: bool) -> tuple[int, int]:
        """Offsets of the lines statement i owns: its leading lines, its own lines and
        the footers of the blocks it closes."""
        st = stmts[i]
        if not self.text.alone(st):
            raise _Unsupported("a statement sharing its line goes")
        assert st.end_lineno is not None
        if i == 0:
            top = _first_line(st) if module else self._after_header(_first_line(st))
        else:
            prev = stmts[i - 1]
            assert prev.end_lineno is not None
            top = prev.end_lineno + self._footer(prev) + 1
        last = st.end_lineno + self._footer(st)
        return self.text.starts[top - 1], self.text.starts[last]

    def _lost_footer(self, last: ast.stmt) -> tuple[int, int, str]:
        """libcst (1.0, native parser) loses lines of the module footer, the lines
        after the last statement and its blocks' footers: those up to the last one
        that starts with whitespace, unless a comment at column 0 comes first. A
        changed file loses them here too."""
        assert last.end_lineno is not None
        first = last.end_lineno + self._footer(last) + 1
        end = first
        for line in range(first, len(self.text.lines) + 1):
            text = self.text.lines[line - 1]
            if text[:1] in (" ", "\t", "\f"):
                end = line + 1
            elif text.startswith("#"):
                break
        return self.text.starts[first - 1], self.text.starts[end - 1], ""

    def _after_header(self, first: int) -> int:
        """The first line after a block's header (the block's first statement owns them)."""
        while first > 1 and self.text.blank(first - 1):
            first -= 1
        return first

    def _footer(self, st: ast.stmt) -> int:
        """How many lines after a statement its closing blocks own, innermost first:
        each takes the lines up to the last one starting with its indentation."""
        indents = _closing_indents(st, self.text)
        if not indents:
            return 0
        assert st.end_lineno is not None
        gap = []
        line = st.end_lineno + 1
        while line <= len(self.text.lines) and self.text.blank(line):
            gap.append(self.text.lines[line - 1])
            line += 1
        taken = 0
        for indent in indents:
            taken = next((k + 1 for k in range(len(gap) - 1, taken - 1, -1)
                          if gap[k].startswith(indent)), taken)
        return taken


def _has_match(code: str, tree: ast.Module) -> bool:
    """libcst (1.0) prints some `case` patterns back differently (`case 0, *x:` as
    `case [0, *x]:`), anywhere in a file it edits. Files up to HUGE with a match
    statement therefore go to libcst; a huge one keeps its patterns as written
    (the only place the text cutter knowingly differs from libcst)."""
    return re.search(r"^[ \t]*match\b", code, re.M) is not None and any(
        isinstance(node, ast.Match) for node in ast.walk(tree))


def _apply(code: str, cuts: list[tuple[int, int, str]]) -> str:
    """The text with the cuts made; they never overlap (distinct statements' lines)."""
    out, pos = [], 0
    for start, end, text in sorted(cuts):
        if start < pos:
            raise _Unsupported("overlapping cuts")
        out += [code[pos:start], text]
        pos = end
    out.append(code[pos:])
    return "".join(out)


def _cut_tests(tm: TestModule, code: str, hidden: AbstractSet[tuple[str, ...]],
               drop_bindings: AbstractSet[tuple[str, str]]) -> tuple[str | None, bool]:
    """strip_tests by text cuts at ast positions; raises _Unsupported for shapes it
    does not reproduce exactly."""
    text = _Text(code)
    tree = _parsed(text.code)
    text.string_lines = _string_lines(text.code)
    if len(code) <= bigfiles.HUGE and _has_match(text.code, tree):
        raise _Unsupported("match statement")
    stripper = _LineStripper(text, tm.module, tm.rel.endswith("__init__.py"), hidden, drop_bindings)
    left = stripper.run(tree)
    if not stripper.cuts:
        return code, False
    new = _apply(text.code, stripper.cuts)
    if not text.trailing_newline:
        new = new.removesuffix(text.newline)
    elif not new:
        new = text.newline          # libcst prints an emptied module as one newline
    if tm.rel.endswith(("conftest.py", "__init__.py")):
        return new, True
    return (new if left else None), True


def _strip_tests_libcst(tm: TestModule, code: str, hidden: AbstractSet[tuple[str, ...]],
                        drop_bindings: AbstractSet[tuple[str, str]]) -> tuple[str | None, bool]:
    """The same edit with libcst, for the shapes _cut_tests leaves (memory: libcst's
    tree of the whole file, a gigabyte for the largest generated test files)."""
    is_pkg = tm.rel.endswith("__init__.py")
    new, changed = strip_module(code, tm.module, is_pkg, drop_bindings=drop_bindings, drop_tests=hidden)
    if not changed:
        return code, False
    if tm.rel.endswith(("conftest.py", "__init__.py")):
        return new.code, True
    left = 0
    for st in new.body:
        if isinstance(st, cst.FunctionDef) and is_test_name(st.name.value):
            left += 1
        elif isinstance(st, cst.ClassDef) and isinstance(st.body, cst.IndentedBlock):
            left += sum(1 for s in st.body.body if isinstance(s, cst.FunctionDef) and is_test_name(s.name.value))
    return (new.code if left else None), True


def strip_tests(tm: TestModule, code: str, hidden: set[tuple[str, ...]],
                exported: set[tuple[str, str]]) -> tuple[str | None, bool]:
    """New content of a test file without its hidden tests and the imports of removed
    names (None: no test left, remove the file); the text libcst's _Stripper makes."""
    drop_bindings = {(b.module, b.name) for b in tm.bindings if b.name and (b.module, b.name) in exported}
    try:
        return _cut_tests(tm, code, hidden, drop_bindings)
    except _Unsupported:
        return _strip_tests_libcst(tm, code, hidden, drop_bindings)
