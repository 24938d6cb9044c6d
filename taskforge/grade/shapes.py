"""Sealed built expectations: `X == Money("88.85")` judged on the host.

An expectation the test builds by calling the package (`Money("88.85")`, a
dataclass, a `date`) stayed in the sandbox, where the package's own code sees
its literals as the test builds it and a dry run of the tests collects them
all (held-out round 14: an echo that accepts a built value only where it fits
relations among a row's cells, and a dry run through pytest's session). Here
the expectation never runs in the sandbox: at generation the gold's run
reports the shape of the value each such expression builds (tf_guard._shape:
classes and raw attributes down to exact numbers and text), keyed by the
expression and what its names import; at verify the expression is replaced by
a token and the host compares the shape of the test's actual value with the
one kept.

Which shapes are kept is the gold's call: one seen with two shapes, or with
none (a function, a NaN), or one the gold's own actual value does not match
(a class whose `==` ignores some state) stays computed in the sandbox
(tf_guard.seal_eq). A test whose expectation's class the removal takes out
keeps nothing either: an honest class of the solution's may hold its state
differently.

Pure: AST in, keys out (`built_side`, `shape_key`); reports in, verdicts or
kept shapes out (`shape_matches`, `kept_shapes`).
"""
from __future__ import annotations

import ast
import json
from collections.abc import Iterable, Mapping

# Constructors of the stdlib a test builds expectations with, by where they are imported from.
STDLIB_MAKERS = frozenset({"datetime.date", "datetime.datetime", "datetime.time", "datetime.timedelta",
                           "decimal.Decimal", "fractions.Fraction"})
MAX_SHAPE = 200 * 1024            # characters of one reported shape (tf_guard.MAX_SEAL)
MAX_DEPTH = 60


def _origin(e: ast.expr, names: Mapping[str, str]) -> str | None:
    """The dotted path a name or attribute chain resolves to through the
    module's imports (its own classes as ".Name"), or None."""
    parts: list[str] = []
    while isinstance(e, ast.Attribute):
        parts.append(e.attr)
        e = e.value
    if not isinstance(e, ast.Name) or not names.get(e.id):
        return None
    return ".".join([names[e.id], *reversed(parts)])


def _maker(f: ast.expr, names: Mapping[str, str]) -> bool:
    """A callee that builds a value: a class by its name (`Money`,
    `pkg.Money`, `Money.of`), or one of the stdlib's value types."""
    origin = _origin(f, names)
    if origin is None:
        return False
    dotted = ast.unparse(f).split(".")
    return origin in STDLIB_MAKERS or any(p[:1].isupper() for p in dotted)


def buildable(e: ast.expr, names: Mapping[str, str], depth: int = 0) -> bool:
    """Whether `e` is built from literals and the module's imported names
    alone, calling only value constructors: the same value every time it is
    evaluated, whatever the test did before."""
    if depth > MAX_DEPTH:
        return False
    if isinstance(e, ast.Constant):
        return e.value is not Ellipsis
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
        return isinstance(e.operand, ast.Constant) and isinstance(e.operand.value, (int, float, complex))
    if isinstance(e, (ast.Tuple, ast.List, ast.Set)):
        return all(buildable(x, names, depth + 1) for x in e.elts)
    if isinstance(e, ast.Dict):
        return all(k is not None and buildable(k, names, depth + 1) for k in e.keys) \
            and all(buildable(v, names, depth + 1) for v in e.values)
    if isinstance(e, (ast.Name, ast.Attribute)):
        return _origin(e, names) is not None
    if isinstance(e, ast.Call):
        return _maker(e.func, names) and all(
            not isinstance(a, ast.Starred) and buildable(a, names, depth + 1) for a in e.args) and all(
            k.arg is not None and buildable(k.value, names, depth + 1) for k in e.keywords)
    return False


def built(e: ast.expr, names: Mapping[str, str]) -> bool:
    """A buildable expression that builds something (a call, or a name such
    as an enum member): a plain literal is sealed by value (seals.py)."""
    return buildable(e, names) and any(isinstance(n, (ast.Call, ast.Attribute, ast.Name)) for n in ast.walk(e))


def built_side(left: ast.expr, right: ast.expr, names: Mapping[str, str]) -> tuple[ast.expr, ast.expr] | None:
    """(actual, expected) of an equality one side of which is a built
    expectation and the other not buildable (so computed by the code under
    test); None when neither or both are."""
    lb, rb = buildable(left, names), buildable(right, names)
    if rb and not lb and built(right, names):
        return left, right
    if lb and not rb and built(left, names):
        return right, left
    return None


def shape_key(expected: ast.expr, names: Mapping[str, str]) -> str:
    """What identifies a built expectation across plantings, renames and
    copies: its source, normalised, and where each of its names comes from."""
    used = sorted({n.id for n in ast.walk(expected) if isinstance(n, ast.Name)})
    return json.dumps([ast.unparse(expected), {n: names.get(n, "") for n in used}])


def _load(encoded: str | None) -> object:
    if encoded is None or len(encoded) > MAX_SHAPE:
        raise ValueError("no shape")
    return json.loads(encoded)


