"""The word lists a feature's own code reads (a currency table, a numeral
table), which value twins draw letters and symbols from.

Why: twins rename digits and reshape letters, never swap the words of an
input, so the parts of a feature the tests show one case of went ungraded: a
parser knowing only `' eur'`, `€` and `$` scored 1 on ledger's parse_amount
although the module's CURRENCY_SYMBOLS lists five currencies (held-out round
24, lg_nocur). A word list the repository itself keeps, and the removed code
reads, says what the feature covers; an input with one of its words swapped
for another of the same list is a question the feature answers, the gold
deciding which swaps it takes (only those become value twins).

Pure functions over source text (copy_raises.package_sources reads it).
"""
from __future__ import annotations

import ast
import random
import re
from collections.abc import Iterable
from typing import AbstractSet

MIN_WORDS = 3           # a list of fewer words is a pair of modes, not a vocabulary
MAX_WORDS = 64          # ... of more, data (a dictionary file), not the feature's words
MAX_WORD = 16           # characters of one word
MAX_HOPS = 2            # constants read through others (SYMBOL_CURRENCIES -> CURRENCY_SYMBOLS)

Vocabulary = tuple[str, ...]


def _words(node: ast.expr, path: str, into: dict[str, list[str]]) -> bool:
    """Collect the string constants of a literal collection by their place
    (a dict's keys apart from its values, a table's columns apart): "$" and
    "EUR" are words of different lists. False where the value is not a
    literal collection of constants (a call, a comprehension)."""
    if isinstance(node, ast.Constant):
        if isinstance(node.value, str):
            into.setdefault(path, []).append(node.value)
        return True
    if isinstance(node, ast.Dict):
        return all(k is not None and _words(k, path + "k", into) and _words(v, path + "v", into)
                   for k, v in zip(node.keys, node.values))
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        at_seq = path.endswith("[]")
        for i, elt in enumerate(node.elts):
            # a sequence of tuples is a table: its columns by index
            if not _words(elt, path + (f".{i}" if at_seq else "[]"), into):
                return False
        return True
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in (
            "frozenset", "set", "tuple", "list") and len(node.args) == 1 and not node.keywords:
        return _words(node.args[0], path, into)
    return False


def word_lists(value: ast.expr) -> list[Vocabulary]:
    """The vocabularies of one constant's value: each column of distinct
    words, MIN_WORDS to MAX_WORDS of them, none blank, none longer than
    MAX_WORD."""
    found: dict[str, list[str]] = {}
    if not _words(value, "", found):
        return []
    out: list[Vocabulary] = []
    for words in found.values():
        distinct = tuple(dict.fromkeys(words))
        if MIN_WORDS <= len(distinct) <= MAX_WORDS and all(
                w.strip() and len(w) <= MAX_WORD and w.isprintable() for w in distinct):
            out.append(distinct)
    return out


def _constants(tree: ast.Module) -> dict[str, ast.expr]:
    out: dict[str, ast.expr] = {}
    for st in tree.body:
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
            out[st.targets[0].id] = st.value
        elif isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name) and st.value is not None:
            out[st.target.id] = st.value
    return out


