"""Difficulty: the static measures of a removal (code lines, statements, McCabe
complexity), the score and the tier thresholds, as tables over small snippets.
Pure functions: no repository, no sandbox (the fast tier)."""
from __future__ import annotations

import ast
import textwrap

import pytest

from taskforge.models import Difficulty, Tier
from taskforge.propose.difficulty import WRAP, code_lines, complexity, measure, rate, snippet, statements, statements_in


def tree(src: str) -> ast.Module:
    return ast.parse(textwrap.dedent(src))


# ---------------------------------------------------------------- snippet

CLASS = '''\
class K:
    def m(self):
        x = 1
        return x

    def n(self):
        s = """
a string whose lines start at column 0
"""
# a comment at column 0
        return s
'''


def test_snippet_dedents_a_method_so_it_parses_alone():
    got = snippet(CLASS, 2, 4)
    assert got == "def m(self):\n    x = 1\n    return x\n"
    assert statements_in(CLASS, 2, 4) == 2


def test_snippet_wraps_a_method_with_column_0_lines_under_if_true():
    got = snippet(CLASS, 6, 11)
    assert got.splitlines()[0] == WRAP and got.splitlines()[1] == "    def n(self):"
    assert ast.parse(got)                    # parses as is
    assert statements_in(CLASS, 6, 11) == 2


def test_snippet_of_tab_indented_method_with_column_0_line_is_wrapped():
    code = "class K:\n\tdef m(self):\n# col 0\n\t\treturn 1\n"
    got = snippet(code, 2, 4)
    assert got.startswith(WRAP + "\n") and statements_in(code, 2, 4) == 1


def test_snippet_wraps_a_method_that_ends_on_a_column_0_line():
    code = 'class K:\n    def m(self):\n        return """\nx"""\n'
    got = snippet(code, 2, 4)
    assert got.startswith(WRAP + "\n") and statements_in(code, 2, 4) == 1


def test_snippet_of_top_level_code_is_the_lines_themselves():
    code = "import os\n\n\ndef f():\n    return os.sep\n"
    assert snippet(code, 4, 5) == "def f():\n    return os.sep\n"


def test_statements_in_unparsable_lines_is_zero():
    assert statements_in("def f(:\n    return 1\n", 1, 2) == 0


# ---------------------------------------------------------------- statements

@pytest.mark.parametrize("src,want", [
    ("def f():\n    pass\n", 0),                                  # pass is no work
    ("def f():\n    ...\n", 0),
    ("def f():\n    '''doc'''\n    return 1\n", 1),              # the docstring aside
    ("def f():\n    x = 1\n    'not a docstring'\n", 2),          # a string later is a statement
    ("def f():\n    '''doc'''\n    pass\n", 0),
    ("x = 1\ny = 2\n", 0),                                        # module level: not a body
    ("class C:\n    a: int\n    b: int = 0\n", 2),                # a field list counts
    ("class C:\n    '''doc'''\n    def m(self):\n        return 1\n", 1),   # the def itself is not
    ("def f(x):\n    if x:\n        return 1\n    else:\n        return 2\n", 3),
    ("def f(x):\n    if x:\n        return 1\n    else:\n        pass\n", 2),   # a trivial else
    ("def f():\n    try:\n        a()\n    except E:\n        b()\n    finally:\n        c()\n", 4),
    ("def f():\n    for i in x:\n        a()\n    else:\n        b()\n        c()\n", 4),
    ("def f():\n    def g():\n        return 1\n    return g\n", 2),      # nested bodies count
])
def test_statements_count_the_work_in_bodies(src, want):
    assert statements(tree(src)) == want


# ---------------------------------------------------------------- complexity

