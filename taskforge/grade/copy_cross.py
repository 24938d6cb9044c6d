"""Crossed copies: several sites of one test changed together, every
combination of their members planted.

Why: a verify plants copies of one site per test, so a forger who can read
each group's values (the unbalanced fallback is read 0.79 of the time) wins
a task with few tests nearly as often as it reads one group. Copies that each
change a different site would not help: the original would be the one member
one step from all the others. The full product of each site's members is
symmetric (every member differs from as many others at each site), so a
reader must pick each site's original on that site's evidence alone, while
the other sites' values, its context, are now uncertain too. Guessing a test
right then takes every site at once: the odds multiply, site by site.

A cross is built from the single-site candidates of `copies.propose`, with
the text each one changes: every combination is the test's source with each
site's region replaced by that member's text. Combinations run against the
gold at calibration like any copy (their outcomes are measured, not merged);
a cross keeps its first L sites only where every combination of them came
back failed the same way both times (`whole_levels`), and within the hidden
tests' own run time (`within_time`). Verify plants a cross at the largest
level its budget leaves room for (verify.choose_copies), in an order each
verify draws afresh (copies._plant_file): the product's own order named the
original (docs/redteam/2026-12-05-cross-review.md).
"""
from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import product
from pathlib import Path

from taskforge.analysis.pyparse import parse as parse_python
from taskforge.analysis.testindex import TestRef
from taskforge.grade import copies as cp
from taskforge.models import TestCopy

MAX_AXES = 6          # sites a cross combines at most
BUDGET = 64           # copies a verify plants (verify.MAX_PLANTED)
ITEMS = 512           # test ids a task's crosses may add to a run (parametrized tests run every row)
SEP = " | "           # between the sites of a crossed copy's `site`
MIN_SECONDS = 2.0     # crosses may take this long in a run, or as long as the hidden tests if longer

Key = tuple[str, tuple[str, ...], str]     # (file, classes, function)


@dataclass(frozen=True)
class Axis:
    """One site of a cross: the span of the test's source it changes, and each
    member's text over that span (index 0: the original's)."""
    start: int
    end: int
    texts: tuple[str, ...]
    copies: tuple[TestCopy, ...]           # the single-site copies, members 1..


def key_of(m: TestCopy) -> Key:
    return (m.file, tuple(m.cls), m.func)


def key_of_ref(r: TestRef) -> Key:
    return (r.file, tuple(r.cls), r.func)


def region(base: str, variant: str) -> tuple[int, int, str]:
    """(start, end, text): `variant` is `base` with base[start:end] replaced by
    text (the widest common prefix, then suffix)."""
    n = min(len(base), len(variant))
    p = 0
    while p < n and base[p] == variant[p]:
        p += 1
    s = 0
    while s < n - p and base[len(base) - 1 - s] == variant[len(variant) - 1 - s]:
        s += 1
    return p, len(base) - s, variant[p:len(variant) - s]


def axis_of(base: str, original: str, copies: Sequence[TestCopy]) -> Axis | None:
    """The axis of one site: `original` is the original as its copies plant it
    (a number in canonical form, a table written out) or "" (as in `base`).
    None: a member equals another, or nothing changes."""
    variants = [original or base] + [c.source for c in copies]
    spans = [region(base, v) for v in variants if v != base]     # the base itself changes nothing
    if not spans:
        return None
    start = min(a for a, _, _ in spans)
    end = max(b for _, b, _ in spans)
    texts = tuple(v[start:len(v) - (len(base) - end)] for v in variants)
    if len(set(texts)) != len(texts):
        return None
    return Axis(start, end, texts, tuple(copies))


def disjoint(axes: Iterable[Axis]) -> list[Axis]:
    """Axes in order, each kept only if its span is apart from every kept one
    (a character between them: touching spans could be read as one)."""
    kept: list[Axis] = []
    for ax in axes:
        if all(ax.end < k.start or k.end < ax.start for k in kept):
            kept.append(ax)
    return kept


