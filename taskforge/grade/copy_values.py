"""Copy values that a reader of the planted file cannot tell from the original's.

A solution sees the planted file: the original test and its copies side by side,
differing at one literal. Whatever it can compute from the values there (does
the value recur elsewhere in the module, how round a number is, how a string
fits the module's other strings, whose exception it is) must be distributed the
same for the original as for its copies, or it picks the original and the copies
catch nothing. So a copy value is never a perturbation with its own tells: it is
drawn from the values that share the original's *profile*, every statistic of it
that can be read off the module, computed the same way for the original (with
its own occurrence left out) as for a candidate. Where no such value exists, or
where the original's kind of value is too peaked a priori to have equals (0, 1,
a round hundred, a one-letter string), the site gets no copies: a tell is worse
than no copy, because a copy that gives itself away vouches for the original.

Numbers: the same sign, number of digits and "roundness" (the largest of 1, 2,
5, 10, 20, 25, 50, ... dividing the value), neighbours in value so that the
leading digits stay, the original at a uniformly random rank among them (never
the median by construction). Strings: the same length and character classes,
one substitution per copy with characters of the module's own strings, the same
distances to the module's other strings (an expected value one edit from an
input stays one edit from it), copies chained so the original is not their
centre. Exceptions: another exception of the module's own vocabulary used as
often (a project class for a project class, a builtin the module names for a
builtin).
"""
from __future__ import annotations

import ast
import builtins
import random
import re
import string
from collections import Counter
from dataclasses import dataclass, field
from typing import cast

from taskforge.grade.copy_odds import lev

# Every "round unit" a writer of tests reaches for; a number's roundness is the
# largest of them that divides it.
_BASE = (1, 2, 5, 10, 20, 25, 50)
ROUND_UNITS = tuple(sorted({b * 10 ** e for e in range(0, 16, 2) for b in _BASE}
                           | {b * 10 ** e for e in range(1, 16, 2) for b in _BASE}))
MIN_CLASS = 8            # fewer class members than this in the value's range: too peaked
MAX_STEPS = 12           # class members searched on either side of a number
NEAR_CAP = 4             # edit distances at or beyond this count as "far"
STRING_TRIES = 60
MAX_STRINGS = 3000       # module strings compared against (a bounded cost per site)
_CUSTOM_EXC = re.compile(r"(Error|Exception|Exc|Failure|Invalid|Warning)$")
PUNCT = " -_.,:;/+|#@=*"


def _cls(ch: str) -> str:
    if ch.isdigit():
        return "d"
    if ch.isupper():
        return "u"
    if ch.islower():
        return "l"
    return "p" if ch in PUNCT else ""


@dataclass
class Context:
    """What a reader can count in a test module: its literals and names."""
    strings: Counter = field(default_factory=Counter)
    numbers: Counter = field(default_factory=Counter)       # int/float value -> occurrences
    names: Counter = field(default_factory=Counter)         # Name ids, attribute chains
    alphabet: dict[str, list[str]] = field(default_factory=dict)   # class -> chars of the strings
    bound: set[str] = field(default_factory=set)            # names the module imports or defines

    @classmethod
    def of(cls, module: ast.Module) -> Context:
        ctx = cls()
        negated: set[int] = set()
        for node in ast.walk(module):
            if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) \
                    and isinstance(node.operand, ast.Constant) and _is_number(node.operand.value):
                ctx.numbers[-cast(float, node.operand.value)] += 1
                negated.add(id(node.operand))
            elif isinstance(node, ast.Constant):
                v = node.value
                if isinstance(v, str):
                    ctx.strings[v] += 1
                elif _is_number(v) and id(node) not in negated:
                    ctx.numbers[v] += 1
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                ctx.names[node.id] += 1
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                ctx.names[f"{node.value.id}.{node.attr}"] += 1
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                ctx.bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
            elif isinstance(node, (ast.ClassDef, ast.FunctionDef)):
                ctx.bound.add(node.name)
        chars: dict[str, set[str]] = {}
        for s in ctx.strings:
            for ch in s:
                c = _cls(ch)
                if c and ch.isascii():
                    chars.setdefault(c, set()).add(ch)
        ctx.alphabet = {c: sorted(v) for c, v in chars.items()}
        return ctx

    def minus(self, value) -> Context:
        """The module as a reader sees it around the site: `value`'s own
        occurrence taken out (profiles of the original and of a candidate are
        both computed on this)."""
        strings, numbers = Counter(self.strings), Counter(self.numbers)
        if isinstance(value, str):
            strings[value] -= 1
            strings = +strings
        elif _is_number(value):
            numbers[value] -= 1
            numbers = +numbers
        chars: dict[str, set[str]] = {}
        for s in strings:
            for ch in s:
                c = _cls(ch)
                if c and ch.isascii():
                    chars.setdefault(c, set()).add(ch)
        return Context(strings, numbers, self.names, {c: sorted(v) for c, v in chars.items()},
                       self.bound)


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def levenshtein(a: str, b: str, cap: int = NEAR_CAP) -> int:
    """Edit distance, or `cap` when it is at least that."""
    return lev(a, b, cap)


