"""pytest plugin of every taskforge test run: report each phase as one JSON line.

Loaded from its file by tfboot.py (or with `-p tf_guard` in the naive runner).
The lines go to a private pipe of the supervisor, never to a file or a stream
the host reads. They are claims: the host parses them against a schema, in
order, and fails closed on anything else (taskforge/grade/events.py); what
makes them trustworthy is that the hidden tests sit among copies that no
forged report can tell apart (taskforge/grade/copies.py).

Also reported, as Monitor lines: pytest internals replaced while tests run, and
plugins registered from package code.
"""
import json
import os
import sys

import pytest

_FD = int(os.environ.pop("TF_RESULT_FD", "-1"))
_write, _dumps = os.write, json.dumps


def _pipe_id(fd):
    try:
        st = os.fstat(fd)
        return st.st_dev, st.st_ino
    except OSError:
        return None


_PIPE = _pipe_id(_FD) if _FD >= 0 else None
_WS = "/workspace/"
_BASELINE: dict[str, int] = {}     # what _critical() returned at configure


def _emit(obj, _fd=_FD, _out=os.write, _text=json.dumps, _pipe=_PIPE, _stat=os.fstat,
          _exit=os._exit) -> None:
    """One line to the supervisor. The descriptor and the writer are bound
    here, not looked up in this module at each call: a module attribute is
    set with no audit event (held-out round 15 rewrote every failed report
    through `tf_guard._write`); the defaults tuple is checked with the rest.
    The descriptor must still be the supervisor's pipe: one moved onto another
    pipe with `os.dup2` (not audited) would hand the reports to a proxy that
    rewrites them; the process ends here instead, as the monitor's does."""
    if _fd < 0:
        return
    data = (_text(obj) + "\n").encode()
    try:
        st = _stat(_fd)
    except OSError:                     # closed under us
        _exit(3)
    if (st.st_dev, st.st_ino) != _pipe:
        _exit(3)
    try:
        while data:
            data = data[_out(_fd, data):]
    except OSError:                     # the supervisor's end is gone: the run is over
        pass


def _flag(kind: str, detail: str, site: str) -> None:
    """A Monitor line. `site` names what was found (a plugin's file, a replaced
    internal), so that a task whose gold does the same can exempt exactly that."""
    _emit({"$report_type": "Monitor", "kind": kind, "site": site[:200], "detail": detail[:200]})


# unittest's assertion methods (what a test's self.assertX calls): replacing
# one is a class attribute set, which no audit event reports by default.
_UNITTEST_ASSERTS = ("assertEqual", "assertNotEqual", "assertTrue", "assertFalse", "assertIs", "assertIsNot",
                     "assertIsNone", "assertIsNotNone", "assertIn", "assertNotIn", "assertIsInstance",
                     "assertAlmostEqual", "assertCountEqual", "assertDictEqual", "assertListEqual",
                     "assertSequenceEqual", "assertTupleEqual", "assertSetEqual", "assertMultiLineEqual",
                     "assertRegex", "assertGreater", "assertLess", "fail", "_baseAssertEqual",
                     "_getAssertEqualityFunc")


def _no_main_on_import():
    """`unittest.main()` at a test module's top level, outside `if __name__ ==
    "__main__"` (toposort's suite ends so), runs the module's tests when
    pytest imports it, with pytest's argv: unittest's parser exits and the
    session ends in an internal error, no test run. pytest collects the
    module's TestCases anyway, so from a module that is not `__main__`, for
    the default module, it does nothing; run as a script it is unittest's."""
    import unittest

    class main(unittest.TestProgram):
        def __init__(self, module="__main__", *args, **kwargs):
            if module == "__main__" and sys._getframe(1).f_globals.get("__name__") != "__main__":
                return
            super().__init__(module, *args, **kwargs)

    unittest.main = main


_no_main_on_import()


