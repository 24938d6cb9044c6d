"""Crossed copies (grade/copy_cross.py): several sites of a test changed
together, every combination planted, so that a forger who reads copies must
read every site right (issue 23, item 1).

Pure pieces as tables; then a cross of a real fixture test is checked for the
symmetry the defence stands on; then the defence itself: a fitted forger
(tests/copies_attack.py) reads whole tasks planted as verify plants them, and
wins fewer with crosses than without (paired, same tasks, a sign test).
"""
from __future__ import annotations

import ast
import itertools
import math
import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from copies_attack import fit  # noqa: E402
from copies_harness import ROOT, corpus_files, corpus_of, planted_samples, split, task_wins  # noqa: E402

from taskforge.grade import copies as cp  # noqa: E402
from taskforge.grade import copy_cross as cc  # noqa: E402
from taskforge.grade.verify import choose_copies  # noqa: E402
from taskforge.models import TestCopy  # noqa: E402

REGIONS = [
    # base, variant, (start, end, text)
    ("assert f(1) == 'IV'", "assert f(1) == 'IX'", (17, 18, "X")),
    ("assert f() == ''", "assert f() == 'b'", (15, 15, "b")),
    ("assert x", "assert not x", (7, 7, "not ")),
    ("x == 11", "x == 111", (7, 7, "1")),            # the widest prefix: an insertion at the end
    ("a", "a", (1, 1, "")),
]


@pytest.mark.parametrize("base,variant,want", REGIONS)
def test_the_span_a_variant_replaces(base, variant, want):
    got = cc.region(base, variant)
    assert got == want
    s, e, t = got
    assert base[:s] + t + base[e:] == variant


def _copy(source: str, site: str = "line 1: a -> b", **kw) -> TestCopy:
    return TestCopy(file="tests/test_x.py", func="test_x", kind="value", site=site, source=source, **kw)


BASE = "def T():\n    assert f(1) == 10\n    assert g('ab') == 'cd'\n"


