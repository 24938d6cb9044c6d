"""Exchanged copies: each test's copies carry the expected values of other tests.

Someone who reads the planted file but cannot compute the feature can still
weigh each candidate value by how it looks: how often it recurs, how round it is,
the style of a string, which exception it names. Copies whose values are drawn
to look like the original never match it exactly (bench/bench_copies.py).

So the copies here invent no values. They exchange the values the file already
has, in blocks. The m tests of a block share one set of m values. Each value is
the original of one test and a copy in every other test of the block. Planted
together, every group of the block then shows the same values, and the rest of
the module shows each of them equally often. A rule that looks at a value alone
picks the same value in every group of the block, so it is right exactly once
in m.

What is left is how a value relates to the test around it: its inputs, its
other constants, its comments. Values share a block only where each relates to
each test of the block as that test's own value does (`profile`): the same
counts of occurrences, near numbers and near strings. Tests no block takes
keep the matched or one-step copies (copies.py).

Complements (`assert x` / `assert not x`, `is None` / `is not None`, True /
False) are exchanged the same way: a block pairs a test whose assertion is
positive with one whose assertion is negative, so each group shows both forms
and a reader who prefers one form (most tests assert the positive) is right in
one group of the two. Both tests must agree on negative words ("invalid",
"empty", `negative_cue`), or the words would tell the forms apart.

The decisions here are pure; copies.py renders the copies and calibrate.py
drops a block whose copies the gold did not all fail (`whole_blocks`).
"""
from __future__ import annotations

import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum

# Edit distances between strings are compared up to this many edits (a reader
# who counts further than that finds the block's values alike there).
NEAR_CAP = 8
BLOCK_SIZES = (3, 2)      # larger blocks first: a guess is right once in three
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d+)?")


class SlotKind(str, Enum):
    NUMBER = "number"
    STRING = "string"
    EXCEPTION = "exception"
    # A complement: `is None` / `is not None`, assertTrue / assertFalse, `assert x`
    # / `assert not x`, `True` / `False`. Its value is the form the test has; a
    # block of two pairs a test of each form, so "the positive one" is right once.
    POLARITY = "polarity"


# Words that make a test read as a negative one ("rejects an invalid date"): the
# two tests of a complement block agree on them, so a reader who lets them decide
# picks the same form in both groups.
NEGATIVE_CUES = frozenset("""
    not no non none nothing never neither nor without cannot cant isnt doesnt dont
    invalid bad fail fails failed failure false error errors err wrong illegal
    missing empty absent unknown unsupported reject rejects rejected refuse refused
    deny denied forbidden disallowed disallow raise raises negative null nan
    mismatch unequal different exclude excluded out outside off disabled
""".split())
_PART = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


def negative_cue(words: Iterable[str]) -> bool:
    """Whether any word, split at underscores and case changes, is a negative cue."""
    return any(part.lower() in NEGATIVE_CUES for w in words for part in _PART.findall(w))


@dataclass(frozen=True)
class Slot:
    """One test's exchangeable site, and what its test shows besides it."""
    index: int                       # the caller's handle
    owner: object                    # its test: a block holds one slot per test
    kind: SlotKind
    value: object                    # the number, the string, the exception's name
    strings: tuple[str, ...] = ()    # the test's other string constants
    numbers: tuple[float, ...] = ()  # the test's other numbers, signs included
    words: frozenset[str] = frozenset()   # names and numerals of the test's text, the site left out
    form: str = ""                   # how the value is written (a string's quote): one per block


def value_class(kind: SlotKind, value: object) -> tuple:
    """Values of one class may share a block: one type, sign and number of digits
    for numbers, a length band for strings, builtin or the project's own for
    exceptions. The class keeps what is easiest to relate to a test (its type and
    size) the same for every member."""
    if kind is SlotKind.NUMBER:
        assert isinstance(value, (int, float))
        a = abs(value)
        digits = len(str(int(a))) if a >= 1 else 0
        return (kind, type(value).__name__, value < 0, digits)
    if kind is SlotKind.STRING:
        n = len(str(value))
        band = n if n <= 3 else 4 if n <= 6 else 5 if n <= 12 else 6 if n <= 24 else 7
        return (kind, band, shape(str(value)))
    if kind is SlotKind.POLARITY:
        return (kind,)
    import builtins
    return (kind, isinstance(getattr(builtins, str(value), None), type))


def _char_class(ch: str) -> str:
    return "a" if ch.islower() else "A" if ch.isupper() else "0" if ch.isdigit() else \
        " " if ch.isspace() else ch


def shape(text: str) -> tuple[str, str]:
    """A string's written style: the class of its first character and the set of
    classes it uses (lower, upper, digit, space, each punctuation mark), so that
    camelCase, PascalCase, kebab-case, snake_case and CONSTANT_CASE differ. A
    block of one style gives no value away to a reader who checks which style
    the function under test makes (`to_kebab` returns kebab-case)."""
    return (_char_class(text[0]) if text else "", "".join(sorted({_char_class(c) for c in text})))