def combine(base: str, axes: Sequence[Axis], members: Sequence[int]) -> str:
    """The test's source with each axis at the given member."""
    out = base
    for ax, i in sorted(zip(axes, members), key=lambda p: -p[0].start):
        out = out[:ax.start] + ax.texts[i] + out[ax.end:]
    return out


def combinations(sizes: Sequence[int]) -> list[tuple[int, ...]]:
    """Every member tuple but the original's (all zeros), sites in order."""
    return [t for t in product(*(range(n) for n in sizes)) if any(t)]


def level_size(axes: Sequence[Axis], level: int) -> int:
    """Copies in a cross at its first `level` axes."""
    return math.prod(len(a.texts) for a in axes[:level]) - 1


def allocate(sizes: dict[Key, list[int]], ids: dict[Key, int], budget: int = BUDGET,
             items: int = ITEMS) -> dict[Key, int]:
    """How many axes each test's cross gets (0: none), within `budget` copies
    planted in all (a test without a cross plants one) and `items` test ids
    the crosses add. Each step widens the cross with the fewest members, whose
    next site multiplies the task's odds the most per copy it costs."""
    levels = {k: 1 for k, s in sizes.items() if len(s) >= 2}
    planted = len(sizes) if sizes else 0

    def cost(k: Key, level: int) -> int:
        return math.prod(sizes[k][:level]) - 1 if level >= 2 else 1

    added = 0
    while True:
        options = []
        for k, lv in levels.items():
            if lv >= len(sizes[k]):
                continue
            more = cost(k, lv + 1) - cost(k, lv)
            if planted + more <= budget and added + more * ids.get(k, 1) <= items:
                options.append((math.prod(sizes[k][:lv]), more, k))
        if not options:
            break
        _, more, k = min(options)
        levels[k] += 1
        planted += more
        added += more * ids.get(k, 1)
    return {k: lv for k, lv in levels.items() if lv >= 2}


def base_source(root: Path, key: Key) -> str | None:
    """The test function's source as copies render it (NAME_TOKEN as its name)."""
    try:
        text = (root / key[0]).read_text(encoding="utf-8")
        tree = parse_python(text)
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return None
    fn = cp.find_def(tree, TestRef(key[0], key[1], key[2]))
    if fn is None:
        return None
    return cp.base_text(text.splitlines(keepends=True), fn)


def _members(group: list[TestCopy]) -> list[TestCopy]:
    """A site's copies in a cross: a balanced set whole, else the first one
    (matched values before one-step ones)."""
    matched = [m for m in group if m.matched]
    balanced = [m for m in group if m.balanced]
    if matched:
        return matched[:1]
    if balanced:
        return balanced
    return group[:1]


def _axes_of(base: str, groups: dict[str, list[TestCopy]], rng: random.Random) -> list[Axis]:
    names = sorted(groups)
    rng.shuffle(names)                    # the sites' order sees no value
    axes = []
    for name in names:
        members = _members(groups[name])
        if not members:
            continue
        original = next((m.original for m in members if m.original), "")
        ax = axis_of(base, original, members)
        if ax is not None:
            axes.append(ax)
    return disjoint(axes)[:MAX_AXES]


