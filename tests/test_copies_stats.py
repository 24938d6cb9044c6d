"""Copies a statistical attacker cannot tell from the original (issue 23, item 1-2).

The attacker (tests/copies_attack.py) sees each planted file as verify writes
it and scores every member of each group (a test and its copies) on value
frequencies in the module and in the machine's other test files, roundness,
magnitude and rank of numbers, character models and edit distances of strings,
exception vocabulary, and the polarity of complements. Its model is fitted on
the groups of one half of the corpus files and scored on the other (and the
other way round): every group is scored by a model that never saw its file.

Corpus: the fixtures, and the test files installed packages ship (numpy,
pandas, scipy, networkx, sympy, libcst, ...), read where they are installed.
The one-step generator (CopyStyle.LEGACY) loses to the same attacker: reading a
graded test file is therefore charged by the monitor. The matched generator
(CopyStyle.MATCHED) and the exchange blocks (CopyStyle.EXCHANGED, the default,
tests/test_copy_blocks.py) are measured by bench/bench_copies.py.
"""
from __future__ import annotations

import ast
import math
import random
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from copies_attack import NAMES, Sample, _strict_pick, best_single, binomial_upper_p, fit, pick  # noqa: E402
from copies_harness import corpus_files, corpus_of, held_out, planted_samples, split  # noqa: E402

from taskforge.grade import copies as cp  # noqa: E402
from taskforge.grade import copy_odds, copy_steps, copy_values  # noqa: E402
from taskforge.grade.class_tree import ClassTree  # noqa: E402
from taskforge.grade.verify import choose_copies  # noqa: E402
from taskforge.models import TestCopy  # noqa: E402


def _propose(*args, **kwargs):
    """copies.propose less its value twins (copy_raises.valued_copies): they
    keep their input's expectation as `f(x') == f(x')` and are judged by the
    gold's value, not must-fail copies of an original, which these tests study."""
    return [m for m in cp.propose(*args, **kwargs) if not m.valued]


def cross_fitted(style: cp.CopyStyle, per_package: int, only=None, keep=lambda s: True
                 ) -> tuple[list[Sample], list[int], list[int], dict]:
    """Every group scored by a model fitted on the other half of the files:
    (groups, hits of the model, hits of the best single signal, counts).
    `only`: a choice of the corpus files; `keep`: which groups count."""
    files = corpus_files(per_package)
    corpus = corpus_of(files)
    halves = split(only(files) if only else files)
    parts = []
    stats = {"tests": 0, "copied": 0}
    for h in halves:
        s, st = planted_samples(h, style, corpus)
        parts.append([x for x in s if keep(x)])
        stats["tests"] += st["tests"]
        stats["copied"] += st["copied"]
    groups: list[Sample] = []
    hits: list[int] = []
    single: list[int] = []
    for train, test in ((parts[0], parts[1]), (parts[1], parts[0])):
        w = fit(train)
        j, sign = best_single(train)
        wj = [0.0] * len(NAMES)
        wj[j] = sign
        groups += test
        hits += [int(pick(w, s.feats) == s.truth) for s in test]
        single += [int(_strict_pick(wj, s.feats) == s.truth) for s in test]
    return groups, hits, single, stats


def p_above_chance(groups: list[Sample], hits: list[int]) -> float:
    return binomial_upper_p(sum(hits), [1 / len(s.feats) for s in groups])


@pytest.fixture
def unbalanced(monkeypatch):
    monkeypatch.setattr(cp, "BALANCED", False)


def test_the_attacker_beats_the_old_copies(unbalanced):
    """The distinguisher is a real one: the one-step copies, unbalanced, lose to it by far."""
    groups, hits, single, _ = cross_fitted(cp.CopyStyle.LEGACY, per_package=4)
    assert len(groups) >= 150, len(groups)
    chance = sum(1 / len(s.feats) for s in groups) / len(groups)
    acc = sum(hits) / len(hits)
    assert acc > chance + 0.2, (acc, chance)
    assert p_above_chance(groups, hits) < 1e-9


def one_step(s: Sample) -> bool:
    return not s.block and not s.matched


def test_one_step_copies_without_balancing_lose(unbalanced):
    """The attack against a grader without the defence: on files the reader's
    weights were never fitted on, the one-step copies of the default style give
    the original away."""
    groups, hits, _, _ = cross_fitted(cp.DEFAULT_STYLE, 60, only=held_out, keep=one_step)
    assert len(groups) >= 100, len(groups)
    chance = sum(1 / len(s.feats) for s in groups) / len(groups)
    assert sum(hits) / len(hits) > chance + 0.15, (sum(hits) / len(hits), chance)
    assert p_above_chance(groups, hits) < 1e-6