# ------------------------------------------------------------------- numbers


def unit(n: int) -> int:
    """The roundness of a non-zero integer: the largest round unit dividing it."""
    return max(u for u in ROUND_UNITS if n % u == 0)


def _mantissa(token: str, value) -> tuple[int, int] | None:
    """(the digits as an integer, decimals) of a number written plainly: 2.50 -> (25, 1)."""
    if isinstance(value, int):
        return value, 0
    text = repr(value)
    if "e" in text or "n" in text:
        return None
    whole, _, frac = text.lstrip("-").partition(".")
    digits = int((whole + frac).lstrip("0") or "0")
    return (-digits if value < 0 else digits), len(frac)


def _from_mantissa(m: int, decimals: int, is_float: bool) -> str:
    if not is_float:
        return str(m)
    return repr(float(f"{m / 10 ** decimals:.{decimals}f}"))


def number_profile(value, ctx: Context, fn_numbers: list) -> tuple:
    """What a reader computes for a number at the site (`ctx` without the site)."""
    n = ctx.numbers[value]
    flip = ctx.numbers[-value] if value else 0
    near = sum(c for x, c in ctx.numbers.items() if x != value and abs(x - value) <= 1)
    text = str(abs(value)) if isinstance(value, int) else repr(abs(value))
    in_strings = sum(1 for s in ctx.strings if text in s)
    others = list(fn_numbers)[:30]
    arith = any(a + b == value or a - b == value or b - a == value or a * b == value
                for i, a in enumerate(others) for b in others[i + 1:])
    here = sum(1 for x in others if x == value or x == -value or abs(x - value) <= 1)
    return (min(n, 3), min(flip, 2), min(near, 2), min(in_strings, 2), arith, min(here, 2))


def number_values(token: str, value, ctx: Context, fn_numbers: list, rng: random.Random,
                  k: int) -> list[str] | None:
    """k tokens for copies of a number, or None when none can pass for it."""
    if isinstance(value, int) and not re.fullmatch(r"-?\d+", token.replace(" ", "")):
        return None                 # hex, octal, binary, underscores: written one way only
    mm = _mantissa(token, value)
    if mm is None or not mm[0]:
        return None
    m, dec = mm
    is_float = isinstance(value, float)
    u = unit(abs(m))
    digits = len(str(abs(m)))
    if digits < 2:
        return None if is_float else small_values(value, ctx.minus(value), fn_numbers, rng, k)
    lo, hi = 10 ** (digits - 1), 10 ** digits
    members = len([x for x in range(u, hi, u) if x >= lo and unit(x) == u]) if hi // u < 10 ** 5 else MIN_CLASS
    if members < MIN_CLASS:
        return None
    ctx = ctx.minus(value)
    want = number_profile(value, ctx, fn_numbers)
    sign = -1 if m < 0 else 1

    def side(direction: int) -> list[str]:
        out = []
        for j in range(1, MAX_STEPS + 1):
            x = abs(m) + direction * u * j
            if not lo <= x < hi or unit(x) != u:
                continue
            tok = _from_mantissa(sign * x, dec, is_float)
            val = ast.literal_eval(tok)
            if val == value or number_profile(val, ctx, fn_numbers) != want:
                continue
            out.append(tok)
        return out

    below, above = side(-1), side(1)
    if sign < 0:
        below, above = above, below
    s = rng.randrange(k + 1)          # the original's rank among its copies: uniform
    if len(below) < s or len(above) < k - s:
        return None
    return below[:s] + above[:k - s]


