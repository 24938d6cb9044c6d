"""Copies that exchange a raising input with an accepted one (grade/copy_raises.py).

The proof against round 17's forgers, on both backends, is in
tests/test_redteam_channel.py (test_forging_a_raise_only_test_is_caught_by_exchanged_inputs).
"""
from __future__ import annotations

import ast
import random
import re
import textwrap
from collections import Counter

import pytest

from taskforge.analysis import testindex
from taskforge.grade import copies as cp
from taskforge.grade.copy_raises import (
    DIGITS_ONLY,
    MAX_BLOCKS,
    MAX_EXCHANGED,
    MAX_TRADED_KIND,
    TradedEdit,
    accepted_inputs,
    column_inputs,
    digit_twin,
    exchange_blocks,
    fresh_copies,
    fresh_value,
    letter_reshaped,
    raising_inputs,
    reshaped,
    run_twins,
    same_kinds,
    table_valued_copies,
    traded_copies,
    traded_edits,
    valued_copies,
    valued_key,
)
from taskforge.grade.verify import MAX_TRADED_TWINS, MAX_TWINS_PER_TEST, choose_copies
from taskforge.models import TestCopy

FILE = "tests/test_p.py"


def _fns(code: str):
    tree = ast.parse(textwrap.dedent(code))
    return [(testindex.TestRef(FILE, (), f.name), f) for f in tree.body if isinstance(f, ast.FunctionDef)]


@pytest.mark.parametrize("body, want", [
    ("with pytest.raises(ValueError):\n    parse('x')", ["x"]),
    ("with self.assertRaises(ValueError):\n    parse(b'x')", [b"x"]),
    ("for bad in ['', 'a', 2]:\n    with pytest.raises(ValueError):\n        parse(bad)", ["", "a", 2]),
    ("for bad in ['', 'a']:\n    with self.subTest(bad=bad):\n        with self.assertRaises(ValueError):\n"
     "            parse(bad)", ["", "a"]),
    ("with pytest.raises(ValueError):\n    _ = parse('x')", ["x"]),
    ("self.assertRaises(ValueError, parse, 'x')", ["x"]),
    ("pytest.raises(ValueError, m.parse, 'x')", ["x"]),
    ("self.assertRaises(ValueError, parse, 'x', 'y')", []),
    # not an input it passes as written: nothing
    ("for bad in ['', 'a']:\n    bad = bad.strip()\n    with pytest.raises(ValueError):\n        parse(bad)", []),
    ("with pytest.raises(ValueError):\n    parse('x', strict=True)", []),
    ("with pytest.raises(ValueError):\n    parse('x', 'y')", []),
    ("with pytest.raises(ValueError):\n    y = 1\n    parse('x')", []),
    ("with pytest.raises(ValueError):\n    parse(make('x'))", []),
    ("with pytest.warns(UserWarning):\n    parse('x')", []),
])
def test_raising_inputs(body, want):
    (ref, fn), = _fns("def test_r(self):\n" + textwrap.indent(body, "    "))
    assert [r.node.value for r in raising_inputs(fn, ref)] == want


@pytest.mark.parametrize("body, want", [
    ("assert parse('1') == 1", ["1"]),
    ("assert 1 == parse('1')", ["1"]),
    # a constructor on the other side is a call the passing test makes without a raise too
    ("self.assertEqual(parse('1'), Money('1'))\nself.assertEqual(Money('2'), m.parse('2'))", ["1", "1", "2", "2"]),
    ("assert parse('1') != 1", []),
    ("assert parse('1', 2) == 1", []),
    ("assert parse(x) == 1", []),
])
def test_accepted_inputs(body, want):
    (ref, fn), = _fns("def test_a():\n" + textwrap.indent(body, "    "))
    assert sorted(a.node.value for a in accepted_inputs(fn, ref)) == want


PARSE_TESTS = '''
def test_accepts():
    assert parse("12.5") == Money("12.50")
    assert parse("$7") == Money("7")
    assert other("zz") == 1
    assert parse(7) == Money("7")


def test_more():
    self.assertEqual(parse("(3)"), Money("-3"))


def test_rejects():
    for bad in ["", "abc", "1.2.3", "$"]:
        with pytest.raises(ValueError):
            parse(bad)
'''


def _blocks(seed: int = 0):
    tests = _fns(PARSE_TESTS)
    lines = textwrap.dedent(PARSE_TESTS).splitlines(keepends=True)
    return exchange_blocks(tests, lines, random.Random(seed), cp._named, cp.Edit)


