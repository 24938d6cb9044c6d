"""Exchanged copies (grade/copy_blocks.py): blocks of tests that trade their
expected values, so that a reader of the planted file who judges a value by how
it looks is right exactly once per block size.

The decisions are table-tested; the property is tested on real plantings
(propose, choose_copies, plant as verify runs them), against the one-step
copies of the same file, which a value-only reader beats, and over the
statistical attacker of tests/copies_attack.py on held-out corpus files."""
from __future__ import annotations

import ast
import functools
import random
import sys
from collections import Counter
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from copies_attack import NAMES, fit, pick  # noqa: E402
from copies_harness import corpus_files, corpus_of, planted_samples, split  # noqa: E402

from taskforge.grade import copies as cp  # noqa: E402
from taskforge.grade import copy_blocks as cb  # noqa: E402
from taskforge.grade.verify import choose_copies  # noqa: E402
from taskforge.models import TestCopy  # noqa: E402

N, S, E, P = cb.SlotKind.NUMBER, cb.SlotKind.STRING, cb.SlotKind.EXCEPTION, cb.SlotKind.POLARITY


@pytest.fixture(autouse=True)
def every_file_takes_blocks(monkeypatch):
    """The default style gives a value-free coin's share of files balanced
    one-step sets instead of blocks (copies.one_step_file); these tests are of
    the blocks and matched values, so every file here takes them."""
    monkeypatch.setattr(cp, "ONE_STEP_SHARE", 0.0)


def slot(value, kind=N, owner=None, strings=(), numbers=(), words=(), form=""):
    return cb.Slot(index=0, owner=owner if owner is not None else object(), kind=kind, value=value,
                   strings=tuple(strings), numbers=tuple(numbers), words=frozenset(words), form=form)


@pytest.mark.parametrize("kind,value,s,expect", [
    # a number: occurrences, as a numeral, inside a string, one step away, made of two
    (N, 42, slot(0, numbers=(7, 3)), (0, False, 0, 0, False)),
    (N, 42, slot(0, numbers=(42, 3), words={"42"}), (1, True, 0, 0, False)),
    (N, 42, slot(0, numbers=(41, 43)), (0, False, 0, 2, False)),
    (N, 42, slot(0, numbers=(6, 7)), (0, False, 0, 0, True)),
    (N, 42, slot(0, strings=("id-42",)), (0, False, 1, 0, False)),
    (N, -42, slot(0, numbers=(42,)), (1, False, 0, 0, False)),     # by magnitude: the sign is the class's
    # a string: equal, inside, containing, nearest distance (capped), a name
    (S, "north", slot("", S, strings=("north",)), (1, 0, 0, cb.NEAR_CAP, False)),
    (S, "north", slot("", S, strings=("northeast",)), (0, 1, 0, 4, False)),
    (S, "north", slot("", S, strings=("nor",)), (0, 0, 1, 2, False)),
    (S, "north", slot("", S, strings=("nurth",)), (0, 0, 0, 1, False)),
    (S, "north", slot("", S, words={"North"}), (0, 0, 0, cb.NEAR_CAP, True)),
    # an exception: whether its name is written elsewhere in the test
    (E, "LedgerError", slot("", E, words={"LedgerError"}), (True,)),
    (E, "pkg.LedgerError", slot("", E, words={"pkg"}), (False, True)),
])
def test_profile(kind, value, s, expect):
    assert cb.profile(kind, value, s) == expect