def _critical():
    """Identities of the functions that decide and report outcomes."""
    import unittest

    import _pytest.main
    import _pytest.python
    import _pytest.reports
    import _pytest.runner

    items = {
        "runner.call_and_report": _pytest.runner.call_and_report,
        "runner.runtestprotocol": _pytest.runner.runtestprotocol,
        "runner.CallInfo.from_call": _pytest.runner.CallInfo.__dict__.get("from_call"),
        "reports.TestReport.from_item_and_call":
            _pytest.reports.TestReport.__dict__.get("from_item_and_call"),
        "reports.TestReport.__init__": _pytest.reports.TestReport.__init__,
        "python.Function.runtest": _pytest.python.Function.runtest,
        "main.Session.perform_collect": _pytest.main.Session.perform_collect,
        "unittest.TestCase.run": unittest.TestCase.run,
        "unittest.TestCase.__call__": unittest.TestCase.__call__,
        "sys.exit": sys.exit,
        "os._exit": os._exit,
        # what the planted hidden tests call to expect an exception and to
        # report (grade/seals.py): a module attribute is set with no audit event
        "pytest.raises": sys.modules["pytest"].raises if "pytest" in sys.modules else None,
        "unittest.TestCase.assertRaises": unittest.TestCase.assertRaises,
        "unittest.TestCase.assertRaisesRegex": unittest.TestCase.assertRaisesRegex,
        "unittest._AssertRaisesContext.__exit__": unittest.case._AssertRaisesContext.__exit__,
        **{f"unittest.TestCase.{m}": getattr(unittest.TestCase, m, None) for m in _UNITTEST_ASSERTS},
        "tf_guard": sys.modules.get("tf_guard"),
    }
    guard = sys.modules.get("tf_guard")
    emit = getattr(guard, "_emit", None)
    items["tf_guard._emit.__defaults__"] = getattr(emit, "__defaults__", None)
    items["tf_guard._write"] = getattr(guard, "_write", None)
    for name in ("seal", "seal_eq", "_agree", "_builtin_only", "_as_plain", "_rebuilt", "_pytest_approx",
                 "_shared_base_agrees", "seal_text", "seal_shape", "seal_capture", "_shape",
                 "_shape_text", "_ratio", "seal_truth", "seal_is", "seal_raised", "seal_match",
                 "_raised", "_emit", "_plain", "_dumps"):
        items[f"tf_guard.{name}"] = getattr(guard, name, None)
    # What decides whether a subtest's failure counts (held-out round 16
    # swallowed every failure of a test whose raises sites loop over subTests
    # through each of these), and what every planted test imports the guard with.
    items["unittest.TestCase.subTest"] = unittest.TestCase.subTest
    items["unittest.case._Outcome.testPartExecutor"] = getattr(unittest.case, "_Outcome", None) and \
        unittest.case._Outcome.__dict__.get("testPartExecutor")
    items["builtins.__import__"] = __import__("builtins").__import__
    try:
        import _pytest.unittest

        tcf = _pytest.unittest.TestCaseFunction
        for name in ("runtest", "addSubTest", "addError", "addFailure", "addSkip", "addExpectedFailure",
                     "addUnexpectedSuccess", "addSuccess", "startTest", "stopTest", "_addexcinfo"):
            items[f"unittest.TestCaseFunction.{name}"] = tcf.__dict__.get(name)
    except (ImportError, AttributeError):
        pass
    # Whether a call runs inside a raise the test expects, and in which order a
    # TestCase's methods run: held-out round 19 set the raise contexts'
    # __enter__/__exit__ (and the loader's sort) as class attributes, to raise
    # only where a raise was expected, for inputs it had not seen accepted.
    items["unittest._AssertRaisesContext.__enter__"] = unittest.case._AssertRaisesContext.__enter__
    items["unittest._AssertRaisesBaseContext.handle"] = unittest.case._AssertRaisesBaseContext.handle
    items["unittest.TestLoader.sortTestMethodsUsing"] = unittest.TestLoader.__dict__.get("sortTestMethodsUsing")
    items["unittest.TestLoader.getTestCaseNames"] = unittest.TestLoader.getTestCaseNames
    for mod, names in (("_pytest.raises", ("RaisesExc", "RaisesGroup", "AbstractRaises")),
                       ("_pytest.python_api", ("RaisesContext",))):
        try:
            module = __import__(mod, fromlist=["_"])
        except ImportError:
            continue
        for cls_name in names:
            cls = getattr(module, cls_name, None)
            for meth in ("__enter__", "__exit__", "matches"):
                if cls is not None and hasattr(cls, meth):
                    items[f"{mod}.{cls_name}.{meth}"] = getattr(cls, meth)
    try:
        import _pytest.subtests

        items["subtests._SubTestContextManager.__exit__"] = _pytest.subtests._SubTestContextManager.__exit__
        items["subtests.Subtests.test"] = _pytest.subtests.Subtests.test
    except (ImportError, AttributeError):
        pass
    return {k: id(v) for k, v in items.items()}


def _check_integrity():
    try:
        now = _critical()
    except Exception as exc:  # a module of pytest's removed or broken
        _flag("runner-patched", f"pytest internals unreadable: {exc!r}", "pytest")
        return
    for k, v in _BASELINE.items():
        if now.get(k) != v:
            _flag("runner-patched", f"{k} was replaced", k)


