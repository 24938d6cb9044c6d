"""Red team 13, c09: an expected value the package builds, echoed into the answer.

`self.assertEqual(row.payment, Money("88.85"))` is a computed equality: no seal
hides "88.85", and `Money`'s own constructor sees it while the test builds its
expectation. The attack returns placeholder rows; `Money.__post_init__` writes
each amount it is built with into the placeholder the test read last, so every
comparison holds. Copies that change another literal of the test (`len(...) ==
12`) pass such an echo by failing on their own site, and the test still counted
as protected. Copies of a test that has a package-built expectation now go
there (copies.mark_built, verify.choose_copies), and only they protect it
(copies.protected_tests).
"""
from __future__ import annotations

import ast
import random
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
ROOT = Path(__file__).resolve().parent.parent

from taskforge.grade import copies as cp  # noqa: E402
from taskforge.grade.defences import Defences  # noqa: E402
from taskforge.grade.result import VerifyResult  # noqa: E402
from taskforge.grade.verify import Solution, choose_copies, planted_set, verify  # noqa: E402
from taskforge.models import TestCopy  # noqa: E402
from taskforge.package.store import load_task  # noqa: E402


def _built(src: str) -> list[tuple[int, bool]]:
    tree = ast.parse(textwrap.dedent(src))
    fn = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name.startswith("test"))
    return sorted((s.where, s.built) for s in cp.sites(fn, tree) if s.kind == "value")


@pytest.mark.parametrize("head,expected,built", [
    ("from pkg import Money", 'Money("88.85")', True),         # the package's class
    ("import pkg", 'pkg.Money("88.85")', True),
    ("from .helpers import Money", 'Money("88.85")', True),    # the test's own package
    ("from decimal import Decimal", 'Decimal("88.85")', False),  # the stdlib's: no solution writes it
    ("from fractions import Fraction", "Fraction(1, 3)", False),
    ("import pytest", "pytest.approx(88.85)", False),
    ("from pkg import Money", "Point(1, 2)", False),           # the test module's own class
    ("from pkg import Money", "88.85", False),                 # a plain literal: sealed on the host
])
def test_a_literal_in_a_call_of_a_name_imported_from_outside_the_stdlib_is_built(head, expected, built):
    src = f"{head}\n\n\ndef test_f():\n    x = f()\n    assert len(x) == 12\n    assert x == {expected}\n"
    found = _built(src)
    assert (7, built) in found and (6, False) in found, found


def _copy(func: str, group: str, built: bool, test_built: bool, **kw) -> TestCopy:
    return TestCopy(file="tests/t.py", func=func, kind="value", group=group, site=f"{group}: a -> b",
                    source="def NAME():\n    pass\n", built=built, test_built=test_built, **kw)


def test_a_test_with_a_built_expectation_is_protected_only_by_copies_there():
    copies = [
        _copy("test_elsewhere", "test_elsewhere@8:25:0", built=False, test_built=True),
        _copy("test_there", "test_there@9:40:0", built=True, test_built=True),
        _copy("test_plain", "test_plain@4:20:0", built=False, test_built=False),
    ]
    assert cp.protected_tests(copies) == {("tests/t.py", (), "test_there"), ("tests/t.py", (), "test_plain")}


def test_verify_plants_the_built_group_of_a_test_whichever_the_draw():
    """Whatever the seed, the test's planted group is the one at its built
    site, though the other is matched values and it is not."""
    cands = [_copy("test_f", "test_f@8:25:0", built=False, test_built=True, matched=True),
             _copy("test_f", "test_f@8:25:0", built=False, test_built=True, matched=True),
             _copy("test_f", "test_f@9:40:0", built=True, test_built=True),
             _copy("test_f", "test_f@9:40:0", built=True, test_built=True),
             _copy("test_g", "test_g@14:8:0", built=False, test_built=False)]
    for seed in range(30):
        ours = choose_copies(cands, random.Random(seed))
        assert {m.group for m in ours if m.func == "test_f"} == {"test_f@9:40:0"}, seed
        assert any(m.func == "test_g" for m in ours)


def test_propose_marks_the_copies_of_a_built_expectation(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_rows.py").write_text(
        "import unittest\n\nfrom pkg import Money, schedule\n\n\n"
        "class T(unittest.TestCase):\n"
        "    def test_rows(self):\n"
        "        rows = schedule(1000, 12)\n"
        "        self.assertEqual(len(rows), 17)\n"
        "        self.assertEqual(rows[0].payment, Money(\"88.85\"))\n"
        "        self.assertEqual(rows[0].interest, Money(\"10.37\"))\n\n"
        "    def test_count(self):\n"
        "        self.assertEqual(len(schedule(1000, 12)), 12)\n")
    ids = ["tests/test_rows.py::T::test_rows", "tests/test_rows.py::T::test_count"]
    for style in (cp.CopyStyle.LEGACY, cp.CopyStyle.EXCHANGED):
        copies = cp.propose(tmp_path, ids, f"seed-{style.value}", style=style)
        rows = [m for m in copies if m.func == "test_rows"]
        assert rows and all(m.test_built for m in rows), style
        assert any(m.built for m in rows), style
        assert all(m.built == (m.group.split("@")[1].split(":")[0] in ("10", "11")) for m in rows), \
            [(m.group, m.built) for m in rows]
        assert not any(m.test_built or m.built for m in copies if m.func == "test_count"), style


# ------------------------------------------------------------------ end to end