# How often each small magnitude is the expected value of a test (literals at
# copy sites in the test files of numpy, pandas, scipy, networkx, sympy, libcst,
# jsonschema, ...; 0 left out: it is never copied nor a copy).
SMALL_PRIOR = {1: 1083, 2: 606, 3: 497, 4: 241, 5: 155, 6: 87, 7: 45, 8: 37, 9: 43}


def _mh_step(a: int, same: list[int], rng: random.Random) -> int | None:
    """One Metropolis step under SMALL_PRIOR, proposing evenly among `same` (the
    magnitudes whose profile is the original's: an equivalence class, so the
    proposal is symmetric); a rejected move is None, and the caller then makes
    no copy: staying or retrying would favour the likelier value."""
    options = [x for x in same if x != a]
    if not options:
        return None
    b = rng.choice(options)
    return b if rng.random() < min(1.0, SMALL_PRIOR[b] / SMALL_PRIOR[a]) else None


def small_values(value: int, ctx: Context, fn_numbers: list, rng: random.Random, k: int
                 ) -> list[str] | None:
    """Copies of a one-digit integer. Its prior is steep (1 is the expected value
    of a test twenty times as often as 8), so copies drawn evenly would leave the
    original as the likeliest; here original and copies are the links of a
    reversible Markov chain under that prior, the original at a uniform place,
    and any rejected move drops the site: given the set, each member is the
    original equally often. `ctx` is the module without the site."""
    a = abs(value)
    if a not in SMALL_PRIOR:
        return None
    sign = -1 if value < 0 else 1
    want = number_profile(value, ctx, fn_numbers)
    same = [x for x in SMALL_PRIOR if number_profile(sign * x, ctx, fn_numbers) == want]
    k = min(k, len(same) - 1)       # the class decides, the same for every member of it
    if k < 1:
        return None
    s = rng.randrange(k + 1)
    made: list[int] = []
    for steps in (s, k - s):
        cur = a
        for _ in range(steps):
            nxt = _mh_step(cur, same, rng)
            if nxt is None or nxt == a or nxt in made:
                return None
            made.append(nxt)
            cur = nxt
    return [str(sign * x) for x in made]


# ------------------------------------------------------------------- strings


def string_profile(value: str, ctx: Context, local: list[str]) -> tuple:
    """What a reader computes for a string at the site (`ctx` without the site;
    `local`: the other strings of its test, its table row first)."""
    n = ctx.strings[value]
    low = value.lower()
    ci = sum(c for s, c in ctx.strings.items() if s != value and s.lower() == low)
    contained = sum(1 for s in ctx.strings if s != value and len(value) >= 2 and value in s)
    contains = sum(1 for s in ctx.strings if s != value and len(s) >= 2 and s in value)
    nums = sum(1 for x in ctx.numbers if isinstance(x, int) and abs(x) >= 10 and str(abs(x)) in value)
    pool = [s for s in ctx.strings if s != value and abs(len(s) - len(value)) < NEAR_CAP][:MAX_STRINGS]
    dists = sorted(levenshtein(value, s) for s in pool)[:2]
    near = tuple(dists + [NEAR_CAP] * (2 - len(dists)))
    mine = tuple(sorted(levenshtein(value, s) for s in local[:20])[:3])
    same_here = sum(1 for s in local if s == value or (len(s) >= 2 and s in value)
                    or (len(value) >= 2 and value in s))
    seen = set().union(*ctx.alphabet.values()) if ctx.alphabet else set()
    unseen = sum(1 for ch in value if ch not in seen)
    return (min(n, 3), min(ci, 2), min(contained, 2), min(contains, 2), min(nums, 2), near, mine,
            min(same_here, 2), unseen)