@pytest.mark.parametrize("src,want", [
    ("x = 1\n", 0),                                                # no function: nothing
    ("def f():\n    return 1\n", 1),
    ("def f(x):\n    if x:\n        return 1\n    return 2\n", 2),
    ("def f(x):\n    for i in x:\n        pass\n", 2),
    ("async def f(x):\n    async for i in x:\n        pass\n", 2),
    ("def f(x):\n    while x:\n        x -= 1\n", 2),
    ("def f(x):\n    return 1 if x else 2\n", 2),
    ("def f():\n    try:\n        a()\n    except A:\n        pass\n    except B:\n        pass\n", 3),
    ("def f():\n    with a():\n        pass\n", 2),
    ("async def f():\n    async with a():\n        pass\n", 2),
    ("def f(x):\n    assert x\n", 2),
    ("def f(x):\n    match x:\n        case 1:\n            pass\n        case _:\n            pass\n", 3),
    ("def f(a, b, c):\n    return a and b and c\n", 3),           # a BoolOp of 3: two decisions
    ("def f(a, b):\n    return a or b\n", 2),
    ("def f(x):\n    return [i for i in x]\n", 2),
    ("def f(x):\n    return [i for i in x if i]\n", 3),          # the loop and its if
    ("def f(x):\n    return [i for i in x if i if i > 2]\n", 4),  # ... and each if
    ("def f(x):\n    return {i: j for i in x for j in i}\n", 3),
    ("def f():\n    return 1\n\n\ndef g(x):\n    if x:\n        pass\n", 3),   # summed
    ("class C:\n    def m(self, x):\n        if x:\n            pass\n", 2),   # methods too
])
def test_complexity_is_mccabe_summed_over_functions(src, want):
    assert complexity(tree(src)) == want


NESTED = "def f(x):\n    if x:\n        pass\n    def g(y):\n        if y:\n            pass\n"


def test_a_nested_def_adds_its_own_one():
    assert complexity(tree(NESTED)) >= 4          # f: 1 + if; g: 1 + if


def test_a_nested_def_is_counted_once_on_its_own():
    """Found by mutation testing: the nested def's `if` was counted in f too (5)."""
    assert complexity(tree(NESTED)) == 4


# ---------------------------------------------------------------- code lines

@pytest.mark.parametrize("src,want", [
    ("def f():\n    return 1\n", 2),
    ("def f():\n\n    # a comment\n    return 1\n", 2),            # blanks and comments aside
    ("def f():\n    '''one\n    two\n    three'''\n    return 1\n", 2),   # a docstring is no work
    ("def f():\n    '''one\n    two'''\n    return 1\n", 2),            # ... to its last line
    ("class C:\n    '''doc'''\n    def m(self):\n        '''doc'''\n        return 1\n", 3),
    ("def f():\n    x = '''not\n    a doc'''\n    return x\n", 4),   # a string that is code
    (WRAP + "\n    def f():\n        return 1\n", 2),              # snippet's wrapper is not
    ("def f():\n    " + WRAP + "\n        return 1\n", 3),        # ... except as real code
])
def test_code_lines_leave_out_blanks_comments_docstrings_and_the_wrapper(src, want):
    assert code_lines(ast.parse(src), src) == want


def test_the_wrapper_counts_only_on_the_first_line():
    src = "x = 1\n" + WRAP + "\n    y = 2\n"
    assert code_lines(ast.parse(src), src) == 3


# ---------------------------------------------------------------- measure

def test_measure_sums_every_piece_and_keeps_the_counts_given():
    a = "def f(x):\n    '''doc'''\n    if x:\n        return 1\n    return 2\n"
    b = "def g():\n    # note\n    return [i for i in range(3)]\n"
    d = measure([a, b], files=3, symbols=2, public=1, fan_out=4, hidden_tests=5)
    assert (d.removed_lines, d.statements, d.complexity) == (4 + 2, 3 + 1, 2 + 2)
    assert (d.files, d.symbols, d.public_symbols, d.centrality, d.hidden_tests) == (3, 2, 1, 4, 5)
    assert d.score == rate(d.model_copy()).score and d.tier == Tier.MEDIUM


