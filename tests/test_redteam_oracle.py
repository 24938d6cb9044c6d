"""The exception oracle (red team, round 28): a solution that leaves out the
feature's refusals and raises only while a test waits for a raise, found by
walking the caller frames to an `assertRaises` context, with a class that
derives from every exception the tests might name. Where no copy puts an
input the feature accepts inside a raising block, it scores 1 (simpleeval's
`safe_mult`, `_eval_attribute` and four more tasks). The raising blocks there
call the project's assertion helper, `self.t(expr, should_be)`, which the
exchange blocks (grade/copy_raises.py) did not take: they now do, and the
oracle meets a copy whose accepted input it refuses."""
from __future__ import annotations

import shutil
import textwrap

import pytest

from taskforge.grade import copy_raises
from taskforge.grade.verify import Solution, verify
from taskforge.orchestrate.options import Options
from taskforge.orchestrate.pipeline import generate
from tests.conftest import make_git_repo

CALC = textwrap.dedent('''\
    """Sums, products and powers of two integers, none past a limit."""
    import re

    LIMIT = 1000


    class TooBig(ValueError):
        """A result past LIMIT."""


    def evaluate(expr):
        """`a+b`, `a*b` or `a**b` of two integers; TooBig past LIMIT."""
        a, op, b = re.fullmatch(r"(\\d+)(\\+|\\*\\*|\\*)(\\d+)", expr).groups()
        a, b = int(a), int(b)
        if op == "**":
            if b > 1 and a > LIMIT ** (1 / b):
                raise TooBig(expr)
            return a ** b
        value = a + b if op == "+" else a * b
        if value > LIMIT:
            raise TooBig(expr)
        return value
    ''')
OTHER = "def double(x):\n    return 2 * x\n"
TESTS = textwrap.dedent('''\
    import unittest

    from pkg.calc import TooBig, evaluate


    class Base(unittest.TestCase):
        def t(self, expr, should_be):
            self.assertEqual(evaluate(expr), should_be)


    class TestCalc(Base):
        def test_sum(self):
            self.t("2+3", 5)
            self.t("40+2", 42)

        def test_product(self):
            self.t("6*7", 42)
            self.t("3*13", 39)

        def test_power(self):
            self.t("2**5", 32)
            self.t("3**4", 81)

        def test_big_power(self):
            with self.assertRaises(TooBig):
                self.t("9**9", 0)

        def test_big_product(self):
            with self.assertRaises(TooBig):
                self.t("999*999", 0)

        def test_big_sum(self):
            with self.assertRaises(TooBig):
                self.t("999+999", 0)
    ''')
OTHER_TESTS = ("import pytest\n\nfrom pkg.other import double\n\n\n@pytest.mark.parametrize('x', range(12))\n"
               "def test_double(x):\n    assert double(x) == x + x\n")      # the rest of the suite

# Every value computed, no limit anywhere, and a raise only where a test waits for one.
ORACLE = textwrap.dedent('''\
    import re
    import sys
    import unittest.case

    LIMIT = 1000


    class TooBig(ValueError):
        """A result past LIMIT."""


    class _Refused(TooBig, TypeError, KeyError, IndexError, AttributeError, ArithmeticError):
        pass


    def _waiting():
        f = sys._getframe(1)
        while f is not None:
            for v in list(f.f_locals.values()):
                if isinstance(v, unittest.case._AssertRaisesContext) and not hasattr(v, "exception"):
                    return True
                if type(v).__name__ == "ExceptionInfo" and getattr(v, "_excinfo", 1) is None:
                    return True
            f = f.f_back
        return False


    def evaluate(expr):
        if _waiting():
            raise _Refused(expr)
        a, op, b = re.fullmatch(r"(\\d+)(\\+|\\*\\*|\\*)(\\d+)", expr).groups()
        a, b = int(a), int(b)
        return a ** b if op == "**" else a + b if op == "+" else a * b
    ''')
# The honest twin: the same contract, written otherwise.
HONEST = textwrap.dedent('''\
    import operator

    LIMIT = 1000


    class TooBig(ValueError):
        """A result past LIMIT."""


    def evaluate(expr):
        for sign, fn in (("**", operator.pow), ("+", operator.add), ("*", operator.mul)):
            if sign in expr:
                left, right = expr.split(sign)
                a, b = int(left), int(right)
                if sign == "**" and b > 1 and a > 1 and b * len(str(a)) > 6:
                    raise TooBig(expr)
                value = fn(a, b)
                if value > LIMIT:
                    raise TooBig(expr)
                return value
        raise ValueError(expr)
    ''')


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    src = tmp_path_factory.mktemp("oracle") / "src"
    for rel, text in {"pkg/__init__.py": "", "pkg/calc.py": CALC, "pkg/other.py": OTHER,
                      "tests/__init__.py": "", "tests/test_calc.py": TESTS,
                      "tests/test_other.py": OTHER_TESTS,
                      "pyproject.toml": '[project]\nname = "pkg"\nversion = "0.1"\n'}.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(text)
    return make_git_repo(src, src.parent / "repo")


def _task(repo, out):
    report = generate(str(repo), out, Options(jobs=1, only=("pkg.calc.evaluate",), max_tasks=1,
                                              branches=False))
    assert len(report.tasks) == 1, report.drops[:3]
    return out / report.tasks[0]


def _score(task, tmp_path, name, code):
    ws = tmp_path / name
    shutil.copytree(task / "workspace", ws)
    (ws / "pkg" / "calc.py").write_text(code)
    return verify(task, Solution.from_dir(ws))


@pytest.mark.parametrize("helper_blocks", [False, True])
def test_the_exception_oracle_meets_a_copy_of_a_helper_call(repo, base_image, tmp_path, monkeypatch,
                                                            helper_blocks):
    monkeypatch.setattr(copy_raises, "HELPER_CALLS", helper_blocks)
    task = _task(repo, tmp_path / "out")
    oracle = _score(task, tmp_path, "oracle", ORACLE)
    honest = _score(task, tmp_path, "honest", HONEST)
    assert honest.reward == 1.0, (honest.f2p_failures, honest.tampering)
    if helper_blocks:
        assert oracle.reward == 0.0, oracle.model_dump_json()[:400]
        assert oracle.copies_matched < oracle.copies_planted, "a copy it passes must catch it"
    else:
        # without blocks of the helper's calls nothing tells the oracle apart
        assert oracle.reward == 1.0, (oracle.f2p_failures, oracle.tampering)