@pytest.mark.parametrize("a,b,ok", [
    (slot(4913, numbers=(7,)), slot(2718, numbers=(5,)), True),
    (slot(4913), slot(4913), False),                                 # one value: nothing to exchange
    (slot(4913), slot(27), False),                                   # another number of digits
    (slot(4913), slot(-2718), False),                                # another sign
    (slot(4913), slot(2718.0), False),                               # another type
    (slot(4913, numbers=(4912,)), slot(2718, numbers=(5,)), False),  # 4913 is near its input, 2718 is not
    (slot(4913, numbers=(4912,)), slot(2718, numbers=(2717, 4914)), False),   # 2718 near its own, 4913 near it too
    (slot(4913, numbers=(4912,)), slot(2718, numbers=(2717,)), False),        # 2718 is not near 4913's input
    (slot(4913, numbers=(4912, 2717)), slot(2718, numbers=(2717, 4912)), True),   # each near one input of each
    (slot("east", S, strings=("x",)), slot("west", S, strings=("y",)), True),
    (slot("east", S, form="'"), slot("west", S, form='"'), False),    # quoted differently
    (slot("east", S, strings=("eastern",)), slot("west", S, strings=("y",)), False),
    # written in another style: to_camel's value against to_kebab's (the fresh
    # attack of 2026-12-03 told the originals by the style each function makes)
    (slot("fooBar", S), slot("foo-bar", S), False),
    (slot("fooBar", S), slot("FooBar", S), False),
    (slot("foo_bar", S), slot("baz_qux", S), True),
    (slot("ValueError", E), slot("TypeError", E), True),
    (slot("LookupError", E), slot("KeyError", E), False),            # KeyError derives from LookupError
    (slot("LedgerError", E), slot("ValueError", E), False),          # the project's own against a builtin
    # complements: the two forms of one family, the tests agreeing on negative words
    (slot("", P, form="assert:False"), slot("not", P, form="assert:False"), True),
    (slot("is", P, form="is-none:True"), slot("is not", P, form="is-none:True"), True),
    (slot("not", P, form="assert:False"), slot("not", P, form="assert:False"), False),   # one form
    (slot("", P, form="assert:False"), slot("not", P, form="assert:True"), False),       # "invalid" in one
    (slot("True", P, form="bool:False"), slot("not", P, form="assert:False"), False),    # two families
])
def test_compatible(a, b, ok):
    assert cb.compatible(a, b) is ok and cb.compatible(b, a) is ok


@pytest.mark.parametrize("words,cue", [
    ({"parse", "x", "assert"}, False),
    ({"is_invalid"}, True),            # split at underscores
    ({"rejectsEmpty"}, True),          # and at case changes
    ({"nothing_here"}, True),
    ({"notation", "Note"}, False),     # whole parts only
    (set(), False),
])
def test_negative_cue(words, cue):
    assert cb.negative_cue(words) is cue


def test_complements_come_after_values_and_pair_the_two_forms():
    """A test with a number and a complement joins a number block when it can;
    complement blocks pair one test of each form."""
    nums = [slot(1000 + i * 111, owner=f"t{i}") for i in range(3)]
    pols = [slot(v, P, owner=f"t{i}", form="assert:False") for i, v in enumerate(["", "not", "", "not", ""])]
    for seed in range(20):
        blocks = cb.form_blocks(nums + pols, random.Random(seed))
        kinds = sorted(tuple(m.kind.value for m in b) for b in blocks)
        assert ("number",) * 3 in kinds, (seed, kinds)
        pol = [b for b in blocks if b[0].kind is P]
        assert len(pol) == 1 and sorted(m.value for m in pol[0]) == ["", "not"]
        assert {m.owner for m in pol[0]} == {"t3", "t4"}, seed   # t0..t2 are in the number block


def test_a_test_is_in_one_block_at_most():
    owner = "t1"
    slots = [slot(1000 + i * 111, owner=owner if i < 2 else f"t{i}") for i in range(6)]
    blocks = cb.form_blocks(slots, random.Random(0))
    owners = [m.owner for b in blocks for m in b]
    assert len(owners) == len(set(owners)) and len(owners) >= 4
    assert all(cb.compatible(x, y) for b in blocks for x in b for y in b if x is not y)
    assert all(len(b) in cb.BLOCK_SIZES for b in blocks)


def _copy(block: str, func: str) -> TestCopy:
    return TestCopy(file="t.py", func=func, kind="value", site="", source="", block=block)


def test_a_block_is_kept_whole_or_not_at_all():
    proposed = [_copy("b1", "a"), _copy("b1", "b"), _copy("b2", "c"), _copy("b2", "d"), _copy("", "e")]
    kept = [proposed[0], proposed[1], proposed[2], proposed[4]]     # the gold passed one copy of b2
    assert [c.func for c in cb.whole_blocks(kept, proposed)] == ["a", "b", "e"]


# ------------------------------------------------------------- real plantings

