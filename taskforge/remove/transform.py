"""Remove a feature with libcst: its definitions, the imports and __all__
entries that re-export it, and the tests that depend on it.

Each transform is a small CSTTransformer; the plan functions decide what to
drop and return new file contents keyed by repo-relative path (None = delete).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import AbstractSet

import libcst as cst

from taskforge.analysis import bigfiles
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
        had_tests = any(isinstance(s, cst.FunctionDef) and is_test_name(s.name.value)
                        for s in updated.body.body)
        body = [s for s in updated.body.body
                if not (isinstance(s, cst.FunctionDef) and s.name.value in drop)]
        if len(body) != len(updated.body.body):
            self.changed = True
        if self.drop_tests and had_tests and not any(
                isinstance(s, cst.FunctionDef) and is_test_name(s.name.value) for s in body):
            return cst.RemoveFromParent()   # a test class whose every test is hidden goes whole
        return updated.with_changes(body=updated.body.with_changes(body=body or [_PASS]))

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


def remove_source(index: RepoIndex, symbols: list[Symbol]) -> SourceRemoval:
    top = [s for s in symbols if s.kind in TOP_KINDS]
    methods = [s for s in symbols if s.kind == "method" and not any(
        t.kind == "class" and t.module == s.module and t.name == s.cls for t in top)]
    exported = exported_bindings(index, top)
    out = SourceRemoval(symbols=symbols, exported=exported)
    for mod in index.modules.values():
        drop_top = {s.name for s in top if s.module == mod.module}
        drop_methods: dict[str, set[str]] = {}
        for m in methods:
            if m.module == mod.module:
                assert m.cls is not None        # a method's symbol always names its class
                drop_methods.setdefault(m.cls, set()).add(m.name)
        drop_bindings = {(b.module, b.name) for b in mod.bindings
                         if b.name and (b.module, b.name) in exported}
        drop_all = {n for (m, n) in exported if m == mod.module}
        if not (drop_top or drop_methods or drop_bindings or drop_all):
            continue
        new, changed = strip_module(mod.tree or mod.code, mod.module, mod.is_package, drop_top=drop_top,
                                    drop_methods=drop_methods, drop_bindings=drop_bindings,
                                    drop_all=drop_all)
        if changed:
            out.changes[mod.path] = new.code
    out.removed_lines = sum(s.end - s.start + 1 + sum(b - a + 1 for a, b in s.attached)
                            for s in symbols if not (s.kind == "method" and s not in methods))
    return out


def strip_tests(tm: TestModule, code: str, hidden: set[tuple[str, ...]],
                exported: set[tuple[str, str]]) -> tuple[str | None, bool]:
    """New content of a test file (None: nothing left, remove the file)."""
    drop_bindings = {(b.module, b.name) for b in tm.bindings if b.name and (b.module, b.name) in exported}
    if tm.tree is None and len(code) > bigfiles.HUGE:
        done = bigfiles.strip_tests(tm, code, hidden, drop_bindings)
        if done is not None:
            return done
    is_pkg = tm.rel.endswith("__init__.py")
    new, changed = strip_module(tm.tree or code, tm.module, is_pkg, drop_bindings=drop_bindings,
                                drop_tests=hidden)
    if not changed:
        return code, False
    if tm.rel.endswith("conftest.py") or tm.rel.endswith("__init__.py"):
        return new.code, True
    tree = new
    left = 0
    for st in tree.body:
        if isinstance(st, cst.FunctionDef) and is_test_name(st.name.value):
            left += 1
        elif isinstance(st, cst.ClassDef):
            body = st.body.body if isinstance(st.body, cst.IndentedBlock) else []
            left += sum(1 for s in body if isinstance(s, cst.FunctionDef) and is_test_name(s.name.value))
    return (new.code if left else None), True