def balanced_set(s: Sample) -> bool:
    return one_step(s) and s.balanced


def test_balanced_one_step_copies_are_a_guess():
    """With the defence (symmetric sets, each drawn once and kept at the
    reader's odds, copy_steps.keep), the same attacker, fitted afresh on
    balanced copies, is at chance on them. About 70 groups, and the figure
    moves between runs of the same tree (0.43 to 0.61 seen against 0.50
    chance): the bound is a test of significance, which rules out large edges
    only."""
    # The sets are drawn alike in every style; the default gives them to a
    # coin's share of the files (copies.one_step_file), LEGACY to all of them.
    groups, hits, single, _ = cross_fitted(cp.CopyStyle.LEGACY, 60, only=held_out, keep=balanced_set)
    assert len(groups) >= 50, len(groups)
    chance = sum(1 / len(s.feats) for s in groups) / len(groups)
    acc = sum(hits) / len(hits)
    assert p_above_chance(groups, hits) > 0.005, (acc, chance, len(groups))
    assert p_above_chance(groups, single) > 0.001, (sum(single) / len(single), chance)


# ------------------------------------------------------------ table tests


@pytest.mark.parametrize("n,u", [(3, 1), (4, 2), (15, 5), (20, 20), (2050, 50), (1994, 2), (300, 100),
                                 (250, 250), (7000, 1000)])
def test_roundness(n, u):
    assert copy_values.unit(n) == u


def _ctx(src: str):
    import ast

    return copy_values.Context.of(ast.parse(src))


@pytest.mark.parametrize("src,value,k,expect", [
    # a 4-digit number: neighbours of the same roundness, never the original's round class
    ("def test_x():\n    assert f() == 1994\n", 1994, 2, lambda vs: all(int(v) % 2 == 0 and int(v) % 10
                                                                   and 1900 < int(v) < 2100 for v in vs)),
    # 2050 next to -2050: its neighbours do not recur, so no copy can pass for it
    ("def test_x():\n    assert f(-2050) == 2050\n", 2050, 2, lambda vs: vs is None),
    # a round hundred: too few of its kind
    ("def test_x():\n    assert f() == 300\n", 300, 2, lambda vs: vs is None),
    # zero is never copied
    ("def test_x():\n    assert f() == 0\n", 0, 1, lambda vs: vs is None),
])
def test_number_copies(src, value, k, expect):
    import random

    ctx = _ctx(src)
    nums = [x for x in (-2050,) if str(x) in src]
    vs = copy_values.number_values(str(value), value, ctx, nums, random.Random(1), k)
    assert expect(vs), vs


def test_small_numbers_follow_their_prior():
    """A one-digit original among its copies: over many sites, each member of a
    {1, 3} pair is the original half the time (1 is the commoner expected value,
    so a copy of 1 is rarely made, one of 3 nearly always)."""
    import collections
    import random

    ctx = _ctx("def test_x():\n    assert f() == 'one'\n")     # the module around the site
    counts: collections.Counter = collections.Counter()
    prior = copy_values.SMALL_PRIOR
    for i in range(20000):
        v = random.Random(i).choices(list(prior), weights=list(prior.values()))[0]
        vs = copy_values.small_values(v, ctx, [], random.Random(f"s{i}"), 1)
        if vs:
            counts[frozenset({v, int(vs[0])}), v] += 1
    pair = frozenset({1, 3})
    a, b = counts[pair, 1], counts[pair, 3]
    assert a + b > 100 and abs(a - b) / (a + b) < 0.15, (a, b)


def test_string_copies_keep_their_distances():
    """An expected value one edit from its input stays one edit from it; a value
    equal to an input gets no copy."""
    import random

    src = 'def test_x():\n    assert f("street_address") == "street-address"\n'
    ctx = _ctx(src)
    for seed in range(20):
        vs = copy_values.string_values('"street-address"', "street-address", ctx, random.Random(seed), 1,
                                  ["street_address"])
        if vs:
            v = vs[0].strip('"')
            assert copy_values.levenshtein(v, "street_address") == 1 and len(v) == len("street-address")
    same = 'def test_x():\n    assert f("street") == "street"\n'
    assert copy_values.string_values('"street"', "street", _ctx(same), random.Random(0), 1, ["street"]) is None