def _editable(body: str) -> list[int]:
    """Positions a copy may change: letters, digits and plain punctuation, away from escapes."""
    return [i for i, ch in enumerate(body) if _cls(ch) and ch.isascii()
            and (i == 0 or body[i - 1] != "\\") and ch != "\\"]


def bigrams(ctx: Context) -> Counter:
    """Character pairs of the module's strings, "^" and "$" at their ends."""
    out: Counter = Counter()
    for s, c in ctx.strings.items():
        t = "^" + s + "$"
        for a, b in zip(t, t[1:]):
            out[a, b] += c
    return out


def _conditional(body: str, i: int, ctx: Context, pairs: Counter, firsts: Counter) -> dict[str, float]:
    """P(y at i | its neighbours) under the module's bigram model, over the
    characters of the module of the same class as body[i] (smoothed)."""
    ch = body[i]
    choices = set(ctx.alphabet.get(_cls(ch), [])) | {ch}
    if len(choices) < 2:
        fallback = {"d": string.digits, "u": string.ascii_uppercase, "l": string.ascii_lowercase}
        choices |= set(fallback.get(_cls(ch), ""))
    t = "^" + body + "$"
    prev, nxt = t[i], t[i + 2]
    w = {y: (pairs[prev, y] + 0.5) * (pairs[y, nxt] + 0.5) / (firsts[y] + 0.5 * len(choices))
         for y in sorted(choices)}
    z = sum(w.values())
    return {y: x / z for y, x in w.items()}


def _substitute(body: str, i: int, ctx: Context, pairs: Counter, firsts: Counter,
                rng: random.Random) -> str | None:
    """One Metropolised Gibbs step at position i: a new character drawn from its
    conditional under the module's bigram model, accepted so that the pair
    (before, after) is exchangeable: neither looks more like the module's text."""
    p = _conditional(body, i, ctx, pairs, firsts)
    x = body[i]
    others = [y for y in p if y != x]
    if not others or p[x] >= 1.0:
        return None
    y = rng.choices(others, weights=[p[o] for o in others])[0]
    if rng.random() >= min(1.0, (1 - p[x]) / max(1e-12, 1 - p[y])):
        return None
    return body[:i] + y + body[i + 1:]


def _quoted(token: str, value) -> tuple[str, str] | None:
    """(prefix, quote) of a plain string literal token that spells `value`
    (no escapes, no bytes), else None."""
    if not isinstance(value, str) or len(value) < 2:
        return None
    m = re.match(r"^([rRuU]*)('''|\"\"\"|'|\")", token)
    if not m or "\\" in token:
        return None
    prefix, quote = m.groups()
    if token[len(prefix) + len(quote): len(token) - len(quote)] != value:
        return None
    return prefix, quote


def _recurring_peers(value: str, quote: str, ctx: Context, local: list[str], want) -> list[str]:
    """Other strings of the module shaped like `value` with its profile: the
    copies of a string that recurs must recur as often."""
    return [s for s in ctx.strings if s != value and len(s) == len(value)
            and [_cls(c) for c in s] == [_cls(c) for c in value] and quote not in s
            and "\\" not in s and string_profile(s, ctx, local) == want]