def _fits(got: object, want: object, depth: int = 0) -> bool:
    """Whether a reported shape is the kept one: an object of the kept class
    (or a subclass of it) holding at least the kept attributes, each alike;
    everything else equal as data (sets and dict keys by their encoding)."""
    if depth > MAX_DEPTH:
        return False
    if want is None or got is None:
        return want is None and got is None
    if not (isinstance(want, dict) and isinstance(got, dict) and len(want) == 1 and len(got) == 1):
        return False
    (tag, w), = want.items()
    (gtag, g), = got.items()
    if tag != gtag:
        return False
    if tag in ("n", "s", "b", "e", "x", "c", "S"):
        return bool(g == w)
    if tag in ("l", "t"):
        return isinstance(g, list) and isinstance(w, list) and len(g) == len(w) and all(
            _fits(a, b, depth + 1) for a, b in zip(g, w))
    if tag == "d":
        if not (isinstance(g, list) and isinstance(w, list) and len(g) == len(w)):
            return False
        theirs = {json.dumps(p[0], sort_keys=True): p[1] for p in g if isinstance(p, list) and len(p) == 2}
        return len(theirs) == len(w) and all(
            json.dumps(k, sort_keys=True) in theirs and _fits(theirs[json.dumps(k, sort_keys=True)], v, depth + 1)
            for k, v in w)
    if tag == "o":
        if not (isinstance(g, list) and len(g) == 2 and isinstance(g[0], list) and isinstance(g[1], dict)):
            return False
        classes, attrs = w
        return bool(classes) and classes[0] in g[0] and all(
            k in g[1] and _fits(g[1][k], v, depth + 1) for k, v in attrs.items())
    return False


def shape_matches(encoded: str | None, kept: str) -> bool:
    """Whether a reported shape (tf_guard.seal_shape) is the one kept at
    generation. A missing, oversized or malformed report is a wrong value."""
    try:
        return _fits(_load(encoded), json.loads(kept))
    except (ValueError, TypeError, RecursionError, MemoryError):
        return False


def captured(encoded: str | None) -> tuple[str | None, str | None]:
    """(expected, actual) shapes of one tf_guard.seal_capture report."""
    try:
        got = json.loads(encoded or "null")
    except ValueError:
        return None, None
    if not isinstance(got, dict):
        return None, None
    e, a = got.get("expected"), got.get("actual")
    return (e if isinstance(e, str) else None), (a if isinstance(a, str) else None)


def kept_shapes(reports: Iterable[tuple[str, str | None, bool]], removed_classes: Iterable[str] = ()
                ) -> dict[str, str]:
    """The shapes to keep from a capture run: `reports` are (key, encoded
    report, whether it came from an original test, where the gold's actual
    value must fit). A key is kept when every report of it carries the same
    expected shape, every original's actual fits it, and no class in it is
    one the removal takes out (`removed_classes`: qualified names)."""
    seen: dict[str, set[str | None]] = {}
    bad: set[str] = set()
    removed = tuple(removed_classes)
    for key, encoded, original in reports:
        want, got = captured(encoded)
        seen.setdefault(key, set()).add(want)
        if want is None or (original and not shape_matches(got, want)) or opaque(want):
            bad.add(key)
        elif removed and any(_names_class(want, c) for c in removed):
            bad.add(key)
    return {k: next(iter(v)) for k, v in sorted(seen.items())  # type: ignore[misc]
            if k not in bad and len(v) == 1}


def _names_class(encoded: str, qualified: str) -> bool:
    """Whether a shape holds an object of the class `qualified` ("pkg.mod.Name")."""
    return json.dumps(qualified) in encoded


MAX_DENOMINATOR = 10 ** 6


def _nodes(encoded: str) -> list[dict] | None:
    """Every mapping of an encoded shape, outermost first; None when it is no JSON."""
    try:
        stack = [json.loads(encoded)]
    except ValueError:
        return None
    out: list[dict] = []
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            out.append(x)
            stack += list(x.values())
        elif isinstance(x, list):
            stack += x
    return out


def _long_ratio(r: object) -> bool:
    return isinstance(r, str) and "/" in r and int(r.rpartition("/")[2] or 1) > MAX_DENOMINATOR


def inexact(encoded: str) -> bool:
    """Whether a kept shape holds a number whose exact ratio has a denominator
    beyond MAX_DENOMINATOR: a float that is no short decimal (`1.7`), whose
    last place depends on how it was computed."""
    nodes = _nodes(encoded)
    return nodes is None or any(
        _long_ratio(d.get("n")) or isinstance(d.get("c"), list) and any(map(_long_ratio, d["c"])) for d in nodes)


def opaque(encoded: str) -> bool:
    """Whether a shape holds an object with no attributes: a deque, an
    array, a numpy array, whose state lives where _shape does not read, so
    that any object of its class fits it (red team round 24, F5). Such a
    site stays judged in the sandbox."""
    nodes = _nodes(encoded)
    return nodes is None or any(isinstance(o := d.get("o"), list) and len(o) == 2 and o[1] == {} for d in nodes)