def test_exceptions_come_from_the_module():
    """(Exception copies are off under MATCHED, see copies.MATCHED_EXCEPTIONS;
    the drawing itself stays tested for when they are back.)"""
    import random

    src = ("import pytest\nfrom pkg import LedgerError, OverdrawnError\n\n"
           "def test_a():\n    with pytest.raises(LedgerError):\n        f()\n\n"
           "def test_b():\n    with pytest.raises(OverdrawnError):\n        g()\n\n"
           "def test_d():\n    with pytest.raises(LedgerError):\n        g()\n\n"
           "def test_c():\n    with pytest.raises(ValueError):\n        h()\n")
    ctx = _ctx(src)
    # each used once elsewhere: one can stand in for the other
    assert copy_values.exception_values("LedgerError", ctx, random.Random(0), 2) == ["OverdrawnError"]
    # used once elsewhere against never: the one that recurs would be the original
    alone = src.replace("def test_d():\n    with pytest.raises(LedgerError):\n        g()\n\n", "")
    assert copy_values.exception_values("LedgerError", _ctx(alone), random.Random(0), 2) is None
    # ValueError is the only builtin the module names: no other one can stand in
    assert copy_values.exception_values("ValueError", ctx, random.Random(0), 2) is None


def test_a_named_table_used_only_by_its_test_goes_with_it(tmp_path):
    """The table written out in the original and its copies: the module constant
    that equals the original's table is dropped, or it would point at it."""
    src = ("import pytest\n\nTABLE = (\n    ('alpha', 1994),\n    ('beta', 2718),\n)\n\n\n"
           "@pytest.mark.parametrize(('x', 'y'), TABLE)\ndef test_dash(x, y):\n    assert dash(x) == y\n")
    (tmp_path / "t.py").write_text(src)
    ms = []
    for seed in range(10):
        ms = _propose(tmp_path, ["t.py::test_dash"], f"s{seed}", style=cp.CopyStyle.MATCHED)
        if ms:
            break
    assert ms and all(m.tables == ["TABLE"] for m in ms)
    cp.plant(tmp_path, ["t.py::test_dash"], ms[:1])
    planted = (tmp_path / "t.py").read_text()
    assert "TABLE" not in planted and planted.count("'beta'") == 2


def test_one_step_copies_of_a_named_table_take_the_constant_too(tmp_path, monkeypatch):
    """The same for one-step copies (review of 6cb59ba): the constant left in
    the planted file holds exactly the original's rows."""
    monkeypatch.setattr(cp, "BALANCED", False)
    src = ("import pytest\n\nTABLE = (\n    ('alpha', 1994),\n    ('beta', 2718),\n)\n\n\n"
           "@pytest.mark.parametrize(('x', 'y'), TABLE)\ndef test_dash(x, y):\n    assert dash(x) == y\n")
    (tmp_path / "t.py").write_text(src)
    ms = _propose(tmp_path, ["t.py::test_dash"], "s", style=cp.CopyStyle.LEGACY)
    assert ms and all(m.tables == ["TABLE"] for m in ms)
    cp.plant(tmp_path, ["t.py::test_dash"], ms[:1])
    assert "TABLE" not in (tmp_path / "t.py").read_text()


@pytest.mark.parametrize("original,copies,expect", [
    ("def t():\n    assert f() == 0\n", ["def t():\n    assert f() == 7\n"], 1.0),   # the copy is likelier
    ("def t():\n    assert f() == 7\n", ["def t():\n    assert f() == 0\n"], math.exp(-1.0)),
    ("def t():\n    assert f() == 7\n", ["def t():\n    assert f() == 8\n"], 1.0),   # even odds
    # a set: the least likely member decides
    ("def t():\n    assert f() == 7\n", ["def t():\n    assert f() == 8\n", "def t():\n    assert f() == 0\n"],
     math.exp(-1.0)),
    # two regions apart: no reader of this kind groups them, every score 0
    ("def t():\n    assert f(1) == 0\n", ["def t():\n    assert f(2) == 3\n"], 1.0),
])
def test_a_set_is_kept_at_the_readers_odds(original, copies, expect, tmp_path, monkeypatch):
    monkeypatch.setattr(copy_odds, "WEIGHTS", {"kind_num": {"n_zero_small": -1.0}})
    lines = original.splitlines(keepends=True)
    fn = cp.parse_python(original).body[0]
    scores = cp.Reader(lines, original, copy_odds.Corpus()).scores(fn, copies)
    assert scores is not None
    assert copy_steps.keep(scores) == pytest.approx(expect)