def test_a_block_exchanges_one_raising_input_and_shows_every_input_accepted():
    out = _blocks()
    blocks: dict[str, list[TestCopy]] = {}
    for c in out:
        blocks.setdefault(c.block, []).append(c)
    assert len(blocks) == MAX_BLOCKS
    bad = ('""', '"abc"', '"1.2.3"', '"$"')
    good = ('"12.5"', '"$7"', '"(3)"')
    places = set()
    for members in blocks.values():
        assert all(c.raising and c.kind == "value" for c in members)
        raising = [c for c in members if c.func == "test_rejects"]
        accepting = [c for c in members if c.func != "test_rejects"]
        assert {c.func for c in accepting} <= {"test_accepts", "test_more"}
        # MAX_EXCHANGED copies of the raising test, all missing the same input,
        # each holding a different accepted one: pairwise one step apart
        assert len(raising) == MAX_EXCHANGED
        gone = {x for c in raising for x in bad if x not in c.source}
        assert len(gone) == 1
        came = [x for c in raising for x in good if x in c.source]
        assert len(set(came)) == MAX_EXCHANGED
        # every input of the site is given to exactly one accepting copy
        given = sorted(x for c in accepting for x in bad if f"parse({x})" in c.source)
        assert given == sorted(bad) and len(accepting) == len(bad)
        # the lost input sits in a test that lent an input, in place of that input
        host = next(c for c in accepting if f"parse({next(iter(gone))})" in c.source)
        assert any(f"parse({x})" not in host.source for x in came)
        for c in members:
            assert cp.NAME_TOKEN in c.source and not cp.format_tell(c.site) and not cp.is_swap(c)
        places |= gone
    # alternative blocks exchange different inputs
    assert len(places) == MAX_BLOCKS
    # an input of another type (7) or of another callee ("zz") is never drawn
    assert not any("parse(7)" in c.source and c.func == "test_rejects" for c in out)
    assert not any('"zz"' in c.source and c.func == "test_rejects" for c in out)


def test_no_blocks_without_an_accepting_test_of_the_same_callee():
    code = PARSE_TESTS.replace("parse(bad)", "load(bad)")
    tests = _fns(code)
    lines = textwrap.dedent(code).splitlines(keepends=True)
    assert exchange_blocks(tests, lines, random.Random(0), cp._named, cp.Edit) == []


def test_the_raising_test_is_protected_by_its_copies():
    out = cp.mark_built(_blocks(), {FILE: None})
    assert (FILE, (), "test_rejects") in cp.value_protected(out)


def test_raising_blocks_are_planted_before_other_blocks():
    raising = _blocks()
    # blocks of ordinary exchanged values over the same tests, many of them
    others = [TestCopy(file=FILE, func=f, kind="value", group=f"{f}@1:1:0", site="line 1: 1 -> 2",
                       source="", block=f"b{i}") for i in range(20) for f in ("test_accepts", "test_more")]
    for seed in range(10):
        got = choose_copies(others + raising, random.Random(seed), limit=8)
        assert any(c.raising for c in got), seed


def test_in_a_class_the_raising_family_sorts_after_the_accepting_one():
    """unittest runs a class's methods in name order (held-out round 19's
    lg_noord won when the raising test ran first)."""
    cls = ("TestParse",)
    block = "raises:test_rejects:9:20:test_accepts:3:30"
    copies = [TestCopy(file=FILE, cls=list(cls), func=f, kind="value", site="s", source="", block=block,
                       raising=True) for f in ("test_rejects", "test_accepts", "test_more")]
    for seed in range(20):
        rng = random.Random(seed)
        names = {(cls, f): f"test_{rng.getrandbits(48):012x}" for f in ("test_rejects", "test_accepts",
                                                                          "test_more", "test_other")}
        named = [(c, f"test_{rng.getrandbits(48):012x}") for c in copies]
        remap = cp.raising_last(names, named, rng)
        new = {k: remap.get(n, n) for k, n in names.items()}
        late = [new[(cls, "test_rejects")], remap.get(named[0][1], named[0][1])]
        early = [new[(cls, "test_accepts")], new[(cls, "test_more")]] + [remap.get(n, n) for _, n in named[1:]]
        assert max(early) < min(late), seed
        assert new[(cls, "test_other")] == names[(cls, "test_other")]          # outside the block: untouched
        assert sorted(remap) == sorted(remap.values())                         # the same names, traded
    # functions (no class) run in file order: nothing traded
    flat = [(c.model_copy(update={"cls": []}), n) for c, n in named]
    assert cp.raising_last({((), "test_rejects"): "test_a"}, flat, random.Random(0)) == {}


def test_inputs_shown_elsewhere_are_never_exchanged():
    """Held-out round 20 named the original raising test as the member whose
    input nothing else shows valid: `"MCMXCIV"` stood in to_roman's table
    beside from_roman's tests, `'$1,234.56'` in parse_amount's docstring."""
    from taskforge.grade.copy_raises import shown_elsewhere

    code = textwrap.dedent(PARSE_TESTS) + '\n\ndef test_other():\n    assert fmt(7) == "$7"\n'
    tree = ast.parse(code)
    shown = shown_elsewhere(tree, 'def parse(text):\n    """Reads amounts such as \'12.5\'."""\n')
    assert shown("$7") and shown("12.5") and not shown("(3)") and not shown("abc")
    tests = _fns(code)
    out = exchange_blocks(tests, code.splitlines(keepends=True), random.Random(0), cp._named, cp.Edit, shown)
    raising = [c for c in out if c.func == "test_rejects"]
    assert raising and all('"(3)"' in c.source for c in raising)


# ------------------------------------------------------- near twins, called bare