def _read(node: ast.AST) -> set[str]:
    """The names a piece of code reads (bare, or as a module's attribute)."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}


def read_vocabularies(sources: Iterable[str], removed: AbstractSet[str]) -> list[Vocabulary]:
    """The vocabularies the removed definitions read: module constants named
    in their code, or in the value of such a constant (MAX_HOPS), that are
    literal collections of words and not removed themselves (the workspace
    keeps them, so an honest solution sees the same list)."""
    constants: dict[str, list[ast.expr]] = {}
    reads: set[str] = set()
    for text in sources:
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        for name, value in _constants(tree).items():
            constants.setdefault(name, []).append(value)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name in removed:
                reads |= _read(node)
    seen: set[str] = set()
    frontier = reads & constants.keys()
    for _ in range(MAX_HOPS + 1):
        seen |= frontier
        frontier = {n for name in frontier for v in constants[name] for n in _read(v)} & constants.keys() - seen
    out: list[Vocabulary] = []
    for name in sorted(seen - set(removed)):
        for value in constants[name]:
            out += [v for v in word_lists(value) if v not in out]
    return out


def _cased(word: str, like: str) -> str:
    return word.lower() if like.islower() else word.upper() if like.isupper() else word


def _inside(neighbour: str, edge: str, alphabet: set[str]) -> bool:
    """Whether a word's edge character runs on into its neighbour: both
    letters, or both digits, the neighbour one the list never uses ("n" in
    "one"; "EUR" in "12EUR" stands apart, a symbol always does)."""
    return bool(neighbour) and neighbour.lower() not in alphabet and edge.isalnum() and neighbour.isalnum() \
        and neighbour.isalpha() == edge.isalpha()


def occurrences(value: str, vocab: Vocabulary) -> list[tuple[int, int, str]]:
    """Where the list's words stand in `value` as words of it: letters
    matched in any case (on `value` itself: a lowercase copy can be longer,
    "İ"); an occurrence that runs on into a letter or digit the list's words
    never use is inside another word (_inside), and one inside a longer
    occurrence is part of it ("Jan" in "January", "C" in the "CM" of
    "MCMXCIV"), so neither is taken."""
    alphabet = {ch for w in vocab for ch in w.lower()}
    found: list[tuple[int, int, str]] = []
    for word in vocab:
        pattern = re.compile(re.escape(word), re.IGNORECASE)
        for at in range(len(value)):
            m = pattern.match(value, at)
            if m is None:
                continue
            end = m.end()
            sides = ((value[at - 1] if at else "", word[0]), (value[end] if end < len(value) else "", word[-1]))
            if not any(_inside(c, edge, alphabet) for c, edge in sides):
                found.append((at, end, word))
    return [o for o in found if not any(p[0] <= o[0] and o[1] <= p[1] and (p[0], p[1]) != (o[0], o[1])
                                        for p in found)]


def _whole_run(value: str, at: int, end: int) -> bool:
    """Whether value[at:end] is a whole run of letters (no letter either side)."""
    return value[at:end].isalpha() and not (at and value[at - 1].isalpha()) \
        and not (end < len(value) and value[end].isalpha())


def swaps(value: object, vocabularies: Iterable[Vocabulary]) -> list[tuple[str, str]]:
    """(twin, the word swapped in) for each way of swapping one word of a
    vocabulary in `value` for another of the same list, at the word's first
    place (occurrences): in the case found there ("12.345 eur" -> "12.345
    gbp", "-€5" -> "-£5", "MCMXCIV" -> "MCMLIV", "JPY" -> "GBP"), and, where
    the word is a whole run of letters, also as the list spells it ("12.345
    eur" -> "12.345 GBP": the repository's own spelling, which its
    docstrings show, `'-5 EUR'`); never mixing cases inside a run of letters
    ("  xlii " -> "  xcii ", not "  XCii ")."""
    if not isinstance(value, str) or not value:
        return []
    out: dict[str, str] = {}
    for vocab in vocabularies:
        first: dict[str, tuple[int, int]] = {}
        for at, end, word in sorted(occurrences(value, vocab)):
            first.setdefault(word, (at, end))
        for word, (at, end) in first.items():
            here = value[at:end]
            for other in vocab:
                if other.lower() == word.lower():
                    continue
                forms = [_cased(other, here)] + ([other] if _whole_run(value, at, end) else [])
                for form in forms:
                    out.setdefault(value[:at] + form + value[end:], other)
    return [(t, w) for t, w in out.items() if t != value and t.strip()]


def swapped(value: object, vocabularies: Iterable[Vocabulary]) -> list[object]:
    """The twins of swaps, alone."""
    return [t for t, _ in swaps(value, vocabularies)]


SCALE_STEPS = (-4, 4, -2, 2)    # places along a list of one-character words, farthest first (I -> C, V -> D)


def scaled(value: object, vocabularies: Iterable[Vocabulary]) -> list[str]:
    """`value` with every character that is a one-character word of a list
    moved the same number of places along the list's own order at once
    (SCALE_STEPS, within its ends), in its case: "VX" -> "LC" -> "DM",
    "IIII" -> "XXXX" -> "CCCC", "$" -> "£". Only where every letter of
    `value` is such a word (a scale mixed with other letters means nothing).
    Why: twins of a raising input stayed near it, so a roman parser checking
    tens and units and merely adding up hundreds and thousands (accepting
    "DD", "MCMM") passed every one (round 27, tk_prefix); moved along the
    scale, a defect keeps its shape ("VX" and "DM" are the same mistake),
    and the gold still decides each twin."""
    if not isinstance(value, str) or not value:
        return []
    out: list[str] = []
    for vocab in vocabularies:
        chars = [w for w in vocab if len(w) == 1]
        index = {c.lower(): i for i, c in enumerate(chars)}
        if len(chars) < MIN_WORDS or len(index) != len(chars):
            continue
        at = [i for i, ch in enumerate(value) if ch.lower() in index]
        if not at or any(ch.isalpha() and ch.lower() not in index for ch in value):
            continue
        for step in SCALE_STEPS:
            moved = [index[value[i].lower()] + step for i in at]
            if not all(0 <= j < len(chars) for j in moved):
                continue
            new = list(value)
            for i, j in zip(at, moved):
                c = chars[j]
                new[i] = c.lower() if value[i].islower() else c.upper() if value[i].isupper() else c
            out.append("".join(new))
    return [t for t in dict.fromkeys(out) if t != value]


def covering(candidates: list[tuple[str, str]], counts: dict[str, int], want: int,
             rng: random.Random) -> list[str]:
    """Up to `want` twins of `candidates` ((twin, word swapped in)), the words
    least swapped in so far first (`counts`, updated), at random among
    equals: a random draw left D and L out of every planted roman twin
    (held-out round 25, tk_nodl); drawn in turn, the tests' twins swap in
    every word of a list."""
    pool = list(candidates)
    rng.shuffle(pool)
    picked: list[str] = []
    while pool and len(picked) < want:
        best = min(range(len(pool)), key=lambda i: counts.get(pool[i][1], 0))
        twin, word = pool.pop(best)
        counts[word] = counts.get(word, 0) + 1
        picked.append(twin)
    return picked