def _frequency(propose, start: str, want: set[str], k: int, n: int) -> float:
    rng = random.Random(f"{start}:{k}")
    hits = 0
    for _ in range(n):
        got = propose(start, k, rng)
        hits += got is not None and set(got) | {start} == want
    return hits / n


@pytest.mark.parametrize("propose,original,k", [
    (copy_steps.value_copies, "56", 1),
    (copy_steps.value_copies, "56", 2),
    (copy_steps.value_copies, "-7", 2),
    (copy_steps.value_copies, "0x1f", 2),
    (copy_steps.value_copies, "3.14", 2),
    (copy_steps.value_copies, "'status'", 1),
    (copy_steps.value_copies, "'XIV'", 2),
    (copy_steps.exception_copies(["KeyError", "ValueError", "TypeError", "LookupError"],
                                 lambda a, b: not cp._unrelated(a, b)), "ValueError", 2),
])
def test_every_member_of_a_set_proposes_it_as_often(propose, original, k):
    """The proposals are symmetric (review of 6cb59ba, finding 4): a set drawn
    from the original is drawn as often from each of its copies, so the
    proposal's own odds say nothing of which member is the original. (An
    exception's pool is the site's, the same for every member.)"""
    got = propose(original, k, random.Random(1))
    assert got is not None
    members = {original, *got}
    n = 40_000
    freqs = [_frequency(propose, m, members, k, n) for m in sorted(members)]
    mean = sum(freqs) / len(freqs)
    assert mean > 0
    for f in freqs:                         # within 5 standard errors of their mean
        assert abs(f - mean) < 5 * math.sqrt(mean / n), (sorted(members), freqs)


def test_the_old_string_generator_was_not_symmetric():
    """What the symmetric proposals replace: one-step string copies drawing the
    new letter from the string's own letters propose 'statss' from 'status'
    far more often than the reverse, which a reader of the planted file can use
    (review of 6cb59ba, finding 4: right 74% of the time on substitution pairs)."""
    rng = random.Random(3)
    fwd = sum(cp._new_token("'status'", "status", rng) == "'statss'" for _ in range(20_000))
    back = sum(cp._new_token("'statss'", "statss", rng) == "'status'" for _ in range(20_000))
    assert fwd > 5 * max(back, 1), (fwd, back)


@pytest.mark.parametrize("x", range(-4, 5))
def test_a_run_never_crosses_zero(x):
    """Small expected values are positive 98% of the time: a set mixing signs
    would name its non-negative member (review of 731a903, finding 4)."""
    rng = random.Random(x)
    for k in (1, 2):
        for _ in range(300):
            got = copy_steps.value_copies(str(x), k, rng)
            assert got is None or all((int(v) < 0) == (x < 0) for v in got), got
    assert copy_steps.value_copies("-0.0", 1, rng) is None
    assert all(copy_steps.value_copies("-0.2", 1, random.Random(i)) in (None, ("-0.1",), ("-0.3",), ("-0.4",),
                                                                          ("-0.5",)) for i in range(50))


SITES = """\
SEEN = [57, 57, 57]


def test_a():
    assert area(3, 11) == 31
    assert area(7, 12) == 83
    assert area(4, 14) == {value}


def test_b():
    assert area(2, 2) == 4


def test_c():
    assert area(3, 3) == 9


def test_d():
    assert area(4, 4) == 16
"""
IDS = [f"test_a.py::test_{c}" for c in "abcd"]


def _pair_counts(tmp_path: Path, original: str, copy: str, seeds: int) -> int:
    d = tmp_path / original
    d.mkdir()
    (d / "test_a.py").write_text(SITES.format(value=original))
    hits = 0
    for seed in range(seeds):
        got = _propose(d, IDS, f"s{seed}", corpus=copy_odds.Corpus(), style=cp.CopyStyle.LEGACY)
        assert all(m.balanced in (0, 1) for m in got)   # four tests with value sites: sets of one
        hits += any(m.balanced and m.func == "test_a" and m.site.endswith(f"-> {copy}") for m in got)
    return hits