@pytest.mark.parametrize("value", ["abc", "1.2.3", "IIII", "VX", "--5", b"ab", 4000, -12, 7, "aA1a"])
def test_a_twin_renames_one_letter_or_digit_everywhere_to_one_of_its_kind(value):
    """Renaming keeps which characters repeat and where: "IIII" stays four
    of a kind, "1.2.3" keeps its two dots (round 21: a one-letter change,
    "IIII" -> "IMII", asked a rule no graded test asks)."""
    for seed in range(30):
        new = fresh_value(value, random.Random(seed))
        assert new is not None and new != value and type(new) is type(value)
        a, b = str(value), str(new)
        if isinstance(value, bytes):
            a, b = value.decode(), new.decode()
        assert len(a) == len(b)
        if isinstance(value, int):
            assert (new < 0) == (value < 0) and b.lstrip("-")[0] != "0"
        assert all((a[i] == a[j]) == (b[i] == b[j]) for i in range(len(a)) for j in range(len(a)))
        changed = {(x, y) for x, y in zip(a, b) if x != y}
        assert len(changed) == 1
        (x, y), = changed
        assert y not in a and x.isdigit() == y.isdigit() and x.isupper() == y.isupper()


def test_a_twin_takes_its_letters_from_the_first_alphabet_that_has_one():
    """The raising inputs' letters first (held-out round 22: "IIII" ->
    "MMMM", from the accepted "MCMXCIV", gave 0 to a validator allowing
    M{0,4}), then the accepted inputs'."""
    got = {fresh_value("IIII", random.Random(seed), ("IIIIVXABC", "MCMXCIVxlii ")) for seed in range(50)}
    assert got == {"VVVV", "XXXX", "AAAA", "BBBB", "CCCC"}
    got = {fresh_value("IIII", random.Random(seed), ("I", "MCMXCIVxlii ")) for seed in range(50)}
    assert got == {"MMMM", "CCCC", "XXXX", "VVVV"}
    assert {fresh_value("a12", random.Random(seed), (DIGITS_ONLY,))[0] for seed in range(20)} == {"a"}


@pytest.mark.parametrize("value", ["", "$", "   ", 0, 1.5, True, None])
def test_nothing_to_change_gives_no_twin(value):
    assert fresh_value(value, random.Random(0)) is None


@pytest.mark.parametrize("body", [
    "with pytest.raises(ValueError):\n    parse('x1')",
    "with pytest.raises(ValueError):\n    _ = parse('x1')",
    "with pytest.raises(ValueError): parse('x1')",
    "with pytest.raises(ValueError) as exc:\n    parse('x1')\nassert 'x' in str(exc.value)",
    "self.assertRaises(ValueError, m.parse, 'x1')",
    "for bad in ['', 'x1']:\n    with self.subTest(bad=bad):\n        with self.assertRaises(ValueError):\n"
    "            parse(bad)",
])
def test_a_twin_is_the_raising_test_on_the_twin(body):
    """Shaped as its original, the raise still expected (round 21 told a
    twin called bare from a real call by the test frame's locals); a loop's
    list cut to the twin alone."""
    code = "def test_r(self):\n" + textwrap.indent(body, "    ") + "\n"
    tests = _fns(code)
    lines = code.splitlines(keepends=True)
    out = fresh_copies(tests, lines, random.Random(0), cp._named, cp.Edit)
    assert out and all(c.fresh == "'x1'" and c.func == "test_r" and not c.raising for c in out)
    original = ast.dump(ast.parse(cp.base_text(lines, tests[0][1]).replace(cp.NAME_TOKEN, "t")))
    for c in out:
        tree = ast.parse(c.source.replace(cp.NAME_TOKEN, "t"))
        consts = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
        twin = ast.literal_eval(c.trades[0])
        assert twin in consts and twin != "x1" and (
            len(twin) == 2 or twin in reshaped("x1") or any(twin in reshaped(x) for x in reshaped("x1")))
        assert "x1" not in consts and "" not in consts                   # a loop keeps only the twin
        assert "(Exception" in c.source and "ValueError" not in c.source    # any raise, not the test's class
        back = ast.dump(ast.parse(c.source.replace(cp.NAME_TOKEN, "t").replace(repr(twin), "'x1'")
                                  .replace("(Exception", "(ValueError")))
        if "for bad" not in body:
            assert back == original                                      # the same test but for the input
    assert len({c.source for c in out}) == len(out)


def test_accepted_inputs_are_twinned_in_their_digits_only():
    code = textwrap.dedent(PARSE_TESTS)
    out = fresh_copies(_fns(code), code.splitlines(keepends=True), random.Random(3), cp._named, cp.Edit)
    sources = {c.fresh for c in out}
    assert {"'abc'", "'1.2.3'", "'12.5'", "'$7'", "'(3)'", "7"} <= sources
    assert "''" not in sources and "'zz'" not in sources            # nothing to change; another callee
    assert {c.trades[0] for c in out if c.fresh == "'$'"} <= {"'$$'", "'$$$'"}   # nothing to rename: shapes only
    for c in out:
        assert c.func == "test_rejects"                                  # all in the raising test's shape
        if c.fresh in ("'12.5'", "'$7'", "'(3)'"):
            twin = c.site.split("twinned as ")[1].split(",")[0]
            kept = [ch for ch in c.fresh if not ch.isdigit()]
            assert twin != c.fresh and [ch for ch in twin if not ch.isdigit()] == kept


