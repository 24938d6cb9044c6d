"""Removal.BRANCH (issue 25, yield per repository): one arm of an if/elif/else
inside a function goes, its condition and every other path stay, and the tests
that take the arm are the hidden ones. A library whose every test goes through
one dispatcher has tasks in its cases, where neither a definition nor a body
can go."""
from __future__ import annotations

import ast
import json
import textwrap

import pytest

from taskforge.models import Removal, Stage
from taskforge.propose.branches import arms, condition, find_function
from taskforge.remove.transform import branch_code
from tests.conftest import BACKENDS, confwriter_task, graded_edit
from tests.test_body_removal import HONEST as BODY_HONEST
from tests.test_body_removal import PARTIAL as BODY_PARTIAL
from tests.test_body_removal import assert_edit

CODE = textwrap.dedent('''\
    def f(op, x):
        """Doc."""
        if op == "+":
            a = x + 1
            b = a * 2
            return b
        elif op == "-":
            a = x - 1
            return a
        else:
            for i in range(3):
                x += i
            return x


    class C:
        def g(self, v):
            if v:
                global G
                G = 1
                return 2
            if not v:
                yield 1
                yield 2
                yield 3

        def h(self, v):
            def inner():
                if v:
                    a = 1
                    b = 2
                    return a + b
            if v: return 1
            return inner()
    ''')


def _fn(cls, name):
    tree = ast.parse(CODE)
    owner = tree if cls is None else next(n for n in tree.body if getattr(n, "name", "") == cls)
    line = next(n.lineno for n in owner.body if getattr(n, "name", "") == name)
    return find_function(tree, cls, name, line), line


@pytest.mark.parametrize("cls,name,least,want", [
    # the largest arms first; an else is an arm of its own, its condition the others' negation
    (None, "f", 1, [(4, 6, '`op == "+"`'), (11, 13, 'not `op == "+"` and not `op == "-"`'),
                    (8, 9, '`op == "-"`')]),
    (None, "f", 3, [(4, 6, '`op == "+"`'), (11, 13, 'not `op == "+"` and not `op == "-"`')]),
    # a `global` scopes the whole function, a yield makes it a generator: neither arm can go alone
    ("C", "g", 1, []),
    # a nested function's ifs are its own; a one-line suite has no block to cut
    ("C", "h", 1, []),
])
def test_the_arms_a_function_offers(cls, name, least, want):
    fn, _ = _fn(cls, name)
    got = arms(fn, CODE, min_statements=least)
    assert [(a.line, a.end, condition(a)) for a in got] == want


@pytest.mark.parametrize("cls,name,arm,kept,gone", [
    (None, "f", 4, ['if op == "+":\n        raise NotImplementedError\n    elif op == "-":', "a = x - 1"],
     ["b = a * 2"]),
    (None, "f", 11, ["else:\n        raise NotImplementedError\n", "b = a * 2", "a = x - 1"], ["x += i"]),
    (None, "f", 5, None, None),            # not the first line of an arm
    ("C", "h", 33, None, None),            # a one-line suite is not cut
    ("C", "f", 4, None, None),             # no such method
])
def test_an_arm_is_cut_and_the_rest_stays(cls, name, arm, kept, gone):
    _, line = _fn(cls, name) if (cls, name) != ("C", "f") else (None, 1)
    assert_edit(branch_code(CODE, cls, name, line, arm), kept, gone)


@pytest.mark.docker
def test_a_case_of_a_function_becomes_a_branch_task(confwriter_tasks):
    task, rec = confwriter_task(confwriter_tasks, "format_duration@40")
    assert rec.feature.removal is Removal.BRANCH
    assert rec.feature.arm_lines == [40, 42] and rec.feature.arm_condition == "`total < 0`"
    writer = (task / "workspace" / "confwriter" / "writer.py").read_text()
    assert "    if total < 0:\n        raise NotImplementedError\n    hours, rest = divmod(total, 3600)" in writer
    assert "(1_000_000 - micro) % 1_000_000" not in writer
    # The table's negative rows fail without the arm and are graded; its other
    # rows, hidden with their function, pass without it and are graded as such.
    assert rec.FAIL_TO_PASS == ["tests/test_types.py::test_durations[value3--0h01m30s]",
                                "tests/test_types.py::test_durations[value4--0h00m00.500000s]"]
    assert "tests/test_types.py::test_durations[value0-1h02m03s]" in rec.PASS_TO_PASS
    assert "def test_durations(" not in (task / "workspace" / "tests" / "test_types.py").read_text()
    statement = (task / "problem_statement.md").read_text()
    assert "# Implement a case of the function `format_duration`" in statement
    assert "the code that runs when `total < 0` has been removed" in statement
    at = writer.splitlines().index("        raise NotImplementedError") + 1
    assert f"now raises `NotImplementedError` (line {at})." in statement
    # No branch of a function whose every test takes it, nor of one arm's single statement.
    names = {d.candidate: d.reason for d in confwriter_tasks[1].drops}
    assert names["confwriter.writer.format_value@56"].startswith("too small")


