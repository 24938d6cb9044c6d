"""Built expectations sealed by shape (grade/shapes.py, tf_guard._shape): which
equalities qualify, what a shape is, when a reported one fits the kept one,
and which captured shapes are kept."""
from __future__ import annotations

import ast
import collections
import dataclasses
import datetime
import enum
import functools
import importlib.util
import json
import numbers
import pathlib
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import pytest

from taskforge.grade import copies as cp
from taskforge.grade import shapes
from taskforge.grade.seals import CAPTURE, SHAPE, SealPlan, matches, module_names, seal_source
from taskforge.grade.verify import capture_reports, remade_classes
from taskforge.models import RemovedSymbol

RUNTIME = Path(__file__).resolve().parent.parent / "taskforge" / "sandbox" / "runtime"


@pytest.fixture(scope="module")
def guard():
    spec = importlib.util.spec_from_file_location("tf_guard_for_shapes", RUNTIME / "tf_guard.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


HEAD = "from ledger import Money, schedule\nfrom datetime import date\nimport pkg\n\nLOCAL = 3\n"


def _sides(expr: str):
    tree = ast.parse(HEAD + f"x = {expr}\n")
    cmp = tree.body[-1].value
    return shapes.built_side(cmp.left, cmp.comparators[0], module_names(tree))


@pytest.mark.parametrize("expr,expected", [
    ('schedule(1) == Money("88.85")', 'Money("88.85")'),
    ('Money("88.85") == schedule(1)', 'Money("88.85")'),            # written expected first
    ('f() == [Money("1"), Money("2", currency="EUR")]', '[Money("1"), Money("2", currency="EUR")]'),
    ('f() == date(2024, 1, 31)', "date(2024, 1, 31)"),               # the stdlib's value types
    ('f() == pkg.Money("1")', 'pkg.Money("1")'),
    ('f() == pkg.Color.RED', "pkg.Color.RED"),                      # an enum member
    ('Money("1") + Money("2") == Money("3")', 'Money("3")'),         # the sum is the code under test
    ('f() == Money(-1)', "Money(-1)"),
    ('f() == 88.85', None),                                         # a plain literal: seals.py's
    ('f() == Money(LOCAL)', None),                                  # a module constant may be rebound
    ('f() == Money(x)', None),                                      # a local
    ('f() == schedule(1)', None),                                   # a call of code under test
    ('Money("1") == Money("1.00")', None),                          # both built: which is under test?
    ('f() == Money(*args)', None),
    ('f() == approx(Money("1"))', None),
])
def test_which_side_is_a_built_expectation(expr, expected):
    got = _sides(expr)
    assert (ast.unparse(got[1]) if got else None) == (ast.unparse(ast.parse(expected).body[0].value)
                                                       if expected else None)


def test_the_key_is_the_source_and_where_its_names_come_from():
    def key(head: str, expr: str) -> str:
        tree = ast.parse(head + f"x = f() == {expr}\n")
        cmp = tree.body[-1].value
        return shapes.shape_key(cmp.comparators[0], module_names(tree))
    assert key("from ledger import Money\n", 'Money("1")') == key("from ledger import Money\n", "Money( '1' )")
    assert key("from ledger import Money\n", 'Money("1")') != key("from other import Money\n", 'Money("1")')
    assert key("from ledger import Money\n", 'Money("1")') != key("from ledger import Money\n", 'Money("2")')


@dataclasses.dataclass(frozen=True)
class Money:
    amount: Decimal
    currency: str = "USD"
    note: str = dataclasses.field(default="", compare=False)


class Rich(Money):
    pass


class Slotted:
    __slots__ = ("a", "b")

    def __init__(self, a):
        self.a = a


class Color(enum.Enum):
    RED = 1


class Liar:
    """An object that says it is a Money with the right amount."""
    __class__ = Money                                               # type: ignore[assignment]

    def __getattr__(self, name):
        return Decimal("88.85") if name == "amount" else "USD"


@pytest.mark.parametrize("value,shape", [
    (1, {"n": "1/1"}), (True, {"n": "1/1"}), (1.0, {"n": "1/1"}), (Decimal("1.00"), {"n": "1/1"}),
    (Fraction(2, 2), {"n": "1/1"}), (Decimal("88.85"), {"n": "1777/20"}), (float("-inf"), {"n": "-inf"}),
    ("x", {"s": "x"}), (b"x", {"b": "78"}), ([1, (2,)], {"l": [{"n": "1/1"}, {"t": [{"n": "2/1"}]}]}),
    ({1: "a"}, {"d": [[{"n": "1/1"}, {"s": "a"}]]}),
    (Money(Decimal("88.85"), note="kept out"),
     {"o": [[f"{__name__}.Money"], {"amount": {"n": "1777/20"}, "currency": {"s": "USD"}}]}),
    (Slotted(2), {"o": [[f"{__name__}.Slotted"], {"a": {"n": "2/1"}}]}),
    (Color.RED, {"e": f"{__name__}.Color.RED"}),
    (datetime.date(2024, 1, 31), {"x": ["date", "2024-01-31"]}),
    (Liar(), {"o": [[f"{__name__}.Liar"], {}]}),                     # by what it holds, not what it says
    (float("nan"), None), (len, None), (Money, None), ([[]] * 0 + [iter([])], None),
])
def test_a_value_is_projected_by_what_it_holds(guard, value, shape):
    got = guard._shape_text(value)
    assert (json.loads(got) if got is not None else None) == shape


def test_a_cycle_has_no_shape(guard):
    a: list = []
    a.append(a)
    assert guard._shape_text(a) is None


@pytest.mark.parametrize("actual,fits", [
    (Money(Decimal("88.85")), True),
    (Money(Decimal("88.850")), True),                                # equal Decimals
    (Money(Decimal("88.85"), note="other"), True),                   # a field the class does not compare
    (Rich(Decimal("88.85")), True),                                  # an honest subclass
    (Money(Decimal("88.86")), False),
    (Money(Decimal("88.85"), "EUR"), False),
    (Slotted(Decimal("88.85")), False),                              # another class
    (Liar(), False),
    (None, False),
])
def test_a_reported_shape_fits_the_kept_one(guard, actual, fits):
    kept = guard._shape_text(Money(Decimal("88.85")))
    assert shapes.shape_matches(guard._shape_text(actual), kept) is fits
    assert matches(guard._shape_text(actual), SHAPE + kept) is fits


def test_extra_attributes_of_the_actual_value_are_not_asked():
    kept = json.dumps({"o": [["m.P"], {"x": {"n": "1/1"}}]})
    assert shapes.shape_matches(json.dumps({"o": [["m.P"], {"x": {"n": "1/1"}, "_cache": {"s": "?"}}]}), kept)
    assert not shapes.shape_matches(json.dumps({"o": [["m.P"], {}]}), kept)
    assert not shapes.shape_matches("[1, 2", kept)                   # malformed: a wrong value
    assert not shapes.shape_matches("x" * (shapes.MAX_SHAPE + 1), kept)


def _capture(expected: str | None, actual: str | None) -> str:
    return json.dumps({"expected": expected, "actual": actual})


def test_kept_shapes_are_the_stable_ones_the_gold_fits():
    one, two = json.dumps({"n": "1/1"}), json.dumps({"n": "2/1"})
    box = json.dumps({"o": [["pkg.Box"], {"v": {"n": "1/1"}}]})
    reports = [
        ("a", _capture(one, one), True), ("a", _capture(one, None), False),   # a copy: the gold fails it
        ("b", _capture(one, one), True), ("b", _capture(two, two), True),      # two shapes for one key
        ("c", _capture(one, two), True),                                       # the gold's own value differs
        ("d", _capture(None, one), True),                                      # no shape
        ("e", _capture(box, box), True),                                       # a class the removal remakes
        ("f", _capture(two, None), False),                                     # only in a copy
    ]
    assert shapes.kept_shapes(reports, ["pkg.Box"]) == {"a": one, "f": two}


def test_the_classes_a_removal_remakes():
    def sym(q: str, kind: str) -> RemovedSymbol:
        return RemovedSymbol(qualname=q, kind=kind, path="p.py", start_line=1, end_line=2, signature="")
    assert remade_classes([sym("pkg.Box", "class"), sym("pkg.Money.__post_init__", "method"),
                           sym("pkg.Money.allocate", "method"), sym("pkg.f", "function")]) \
        == ["pkg.Box", "pkg.Money"]


SRC = '''import unittest
from ledger import Money, compound_amount


class T(unittest.TestCase):
    def test_monthly(self):
        self.assertEqual(compound_amount(Money("1000"), "0.12", 1), Money("1126.83"))

    def test_guarded(self):
        try:
            assert compound_amount(Money("1"), "0", 1) == Money("1.01")
        except AssertionError:
            pass
'''


def _key(expr: str) -> str:
    tree = ast.parse(SRC)
    return shapes.shape_key(ast.parse(expr).body[0].value, module_names(tree))


def test_a_sealed_built_expectation_leaves_nothing_of_itself_in_the_sandbox():
    """What a dry run of the tests could read or build: the literal and the
    constructor call are gone from the planted file; the host has the shape."""
    kept = json.dumps({"o": [["ledger.money.Money"], {"amount": {"n": "112683/100"}, "currency": {"s": "USD"}}]})
    targets = {(("T",), "test_monthly"): "t.py::T::test_monthly", (("T",), "test_guarded"): "t.py::T::test_guarded"}
    out, plan = seal_source(SRC, targets, cp.find_def, shapes={_key('Money("1126.83")'): kept,
                                                                _key('Money("1.01")'): kept})
    monthly = out.split("def test_guarded")[0]
    assert "1126.83" not in monthly and "seal_shape" in monthly
    assert "1.01" in out.split("def test_guarded")[1]               # where a caught AssertionError ends the block
    (tok,) = [t for t, v in plan.expected.items() if v.startswith(SHAPE)]
    assert plan.expected[tok] == SHAPE + kept and tok in plan.required["t.py::T::test_monthly"]
    assert "t.py::T::test_monthly" in plan.sealed_heads()
    # without a kept shape (or with the rules of an older task) it stays computed in the sandbox
    for kw in ({"shapes": {}}, {"shapes": {_key('Money("1126.83")'): kept}, "rules": 3}):
        out, _ = seal_source(SRC, targets, cp.find_def, **kw)
        assert 'seal_eq((compound_amount(Money("1000"), "0.12", 1)), (Money("1126.83")), 3)' in out


def test_the_capture_run_reports_both_sides_keyed_and_requires_nothing():
    targets = {(("T",), "test_monthly"): "t.py::T::test_monthly"}
    out, plan = seal_source(SRC, targets, cp.find_def, capture=True)
    assert 'seal_capture((compound_amount(Money("1000"), "0.12", 1)), (Money("1126.83")), ' in out
    (tok,) = [t for t, v in plan.expected.items() if v.startswith(CAPTURE)]
    assert plan.expected[tok] == CAPTURE + _key('Money("1126.83")')
    assert tok not in plan.required.get("t.py::T::test_monthly", set())
    plan_ = cp.Plan(originals={"test_monthly": cp.TestRef("t.py", ("T",), "test_monthly")}, seals=plan)
    got = list(capture_reports(plan_, {"t.py::T::test_monthly": [(tok, "{}"), ("tother", "1")]}))
    assert got == [(_key('Money("1126.83")'), "{}", True)]


def test_sealplan_counts_a_shape_as_a_value_seal():
    plan = SealPlan(expected={"t1": SHAPE + "{}"}, required={"h": {"t1"}})
    assert plan.sealed_heads() == {"h"}


LOCALS = '''from ledger import Money, compound_amount


def test_local():
    want = Money("1126.83")
    got = compound_amount(Money("1000"), "0.12", 1)
    assert got == want
    assert want == got


def test_read_elsewhere():
    want = Money("1126.83")
    assert compound_amount(Money("1000"), "0.12", 1) == want
    assert want.amount > 0
'''


def test_a_local_built_expectation_is_sealed_at_every_read_or_at_none():
    key = shapes.shape_key(ast.parse('Money("1126.83")').body[0].value, module_names(ast.parse(LOCALS)))
    targets = {((), "test_local"): "t.py::test_local", ((), "test_read_elsewhere"): "t.py::test_read_elsewhere"}
    out, plan = seal_source(LOCALS, targets, cp.find_def, shapes={key: "{}"})
    local, elsewhere = out.split("def test_read_elsewhere")
    assert "1126.83" not in local and "want = None" in local and local.count("seal_shape((got)") == 2
    assert 'want = Money("1126.83")' in elsewhere and "seal_shape" not in elsewhere
    assert len(plan.required["t.py::test_local"]) == 2
    out, plan = seal_source(LOCALS, targets, cp.find_def, capture=True)
    local = out.split("def test_read_elsewhere")[0]
    assert 'want = Money("1126.83")' in local and "seal_capture((got), (want), " in local
    assert {v for v in plan.expected.values()} == {CAPTURE + key}


def test_honest_differences_the_tests_own_eq_ignores_project_alike(guard):
    """An aware datetime in another zone (equal as an instant), a pydantic
    model built with a default passed or not (its fields-set bookkeeping),
    an attrs field with eq=False: the same shape, as `==` says."""
    from zoneinfo import ZoneInfo

    noon = datetime.datetime(2024, 1, 1, 12, tzinfo=datetime.timezone.utc)
    assert guard._shape_text(noon) == guard._shape_text(noon.astimezone(ZoneInfo("Europe/Paris")))
    assert guard._shape_text(noon) != guard._shape_text(noon.replace(tzinfo=None))
    pydantic = pytest.importorskip("pydantic")

    class Model(pydantic.BaseModel):
        a: int
        b: int = 2
    assert Model(a=1) == Model(a=1, b=2)
    assert guard._shape_text(Model(a=1)) == guard._shape_text(Model(a=1, b=2))
    assert guard._shape_text(Model(a=1)) != guard._shape_text(Model(a=1, b=3))


def test_collections_wrappers_and_views_project_as_what_they_equal(guard):
    """Held-out round 15: an allocation returned as a UserList of the right
    amounts scored 0 (`UserList(x) == x` in the test)."""
    import collections

    assert guard._shape_text(collections.UserList([1, 2])) == guard._shape_text([1, 2])
    assert guard._shape_text(collections.UserDict({1: 2})) == guard._shape_text({1: 2})
    assert guard._shape_text(collections.UserString("ab")) == guard._shape_text("ab")
    assert guard._shape_text({1: 0, 2: 0}.keys()) == guard._shape_text({2, 1})
    assert guard._shape_text(collections.UserList([1, 2])) != guard._shape_text((1, 2))


@pytest.mark.parametrize("hits,passes", [
    (["ZeroDivisionError"], True),                                  # the swapped class alone: the copy passes
    (["ValueError"], False),                                        # the gold's: the copy fails
    (["ValueError", "ZeroDivisionError"], False),                   # an honest class of both (round 15)
    (["ArithmeticError", "Exception", "ValueError", "ZeroDivisionError"], False),   # ... with their bases
    (["KeyError", "TypeError", "ValueError", "ZeroDivisionError"], True),           # a catch-all: caught
])
def test_a_swapped_copy_cannot_be_failed_by_an_exception_of_both_classes(hits, passes):
    from taskforge.grade.seals import RAISED, SWAPPED_FROM, raised_matches, swapped_classes

    assert swapped_classes('line 138: ValueError -> ZeroDivisionError | line 9: "1.5" -> "2.5"') \
        == {"ZeroDivisionError": {"ValueError"}}
    expected = RAISED + repr(["ZeroDivisionError"]) + SWAPPED_FROM + repr(["ValueError"])
    assert raised_matches(json.dumps({"l": [{"s": h} for h in hits]}), expected) is passes
    # an original's site keeps its plain rule: any exception of the class it names
    assert raised_matches(json.dumps({"l": [{"s": h} for h in hits]}), RAISED + repr(["ZeroDivisionError"])) \
        is ("ZeroDivisionError" in hits)


def test_a_task_needs_a_test_whose_value_is_protected_not_only_an_exception_class():
    """Held-out round 15: Polygon.centroid's value test went through the
    answer's own `is_close` (a direction only), and its one protected test was
    the zero-area one, by exception-class swaps: a stub raising that exception
    and returning an object close to everything scored 1."""
    from taskforge.grade.calibrate import Calibration
    from taskforge.models import TestCopy
    from taskforge.orchestrate.settle import valued

    def copy(func: str, site: str) -> TestCopy:
        return TestCopy(file="tests/t.py", func=func, kind="value", group=f"{func}@1:1:0", site=site,
                        source="def NAME():\n    pass\n")
    swaps = [copy("test_degenerate", "line 138: ValueError -> ZeroDivisionError"),
             copy("test_degenerate", "line 138: ValueError -> NotImplementedError")]
    graded = ["tests/t.py::test_centroid", "tests/t.py::test_degenerate"]
    assert cp.is_swap(swaps[0]) and not cp.is_swap(copy("test_x", 'line 3: "1.5" -> "2.5"'))
    assert cp.protected_tests(swaps) == {("tests/t.py", (), "test_degenerate")}
    assert valued(graded, Calibration(copies=swaps)) == []
    assert valued(graded, Calibration(copies=swaps, sealed={"tests/t.py::test_centroid"})) \
        == ["tests/t.py::test_centroid"]
    assert valued(graded, Calibration(copies=[*swaps, copy("test_degenerate", 'line 139: "1.5" -> "2.5"')])) \
        == ["tests/t.py::test_degenerate"]


class Lazy:
    def __init__(self, n):
        self.n = n

    @functools.cached_property
    def doubled(self):
        return 2 * self.n


class Index:
    """An integer type that is no int subclass (numpy's are so)."""
    def __init__(self, n):
        self.n = n

    def __index__(self):
        return self.n

    def __int__(self):
        return self.n


numbers.Integral.register(Index)


def test_state_a_value_caches_is_not_asked_nor_how_an_integer_is_typed(guard):
    """Red team round 24 (F5): the gold's value is shaped after the gold's
    code ran, so state it cached lazily (a cached_property it read, the
    string a path keeps once it was printed) is in the kept shape, and an
    honest equal value that never cached it did not fit; an integer of a
    type that is no int subclass (numpy's) never fitted an int."""
    read = Lazy(3)
    _ = read.doubled
    assert shapes.shape_matches(guard._shape_text(Lazy(3)), guard._shape_text(read))
    assert not shapes.shape_matches(guard._shape_text(Lazy(4)), guard._shape_text(read))
    printed = pathlib.PurePosixPath("a/b.txt")
    str(printed), hash(printed)
    assert shapes.shape_matches(guard._shape_text(pathlib.PurePosixPath("a/b.txt")), guard._shape_text(printed))
    assert not shapes.shape_matches(guard._shape_text(pathlib.PurePosixPath("a/c.txt")), guard._shape_text(printed))
    assert guard._shape_text(Index(994)) == guard._shape_text(994)


def test_an_object_with_no_attributes_to_compare_is_not_kept(guard):
    """A deque, an array: _shape reads no state of them, so any object of
    the class fitted the kept shape (red team round 24, F5): not kept."""
    full = guard._shape_text(collections.deque([1, 2]))
    assert shapes.shape_matches(guard._shape_text(collections.deque()), full)      # why
    reports = [("q", _capture(full, full), True), ("n", _capture('{"n": "1/1"}', '{"n": "1/1"}'), True)]
    assert shapes.kept_shapes(reports) == {"n": '{"n": "1/1"}'}
