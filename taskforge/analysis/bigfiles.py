"""Huge test files (generated test vectors: tens of thousands of lines) without libcst.

libcst keeps a full concrete syntax tree: for a 1.4 MB test module that is about
a gigabyte, which alone would break taskforge's memory budget. Files over
HUGE bytes are indexed with the standard library's ast (a tenth of the memory)
and their hidden tests are removed by line ranges from ast positions. The
result is the same edit the libcst stripper makes for the shapes generated
files have: whole test functions, test methods and test classes, and names in
`from ... import` lines.
"""
from __future__ import annotations

import ast

from taskforge.analysis.pyparse import parse as parse_python
from taskforge.analysis.testmodel import TestDef, TestModule, is_test_name

HUGE = 256 * 1024


def _refs(node) -> tuple[set[str], set[str]]:
    names, attrs = set(), set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            names.add(n.id)
        elif isinstance(n, ast.Attribute):
            attrs.add(n.attr)
    return names, attrs


def _bindings(stmt, module: str, is_package: bool):
    from taskforge.analysis.symbols import Binding, resolve_relative

    out = []
    if isinstance(stmt, ast.ImportFrom):
        src = resolve_relative(module, is_package, stmt.level, stmt.module)
        for a in stmt.names:
            if a.name != "*":
                out.append(Binding(local=a.asname or a.name, module=src, name=a.name))
    elif isinstance(stmt, ast.Import):
        for a in stmt.names:
            if a.asname:
                out.append(Binding(local=a.asname, module=a.name, name=None))
            else:
                top = a.name.split(".")[0]
                out.append(Binding(local=top, module=top, name=None))
    return out


def index_test_module(data: bytes, rel: str):
    """A TestModule (tree None) from the standard library's ast."""
    from taskforge.errors import UserError

    try:
        tree = parse_python(data)
    except SyntaxError as exc:
        raise UserError(f"syntax error in {rel}:{exc.lineno}: {exc.msg}") from None
    mod_name = rel[:-3].replace("/", ".")
    is_pkg = rel.endswith("__init__.py")
    tm = TestModule(rel=rel, module=mod_name, tree=None)
    for st in tree.body:
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
            n, a = _refs(st)
            tm.defs.append(TestDef(path=(st.name,), name_refs=n, attr_refs=a))
        elif isinstance(st, ast.ClassDef):
            cn, ca = set(), set()
            for part in [*st.bases, *st.decorator_list]:
                n, a = _refs(part)
                cn |= n
                ca |= a
            for inner in st.body:
                if not isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    n, a = _refs(inner)
                    cn |= n
                    ca |= a
            for inner in st.body:
                if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    n, a = _refs(inner)
                    tm.defs.append(TestDef(path=(st.name, inner.name), name_refs=n | cn,
                                           attr_refs=a | ca))
            tm.defs.append(TestDef(path=(st.name,), name_refs=cn, attr_refs=ca))
        elif isinstance(st, (ast.Import, ast.ImportFrom)):
            tm.bindings += _bindings(st, mod_name, is_pkg)
        else:
            n, a = _refs(st)
            tm.toplevel_name_refs |= n
            tm.toplevel_attr_refs |= a
    del tree
    return tm


def _span(node) -> tuple[int, int]:
    start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])
    return start, node.end_lineno


def strip_tests(tm, code: str, hidden: set[tuple[str, ...]],
                drop_bindings: set[tuple[str, str]]) -> tuple[str | None, bool] | None:
    """Line-range removal of hidden tests and dropped imports; None when the file
    has a shape this cannot edit safely (then the caller uses libcst)."""
    from taskforge.analysis.symbols import resolve_relative

    tree = parse_python(code)
    lines = code.splitlines(keepends=True)
    starts = [st.lineno for st in ast.walk(tree) if isinstance(st, ast.stmt)]
    if len(starts) != len(set(starts)):
        return None                       # `a; b` on one line: leave it to libcst
    cut: list[tuple[int, int, str]] = []  # (first line, last line, replacement)
    is_pkg = tm.rel.endswith("__init__.py")
    tests_left = 0
    for st in tree.body:
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if (st.name,) in hidden:
                cut.append((*_span(st), ""))
            elif is_test_name(st.name):
                tests_left += 1
        elif isinstance(st, ast.ClassDef):
            if (st.name,) in hidden:
                cut.append((*_span(st), ""))
                continue
            drop = {p[1] for p in hidden if len(p) == 2 and p[0] == st.name}
            methods = [m for m in st.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
            had = sum(1 for m in methods if is_test_name(m.name))
            gone = [m for m in methods if m.name in drop]
            left = had - sum(1 for m in gone if is_test_name(m.name))
            if had and not left and gone:
                cut.append((*_span(st), ""))
                continue
            tests_left += left
            emptied = bool(gone) and len(gone) == len(st.body)
            for i, m in enumerate(gone):
                pad = " " * m.col_offset + "pass\n" if emptied and i == 0 else ""
                cut.append((*_span(m), pad))
        elif isinstance(st, ast.ImportFrom) and drop_bindings:
            src = resolve_relative(tm.module, is_pkg, st.level, st.module)
            keep = [a for a in st.names if (src, a.name) not in drop_bindings]
            if len(keep) != len(st.names):
                indent = " " * st.col_offset
                text = "" if not keep else indent + ast.unparse(
                    ast.ImportFrom(module=st.module, names=keep, level=st.level)) + "\n"
                assert st.end_lineno is not None    # set on every parsed statement
                cut.append((st.lineno, st.end_lineno, text))
    if not cut:
        return code, False
    # Ranges are distinct statements, so they never overlap: apply from the bottom
    # so earlier line numbers stay right.
    for first, last, text in sorted(cut, reverse=True):
        lines[first - 1:last] = [text] if text else []
    new = "".join(lines)
    if tm.rel.endswith(("conftest.py", "__init__.py")):
        return new, True
    return (new if tests_left else None), True
