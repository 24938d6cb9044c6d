"""One-step copies proposed symmetrically, so that a planted set can be balanced exactly.

A reader of the planted file weighs each member of a group (the original and its
copies) by how original it looks, and also by how likely each member is to have
produced the others: a generator that draws a replacement letter from the
string's own letters makes "this member's letter recurs in it" a tell ('status'
-> 'statss' is 30 times likelier than the reverse), and one that keeps drawing
after a refusal, or plants a smaller set when one copy is refused, undoes any
balance (docs/redteam/2026-12-03-copy-odds-review.md, findings 2 to 4).

So every set here is drawn from a pattern that any of its members would have
drawn with the same probability (a symmetric proposal): numbers on an evenly
spaced run with the original at a uniformly random place in it, strings with
one position holding uniformly drawn letters of its kind, exceptions as a
uniformly drawn subset of the site's classes. A set that breaks a rule
(classes related to each other, a number that changes sign or how it is
written) is refused by a test on the set alone, the same from every member. Kept with probability
exp(min over members of s(m) - s(original)) under a reader's score s (`keep`),
a planted set then shows each member as the original equally often under that
reader (a Metropolis step; `s` fitted on unbalanced sets of these proposals is
the reader's prior, since the proposal odds cancel). One draw a set: a refusal
leaves the site without that set.

Sets of one copy (a pair with the original) and of two (a triple) are drawn
apart; which size a task gets is settled before any draw, never by a refusal.
Sites with two forms only get none (True/False, `is None`, a
negated assertion): the positive form is the original most of the time, by a
margin that varies by project. Exchange blocks and matched values
(copy_blocks, copy_values) cover them.
"""
from __future__ import annotations

import math
import random
import re
import string
from collections.abc import Callable, Sequence
from decimal import Decimal

from taskforge.analysis.pyparse import literal_eval

_STR_PREFIX = re.compile(r"^([rRbBuU]*)('''|\"\"\"|'|\")")

# A site's proposal: (original as planted, copies wanted, rng) -> the copies, or None.
Propose = Callable[[str, int, random.Random], "tuple[str, ...] | None"]


def canonical(token: str, value) -> str:
    """A number written the one way copies are written: decimal, or hex/octal/
    binary in lower case when the original is, no underscores, floats by repr."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return token
    if isinstance(value, float):
        return repr(value)
    low = token.lstrip("-").lower()
    sign = "-" if value < 0 else ""
    if low.startswith("0x"):
        return sign + hex(abs(value))
    if low.startswith("0o"):
        return sign + oct(abs(value))
    if low.startswith("0b"):
        return sign + bin(abs(value))
    return str(value)


def _run(x: int, k: int, rng: random.Random) -> list[int]:
    """The other members of k+1 evenly spaced integers, step 1 to 3, with `x`
    at a uniformly random place (for one copy: x +- 1, 2 or 3). Any member of
    a run draws that run as likely as `x` does."""
    d = rng.choice((1, 2, 3))
    j = rng.randrange(k + 1)
    return [x + (i - j) * d for i in range(k + 1) if i != j]


def int_copies(token: str, k: int, rng: random.Random) -> tuple[str, ...] | None:
    """A run written as the original is (hex stays hex), refused where it
    crosses zero: small expected values are positive 98% of the time, so "the
    non-negative one" would name the original (review of 731a903, finding 4)."""
    v = literal_eval(token)
    if isinstance(v, bool) or not isinstance(v, int):
        return None
    run = _run(v, k, rng)
    if any((n < 0) != (v < 0) for n in run):
        return None
    return tuple(canonical(token, n) for n in run)


def _lattice(token: str) -> tuple[int, int, int, int] | None:
    """(sign, mantissa, exponent, unit) of a float as repr writes it: copies move
    by whole units of its second significant digit (its last, when it has one)."""
    if any(c in token.lower() for c in "ein") or token.strip("-").count(".") != 1:
        return None
    sign, digits, exp = Decimal(token).as_tuple()
    if not isinstance(exp, int):
        return None
    mant = int("".join(map(str, digits)) or "0")
    return sign, mant, exp, 10 ** max(0, len(str(mant)) - 2) if mant else 1