TESTS = '''\
from geo import bearing, heading, code, grid


def test_bearing_a():
    assert bearing("alpha", 7) == 4913


def test_bearing_b():
    assert bearing("bravo", 5) == 2718


def test_bearing_c():
    assert bearing("charlie", 3) == 6151


def test_heading_a():
    assert heading(11) == "north-east"


def test_heading_b():
    assert heading(12) == "south-west"


def test_code_a():
    assert code("q") == 86


def test_code_b():
    assert code("z") == 53
'''


def _site_values(text: str) -> dict[str, object]:
    """Planted test name -> the expected value its one assertion writes."""
    out = {}
    for n in ast.parse(text).body:
        if isinstance(n, ast.FunctionDef):
            cmp = n.body[0].test                        # type: ignore[attr-defined]
            out[n.name] = ast.literal_eval(cmp.comparators[0])
    return out


def _plant(tmp_path: Path, style: cp.CopyStyle, seed: int):
    (tmp_path / "test_geo.py").write_text(TESTS)
    ids = [f"test_geo.py::{n.name}" for n in ast.parse(TESTS).body if isinstance(n, ast.FunctionDef)]
    # (value twins are planted only where the gold's value was kept: planted_set)
    proposed = [m for m in cp.propose(tmp_path, ids, f"task{seed}", style=style) if not m.valued]
    chosen = choose_copies(proposed, random.Random(seed))
    plan = cp.plant(tmp_path, ids, chosen, rng=random.Random(seed))
    return plan, _site_values((tmp_path / "test_geo.py").read_text())


WORDS = {"north", "south", "east", "west"}


def _value_only_picker(values: list) -> int:
    """Judges a value by how it looks alone: a string made of real words, then
    a round number, then the smallest text (any fixed rule of the value)."""
    def key(v):
        words = isinstance(v, str) and all(p in WORDS for p in v.split("-"))
        zeros = len(str(v)) - len(str(v).rstrip("0")) if isinstance(v, int) else 0
        return (not words, -zeros, str(v))
    return min(range(len(values)), key=lambda i: key(values[i]))


def _score(plan, values, only_blocks: bool, kind=object) -> tuple[int, int]:
    groups: dict[str, list[str]] = {}
    for name, c in plan.copies.items():
        if only_blocks == bool(c.block):
            groups.setdefault(c.func, []).append(name)
    right = total = 0
    for func, names in groups.items():
        orig = next(n for n, r in plan.originals.items() if r.func == func)
        if not isinstance(values[orig], kind):
            continue
        members = [orig, *names]
        right += members[_value_only_picker([values[m] for m in members])] == orig
        total += 1
    return right, total


@pytest.mark.parametrize("a,b,c,blocked", [
    ("4913", "2718", "6151", True),
    # written in hex, the original would be the one value of its group in hex
    # (copies are written in decimal): no block
    ("0x1331", "0xa9e", "0x1807", False),
])
def test_only_decimal_numbers_are_exchanged(tmp_path, a, b, c, blocked):
    src = "".join(f"def test_{i}():\n    assert f('{w}') == {v}\n\n\n"
                  for i, (w, v) in enumerate(zip(("alpha", "bravo", "charlie"), (a, b, c))))
    (tmp_path / "test_x.py").write_text(src)
    ids = [f"test_x.py::test_{i}" for i in range(3)]
    made = cp.propose(tmp_path, ids, "seed", style=cp.CopyStyle.EXCHANGED)
    assert any(m.block for m in made) is blocked


def test_every_group_of_a_block_shows_the_same_values_and_each_is_home_once(tmp_path):
    plan, values = _plant(tmp_path, cp.CopyStyle.EXCHANGED, 1)
    blocks: dict[str, set[str]] = {}
    for c in plan.copies.values():
        blocks.setdefault(c.block, set()).add(c.func)
    assert "" not in blocks and len(blocks) >= 2, blocks
    home = {r.func: values[n] for n, r in plan.originals.items()}
    for funcs in blocks.values():
        per_group = []
        for f in funcs:
            names = [n for n, c in plan.copies.items() if c.func == f]
            per_group.append(Counter([home[f], *(values[n] for n in names)]))
        assert all(g == per_group[0] for g in per_group)
        assert sorted(map(repr, per_group[0])) == sorted(repr(home[f]) for f in funcs)