def levenshtein(a: str, b: str, cap: int) -> int:
    """Edit distance, or `cap` when it is at least that."""
    if abs(len(a) - len(b)) >= cap:
        return cap
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        if min(cur) >= cap:
            return cap
        prev = cur
    return min(prev[-1], cap)


def _numeral(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def profile(kind: SlotKind, value: object, slot: Slot) -> tuple:
    """How `value` relates to `slot`'s test, as a reader can count it: how often
    it occurs there besides the site (as a constant, a numeral or a name in the
    text, inside a string), how many of its numbers are one step from it and
    whether two of them make it by + - *; for a string, how close the nearest of
    the test's strings is (edits, capped) and whether one contains the other.
    Values of one block have the same profile in every test of the block, so
    whatever a reader derives from these relations is the same for each."""
    if kind is SlotKind.EXCEPTION:
        return tuple(sorted(part in slot.words for part in str(value).split(".")))
    if kind is SlotKind.POLARITY:
        return ()               # what a test's words say of it is in its form
    if kind is SlotKind.NUMBER:
        assert isinstance(value, (int, float))
        a = abs(value)
        text = _numeral(a)
        nums = [abs(x) for x in slot.numbers]
        head = nums[:20]
        return (sum(1 for x in nums if x == a), text in slot.words,
                sum(1 for s in slot.strings if text in s),
                sum(1 for x in nums if x != a and abs(x - a) <= 1),
                any(x + y == a or abs(x - y) == a or x * y == a
                    for i, x in enumerate(head) for y in head[i + 1:]))
    v = str(value)
    low = v.lower()
    strs = [s.lower() for s in slot.strings]
    return (sum(1 for t in strs if t == low),
            sum(1 for t in strs if len(low) >= 2 and low in t and t != low),
            sum(1 for t in strs if len(t) >= 2 and t in low and t != low),
            min([levenshtein(low, t, NEAR_CAP) for t in strs if t != low] or [NEAR_CAP]),
            any(w.lower() == low for w in slot.words) if v else False)


def compatible(a: Slot, b: Slot) -> bool:
    """Two slots may share a block: two tests, one class, one written form (the
    same token counts the same everywhere), different values, each
    value related to each test as the test's own value is (`profile`), and
    (exceptions) neither builtin class derived from the other, or a copy would
    pass where its original does."""
    return (a.owner != b.owner and a.form == b.form
            and value_class(a.kind, a.value) == value_class(b.kind, b.value)
            and a.value != b.value and type(a.value) is type(b.value)
            and (a.kind is not SlotKind.EXCEPTION or _unrelated_classes(str(a.value), str(b.value)))
            and profile(a.kind, b.value, a) == profile(a.kind, a.value, a)
            and profile(b.kind, a.value, b) == profile(b.kind, b.value, b))


def _unrelated_classes(a: str, b: str) -> bool:
    import builtins

    x, y = (getattr(builtins, n.rpartition(".")[2], None) for n in (a, b))
    if isinstance(x, type) and isinstance(y, type):
        return not issubclass(x, y) and not issubclass(y, x)
    return a.rpartition(".")[2] != b.rpartition(".")[2]


def form_blocks(slots: Sequence[Slot], rng: random.Random,
                sizes: Iterable[int] = BLOCK_SIZES) -> list[list[Slot]]:
    """Blocks of pairwise compatible slots, at most one per test, largest
    first, complements last (two forms: a guess is right once in two); slots left
    over get no copies of this kind."""
    free = list(slots)
    rng.shuffle(free)
    free.sort(key=lambda s: s.kind is SlotKind.POLARITY)
    out: list[list[Slot]] = []
    used: set = set()
    for size in sorted(set(sizes), reverse=True):
        if size < 2:
            continue
        left: list[Slot] = []
        while free:
            head = free.pop(0)
            if head.owner in used:
                continue
            block = [head]
            for other in free:
                if len(block) == size:
                    break
                if other.owner not in used and all(compatible(other, m) for m in block):
                    block.append(other)
            if len(block) == size:
                out.append(block)
                used |= {m.owner for m in block}
                free = [s for s in free if s.owner not in used]
            else:
                left.append(head)
        free = left
    return out


def words_of(text: str) -> frozenset[str]:
    """Names and numerals of a piece of source (comments and strings included)."""
    return frozenset(_WORD.findall(text))


def whole_blocks(kept: Sequence, proposed: Sequence) -> list:
    """The kept copies of blocks whose every proposed copy was kept: a block
    with one copy missing shows that copy's value once less, which points at
    the original. Copies outside any block pass through."""
    want: dict[str, int] = {}
    for c in proposed:
        if c.block:
            want[c.block] = want.get(c.block, 0) + 1
    have: dict[str, int] = {}
    for c in kept:
        if c.block:
            have[c.block] = have.get(c.block, 0) + 1
    return [c for c in kept if not c.block or have.get(c.block) == want.get(c.block)]