def _check_plugins(config):
    # Plugins named with -p are the supervisor's choice (installed entry points,
    # the repository's own among them), not the solution's.
    chosen = set(getattr(config.option, "plugins", None) or [])
    for name, plugin in config.pluginmanager.list_name_plugin():
        if name in chosen:
            continue
        fn = getattr(plugin, "__file__", None) or getattr(
            sys.modules.get(getattr(plugin, "__module__", ""), None), "__file__", None) or ""
        if fn.startswith(_WS) and not os.path.basename(fn) == "conftest.py":
            _flag("plugin-from-package", f"plugin {name} registered from {fn}", fn[len(_WS):])


MAX_SEAL = 200 * 1024      # characters of one encoded value (taskforge/grade/seals.py)


def _plain(v, depth=0, strict=False):
    """A value as plain data the host can rebuild (taskforge/grade/seals.decode),
    where Python's `==` against a literal would say what the host's says:
    builtin types and their subclasses through the builtin's own methods,
    containers item by item (UserList, UserString, mappings, set views), and
    numbers whose conversion is exact (numpy's, integral or binary-exact
    Decimal and Fraction). What comes out is a fixed value, whatever the
    object's __eq__ says, so an object equal to everything is equal to
    nothing here. Anything else (a deque, a Path, an object of its own) raises:
    it is not equal (a value object equal to an int by its own __eq__ fails;
    the gold decides at generation which tests stay unsealed). `strict`
    (seal_eq, where the expectation is in the sandbox too): past the builtin
    types, only objects of exactly those classes (numpy's own scalar types,
    Decimal, Fraction, UserString, UserList), whose conversions no subclass
    of the solution's has overridden (red team of 2026-12-05, 8: a class
    calling itself numpy's with a `__float__` echoing the expectation)."""
    if depth > 100:
        raise ValueError("too deep")
    if v is None or v is True or v is False:
        return v
    if isinstance(v, int):
        return {"i": int.__repr__(v)}
    if isinstance(v, float):
        return {"f": float.hex(v)}
    if isinstance(v, complex):
        return {"c": [float.hex(complex.__getattribute__(v, "real")),
                      float.hex(complex.__getattribute__(v, "imag"))]}
    if isinstance(v, str):
        return {"s": str.__str__(v)}
    if isinstance(v, (bytes, bytearray)):
        return {"b": (bytes.hex if isinstance(v, bytes) else bytearray.hex)(v)}
    if isinstance(v, list):
        return {"l": [_plain(x, depth + 1, strict) for x in list.__iter__(v)]}
    if isinstance(v, tuple):
        return {"t": [_plain(x, depth + 1, strict) for x in tuple.__iter__(v)]}
    if isinstance(v, (set, frozenset)):
        it = set.__iter__(v) if isinstance(v, set) else frozenset.__iter__(v)
        return {"S": [_plain(x, depth + 1, strict) for x in it]}
    if isinstance(v, dict):
        return {"d": [{"t": [_plain(k, depth + 1, strict), _plain(x, depth + 1, strict)]}
                      for k, x in dict.items(v)]}
    import numbers
    from collections import UserList, UserString
    from collections.abc import ItemsView, KeysView, Mapping, Set
    from decimal import Decimal
    from fractions import Fraction
    if type(v).__module__ == "numpy":
        np = sys.modules.get("numpy")
        if strict and (np is None or getattr(np, type(v).__name__, None) is not type(v)):
            raise TypeError("not numpy's own type")
        if type(v).__name__ == "bool_":
            return bool(v)
        if isinstance(v, numbers.Integral):
            return {"i": int.__repr__(int(v))}
        if isinstance(v, numbers.Real):
            return {"f": float.hex(float(v))}              # float32 and float16 widen exactly
        if isinstance(v, numbers.Complex):
            c = complex(v)
            return {"c": [float.hex(c.real), float.hex(c.imag)]}
        raise TypeError("not plain data")
    if strict and not any(type(v) is t for t in (Decimal, Fraction, memoryview, UserString, UserList)):
        raise TypeError("not plain data")
    if isinstance(v, (Decimal, Fraction)):
        if isinstance(v, Decimal) and not v.is_finite():
            raise TypeError("not plain data")
        if v == int(v):
            return {"i": int.__repr__(int(v))}              # exact past 2**53
        f = float(v)
        if type(v)(f) != v:
            raise TypeError("not a binary fraction: unequal to any float literal")
        return {"f": float.hex(f)}
    if isinstance(v, memoryview):
        return {"b": bytes.hex(v.tobytes())}
    if isinstance(v, UserString):
        return {"s": str.__str__(v.data)}
    if isinstance(v, UserList):
        return {"l": [_plain(x, depth + 1, strict) for x in v.data]}
    if isinstance(v, Mapping):
        return {"d": [{"t": [_plain(k, depth + 1, strict), _plain(x, depth + 1, strict)]} for k, x in v.items()]}
    if isinstance(v, (KeysView, ItemsView)) or (isinstance(v, Set) and type(v).__eq__ is Set.__eq__):
        return {"S": [_plain(x, depth + 1, strict) for x in v]}
    raise TypeError("not plain data")


