"""Tasks worth training on (issue 11): sizes measured and asked for, degenerate
removals filtered, hidden tests that must constrain the feature (a do-nothing
stand-in never scores), statements that state what the tests require, a
funnel that adds up."""
from __future__ import annotations

import textwrap

import pytest

from taskforge.grade import copies as cp
from taskforge.grade.verify import Solution, verify
from taskforge.models import Stage, Tier
from taskforge.orchestrate.pipeline import Options, generate
from taskforge.package.statement import doc_pointers, problem_statement, required_strings
from taskforge.package.store import load_task
from taskforge.propose.difficulty import measure

ONE_LINER = "def upper(s):\n    \"\"\"Upper-case.\"\"\"\n    return s.upper()\n"
BIGGER = textwrap.dedent('''
    def parse(text):
        """Parse key=value lines."""
        out = {}
        for line in text.splitlines():
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            key, sep, value = line.partition("=")
            if not sep:
                raise ValueError(f"no '=' in {line!r}")
            out[key.strip()] = value.strip()
        return out
''')


def test_difficulty_measures_the_removed_code():
    small = measure([ONE_LINER], files=1, symbols=1, public=1, fan_out=0)
    assert (small.statements, small.removed_lines, small.complexity) == (1, 2, 1)
    assert small.tier == Tier.EASY
    big = measure([BIGGER], files=1, symbols=1, public=1, fan_out=0)
    assert big.statements == 10 and big.complexity == 5 and big.removed_lines == 11
    assert big.tier == Tier.MEDIUM and big.score > small.score
    assert measure([BIGGER], files=2, symbols=2, public=2, fan_out=3).tier == Tier.MEDIUM
    assert measure([BIGGER] * 14, files=2, symbols=14, public=2, fan_out=3).tier == Tier.HARD


