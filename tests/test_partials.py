"""Issue 24, the pure parts (fast tier): partial solutions built with libcst
(before/after source), the exceptions hidden tests expect, the coverage record,
and families of near-duplicate tasks."""
from __future__ import annotations

import re
import textwrap

import pytest

from taskforge.package.families import families, related
from taskforge.validate.adequacy import (
    Expected,
    Stub,
    Targets,
    Unit,
    expected_raises,
    partials,
    plausible_constant,
    standins,
    stub,
    text_matching,
    units_of,
)


def d(s: str) -> str:
    return textwrap.dedent(s).lstrip("\n")


MOD = d('''
    """A module."""
    from typing import Dict


    def total(items) -> int:
        """Sum them."""
        n = 0
        for x in items:
            n += x
        return n


    def name_of(x):
        if x is None:
            return "nobody"
        return str(x)


    def mapping(x) -> Dict[str, int]:
        return {k: 1 for k in x}


    def log(x):
        print(x)


    class Box:
        size = 3

        def __init__(self, v):
            self.v = v

        def get(self):
            return self.v

        def __repr__(self):
            return f"Box({self.v})"

        def _hidden(self):
            return 1


    class _Private:
        def run(self):
            return 2
    ''')

STUB_CASES = [
    # (unit, how, the changed definition after the stub: None = the stub does not apply)
    (Unit("m.py", "total"), Stub.RAISE,
     'def total(items) -> int:\n    """Sum them."""\n    raise NotImplementedError\n'),
    (Unit("m.py", "total"), Stub.CONSTANT,          # by annotation: no literal returned
     'def total(items) -> int:\n    """Sum them."""\n    return 0\n'),
    (Unit("m.py", "name_of"), Stub.CONSTANT,        # the first literal the gold returns
     'def name_of(x):\n    return "nobody"\n'),
    (Unit("m.py", "mapping"), Stub.CONSTANT,        # Dict[...] -> {}
     'def mapping(x) -> Dict[str, int]:\n    return {}\n'),
    (Unit("m.py", "log"), Stub.CONSTANT, None),     # returns nothing: `return None` is the gold
    (Unit("m.py", "log"), Stub.RAISE, 'def log(x):\n    raise NotImplementedError\n'),
    (Unit("m.py", "Box.get"), Stub.RAISE,
     '    def get(self):\n        raise NotImplementedError\n'),
    (Unit("m.py", "Box.get"), Stub.CONSTANT,         # returns an attribute: None is the guess
     '    def get(self):\n        return None\n'),
    (Unit("m.py", "Box", is_class=True), Stub.CONSTANT, None),
]


@pytest.mark.parametrize("unit,how,after", STUB_CASES)
def test_stub_one_definition(unit, how, after):
    new = stub(MOD, unit, how)
    if after is None:
        assert new is None
        return
    assert new is not None and after in new
    # Only that definition's body changed: the module before and after it is kept.
    head = MOD[:MOD.index(after.splitlines()[0])]
    tail_start = MOD.index(after.splitlines()[0])
    assert new.startswith(head)
    old_body_end = MOD.index("\n\n", tail_start)
    assert new.endswith(MOD[old_body_end:])


def test_stub_a_class_raises_in_every_method():
    new = stub(MOD, Unit("m.py", "Box", is_class=True), Stub.RAISE)
    assert new is not None
    box = new[new.index("class Box"):new.index("class _Private")]
    assert box.count("raise NotImplementedError") == 4 and "size = 3" in box
    assert "return 2" in new and "return n" in new        # the rest is untouched


def test_units_are_the_public_interface():
    t = {"m.py": Targets(whole=True)}
    names = [u.name for u in units_of({"m.py": MOD}, t)]
    assert names == ["total", "name_of", "mapping", "log", "Box", "Box.get"]
    # A method feature: only its own method; a function feature: only it.
    assert [u.name for u in units_of({"m.py": MOD}, {"m.py": Targets(names={"Box.get"})})] \
        == ["Box.get"]
    assert [u.name for u in units_of({"m.py": MOD}, {"m.py": Targets(names={"total", "_x"})})] \
        == ["total"]


def test_partials_one_stub_each_raise_first():
    t = {"m.py": Targets(names={"total", "name_of", "log"})}
    p = partials({"m.py": MOD}, t)
    assert list(p) == ["stub-raise:total", "stub-raise:name_of", "stub-raise:log",
                       "stub-constant:total", "stub-constant:name_of"]
    for name, changes in p.items():
        new = changes["m.py"]
        # exactly one of the three still has its gold body
        gold = {"total": "n += x", "name_of": "return str(x)", "log": "print(x)"}
        missing = [k for k, marker in gold.items() if marker not in new]
        assert missing == [name.split(":")[1]], (name, missing)
    assert len(partials({"m.py": MOD}, t, limit=2)) == 2


def test_a_feature_of_one_public_unit_has_no_partials_of_its_own():
    """Stubbing its one unit is the raise stand-in, which runs anyway."""
    assert partials({"m.py": MOD}, {"m.py": Targets(names={"total", "_x"})}) == {}