def test_measure_of_unparsable_piece_counts_its_non_blank_lines_only():
    broken = "def f(:\n\n    return 1\n    # still a line\n"
    d = measure([broken], files=1, symbols=1, public=1, fan_out=0)
    assert (d.removed_lines, d.statements, d.complexity) == (3, 0, 0)
    d2 = measure([broken, "def g():\n    return 2\n"], files=1, symbols=2, public=1, fan_out=0)
    assert (d2.removed_lines, d2.statements, d2.complexity) == (5, 1, 1)


def test_measure_of_nothing_is_easy_and_zero():
    d = measure([], files=1, symbols=0, public=0, fan_out=0)
    assert (d.removed_lines, d.statements, d.complexity, d.score, d.tier) == (0, 0, 0, 0.0, Tier.EASY)
    assert d.hidden_tests == 0                                # not counted yet: none


# ---------------------------------------------------------------- score and tier

@pytest.mark.parametrize("fields,score", [
    ({}, 0.0),
    ({"removed_lines": 25}, 2.5),                       # a tenth a line
    ({"complexity": 6}, 2.0),                           # a third a decision
    ({"complexity": 1}, 0.33),                          # rounded to two places
    ({"files": 1}, 0.0),                                # one file costs nothing extra
    ({"files": 3}, 4.0),                                # two a further file
    ({"public_symbols": 1}, 0.0),
    ({"public_symbols": 4}, 3.0),                       # one a further public definition
    ({"centrality": 7}, 0.7),                           # a tenth an edge
    ({"removed_lines": 25, "complexity": 6, "files": 3, "public_symbols": 4, "centrality": 7}, 12.2),
    ({"statements": 50, "symbols": 9, "hidden_tests": 9}, 0.0),   # not in the score
])
def test_score_weights_lines_complexity_files_public_and_centrality(fields, score):
    assert rate(Difficulty(**fields)).score == score


def test_score_never_goes_negative_for_no_files_or_public_definitions():
    assert rate(Difficulty(files=0, public_symbols=0, removed_lines=10)).score == 1.0


def test_rate_overwrites_a_stale_tier_and_score():
    d = rate(Difficulty(removed_lines=1, files=1, tier=Tier.HARD, score=99.0))
    assert d.tier == Tier.EASY and d.score == 0.1


def T(lines=0, files=1, public=1, cc=0):
    return Difficulty(removed_lines=lines, files=files, public_symbols=public, complexity=cc)


@pytest.mark.parametrize("d,tier", [
    # HARD (issue 24): 150 lines or more over two files or more ...
    (T(150, 2), Tier.HARD),
    (T(149, 2, public=9, cc=99), Tier.MEDIUM),
    (T(150, 1), Tier.MEDIUM),
    (T(150, 5), Tier.HARD),
    (T(151, 2), Tier.HARD), (T(299, 2), Tier.HARD),
    # ... or 300 in one file (or any number).
    (T(300, 1), Tier.HARD),
    (T(299, 1, public=9, cc=99), Tier.MEDIUM),
    (T(300, 0), Tier.HARD), (T(301, 1), Tier.HARD), (T(1000, 1), Tier.HARD),
    # MEDIUM: any one of 15 lines, complexity 5, two public definitions, two files.
    (T(15), Tier.MEDIUM), (T(14), Tier.EASY),
    (T(cc=5), Tier.MEDIUM), (T(cc=4), Tier.EASY),
    (T(public=2), Tier.MEDIUM), (T(public=1), Tier.EASY),
    (T(files=2), Tier.MEDIUM), (T(files=1), Tier.EASY),
    (T(16), Tier.MEDIUM), (T(cc=6), Tier.MEDIUM), (T(public=3), Tier.MEDIUM),  # above each edge
    (T(files=3), Tier.MEDIUM),
    (T(14, files=1, public=1, cc=4), Tier.EASY),            # every one just under
    (T(0, files=9, public=9, cc=99), Tier.MEDIUM),          # none of them alone is HARD
    (T(0, files=0, public=0), Tier.EASY),
])
def test_tier_thresholds_at_their_edges(d, tier):
    assert rate(d).tier == tier