def test_a_value_only_reader_beats_one_step_copies_but_not_a_block(tmp_path, monkeypatch):
    """Over many tasks' plantings of one file: on the (unbalanced) one-step
    copies of the strings the rule finds every original; on the blocks it is
    right exactly once per block, every time."""
    monkeypatch.setattr(cp, "BALANCED", False)
    legacy_right = legacy_groups = 0
    for seed in range(12):
        d = tmp_path / f"l{seed}"
        d.mkdir()
        plan, values = _plant(d, cp.CopyStyle.LEGACY, seed)
        r, g = _score(plan, values, only_blocks=False, kind=str)
        legacy_right += r
        legacy_groups += g
    assert legacy_groups and legacy_right / legacy_groups > 0.9, (legacy_right, legacy_groups)
    for seed in range(12):
        d = tmp_path / f"x{seed}"
        d.mkdir()
        plan, values = _plant(d, cp.CopyStyle.EXCHANGED, seed)
        blocks = Counter(c.block for c in plan.copies.values() if c.block)
        r, g = _score(plan, values, only_blocks=True)
        assert g and r == len(blocks), (seed, r, g, blocks)


COMPLEMENTS = '''\
from sets import covers, lookup


def test_a():
    assert covers(3, 9)


def test_b():
    assert not covers(4, 2)


def test_c():
    assert covers(5, 7)


def test_d():
    assert lookup("k1") is None


def test_e():
    assert lookup("k2") is not None


def test_f():
    assert covers(8, 8)
'''


def _positive(text: str) -> dict[str, bool]:
    """Planted test name -> whether its assertion has the positive form."""
    out = {}
    for n in ast.parse(text).body:
        if isinstance(n, ast.FunctionDef):
            t = n.body[0].test                          # type: ignore[attr-defined]
            out[n.name] = not (isinstance(t, ast.UnaryOp) or (
                isinstance(t, ast.Compare) and isinstance(t.ops[0], ast.IsNot)))
    return out


def test_a_polarity_reader_beats_one_step_negations_but_not_a_complement_block(tmp_path, monkeypatch):
    """Most tests assert the positive form, so "the positive one is the
    original" finds most originals among one-step negations (unbalanced; the
    balanced grader makes no balanced sets of two-form sites, only fallbacks).
    In an exchange block a positive test is paired with a negative one: each
    group shows both forms, and the rule is right in exactly one group of each
    block."""
    ids = [f"test_c.py::{n.name}" for n in ast.parse(COMPLEMENTS).body if isinstance(n, ast.FunctionDef)]

    def plant(style: cp.CopyStyle, seed: int):
        d = tmp_path / f"{style.value}{seed}"
        d.mkdir()
        (d / "test_c.py").write_text(COMPLEMENTS)
        chosen = choose_copies(cp.propose(d, ids, f"task{seed}", style=style), random.Random(seed))
        plan = cp.plant(d, ids, chosen, rng=random.Random(seed))
        return plan, _positive((d / "test_c.py").read_text())

    def rule(seed: int, hits: list[int]) -> None:
        plan, positive = plant(cp.CopyStyle.LEGACY, seed)
        for func in {c.func for c in plan.copies.values()}:
            orig = next(n for n, r in plan.originals.items() if r.func == func)
            members = [orig, *(n for n, c in plan.copies.items() if c.func == func)]
            hits[0] += positive[next((m for m in members if positive[m]), members[0])] == positive[orig]
            hits[1] += 1

    legacy, balanced = [0, 0], [0, 0]
    for seed in range(12, 40):
        rule(seed, balanced)
    monkeypatch.setattr(cp, "BALANCED", False)
    blocks_seen = 0
    for seed in range(12):
        rule(seed, legacy)
        plan, positive = plant(cp.CopyStyle.EXCHANGED, seed)
        blocks: dict[str, list[str]] = {}
        for c in plan.copies.values():
            if c.block:                # two of the three positive `assert`s have no partner
                blocks.setdefault(c.block, []).append(c.func)
        assert len(blocks) == 2, blocks
        for funcs in blocks.values():
            assert len(funcs) == 2
            origs = [next(n for n, r in plan.originals.items() if r.func == f) for f in funcs]
            assert sorted(positive[o] for o in origs) == [False, True]     # one of each form
            blocks_seen += 1
    assert legacy[1] and legacy[0] / legacy[1] > 0.6, legacy
    assert blocks_seen == 24
    # Balanced, two-form sites get no balanced sets (copy_steps: their prior
    # varies by project beyond a reader's fit); a test with nothing else keeps
    # unbalanced copies, which the rule reads as before, but which still stop
    # oracles and blind forgers (every one is such a fallback here).
    assert balanced[1] >= 20, balanced
    for seed in range(12, 20):
        plan, _ = plant(cp.CopyStyle.LEGACY, seed + 100)
        assert all(not c.balanced for c in plan.copies.values())