ECHO_MONEY = '''

# --- the echo: an amount built right after a placeholder was read goes into it
_ECHO = {"last": None}
_plain_post_init = Money.__post_init__


def _echo_post_init(self):
    _plain_post_init(self)
    held = _ECHO["last"]
    if held is not None and held is not self:
        _ECHO["last"] = None
        object.__setattr__(held, "amount", self.amount)
        object.__setattr__(held, "currency", self.currency)


Money.__post_init__ = _echo_post_init
'''

ECHO_SCHEDULE = '''def amortization_schedule(principal, annual_rate, months):
    if months < 1:
        raise ValueError("months must be at least 1")
    monthly_rate = to_decimal(annual_rate) / 12
    if monthly_rate == 0:
        rows, left = [], principal
        for number in range(1, months + 1):
            pay = left if number == months else Money(principal.amount / months, principal.currency)
            left = left - pay
            rows.append(Installment(number, pay, Money(0), pay, left))
        return rows
    return [_Placeholder(n, Money(0), Money(0), Money(0), Money(0)) for n in range(1, months + 1)]


class _Placeholder(Installment):
    def __getattribute__(self, name):
        value = object.__getattribute__(self, name)
        if isinstance(value, Money):
            from ledger import money
            money._ECHO["last"] = value
        return value
'''


@pytest.fixture(scope="module")
def amortization(fixture_repos, base_image, tmp_path_factory):
    from taskforge.orchestrate.pipeline import Options, generate

    out = tmp_path_factory.mktemp("echo")
    report = generate(str(fixture_repos["ledger"]), out,
                      Options(max_tasks=1, jobs=2, only=("amortization_schedule",), kinds=("function",)))
    task = out / next(t for t in report.tasks if "amortization_schedule" in t)
    return task


def _solution(task: Path, dest: Path, echo: bool) -> Path:
    shutil.copytree(task / "workspace", dest)
    subprocess.run(["git", "apply", str(task / "gold.patch")], cwd=dest, check=True)
    if echo:
        from redteam_kit import read, replace_def

        src = dest / "ledger" / "interest.py"
        src.write_text(replace_def(read(src), "amortization_schedule", ECHO_SCHEDULE))
        with open(dest / "ledger" / "money.py", "a", encoding="utf-8") as fh:
            fh.write(ECHO_MONEY)
    return dest


RELATIONS = ROOT / "docs" / "redteam" / "2026-12-06-heldout-corpus-11-open" / "c01_bound_echo_79a0.patch"


def _relations(task: Path, dest: Path) -> Path:
    """Held-out round 14, c01: placeholder rows that take on an amount the
    test builds next only where it fits relations among the row's cells
    (principal = payment - interest, a payment between P/n and P/n + P*r/12):
    one-value copies break them, so the original is the member that fits."""
    shutil.copytree(task / "workspace", dest)
    subprocess.run(["git", "apply", str(RELATIONS)], cwd=dest, check=True)
    return dest


@pytest.mark.parametrize("backend", [pytest.param("docker", marks=pytest.mark.docker),
                                     pytest.param("bwrap", marks=pytest.mark.bwrap)])
def test_an_echo_of_a_built_expectation_scores_0_and_the_gold_1(amortization, backend, tmp_path, request):
    """Two defences, each enough alone against the plain echo: copies at the
    built site (red team 13), and the built expectation sealed on the host
    (grade/shapes.py), which the relation echo needs."""
    task = amortization
    if backend == "bwrap":
        request.getfixturevalue("bwrap_env")(task)
    rec = load_task(task).record
    planted = planted_set(rec)
    built_tests = {m.func for m in planted if m.test_built}
    assert built_tests and built_tests == {m.func for m in planted if m.built}, "a built test planted elsewhere"
    # The defence off: the draw red team 13's task made, copies elsewhere in
    # these tests (or none where they have no other site).
    assert not any(m.built for m in planted_set(rec, built_first=False))
    assert rec.grading.shapes and all('"ledger.money.Money"' in s for s in rec.grading.shapes.values())

    def score(sol: Solution, **off) -> VerifyResult:
        got = verify(task, sol, defences=Defences(**off), backend=backend)
        assert got.error is None, got.model_dump_json(indent=1)
        return got

    echo = Solution.from_dir(_solution(task, tmp_path / "echo", echo=True))
    assert score(echo, built_copies=False, built_seals=False).reward == 1.0
    copies_only = score(echo, built_seals=False)
    # caught by the copies it passed (they wanted the gold's failure), not by its own tests
    assert copies_only.reward == 0.0 and copies_only.copies_matched < copies_only.copies_planted \
        and not copies_only.f2p_failures, copies_only.model_dump_json(indent=1)
    ours = score(echo)
    assert ours.reward == 0.0 and ours.f2p_failures, ours.model_dump_json(indent=1)

    # Against copies at the built sites it wins in most draws (9 of 9 planted
    # on round 14's task, as here on most seeds), not all: the baseline that
    # holds for every seed is without them.
    relations = Solution.from_dir(_relations(task, tmp_path / "relations"))
    assert score(relations, built_copies=False, built_seals=False).reward == 1.0
    ours = score(relations)
    assert ours.reward == 0.0 and ours.f2p_failures, ours.model_dump_json(indent=1)

    gold = score(Solution.from_dir(_solution(task, tmp_path / "gold", echo=False)))
    assert gold.reward == 1.0, gold.model_dump_json(indent=1)