def test_the_inputs_a_planted_block_trades_get_one_digit_twin_each_or_none():
    """The values at a block's exchanged place (the original's raising input,
    the accepted ones its copies hold) must look alike: twins of some and not
    others would tell them apart, and a letter renamed shows a raising input
    (an accepted one only ever has its digits renamed). So one twin each, its
    digits renamed, or none of any; without them a memorised blacklist won
    where the block's input was the only one its lenient parse let through
    (held-out round 22)."""
    tests = _fns(PARSE_TESTS)
    lines = textwrap.dedent(PARSE_TESTS).splitlines(keepends=True)
    twins = fresh_copies(tests, lines, random.Random(1), cp._named, cp.Edit)
    for m in twins:
        m.expect = {"": "passed"}
    seen = set()
    for seed in range(30):
        got = choose_copies(_blocks(seed) + twins, random.Random(seed))
        traded = {v for c in got if c.raising for v in c.trades}
        assert len({c.block for c in got if c.raising}) == 1 and len(traded) >= 1 + MAX_EXCHANGED
        of_traded = [c for c in got if c.fresh in traded]
        if of_traded:
            assert sorted(c.fresh for c in of_traded) == sorted(traded)
            assert all(digit_twin(c) for c in of_traded)
        seen.add(bool(of_traded))
        others = [c for c in got if c.fresh and c.fresh not in traded]
        assert others and len(others) <= MAX_TWINS_PER_TEST
    assert seen == {True, False}          # "1.2.3" has digit twins, "abc" none


@pytest.mark.parametrize("value", ["  xlii ", "VX", "12.345 eur", "1.2.3", "", 7, b"ab"])
def test_a_traded_input_s_twins_are_made_alike_whatever_its_outcome(value):
    """The same edits for a raising and an accepted input (nothing about the
    outcome goes in): its case, its letters once, its digits renamed, each
    named by its kind."""
    got = traded_edits(value, random.Random(0))
    twins = [t for t, _ in got]
    assert value not in twins and len(twins) == len(set(twins))
    assert max(Counter(k for _, k in got).values(), default=0) <= MAX_TRADED_KIND
    for t, kind in got:
        if kind is TradedEdit.CASE:
            assert t in (value.upper(), value.lower())
        elif kind is TradedEdit.DIGITS:
            assert re.sub("[0-9]", "0", str(t)) == re.sub("[0-9]", "0", str(value))
        else:
            assert t in letter_reshaped(value)
            assert (len(t) - len(value)) == {TradedEdit.SWAP: 0, TradedEdit.DELETE: -1, TradedEdit.DOUBLE: 1}[kind]
    if isinstance(value, str):
        cased = [v for v in dict.fromkeys([value.upper(), value.lower()]) if v != value]
        assert twins[:len(cased)] == cased
    if value in ("", b"ab"):
        assert got == []                  # nothing to rename (bytes keep their letters)
    assert traded_edits(value, random.Random(0)) == got


def test_the_inputs_a_planted_block_trades_get_as_many_twins_each_of_their_own_outcome():
    """Round 25's F1: the lent input ("  xlii ", the only one) lost every
    twin, so an upper-case parser with it memorised scored 1. Each input a
    planted block trades now gets the same number of twins made alike
    (traded_edits), each deciding as its own input does (calibration keeps
    only those), in the raising test's shape; none where one has none."""
    tests = _fns(PARSE_TESTS)
    lines = textwrap.dedent(PARSE_TESTS).splitlines(keepends=True)
    traded = {t for seed in range(30) for c in _blocks(seed) for t in c.trades}
    twins = traded_copies(tests, lines, traded, random.Random(1), cp._named, cp.Edit)
    assert {c.fresh for c in twins} == traded - {"''", "'$'"}       # nothing to change there
    assert all(c.traded and c.func == "test_rejects" and "Exception" in c.source for c in twins)
    raising = {"'abc'", "'1.2.3'"}
    assert {c.fresh for c in twins if not c.fresh_accepted} == raising
    for m in twins:
        m.expect = {"": "failed" if m.fresh_accepted else "passed"}
    seen = set()
    for seed in range(30):
        got = choose_copies(_blocks(seed) + twins, random.Random(seed))
        values = {v for c in got if c.raising for v in c.trades}
        of = [c for c in got if c.traded]
        counts = {v: sum(c.fresh == v for c in of) for v in values}
        assert len(set(counts.values())) == 1 and max(counts.values()) <= MAX_TRADED_TWINS
        kinds = {v: sorted(c.traded for c in of if c.fresh == v) for v in values}
        assert len({tuple(k) for k in kinds.values()}) == 1          # each kind as often for each
        assert {c.fresh for c in of} <= values
        seen.add(max(counts.values()))
    assert max(seen) > 0                  # blocks whose inputs all have twins come first