HONEST = '''\
        sign = "-"
        us = -(total * 1_000_000 + micro)
        total, micro = divmod(us, 1_000_000)
'''

PARTIAL = '''\
        sign = "-"
        total = -total
'''


# task, what its workspace holds, a solution's text for it, an honest and a partial body
GRADED = {
    "branch": ("format_duration@40", "    if total < 0:\n        raise NotImplementedError\n", "    if total < 0:\n",
               HONEST, PARTIAL),
    "body": ("format_decimal", 'trailing zeros kept."""\n    raise NotImplementedError\n', 'trailing zeros kept."""\n',
             BODY_HONEST, BODY_PARTIAL),
}


@pytest.mark.docker
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("which,reward", [("gold", 1.0), ("empty", 0.0), ("honest", 1.0), ("partial", 0.0)])
@pytest.mark.parametrize("case", sorted(GRADED))
def test_a_body_or_branch_task_grades_the_work(confwriter_tasks, case, which, reward, backend, tmp_path, request):
    name, marker, head, honest, partial = GRADED[case]
    task, _ = confwriter_task(confwriter_tasks, name)
    res = graded_edit(task, which, "confwriter/writer.py", marker, head + (honest if which == "honest" else partial),
                      backend, request, tmp_path)
    assert res.reward == reward, json.dumps(res.model_dump(mode="json"), indent=1)[:3000]


def test_the_cases_of_functions_come_after_every_whole_feature():
    """--max-tasks takes definitions and bodies first; risky candidates stay last."""
    from taskforge.analysis.symbols import Symbol
    from taskforge.models import Difficulty, Tier
    from taskforge.propose.features import Candidate, order

    def cand(name, removal=Removal.DEFINITIONS, tier=Tier.EASY, late=False):
        sym = Symbol(qualname=f"pkg.{name}", module="pkg", path="pkg.py", name=name, kind="function",
                     cls=None, start=1, end=3)
        return Candidate(name=name, kind="function", root=sym, symbols=[sym], late=late, removal=removal,
                         difficulty=Difficulty(tier=tier, score=1.0))

    got = order([cand("f@3", Removal.BRANCH, Tier.MEDIUM), cand("risky", late=True), cand("g"),
                 cand("h", Removal.BODY), cand("k@9", Removal.BRANCH), cand("m", tier=Tier.MEDIUM),
                 cand("_p", Removal.BODY, Tier.MEDIUM)])
    names = [c.name for c in got]
    assert names[-1] == "risky"
    # public features, then cases, then private bodies
    assert set(names[:3]) == {"g", "h", "m"} and set(names[3:5]) == {"f@3", "k@9"} and names[5] == "_p"


def _arm(line, end):
    from taskforge.propose.branches import Arm
    return Arm(line=line, end=end, when="x")


@pytest.mark.parametrize("cases,twins", [
    # croniter's _calc_next: @531 inside @511 with its 13 tests, @552 inside both with 5 of them
    ([((511, 561), {"a", "b"}), ((531, 561), {"a", "b"}), ((552, 556), {"a"})], {1: 0}),
    # three deep, one set of tests: the outermost stays
    ([((10, 40), {"a"}), ((12, 40), {"a"}), ((20, 30), {"a"})], {1: 0, 2: 0}),
    # side by side with the same tests: two cases, not nested
    ([((10, 20), {"a"}), ((21, 30), {"a"})], {}),
    # nested with tests of its own: a task of its own
    ([((10, 40), {"a", "b"}), ((20, 30), {"b"})], {}),
    ([], {}),
])
def test_a_case_inside_a_case_with_the_same_tests_is_no_task(cases, twins):
    from taskforge.propose.branches import nested_twins
    assert nested_twins([(_arm(*span), frozenset(h)) for span, h in cases]) == twins


@pytest.mark.parametrize("old,new,line", [
    ("a\nb\nc\n", "a\nX\n", 2),
    ("a\nb\n", "a\nb\n", None),
    ("a\nb\n", "a\nb\nc\n", 3),
    ("def f(x):\n    if x:\n        # why\n        y = 1\n        return y\n    return 0\n",
     "def f(x):\n    if x:\n        raise NotImplementedError\n    return 0\n", 3),
])
def test_a_case_statement_names_the_line_that_now_raises(old, new, line):
    """asteval's on_functiondef has two `if is_lambda` chains: the statements
    of their else arms were byte-identical; the line tells them apart."""
    from taskforge.package.statement import first_changed_line
    assert first_changed_line(old, new) == line


@pytest.mark.parametrize("name,patterns,asked", [
    ("core.validate", ("core.validate",), True),
    ("core.validate@12", ("core.validate",), False),     # a function asked for: not its cases
    ("core.validate@12", ("core.validate@",), True),     # its cases
    ("core.validate@12", ("@",), True),                  # every case
    ("core.validate@12", ("core.validate@12",), True),
    ("core.validate@30", ("core.validate@12",), False),
    ("core.validate", ("@",), False),
    ("core.validate_all", ("core.validate",), True),     # substring, as before the cases
    ("fmt.render", ("core", "fmt"), True),
])
def test_only_names_a_case_by_its_at(name, patterns, asked):
    """Cases are offered by default, so `--only f` must keep meaning f's definition."""
    from taskforge.orchestrate.pipeline import named
    assert named(name, patterns) is asked