def float_copies(token: str, k: int, rng: random.Random) -> tuple[str, ...] | None:
    """A run of mantissas on the original's lattice, sign kept; refused unless
    every member is written on that same lattice (decimals and unit), so that
    the set is one any member would have drawn as likely."""
    lat = _lattice(token)
    if lat is None:
        return None
    sign, mant, exp, unit = lat
    if sign and mant == 0:
        return None                 # -0.0: never an original worth a copy, and a tell as a copy
    out = []
    for j in _run(0, k, rng):
        new = mant + j * unit
        if new < 0 or (sign and new == 0):
            return None
        tok = repr(float(Decimal((sign, tuple(int(c) for c in str(new)), exp))))
        got = _lattice(tok)
        if got is None or got[1:] != (new, exp, unit) or got[0] != sign:
            return None
        out.append(tok)
    return tuple(out)


def alphabet(ch: str) -> str:
    """The letters a character's own kind is drawn from ("" reads as lower case)."""
    return string.digits if ch.isdigit() else string.ascii_uppercase if ch.isupper() else string.ascii_lowercase


# A number written as text (`"1102.50"`, `"12,000"`, `"7%"`).
NUMBER_TEXT = re.compile(r"[+-]?\d[\d,_]*(\.\d+)?([eE][+-]?\d+)?%?")


def text_copies(token: str, k: int, rng: random.Random) -> tuple[str, ...] | None:
    """One ASCII letter or digit (away from escapes) replaced, at the same place
    in every copy, by distinct letters drawn uniformly from its kind. Refused if
    a copy does not parse or means the original's value."""
    m = _STR_PREFIX.match(token)
    if not m or "f" in m.group(1).lower():
        return None
    prefix, quote = m.groups()
    body = token[len(prefix) + len(quote): len(token) - len(quote)]
    number = bool(NUMBER_TEXT.fullmatch(body))
    # A number written as text changes a nonzero digit into another: its zeros
    # (roundness, no leading zero: "10.00" -> "00.00" named its original) stay.
    safe = [i for i, ch in enumerate(body) if ch.isalnum() and ch.isascii() and (i == 0 or body[i - 1] != "\\")
            and (not number or ch in "123456789")]
    if not safe:
        return None
    i = rng.choice(safe)
    letters = rng.sample([x for x in ("123456789" if number else alphabet(body[i])) if x != body[i]], k)
    value = literal_eval(token)
    out = []
    for x in letters:
        cand = prefix + quote + body[:i] + x + body[i + 1:] + quote
        try:
            if literal_eval(cand) == value:
                return None
        except (ValueError, SyntaxError):
            return None
        out.append(cand)
    return tuple(out)


def value_copies(token: str, k: int, rng: random.Random) -> tuple[str, ...] | None:
    """Copies of a number or a string, by its type. None for bools (two forms
    whose prior varies by project). String copies stop oracles and forgers that
    never read the file, but a character model of the repository tells a
    changed letter from a word 89-100% of the time (review of 731a903, finding
    3): kept at the reader's odds, most are refused."""
    try:
        v = literal_eval(token)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return int_copies(token, k, rng)
    if isinstance(v, float):
        return float_copies(token, k, rng)
    if isinstance(v, (str, bytes)):
        return text_copies(token, k, rng)
    return None


def exception_copies(pool: Sequence[str], related: Callable[[str, str], bool]) -> Propose:
    """An expected exception: `k` classes drawn uniformly from the site's pool,
    refused if any two of the set are related. The pool is the site's, the same
    for every member (classes of the original's kind the module names outside
    the site); an original outside it gets no copies, or it would be the one
    member the module names nowhere else (review of 731a903, finding 1)."""
    names = sorted(set(pool))

    def propose(x: str, k: int, rng: random.Random) -> tuple[str, ...] | None:
        if x not in names:
            return None
        others = [n for n in names if n != x]
        if len(others) < k:
            return None
        picked = rng.sample(others, k)
        members = [x, *picked]
        if any(related(a, b) for i, a in enumerate(members) for b in members[i + 1:]):
            return None
        return tuple(picked)
    return propose


def keep(scores: Sequence[float]) -> float:
    """The chance to keep a proposed set, the original's score first:
    exp(min(s) - s(original))."""
    d = min(scores) - scores[0]
    return 1.0 if d >= 0 else math.exp(max(d, -50.0))