def crosses(root: Path, candidates: Sequence[TestCopy], seed: str, ids: dict[Key, int] | None = None,
            budget: int = BUDGET, items: int = ITEMS) -> list[TestCopy]:
    """Crossed candidates for the tests of `candidates` (single-site copies not
    in exchange blocks), not yet validated. `ids`: test ids per test function
    (a parametrized test's copies run every row)."""
    groups: dict[Key, dict[str, list[TestCopy]]] = {}
    for m in candidates:
        if not m.block and not m.cross and not m.valued:      # a value twin is judged by a value of its own
            groups.setdefault(key_of(m), {}).setdefault(m.group, []).append(m)
    rng = random.Random(f"cross:{seed}")
    built: dict[Key, tuple[str, list[Axis]]] = {}
    for k in sorted(groups):
        base = base_source(root, k)
        if base is None or len(groups[k]) < 2:
            continue
        axes = _axes_of(base, groups[k], rng)
        if len(axes) >= 2:
            built[k] = (base, axes)
    sizes = {k: [len(a.texts) for a in axes] for k, (_, axes) in built.items()}
    sizes.update({k: [2] for k in groups if k not in built})       # tests that plant one group
    levels = allocate(sizes, ids or {}, budget, items)
    out: list[TestCopy] = []
    for k, level in sorted(levels.items()):
        base, axes = built[k]
        axes = axes[:level]
        original = combine(base, axes, [0] * len(axes))
        name = "::".join([k[0], *k[1], k[2]]) + "#cross"
        first = axes[0].copies[0]
        tables = sorted({t for a in axes for c in a.copies for t in c.tables})
        made: list[TestCopy] = []
        for members in combinations([len(a.texts) for a in axes]):
            source = combine(base, axes, members)
            try:
                parse_python(source if not source[:1].isspace() else "if 1:\n" + source)
            except SyntaxError:
                made = []
                break
            site = SEP.join(a.copies[i - 1].site for a, i in zip(axes, members) if i)
            kind = "value" if any(a.copies[i - 1].kind == "value" for a, i in zip(axes, members) if i) \
                else "negation"
            made.append(first.model_copy(update={
                "kind": kind, "group": name, "site": site, "source": source,
                "original": "" if original == base else original, "tables": tables,
                "block": "", "matched": False, "balanced": 0, "expect": {},
                "cross": name, "axes": list(members),
                "built": any(a.copies[i - 1].built for a, i in zip(axes, members) if i)}))
        out += made
    return out


def level_of(m: TestCopy) -> int:
    """The smallest level a crossed copy belongs to: its last changed site, + 1."""
    return max((i + 1 for i, a in enumerate(m.axes) if a), default=0)


def whole_levels(kept: Sequence[TestCopy], proposed: Sequence[TestCopy]) -> list[TestCopy]:
    """The kept copies, each cross cut to the largest level (two sites at
    least) all of whose combinations were kept; a cross without a whole level
    2 goes. A cross planted with a member missing would show the original as
    the member closest to the rest."""
    want: Counter = Counter((m.cross, level_of(m)) for m in proposed if m.cross)
    have: Counter = Counter((m.cross, level_of(m)) for m in kept if m.cross)
    top: dict[str, int] = {}
    for name in {m.cross for m in proposed if m.cross}:
        n = 0
        while want[(name, n + 1)] and have[(name, n + 1)] == want[(name, n + 1)]:
            n += 1
        top[name] = n
    return [m for m in kept if not m.cross or (top.get(m.cross, 0) >= 2 and level_of(m) <= top[m.cross])]


def levels(copies: Sequence[TestCopy]) -> dict[str, int]:
    """Each cross's top level among `copies`."""
    out: dict[str, int] = {}
    for m in copies:
        if m.cross:
            out[m.cross] = max(out.get(m.cross, 0), level_of(m))
    return out


def within_time(copies: Sequence[TestCopy], seconds: Sequence[float], limit: float) -> list[TestCopy]:
    """`copies` (with the run time of each) with every cross cut to the largest
    level whose combinations, over all crosses, fit in `limit` seconds; a cross
    left below two sites goes. Levels are taken smallest first, one cross after
    another in name order, so the cut is the same for every run of a task."""
    cost: dict[tuple[str, int], float] = {}
    for m, s in zip(copies, seconds):
        if m.cross:
            cost[(m.cross, level_of(m))] = cost.get((m.cross, level_of(m)), 0.0) + s
    top = levels(copies)
    keep = {name: 1 for name in top}
    used = sum(cost.get((name, 1), 0.0) for name in top)
    grew = True
    while grew:
        grew = False
        for name in sorted(top):
            nxt = keep[name] + 1
            if nxt <= top[name] and used + cost.get((name, nxt), 0.0) <= limit:
                used += cost.get((name, nxt), 0.0)
                keep[name] = nxt
                grew = True
    return [m for m in copies if not m.cross or (keep[m.cross] >= 2 and level_of(m) <= keep[m.cross])]


def level(copies: Sequence[TestCopy], n: int) -> list[TestCopy]:
    """A cross's copies at its first `n` sites."""
    return [m for m in copies if 1 <= level_of(m) <= n]