def _chain(value: str, quote: str, ctx: Context, local: list[str], want, rng: random.Random,
           k: int) -> list[str] | None:
    """k edits of `value`, in two chains from it (the original's place among
    them random), each one letter away from the one before, none repeating a
    position, each with the original's profile in the module; None if not found."""
    pairs = bigrams(ctx)
    firsts: Counter = Counter()
    for (a, _b), c in pairs.items():
        firsts[a] += c
    positions = _editable(value)
    s = rng.randrange(k + 1)          # the original's place in the chain of copies
    used: set[int] = set()
    made: list[str] = []
    for steps in (s, k - s):
        cur = value
        for _ in range(steps):
            nxt = None
            for _ in range(STRING_TRIES):
                free = [i for i in positions if i not in used]
                if not free:
                    return None
                i = rng.choice(free)
                cand = _substitute(cur, i, ctx, pairs, firsts, rng)
                if cand is None or cand == value or cand in made or quote in cand:
                    continue
                if string_profile(cand, ctx, local) == want:
                    nxt = cand
                    used.add(i)
                    break
            if nxt is None:
                return None
            made.append(nxt)
            cur = nxt
    return made


def string_values(token: str, value, ctx: Context, rng: random.Random, k: int,
                  local: list[str] | None = None) -> list[str] | None:
    """k tokens for copies of a string literal written as `token`, or None."""
    local = local or []
    q = _quoted(token, value)
    if q is None:
        return None
    prefix, quote = q
    ctx = ctx.minus(value)
    want = string_profile(value, ctx, local)
    if want[0]:
        peers = _recurring_peers(value, quote, ctx, local, want)
        if len(peers) < k:
            return None
        return [prefix + quote + s + quote for s in rng.sample(sorted(peers), k)]
    made = _chain(value, quote, ctx, local, want, rng, k)
    return None if made is None else [prefix + quote + x + quote for x in made]


# ---------------------------------------------------------------- exceptions


def _builtin_exc(name: str) -> type | None:
    x = getattr(builtins, name, None)
    return x if isinstance(x, type) and issubclass(x, BaseException) else None


def exception_profile(name: str, ctx: Context, own: bool) -> tuple:
    """(a builtin?, how often the module names it elsewhere)."""
    return (_builtin_exc(name) is not None, min(ctx.names[name] - own, 3))


def _unrelated(a: str, b: str) -> bool:
    x, y = _builtin_exc(a), _builtin_exc(b)
    if x is None or y is None:
        return a != b
    return x is not y and not issubclass(x, y) and not issubclass(y, x)


# How often tests expect each builtin exception (pytest.raises / assertRaises
# in the test files of the packages SMALL_PRIOR was counted on): ValueError is
# expected ten times as often as KeyError, so copies drawn evenly would leave it
# the likeliest; builtins are drawn by a Metropolis step under this prior.
EXC_PRIOR = {"ValueError": 641, "TypeError": 365, "KeyError": 59, "IndexError": 45,
             "AttributeError": 28, "OverflowError": 19, "ZeroDivisionError": 17, "RuntimeError": 17,
             "LookupError": 4}


def exception_values(name: str, ctx: Context, rng: random.Random, k: int) -> list[str] | None:
    """Other exception classes of the module's own vocabulary, used as often: a
    project class for a project class; for a builtin, builtins the module names,
    under the prior of EXC_PRIOR (a rejected move: no copy)."""
    want = exception_profile(name, ctx, True)
    pool = []
    for cand in ctx.names:
        if cand == name or not _unrelated(cand, name):
            continue
        head = cand.split(".")[0]
        if _builtin_exc(cand) is None and not (_CUSTOM_EXC.search(cand) and head in ctx.bound):
            continue
        if _builtin_exc(cand) is not None and cand in ctx.bound:
            continue                    # a builtin's name rebound by the module
        if exception_profile(cand, ctx, False) == want:
            pool.append(cand)
    if not pool:
        return None
    if _builtin_exc(name) is None:
        return rng.sample(sorted(pool), min(k, len(pool)))
    if name not in EXC_PRIOR:
        return None
    same = sorted(x for x in pool if x in EXC_PRIOR and all(_unrelated(x, y) for y in pool if y != x))
    if not same:
        return None
    # One copy (k = 1): the pair {original, copy} is exchangeable under the prior.
    b = rng.choice(same)
    if rng.random() >= min(1.0, EXC_PRIOR[b] / EXC_PRIOR[name]):
        return None
    return [b]