def test_axes_combine_every_member_and_keep_each_single_copy():
    a = cc.axis_of(BASE, "", [_copy(BASE.replace("== 10", "== 11"))])
    b = cc.axis_of(BASE, "", [_copy(BASE.replace("'cd'", "'ce'")), _copy(BASE.replace("'cd'", "'cf'"))])
    assert a is not None and b is not None
    assert a.texts == ("0", "1") and b.texts == ("d", "e", "f")
    axes = cc.disjoint([a, b])
    assert axes == [a, b]
    assert cc.combinations([2, 3]) == [(0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]
    assert cc.combine(BASE, axes, (0, 0)) == BASE
    assert cc.combine(BASE, axes, (1, 0)) == a.copies[0].source
    assert cc.combine(BASE, axes, (0, 2)) == b.copies[1].source
    assert cc.combine(BASE, axes, (1, 2)) == BASE.replace("== 10", "== 11").replace("'cd'", "'cf'")
    assert cc.level_size(axes, 2) == 5


AXES = [
    # spans (start, end), kept by disjoint
    ([(3, 5), (5, 7)], [(3, 5)]),          # touching: could be read as one
    ([(3, 5), (6, 8)], [(3, 5), (6, 8)]),
    ([(3, 9), (4, 5), (10, 10)], [(3, 9), (10, 10)]),
    ([(4, 4), (4, 4)], [(4, 4)]),          # two insertions at one place
]


@pytest.mark.parametrize("spans,kept", AXES)
def test_axes_whose_spans_meet_are_not_crossed(spans, kept):
    axes = [cc.Axis(s, e, ("a", "b"), ()) for s, e in spans]
    assert [(a.start, a.end) for a in cc.disjoint(axes)] == kept


def test_an_axis_whose_members_coincide_is_none():
    assert cc.axis_of(BASE, "", [_copy(BASE)]) is None
    assert cc.axis_of(BASE, "", [_copy(BASE.replace("10", "11")), _copy(BASE.replace("10", "11"))]) is None


ALLOCATE = [
    # axes' member counts per test, ids per test, budget -> axes per crossed test
    ({"a": [2, 2, 2], "b": [2]}, {}, 64, {"a": 3}),
    ({"a": [2] * 6, "b": [2] * 6}, {}, 64, {"a": 5, "b": 5}),        # 31 + 31 = 62 planted
    ({"a": [2] * 6}, {}, 64, {"a": 6}),
    ({"a": [3, 3, 3], "b": [2, 2]}, {}, 20, {"a": 2, "b": 2}),        # 8 + 3 = 11; a at 3 costs 26
    ({"a": [2, 2, 2]}, {"a": 200}, 64, {"a": 2}),                     # 3 x 200 ids; 7 x 200 > 512
    ({"a": [2, 2]}, {"a": 600}, 64, {}),
    ({f"t{i}": [2, 2] for i in range(70)}, {}, 64, {}),              # one copy each fills the budget
]


@pytest.mark.parametrize("sizes,ids,budget,want", ALLOCATE)
def test_the_budget_goes_to_the_test_with_fewest_members_first(sizes, ids, budget, want):
    assert cc.allocate(sizes, ids, budget) == want


def _crossed(name: str, n: int, sizes=None) -> list[TestCopy]:
    sizes = sizes or [2] * n
    return [_copy(f"# {t}\n", cross=name, axes=list(t), expect={"": "failed"})
            for t in cc.combinations(sizes)]


def test_a_cross_keeps_only_whole_levels():
    proposed = _crossed("c", 3)                          # 7 combinations over 3 sites
    assert cc.whole_levels(proposed, proposed) == proposed
    lost = [m for m in proposed if m.axes != [1, 1, 1]]  # one of level 3's
    assert {tuple(m.axes) for m in cc.whole_levels(lost, proposed)} == {(1, 0, 0), (0, 1, 0), (1, 1, 0)}
    lost2 = [m for m in proposed if m.axes != [1, 1, 0]]  # one of level 2's: nothing left
    assert cc.whole_levels(lost2, proposed) == []
    assert [m.axes for m in cc.level(proposed, 2)] == [[0, 1, 0], [1, 0, 0], [1, 1, 0]]


def test_verify_plants_a_cross_whole_at_the_level_its_budget_allows():
    single = [_copy("# s1\n", group="g1"), _copy("# s2\n", group="g2")]
    crossed = _crossed("tests/test_x.py::test_x#cross", 4)
    other = [_copy(f"# o{i}\n", group=f"o{i}").model_copy(update={"func": f"test_o{i}"}) for i in range(3)]
    for limit, want in ((64, 15), (10, 7), (4, 1)):
        got = choose_copies(single + crossed + other, random.Random(1), limit=limit)
        mine = [m for m in got if m.func == "test_x"]
        assert len(mine) == want, (limit, len(mine))
        if want > 1:
            n = int(math.log2(want + 1))
            assert {tuple(m.axes[:n]) for m in mine} == set(cc.combinations([2] * n))
        assert len(got) <= max(limit, 4)
        # The same every time: nothing carries across verifies.
        again = choose_copies(single + crossed + other, random.Random(1), limit=limit)
        assert [m.source for m in again] == [m.source for m in got]


def test_a_cross_of_a_real_test_is_the_whole_product():
    """Every member of a planted cross stands to the others as the original
    does: the same number of members differ from it at each site, so the
    member closest to the rest (what gave a star of single-site copies away)
    is any of them."""
    root = ROOT / "fixtures" / "repos" / "textkit"
    ids = ["tests/test_analysis.py::test_levenshtein"]
    proposed = cp.propose(root, ids, "cross-test", sites_per_test=6)
    crossed = cc.crosses(root, proposed, "cross-test", {})
    assert crossed, "the fixture test has several sites"
    n = len(crossed[0].axes)
    assert n >= 3
    base = cc.base_source(root, cc.key_of(crossed[0]))
    assert base is not None
    members = [base] + [m.source for m in crossed]
    assert len(set(members)) == len(members) == math.prod(
        max(m.axes[i] for m in crossed) + 1 for i in range(n))
    vectors = [tuple([0] * n)] + [tuple(m.axes) for m in crossed]

    def profile(v):
        return sorted(sum(a != b for a, b in zip(v, w)) for w in vectors if w != v)
    assert len({tuple(profile(v)) for v in vectors}) == 1
    for m in crossed:                       # each combination parses
        compile(m.source.replace(cp.NAME_TOKEN, "t"), "x", "exec")


def test_crosses_cost_a_reading_forger_whole_tasks():
    """The forger of tests/copies_attack.py, fitted on half the corpus files,
    reads the other half's tasks (two hidden tests each) as verify plants
    them. Without crosses it wins a task when it reads one group per test; with
    them it must read every site of a cross. Paired on the same tasks, the
    tasks crosses take from it outnumber the ones they give it (sign test)."""
    files = corpus_files(2)
    corpus = corpus_of(files)
    train_files, test_files = split(files)
    train, _ = planted_samples(train_files, cp.CopyStyle.EXCHANGED, corpus)
    w = fit(train)
    single = {r[3]: r[0] for r in task_wins(test_files, corpus, w, crossed=False)}
    crossed = {r[3]: r[0] for r in task_wins(test_files, corpus, w, crossed=True)}
    assert single.keys() == crossed.keys() and len(single) >= 50
    taken = sum(1 for t in single if single[t] and not crossed[t])
    given = sum(1 for t in single if crossed[t] and not single[t])
    # one-sided sign test: P(at least `taken` of taken + given at 1/2)
    n = taken + given
    p = sum(math.comb(n, k) for k in range(taken, n + 1)) / 2 ** n if n else 1.0
    assert sum(crossed.values()) < sum(single.values()) and p < 0.05, (taken, given, p)


def test_combinations_are_every_tuple_but_the_original():
    for sizes in ([2], [2, 3], [3, 2, 2]):
        got = cc.combinations(sizes)
        assert len(got) == math.prod(sizes) - 1 and (0,) * len(sizes) not in got
        assert set(got) | {(0,) * len(sizes)} == set(itertools.product(*(range(s) for s in sizes)))


def _order_reader(vectors: list[tuple[int, ...]]) -> int:
    """An attacker of planting order alone (review 2026-12-05-cross-review,
    finding 1), given each planted member's value at every site as read from
    the file (here: its index, which the reader relabels away): the member
    that, taken as the original, leaves the rest in the product's order when
    each site's values are numbered by first appearance. The first such, or 0."""
    for i, orig in enumerate(vectors):
        rest = [v for j, v in enumerate(vectors) if j != i]
        labels: list[dict[int, int]] = [{orig[a]: 0} for a in range(len(orig))]
        coded = []
        for v in rest:
            coded.append(tuple(labels[a].setdefault(x, len(labels[a])) for a, x in enumerate(v)))
        if coded == sorted(coded):
            return i
    return 0


def test_a_planted_cross_says_nothing_by_its_order(tmp_path):
    """Planted in the product's order with the original at a random place, a
    cross gives the original away to a reader of order alone; planted as
    verify plants it (cp.plant shuffles each test's copies), that reader is at
    chance."""
    root = ROOT / "fixtures" / "repos" / "textkit"
    ids = ["tests/test_analysis.py::test_levenshtein"]
    crossed = cc.crosses(root, cp.propose(root, ids, "cross-test", sites_per_test=6), "cross-test", {})
    assert len(crossed) >= 7
    members = len(crossed) + 1

    def planted_vectors(seed: int) -> tuple[list[tuple[int, ...]], int]:
        tree = tmp_path / f"t{seed}"
        (tree / "tests").mkdir(parents=True)
        (tree / "tests" / "test_analysis.py").write_text(
            (root / "tests" / "test_analysis.py").read_text())
        plan = cp.plant(tree, ids, crossed, rng=random.Random(seed))
        text = (tree / "tests" / "test_analysis.py").read_text()
        out, truth = [], -1
        for node in ast.parse(text).body:
            if isinstance(node, ast.FunctionDef) and (node.name in plan.copies or node.name in plan.originals):
                if node.name in plan.originals:
                    truth = len(out)
                    out.append((0,) * len(crossed[0].axes))
                else:
                    out.append(tuple(plan.copies[node.name].axes))
        return out, truth

    naive = ours = 0
    n = 60
    for seed in range(n):
        vectors, truth = planted_vectors(seed)
        ours += _order_reader(vectors) == truth
        # The naive planting: the product's order, the original at a random place.
        copies = sorted(v for v in vectors if any(v))
        at = random.Random(seed).randrange(members)
        line = copies[:at] + [vectors[truth]] + copies[at:]
        naive += _order_reader(line) == at
    assert naive / n > 0.9
    assert ours / n < 3 / members + 0.1, (ours, n, members)


def test_crosses_stop_at_the_time_the_hidden_tests_take():
    """A cross runs its test once a combination: levels are kept smallest
    first, cross after cross, while their run time fits (review finding 2)."""
    a = _crossed("a", 3)                                     # levels 1, 2, 3: 1, 2, 4 copies
    b = _crossed("b", 2)
    copies = a + b
    secs = [1.0] * len(copies)
    def kept(limit):
        return {(m.cross, cc.level_of(m)) for m in cc.within_time(copies, secs, limit)}
    # levels 1 cost 1 + 1; then a:2 (2), b:2 (2), a:3 (4)
    assert kept(100) == {("a", 1), ("a", 2), ("a", 3), ("b", 1), ("b", 2)}
    assert kept(6) == {("a", 1), ("a", 2), ("b", 1), ("b", 2)}
    assert kept(4) == {("a", 1), ("a", 2)}                  # b stops below two sites
    assert kept(1) == set()


def test_a_crossed_copy_is_a_complement_only_if_every_site_is():
    both = _copy("# x\n", site="line 3: negated an assertion | line 4: True -> False", cross="c", axes=[1, 1])
    mixed = _copy("# x\n", site="line 3: negated an assertion | line 5: 10 -> 11", cross="c", axes=[1, 1])
    assert cp.is_complement(both) and not cp.is_complement(mixed)