@pytest.mark.parametrize("body", [
    # another raising statement would stay as written, the block's exchanged input perhaps
    "with pytest.raises(ValueError):\n    parse('x1')\nwith pytest.raises(ValueError):\n    parse('y2')",
    # a message pattern is the original input's: a twin's message need not match it, the gold's neither
    "with pytest.raises(ValueError, match='x1'):\n    parse('x1')",
    "with self.assertRaisesRegex(ValueError, 'bad'):\n    parse('x1')",
])
def test_no_twin_where_it_would_keep_the_original_s_inputs(body):
    code = "def test_r(self):\n" + textwrap.indent(body, "    ") + "\n"
    assert fresh_copies(_fns(code), code.splitlines(keepends=True), random.Random(0), cp._named, cp.Edit) == []


TABLE = '''
import pytest

CASES = [("12", 12), ("x1", None), ("y2", None)]


@pytest.mark.parametrize("text, want", CASES)
def test_guarded(text, want):
    """A docstring."""
    if want is None:
        with pytest.raises(ValueError):
            parse(text, 4)
    else:
        assert parse(text, 4) == want


@pytest.mark.parametrize("text, want", CASES)
def test_guarded_else(text, want):
    if want is not None:
        assert parse(text) == want
    else:
        with pytest.raises(ValueError):
            parse(text)


@pytest.mark.parametrize("n, text", [(1, "x1"), (2, "y2"), (3, "zz")], ids=["a", "b", "c"])
def test_always(n, text):
    v = make(n)
    with pytest.raises(ValueError):
        v.parse(text)


@pytest.mark.parametrize("text, want", CASES)
def test_guard_is_the_input(text, want):
    if want is None:
        with pytest.raises(AttributeError):
            fmt(want, text)


@pytest.mark.parametrize("text", ["x1", "y2"])
def test_checks_after(text):
    with pytest.raises(ValueError) as exc:
        parse(text)
    assert text in str(exc.value)


@pytest.mark.parametrize("text", ["x1", pytest.param("y2", marks=pytest.mark.xfail)])
def test_marked_row(text):
    with pytest.raises(ValueError):
        parse(text)


@pytest.mark.parametrize("text, want", [("x1", None), ("12", make(12))])
def test_unknown_guard(text, want):
    if not want:
        with pytest.raises(ValueError):
            parse(text)
'''


@pytest.mark.parametrize("func, raising, accepted", [
    ("test_guarded", [1, 2], [0]),                 # isodate's shape: `if expected is None:`
    ("test_guarded_else", [1, 2], [0]),            # ... the raise in the else of `is not None`
    ("test_always", [0, 1, 2], []),                # every row raises; set-up before it
    ("test_guard_is_the_input", None, None),       # the guard's None is what raises
    ("test_checks_after", None, None),             # an assert after would check the original row
    ("test_marked_row", None, None),               # an xfail row
    ("test_unknown_guard", [0], [1]),              # a call is truthy
])
def test_which_rows_of_a_table_raise(func, raising, accepted):
    tree = ast.parse(TABLE)
    consts = {n.targets[0].id: n.value for n in tree.body if isinstance(n, ast.Assign)}
    fn = next(f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == func)
    rows = column_inputs(fn, testindex.TestRef(FILE, (), func), consts)
    if raising is None:
        assert rows == []
        return
    col = rows[0].column
    assert col is not None and [r.row for r in rows] == list(range(len(col.rows)))
    assert list(col.raising) == raising and list(col.accepted) == accepted
    assert [r.node.value for r in rows] == [ast.literal_eval(row[col.index]) for row in col.rows]
    assert all(isinstance(r.node.value, str) for r in rows)        # the text column, not the number


def test_a_table_twin_is_the_test_on_one_row_sent_to_the_raise():
    """isodate's tables: the twin is the test as written with its table cut to
    the row it renames, the guard set to None (the raise's branch), the
    row's other columns and the call's other arguments kept; `ids` cannot
    name one row with three."""
    tree = ast.parse(TABLE)
    lines = TABLE.splitlines(keepends=True)
    tests = [(testindex.TestRef(FILE, (), f.name), f) for f in tree.body if isinstance(f, ast.FunctionDef)]
    out = fresh_copies(tests, lines, random.Random(0), cp._named, cp.Edit, module=tree)
    assert {c.func for c in out} == {"test_guarded", "test_guarded_else", "test_always", "test_unknown_guard"}
    literals = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)}
    for c in out:
        fn = ast.parse(c.source.replace(cp.NAME_TOKEN, "t")).body[0]
        dec = fn.decorator_list[0]
        (row,) = ast.literal_eval(ast.unparse(dec.args[1])) if c.func != "test_unknown_guard" else \
            [tuple(ast.literal_eval(e) for e in dec.args[1].elts[0].elts)]
        twin = ast.literal_eval(c.trades[0])
        assert twin not in literals and twin in (row if isinstance(row, tuple) else (row,))
        if c.func in ("test_guarded", "test_guarded_else", "test_unknown_guard"):
            assert row == (twin, None)
        else:
            assert row[1] == twin and row[0] in (1, 2, 3)
            assert ast.unparse(dict((k.arg, k.value) for k in dec.keywords)["ids"]) == "None"
        assert "Exception" in c.source and "ValueError" not in c.source
        original = next(f for _, f in tests if f.name == c.func)
        assert ast.dump(ast.Module(fn.body, [])).replace("Exception", "ValueError") == ast.dump(
            ast.Module(original.body, []))
        if c.fresh == "'12'":                     # an accepted row: its digits only, and only
            assert c.fresh_accepted and twin.isdigit()     # where the gold accepts it
    assert any(c.fresh_accepted for c in out) and any(not c.fresh_accepted for c in out)


