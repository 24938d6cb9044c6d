"""Seals for tables real suites write: a module constant, an expectation picked in a branch.

isodate's format tests (`PARSE_TEST_CASES` shared with the parse test, `if
altstr: ... == altstr else: ... == durationstring`) were graded with no seal
and no copy: forgeable in-process (round 17's routes). grade/seal_rows.py
writes such a table out in the test's decorator and seals the column each row
compares with.
"""
from __future__ import annotations

import ast
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from taskforge.grade import copies as cp
from taskforge.grade.seal_rows import Cell, condition_reads, decide, inline_tables, row_cells, row_paths
from taskforge.grade.seals import SEAL_RULES, reached, seal_source, unsealed

HEAD = "tests/test_spans.py::test_format"

SPANS_TESTS = textwrap.dedent('''\
    from datetime import timedelta

    import pytest

    from spans import format_span, parse_span

    # text, what it reads as, and the text format_span gives where it differs
    CASES = (
        ("2h", timedelta(hours=2), None),
        ("90m", timedelta(minutes=90), "1h30m"),
        ("1h30m", timedelta(hours=1, minutes=30), None),
        ("45s", timedelta(seconds=45), None),
        ("3600s", timedelta(hours=1), "1h"),
        ("1h1s", timedelta(hours=1, seconds=1), None),
    )


    @pytest.mark.parametrize("text, span, canonical", CASES)
    def test_parse(text, span, canonical):
        assert parse_span(text) == span


    @pytest.mark.parametrize("text, span, canonical", CASES)
    def test_format(text, span, canonical):
        if canonical:
            assert format_span(span) == canonical
        else:
            assert format_span(span) == text


    def test_format_zero():
        assert format_span(timedelta(0)) == "0s"


    def test_parse_rejects():
        for bad in ("", "2x", "h2", "1h 2m"):
            with pytest.raises(ValueError):
                parse_span(bad)
    ''')


def _expr(src: str) -> ast.expr:
    return ast.parse(src, mode="eval").body


ROW = {"a": Cell(True, "x"), "n": Cell(True, None), "z": Cell(True, ""), "o": Cell(False)}


@pytest.mark.parametrize("test, want", [
    ("a", True), ("z", False), ("not z", True), ("o", None),
    ("n is None", True), ("o is None", False), ("o is not None", True), ("a is not None", True),
    ("a == 'x'", True), ("a != 'x'", False), ("'x' == a", True), ("n == 'x'", False),
    ("a and z", False), ("a or o", True), ("z and o", False), ("a and o", None),
    ("q", None), ("a < 'y'", None), ("f(a)", None),
])
def test_decide_a_rows_branch(test, want):
    assert decide(_expr(test), ROW) is want


@pytest.mark.parametrize("test, want", [
    ("a", {"a": {"truth"}}), ("not a and b is None", {"a": {"truth"}, "b": {"none"}}),
    ("a == 'x' or a", {"a": {"value", "truth"}}), ("f(a)", None), ("a < 1", None), ("x.y", None),
])
def test_condition_reads(test, want):
    assert condition_reads(_expr(test)) == want


def test_row_cells_take_a_call_for_an_object():
    row = row_cells(["a", "b", "c"], list(_expr("(1, date(1, 2, 3), None)").elts))
    assert row == {"a": Cell(True, 1), "b": Cell(False), "c": Cell(True, None)}


def test_row_paths_follow_the_ifs_a_row_decides():
    fn = ast.parse(textwrap.dedent("""
        def t(a, b):
            x = 1
            if a is None:
                one()
            elif b:
                two()
            else:
                three()
            if unknown():
                four()
        """)).body[0]
    names = {n.value.func.id: n for n in ast.walk(fn) if isinstance(n, ast.Expr)}
    seen, open_ = row_paths(fn.body, {"a": Cell(False), "b": Cell(True, "")}, reached)
    assert id(names["three"]) in seen and id(names["one"]) not in seen and id(names["two"]) not in seen
    assert id(names["four"]) not in seen and len(open_) == 1
    seen, _ = row_paths(fn.body, {"a": Cell(True, None), "b": Cell(True, "")}, reached)
    assert id(names["one"]) in seen and id(names["three"]) not in seen