@pytest.mark.parametrize("src,want", [
    ("def f():\n    return 3\n", "3"),
    ("def f():\n    if x:\n        return -1\n    return y\n", "-1"),
    ("def f():\n    def g():\n        return 7\n    return g\n", "None"),   # nested return is not f's
    ("def f() -> bool:\n    return x > 1\n", "False"),
    ("def f() -> list[int]:\n    return sorted(x)\n", "[]"),
    ("def f():\n    return None\n", None),
    ("def f():\n    pass\n", None),
    ("def __init__(self):\n    return 1\n", None),
])
def test_plausible_constant(src, want):
    import libcst as cst

    fn = cst.parse_module(src).body[0]
    assert isinstance(fn, cst.FunctionDef)
    assert plausible_constant(fn) == want


TESTS = d('''
    import re
    import unittest

    import pytest
    from pytest import raises
    from pkg.errors import ParseError as PE
    import pkg.errors
    import pkg as p

    class Local(Exception):
        pass

    def test_a():
        with pytest.raises(PE, match=r"bad date: '2020\\-13'"):
            parse("2020-13")

    def test_b():
        with raises(ValueError):
            parse(None)

    def test_c():
        with pytest.raises(pkg.errors.ParseError, match="^empty$"):
            parse("")

    def test_d():
        with pytest.raises(Local):      # defined here: the package cannot raise it
            parse(1)

    def test_e():
        with pytest.raises((p.errors.ParseError, TypeError)):
            parse(2)

    def test_not_hidden():
        with pytest.raises(KeyError):
            parse(3)

    class TestU(unittest.TestCase):
        def test_u(self):
            self.assertRaises(PE, parse, "x")
            self.assertRaisesRegex(ValueError, "no (digits)+", parse, "y")
    ''')


def test_expected_raises_from_the_hidden_tests():
    ids = [f"tests/test_p.py::{n}" for n in ("test_a", "test_b", "test_c", "test_d", "test_e")]
    ids += ["tests/test_p.py::TestU::test_u", "tests/test_p.py::test_a[1]", "tests/gone.py::test_x"]
    got = expected_raises({"tests/test_p.py": TESTS}, ids)
    pe = "__import__('pkg.errors', fromlist=['ParseError']).ParseError"
    # Most often expected first (test_e and test_u), ties in the order first seen;
    # a regex becomes a text it matches; a test-local class and tests that are
    # not hidden give nothing.
    assert got == [Expected(pe, ""), Expected(pe, "bad date: '2020-13'"), Expected("ValueError", ""),
                   Expected(pe, "empty"), Expected("ValueError", "no digits")]
    assert Expected("KeyError", "") not in got                 # not a hidden test
    assert all("Local" not in e.exc for e in got)
    assert Expected(pe, "bad date: '2020-13'").raise_expr == f'{pe}("bad date: \'2020-13\'")'


@pytest.mark.parametrize("pattern", [r"bad date: '2020\-13'", "^empty$", r"a\.b \(c\)",
                                     "no (digits)+", r"\d+ items", "[unclosed"])
def test_text_matching(pattern):
    text = text_matching(pattern)
    try:
        rx = re.compile(pattern)
    except re.error:
        assert text == ""
        return
    assert text == "" or rx.search(text), (pattern, text)
    if "\\d" not in pattern:                # a literal-looking pattern gives a matching text
        assert rx.search(text)


def test_raising_standin_raises_what_the_tests_expect():
    t = {"m.py": Targets(names={"total"})}
    out = standins({"m.py": MOD}, t, raises=["ValueError('bad')"])
    new = out["raises:ValueError('bad')"]["m.py"]
    assert "    raise ValueError('bad')\n" in new and "n += x" not in new


FAMILY_CASES = [
    # (hidden tests per task, the families wanted)
    ({"a": {"1", "2", "3"}, "b": {"4", "5"}}, {"a": "a", "b": "b"}),
    # contained: the medium task inside the hard one (20 of 21 shared)
    ({"hard": {str(i) for i in range(21)}, "med": {str(i) for i in range(20)}},
     {"hard": "hard", "med": "hard"}),
    # Jaccard 2/4 = 0.5: one family; 1/3 < 0.5 and no containment: two
    ({"x": {"1", "2", "3"}, "y": {"2", "3", "4"}}, {"x": "x", "y": "x"}),
    ({"x": {"1", "2"}, "y": {"2", "3"}}, {"x": "x", "y": "y"}),
    # a chain is one family, named by its smallest id
    ({"c": {"1", "2"}, "b": {"2", "3", "1"}, "a": {"3", "4", "2"}, "z": set()},
     {"a": "a", "b": "a", "c": "a", "z": "z"}),
]


@pytest.mark.parametrize("tests,want", FAMILY_CASES)
def test_families(tests, want):
    assert families(tests) == want