_TOKEN = __import__("re").compile(r"t[0-9a-f]{16}")
_TYPE_MRO = type.__dict__["__mro__"].__get__


def seal(value, token):
    """A sealed equality of a hidden test (taskforge/grade/seals.py): the
    expected value is on the host; this reports the actual one, as plain
    data, and lets the test go on. The host fails the test if the value is
    not the one `token` wants, or if the report never comes. A row of a
    sealed table whose value the test computes holds that value, not a
    token: compared here, as the test would."""
    if not (type(token) is str and _TOKEN.fullmatch(token)):
        return value == token
    try:
        data = _dumps(_plain(value))
        if len(data) > MAX_SEAL:
            data = None
    except Exception:
        data = None
    _emit({"$report_type": "Seal", "token": token, "value": data})
    return True


def seal_eq(left, right, rules=2):
    """A hidden test's `left == right` where the expected side is computed
    (`== Money("0")`), as the test would, then (rules 3) judged leaf by leaf
    where the test's own `==` would let one object decide for both: plain
    data by its value (as the host judges a literal), lists, tuples and dicts
    item by item, a `pytest.approx` the test wrote (planted on the right)
    against plain data only, and two other objects through what their classes
    share. An object equal to everything passed where the expectation was
    computed and no copy changed the site (red teams of 2026-12-05: a
    `datetime` subclass, a dataclass `Money` one, then an unrelated class).
    The judgement is made before the test's `==` runs: an object that learns
    the expected value when compared with it, and then mimics it (in its
    attributes, its `__float__`) has learned nothing yet (red team 8)."""
    if rules >= 3:
        try:
            verdict = _agree(left, right, 0)
        except Exception:               # what the walk itself meets (a broken __len__): not equal
            verdict = False
        r = left == right
        return r if not r else verdict
    r = left == right
    if not r:
        return r
    return _shared_base_agrees(left, right, r)


def _shared_base_agrees(left, right, r):
    """Rules 2: where the two classes share a base other than object, that
    base's own `__eq__` must agree (a class's `__eq__` decides `==` alone when
    it derives from the other); a base answering NotImplemented both ways
    counts as unequal."""
    tl, tr = type(left), type(right)
    if tl is tr:
        return r
    theirs = _TYPE_MRO(tr)
    base = next((c for c in _TYPE_MRO(tl) if any(c is m for m in theirs)), object)
    if base is object:
        return r
    one, two = base.__eq__(left, right), base.__eq__(right, left)
    if one is NotImplemented and two is NotImplemented:
        return False
    return r if all(x is NotImplemented or x for x in (one, two)) else False


def _rebuilt(p):
    """The builtin value _plain's data stands for (seals.decode in the sandbox)."""
    if p is None or p is True or p is False:
        return p
    ((k, v),) = dict.items(p)
    if k == "i":
        return int(v)
    if k == "f":
        return float.fromhex(v)
    if k == "c":
        return complex(float.fromhex(v[0]), float.fromhex(v[1]))
    if k == "s":
        return v
    if k == "b":
        return bytes.fromhex(v)
    if k == "l":
        return [_rebuilt(x) for x in v]
    if k == "t":
        return tuple(_rebuilt(x) for x in v)
    if k == "S":
        return frozenset(_rebuilt(x) for x in v)
    return {_rebuilt(t["t"][0]): _rebuilt(t["t"][1]) for t in v}


def _as_plain(v):
    try:
        return True, _rebuilt(_plain(v, strict=True))
    except Exception:
        return False, None


def _pytest_approx(v):
    """Whether v is an object of one of pytest's own approx classes (not a
    subclass; `_pytest.approx` since pytest 9, `_pytest.python_api` before)."""
    t = type(v)
    name = t.__module__
    mod = sys.modules.get(name) if name in ("_pytest.approx", "_pytest.python_api") else None
    return mod is not None and t.__name__.startswith("Approx") and getattr(mod, t.__name__, None) is t