def test_required_strings_are_the_unstated_expected_messages(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text(textwrap.dedent('''
        import pytest
        from pkg import Coerce, check

        def test_repr():
            assert repr(Coerce(int, msg="moo")) == "Coerce(int, msg='moo')"

        def test_message():
            with pytest.raises(ValueError, match="expected one of 1, 2"):
                check(3)

        def test_value_not_message():
            assert check("Hello World") == "hello-world"

        def test_stated_elsewhere():
            assert check(4) == "already in the docs"
    '''))
    ids = [f"tests/test_x.py::{n}" for n in ("test_repr", "test_message", "test_value_not_message",
                                             "test_stated_elsewhere")]
    got = required_strings(tmp_path, ids, workspace_text="README: already in the docs")
    # The strings, not the calls that produce them: a specification, not an answer key.
    assert got == ['"Coerce(int, msg=\'moo\')"',
                   "an error message matching the pattern 'expected one of 1, 2'"]


def test_statement_claims_no_description_it_does_not_give():
    from taskforge.analysis.symbols import Symbol

    root = Symbol(qualname="pkg.mod.f", module="pkg.mod", path="pkg/mod.py", name="f",
                  kind="function", cls=None, start=1, end=3, signature="def f(x):\n    ...\n")
    bare = problem_statement("pkg", root, [root], [], ["pkg/mod.py"], 2)
    assert "described below" not in bare and "Required behaviour" not in bare
    full = problem_statement("pkg", root, [root], [], ["pkg/mod.py"], 2,
                             required=["'one thing'"], docs=["README.md:3"])
    assert "- `'one thing'`" in full and "`README.md:3`" in full
    assert doc_pointers({"README.md": "intro\nuse `frobnicate(x)` to\n", "pkg/a.py": "frobnicate"},
                        ["frobnicate"]) == ["README.md:2"]


# ------------------------------------------------------------------ engine


def test_funnel_adds_up_and_degenerate_removals_are_filtered(generated):
    out, report = generated("textkit")
    counts = {f.name: f.count for f in report.funnel}
    assert [f.name for f in report.funnel] == list(Stage)
    # Every candidate is counted once: as a task or as one drop at one stage.
    assert counts[Stage.CONSIDERED] == len(report.drops) + len(report.tasks)
    stages = list(Stage)
    for prev, st in zip(stages, stages[1:]):
        assert counts[prev] - counts[st] == sum(d.stage == st for d in report.drops), st
    assert counts[Stage.TASKS] == len(report.tasks)
    # --max-tasks stopped early: the candidates never tried are in the funnel too.
    assert any(d.stage == Stage.TRIED for d in report.drops)
    # A one-statement wrapper (`to_snake` = a join over split_words) is no task.
    small = {d.candidate: d.reason for d in report.drops if d.reason.startswith("too small")}
    assert "textkit.cases.to_snake" in small, small
    assert sum(report.difficulty.values()) == len(report.tasks)
    for tid in report.tasks:
        rec = load_task(out / tid).record
        assert rec.difficulty.statements >= 3, tid
        assert rec.adequacy.standins and not rec.adequacy.standins_passing_all, tid
        assert rec.adequacy.mutation_score is not None and rec.adequacy.mutation_score >= 0.5, tid


def test_the_copies_cannot_be_drawn_again_from_the_task_id(generated, fixture_repos):
    """A solution that knows a task's id (trainers pass it around) and reads
    the planted file could run propose with each member of a group as the
    original, seeded as generate seeded it, and keep the member that draws the
    planted copies. Seeded by the task id, the replay on the gold tree draws
    them all again; seeded by a secret it draws few (one-step values can
    coincide)."""
    out, report = generated("textkit")
    have = got = 0
    for tid in report.tasks:
        rec = load_task(out / tid).record
        removed = {s.qualname.rpartition(".")[2] for s in rec.feature.symbols}
        again = {c.source for c in cp.propose(fixture_repos["textkit"], rec.FAIL_TO_PASS, tid,
                                              removed=removed)}
        have += len(rec.grading.copies)
        got += sum(c.source in again for c in rec.grading.copies)
    assert have > 20, have
    assert got < 0.5 * have, (got, have)


def test_an_exact_message_ends_up_in_the_statement(fixture_repos, base_image, tmp_path):
    report = generate(str(fixture_repos["geomlib"]), tmp_path / "out",
                      Options(max_tasks=1, jobs=2, only=("circle.Circle.describe",),
                              min_statements=0))
    assert report.tasks, report.model_dump_json(indent=1)
    statement = load_task(tmp_path / "out" / report.tasks[0]).record.problem_statement
    assert "## Required behaviour" in statement
    assert "- `'circle with area 3.14 (radius 1)'`" in statement
    assert "describe()" not in statement.split("## Required behaviour")[1]


WEAK = {
    "pyproject.toml": '[project]\nname = "chk"\nversion = "0.1"\n[build-system]\n'
                      'requires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
                      '[tool.setuptools]\npackages = ["chk"]\n',
    "chk/__init__.py": "",
    "chk/core.py": textwrap.dedent('''
        def validate(items):
            """Raise if an item is not a non-negative int."""
            for item in items:
                if not isinstance(item, int):
                    raise TypeError(f"not an int: {item!r}")
                if item < 0:
                    raise ValueError("negative")


        def total(items):
            return sum(items) if items else 0
    '''),
    "tests/test_core.py": textwrap.dedent('''
        import pytest

        from chk.core import total, validate


        def test_validate_accepts_ints():
            validate([1, 2, 3])


        def test_validate_accepts_empty():
            validate([])


        @pytest.mark.parametrize("items,want", [([1, 2], 3), ([], 0), ([5], 5), ([1, 1, 1], 3),
                                                ([2, 3], 5), ([0], 0), ([4, 4], 8)])
        def test_total(items, want):
            assert total(items) == want
    '''),
}


def test_tests_that_do_not_constrain_the_feature_give_no_task(base_image, tmp_path):
    """`validate`'s tests only call it: `return None` passes them. Without the
    adequacy check the task is written and that stand-in scores 1; with it
    (the default) the candidate is dropped with the reason."""
    from taskforge.validate.adequacy import standin_solutions
    from tests.conftest import make_git_repo

    src = tmp_path / "src"
    for rel, text in WEAK.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(text)
    repo = make_git_repo(src, tmp_path / "repo")
    naive = generate(str(repo), tmp_path / "naive",
                     Options(max_tasks=1, jobs=1, only=("core.validate",), require_copies=False,
                             check_adequacy=False))
    assert naive.tasks, naive.model_dump_json(indent=1)
    task = tmp_path / "naive" / naive.tasks[0]
    stand = standin_solutions(task)["return-none"]
    assert verify(task, Solution.from_patch(stand)).reward == 1.0     # paid for doing nothing
    ours = generate(str(repo), tmp_path / "ours",
                    Options(max_tasks=1, jobs=1, only=("core.validate",), require_copies=False))
    assert ours.tasks == []
    [drop] = [d for d in ours.drops if d.candidate == "chk.core.validate"]
    assert drop.stage == Stage.CONSTRAINED and "stand-in" in drop.reason, drop


@pytest.mark.parametrize("difficulty", [Tier.MEDIUM])
def test_difficulty_floor_is_honoured(generated, fixture_repos, base_image, tmp_path, difficulty):
    report = generate(str(fixture_repos["ledger"]), tmp_path / "out",
                      Options(max_tasks=2, jobs=2, min_tier=difficulty))
    assert report.tasks
    for tid in report.tasks:
        assert load_task(tmp_path / "out" / tid).record.difficulty.tier != Tier.EASY
    assert any("below the difficulty asked" in d.reason for d in report.drops)


# Issue 24: a cluster whose `decode` is tested only against `encode` (no literal,
# so no must-fail copy). The old grading left that test out: the gold with
# `decode` unwritten scored 1.
_PAIR_CORE = '''
def shift(ch, n):
    """Move a letter n places round the alphabet; anything else stays."""
    if not ch.isalpha():
        return ch
    base = ord("a") if ch.islower() else ord("A")
    return chr((ord(ch) - base + n) % 26 + base)


def encode(text):
    """Caesar-encode text, three places on."""
    return "".join(shift(c, 3) for c in text)


def decode(text):
    """Undo encode."""
    return "".join(shift(c, -3) for c in text)
'''
_PAIR_TESTS = '''
from pair.core import decode, encode, shift

SAMPLE = "Hello, World"


def test_shift_moves_letters():
    assert shift("a", 1) == "b"


def test_shift_wraps():
    assert shift("z", 2) == "b"


def test_shift_keeps_others():
    assert shift("!", 5) == "!"


def test_encode():
    assert encode("abc") == "def"


def test_decode_inverts_encode():
    assert decode(encode(SAMPLE)) == SAMPLE
'''
_PAIR_WORDS = '''
def count_words(text):
    """Words in text."""
    words = [w for w in text.split() if w]
    return len(words)
'''
_PAIR_WORD_TESTS = "from pair.words import count_words\n\n" + "\n".join(
    f"\ndef test_count_{i}():\n    assert count_words({' '.join(['w'] * i)!r}) == {i}\n"
    for i in range(1, 11))


def _pair_repo(tmp_path, extra: str = ""):
    from tests.conftest import make_git_repo

    files = {
        "pyproject.toml": '[project]\nname = "pair"\nversion = "0.1"\n[build-system]\n'
                          'requires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
                          '[tool.setuptools]\npackages = ["pair"]\n',
        "pair/__init__.py": "",
        "pair/core.py": _PAIR_CORE + extra,
        "pair/words.py": _PAIR_WORDS,
        "tests/test_core.py": _PAIR_TESTS,
        "tests/test_words.py": _PAIR_WORD_TESTS,
    }
    src = tmp_path / "src"
    for rel, text in files.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(text)
    return make_git_repo(src, tmp_path / "repo")


def test_whole_feature_graded_partial_solution_scores_0(base_image, tmp_path):
    """The test with no copy grades (listed as unprotected): the gold with
    `decode` stubbed scores 0, and 1 under the old grading (that test left out of
    FAIL_TO_PASS); the gold keeps 1. The partial-solution gate ran every stub."""
    import json
    import shutil

    from taskforge.validate.adequacy import partial_solutions

    repo = _pair_repo(tmp_path)
    report = generate(str(repo), tmp_path / "out", Options(max_tasks=1, jobs=1, only=("+",)))
    assert report.tasks, report.model_dump_json(indent=1)
    task = tmp_path / "out" / report.tasks[0]
    rec = load_task(task).record
    inverse = "tests/test_core.py::test_decode_inverts_encode"
    # It has no literal to copy; others may have lost theirs to balancing
    # (grade/copy_odds.py keeps a one-step copy only at a reader's odds).
    unprotected = rec.grading.unprotected
    assert inverse in unprotected and set(unprotected) <= set(rec.FAIL_TO_PASS)
    assert rec.grading.graded == len(rec.FAIL_TO_PASS) == rec.grading.protected + len(unprotected)
    assert report.copies.unprotected == len(unprotected) and report.copies.graded == rec.grading.graded
    assert rec.schema_version == 2 and rec.family == rec.instance_id
    # The coverage record: every removed definition is run by a graded test.
    cov = {c.qualname: c for c in rec.grading.coverage}
    assert set(cov) == {"pair.core.shift", "pair.core.encode", "pair.core.decode"}
    assert all(c.tests and c.covered == c.statements > 0 for c in cov.values()), cov
    assert cov["pair.core.decode"].tests == 1
    # The gate's record: each stub was run and failed a graded test.
    adq = rec.adequacy
    assert not adq.partials_passing_all
    assert {"stub-raise:shift", "stub-raise:encode", "stub-raise:decode"} <= set(adq.partials)
    assert all(n < len(rec.FAIL_TO_PASS) for n in adq.partials.values())

    stubs = partial_solutions(task)
    decode_stub = Solution.from_patch(stubs["stub-raise:decode"])
    assert verify(task, decode_stub).reward == 0.0
    # The old grading: the test with no copy out of FAIL_TO_PASS (settle.py before issue 24).
    old = tmp_path / "old" / task.name
    shutil.copytree(task, old, symlinks=True)
    data = json.loads((old / "task.json").read_text())
    data["FAIL_TO_PASS"] = [t for t in data["FAIL_TO_PASS"] if t not in unprotected]
    (old / "task.json").write_text(json.dumps(data, indent=2))
    assert verify(old, decode_stub).reward == 1.0          # paid for two thirds of the feature
    assert verify(old, Solution.gold()).reward == 1.0
    assert verify(task, Solution.gold()).reward == 1.0     # the honest twin


def test_symbol_no_graded_test_needs_drops_the_task(base_image, tmp_path):
    """`rot13` joins the cluster (it uses `shift`) but no test calls it: the gold
    with it stubbed passes every hidden test, so the task is not written."""
    extra = '''

def rot13(text):
    """Rotate letters by 13."""
    out = [shift(c, 13) for c in text]
    return "".join(out)
'''
    repo = _pair_repo(tmp_path, extra)
    report = generate(str(repo), tmp_path / "out", Options(max_tasks=1, jobs=1, only=("+",)))
    assert report.tasks == [], report.model_dump_json(indent=1)
    [drop] = [d for d in report.drops if "+" in d.candidate and d.stage != Stage.CANDIDATES]
    assert drop.stage == Stage.CONSTRAINED, drop
    assert "a removed symbol is not needed by the graded tests" in drop.reason and "rot13" in drop.reason


def test_required_strings_read_a_parametrize_column_and_patterns_only_code_shows(tmp_path):
    """A fresh review of the first branch tasks: a message compared through a
    parametrize column (email_validator's `== error_msg`) was never stated, and
    a `match=` pattern counted as shown because a changelog line held its words;
    a correct implementation with its own wording scored 0 on both."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text(textwrap.dedent('''
        import pytest
        from pkg import check

        @pytest.mark.parametrize("value,error_msg", [
            ("[1.2.3.4]", "A bracketed IP address is not allowed here."),
            pytest.param("a@@b", "Too many at signs.", id="two"),
        ])
        def test_table(value, error_msg):
            with pytest.raises(ValueError) as exc:
                check(value)
            assert str(exc.value) == error_msg

        @pytest.mark.parametrize("value,pattern", [("+25:99", "timezone minute")])
        def test_pattern(value, pattern):
            with pytest.raises(ValueError, match=pattern):
                check(value)
    '''))
    ids = ["tests/test_x.py::test_table", "tests/test_x.py::test_pattern"]
    docs = "CHANGELOG: Reject out-of-range timezone minutes.\n"
    got = required_strings(tmp_path, ids, workspace_text=docs, code_text="")
    assert got == ["'A bracketed IP address is not allowed here.'", "'Too many at signs.'",
                   "an error message matching the pattern 'timezone minute'"]
    # a pattern the code shows, and a message the workspace shows, are not stated again
    got = required_strings(tmp_path, ids, workspace_text=docs + "'Too many at signs.'",
                           code_text="raise ValueError('bad timezone minute')")
    assert got == ["'A bracketed IP address is not allowed here.'"]