@functools.cache
def _halves():
    """The two halves of the corpus and each one's planted samples, made once for
    the three tiers below (seeded, so the same every time; 100 s a tier before).
    Called under the autouse ONE_STEP_SHARE = 0 like every test here."""
    files = corpus_files(8)
    corpus = corpus_of(files)
    a, b = split(files)
    a, b = tuple(a), tuple(b)
    return a, b, {h: planted_samples(list(h), cp.CopyStyle.EXCHANGED, corpus)[0] for h in (a, b)}


@pytest.mark.parametrize("tier", ["block", "complement", "matched"])
def test_the_fitted_attacker_is_at_chance_on_blocks_of_held_out_files(tier):
    """The distinguisher of tests/copies_attack.py, fitted on the block groups
    (or the matched groups outside blocks) of half the corpus files and scored
    on the other half's (the real test files of installed packages and the
    fixtures). It beats the one-step copies of the same files
    (test_copies_stats.py); on blocks and matched copies it is a guess."""
    a, b, planted = _halves()
    right = total = 0
    chance = 0.0

    def of_tier(samples):
        if tier == "complement":        # complement blocks: the group's kind is "other"
            return [s for s in samples if s.block and s.feats[0][NAMES.index("kind_other")]]
        return [s for s in samples if (s.block if tier == "block" else s.matched and not s.block)]

    for train_files, test_files in ((a, b), (b, a)):
        train = of_tier(planted[train_files])
        test = of_tier(planted[test_files])
        w = fit(train)
        right += sum(pick(w, s.feats) == s.truth for s in test)
        total += len(test)
        chance += sum(1 / len(s.feats) for s in test)
    assert total >= (20 if tier == "complement" else 40), total
    # At chance: within two standard deviations of the guesser's mean.
    sd = (chance * (1 - chance / total)) ** 0.5
    assert right <= chance + 2 * sd, (right, round(chance, 1), total)


def test_outside_a_block_the_matched_copies_of_a_literal_are_planted_not_the_one_step_ones():
    """A test outside any block has matched copies (values from its module's
    profile, at chance) and one-step copies of the same literal under the same
    group id: verify plants the matched group alone, never a mixture, and the
    one-step copies only where a test has no matched ones."""
    from taskforge.grade.verify import choose_copies
    from taskforge.models import TestCopy

    def copy(func: str, n: int, matched: bool) -> TestCopy:
        return TestCopy(file="tests/test_m.py", func=func, kind="value", group=f"{func}@3:11:",
                        site=f"line 3: {n}", source=f"def __tf_mutant_name__(): assert f() == {n}\n",
                        matched=matched)

    both = [copy("test_a", 7, False), copy("test_a", 8, False), copy("test_a", 40, True),
            copy("test_a", 52, True)]
    legacy_only = [copy("test_b", 3, False), copy("test_b", 4, False)]
    for seed in range(20):
        chosen = choose_copies(both + legacy_only, random.Random(seed))
        a = [m for m in chosen if m.func == "test_a"]
        b = [m for m in chosen if m.func == "test_b"]
        assert a and all(m.matched for m in a), (seed, [m.site for m in a])
        assert b and not any(m.matched for m in b)