@pytest.mark.parametrize("keep_all", [False, True])
def test_a_planted_pair_is_as_likely_from_either_member_under_the_reader(tmp_path, monkeypatch, keep_all):
    """Detailed balance, through propose: one draw a set, no retry after a
    refusal (review of 6cb59ba, findings 2-3), and sites tried in an order
    that does not depend on their values (review of 731a903, finding 5: 57
    recurring elsewhere put the site with 56 ahead of the one with 57). The
    pair {56, 57} is planted from 56 and from 57 in the ratio
    exp(s(57) - s(56)) of the reader's scores, so that the reader's prior odds
    are cancelled and either member is the original as likely. With every set
    kept (no balance), it is planted as often from either, and the reader's
    odds pick the original."""
    if keep_all:
        monkeypatch.setattr(copy_steps, "keep", lambda scores: 1.0)
    src = SITES.format(value=56)
    tree = cp.parse_python(src)
    fns = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    reader = cp.Reader(src.splitlines(keepends=True), src, copy_odds.Corpus(), fns, size=1)
    copy = "def test_a():\n    assert area(3, 11) == 31\n    assert area(7, 12) == 83\n    assert area(4, 14) == 57\n"
    s56, s57 = reader.scores(fns[0], [copy]) or (0.0, 0.0)
    assert abs(s56 - s57) > 0.3, (s56, s57)      # the reader tells them apart (57 recurs)
    a = _pair_counts(tmp_path, "56", "57", 5000)
    b = _pair_counts(tmp_path, "57", "56", 5000)
    assert a > 40 and b > 40, (a, b)
    want = 0.0 if keep_all else s57 - s56
    assert abs(math.log(a / b) - want) < 0.3, (a, b, s56, s57)


TIERS = """\
from mod import f


def test_a():
    assert f(3) == {value}


def test_other():
    assert f(7) == 'seven'
    assert f([1, 2]) == [1, 2]
"""


def _set_counts(tmp_path: Path, value: int, want: set[int], seeds: int) -> tuple[int, int]:
    """How often, in the default style, test_a's planted group is the balanced
    set `want` (its original `value`), and how often it is balanced at all."""
    d = tmp_path / f"t{value}"
    d.mkdir()
    (d / "test_m.py").write_text(TIERS.format(value=value))
    hits = reached = 0
    for seed in range(seeds):
        got = _propose(d, ["test_m.py::test_a"], f"s{seed}", corpus=copy_odds.Corpus())
        mine = [c for c in choose_copies(got, random.Random(seed)) if c.func == "test_a"]
        if mine and mine[0].balanced:
            reached += 1
            hits += {value} | {int(c.site.rpartition("-> ")[2]) for c in mine} == want
    return hits, reached


def test_which_tier_a_test_reaches_says_nothing_of_its_original(tmp_path):
    """Detailed balance in the default style, blocks and matched values on
    (review 2026-12-04-copy-sets-review-2, finding 1): matched values take 8 and
    9 but never 10 (a round number), so when the balanced sets were the
    fallback, {8, 9, 10} was planted only from 10 and named it. Now a coin
    that sees no value gives each file its tier: every original reaches the
    balanced sets as often, and the set is planted from each member in the
    ratio of exp(-s) of the reader's scores (copy_steps.keep)."""
    want = {8, 9, 10}
    counts = {x: _set_counts(tmp_path, x, want, 3000) for x in sorted(want)}
    texts = {}
    for x in sorted(want):
        src = TIERS.format(value=x)
        tree = cp.parse_python(src)
        fns = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
        texts[x] = (src, fns, cp._named(src.splitlines(keepends=True), fns[0], []))
    src, fns, _ = texts[8]
    reader = cp.Reader(src.splitlines(keepends=True), src, copy_odds.Corpus(), fns, size=2)
    scores = dict(zip(sorted(want), reader.scores(fns[0], [texts[9][2], texts[10][2]]) or (0, 0, 0)))
    balance = {x: math.log(max(h, 1)) + scores[x] for x, (h, _) in counts.items()}
    assert all(h > 15 for h, _ in counts.values()), counts
    assert max(balance.values()) - min(balance.values()) < 0.6, (counts, scores, balance)


@pytest.mark.parametrize("tests,size", [(1, 2), (3, 2), (4, 1), (6, 1)])
def test_the_set_size_is_settled_before_any_draw(tmp_path, tests, size):
    """Two copies a set where fewer than four hidden tests have a value site,
    else one, for every set of the task whatever was refused (review of
    6cb59ba finding 2, of 731a903 finding 6): a pair where a triple was due
    would tell that the original looked original."""
    body = "".join(f"def test_{i}():\n    assert area({i}, 7) == {7 * i + 100}\n\n\n" for i in range(tests))
    (tmp_path / "test_s.py").write_text(body)
    ids = [f"test_s.py::test_{i}" for i in range(tests)]
    seen = set()
    for seed in range(40):
        got = _propose(tmp_path, ids, f"s{seed}", corpus=copy_odds.Corpus(), style=cp.CopyStyle.LEGACY)
        seen |= {m.balanced for m in got} - {0}     # 0: a test every set of which was refused
        chosen = choose_copies(got, random.Random(seed))
        per: dict[str, int] = {}
        for c in chosen:
            per[c.func] = per.get(c.func, 0) + 1
        assert set(per.values()) <= {size}, per
    assert seen == {size}