def _defs(code: str, *names: str):
    tree = ast.parse(code)
    return tree, [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in names]


def test_a_constant_table_is_written_out_and_kept_while_another_test_reads_it():
    tree, defs = _defs(SPANS_TESTS, "test_format")
    out = inline_tables(SPANS_TESTS, tree, defs)
    new = ast.parse(out)
    fmt = next(n for n in new.body if isinstance(n, ast.FunctionDef) and n.name == "test_format")
    table = fmt.decorator_list[0].args[1]
    assert isinstance(table, ast.Tuple) and len(table.elts) == 6
    assert ast.literal_eval(table.elts[1].elts[2]) == "1h30m"
    const = next(n for n in new.body if isinstance(n, ast.Assign))
    assert len(const.value.elts) == 6                     # test_parse still reads it


def test_a_constant_no_other_code_reads_is_emptied():
    tree, defs = _defs(SPANS_TESTS, "test_format", "test_parse")
    out = inline_tables(SPANS_TESTS, tree, defs)
    const = next(n for n in ast.parse(out).body if isinstance(n, ast.Assign))
    assert isinstance(const.value, ast.Tuple) and not const.value.elts
    assert out.count('"1h30m"') == 4          # twice in each test's own table


def test_a_constant_a_for_runs_through_is_written_out_and_sealed():
    """hyperlink's test_clickRFC3986: `for (ref, expected) in RFC_CASES:`."""
    code = textwrap.dedent('''\
        RFC_CASES = [
            ("g", "http://a/b/c/g"),
            ("../g", "http://a/b/g"),
        ]


        def test_click():
            for (ref, expected) in RFC_CASES:
                assert click(ref) == expected
        ''')
    out, plan = _seal(code, "test_click")
    assert "RFC_CASES = ()" in out and "http://a/b" not in out
    assert sorted(plan.expected[t] for t in plan.required[HEAD]) == ["'http://a/b/c/g'", "'http://a/b/g'"] or \
        sorted(plan.expected[t] for t in plan.required[HEAD]) == ['"http://a/b/c/g"', '"http://a/b/g"']
    assert HEAD in plan.sealed_heads() and not plan.leaky


@pytest.mark.parametrize("change", [
    "CASES = CASES + ((\"1s\", timedelta(seconds=1), None),)\n",        # assigned twice
    "def test_other():\n    assert len(CASES) == 6\n",                  # read elsewhere: kept
])
def test_a_constant_read_or_changed_elsewhere_is_not_emptied(change):
    code = SPANS_TESTS + "\n\n" + change
    tree, defs = _defs(code, "test_format", "test_parse")
    out = inline_tables(code, tree, defs)
    const = next(n for n in ast.parse(out).body if isinstance(n, ast.Assign))
    assert len(getattr(const.value, "elts", [])) == 6 or isinstance(const.value, ast.BinOp)


def _seal(code: str, func: str = "test_format", rules: int = SEAL_RULES):
    return seal_source(code, {((), func): HEAD}, cp.find_def, {}, rules)


def _table_text(code: str, func: str = "test_format") -> str:
    fn = next(n for n in ast.parse(code).body if isinstance(n, ast.FunctionDef) and n.name == func)
    return ast.get_source_segment(code, fn.decorator_list[0])


