"""Index test files: which test functions and classes exist, what they reference.

Used to hide tests by reference as well as by coverage (a test that names a
removed symbol fails without running it). Files up to bigfiles.HUGE are read with
libcst, larger ones with ast (bigfiles); hidden tests are stripped from the text
for both (taskforge.remove.transform.strip_tests), so no tree is kept.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import libcst as cst

from taskforge.analysis import bigfiles
from taskforge.analysis.symbols import import_bindings, parse, refs_of
from taskforge.analysis.testmodel import TestDef, TestModule, is_test_name, split_nodeid
from taskforge.errors import UserError

__all__ = ["TestDef", "TestModule", "group_ids", "index_test_module", "index_tests",
           "is_test_name", "split_nodeid"]


def index_test_module(root: Path, rel: str) -> TestModule:

    if (root / rel).stat().st_size > bigfiles.HUGE:      # generated vectors: no libcst
        return bigfiles.index_test_module((root / rel).read_bytes(), rel)
    mod_name = rel[:-3].replace("/", ".")
    try:
        tree = parse(root / rel, rel)
    except UserError as exc:
        return TestModule(rel=rel, module=mod_name, unparsable=exc.message)
    is_pkg = rel.endswith("__init__.py")
    tm = TestModule(rel=rel, module=mod_name)
    for st in tree.body:
        if isinstance(st, cst.FunctionDef):
            n, a = refs_of(st)
            tm.defs.append(TestDef(path=(st.name.value,), name_refs=n, attr_refs=a))
        elif isinstance(st, cst.ClassDef):
            cls_names, cls_attrs = set(), set()
            for base in st.bases:
                n, a = refs_of(base)
                cls_names |= n
                cls_attrs |= a
            for dec in st.decorators:
                n, a = refs_of(dec)
                cls_names |= n
                cls_attrs |= a
            body = st.body.body if isinstance(st.body, cst.IndentedBlock) else []
            class_level_n, class_level_a = set(), set()
            for inner in body:
                if not isinstance(inner, cst.FunctionDef):
                    n, a = refs_of(inner)
                    class_level_n |= n
                    class_level_a |= a
            for inner in body:
                if isinstance(inner, cst.FunctionDef):
                    n, a = refs_of(inner)
                    tm.defs.append(TestDef(path=(st.name.value, inner.name.value),
                                           name_refs=n | cls_names | class_level_n,
                                           attr_refs=a | cls_attrs | class_level_a))
            tm.defs.append(TestDef(path=(st.name.value,), name_refs=cls_names | class_level_n,
                                   attr_refs=cls_attrs | class_level_a, class_level=True))
        elif isinstance(st, cst.SimpleStatementLine):
            for small in st.body:
                if isinstance(small, (cst.Import, cst.ImportFrom)):
                    b, _ = import_bindings(small, mod_name, is_pkg)
                    tm.bindings += b
                else:
                    n, a = refs_of(small)
                    tm.toplevel_name_refs |= n
                    tm.toplevel_attr_refs |= a
        else:
            n, a = refs_of(st)
            tm.toplevel_name_refs |= n
            tm.toplevel_attr_refs |= a
    return tm


def index_tests(root: Path, test_files: list[str]) -> dict[str, TestModule]:
    return {rel: index_test_module(root, rel) for rel in test_files}


def group_ids(ids) -> dict[str, set[str]]:
    """Test ids grouped by file, by class and by function ("f::C::test" keys), so a
    hidden test always takes every parametrization with it."""
    by_key: dict[str, set[str]] = {}
    for nid in ids:
        f, path = split_nodeid(nid)
        for i in range(1, len(path) + 1):
            by_key.setdefault(f + "::" + "::".join(path[:i]), set()).add(nid)
        by_key.setdefault(f, set()).add(nid)
    return by_key


@dataclass(frozen=True)
class TestRef:
    file: str
    cls: tuple[str, ...]
    func: str


def test_ref(nodeid: str) -> TestRef | None:
    """The function a pytest node id names (`f.py::C::test_x[p]`), or None for
    doctests and other items that are not Python test functions."""
    parts = nodeid.split("::")
    if len(parts) < 2 or not parts[0].endswith(".py"):
        return None
    func = parts[-1].split("[", 1)[0]
    if not func.isidentifier():
        return None
    return TestRef(parts[0], tuple(parts[1:-1]), func)
