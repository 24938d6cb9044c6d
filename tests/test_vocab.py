"""The word lists a feature reads (grade/vocab.py), and the value twins that
swap their words (copy_raises.valued_copies, table_valued_copies)."""
from __future__ import annotations

import ast
import random

import pytest

from taskforge.analysis import testindex
from taskforge.grade import copy_raises, vocab
from taskforge.grade.copies import Edit, _named

CURRENCY = '''
from typing import Dict
CURRENCY_SYMBOLS: Dict[str, str] = {"USD": "$", "EUR": "\\u20ac", "GBP": "\\u00a3", "JPY": "\\u00a5"}
SYMBOL_CURRENCIES = {sym: code for code, sym in CURRENCY_SYMBOLS.items()}
MODES = ("strict", "lenient")
UNUSED = ("alpha", "beta", "gamma")
'''

PARSING = '''
from currency import SYMBOL_CURRENCIES, MODES
def _split(text):
    for symbol, code in SYMBOL_CURRENCIES.items():
        if symbol in text:
            return text.replace(symbol, ""), code
    return text, None
def parse(text, mode=MODES[0]):
    return _split(text)
'''


@pytest.mark.parametrize("source, lists", [
    ('{"USD": "$", "EUR": "E", "GBP": "L"}', [("USD", "EUR", "GBP"), ("$", "E", "L")]),     # keys apart from values
    ('((1000, "M"), (900, "CM"), (500, "D"))', [("M", "CM", "D")]),                          # a table's column
    ('frozenset({"a", "b", "c"})', [("a", "b", "c")]),
    ('("x", "y")', []),                                                                      # two modes, no list
    ('["ok", "  ", "no"]', []),                                                               # a blank word
    ('{"a": f(1), "b": 2, "c": 3}', []),                                                     # not a literal
    ('[w for w in "abc"]', []),
    ('("a" * 20, "b", "c")', []),                                                             # an expression
])
def test_word_lists_are_a_literal_collection_s_columns(source, lists):
    assert vocab.word_lists(ast.parse(source, mode="eval").body) == lists


def test_the_vocabularies_are_those_the_removed_code_reads_through_constants():
    got = vocab.read_vocabularies([CURRENCY, PARSING], {"parse", "_split"})
    # SYMBOL_CURRENCIES (a comprehension) leads to CURRENCY_SYMBOLS; MODES has
    # two words; UNUSED is read by nothing removed
    assert got == [("USD", "EUR", "GBP", "JPY"), ("$", "\u20ac", "\u00a3", "\u00a5")]
    # a list removed with the feature is not the workspace's: no twin from it
    assert vocab.read_vocabularies([CURRENCY, PARSING], {"parse", "_split", "CURRENCY_SYMBOLS"}) == []
    assert vocab.read_vocabularies([CURRENCY, PARSING], {"unrelated"}) == []


@pytest.mark.parametrize("value, expected", [
    ("12.345 eur", ["12.345 usd", "12.345 USD", "12.345 gbp", "12.345 GBP"]),   # the test's case, the list's
    ("\u0130\u0130 12 eur", ["\u0130\u0130 12 usd", "\u0130\u0130 12 USD",          # "İ".lower() is longer
                          "\u0130\u0130 12 gbp", "\u0130\u0130 12 GBP"]),
    ("-\u20ac5", ["-$5", "-\u00a35"]),
    ("JPY", ["USD", "EUR", "GBP"]),
    ("12.5", []),
    ("", []),
    (12, []),
])
def test_a_word_is_swapped_for_the_others_of_its_list(value, expected):
    lists = [("USD", "EUR", "GBP", "JPY")[:3 if value != "JPY" else 4], ("$", "\u20ac", "\u00a3")]
    assert vocab.swapped(value, lists) == expected


TESTS = '''
from ledger import Money, parse_amount

def test_currency():
    assert parse_amount("12.345 eur") == Money("12.35", "EUR")
    assert parse_amount("3", currency="JPY") == Money("3", "JPY")
'''