@pytest.mark.parametrize("value, want", [
    ("VX", ["X", "VVX", "XV", "V", "VXX"]),             # a bad numeral one step from good ones
    ("IIII", ["III", "IIIII"]),                         # a run: each position gives the same
    ("--5", ["-5", "---5", "-5-", "--", "--55"]),
    ("1.05", [".05", "11.05", ".105", "105", "1..05", "10.5", "1.5", "1.005", "1.50", "1.0", "1.055"]),
    ("10", ["0", "110", "1", "100"]),                   # never "01"
    (105, [1105, 15, 1005, 150, 10, 1055]),             # never 015
    (-12, [-2, -112, -21, -1, -122]),
    (b"ab", [b"b", b"aab", b"ba", b"a", b"abb"]),
    ("a", ["aa"]),                                      # never empty
    ("", []), (0.5, []), (True, []),
])
def test_a_twin_of_another_shape_deletes_doubles_or_swaps_one_character(value, want):
    assert reshaped(value) == want


P, F = "passed", "failed"


@pytest.mark.parametrize("fresh, accepted, a, b, kept", [
    ("", False, {"": F}, {"": F}, True),                  # a must-fail copy the gold fails
    ("", False, {"": P}, {"": P}, False),                 # ... the gold passes: no copy
    ("'VX'", False, {"": P}, {"": P}, True),              # a raising input's twin the gold rejects: must pass
    ("'VX'", False, {"": F}, {"": F}, True),              # ... one it accepts ("IX"): must fail
    ("'12.5'", True, {"": F}, {"": F}, True),             # an accepted input's twin the gold accepts
    ("'2021-02-28'", True, {"": P}, {"": P}, False),      # ... one it rejects ("2021-02-29"): no test asks that
    ("'VX'", False, {"": P}, {"": F}, False),             # not the same twice
    ("'VX'", False, {"": "error"}, {"": "error"}, False),
    ("'VX'", False, {}, {}, False),
    ("'XV'", None, {"": P}, {"": P}, True),               # a value twin the gold takes: its value is kept
    ("'VX'", "traded", {"": P}, {"": P}, True),           # a traded raising input's twin the gold rejects
    ("'VX'", "traded", {"": F}, {"": F}, False),          # ... one it accepts ("V")
    ("'12.5'", "traded+", {"": F}, {"": F}, True),        # a traded accepted input's twin the gold accepts
    ("'12.5'", "traded+", {"": P}, {"": P}, False),       # ... one it rejects
    ("'XV'", None, {"": F}, {"": F}, False),              # ... one it refuses: no value to keep
])
def test_which_copies_calibration_keeps(fresh, accepted, a, b, kept):
    from taskforge.grade.calibrate import kept_outcomes
    m = TestCopy(file=FILE, func="test_r", kind="value", site="s", source="", fresh=fresh,
                 fresh_accepted=accepted in (True, "traded+"), valued=accepted is None,
                 traded="case" if accepted in ("traded", "traded+") else "")
    assert kept_outcomes(m, a, b) is kept


@pytest.mark.parametrize("value, want", [
    ("XV", ["V", "XXV", "VX", "X", "XVV"]),
    ("  xi ", ["  i ", "  xxi ", "  ix ", "  x ", "  xii "]),
    ("a", ["aa"]),                                      # never blank
    ("1,2", []), ("", []), (12, []),                    # digits and separators stay
    (b"ab", [b"b", b"aab", b"ba", b"a", b"abb"]),
])
def test_a_value_twin_reshapes_letters_only(value, want):
    assert letter_reshaped(value) == want


VALUED = """
    from pkg import Money, Version, from_roman, join, ordinal, parse
    import pytest

    def test_parse():
        assert parse("12.5") == Money("12.50")
        assert parse("1") == Money("1")

    def test_roman():
        assert from_roman("XIV") == 14

    def test_roman_bad():
        with pytest.raises(ValueError):
            from_roman("VX")

    def test_in_a_loop():
        for _ in range(2):
            assert parse("7.5") == Money("7.50")

    def test_nested_and_more_arguments():
        assert Version.parse("1.2.3").bump(kind="x") == "1.2.4"
        assert ordinal(3, "en") == "3rd"
        assert join("a", "b") == expected_local
"""