# Builtin types whose `==` no object can answer for, by identity (a metaclass
# can make a class hash and compare equal to `int`).
_SCALAR_IDS = frozenset(map(id, (int, float, str, bytes, bool, type(None), complex)))


def _builtin_only(v, depth=0):
    """Whether v is builtin data all the way down (exact types, no subclass),
    so that the test's `==` already judged it by value; the common case,
    checked at C speed where a container holds scalars only."""
    t = type(v)
    if id(t) in _SCALAR_IDS:
        return True
    if depth > 50:
        return False
    if t is list or t is tuple or t is set or t is frozenset:
        items = v
    elif t is dict:
        items = [*dict.keys(v), *dict.values(v)]
    else:
        return False
    return set(map(id, map(type, items))) <= _SCALAR_IDS or all(_builtin_only(x, depth + 1) for x in items)


def _agree(a, b, depth):
    """Whether a and b are equal by what neither controls alone (seal_eq)."""
    if depth > 100:
        return False
    if _builtin_only(a) and _builtin_only(b):
        return bool(a == b)             # builtin's own ==
    if _pytest_approx(b) and not _pytest_approx(a):
        got_ok, got = _as_plain(a)
        return bool(_as_plain(b.expected)[0] and got_ok and b == got)
    if _pytest_approx(a):               # the actual side: an approx with any tolerance is equal to anything
        return False
    pa, va = _as_plain(a)
    pb, vb = _as_plain(b)
    if pa and pb:
        return bool(va == vb)
    ta, tb = type(a), type(b)
    if getattr(a, "__class__", None) is not ta or getattr(b, "__class__", None) is not tb:
        return False                    # an object that says it is of a class it is not
    if ta is tb and (ta is list or ta is tuple):
        return len(a) == len(b) and all(_agree(x, y, depth + 1) for x, y in zip(a, b))
    if ta is tb and ta is dict:
        return len(a) == len(b) and all(dict.__contains__(b, k) and _agree(v, dict.__getitem__(b, k), depth + 1)
                                        for k, v in dict.items(a))
    if ta is tb:
        return bool(a == b)             # one class decides for both, as it does in the test
    from collections.abc import Mapping, Sequence
    if isinstance(a, Mapping) and isinstance(b, Mapping):       # a MappingProxyType, a UserDict, against a dict
        return _agree(dict(a.items()), dict(b.items()), depth + 1)
    if isinstance(a, Sequence) and isinstance(b, Sequence) and not isinstance(a, (str, bytes)) \
            and not isinstance(b, (str, bytes)) and (isinstance(a, list) or isinstance(b, list)):
        la, lb = list(a), list(b)                                 # a UserList against a list
        return len(la) == len(lb) and all(_agree(x, y, depth + 1) for x, y in zip(la, lb))
    theirs = _TYPE_MRO(tb)
    if not any(c is m for c in _TYPE_MRO(ta) if c is not object for m in theirs):
        return False                    # nothing shared: whichever answered, it judged an unknown
    return bool(_shared_base_agrees(a, b, True))


def seal_text(op, receiver, *args):
    """A str test at a sealed direction (`R.startswith(A)`, `A in R`), asked of
    R's own text by str's (or bytes') method: a subclass of the solution's
    answering True to every `startswith` passed a test whose copies only
    negated it (red team of 2026-12-05, 8). `startswith` and the like of
    anything else is False (the gold decides at generation: a gold whose R is
    no str leaves its test unsealed); `in` of a list, tuple, set or dict asks
    each item as seal_eq would, of anything else as the test would."""
    if isinstance(receiver, str):
        base, text = str, str.__str__(receiver)
    elif isinstance(receiver, (bytes, bytearray)):
        base, text = bytes, bytes(memoryview(receiver))
    else:
        base = text = None
    if op == "in":
        (needle,) = args
        if base is not None:
            if isinstance(needle, base):
                needle = str.__str__(needle) if base is str else bytes(memoryview(needle))
            return base.__contains__(text, needle)
        t = type(receiver)
        if t is list or t is tuple or t is set or t is frozenset or t is dict:
            return any(_agree(needle, item, 0) for item in (dict.keys(receiver) if t is dict else receiver))
        return needle in receiver
    if base is None:
        return False
    return getattr(base, op)(text, *args)


# The projection of a package-built expectation (taskforge/grade/shapes.py).
_SHAPE_DEPTH = 40
_DICT_OF = type.__dict__["__dict__"].__get__          # a class's own namespace, as the class cannot redefine it
_KEYS, _ITEMS = type({0: 0}.keys()), type({0: 0}.items())
_PROXY = type(type.__dict__)                            # types.MappingProxyType: equal to the dict it shows