def _twins(text: str, words: tuple[vocab.Vocabulary, ...]):
    tree = ast.parse(text)
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef))
    return copy_raises.valued_copies([(testindex.TestRef("tests/test_x.py", (), fn.name), fn)], text.splitlines(True),
                                     random.Random(3), _named, Edit, module=tree, vocab=words)


def test_value_twins_swap_words_of_the_input_and_of_a_keyword():
    lists = (("USD", "EUR", "GBP", "JPY"),)
    twins = _twins(TESTS, lists)
    worded = {m.trades[0] for m in twins if m.word}
    # "EUR" is a literal of the file (another call's expectation): no twin is one
    assert worded == {"'12.345 usd'", "'12.345 gbp'", "'12.345 jpy'", "'12.345 USD'", "'12.345 GBP'",
                      "'12.345 JPY'", "'USD'", "'GBP'"}
    assert all(m.valued for m in twins)
    kw = next(m for m in twins if m.trades[0] == "'GBP'")
    assert "parse_amount('3', currency='GBP') == parse_amount('3', currency='GBP')" in kw.source
    # without a list, no word is swapped
    plain = _twins(TESTS, ())
    assert plain and not any(m.word for m in plain)
    assert not {m.trades[0] for m in plain} & worded


def test_a_table_row_s_words_are_swapped_too():
    text = '''import pytest
from textkit import from_roman

@pytest.mark.parametrize("numeral, expected", [("MCMXCIV", 1994), ("XLII", 42)])
def test_table(numeral, expected):
    assert from_roman(numeral) == expected
'''
    tree = ast.parse(text)
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef))
    lists = (("M", "CM", "D", "CD", "C", "XC", "L", "XL", "X", "IX", "V", "IV", "I"),)
    ref = testindex.TestRef("tests/test_x.py", (), fn.name)
    twins = copy_raises.table_valued_copies([(ref, fn)], text.splitlines(True), random.Random(1), _named, Edit,
                                            module=tree, vocab=lists)
    worded = [m for m in twins if m.word]
    assert worded
    for m in worded:
        value = eval(m.trades[0])
        assert value in vocab.swapped(eval(m.fresh), lists)
        assert f"[({m.trades[0]}, True)]" in m.source


ROMAN = ("M", "CM", "D", "CD", "C", "XC", "L", "XL", "X", "IX", "V", "IV", "I")


@pytest.mark.parametrize("value, words, expected", [
    ("MCMXCIV", ROMAN, [(0, 1, "M"), (1, 3, "CM"), (3, 5, "XC"), (5, 7, "IV")]),    # the longest, not C in CM
    ("one: n is 1", ("n", "i", "v", "w"), [(5, 6, "n")]),              # not the n of "one", the i of "is"
    ("January 5", ("Jan", "January", "Feb"), [(0, 7, "January")]),                # not its "Jan"
    ("12EUR", ("USD", "EUR", "GBP"), [(2, 5, "EUR")]),                            # digits end a word of letters
    ("-\u20ac5", ("$", "\u20ac", "\u00a3"), [(1, 2, "\u20ac")]),                   # a symbol stands alone
    ("EURO", ("USD", "EUR", "GBP"), []),                                          # the O runs on
])
def test_a_word_stands_where_it_does_not_run_on_into_another(value, words, expected):
    assert sorted(vocab.occurrences(value, words)) == expected


def test_twins_swap_in_the_words_least_swapped_in_so_far():
    """vocab.covering: a random draw of roman swaps left D and L out of every
    planted twin (held-out round 25); drawn by count, every word comes in
    before any comes in twice."""
    words = ["D", "L", "C", "X", "V", "I"]
    cands = [(f"t{w}{i}", w) for w in words for i in range(3)]
    counts: dict[str, int] = {}
    got = vocab.covering(cands, counts, 6, random.Random(5))
    assert sorted(t[1] for t in got) == sorted(words) and all(n == 1 for n in counts.values())
    more = vocab.covering(cands, counts, 3, random.Random(6))
    assert len(more) == 3 and max(counts.values()) == 2