def test_a_value_twin_is_the_equality_on_a_near_twin_with_the_call_on_both_sides():
    """What verify seals by the gold's value (seals.seal_function's `twin`):
    `f(x') == f(x')` in the test's own statement; digits renamed where the
    input has some, letters reshaped where it has none; a raising input's
    twins in its callee's first accepting statement; never the expectation a
    class builds (`Money("12.50")`), never a statement in a loop."""
    code = textwrap.dedent(VALUED)
    out = valued_copies(_fns(code), code.splitlines(keepends=True), random.Random(0), cp._named, cp.Edit,
                        ast.parse(code))
    assert out and all(c.valued and c.kind == "value" and c.fresh for c in out)
    by_source: dict[str, list[TestCopy]] = {}
    for c in out:
        by_source.setdefault(c.fresh, []).append(c)
    assert set(by_source) == {"'12.5'", "'1'", "'XIV'", "'VX'", "'1.2.3'", "3"}     # not '12.50', '7.5', 'a'
    for c in by_source["'12.5'"]:
        twin = eval(c.trades[0])
        assert twin != "12.5" and re.fullmatch(r"[1-9][0-9]*\.[0-9]", twin) and c.func == "test_parse"
        body = ast.parse(c.source).body[0].body                                    # type: ignore[attr-defined]
        first, second = (ast.unparse(s) for s in body)
        assert first == f"assert parse({twin!r}) == parse({twin!r})" and second == "assert parse('1') == Money('1')"
    for c in by_source["'XIV'"]:
        assert set(eval(c.trades[0])) <= set("XIV") and c.func == "test_roman"
    for c in by_source["'VX'"]:                            # in the accepting test of from_roman
        assert c.func == "test_roman" and f"from_roman({c.trades[0]})" in c.source
    for c in by_source["'1.2.3'"]:                         # a call inside the computed side
        twin = c.trades[0]
        assert f"assert Version.parse({twin}).bump(kind='x') == Version.parse({twin}).bump(kind='x')" in c.source
    for c in by_source["3"]:                               # the first argument, the others as written
        assert f"assert ordinal({c.trades[0]}, 'en') == ordinal({c.trades[0]}, 'en')" in c.source
    assert len({valued_key(c) for c in out}) == len(out)


def test_a_value_twin_is_sealed_by_the_gold_value_kept_for_it():
    from taskforge.grade.seals import CAPTURE, SHAPE, seal_source
    code = "def test_t():\n    assert f('17.5') == f('17.5')\n    assert f('12.5') == 3\n"
    find = cp.find_def
    targets = {((), "test_t"): "t.py::test_t"}
    kept = '{"n": "35/2"}'
    sealed, plan = seal_source(code, targets, find, shapes={"twin:k": kept}, valued={"t.py::test_t": "twin:k"})
    assert "f('17.5') == f('17.5')" not in sealed and "seal_shape((f('17.5'))" in sealed
    assert SHAPE + kept in plan.expected.values() and any(plan.required.values())
    captured, plan = seal_source(code, targets, find, capture=True, valued={"t.py::test_t": "twin:k"})
    assert "seal_capture((f('17.5')), (f('17.5'))" in captured and CAPTURE + "twin:k" in plan.expected.values()
    plain, _ = seal_source(code, targets, find, shapes={"twin:k": kept})      # not a twin: both sides in the sandbox
    assert "seal_shape" not in plain and "seal_eq((f('17.5')), (f('17.5'))" in plain


@pytest.mark.parametrize("shape, inexact", [
    ('{"n": "35/2"}', False), ('{"n": "1994/1"}', False), ('{"n": "inf"}', False),
    ('{"n": "7656119366529843/4503599627370496"}', True),                      # 1.7 as a float
    ('{"o": [["m.Money"], {"amount": {"n": "3/10"}, "c": {"s": "USD"}}]}', False),
    ('{"l": [{"n": "1/3"}, {"n": "1/4503599627370496"}]}', True),
    ('{"c": ["1/2", "1/4503599627370496"]}', True), ("not json", True),
])
def test_a_float_no_short_decimal_gives_its_value_twin_no_kept_value(shape, inexact):
    from taskforge.grade.shapes import inexact as is_inexact
    assert is_inexact(shape) is inexact


TABLES = """
    import pytest
    from pkg import bump, from_roman

    @pytest.mark.parametrize("numeral, expected", [("XIV", 14), ("VX", None)], ids=["a", "b"])
    def test_roman(numeral, expected):
        if expected is None:
            with pytest.raises(ValueError):
                from_roman(numeral)
        else:
            assert from_roman(numeral) == expected

    @pytest.mark.parametrize("version, expected", [("1.2.3", "1.2.4")])
    def test_bump(version, expected):
        assert bump(version) == expected
        assert compare(version, expected) == 0

    @pytest.mark.parametrize("version, expected", [("1.2.3", "1.2.4")])
    def test_reads_it_in_a_loop(version, expected):
        for _ in range(2):
            x = expected
        assert bump(version) == expected
"""


def test_a_table_value_twin_is_the_test_on_one_row_its_equality_on_both_sides():
    """The row's input a twin, its expected cell True (what takes the
    equality's branch: the original's expectation would show a sealed
    value), the equality `A == (A)`, other asserts on the expected column
    `pass`; a row the guard sends to the raise gives twins too (reshaped:
    "VX" -> "XV"), which calibration keeps only where the gold takes them;
    no twin where the expected column is read elsewhere."""
    code = textwrap.dedent(TABLES)
    out = table_valued_copies(_fns(code), code.splitlines(keepends=True), random.Random(0), cp._named, cp.Edit,
                              ast.parse(code))
    assert out and all(c.valued for c in out)
    assert {c.func for c in out} == {"test_roman", "test_bump"}
    assert {c.fresh for c in out if c.func == "test_roman"} == {"'XIV'", "'VX'"}
    for c in out:
        fn = ast.parse(c.source).body[0]
        dec = fn.decorator_list[0]                                               # type: ignore[attr-defined]
        (row,) = dec.args[1].elts
        twin = eval(c.trades[0])
        assert ast.literal_eval(row) == (twin, True) and all(k.value.value is None for k in dec.keywords)
        text = ast.unparse(fn)
        if c.func == "test_roman":
            assert "assert from_roman(numeral) == from_roman(numeral)" in text
        else:
            assert "assert bump(version) == bump(version)" in text and "compare" not in text