@pytest.mark.parametrize("arm,elsewhere,copy", [
    # slugify: the same transliteration written twice in the package
    ("text = unidecode(text)\ntext = text.encode('ascii', 'ignore')\nreturn text.decode()",
     ["def other(text):\n    text = unidecode(text)\n    text = text.encode('ascii', 'ignore')\n"
      "    return text.decode()\n"], True),
    # inflection: pluralize's loop is singularize's with one name changed
    ("for rule, replacement in PLURALS:\n    if re.search(rule, word, re.IGNORECASE):\n"
     "        return re.sub(rule, replacement, word, flags=re.IGNORECASE)\nreturn word",
     ["for rule, replacement in SINGULARS:\n    if re.search(rule, word, re.IGNORECASE):\n"
      "        return re.sub(rule, replacement, word, flags=re.IGNORECASE)\nreturn word\n"], True),
    ("sign = '-'\ntotal = -total - (1 if micro else 0)\nmicro = (1_000_000 - micro) % 1_000_000",
     ["hours, rest = divmod(total, 3600)\nminutes, seconds = divmod(rest, 60)\n"], False),
])
def test_an_arm_the_package_holds_again_is_a_copy(arm, elsewhere, copy):
    from taskforge.propose.branches import MAX_COPIED, copied, module_windows

    assert (copied(arm, [module_windows(e) for e in elsewhere]) > MAX_COPIED) is copy


def test_the_arm_stand_ins_leave_the_arm_doing_nothing_or_raising_what_the_tests_expect():
    from taskforge.analysis.symbols import Symbol
    from taskforge.validate.adequacy import arm_standins

    sym = Symbol(qualname="m.f", module="m", path="m.py", name="f", kind="function", cls=None, start=1, end=14)
    got = arm_standins({"m.py": CODE}, sym, 4, ["ValueError('bad op')"])
    assert sorted(got) == ["arm-pass", "arm-raises:ValueError('bad op')", "arm-return-none"]
    assert 'if op == "+":\n        pass\n    elif' in got["arm-pass"]["m.py"]
    assert 'if op == "+":\n        raise ValueError(\'bad op\')\n' in got["arm-raises:ValueError('bad op')"]["m.py"]
    assert arm_standins({"m.py": CODE}, sym, 5) == {}          # no arm starts there


FAST = {
    "pyproject.toml": '[project]\nname = "fastp"\nversion = "0.1"\n[tool.setuptools]\npackages = ["fastp"]\n',
    "fastp/__init__.py": "from fastp.core import norm\n",
    "fastp/core.py": '''\
def norm(text):
    """`text` lower-cased, its runs of spaces made one."""
    if text.isascii() and text.islower() and "  " not in text.strip():
        done = text.strip()
        result = done
        return result
    parts = text.split()
    return " ".join(p.lower() for p in parts)
''',
    "tests/test_core.py": '''\
from fastp import norm


def test_already_plain():
    assert norm("abc def ") == "abc def"


def test_mixed_case():
    assert norm("Abc  DEF") == "abc def"


def test_padding():
    assert norm("  XY ") == "xy"
''',
}


@pytest.mark.docker
def test_an_arm_that_is_only_a_fast_path_is_no_task(base_image, tmp_path):
    """`norm`'s first arm is a shortcut: the code after the `if` gives the same
    answer. Without the arm stand-ins (no adequacy, the naive grader) the case
    is written and an arm left as `pass` scores 1; with them, `arm-pass`
    passes every hidden test and the case is dropped."""
    from taskforge.orchestrate.pipeline import Options, generate
    from tests.conftest import make_git_repo

    src = tmp_path / "src"
    for rel, text in FAST.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(text)
    repo = make_git_repo(src, tmp_path / "repo")
    naive = generate(str(repo), tmp_path / "naive", Options(jobs=1, branches=True, only=("@",),
                                                            check_adequacy=False))
    [tid] = naive.tasks
    task = tmp_path / "naive" / tid
    res = graded_edit(task, "honest", "fastp/core.py", "    if text.isascii() and text.islower() and "
                      "\"  \" not in text.strip():\n        raise NotImplementedError\n",
                      "    if text.isascii() and text.islower() and \"  \" not in text.strip():\n        pass\n",
                      "docker", None, tmp_path)
    assert res.reward == 1.0, res.model_dump_json(indent=1)[:2000]     # paid for doing nothing
    ours = generate(str(repo), tmp_path / "ours", Options(jobs=1, branches=True, only=("@",)))
    assert ours.tasks == []
    [drop] = [d for d in ours.drops if d.candidate.startswith("fastp.core.norm@")
              and d.stage != Stage.CANDIDATES]
    assert "arm-pass" in drop.reason, drop