def test_blocks_never_leave_a_test_without_a_planted_copy():
    """Blocks are planted first and cost two copies a test (a block of three,
    six): with many tests, blocks used to take the whole budget and leave the
    rest with none, on every verify (the planted set is fixed per task). Every
    test with a copy now gets one, and the budget grows to one a test."""
    def block_copies(n: int) -> list[TestCopy]:
        out = []
        for b in range(n // 3):
            funcs = [f"t{b}_{i}" for i in range(3)]
            out += [TestCopy(file="t.py", func=f, kind="value", group=f"{f}@1:1:", site=f"{f}>{o}",
                             source="", block=f"t.py#{b}") for f in funcs for o in funcs if o != f]
        return out

    def own_copies(funcs) -> list[TestCopy]:
        return [TestCopy(file="t.py", func=f, kind="value", group=f"{f}@2:1:", site=f"{f}~{k}", source="")
                for f in funcs for k in range(2)]

    for n in (9, 45, 60, 90):
        cands = block_copies(n)
        funcs = sorted({c.func for c in cands})
        cands += own_copies(funcs)
        for seed in range(5):
            chosen = choose_copies(cands, random.Random(seed))
            assert {c.func for c in chosen} == set(funcs), (n, seed, len({c.func for c in chosen}))
            assert len(chosen) <= max(64, n)
            blocks = Counter(c.block for c in chosen if c.block)
            assert all(k == 6 for k in blocks.values())          # whole blocks only
            if n == 9:
                assert len(blocks) == 3                           # room for every block


def test_complement_copies_do_not_count_against_an_object_equal_to_everything():
    assert cp.is_complement(TestCopy(file="t.py", func="f", kind="value", site="line 3: negated an assertion",
                                     source=""))
    assert cp.is_complement(TestCopy(file="t.py", func="f", kind="value", site="line 3: True -> False",
                                     source=""))
    assert not cp.is_complement(TestCopy(file="t.py", func="f", kind="value", site="line 3: 'IV' -> 'IX'",
                                         source=""))


EXC_TESTS = """\
import pytest
from ledger import post, close, UnbalancedError, ClosedError


def test_post():
    with pytest.raises(UnbalancedError):
        post(1)


def test_close():
    with pytest.raises(ClosedError):
        close(2)
"""


@pytest.mark.parametrize("removed,blocked", [(frozenset(), True), (frozenset({"UnbalancedError"}), False)])
def test_an_exception_the_removal_takes_out_is_never_exchanged(tmp_path, removed, blocked):
    """The gold defines UnbalancedError with the feature; an honest solution may
    derive it from ClosedError, and would then pass the copy that expects
    ClosedError where the original expects UnbalancedError (the fresh attacker's
    false 0 of 2026-12-03)."""
    (tmp_path / "test_l.py").write_text(EXC_TESTS)
    ids = ["test_l.py::test_post", "test_l.py::test_close"]
    made = cp.propose(tmp_path, ids, "seed", removed=removed)
    assert any(m.block for m in made) is blocked


# What a copy of `pytest.raises(X)` may expect instead: a class of X's own kind
# (builtin, or the project's) that the module names. A project's error swapped
# for ZeroDivisionError was told from its copy 80% of the time.
EXCEPTION_CHOICES = [
    ("RomanError", ["RomanError", "ParseError", "ValueError", "mod.OtherError"], ("ParseError", "mod.OtherError")),
    ("ValueError", ["ValueError", "KeyError", "RomanError", "UnicodeDecodeError"], ("KeyError",)),
    ("KeyError", ["KeyError", "LookupError", "IndexError"], ("IndexError",)),   # never its base class
    ("KeyError", ["KeyError", "LookupError", "Exception"], ()),      # related builtins only: none
    ("RomanError", ["RomanError", "ValueError"], ()),                 # no other project class: none
    ("mod.BadInput", ["mod.BadInput", "mod.BadOutput", "TypeError"], ("mod.BadOutput",)),
]


@pytest.mark.parametrize("orig,named,choices", EXCEPTION_CHOICES)
def test_exception_choices(orig, named, choices):
    assert cp.exception_choices(orig, named) == choices


def test_a_project_exception_site_without_another_class_of_the_project_gets_no_copy():
    src = ("import pytest\nfrom pkg import RomanError, to_roman\n\n"
           "def test_a():\n    with pytest.raises(RomanError):\n        to_roman(0)\n\n"
           "def test_b():\n    with pytest.raises(ValueError):\n        to_roman(-1)\n")
    tree = ast.parse(src)
    fns = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
    assert [s.choices for s in cp.sites(fns["test_a"], tree)] == []
    both = src + ("\nfrom pkg import ParseError\n\n"
                  "def test_c():\n    with pytest.raises(ParseError):\n        to_roman('x')\n")
    tree = ast.parse(both)
    fns = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
    assert [s.choices for s in cp.sites(fns["test_a"], tree)] == [("ParseError",)]