def test_the_column_each_row_compares_with_is_sealed():
    out, plan = _seal(SPANS_TESTS)
    parts = plan.parts[HEAD]
    # one token a row: canonical where a row has one, else the text
    assert sorted(parts.values()) == sorted(["2h", "1h30m", "1h30m", "45s", "1h", "1h1s"])
    fmt = _table_text(out)
    # the sealed table holds no expected value; the rows that take the other branch keep theirs
    assert '"2h"' not in fmt and '"1h"' not in fmt and '"1h30m"' not in fmt
    assert '"90m"' in fmt and '"3600s"' in fmt
    assert "seal((format_span(span)), canonical)" in out and "seal((format_span(span)), text)" in out
    # on the host: the row's token reported with the right value passes, a wrong value fails
    tok = next(t for t, v in parts.items() if v == "1h")
    nid = f"{HEAD}[3600s-span4-{tok}]"
    assert plan.old_suffix(HEAD, f"[3600s-span4-{tok}]") == "[3600s-span4-1h]"
    assert not unsealed({nid: "passed"}, {nid: [(tok, '{"s": "1h"}')]}, plan)
    assert unsealed({nid: "passed"}, {nid: [(tok, '{"s": "60m"}')]}, plan) == {nid}
    assert unsealed({nid: "passed"}, {}, plan) == {nid}                 # never reported


def test_rows_whose_answer_another_test_shows_are_sealed_but_not_counted():
    """Held-out round 18: the constant test_parse still reads holds every
    row's answer beside its inputs; a solution that looks the row up passes.
    Such rows stay sealed (a forger still needs the lookup) but protect
    nothing: grading.unprotected lists them."""
    _, plan = _seal(SPANS_TESTS)
    assert plan.leaky == set(plan.parts[HEAD]) and HEAD not in plan.sealed_heads()
    assert HEAD in plan.sealed_heads(shown=True)            # grading.answers_shown
    # a table only the graded test reads: the constant is emptied, nothing shows the answers
    alone = SPANS_TESTS.replace("@pytest.mark.parametrize(\"text, span, canonical\", CASES)\ndef test_parse",
                                "def test_parse")
    alone = alone.replace("def test_parse(text, span, canonical):\n    assert parse_span(text) == span",
                          "def test_parse():\n    assert parse_span(\"1m\") == timedelta(minutes=1)")
    out, plan = _seal(alone)
    assert "CASES = ()" in out and len(plan.parts[HEAD]) == 6 and not plan.leaky
    assert HEAD in plan.sealed_heads()
    # ... unless the same rows are written out elsewhere
    twice = alone + '\n\nROUND_TRIP = [("90m", timedelta(minutes=90), "1h30m")]\n'
    _, plan = _seal(twice)
    assert [plan.parts[HEAD][t] for t in plan.leaky] == ["1h30m"]


def test_rules_4_leave_the_shared_table_unsealed():
    out, plan = _seal(SPANS_TESTS, rules=4)
    assert not plan.sealed_heads()


@pytest.mark.parametrize("body, sealed", [
    # read in a test of another form: a token would not compare as the value did
    ("if canonical == '1h':\n        assert format_span(span) == canonical\n"
     "    else:\n        assert format_span(span) == text", {"text"}),
    # the branch is not the row's to decide: whether a token must be reported is unknown
    ("if span.seconds % 2:\n        assert format_span(span) == text", set()),
    # read as an input too
    ("if canonical:\n        assert format_span(span) == canonical\n"
     "    else:\n        assert format_span(span) == text\n    assert parse_span(text) == span", {"canonical"}),
])
def test_what_a_branch_column_needs(body, sealed):
    code = SPANS_TESTS.replace(
        "    if canonical:\n        assert format_span(span) == canonical\n"
        "    else:\n        assert format_span(span) == text", "    " + body)
    assert body.split("\n")[0] in code
    out, plan = _seal(code)
    assert {n for n in ("canonical", "text") if f"seal((format_span(span)), {n})" in out} == sealed
    assert bool(plan.parts.get(HEAD)) == bool(sealed)