def test_families_stay_within_a_repository():
    tests = {"r1-a": {"t::x", "t::y"}, "r2-a": {"t::x", "t::y"}}
    assert families(tests, {"r1-a": "r1", "r2-a": "r2"}) == {"r1-a": "r1-a", "r2-a": "r2-a"}
    assert families(tests) == {"r1-a": "r1-a", "r2-a": "r1-a"}
    assert not related(set(), {"a"}) and related({"a"}, {"a", "b", "c"})


# ---------------------------------------------------------------- the grading record

def _copy(file, func, kind, cls=()):
    from taskforge.grade.copies import TestCopy

    return TestCopy(file=file, cls=list(cls), func=func, kind=kind, site="", source="")


def test_unprotected_tests_are_the_ones_without_value_copies():
    from taskforge.grade.calibrate import Calibration
    from taskforge.orchestrate.settle import unprotected

    cal = Calibration(copies=[_copy("t.py", "test_a", "value"), _copy("t.py", "test_b", "negation"),
                         _copy("t.py", "test_c", "value", cls=["TestK"])])
    graded = ["t.py::test_a[1]", "t.py::test_a[2]", "t.py::test_b", "t.py::TestK::test_c",
              "t.py::test_c", "README.txt::README.txt"]
    # A negated copy does not protect (it stops blind forgers only); a doctest has none.
    assert unprotected(graded, cal) == ["README.txt::README.txt", "t.py::test_b", "t.py::test_c"]


def test_a_value_copy_that_only_negates_an_assertion_protects_nothing():
    """Red team of 2026-12-05 (8): a test whose every copy negated one of its
    assertions was written as protected, and a str subclass answering True to
    every `startswith` passed it (it fails `assert not X` as the gold does)."""
    from taskforge.grade.calibrate import Calibration
    from taskforge.orchestrate.settle import unprotected

    negated = _copy("t.py", "test_a", "value").model_copy(update={"site": "line 9: negated an assertion"})
    changed = _copy("t.py", "test_b", "value").model_copy(update={"site": "line 3: 'IV' -> 'IX'"})
    cal = Calibration(copies=[negated, changed])
    assert unprotected(["t.py::test_a", "t.py::test_b"], cal) == ["t.py::test_a"]


CODE = d('''
    def f(x):
        """Doc."""
        if x:
            return 1
        y = 2

        def inner():
            return 3
        return y
    ''')


def test_symbol_coverage_counts_statements_graded_tests_run():
    from taskforge.analysis.coverage_map import CoverageMap
    from taskforge.analysis.symbols import Symbol
    from taskforge.orchestrate.settle import statement_lines, symbol_coverage

    body = set(range(2, 10))
    # Statement lines: `if` 3, `return 1` 4, `y = 2` 5, `return 3` 8, `return y` 9; not the
    # docstring (2), the nested header (7) or the blank line (6).
    assert statement_lines(CODE, body) == {3, 4, 5, 8, 9}
    sym = Symbol(qualname="m.f", module="m", path="m.py", name="f", kind="function", cls=None,
                 start=1, end=9, body_lines=body)
    cov = CoverageMap({"m.py": {3: frozenset({"t::a", "t::b"}), 4: frozenset({"t::a"}),
                                5: frozenset({"t::b"}), 9: frozenset({"t::b"})}})
    [c] = symbol_coverage(cov, [sym], {"m.py": CODE}, graded={"t::a"})
    assert (c.qualname, c.statements, c.covered, c.tests, c.missed) == ("m.f", 5, 2, 1, [5, 8, 9])
    [c] = symbol_coverage(cov, [sym], {"m.py": CODE}, graded={"t::a", "t::b"})
    assert (c.covered, c.tests, c.missed) == (4, 2, [8])


def test_a_case_counts_the_coverage_and_age_of_its_arm_alone():
    """A case removes one arm (`if x: return 1`); the function around it stays,
    so the graded tests' coverage and the code's age are the arm's."""
    from taskforge.analysis.coverage_map import CoverageMap
    from taskforge.analysis.symbols import Symbol
    from taskforge.models import Removal
    from taskforge.orchestrate.settle import symbol_coverage
    from taskforge.propose.branches import Arm
    from taskforge.propose.features import Candidate, LineSpan

    sym = Symbol(qualname="m.f", module="m", path="m.py", name="f", kind="function", cls=None,
                 start=1, end=9, body_lines=set(range(2, 10)))
    cov = CoverageMap({"m.py": {3: frozenset({"t::a", "t::b"}), 4: frozenset({"t::a"}),
                                5: frozenset({"t::b"}), 9: frozenset({"t::b"})}})
    arm = Arm(line=4, end=4, when="x")
    [c] = symbol_coverage(cov, [sym], {"m.py": CODE}, graded={"t::a"}, arm=arm)
    assert (c.statements, c.covered, c.tests, c.missed) == (1, 1, 1, [])
    case = Candidate(name="m.f@4", kind="function", root=sym, symbols=[sym], removal=Removal.BRANCH, arm=arm)
    assert case.removed_spans() == [LineSpan("m.py", 4, 4)]
    whole = Candidate(name="m.f", kind="function", root=sym, symbols=[sym])
    assert whole.removed_spans() == [LineSpan("m.py", 1, 9)]
