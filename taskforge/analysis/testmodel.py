"""What a test file holds, as the test index and the big-file indexer both
record it: test definitions with their references, and naming rules."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from taskforge.analysis.symbols import Binding


@dataclass
class TestDef:
    path: tuple[str, ...]              # ("TestA", "test_b") or ("test_x",)
    name_refs: set[str]
    attr_refs: set[str]
    class_level: bool = False          # a class's own lines (bases, decorators, body): run at import


@dataclass
class TestModule:
    rel: str
    module: str
    bindings: list[Binding] = field(default_factory=list)
    defs: list[TestDef] = field(default_factory=list)
    toplevel_name_refs: set[str] = field(default_factory=set)
    toplevel_attr_refs: set[str] = field(default_factory=set)
    # Why it could not be parsed here (newer syntax than this Python, say PEP 695
    # test files a conftest skips below 3.12): pytest decides whether it runs.
    unparsable: str = ""


def is_test_name(name: str, cls: bool = False) -> bool:
    return name.startswith("Test") if cls else name.startswith("test")


def split_nodeid(nodeid: str) -> tuple[str, tuple[str, ...]]:
    """`tests/t.py::TestA::test_b[1]` -> ("tests/t.py", ("TestA", "test_b"))."""
    parts = nodeid.split("::")
    names = [re.sub(r"\[.*\]$", "", p) for p in parts[1:] if p != "()"]
    return parts[0], tuple(names)
