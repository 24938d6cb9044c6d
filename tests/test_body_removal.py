"""Removal.BODY (issue 25, yield per repository): a function whose definition
cannot go, because the code that calls it would take most of the suite with it,
keeps its signature and docstring and loses its body. On tomli-w's clone this
turned 1 candidate into 4 (`format_decimal`: 1 test; `format_literal`, which
calls it, 248 of 269)."""
from __future__ import annotations

import textwrap

import pytest

from taskforge.models import Removal
from taskforge.propose.features import hollowable
from taskforge.remove.transform import hollow_code
from tests.conftest import confwriter_task

CODE = textwrap.dedent('''\
    def f(a, b=1):
        """Doc.

        More."""
        # how it works
        if a:
            return b
        return a + b


    class C:
        @property
        def g(self):
            return 1

        @g.setter
        def g(self, v):
            self._g = v

        def h(self): return 2
    ''')


@pytest.mark.parametrize("cls,name,line,kept,gone", [
    (None, "f", 1, ['"""Doc.\n\n    More."""\n    raise NotImplementedError'], ["how it works", "return a + b"]),
    ("C", "g", 12, ["    def g(self):\n        raise NotImplementedError", "self._g = v"], ["return 1"]),
    ("C", "g", 16, ["return 1", "    def g(self, v):\n        raise NotImplementedError"], ["self._g = v"]),
    ("C", "h", 20, ["    def h(self):\n        raise NotImplementedError"], ["return 2"]),
    ("C", "f", 1, None, None),             # no such method
    (None, "f", 3, None, None),            # not where the index says it starts
])
def test_a_hollowed_body_keeps_its_signature_decorators_and_docstring(cls, name, line, kept, gone):
    assert_edit(hollow_code(CODE, cls, name, line), kept, gone)


def assert_edit(new: str | None, kept: list[str] | None, gone: list[str] | None) -> None:
    """`new` holds every text of `kept` and none of `gone`, and compiles; None
    where `kept` is None (no such place to edit)."""
    if kept is None:
        assert new is None
        return
    assert new is not None
    for k in kept:
        assert k in new, new
    for g in gone or []:
        assert g not in new, new
    compile(new, "x.py", "exec")


@pytest.mark.parametrize("kind,why,body", [
    ("function", "too central with its dependents: removing them takes 268 of 269 passing tests (cap 107)", True),
    ("method", "used by other code: removing its dependents too takes more than 40 definitions", True),
    ("function", "used by other code: pkg.REGISTRY (module level)", True),
    ("function", "used by pkg.Thing, which cannot go: dispatched by computed name", True),
    ("class", "too central with its dependents: removing them takes 9 of 10 passing tests (cap 4)", False),
    ("function", "too small: 1 statement(s) of code removed (minimum 3)", False),
    ("function", "too central: 9 of 10 passing tests depend on it (cap 4)", False),
])
def test_what_is_offered_as_a_body(kind, why, body):
    from taskforge.analysis.symbols import Symbol

    sym = Symbol(qualname="pkg.x", module="pkg", path="pkg.py", name="x", kind=kind, cls=None, start=1, end=3)
    assert hollowable(sym, why) is body


@pytest.mark.parametrize("name,kind,offered", [
    ("_eval_compare", "method", True),        # simpleeval's features: the dispatch names them
    ("_helper", "function", True),
    ("__init__", "method", False),            # special: the class's own protocol
    ("public", "function", False),            # proposed whole first (proposable)
    ("_Private", "class", False),
])
def test_which_private_definitions_offer_their_body(name, kind, offered):
    from taskforge.analysis.symbols import Symbol
    from taskforge.propose.features import private_body

    sym = Symbol(qualname=f"pkg.{name}", module="pkg", path="pkg.py", name=name, kind=kind, cls=None,
                 start=1, end=3)
    assert private_body(sym) is offered


@pytest.mark.docker
def test_a_helper_of_the_core_becomes_a_body_task(confwriter_tasks):
    task, rec = confwriter_task(confwriter_tasks, "format_decimal")
    assert rec.feature.removal is Removal.BODY
    writer = (task / "workspace" / "confwriter" / "writer.py").read_text()
    # The signature and docstring stay; the body is gone; the caller still calls it.
    assert 'def format_decimal(value: Decimal) -> str:\n    """A Decimal in plain notation' in writer
    assert "infinities as `nan`, `inf`, `-inf`; no exponent, trailing zeros kept.\"\"\"\n" \
           "    raise NotImplementedError\n" in writer
    assert 'format(value, "f")' not in writer and "return format_decimal(value)" in writer
    assert rec.feature.touched_files == ["confwriter/writer.py"]
    # Only what runs its body is hidden: the decimal tests, not the rest of the suite.
    assert rec.FAIL_TO_PASS and all("decimals" in t for t in rec.FAIL_TO_PASS), rec.FAIL_TO_PASS
    assert any(t.startswith("tests/test_writer.py") for t in rec.PASS_TO_PASS)
    statement = (task / "problem_statement.md").read_text()
    assert "# Implement the body of the function `format_decimal`" in statement
    assert "keeps its signature and docstring and now raises `NotImplementedError`" in statement
    other, _ = confwriter_task(confwriter_tasks, "format_duration")
    assert other.name != task.name


HONEST = '''\
    if value.is_nan():
        return "nan"
    if value.is_infinite():
        return "inf" if value > 0 else "-inf"
    sign, digits, exponent = value.as_tuple()
    text = "".join(map(str, digits))
    if exponent >= 0:
        text, fraction = text + "0" * exponent, "0"
    else:
        text = text.rjust(-exponent + 1, "0")
        text, fraction = text[:exponent], text[exponent:]
    return ("-" if sign else "") + text + "." + fraction
'''

PARTIAL = '''\
    if value.is_nan():
        return "nan"
    if value.is_infinite():
        return "inf" if value > 0 else "-inf"
    return str(value)
'''