def _balanced_over(root: Path, nodeid: str, seeds: int) -> list[TestCopy]:
    """The balanced copies propose gives one test over `seeds` task seeds
    (LEGACY style, no corpus)."""
    return [m for seed in range(seeds)
            for m in _propose(root, [nodeid], f"s{seed}", corpus=copy_odds.Corpus(),
                                style=cp.CopyStyle.LEGACY) if m.balanced]


EXC = """\
import pytest
from pkg import ParseError, LexError, TokenError, ScanError


def test_other():
    with pytest.raises(LexError):
        lex("")
    with pytest.raises(TokenError):
        tok("")
    with pytest.raises(ScanError):
        scan("")


def test_a():
    with pytest.raises({exc}):
        parse("")
"""


@pytest.mark.parametrize("exc,copies", [("ParseError", False), ("LexError", True)])
def test_an_exception_gets_copies_only_from_a_pool_it_belongs_to(tmp_path, exc, copies):
    """Copies expect classes the module names outside the site; an original it
    names only there gets none, or it would be the one member of its group the
    module names nowhere else (review of 731a903, finding 1: told 400 of 400)."""
    (tmp_path / "test_e.py").write_text(EXC.format(exc=exc))
    (tmp_path / "pkg.py").write_text("".join(f"class {n}(Exception):\n    pass\n\n\n"
                                             for n in ("ParseError", "LexError", "TokenError", "ScanError")))
    made = _balanced_over(tmp_path, "test_e.py::test_a", 60)
    assert bool(made) == copies
    outside = EXC.format(exc=exc).split("def test_a")[0]
    for m in made:                              # every member is named outside the group
        assert m.site.split("-> ")[1] in outside


BUILTINS = """\
import pytest


def test_other():
    with pytest.raises(KeyError):
        get({})
    try:
        open_it()
    except OSError:
        pass
    with pytest.raises(TypeError):
        get(None)
    with pytest.raises(ValueError):
        get(1)


def test_a():
    with pytest.raises(ValueError):
        parse("")
"""


def test_a_class_that_is_never_a_site_is_never_a_copy(tmp_path):
    """OSError is named in the module but never a site's class (sites take the
    SWAPPABLE builtins), so as a copy it would always be the copy (review
    2026-12-04-copy-sets-review-2, finding 2)."""
    (tmp_path / "test_b.py").write_text(BUILTINS)
    made = _balanced_over(tmp_path, "test_b.py::test_a", 80)
    expected = {m.site.split("-> ")[1] for m in made}
    assert expected and expected <= {"KeyError", "TypeError"}, expected


def test_a_removed_class_is_in_no_exception_set(tmp_path):
    """An honest solution may define the removed class as a subclass of another
    member: its copy would pass and cost the reward."""
    (tmp_path / "test_e.py").write_text(EXC.format(exc="LexError"))
    for seed in range(60):
        for m in _propose(tmp_path, ["test_e.py::test_a"], f"s{seed}", corpus=copy_odds.Corpus(),
                            style=cp.CopyStyle.LEGACY, removed={"TokenError"}):
            assert "TokenError" not in m.site
    for seed in range(60):
        for m in _propose(tmp_path, ["test_e.py::test_a"], f"s{seed}", corpus=copy_odds.Corpus(),
                            style=cp.CopyStyle.LEGACY, removed={"LexError"}):
            assert not m.balanced and "LexError" not in m.site.split("-> ")[1]