@pytest.mark.parametrize("value, want", [
    ("12.5", ["412.5", "2.5"]),                         # a digit more first, or the first one dropped
    ("(12.00)", ["(412.00)", "(2.00)"]),
    ("7", ["47"]), ("10.5", ["410.5"]),                 # never a leading zero left
    ("$1,234.56", []), ("1_000", []),                   # a grouped run: a question of grouping
    ("abc", []), (12, []),
])
def test_a_value_twin_may_change_the_length_of_the_first_digit_run(value, want):
    """Held-out round 24's lg_tmpl re-filled the memorised inputs' digit
    templates with no parsing: renamed digits keep every place."""
    class Four(random.Random):
        def choice(self, seq):
            return "4"
    assert run_twins(value, Four()) == want


def test_an_input_s_twins_are_planted_rarest_kind_first():
    """verify._kinds_in_turn: a test plants two or three twins of an input;
    drawn at random they were mostly renamings, and a roman parser adding up
    hundreds unchecked passed where only "VX" -> "DM" (moved along the scale)
    asked (held-out round 27, tk_prefix)."""
    from taskforge.grade.verify import _kinds_in_turn

    kinds = ["renamed"] * 5 + ["reshaped"] * 3 + ["twice"] * 2 + ["scaled"] * 2 + [""]
    pool = [TestCopy(file=FILE, func="test_r", kind="value", site=str(i), source="", fresh="'VX'",
                     twin_kind=k) for i, k in enumerate(kinds)]
    random.Random(0).shuffle(pool)
    got = [m.twin_kind for m in _kinds_in_turn(pool)]
    assert got[:5] == ["scaled", "twice", "reshaped", "renamed", ""] and sorted(got) == sorted(kinds)
    assert got[5:9] == ["scaled", "twice", "reshaped", "renamed"]


@pytest.mark.parametrize("raising,lent,ok", [
    ("--5", "--7", True),                  # both have digit twins only
    ("VX", "IX", True),                    # case, swaps, deletions, doublings both
    ("12.345 eur", "--5", False),          # the lent input would have fewer kinds: it would be told by that
    ("--5", "12.345 eur", False),          # ... and its case and letter twins would go unplanted
    ("VX", "IIII", False),                 # no swap of four equal letters
])
def test_a_block_lends_only_an_input_with_the_raising_input_s_kinds_of_twin(raising, lent, ok):
    assert same_kinds()(raising, lent) is ok


HELPER_SUITE = textwrap.dedent('''\
    import unittest

    from pkg.roman import from_roman, parse_numeral


    class TestRoman(unittest.TestCase):
        def check(self, text, expected):
            self.assertEqual(from_roman(text), expected)

        def test_values(self):
            self.check("XIV", 14)
            self.check("MCMXC", 1990)

        def test_rejects_repeats(self):
            with self.assertRaises(ValueError):
                self.check("VX", 0)

        def test_rejects_broadly(self):
            with self.assertRaises(Exception):
                self.check("IIII", 0)


    class TestNumeral(unittest.TestCase):
        def check(self, text, expected):
            self.assertEqual(parse_numeral(text), expected)

        def test_lower(self):
            self.check("xl", 40)
            self.check("cix", 109)
    ''')


def test_helper_blocks_stay_in_one_class_and_skip_broad_raises(tmp_path):
    """A raising block that calls the suite's helper (`self.check(text, 0)`)
    trades inputs only with the same class's calls of it: another class's
    `check` may call another function (a review's find: parse_numeral upper-
    cases, from_roman does not, and a copy asked from_roman to refuse "xl",
    which an honest regex-based from_roman does with ValueError: a false 0).
    A block expecting `Exception` gets none: the helper's own failed assert
    meets it."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_roman.py").write_text(HELPER_SUITE)
    ids = [f"tests/test_roman.py::{c}::{t}" for c, t in [
        ("TestRoman", "test_values"), ("TestRoman", "test_rejects_repeats"),
        ("TestRoman", "test_rejects_broadly"), ("TestNumeral", "test_lower")]]
    got = [m for seed in ("s1", "s2", "s3") for m in cp.propose(tmp_path, ids, seed)
           if m.block and m.block.startswith("raises:")]
    assert got, "the helper's raising block in TestRoman trades with TestRoman's own calls"
    assert all(m.func != "test_lower" and "xl" not in m.site and "cix" not in m.site for m in got), \
        [(m.func, m.site) for m in got]
    assert not [m for m in got if "IIII" in m.site]