def test_rows_that_compare_nothing_are_not_counted():
    """Round 18: isodate's test_time::test_format rows with no format reach
    no assertion at all, so any stub passes them; their function counted them
    protected all the same."""
    code = SPANS_TESTS.replace(
        "    if canonical:\n        assert format_span(span) == canonical\n"
        "    else:\n        assert format_span(span) == text",
        "    if canonical:\n        assert format_span(span) == canonical")
    known = {"[2h-span0-None]", "[90m-span1-1h30m]", "[1h30m-span2-None]", "[45s-span3-None]",
             "[3600s-span4-1h]", "[1h1s-span5-None]"}
    _, plan = seal_source(code, {((), "test_format"): HEAD}, cp.find_def, {HEAD: known}, SEAL_RULES)
    assert plan.bare[HEAD] == {"[2h-span0-None]", "[1h30m-span2-None]", "[45s-span3-None]", "[1h1s-span5-None]"}
    _, plan = _seal(SPANS_TESTS)
    assert not plan.bare.get(HEAD)


def test_a_falsy_cell_keeps_its_branch():
    code = SPANS_TESTS.replace('("2h", timedelta(hours=2), None)', '("2h", timedelta(hours=2), "")')
    out, plan = _seal(code)
    assert sorted(plan.parts[HEAD].values()) == sorted(["2h", "1h30m", "1h30m", "45s", "1h", "1h1s"])
    table = _table_text(out)
    assert '("2h", timedelta(hours=2), "")' not in table      # text is the row's expectation: sealed
    assert 'timedelta(hours=2), "")' in table                 # its falsy canonical kept as written


# ---------------------------------------------------------------- end to end

SPANS_CORE = textwrap.dedent('''\
    """Spans of time written as text: 1h30m, 90m, 45s."""
    import re
    from datetime import timedelta

    _PART = re.compile(r"(\\d+)([hms])")
    _UNIT = {"h": 3600, "m": 60, "s": 1}


    def parse_span(text: str) -> timedelta:
        """Read hours, minutes and seconds written together ('1h30m') as a timedelta."""
        parts = _PART.findall(text)
        if not parts or "".join(n + u for n, u in parts) != text:
            raise ValueError(f"not a span: {text!r}")
        return timedelta(seconds=sum(int(n) * _UNIT[u] for n, u in parts))


    def format_span(span: timedelta) -> str:
        """The shortest text parse_span reads back as `span`."""
        total = int(span.total_seconds())
        if total < 0:
            raise ValueError("a span is not negative")
        if total == 0:
            return "0s"
        out = []
        for unit, size in (("h", 3600), ("m", 60), ("s", 1)):
            n, total = divmod(total, size)
            if n:
                out.append(f"{n}{unit}")
        return "".join(out)
    ''')

# A stub (right for the one span test_format_zero asks), and a makereport hook slipped into pluggy's list (round 17's
# hookimpl_inject) that clears the failure of every row of the table-driven
# test it recognises by its parameters: no copy of that test exists (its table
# builds timedeltas), so nothing else it forges can give it away.
FORGER = textwrap.dedent('''\
    import sys
    from datetime import timedelta


    def format_span(span: timedelta) -> str:
        return "0s" if not span else ""


    class _Quiet:
        def pytest_runtest_makereport(self, item, call):
            params = getattr(getattr(item, "callspec", None), "params", {})
            if call.excinfo is not None and "canonical" in params:
                call.excinfo = None


    def _setup():
        for f in sys.meta_path:
            cfg = getattr(f, "config", None)
            if cfg is not None and hasattr(cfg, "pluginmanager"):
                caller = cfg.pluginmanager.hook.pytest_runtest_makereport
                some = caller.get_hookimpls()[0]
                q = _Quiet()
                opts = dict(some.opts, hookwrapper=False, wrapper=False, tryfirst=True, trylast=False)
                caller._hookimpls.append(type(some)(q, "tidy", q.pytest_runtest_makereport, opts))
                return


    _setup()
    ''')


SPANS_INIT = '"""Spans of time as text."""\nfrom spans.core import format_span, parse_span\n\n' \
             '__all__ = ["format_span", "parse_span"]\n'