def test_a_test_s_planted_word_twins_cover_the_words():
    """verify._drawn: an input's twins in turn, and of word twins the words
    planted least first across the task's tests; verify._valued plants word
    twins beyond the other value twins' budget."""
    from taskforge.grade.verify import MAX_VALUED_PER_TEST, _drawn, _valued
    from taskforge.models import TestCopy

    def twin(fresh, trade, word=""):
        return TestCopy(file="t.py", func="test_f", kind="value", fresh=fresh, trades=[trade], valued=True,
                        word=word, source="", site=trade)
    a = [twin("'-€5'", f"'-{s}5{i}'", s) for s in ("$", "£", "¥") for i in range(3)]
    b = [twin("'($7)'", f"'({s}7{i})'", s) for s in ("£", "¥", "₹") for i in range(3)]
    seen: dict[str, int] = {}
    got = _drawn([a, b], 4, seen)
    assert [m.fresh for m in got] == ["'-€5'", "'($7)'", "'-€5'", "'($7)'"]
    assert sorted(seen) == ["$", "£", "¥", "₹"] and set(seen.values()) == {1}
    # no word twin: the inputs in turn
    plain = [twin("'12.5'", f"'{d}2.5'") for d in "3456"] + [twin("'3'", f"'{d}'") for d in "789"]
    assert [m.fresh for m in _drawn([plain[:4], plain[4:]], 5, {})] == ["'12.5'", "'3'"] * 2 + ["'12.5'"]
    planted = _valued(plain * 2 + a + b, {}, random.Random(0))
    assert sum(1 for m in planted if not m.word) == MAX_VALUED_PER_TEST
    assert {m.word for m in planted if m.word} == {"$", "£", "¥", "₹"}


ROMAN = ("M", "CM", "D", "CD", "C", "XC", "L", "XL", "X", "IX", "V", "IV", "I")


@pytest.mark.parametrize("value, lists, want", [
    ("VX", (ROMAN,), ["DM", "LC"]),                  # the same mistake up the scale, farthest first
    ("IIII", (ROMAN,), ["CCCC", "XXXX"]),
    ("vx", (ROMAN,), ["dm", "lc"]),                  # in its case
    ("MCMM", (ROMAN,), ["XIXX", "CXCC"]),            # down the scale where up leaves it
    ("ABC", (ROMAN,), []),                           # letters no list holds: no scale
    ("  xlii ", (ROMAN,), ["  cdxx "]),
    ("$", (("$", "€", "£", "¥", "₹"),), ["₹", "£"]),
    ("12", (ROMAN,), []), ("", (ROMAN,), []), (7, (ROMAN,), []),
    ("VX", (("USD", "EUR", "GBP"),), []),             # no one-character words
])
def test_a_raising_input_moves_along_its_scale(value, lists, want):
    """vocab.scaled: every one-character word of a list moved the same places
    along the list's order at once (held-out round 27's tk_prefix, which
    added up hundreds unchecked, passed every twin near "VX")."""
    assert vocab.scaled(value, lists) == want


def test_a_test_s_word_twins_hold_both_spellings_of_an_input():
    """verify._spelling: drawn by word alone, an input's word twins were all
    in its own case in 33 of 200 plant seeds ("12.345 gbp", never "12.345
    GBP"), and a parser of lower-case codes only scored 1 there."""
    from taskforge.grade.verify import _drawn
    from taskforge.models import TestCopy

    def twin(text: str, word: str) -> TestCopy:
        return TestCopy(file="t.py", func="test_a", kind="value", site="s", source="", fresh="'12.345 eur'",
                        trades=[repr(text)], valued=True, word=word)
    for seed in range(20):
        pool = [twin(t, w) for t, w in vocab.swaps("12.345 eur", (("USD", "EUR", "GBP", "JPY", "INR"),))]
        random.Random(seed).shuffle(pool)
        got = _drawn([pool], 2, {})
        assert sorted(w in eval(m.trades[0]) for m in got for w in [m.word]) == [False, True]