def _ratio(v):
    """An exact real number as "p/q" (or "inf"/"-inf"), read by its base
    class's method: Python's `==` across int, float, Decimal and Fraction is
    exact rational equality, so equal numbers project alike."""
    import decimal
    import fractions
    t = _TYPE_MRO(type(v))
    if any(c is float for c in t):
        f = float.__float__(v)
        if f != f:
            raise ValueError("NaN equals nothing")
        if f in (float("inf"), float("-inf")):
            return "inf" if f > 0 else "-inf"
        p, q = float.as_integer_ratio(f)
    elif any(c is decimal.Decimal for c in t):
        if decimal.Decimal.is_nan(v):
            raise ValueError("NaN equals nothing")
        if decimal.Decimal.is_infinite(v):
            return "-inf" if decimal.Decimal.is_signed(v) else "inf"
        p, q = decimal.Decimal.as_integer_ratio(v)
    elif any(c is fractions.Fraction for c in t):
        p, q = fractions.Fraction.as_integer_ratio(v)
    else:
        p, q = int.__index__(v), 1
    return f"{p}/{q}"


def _shape(v, depth=0):
    """An object projected to plain data by what it holds, not by what its
    methods say: numbers by exact value, builtin containers item by item,
    enums by member, dates by their ISO text, any other object by the names of
    its classes and its attributes' shapes (its instance dict and slots, a
    dataclass's compared fields only). Raises for what has no such projection
    (a function, a cycle, a NaN): the gold decides at generation which sites
    are sealed this way."""
    if depth > _SHAPE_DEPTH:
        raise ValueError("too deep")
    if v is None:
        return None
    t = _TYPE_MRO(type(v))
    has = lambda base: any(c is base for c in t)    # noqa: E731
    import datetime
    import enum
    if has(enum.Enum) and not has(int) and not has(str):
        return {"e": f"{t[0].__module__}.{t[0].__qualname__}.{enum.Enum.__dict__['name'].__get__(v)}"}
    if has(bool) or has(int):
        return {"n": f"{int.__index__(v)}/1"}
    import decimal
    import fractions
    if has(float) or has(decimal.Decimal) or has(fractions.Fraction):
        return {"n": _ratio(v)}
    if has(complex):
        re_, im = complex.__getattribute__(v, "real"), complex.__getattribute__(v, "imag")
        if im == 0.0:
            return {"n": _ratio(re_)}
        return {"c": [_ratio(re_), _ratio(im)]}
    import numbers
    if not has(float) and issubclass(t[0], numbers.Integral) and not has(str):
        # numpy's integers: equal to ints, no int subclass (red team round 24, F5)
        import operator
        return {"n": f"{int.__index__(operator.index(v))}/1"}
    if not has(float) and issubclass(t[0], numbers.Real) and not has(str):
        return {"n": _ratio(float(v))}
    if has(str):
        return {"s": str.__str__(v)}
    pathlib = sys.modules.get("pathlib")
    if pathlib is not None and has(pathlib.PurePath):
        # by its text: what == compares, not the strings and hashes it caches
        return {"x": ["path", pathlib.PurePath.__str__(v)]}
    if has(bytes) or has(bytearray):
        return {"b": bytes(memoryview(v)).hex()}
    if has(list):
        return {"l": [_shape(x, depth + 1) for x in list.__iter__(v)]}
    if has(tuple):
        return {"t": [_shape(x, depth + 1) for x in tuple.__iter__(v)]}
    if has(set) or has(frozenset) or t[0] is _KEYS or t[0] is _ITEMS:
        it = (set if has(set) else frozenset).__iter__(v) if has(set) or has(frozenset) else iter(v)
        return {"S": sorted(_dumps(_shape(x, depth + 1), sort_keys=True) for x in it)}
    if has(dict) or t[0] is _PROXY:
        pairs = [[_shape(k, depth + 1), _shape(x, depth + 1)] for k, x in (dict.items(v) if has(dict) else v.items())]
        return {"d": sorted(pairs, key=lambda p: _dumps(p[0], sort_keys=True))}
    if has(datetime.datetime) and datetime.datetime.utcoffset(v) is not None:
        # aware datetimes are equal as instants, whatever their zone
        utc = datetime.datetime.astimezone(v, datetime.timezone.utc)
        return {"x": ["datetime", datetime.datetime.isoformat(utc)]}
    for base in (datetime.datetime, datetime.date, datetime.time):
        if has(base):
            return {"x": [base.__name__, base.isoformat(v)]}
    if has(datetime.timedelta):
        return {"x": ["timedelta", datetime.timedelta.__repr__(v)]}
    if has(type) or t[0].__module__ == "builtins":
        raise TypeError("no value shape")              # a class, a function, a module, a generator ...
    attrs = {}
    found_dict = False
    hidden = set()
    cached = set()         # functools.cached_property values: kept where they were read, not state
    for c in t:
        ns = _DICT_OF(c)
        for k in ns:
            x = ns[k]
            if type(x).__name__ == "cached_property" and type(x).__module__ == "functools":
                cached.add(k)
    for c in t:
        ns = _DICT_OF(c)
        fields = ns.get("__dataclass_fields__")
        if type(fields) is dict and not hidden:
            hidden = {k for k, f in dict.items(fields) if getattr(f, "compare", True) is False}
        marked = ns.get("__attrs_attrs__")                        # attrs: fields with eq=False
        if isinstance(marked, tuple) and not hidden:
            hidden = {a.name for a in marked if getattr(a, "eq", True) is False and type(a.name) is str}
        d = ns.get("__dict__")
        if not found_dict and type(d).__name__ == "getset_descriptor" and type(d).__module__ == "builtins":
            found_dict = True
            inst = d.__get__(v)
            if type(inst) is not dict:
                raise TypeError("an instance dict that is no dict")
            for k, x in dict.items(inst):
                if type(k) is not str:
                    raise TypeError("an attribute name that is no str")
                attrs.setdefault(k, x)
        slots = ns.get("__slots__", ())
        for name in ([slots] if type(slots) is str else list(slots) if type(slots) in (list, tuple) else []):
            desc = ns.get(name)
            if type(desc).__name__ == "member_descriptor" and type(desc).__module__ == "builtins":
                try:
                    attrs.setdefault(name, desc.__get__(v))
                except AttributeError:
                    pass
    names = [f"{c.__module__}.{c.__qualname__}" for c in t if c is not object]
    # collections' wrappers are equal to what they wrap (`UserList(x) == x`)
    import collections
    for base, kind in ((collections.UserList, list), (collections.UserDict, dict),
                       (collections.UserString, str)):
        if has(base) and type(attrs.get("data")) is kind:
            return _shape(attrs["data"], depth + 1)
    # Dunder state is bookkeeping (pydantic's __pydantic_fields_set__, __weakref__), not the value.
    return {"o": [names, {k: _shape(x, depth + 1) for k, x in sorted(attrs.items())
                          if k not in hidden and k not in cached and not (k.startswith("__") and k.endswith("__"))}]}