def _write_repo(root: Path) -> Path:
    files = {
        "pyproject.toml": textwrap.dedent('''\
            [project]
            name = "spans"
            version = "0.1"
            [build-system]
            requires = ["setuptools"]
            build-backend = "setuptools.build_meta"
            [tool.setuptools]
            packages = ["spans"]
            '''),
        "spans/__init__.py": SPANS_INIT,
        "spans/core.py": SPANS_CORE,
        "tests/test_spans.py": SPANS_TESTS,
        # the rest of the suite, so that format_span's six rows are a feature, not most of it
        "spans/clock.py": '"""Minutes of a day on a clock face."""\n\n\ndef clock(minutes: int) -> str:\n'
                          '    """HH:MM of a minute of the day."""\n'
                          '    if not 0 <= minutes < 24 * 60:\n        raise ValueError("not a minute of the day")\n'
                          '    return f"{minutes // 60:02d}:{minutes % 60:02d}"\n',
        "tests/test_clock.py": "import pytest\n\nfrom spans.clock import clock\n\n\n"
                               "@pytest.mark.parametrize('m', range(0, 1440, 160))\n"
                               "def test_clock_reads_back(m):\n"
                               "    h, mm = clock(m).split(':')\n    assert int(h) * 60 + int(mm) == m\n\n\n"
                               "@pytest.mark.parametrize('m', [-1, 1440])\ndef test_clock_range(m):\n"
                               "    with pytest.raises(ValueError):\n        clock(m)\n",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "spans"]):
        subprocess.run(["git", "-c", "init.defaultBranch=main", *args], cwd=root, env=env, check=True)
    return root


@pytest.fixture(scope="module")
def format_span_task(base_image, tmp_path_factory):
    from taskforge.orchestrate.pipeline import Options, generate

    repo = _write_repo(tmp_path_factory.mktemp("spans-repo"))
    out = tmp_path_factory.mktemp("spans-tasks")
    report = generate(str(repo), out, Options(max_tasks=1, jobs=2, only=("format_span",)))
    return out / next(t for t in report.tasks if "format_span" in t)


@pytest.mark.parametrize("backend", [pytest.param("docker", marks=pytest.mark.docker),
                                     pytest.param("bwrap", marks=pytest.mark.bwrap)])
def test_forging_a_shared_table_test_scores_0_with_table_seals_and_1_without(format_span_task, backend,
                                                                             tmp_path, request):
    from taskforge.grade.defences import Defences
    from taskforge.grade.verify import Solution, verify
    from taskforge.package.store import load_task

    task = format_span_task
    if backend == "bwrap":
        request.getfixturevalue("bwrap_env")(task)
    rec = load_task(task).record
    graded = [n for n in rec.FAIL_TO_PASS if n.startswith(HEAD + "[")]
    # graded, sealed, and no copy (no copy could change a table of timedeltas); counted
    # unprotected all the same, since test_parse's table shows each row's answer (round 18)
    assert len(graded) == 6 and set(graded) <= set(rec.grading.unprotected), rec.grading
    assert set(rec.grading.answers_shown) == set(graded)
    assert rec.grading.seal_rules >= 5 and not [c for c in rec.grading.copies if c.func == "test_format"]

    dest = tmp_path / "forger"
    shutil.copytree(task / "workspace", dest)
    core = dest / "spans" / "core.py"
    core.write_text(core.read_text().rstrip() + "\n\n\n" + FORGER)
    (dest / "spans" / "__init__.py").write_text(SPANS_INIT)
    off = verify(task, Solution.from_dir(dest), backend=backend, defences=Defences(table_seals=False))
    assert off.error is None and off.reward == 1.0, off.model_dump_json(indent=1)
    got = verify(task, Solution.from_dir(dest), backend=backend)
    assert got.error is None and got.reward == 0.0, got.model_dump_json(indent=1)
    assert set(graded) & set(got.f2p_failures), got.model_dump_json(indent=1)

    gold = verify(task, Solution.gold(), backend=backend)
    assert gold.error is None and gold.reward == 1.0, gold.model_dump_json(indent=1)
