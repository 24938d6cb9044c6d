"""Sealed expectations (taskforge/grade/seals.py, tf_guard.seal): which sites
are sealed, how values cross the pipe, and how the host decides; then a real
pytest run of a sealed file with the real plugin, where an object equal to
everything and a probe of pytest's items learn nothing and fail."""
from __future__ import annotations

import ast
import dataclasses
import datetime
import importlib.util
import json
import os
import re
import subprocess
import sys
import textwrap
import types
import unittest.mock
from collections import OrderedDict, UserDict, UserList, UserString, deque, namedtuple
from decimal import Decimal
from enum import IntEnum
from fractions import Fraction
from pathlib import Path

import pytest

from taskforge.grade.copies import Plan, find_def
from taskforge.grade.events import parse_events
from taskforge.grade.seals import (
    SEAL_CALL,
    SEAL_EQ,
    SEAL_MATCH,
    SEAL_RULES,
    SEARCH,
    SealPlan,
    matches,
    rows_unreported,
    seal_source,
    unsealed,
)

RUNTIME = Path(__file__).resolve().parent.parent / "taskforge" / "sandbox" / "runtime"
F = "tests/test_x.py"


def _guard():
    spec = importlib.util.spec_from_file_location("tf_guard_for_tests", RUNTIME / "tf_guard.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def seal(code: str, funcs: list[str]) -> tuple[str, SealPlan]:
    code = textwrap.dedent(code)
    targets = {(tuple(f.split("::")[:-1]), f.split("::")[-1]): f"{F}::{f}" for f in funcs}
    return seal_source(code, targets, find_def)


# ------------------------------------------------------------- which sites

REQ, OPT = "required", "optional"     # a seal every completed run reports, or one checked when it reports


@pytest.mark.parametrize("body, sealed", [
    ("assert f(1) == 14", REQ),
    ("assert 14 == f(1)", REQ),
    ("assert f(1) == -2.5", REQ),
    ("assert f(1) == {'a': (1, 2), 'b': {3}}", REQ),
    ("assert f(1) == 'IV', 'message kept'", REQ),
    ("assert f(1) == g(2)", None),                      # no literal: copies' business
    ("assert f(1) != 14", None),
    ("assert 1 == 1", None),                            # nothing of the solution's
    ("for x in (1, 2):\n        assert f(x) == 14", REQ),     # every element runs the body
    ("for x in ITEMS:\n        assert f(x) == 14", OPT),      # maybe no element at all
    ("for x in (1,):\n        if x:\n            continue\n        assert f(x) == 14", OPT),
    ("if c:\n        assert f(1) == 14", OPT),
    ("want = 14\n    assert f(1) == want", REQ),            # a local the test names
    ("want = 14\n    assert f(1) == want\n    assert g(1) == want", REQ),    # read twice, both sealed
    ("want = 14\n    assert f(1) == want\n    print(want)", None),        # read otherwise too
    ("want = 14\n    if c:\n        assert f(1) == want", None),          # no reached read
    ("for n, want in [(4, 14), (9, N)]:\n        assert f(n) == want", REQ),  # rows in a loop
    ("with ctx():\n        assert f(1) == 14", None),   # a context manager may swallow the AssertionError
    ("with open(p):\n        assert f(1) == 14", REQ),    # known not to swallow: its body runs through
    ("with open(p), ctx():\n        assert f(1) == 14", None),
    ("with ExitStack() as s:\n        assert f(1) == 14", None),      # a stack may hold a suppress
    ("with pytest.raises(AssertionError):\n        assert f(1) == 14", REQ),   # the class; the assert inside stays
    ("try:\n        assert f(1) == 14\n    except AssertionError:\n        pass", None),
    ("try:\n        pass\n    finally:\n        assert f(1) == 14", REQ),
    ("try:\n        g()\n    except KeyError:\n        pass\n    else:\n        assert f(1) == 14", OPT),
    ("assert f(1) == 14\n    return", REQ),            # before any return: always run
    ("if c:\n        return\n    assert f(1) == 14", OPT),   # after a return that may come first
    ("def helper():\n        return 1\n    assert f(1) == 14", REQ),   # a helper's return is not the test's
    # pure transforms of a literal, applied on the host
    ("assert f(1) == '  IV\\n'.strip()", REQ),
    ("assert f(1) == 'a b'.upper().split()", REQ),
    ("assert f(1) == sorted([3, 1])", REQ),
    ("assert f(1) == set([1])", REQ),
    ("assert f(1) == set([])", None),                   # set(): no literal to keep
    ("assert f(1) == g(2).strip()", None),
    ("assert f(1) == (14).strip()", None),              # the transform does not apply: as written
    ("want = ' x '\n    assert f(1) == want.strip()", REQ),
    ("want = ' x '\n    assert f(1) == want.strip()\n    assert g(1) == want", None),   # two transforms
    # pytest.raises(match=): the pattern searched on the host
    ("with pytest.raises(ValueError, match='out of range'):\n        f(0)", REQ),
    ("with pytest.raises(ValueError, match=r'^no (x|y)\\.$') as e:\n        f(0)\n    assert e.type", REQ),
    ("for x in ITEMS:\n        with pytest.raises(ValueError, match='bad'):\n            f(x)", OPT),
    ("with pytest.raises(ValueError, match='a.*b'):\n        f(0)", REQ),   # the class; an unbounded
    ("with pytest.raises(ValueError, match=MSG):\n        f(0)", REQ),      # or unknown pattern stays
    ("with pytest.raises(Unknown, match=MSG):\n        f(0)", None),
    ("with pytest.raises(ValueError):\n        f(0)", REQ),               # the class the test expects
    ("with pytest.raises(KeyboardInterrupt):\n        f(0)", None),      # not an Exception: as written
    ("with pytest.raises(Unknown):\n        f(0)", None),               # a name the module does not import
    ("try:\n        with pytest.raises(ValueError, match='x'):\n            f(0)\n"
     "    except AssertionError:\n        pass", None),
    # unittest's forms and the callable ones: class and pattern on the host
    ("pytest.raises(ValueError, f, 0)", REQ),
    ("self.assertRaises(ValueError, f, 0, key=1)", REQ),
    ("self.assertRaisesRegex(ValueError, 'bad', f,\n                           0)", REQ),
    ("with self.assertRaisesRegex(ValueError, 'bad') as cm:\n        f(0)\n    print(cm.exception)", REQ),
    ("with self.assertRaises(ValueError):\n        f(0)", REQ),
    ("np.testing.assert_raises(ValueError, f, x=1)", REQ),
    ("for x in ITEMS:\n        self.assertRaises(ValueError, f, x)", OPT),
    ("self.assertRaisesRegex(ValueError, 'a+', f, 0)", REQ),       # the class; the pattern stays
    ("self.assertRaisesRegex(ValueError, MSG, f, 0)", REQ),
    ("self.assertRaisesRegex(Unknown, MSG, f, 0)", None),
    ("self.assertRaises(Unknown, f, 0)", None),
    ("pytest.raises(ValueError, *args)", None),                    # which is the callable: unknown
    ("with self.assertRaises(ValueError, msg='m'):\n        f(0)", None),
    ("if c: self.assertRaises(ValueError, f, 0)", None),          # not first on its line
])
def test_which_equalities_are_sealed(body, sealed):
    out, plan = seal(f"def test_a():\n    {body}\n", ["test_a"])
    token = out.replace(SEAL_EQ, "")               # seal_eq keeps no expectation of its own
    assert (SEAL_CALL in token or SEAL_MATCH in token) is (sealed is not None), out
    assert bool(plan.expected) is (sealed is not None)
    assert bool(plan.required.get(f"{F}::test_a")) is (sealed == REQ), plan
    if sealed:
        tok, lit = next(iter(plan.expected.items()))
        bare = re.sub(r"t[0-9a-f]{16}", "TOKEN", out.replace("'message kept'", ""))
        assert lit not in bare, "the expected value stays out of the file"
    if sealed == REQ:
        assert plan.required[f"{F}::test_a"] == set(plan.expected)
    ast.parse(out)


DEDENTED = '''import textwrap
def test_a():
    assert f() == textwrap.dedent("""
        a
          b
    """)
'''


@pytest.mark.parametrize("code, want", [
    (DEDENTED, repr("\na\n  b\n")),
    ("from textwrap import dedent as dd\ndef test_a():\n    assert f() == dd('  a\\n  b').strip()\n", repr("a\nb")),
    ("def test_a():\n    assert f() == dedent('  a')\n", None),            # not textwrap's: as written
    ("def sorted(x):\n    return x\ndef test_a():\n    assert f() == sorted([2, 1])\n", None),   # rebound
    ("import pytest\n@pytest.mark.parametrize('x, want', [(1, ' a '), (2, ' b ')])\n"
     "def test_a(x, want):\n    assert f(x) == want.strip()\n", "'a'"),
    ("import pytest\n@pytest.mark.parametrize('x, want', [(1, ' a '), pytest.param(2, ' b\\n'.upper(), id='b')])\n"
     "def test_a(x, want):\n    assert f(x) == want.strip()\n", "'B'"),         # a transformed cell
    ("def test_a():\n    assert f() == ('a'\n               'b')\n", "('a'\n               'b'\n)"),   # over lines
    ("import pytest\n@pytest.mark.parametrize('x, want', [(1, ' a '), (2, B)])\n"
     "def test_a(x, want):\n    assert f(x) == want.strip()\n", None),     # a computed cell: untransformable
])
def test_transformed_expectations_keep_the_value_the_test_compares_with(code, want):
    out, plan = seal_source(code, {((), "test_a"): f"{F}::test_a"}, find_def)
    if want is None:
        assert SEAL_CALL not in out.replace(SEAL_EQ, ""), out
        return
    assert SEAL_CALL in out and want in plan.expected.values(), plan.expected
    ast.parse(out)


def test_raised_class_sealing_keeps_what_the_test_named():
    from taskforge.grade.seals import SEAL_RAISED
    out, plan = seal("""
        import pytest
        from mylib import errors as E
        from mylib.errors import ParseError
        from .sibling import Local
        import mylib
        class Mine(Exception):
            pass
        def test_a():
            with pytest.raises(ParseError) as e:
                f(2)
            with pytest.raises((E.Oops, mylib.Boom, Local)):
                f(3)
            with pytest.raises(Mine):
                f(4)
            assert e.value.args
    """, ["test_a"])
    assert out.count(SEAL_RAISED) == 3 and "ParseError)" not in out, out
    assert sorted(plan.expected.values()) == [
        "bool True", "raised ['E.Oops', 'mylib.Boom', 'Local']", "raised ['Mine']", "raised ['ParseError']"]
    # every class seal of the file resolves the same names: which one a site
    # (or a copy of it) expects is not in the file
    assert out.count("globals(), ('E.Oops', 'Local', 'Mine', 'ParseError', 'mylib.Boom'))") == 3, out


@pytest.mark.parametrize("reported, want, ok", [
    (["ParseError", "ValueError"], ["ParseError"], True),
    (["ValueError"], ["ParseError"], False),
    (["E.Oops"], ["ParseError", "E.Oops"], True),                   # a tuple: any of them
    ([], ["ValueError"], False),
    (["x"] * 65, ["x"], False),                                     # more than a module names
    ("ValueError", ["ValueError"], False),                          # not a list
    ([1], ["ValueError"], False),
])
def test_a_raised_class_on_the_host(reported, want, ok):
    from taskforge.grade.seals import RAISED
    g = _guard()
    assert matches(g._dumps(g._plain(reported)), RAISED + repr(want)) is ok


@pytest.mark.parametrize("text, pattern, found", [
    ("0 is out of range", "out of range", True),
    ("0 is in range", "out of range", False),
    ("no x.", r"^no (x|y)\.$", True),
    ("no z.", r"^no (x|y)\.$", False),
    (123, "123", False),                                   # not text
    ("a" * 20_000 + " out of range", "out of range", True),            # a message with a large repr in it
    ("a" * (200 * 1024 + 1) + " out of range", "out of range", False),  # past what a report carries
    ("aab", "a.*b", False),                                # a repeat: never searched on the host
    ("a" * 30, "(a|aa){1,25}b", False),                    # bounded, yet nested: exponential backtracking
])
def test_a_sealed_pattern_is_searched_in_the_reported_text(text, pattern, found):
    g = _guard()
    encoded = g._dumps(g._plain(text))
    assert matches(encoded, SEARCH + repr(pattern)) is found


@pytest.mark.parametrize("pattern, plain", [
    ("out of range", True), (r"^no (x|y)\.$", True), (r"[0-9]\.[0-9]", True),
    ("a.*b", False), (r"\d+", False), ("x?", False), (r"(\w{1,10}\s?){1,20}!", False),
    (r"(a)\1", False), ("x" * 600, False), ("(", False),
])
def test_which_patterns_the_host_searches(pattern, plain):
    from taskforge.grade.seals import plain_pattern
    assert plain_pattern(pattern) is plain


@pytest.mark.parametrize("value", [{"f": "0x1p99999"}, {"i": "9" * 6000}, {"l": [{"f": "zz"}]}, [1], "x",
                                   {"S": [{"i": str(k * (2 ** 61 - 1))} for k in range(1025)]}])
def test_a_malformed_report_is_a_wrong_value_never_a_crash(value):
    """A report the host cannot decode fails its test (red team of 2026-12-05:
    an overflowing float on a match token made verify die with no result)."""
    assert matches(json.dumps(value), SEARCH + repr("x")) is False
    assert matches(json.dumps(value), "14") is False
    assert matches(json.dumps(value), "bool True") is False


def test_a_match_token_reported_too_often_fails():
    plan = SealPlan(expected={"t" + "1" * 16: SEARCH + repr("x")}, required={"f.py::test_a": {"t" + "1" * 16}})
    one = ("t" + "1" * 16, json.dumps({"s": "x"}))
    assert not unsealed({"f.py::test_a": "passed"}, {"f.py::test_a": [one] * 100}, plan)
    assert unsealed({"f.py::test_a": "passed"}, {"f.py::test_a": [one] * 101}, plan) == {"f.py::test_a"}


def test_assert_equal_with_a_message_is_sealed():
    out, plan = seal("""
        import unittest
        class T(unittest.TestCase):
            def test_a(self):
                self.assertEqual(f(1), 14, "one")
                self.assertEqual(f(2), 15, msg="two")
        """, ["T::test_a"])
    assert out.count("self.assertTrue(" + SEAL_CALL) == 2 and sorted(plan.expected.values()) == ["14", "15"], out


def test_unittest_assert_equal_and_methods_of_classes():
    out, plan = seal('''
        class TestT(unittest.TestCase):
            def test_a(self):
                self.assertEqual(f(2), "II")
                self.assertEqual(f(2), g(2))
    ''', ["TestT::test_a"])
    assert f'self.assertTrue({SEAL_CALL}((f(2)), ' in out and '"II"' not in out
    assert f"self.assertTrue({SEAL_EQ}((f(2)), (g(2)), 3))" in out     # computed: compared in the sandbox
    assert set(plan.required) == {f"{F}::TestT::test_a"}


TABLE = '''
    @pytest.mark.parametrize("n, want", [(4, "IV"), (9, "IX"), (math.nan, "N")])
    def test_r(n, want):
        assert f(n) == want
'''


def test_a_parametrize_column_becomes_tokens_its_ids_mapped_back():
    """pytest makes the row's id of the token in place of the value's part;
    the other cells keep theirs (math.nan is not a literal: pytest's own id)."""
    out, plan = seal(TABLE, ["test_r"])
    assert '"IV"' not in out and '"IX"' not in out and "(4, 't" in out and "math.nan, 't" in out
    parts = plan.parts[f"{F}::test_r"]
    assert sorted(parts.values()) == ["IV", "IX", "N"]
    p = Plan(seals=plan)
    tok = next(t for t, v in parts.items() if v == "IV")
    assert p.original_id(f"{F}::test_r[4-{tok}]") == f"{F}::test_r[4-IV]"
    assert plan.row_tokens(f"{F}::test_r", f"[4-{tok}]") == {tok}
    assert plan.expected[tok] == '"IV"'


def test_rows_with_ids_of_their_own_get_random_ones():
    out, plan = seal('''
        @pytest.mark.parametrize("n, want", [(4, "IV"), pytest.param(9, "IX", id="nine")], ids=["four", "x"])
        def test_r(n, want):
            assert f(n) == want
    ''', ["test_r"])
    assert '"four"' not in out and '"nine"' not in out and '"IV"' not in out, out
    rows = plan.rows[f"{F}::test_r"]
    assert sorted(old for old, _ in rows.values()) == ["[four]", "[nine]"]
    p = Plan(seals=plan)
    new = next(k for k, (old, _) in rows.items() if old == "[nine]")
    assert p.original_id(f"{F}::test_r{new}") == f"{F}::test_r[nine]"
    (tok,) = rows[new][1]
    assert plan.expected[tok] == '"IX"'


@pytest.mark.parametrize("code", [
    TABLE.replace("assert f(n) == want", "assert f(n) == want and len(want)"),       # used twice
    TABLE.replace("[(4,", "ROWS + [(4,"),                                            # not written out
    TABLE.replace(")])", ")], ids=lambda v: v)"),                                    # ids of a function
    TABLE.replace(")])", ")], indirect=True)"),
])
def test_tables_left_alone(code):
    out, plan = seal(code, ["test_r"])
    assert not plan.parts and not plan.rows and '"IV"' in out


# ------------------------------------------------------------- values across the pipe

Point = namedtuple("Point", "x y")


class Level(IntEnum):
    HIGH = 3


class Always:
    def __eq__(self, other):
        return True


class Text:
    def __init__(self, text):
        self.text = text

    def __str__(self):
        return self.text


class Numeral:
    def __init__(self, n):
        self.n = n

    def __eq__(self, other):
        return other == self.n

    __hash__ = None


class MyStr(str):
    def __eq__(self, other):
        return True

    __hash__ = str.__hash__


@pytest.mark.parametrize("value, literal, same", [
    (14, "14", True), (14, "15", False), (True, "1", True), (0.5, "0.5", True),
    (float("nan"), "0.0", False), ("IV", "'IV'", True), (b"x", "b'x'", True),
    (Point(1, 2), "(1, 2)", True), ([1, 2], "(1, 2)", False), (Level.HIGH, "3", True),
    (OrderedDict(a=1), "{'a': 1}", True), ({1, 2}, "{2, 1}", True), (1 + 2j, "1+2j", True),
    (Always(), "'IV'", False),                   # equal to everything: equal to nothing
    (Text("IV"), "'IV'", False),                 # an object of its own: not equal (Python: not either)
    (deque([1, 2]), "[1, 2]", False), (range(2), "[0, 1]", False),   # Python: not equal either
    (Path("a"), "'a'", False), (Decimal("0.1"), "0.1", False), (Fraction(1, 10), "0.1", False),
    (Numeral(4), "4", False),                    # equal by its own __eq__: the gold decides (unsealed)
    (UserList([1, 2]), "[1, 2]", True), (UserList([1, 2]), "(1, 2)", False),
    # honest types of the red team of 2026-12-05 (each scored 0 before)
    (dict.fromkeys("ab").keys(), "{'a', 'b'}", True), (UserString("IV"), "'IV'", True),
    (memoryview(b"xy"), "b'xy'", True), ({"a": 1}.items(), "{('a', 1)}", True),
    (Decimal(10**20 + 1), str(10**20 + 1), True), (Fraction(10**20 + 1), str(10**20 + 1), True),
    (Decimal("2.5"), "2.5", True), (Fraction(1, 4), "0.25", True),
    (MyStr("no"), "'IV'", False),                # its own data, not its __eq__
    (MyStr("IV"), "'IV'", True),
])
def test_values_cross_as_plain_data(value, literal, same):
    guard = _guard()
    try:
        encoded = guard._dumps(guard._plain(value))
    except Exception:
        encoded = None
    assert matches(encoded, literal) is same


# ------------------------------------------------------------- the host's decision

T1, T2 = "t" + "1" * 16, "t" + "2" * 16


def _plan() -> SealPlan:
    return SealPlan(expected={T1: "14", T2: "'IV'"}, required={f"{F}::test_a": {T1}},
                    parts={f"{F}::test_r": {T2: "IV"}})


@pytest.mark.parametrize("nid, outcome, records, failed", [
    (f"{F}::test_a", "passed", [(T1, '{"i": "14"}')], False),
    (f"{F}::test_a", "passed", [], True),                                    # the seal never reported
    (f"{F}::test_a", "passed", [(T1, '{"i": "15"}')], True),
    (f"{F}::test_a", "passed", [(T1, '{"i": "14"}'), (T1, '{"i": "15"}')], True),   # a guess too
    (f"{F}::test_a", "passed", [(T1, '{"i": "14"}'), ("zz", '{"i": "1"}')], True),  # no such token
    (f"{F}::test_a", "passed", [(T1, None)], True),                          # not plain data
    (f"{F}::test_a", "failed", [], False),                                   # failed already
    (f"{F}::test_r[4-{T2}]", "passed", [(T2, '{"s": "IV"}')], False),
    (f"{F}::test_r[4-{T2}]", "passed", [], True),                           # its row's seal unreported
    (f"{F}::test_r[4-{T2}]", "passed", [(T1, '{"i": "14"}')], True),        # another token only
    (f"{F}::test_b", "passed", [], False),                                   # nothing sealed
    (f"{F}::test_b", "passed", [(T1, '{"i": "14"}')], False),
])
def test_the_host_decides(nid, outcome, records, failed):
    assert (nid in unsealed({nid: outcome}, {nid: records}, _plan())) is failed


def test_seal_records_belong_to_the_test_that_ran():
    lines = [{"$report_type": "SessionStart", "pid": 1},
             {"$report_type": "Seal", "token": "t0", "value": None},          # before any test: dropped
             {"$report_type": "TestReport", "nodeid": "a", "when": "setup", "outcome": "passed"},
             {"$report_type": "Seal", "token": "t1", "value": '{"i": "14"}'},
             {"$report_type": "TestReport", "nodeid": "a", "when": "call", "outcome": "passed"},
             {"$report_type": "TestReport", "nodeid": "a", "when": "teardown", "outcome": "passed"},
             {"$report_type": "Seal", "token": "t2", "value": None},          # between tests: dropped
             {"$report_type": "SessionFinish", "exitstatus": 0}]
    parsed = parse_events("\n".join(json.dumps(x) for x in lines))
    assert parsed.seals == {"a": [("t1", '{"i": "14"}')]} and not parsed.problems


# ------------------------------------------------------------- a real pytest run

def _run_sealed(tmp_path: Path, impl: str, rows: list | None = None,
                sealing: bool = True, code: str | None = None,
                rules: int = SEAL_RULES) -> tuple[dict[str, str], set[str]]:
    """A sealed test file (`sealing` False: as written; `code`: another file,
    every test in it graded) run by pytest with the real tf_guard plugin; the
    outcomes pytest reported and those that fail their seals."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "pkg.py").write_text(textwrap.dedent(impl))
    if code is not None:
        code = textwrap.dedent(code)
        tree = ast.parse(code)
        targets = {(tuple(c.name for c in [n] if isinstance(n, ast.ClassDef)), f.name):
                   "test_x.py::" + "::".join([*([n.name] if isinstance(n, ast.ClassDef) else []), f.name])
                   for n in tree.body for f in ([n] if isinstance(n, ast.FunctionDef) else getattr(n, "body", []))
                   if isinstance(f, ast.FunctionDef) and f.name.startswith("test")}
        return _pytest_sealed(tmp_path, code, targets, sealing, rows, rules=rules)
    code = textwrap.dedent('''
        import pytest
        from pkg import to_roman

        @pytest.mark.parametrize("n, want", [(4, "IV"), pytest.param(9, "IX", id="nine"),
                                             (int("40"), "XL")])
        def test_r(n, want):
            assert to_roman(n) == want

        def test_one():
            assert to_roman(1) == "I"

        def test_loop():
            for n, want in [(4, "IV"), (int("9"), "IX")]:
                assert to_roman(n) == want

        def test_local():
            want = "IV"
            assert to_roman(4) == want

        @pytest.mark.parametrize("n, parts", [(12, ["X", "I", "I"]), (4, ["I", "V"])])
        def test_parts(n, parts):
            assert list(to_roman(n)) == parts

        @pytest.mark.parametrize("n, want", [(4, " IV "), pytest.param(9, """
            IX
        """.strip(), id="nine")])
        def test_stripped(n, want):
            assert to_roman(n) == want.strip()

        def test_checked_when_reached():
            for n in [int(c) for c in "4"]:
                assert to_roman(n) == "IV"

        def test_raises():
            with pytest.raises(ValueError, match="out of range"):
                to_roman(0)

        def test_points():
            assert to_roman(4)
            assert not to_roman(9).islower()
            assert to_roman(40) is not None
    ''')
    targets = {((), n): f"test_x.py::{n}" for n in ("test_r", "test_one", "test_loop", "test_local",
                                                    "test_parts", "test_stripped", "test_checked_when_reached",
                                                    "test_raises", "test_points")}
    return _pytest_sealed(tmp_path, code, targets, sealing, rows)


def _pytest_sealed(tmp_path: Path, code: str, targets: dict, sealing: bool,
                   rows: list | None, suffixes: dict | None = None,
                   monitor: list | None = None, rules: int = SEAL_RULES) -> tuple[dict[str, str], set[str]]:
    sealed, plan = seal_source(code, targets if sealing else {}, find_def, suffixes, rules)
    (tmp_path / "test_x.py").write_text(sealed)
    r, w = os.pipe()
    env = {**os.environ, "TF_RESULT_FD": str(w), "PYTHONPATH": f"{RUNTIME}{os.pathsep}{tmp_path}"}
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "tf_guard", "-p", "no:cacheprovider",
                             "test_x.py"], cwd=tmp_path, env=env, pass_fds=(w,),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(w)
    with os.fdopen(r) as fh:
        text = fh.read()
    proc.wait(timeout=120)
    parsed = parse_events(text)
    if monitor is not None:
        monitor += parsed.monitor
    p = Plan(seals=plan)
    if rows is not None:
        rows += rows_unreported(parsed.outcomes, plan)
    return ({p.original_id(k): v for k, v in parsed.outcomes.items()},
            {p.original_id(k) for k in unsealed(parsed.outcomes, parsed.seals, plan)})


RIGHT = '''
def to_roman(n):
    if n == 0:
        raise ValueError("0 is out of range")
    return {1: "I", 4: "IV", 9: "IX", 12: "XII", 40: "XL"}[n]
'''
ALWAYS_EQUAL = '''
class _Any(str):
    def __eq__(self, other):
        return True
    __hash__ = str.__hash__

def to_roman(n):
    if n == 0:
        raise ValueError(_Any("?"))
    return _Any("?")
'''
# pytest's session is reachable from its rewriting hook in sys.meta_path: the
# items' parameters are what a probe reads (review of 2026-12-04).
ITEM_PROBE = '''
import sys

def to_roman(n):
    for hook in sys.meta_path:
        for item in getattr(getattr(hook, "session", None), "items", None) or []:
            params = dict(getattr(getattr(item, "callspec", None), "params", None) or {})
            if params.get("n") == n:
                return params["want"]
    return "I"
'''

# Reads the expected literals from the test file itself: where an equality is
# sealed there is none to read.
SOURCE_READER = '''
import re, sys

def to_roman(n):
    path = sys._getframe(1).f_code.co_filename
    text = open(path).read()
    if n == 0:
        m = re.search(r'match="([^"]+)"', text)
        k = re.search(r'raises\\((\\w+)', text)
        raise getattr(__import__("builtins"), k.group(1) if k else "RuntimeError")(m.group(1) if m else "?")
    if n == 4:
        for m in re.finditer(r'to_roman\\(n\\) == "([IVX]+)"|\\(4, " (IV) "\\)', text):
            return m.group(1) or m.group(2)
    return {1: "I", 9: "IX", 12: "XII", 40: "XL"}.get(n, "?")
'''


def test_a_source_reader_wins_unsealed_and_loses_sealed(tmp_path):
    reached_later = {"test_x.py::test_checked_when_reached", "test_x.py::test_stripped[4- IV ]",
                     "test_x.py::test_raises"}
    outcomes, failed = _run_sealed(tmp_path / "plain", SOURCE_READER, sealing=False)
    assert all(outcomes[k] == "passed" for k in reached_later) and not failed, outcomes
    outcomes, failed = _run_sealed(tmp_path / "sealed", SOURCE_READER)
    assert reached_later <= failed, (outcomes, failed)
    outcomes, failed = _run_sealed(tmp_path / "honest", RIGHT)
    assert not failed and set(outcomes.values()) == {"passed"}


def test_a_right_answer_passes_its_seals(tmp_path):
    outcomes, failed = _run_sealed(tmp_path, RIGHT)
    assert outcomes == {"test_x.py::test_r[4-IV]": "passed", "test_x.py::test_r[nine]": "passed",
                        "test_x.py::test_r[40-XL]": "passed", "test_x.py::test_one": "passed",
                        "test_x.py::test_loop": "passed", "test_x.py::test_local": "passed",
                        "test_x.py::test_parts[12-parts0]": "passed", "test_x.py::test_parts[4-parts1]": "passed",
                        "test_x.py::test_stripped[4- IV ]": "passed", "test_x.py::test_stripped[nine]": "passed",
                        "test_x.py::test_checked_when_reached": "passed", "test_x.py::test_raises": "passed",
                        "test_x.py::test_points": "passed"}
    assert not failed


# Equal ids pytest numbers apart ("nan-NaN0", "nan-NaN1": humanize's
# test_apnumber); sealed, the rows differ in their tokens and would lose the
# number, so the final check left such tests unsealed.
NUMBERED = '''
import math
import pytest
from pkg import to_roman

@pytest.mark.parametrize("n, want", [(4, "IV"), ("4", "IV"), [9, "IX"], pytest.param(math.nan, "?"),
                                     (float("nan"), "?"), (1, "I")])
def test_dup(n, want):
    assert to_roman(n) == want
'''
SPELLED = '''
def to_roman(n):
    return {"4": "IV", 4: "IV", 9: "IX", 1: "I"}.get(n, "?")
'''


def test_rows_pytest_numbered_apart_keep_their_ids_sealed(tmp_path):
    (tmp_path / "pkg.py").write_text(SPELLED)
    (tmp_path / "test_x.py").write_text(NUMBERED)
    listed = subprocess.run([sys.executable, "-m", "pytest", "-q", "--collect-only", "-p", "no:cacheprovider",
                             "test_x.py"], cwd=tmp_path, capture_output=True, text=True).stdout
    ids = [x for x in listed.splitlines() if x.startswith("test_x.py::")]
    assert "test_x.py::test_dup[4-IV0]" in ids and "test_x.py::test_dup[nan-?1]" in ids, ids
    from taskforge.grade.seals import id_suffixes
    targets = {((), "test_dup"): "test_x.py::test_dup"}
    out, plan = seal_source(NUMBERED, targets, find_def, id_suffixes(ids))
    assert sorted(old for old, _ in plan.rows["test_x.py::test_dup"].values()) == \
        ["[4-IV0]", "[4-IV1]", "[nan-?0]", "[nan-?1]"]
    assert '"IV"' not in out and '"?"' not in out, out
    outcomes, failed = _pytest_sealed(tmp_path, NUMBERED, targets, True, None, id_suffixes(ids))
    assert sorted(outcomes) == sorted(ids) and set(outcomes.values()) == {"passed"} and not failed, outcomes
    wrong = SPELLED.replace('"4": "IV"', '"4": "VI"')
    (tmp_path / "pkg.py").write_text(wrong)
    outcomes, failed = _pytest_sealed(tmp_path, NUMBERED, targets, True, None, id_suffixes(ids))
    assert failed == {"test_x.py::test_dup[4-IV1]"}, (outcomes, failed)


# Red team of 2026-12-05 (5): a class seal compared names (the last one and
# the top-level package), so an unrelated class of that name passed and an
# honest alias (`Public = _Impl`) failed. It now reports which of the file's
# exception names, resolved as the test resolves them, are in the real MRO.
CLASS_FORMS = '''
import unittest
import pytest
import pkg
from pkg import OutOfRange, to_roman

def test_raises():
    with pytest.raises(OutOfRange):
        to_roman(0)

def test_raises_module_attribute():
    pytest.raises(pkg.OutOfRange, lambda: to_roman(0))

class TestUnit(unittest.TestCase):
    def test_class(self):
        self.assertRaises(OutOfRange, to_roman, 0)

    def test_other(self):
        self.assertRaises(KeyError, to_roman, -1)
'''
ALIASED = '''
class _RangeError(ValueError):
    pass

OutOfRange = _RangeError

def to_roman(n):
    if n == 0:
        raise OutOfRange("0 is out of range")
    if n < 0:
        raise KeyError(n)
    return "I"
'''
SAME_NAME = ALIASED.replace('raise OutOfRange("0 is out of range")', 'raise _Other.OutOfRange("0")') + '''

class _Other:
    class OutOfRange(Exception):
        pass
'''
# Raises the class the test expects, rebinding the test module's name to it
# while the test runs: the unsealed test would resolve it the same way.
PATCHED_RAISES = ALIASED.replace('def to_roman(n):', '''import sys

class _Lenient:
    def __init__(self, *a, **k):
        pass
    def __enter__(self):
        return self
    def __exit__(self, *exc):
        self.value = self.exception = KeyError("?")
        return True

sys.modules["py" + "test"].raises = _Lenient

def to_roman(n):
    return "I"

def _unused(n):''')


def test_a_class_seal_resolves_names_as_the_test_does(tmp_path):
    outcomes, failed = _run_sealed(tmp_path / "alias", ALIASED, code=CLASS_FORMS)
    assert set(outcomes.values()) == {"passed"} and len(outcomes) == 4 and not failed, (outcomes, failed)
    outcomes, failed = _run_sealed(tmp_path / "plain", SAME_NAME, sealing=False, code=CLASS_FORMS)
    assert {k for k, v in outcomes.items() if v != "passed"} == {
        "test_x.py::test_raises", "test_x.py::test_raises_module_attribute", "test_x.py::TestUnit::test_class"}
    outcomes, failed = _run_sealed(tmp_path / "sealed", SAME_NAME, code=CLASS_FORMS)
    assert failed | {k for k, v in outcomes.items() if v != "passed"} == {
        "test_x.py::test_raises", "test_x.py::test_raises_module_attribute", "test_x.py::TestUnit::test_class"}


def test_replacing_what_the_planted_tests_expect_exceptions_with_is_flagged(tmp_path):
    """pytest.raises is a module attribute: set with no audit event. The
    planted tests use it (and unittest's contexts), and tf_guard checks their
    identities at every report."""
    (tmp_path / "pkg.py").write_text(PATCHED_RAISES)
    code = textwrap.dedent(CLASS_FORMS)
    tree = ast.parse(code)
    targets = {((), f.name): f"test_x.py::{f.name}" for f in tree.body if isinstance(f, ast.FunctionDef)}
    monitor: list = []
    outcomes, failed = _pytest_sealed(tmp_path, code, targets, True, None, monitor=monitor)
    assert outcomes["test_x.py::test_raises"] == "passed", "pytest alone: the replaced raises let it through"
    assert "test_x.py::test_raises" in failed, "the class seal: KeyError is not OutOfRange"
    assert any(m.kind == "runner-patched" and m.site == "pytest.raises" for m in monitor), monitor


# Red team of 2026-12-05 (6): an equality with a computed expectation is not
# sealed, and the test's copies changed other sites; a datetime subclass equal
# to every date passed it.
COMPUTED = '''
import datetime
import unittest
from pkg import deadline

def test_deadline():
    assert deadline("2030-01-02") == datetime.datetime(2030, 1, 2)

class TestUnit(unittest.TestCase):
    def test_deadline(self):
        self.assertEqual(datetime.datetime(2031, 5, 6), deadline("2031-05-06"))
'''
DEADLINE = '''
import datetime

def deadline(text):
    return datetime.datetime.strptime(text, "%Y-%m-%d")
'''
EQUAL_TO_EVERY_DATE = '''
import datetime

class _Far(datetime.datetime):
    def __eq__(self, other):
        return isinstance(other, datetime.date)
    __hash__ = datetime.datetime.__hash__

def deadline(text):
    return _Far(9999, 12, 31)
'''


class _Sibling(datetime.datetime):
    pass


class _EveryDate(datetime.datetime):
    def __eq__(self, other):
        return isinstance(other, datetime.date)
    __hash__ = datetime.datetime.__hash__


@dataclasses.dataclass(frozen=True)
class _Cents:
    n: int


class _EveryCents(_Cents):
    def __eq__(self, other):
        return isinstance(other, _Cents)
    __hash__ = _Cents.__hash__


@pytest.mark.parametrize("left, right, equal", [
    (datetime.datetime(2030, 1, 2), datetime.datetime(2030, 1, 2), True),
    (1, 1.0, True),                                        # unrelated classes: their own ==
    (True, 1, True),                                       # bool derives from int: int's == agrees
    ({"a": 1}, OrderedDict(a=1), True),                    # dict's == for an OrderedDict
    (1, 2, False),
    (_Sibling(2030, 1, 2), _EveryDate(9999, 12, 31), False),  # a mocked datetime against one equal to all
    (_Sibling(2030, 1, 2), datetime.datetime(2030, 1, 2), True),
    (_Cents(5), _EveryCents(7), False),                     # a dataclass: NotImplemented for another class
    (_Cents(5), _Cents(5), True),
])
def test_an_equality_with_a_computed_expectation(left, right, equal):
    g = _guard()
    assert bool(g.seal_eq(left, right)) is equal and bool(g.seal_eq(right, left)) is equal


def test_an_object_of_a_subclass_equal_to_everything_fails_a_computed_equality(tmp_path):
    outcomes, failed = _run_sealed(tmp_path / "plain", EQUAL_TO_EVERY_DATE, sealing=False, code=COMPUTED)
    assert set(outcomes.values()) == {"passed"} and len(outcomes) == 2, outcomes
    outcomes, failed = _run_sealed(tmp_path / "sealed", EQUAL_TO_EVERY_DATE, code=COMPUTED)
    assert set(outcomes.values()) == {"failed"} and len(outcomes) == 2, outcomes
    outcomes, failed = _run_sealed(tmp_path / "honest", DEADLINE, code=COMPUTED)
    assert set(outcomes.values()) == {"passed"} and len(outcomes) == 2 and not failed, outcomes


class _Anything:
    """Equal to everything, of no class the test knows."""
    def __eq__(self, other):
        return True
    __hash__ = object.__hash__


class _PosingAsInt(type):
    """A metaclass making its classes hash and compare equal to `int`."""
    def __eq__(cls, other):
        return other is int or type.__eq__(cls, other)
    __hash__ = lambda cls: hash(int)  # noqa: E731


class _IntLike(metaclass=_PosingAsInt):
    def __eq__(self, other):
        return True
    __hash__ = object.__hash__


@pytest.mark.parametrize("left, right, equal", [
    (_Anything(), datetime.datetime(2030, 1, 2), False),   # nothing shared but object: unequal
    ([_IntLike()], [3], False),                            # builtin data is told by identity, not a type's ==
    ([_Anything()], [datetime.datetime(2030, 1, 2)], False),   # ... inside a list
    ({"due": _Anything()}, {"due": _Cents(3)}, False),      # ... a dict's value
    ((1, _Anything()), (1, _Cents(3)), False),
    (True, 1, True),                                       # plain data: judged by value
    (Decimal("1.5"), 1.5, True),
    (Fraction(1, 2), 0.5, True),
    ([1, 2], [1, 2.0], True),
    ({1, 2}, frozenset({1, 2}), True),
    ([_Cents(1), "x"], [_Cents(1), "x"], True),             # one class decides for both, as in the test
    (unittest.mock.ANY, 3, False),
])
def test_a_computed_equality_judged_leaf_by_leaf(left, right, equal):
    """Rules 3: what a test's `==` lets one side decide alone (an unrelated
    class's `__eq__` answering for both, inside a container too) is judged
    by value where both sides are plain data and is unequal where the classes
    share nothing; rules 2 (tasks written before) let the object decide."""
    g = _guard()
    assert bool(g.seal_eq(left, right, 3)) is equal and bool(g.seal_eq(right, left, 3)) is equal
    assert g.seal_eq(left, right) and g.seal_eq(right, left)


@pytest.mark.parametrize("actual, want, equal", [
    (0.1 + 0.2, pytest.approx(0.3), True),
    ([0.1 + 0.2, 1], pytest.approx([0.3, 1]), True),
    ({"a": 1.0000001}, pytest.approx({"a": 1}), True),
    (0.5, pytest.approx(0.3), False),
    (_Anything(), pytest.approx(0.3), False),                # the actual must be plain data
    (pytest.approx(0, abs=float("inf")), 0.3, False),       # an approx as the actual: any tolerance it likes
    (0.3, pytest.approx([_Anything()]), False),              # the expectation must be plain data too
])
def test_an_approx_expectation_is_trusted_on_the_tests_side_only(actual, want, equal):
    assert bool(_guard().seal_eq(actual, want, 3)) is equal


ANYTHING = '''
class _Anything:
    def __eq__(self, other):
        return True
    __hash__ = object.__hash__

def deadline(text):
    return _Anything()

def rate(text):
    return [_Anything()]
'''
DEADLINE_AND_RATE = DEADLINE + '''
def rate(text):
    return [float(text) / 100]
'''
COMPUTED_AND_APPROX = COMPUTED + '''
import pytest
from pkg import rate

def test_rate():
    assert rate("12.5") == [pytest.approx(0.125)]

def test_rate_reversed():
    assert pytest.approx([0.125]) == rate("12.5")
'''


def test_an_object_of_an_unrelated_class_equal_to_everything_fails_a_computed_equality(tmp_path):
    """Red team of 2026-12-05 (7): an object of its own class equal to
    everything scored 1 at computed equalities no copy changed, on both
    backends. Under the rules before (2) it passes every such test; under 3
    none, and the honest twin passes all."""
    outcomes, failed = _run_sealed(tmp_path / "old", ANYTHING, code=COMPUTED_AND_APPROX, rules=2)
    assert set(outcomes.values()) == {"passed"} and len(outcomes) == 4 and not failed, outcomes
    outcomes, failed = _run_sealed(tmp_path / "sealed", ANYTHING, code=COMPUTED_AND_APPROX)
    assert set(outcomes.values()) == {"failed"} and len(outcomes) == 4, outcomes
    outcomes, failed = _run_sealed(tmp_path / "honest", DEADLINE_AND_RATE, code=COMPUTED_AND_APPROX)
    assert set(outcomes.values()) == {"passed"} and len(outcomes) == 4 and not failed, outcomes


@dataclasses.dataclass
class _Money:
    amount: int
    currency: str = "EUR"


class _Mimic(_Money):
    """Learns the amount it is compared with, then says it is a _Money
    holding it (red team of 2026-12-05, 8, on a ledger statement)."""
    def __init__(self):
        self.amount, self.currency = -1, "?"

    @property
    def __class__(self):
        return _Money

    def __eq__(self, other):
        self.amount, self.currency = other.amount, other.currency
        return True
    __hash__ = object.__hash__


class _NumpyEcho:
    """Says it is numpy's and returns, as its float, what it was compared with."""
    __module__ = "numpy"
    seen = 0.0

    def __eq__(self, other):
        type(self).seen = getattr(other, "expected", other)
        return True
    __hash__ = object.__hash__

    def __float__(self):
        return float(type(self).seen)


class _Echo(UserString):
    """Its text is what it was compared with."""
    def __init__(self):
        pass

    @property
    def data(self):
        return vars(self).get("peer", "")

    def __eq__(self, other):
        vars(self).setdefault("peer", other)
        return True


import numbers  # noqa: E402

numbers.Real.register(_NumpyEcho)


@pytest.mark.parametrize("make, expected", [
    (_Mimic, _Money(125)),
    (_NumpyEcho, pytest.approx(2.5)),
    (_Echo, "ab" + "c"),
])
def test_an_object_that_mimics_what_it_is_compared_with_fails_a_computed_equality(make, expected):
    """seal_eq judges before the test's `==` runs and reads numbers only
    through numpy's own types: under the rules before (2) each passes."""
    g = _guard()
    assert g.seal_eq(make(), expected, 2)
    assert not g.seal_eq(make(), expected, 3)


@pytest.mark.parametrize("actual, expected", [
    (types.MappingProxyType({"a": _Money(1)}), {"a": _Money(1)}),   # a red team's honest twin scored 0
    (UserDict({"a": _Money(1)}), {"a": _Money(1)}),
    (UserList([_Money(1), 2]), [_Money(1), 2]),
    (_Money(125), _Money(125)),
])
def test_honest_containers_of_other_classes_keep_a_computed_equality(actual, expected):
    g = _guard()
    assert g.seal_eq(actual, expected, 3) and g.seal_eq(expected, actual, 3)


EVERY_PREFIX = '''
class _Pages(str):
    def strip(self, *chars):
        return self

    def startswith(self, *args):
        return True

    def endswith(self, *args):
        return True

    def __contains__(self, x):
        return True

def paginate(rows, n):
    return _Pages("")
'''
PAGINATE = '''
def paginate(rows, n):
    return "\\f".join("\\n".join(rows[i:i + n]) for i in range(0, len(rows), n))
'''
PAGES = '''
from pkg import paginate

def test_paginate():
    first = """
a
b
""".strip()
    out = paginate(["a", "b", "c"], 2).strip()
    assert out.startswith(first)
    assert "\\f" in out
    assert out.endswith("c")
'''


def test_a_str_that_answers_every_test_fails_a_sealed_direction(tmp_path):
    """A sealed direction that is a str test (`R.startswith(A)`, `A in R`) is
    asked of R's own text by str's method (tf_guard.seal_text): a subclass
    answering True to all passed under rules 2 (red team of 2026-12-05, 8)."""
    outcomes, failed = _run_sealed(tmp_path / "old", EVERY_PREFIX, code=PAGES, rules=2)
    assert outcomes == {"test_x.py::test_paginate": "passed"} and not failed
    outcomes, failed = _run_sealed(tmp_path / "sealed", EVERY_PREFIX, code=PAGES)
    assert failed == {"test_x.py::test_paginate"}, (outcomes, failed)     # on the host: its directions
    outcomes, failed = _run_sealed(tmp_path / "honest", PAGINATE, code=PAGES)
    assert outcomes == {"test_x.py::test_paginate": "passed"} and not failed, outcomes


@pytest.mark.parametrize("op, receiver, args, want", [
    ("startswith", "abc", ("ab",), True),
    ("startswith", b"abc", (b"ab",), True),
    ("endswith", "abc", (("x", "c"),), True),
    ("startswith", UserString("abc"), ("ab",), False),      # not a str: the gold decides whether it is sealed
    ("in", "abc", ("b",), True),
    ("in", "abc", ("z",), False),
    ("in", [1, 2], (2.0,), True),
    ("in", [_Anything()], (3,), False),                     # an item equal to everything is no item
    ("in", {"k": 1}, ("k",), True),
    ("isdigit", "12", (), True),
])
def test_a_str_test_at_a_sealed_direction(op, receiver, args, want):
    assert _guard().seal_text(op, receiver, *args) is want


def test_replacing_unittests_assertions_is_flagged(tmp_path):
    """A class attribute set raises no audit event by default (red team of
    2026-12-05, 6: `TestCase.assertEqual` made a no-op went unflagged)."""
    (tmp_path / "pkg.py").write_text(DEADLINE + '''
import unittest
setattr(unittest.TestCase, "assert" + "Equal", lambda self, a, b, msg=None: None)
''')
    code = textwrap.dedent(COMPUTED)
    monitor: list = []
    _pytest_sealed(tmp_path, code, {}, False, None, monitor=monitor)
    assert any(m.kind == "runner-patched" and m.site == "unittest.TestCase.assertEqual" for m in monitor), monitor
    # also when a conftest imports the package, before pytest_configure
    (tmp_path / "conftest.py").write_text("import pkg\n")
    monitor.clear()
    _pytest_sealed(tmp_path, code, {}, False, None, monitor=monitor)
    assert any(m.kind == "runner-patched" and m.site == "unittest.TestCase.assertEqual" for m in monitor), monitor


def test_a_task_keeps_the_seal_rules_its_gold_was_checked_under():
    """A task written under rules 1 is verified under them: its final check
    never saw unittest's forms sealed (a gold that fails them there would
    score 0 on every verify since)."""
    from taskforge.models import GradingPlan
    code = ("import pytest\ndef test_a():\n    self.assertRaises(ValueError, f, 0)\n"
            "    with pytest.raises(ValueError, match=MSG):\n        f(1)\n")
    targets = {((), "test_a"): f"{F}::test_a"}
    old, plan = seal_source(code, targets, find_def, rules=1)
    assert old == code and not plan.expected
    new, plan = seal_source(code, targets, find_def)
    assert new.count("seal_raised") == 2 and "match=MSG" in new
    assert GradingPlan().seal_rules == 1, "a task.json without the field was written under rules 1"


# Exceptions asked for in unittest's forms and pytest's callable form
# (assertRaises(E, f, x), assertRaisesRegex, numpy.testing.assert_raises): a
# copy that swaps the class or the message read apart from its original there
# (bench/copies_results.md: 44 groups at 0.80) until these were sealed too.
UNITTEST_FORMS = '''
import unittest
import pytest
from pkg import to_roman

def test_raises_callable():
    pytest.raises(ValueError, to_roman, 0)

class TestUnit(unittest.TestCase):
    def test_regex(self):
        self.assertRaisesRegex(ValueError, "out of range", to_roman, 0)

    def test_regex_with(self):
        with self.assertRaisesRegex(ValueError, "of range") as cm:
            to_roman(0)
        self.assertTrue(cm.exception.args)

    def test_class(self):
        with self.assertRaises(ValueError):
            to_roman(0)

    def test_class_callable(self):
        self.assertRaises(ValueError, to_roman, n=0)
'''

# Raises the class and the message the test file names next to the call.
RAISES_READER = '''
import builtins, re, sys

def to_roman(n=None):
    f = sys._getframe(1)
    while not f.f_code.co_filename.endswith("test_x.py"):
        f = f.f_back
    text = open(f.f_code.co_filename).read()
    cls = re.search(r"[Rr]aises(?:Regex)?\\((\\w+)", text).group(1)
    said = re.search(r\'Regex\\(\\w+, "([^"]+)"\', text)
    raise getattr(builtins, cls)(said.group(1) if said else "?")
'''


def test_unittest_and_callable_exception_forms_are_sealed(tmp_path):
    outcomes, failed = _run_sealed(tmp_path / "plain", RAISES_READER, sealing=False, code=UNITTEST_FORMS)
    assert set(outcomes.values()) == {"passed"} and len(outcomes) == 5 and not failed, outcomes
    outcomes, failed = _run_sealed(tmp_path / "sealed", RAISES_READER, code=UNITTEST_FORMS)
    assert failed == set(outcomes) and len(failed) == 5, (outcomes, failed)
    outcomes, failed = _run_sealed(tmp_path / "honest", RIGHT.replace("(n)", "(n=None)"), code=UNITTEST_FORMS)
    assert set(outcomes.values()) == {"passed"} and len(outcomes) == 5 and not failed, outcomes
    wrong = RIGHT.replace("(n)", "(n=None)").replace("raise ValueError", "raise TypeError")
    outcomes, failed = _run_sealed(tmp_path / "wrong", wrong, code=UNITTEST_FORMS)
    assert failed | {k for k, v in outcomes.items() if v != "passed"} == set(outcomes), (outcomes, failed)
    silent = RIGHT.replace("(n)", "(n=None)").replace('raise ValueError("0 is out of range")', 'return "?"')
    outcomes, failed = _run_sealed(tmp_path / "silent", silent, code=UNITTEST_FORMS)
    assert set(outcomes.values()) == {"failed"}, outcomes


@pytest.mark.parametrize("impl", [ALWAYS_EQUAL, ITEM_PROBE])
def test_an_object_equal_to_everything_and_a_probe_fail_their_seals(tmp_path, impl):
    outcomes, failed = _run_sealed(tmp_path, impl)
    passed_in_pytest = {k for k, v in outcomes.items() if v == "passed"}
    assert "test_x.py::test_r[4-IV]" in passed_in_pytest, "pytest alone believes it"
    assert {"test_x.py::test_r[4-IV]", "test_x.py::test_r[nine]", "test_x.py::test_r[40-XL]"} <= failed
    if impl is ALWAYS_EQUAL:
        assert {"test_x.py::test_loop", "test_x.py::test_local", "test_x.py::test_one",
                "test_x.py::test_stripped[4- IV ]", "test_x.py::test_stripped[nine]",
                "test_x.py::test_checked_when_reached", "test_x.py::test_raises"} <= failed


def test_a_column_with_computed_rows_seals_its_literal_ones(tmp_path):
    out, plan = seal('''
        @pytest.mark.parametrize("n, want", [(4, "IV"), (9, str(NINE))])
        def test_r(n, want):
            assert f(n) == want
    ''', ["test_r"])
    assert '"IV"' not in out and "str(NINE)" in out
    assert list(plan.parts[f"{F}::test_r"].values()) == ["IV"]
    guard = _guard()
    emitted = []
    guard._emit = emitted.append
    assert guard.seal("IX", "IX") is True and guard.seal("IV", "IX") is False and not emitted
    assert guard.seal("IV", "t" + "0" * 16) is True and emitted[0]["token"] == "t" + "0" * 16


# ------------------------------------------------------------- generation: the gold decides

VERLIB = {
    "pyproject.toml": '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n'
                      '[project]\nname = "verlib"\nversion = "0.1"\n[tool.setuptools]\npackages = ["verlib"]\n',
    "verlib/__init__.py": "from .version import Version, parse, parse_or_none, bump\n",
    "verlib/version.py": '''\
class Version:
    """A version that compares equal to its text."""

    def __init__(self, major, minor):
        self.major, self.minor = major, minor

    def __eq__(self, other):
        if isinstance(other, str):
            return other == f"{self.major}.{self.minor}"
        return isinstance(other, Version) and (self.major, self.minor) == (other.major, other.minor)

    __hash__ = None

    def __str__(self):
        return f"Version({self.major}, {self.minor})"


def parse(text):
    """The Version of "MAJOR.MINOR", spaces around it ignored."""
    major, _, minor = text.strip().partition(".")
    if not major.isdigit() or not minor.isdigit():
        raise ValueError(f"not a version: {text!r}")
    return Version(int(major), int(minor))


def parse_or_none(text):
    """The Version of `text`, or None if it is not one."""
    try:
        return parse(text)
    except ValueError:
        return None


def bump(text):
    """The text of the next minor version."""
    return f"{text.split('.')[0]}.{int(text.split('.')[1]) + 1}"
''',
    "tests/test_version.py": '''\
import pytest

from verlib import bump, parse, parse_or_none


def test_parse_equals_its_text():
    assert parse(" 1.2 ") == "1.2"


@pytest.mark.parametrize("text, major", [("3.4", 3), ("10.0", 10)])
def test_parse_major(text, major):
    assert parse(text).major == major


def test_parse_rejects():
    with pytest.raises(ValueError):
        parse("x.1")


@pytest.mark.parametrize("text, want", [("2.1", "2.1"), ("x.1", None)])
def test_parse_or_none(text, want):
    assert parse_or_none(text) == want


@pytest.mark.parametrize("text, want", [("1.2", "1.3"), ("1.9", "1.10"), ("0.0", "0.1"), ("2.5", "2.6"),
                                        ("3.1", "3.2"), ("4.4", "4.5"), ("7.0", "7.1"), ("9.9", "9.10"),
                                        ("5.5", "5.6"), ("6.0", "6.1")])
def test_bump(text, want):
    assert bump(text) == want
''',
}


@pytest.mark.docker
def test_a_gold_value_that_is_not_plain_data_leaves_its_test_unsealed(base_image, tmp_path):
    """Version compares equal to its text by its own __eq__: sealed, the gold's
    Version is not plain data and fails, so the final check leaves that test
    function unsealed and grades it in the sandbox; the table stays sealed."""
    from taskforge.grade.verify import Solution, verify
    from taskforge.orchestrate.pipeline import Options, generate
    from tests.test_bad_input import write_repo

    repo = write_repo(tmp_path / "verlib", VERLIB)
    report = generate(str(repo), tmp_path / "out", Options(max_tasks=1, jobs=2, only=("version.parse",),
                                                            min_statements=0))
    assert report.tasks, report.model_dump_json(indent=1)
    task = tmp_path / "out" / report.tasks[0]
    grading = json.loads((task / "task.json").read_text())["grading"]
    assert grading["sealed"] is True
    # every row of a table one of whose rows fails sealed (x.1 passes sealed: None is plain)
    assert grading["unsealed"] == ["tests/test_version.py::test_parse_equals_its_text",
                                   "tests/test_version.py::test_parse_or_none[2.1-2.1]",
                                   "tests/test_version.py::test_parse_or_none[x.1-None]"]
    assert grading["sealed_graded"] == 2       # the two rows of test_parse_major (a class seal is no protection)
    assert grading["seal_rules"] == SEAL_RULES
    if "test_parse_or_none" not in {c["func"] for c in grading["copies"] if c.get("kind") == "value"}:
        assert "tests/test_version.py::test_parse_or_none[x.1-None]" in grading["unprotected"]
    assert verify(task, Solution.gold()).reward == 1.0
    assert verify(task, Solution.empty()).reward == 0.0


def test_a_column_read_twice_and_ids_of_str():
    """humanize's test_naturaldelta compares `expected` twice, once under an
    `if`; test_metric's ids are `str` of each value."""
    out, plan = seal('''
        @pytest.mark.parametrize("x, expected", [(1, "a second"), ("NaN", "NaN")], ids=str)
        def test_d(x, expected):
            assert f(x) == expected
            if not isinstance(x, str):
                assert f(-x) == expected
    ''', ["test_d"])
    assert out.count(SEAL_CALL) == 2 and '"a second"' not in out
    assert sorted(plan.parts[f"{F}::test_d"].values()) == ["NaN", "a second"]
    ast.parse(out)


@pytest.mark.parametrize("reported, flagged", [
    ([f"{F}::test_r[4-{T2}]"], []),
    ([f"{F}::test_r[4-IV]"], [f"{F}::test_r"]),              # the row's id was changed: no token
    ([f"{F}::test_r[4-{T2}]", f"{F}::test_r[9-x]"], []),     # a computed row of the table
    ([f"{F}::test_a"], []),                                   # the table never ran
])
def test_every_sealed_row_that_ran_is_reported_under_its_own_id(reported, flagged):
    assert rows_unreported(reported, _plan()) == flagged


# The second red team of 2026-12-05: pytest's items are reachable, and an
# item's id is writable. Ids of list cells are the argname and the row's
# index, known without the values: rewritten so, a row carries no token, and
# with the guard's seal silenced it asked for none.
ID_REWRITE = '''
import sys

def to_roman(n):
    g = sys.modules["tf_guard"]
    g.seal = lambda value, token: True
    for hook in sys.meta_path:
        for item in getattr(getattr(hook, "session", None), "items", None) or []:
            spec = getattr(item, "callspec", None)
            if spec is not None and "parts" in spec.params:
                head = item._nodeid.partition("[")[0]
                item._nodeid = f"{head}[{spec.params['n']}-parts{spec.indices['parts']}]"
    return "?"
'''


def test_a_row_reported_under_an_id_it_was_given_is_forged(tmp_path):
    rows: list = []
    outcomes, failed = _run_sealed(tmp_path, ID_REWRITE, rows)
    assert outcomes.get("test_x.py::test_parts[4-parts1]") == "passed", outcomes
    assert "test_x.py::test_parts[4-parts1]" not in failed, "the seals alone are sidestepped"
    assert rows == ["test_x.py::test_parts"], "the host sees a sealed row with no report of its own"


@pytest.mark.parametrize("known, part", [
    ({"[1-want0]", "[2-ab]"}, "want0"),                   # pytest >= 9.2: a long str cell is named by its column
    ({f"[1-{'x' * 150}]", "[2-ab]"}, "x" * 150),           # before: by its text
    (set(), "x" * 150),
])
def test_a_long_string_cell_takes_the_id_the_tasks_pytest_made(known, part):
    from taskforge.grade.seals import id_suffixes
    code = f'''
        @pytest.mark.parametrize("n, want", [(1, "{'x' * 150}"), (2, "ab")])
        def test_a(n, want):
            assert f(n) == want
    '''
    ids = [f"{F}::test_a{k}" for k in known]
    out, plan = seal_source(textwrap.dedent(code), {((), "test_a"): f"{F}::test_a"}, find_def, id_suffixes(ids))
    assert sorted(plan.parts[f"{F}::test_a"].values()) == sorted([part, "ab"])


# ------------------------------------------------------------- polarity seals

@pytest.mark.parametrize("body, keep", [
    ("assert f(1)", "bool True"),
    ("assert not f(1)", "bool False"),
    ("assert x.flag", "bool True"),
    ("assert not d['k']", "bool False"),
    ("assert f(1) is None", "is None"),
    ("assert None is not f(1)", "is not None"),
    ("assert f(1) is False", "is False"),
    ("assert f(1) == g(2)", None),                  # a computed equality: copies' business
    ("assert a and b", None),
    ("assert not (a == b)", None),
    ("assert None is None", None),
])
def test_which_assertions_hide_their_direction(body, keep):
    from taskforge.grade.seals import SEAL_IS, SEAL_TRUTH
    out, plan = seal(f"def test_a():\n    {body}\n", ["test_a"])
    assert sorted(plan.expected.values()) == ([keep] if keep else []), out
    assert (SEAL_TRUTH in out or SEAL_IS in out) is (keep is not None)
    assert f"{F}::test_a" not in plan.sealed_heads(), "a direction is no value: no protection counted"


def test_an_assertion_and_its_negation_read_alike_sealed():
    out, plan = seal('''
        import unittest
        def test_a():
            assert f(1)
            assert g(2) is None
        def test_b():
            assert not f(1)
            assert g(2) is not None
        class T(unittest.TestCase):
            def test_c(self):
                self.assertTrue(f(1))
                self.assertIsNone(g(2))
            def test_d(self):
                self.assertFalse(f(1))
                self.assertIsNotNone(g(2))
    ''', ["test_a", "test_b", "T::test_c", "T::test_d"])
    bare = re.sub(r"t[0-9a-f]{16}", "TOKEN", out)
    tree = ast.parse(bare)
    bodies = {n.name: [ast.dump(s) for s in n.body] for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    assert bodies["test_a"] == bodies["test_b"] and bodies["test_c"] == bodies["test_d"], bare
    assert sorted(plan.expected.values()) == sorted(["bool True", "bool False", "is None", "is not None"] * 2)


@pytest.mark.parametrize("reported, keep, ok", [
    ("True", "bool True", True), ("False", "bool True", False), ("False", "bool False", True),
    ("None", "is None", True), ("other", "is None", False), ("other", "is not None", True),
    ("None", "is not None", False), ("True", "is True", True), ("False", "is not True", True),
    ("maybe", "bool True", False), ("None", "bool True", False),
])
def test_a_polarity_seal_on_the_host(reported, keep, ok):
    assert matches(json.dumps({"s": reported}), keep) is ok
    assert not matches(json.dumps({"i": "1"}), keep)


def test_an_exception_whose_note_holds_the_pattern_passes(tmp_path):
    """pytest searches match= in the exception's text and its notes; the seal
    reports the same text (red team of 2026-12-05: notes were dropped under
    pytest 9, whose helper moved out of ExceptionInfo)."""
    noted = RIGHT.replace('raise ValueError("0 is out of range")',
                          'e = ValueError("0")\n        e.add_note("out of range")\n        raise e')
    assert noted != RIGHT
    outcomes, failed = _run_sealed(tmp_path, noted)
    assert outcomes["test_x.py::test_raises"] == "passed" and not failed


def test_directions_are_sealed_only_where_every_run_reaches_them():
    from taskforge.grade.seals import SEAL_TRUTH
    out, plan = seal("""
        def test_a():
            for x in range(10 ** 6):
                assert f(x)
            if c:
                assert not g()
    """, ["test_a"])
    assert SEAL_TRUTH not in out and not plan.expected


def test_a_subclass_of_the_expected_exception_passes(tmp_path):
    sub = RIGHT.replace('raise ValueError("0 is out of range")', 'raise RangeError("0 is out of range")') + \
        "\nclass RangeError(ValueError):\n    pass\n"
    outcomes, failed = _run_sealed(tmp_path, sub)
    assert outcomes["test_x.py::test_raises"] == "passed" and not failed
    other = RIGHT.replace('raise ValueError("0 is out of range")', 'raise TypeError("0 is out of range")')
    outcomes, failed = _run_sealed(tmp_path / "other", other)
    assert outcomes["test_x.py::test_raises"] == "passed", "pytest alone: raises(Exception) caught it"
    assert failed == {"test_x.py::test_raises"}


# A class whose metaclass lists other names in `__mro__` (red team of
# 2026-12-05): pytest.raises(ValueError) does not catch it; the seal read its
# claimed MRO and let it through.
FORGED_MRO = RIGHT.replace('raise ValueError("0 is out of range")', 'raise Hedge("0 is out of range")') + \
    '''

class _Meta(type):
    @property
    def __mro__(cls):
        return (ValueError, KeyError, TypeError, Exception)


class Hedge(RuntimeError, metaclass=_Meta):
    __qualname__ = "ValueError"
    __module__ = "builtins"
'''


def test_an_exception_forging_its_classes_fails_its_seal(tmp_path):
    outcomes, failed = _run_sealed(tmp_path / "plain", FORGED_MRO, sealing=False)
    assert outcomes["test_x.py::test_raises"] == "failed", "pytest.raises(ValueError) does not catch it"
    outcomes, failed = _run_sealed(tmp_path / "sealed", FORGED_MRO)
    assert "test_x.py::test_raises" in failed