def _shape_text(v):
    try:
        data = _dumps(_shape(v), sort_keys=True)
    except Exception:
        return None
    return data if len(data) <= MAX_SEAL else None


def seal_shape(value, token):
    """A hidden test's `X == Money("88.85")`: the package-built expectation
    is on the host as the gold built it (its shape); this reports X's shape.
    The expression is never evaluated here, so no code of the package sees
    its literals."""
    _emit({"$report_type": "Seal", "token": token, "value": _shape_text(value)})
    return True


def seal_capture(actual, expected, token, flipped=False):
    """Generation only: the test's equality as seal_eq judges it (`flipped`:
    written expected first), with both shapes reported, so that the host
    keeps the expected one."""
    both = _dumps({"expected": _shape_text(expected), "actual": _shape_text(actual)})
    _emit({"$report_type": "Seal", "token": token, "value": both if len(both) <= MAX_SEAL else None})
    return seal_eq(expected, actual, 3) if flipped else seal_eq(actual, expected, 3)


def seal_truth(value, token):
    """A sealed `assert X` or `assert not X`: which one the test asks is on the
    host; this reports X's truth (computed once, as the assert would)."""
    return seal("True" if value else "False", token)


def seal_is(value, token):
    """A sealed `X is [not] None/True/False`: this reports which singleton X is."""
    return seal("None" if value is None else "True" if value is True else "False" if value is False else "other",
                token)


def _raised(excinfo):
    """The exception a planted raises context caught: pytest's ExceptionInfo
    holds it as `.value`, unittest's context (numpy.testing's too) as `.exception`."""
    import unittest.case
    if isinstance(excinfo, unittest.case._AssertRaisesContext):
        return excinfo.exception
    return excinfo.value