def test_a_table_another_test_uses_gets_no_one_step_sets(tmp_path):
    """Its constant would stay in the planted file with the original's rows
    (review of 731a903, finding 2)."""
    src = ("import pytest\n\nTABLE = [(1, 1994), (2, 2718)]\n\n\n"
           "@pytest.mark.parametrize(('x', 'y'), TABLE)\ndef test_dash(x, y):\n    assert dash(x) == y\n\n\n"
           "@pytest.mark.parametrize(('x', 'y'), TABLE)\ndef test_len(x, y):\n    assert x < y\n")
    (tmp_path / "t.py").write_text(src)
    for seed in range(40):
        assert not any(m.balanced for m in _propose(tmp_path, ["t.py::test_dash"], f"s{seed}",
                                                      corpus=copy_odds.Corpus(), style=cp.CopyStyle.LEGACY))
    alone = src.split("\n\n\n@pytest.mark.parametrize(('x', 'y'), TABLE)\ndef test_len")[0] + "\n"
    (tmp_path / "t.py").write_text(alone)
    assert any(m.balanced for seed in range(40) for m in _propose(
        tmp_path, ["t.py::test_dash"], f"s{seed}", corpus=copy_odds.Corpus(), style=cp.CopyStyle.LEGACY))


def test_a_set_that_lost_a_copy_to_the_gold_goes_whole():
    proposed = [TestCopy(file="t.py", func=f, kind="value", group=f"{f}:2", site="x", source=f"{f}{i}", balanced=2)
                for f in "ab" for i in range(2)]
    kept = proposed[:1] + proposed[2:]
    assert cp.whole_sets(kept, proposed) == proposed[2:]


def test_a_number_past_float_range_costs_its_copies_not_the_run(tmp_path):
    """The reader's number signals go through floats: a literal like 171! must
    not raise out of propose (it would fail the whole generation)."""
    big = math.factorial(171)
    (tmp_path / "test_m.py").write_text(f"def test_a():\n    assert f() == {big}\n")
    got = _propose(tmp_path, ["test_m.py::test_a"], "seed", style=cp.CopyStyle.LEGACY)
    assert not any(m.balanced for m in got)     # no set the reader cannot weigh; fallback copies only


TWICE = """\
import pytest


def test_other():
    with pytest.raises(KeyError):
        get({{}})
    with pytest.raises(TypeError):
        get(None)
    with pytest.raises(ValueError):
        get(1)
    assert size(3) == 12


def test_a():
    with pytest.raises(ValueError):
        parse("")
    {second}
"""


@pytest.mark.parametrize("second,every_site_recurs", [
    ("with pytest.raises(ValueError):\n        parse(' ')", True),
    ("assert width(56) == 56", False),
    ("with pytest.raises(ValueError):\n        parse(' ')\n    assert width(56) == 56", True),
    ("assert parse('x') is None", False),
])
def test_a_member_named_elsewhere_in_the_test_refuses_the_set(tmp_path, second, every_site_recurs):
    """A copy changes one place: a class or number the test names elsewhere
    too is the original's ("named elsewhere in the test" read 0.62-0.71 against
    0.5, review 2026-12-04-copy-sets-review-2, finding 4). A set is planted
    only where every member is named as often in the rest of the test, so that
    rule picks at chance (here: no set at a site whose original recurs). A
    site whose expected value occurs once keeps its sets."""
    (tmp_path / "test_t.py").write_text(TWICE.format(second=second))
    got = _balanced_over(tmp_path, "test_t.py::test_a", 80)
    planted, recurring = len(got), 0
    for m in got:
        original = m.site.split(" -> ")[0].rpartition(":")[2].strip()
        recurring += TWICE.format(second=second).split("def test_a")[1].count(original) > 1
    assert recurring == 0, (planted, recurring)
    assert (planted == 0) == every_site_recurs, planted


HIERARCHY = """\
import pytest
from pkg.errors import FormatError, LexError, ParseError, ScanError, TokenError


def test_other():
    with pytest.raises(LexError):
        lex("")
    with pytest.raises(TokenError):
        tok("")
    with pytest.raises(FormatError):
        fmt("")
    with pytest.raises(ScanError):
        scan("")
    with pytest.raises(ParseError):
        parse("(")


def test_a():
    with pytest.raises(ParseError):
        parse("")
"""
ERRORS = """\
class LexError(Exception):
    pass


class ParseError(LexError):
    pass


class TokenError(Exception):
    pass


class FormatError(ValueError):
    pass
"""