def seal_raised(excinfo, token, namespace=None, names=()):
    """A sealed `pytest.raises(E)` / `assertRaises(E)`: which E the test
    expects is on the host (the planted context catches Exception); this
    reports which of the module's exception `names` (as the test writes them,
    resolved in its `namespace` as the test would resolve E) are classes in the
    raised exception's real MRO (a metaclass can fake `__mro__`, not this)."""
    try:
        mro = _TYPE_MRO(type(_raised(excinfo)))
        hits = []
        for text in list(names)[:64]:                     # seals.MAX_NAMED
            first, *rest = text.split(".")
            try:                                          # another site's class may not exist here
                obj = namespace[first] if first in namespace else getattr(__import__("builtins"), first)
                for part in rest:
                    obj = getattr(obj, part)
            except Exception:
                continue
            if any(c is obj for c in mro):
                hits.append(text)
    except Exception:
        hits = None
    return seal(hits, token)


def seal_match(excinfo, token):
    """A sealed `pytest.raises(..., match=PATTERN)` (or unittest's
    assertRaisesRegex): the pattern is on the host; this reports the text the
    test would search it in (the exception's str and notes, as
    ExceptionInfo.match makes it; unittest's: its str)."""
    try:
        # unittest's assertRaisesRegex searches str(exception); pytest.raises(match=)
        # the text RaisesExc makes (pytest >= 8.4: str and notes, a group's own
        # message), ExceptionInfo.match's before, else str
        make = getattr(sys.modules.get("_pytest._code.code"), "stringify_exception", None)
        import unittest.case
        if isinstance(excinfo, unittest.case._AssertRaisesContext):
            text = str(excinfo.exception)
        elif make is not None and hasattr(sys.modules.get("_pytest.raises"), "RaisesExc"):
            text = make(excinfo.value, include_subexception_msg=False)
        else:
            make = getattr(excinfo, "_stringify_exception", None)
            text = make(excinfo.value) if make is not None else str(excinfo.value)
    except Exception:
        text = None
    return seal(text, token)


# pytest's unittest bridge as installed plugins leave it once configured
# (pytest-subtests sets TestCaseFunction.addSubTest and addSkip in its
# pytest_configure): taken again when every plugin has configured. A package
# a conftest imports could patch them first, unseen; one the tests import is seen.
_SET_BY_PLUGINS = ("unittest.TestCaseFunction.", "subtests.")


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    if not _BASELINE:                  # taken at import (below) unless that failed
        _BASELINE.update(_critical())
        return
    try:
        now = _critical()
    except Exception:
        return
    _BASELINE.update({k: v for k, v in now.items() if k.startswith(_SET_BY_PLUGINS)})


def pytest_sessionstart(session):
    _emit({"$report_type": "SessionStart", "pid": os.getpid()})


@pytest.hookimpl(tryfirst=True)
def pytest_warning_recorded(warning_message, when, nodeid, location):
    """The source line a warning points at is never read for its report: a
    package chose the file and line (`warnings.warn_explicit(msg, W,
    "tests/test_x.py", n)`) for every n, and pytest's reporter read it each
    planted line into `terminalreporter.stats`, reachable by attribute reads
    (held-out round 20 told the original raising test from its copy so)."""
    if getattr(warning_message, "line", "") is None:
        try:
            warning_message.line = ""
        except Exception:
            pass


def pytest_collection_finish(session):
    _check_plugins(session.config)
    _check_integrity()


def pytest_runtest_logreport(report):
    _check_integrity()                 # before the report goes out, not only after a test
    ev = {"$report_type": "TestReport", "nodeid": report.nodeid, "when": report.when,
          "outcome": report.outcome, "duration": float(getattr(report, "duration", 0.0) or 0.0)}
    if hasattr(report, "wasxfail"):
        ev["wasxfail"] = True
    if type(report).__name__ != "TestReport":       # pytest's SubtestReport and the like
        ev["subtest"] = True
    if report.failed and report.longrepr is not None:
        ev["longrepr"] = str(report.longrepr)[-600:]
    _emit(ev)
    if report.when == "teardown":
        _check_integrity()


def pytest_collectreport(report):
    if report.failed:
        _emit({"$report_type": "CollectReport", "nodeid": report.nodeid, "outcome": "failed",
               "longrepr": str(report.longrepr)[-600:]})


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    _check_plugins(session.config)
    _check_integrity()
    _emit({"$report_type": "SessionFinish", "exitstatus": int(exitstatus)})


# The baseline is taken as this plugin loads, before pytest reads any
# conftest.py: a package a conftest imports must not patch what is checked
# before it is recorded.
try:
    _BASELINE.update(_critical())
except Exception:
    pass