@pytest.mark.parametrize("tree", [True, False])
def test_an_exception_set_never_holds_classes_the_tree_cannot_show_apart(tmp_path, monkeypatch, tree):
    """ParseError derives from LexError: a copy expecting LexError passes for
    the gold, which drops the set when ParseError is the original and keeps it
    when LexError is, so every surviving related set names its base class as
    the original (review 2026-12-04-copy-sets-review-2, finding 3: 25 of 25
    networkx sets related). ScanError is defined nowhere in the tree: it may
    derive from anything. TokenError and FormatError are shown apart.
    Without the class tree (related by name only) both kinds of set form."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "errors.py").write_text(ERRORS)
    (tmp_path / "test_h.py").write_text(HIERARCHY)
    if not tree:
        monkeypatch.setattr(ClassTree, "related", lambda self, a, b: False)
    members = {m.site.split(" -> ")[1] for m in _balanced_over(tmp_path, "test_h.py::test_a", 60)}
    if tree:
        assert members == {"TokenError", "FormatError"}, members
    else:
        assert {"LexError", "ScanError"} & members, members


SHARED = "from mod import f, g\n\n\ndef test_a():\n    assert f(3) == {a}\n\n\ndef test_b():\n    assert g(5) == {b}\n"


def _both_kept(root: Path, a: int, b: int, seeds: int) -> int:
    d = root / f"j{a}_{b}"
    d.mkdir()
    (d / "test_m.py").write_text(SHARED.format(a=a, b=b))
    both = 0
    for seed in range(seeds):
        got = _propose(d, ["test_m.py::test_a", "test_m.py::test_b"], f"s{seed}", corpus=copy_odds.Corpus(),
                         style=cp.CopyStyle.LEGACY)
        both += {m.func for m in got if m.balanced} == {"test_a", "test_b"}
    return both


def test_tests_that_share_a_value_keep_their_sets(tmp_path):
    """The reader's context repeated each other hidden test 1 + size times,
    its expected value too, while in the planted file that test's copies show
    other values there: a value two tests share looked three times as common,
    so such tests lost most of their sets (review 2026-12-04-copy-sets-review-2,
    finding 6: 244 against about 1100 of 1500). The repeats now leave the
    expected values out."""
    shared, apart = _both_kept(tmp_path, 56, 56, 400), _both_kept(tmp_path, 56, 59, 400)
    assert apart > 100 and shared > 0.6 * apart, (shared, apart)


@pytest.mark.parametrize("token", ['"1102.50"', '"12,000"', '"-3"', "'7.5%'", '"1e-05"', '"2050"', '"10.00"'])
def test_a_number_written_as_text_keeps_its_format_in_every_copy(token):
    """Red team 11 told the original `Money("1102.50")` from its copy
    `Money("1112.050")` by the number of decimals alone. A copy of a string that
    spells a number keeps its length, its separators and every zero; only a
    nonzero digit changes, into another nonzero digit."""
    rng = random.Random(7)
    shape = re.sub(r"[1-9]", "d", token)
    for _ in range(300):
        new = cp._new_token(token, ast.literal_eval(token), rng)
        assert new is not None and new != token
        assert re.sub(r"[1-9]", "d", new) == shape, new
    # ... and so does a balanced set's (copy_steps.text_copies): "10.00" -> "00.00"
    # was proposed there after the one-step copies were fixed.
    from taskforge.grade import copy_steps

    for _ in range(300):
        got = copy_steps.text_copies(token, 2, rng)
        assert got is not None and token not in got
        assert all(re.sub(r"[1-9]", "d", new) == shape for new in got), got


@pytest.mark.parametrize("site,tell", [
    ('line 23: "1102.50" -> "1112.050"', True),      # a stored copy of an older task
    ('line 23: "1102.50" -> "1112.50"', False),
    ("line 9: '12,000' -> '12,0000'", True),
    ("line 9: 'XIV' -> 'XIX'", False),               # not a number
    ("line 4: 1102 -> 1112", False),                 # a number, not text
    ("line 4: \"7\" -> \"70\"", True),
    ('line 40: "10.00" -> "00.00"', True),           # a leading zero no one writes (rt14 setup)
    ('line 40: "0.25" -> "0.15"', False),
    ("negated an assertion", False),
])
def test_a_stored_copy_that_tells_itself_by_its_format_is_not_planted(site, tell):
    """Red team 12 won 2 of 16 on a task written before copies kept a numeric
    string's format: verify plants the stored set, so it leaves such copies out."""
    from types import SimpleNamespace

    from taskforge.grade.verify import planted_set
    from taskforge.models import TestCopy

    assert cp.format_tell(site) is tell
    copies = [TestCopy(file="tests/t.py", func="test_f", kind="value", group="g", site=s,
                       source="def NAME():\n    pass\n", expect={"": "failed"})
              for s in (site,)]
    rec = SimpleNamespace(grading=SimpleNamespace(copies=copies, plant_seed="s"), instance_id="t")
    assert (site in {c.site for c in planted_set(rec)}) is not tell
