"""Not a memory test (issue 24): the decisions on what a model could recite,
as tables (propose/recall.py), and blame dates read off a real git history
(repo/blame.py). The generate runs with --since are in test_e2e_fixtures.py."""
from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from taskforge.propose import recall
from taskforge.repo.blame import Blame, no_history, require_history, span_times

REMOVED = {"tokenize", "_helper"}


@pytest.mark.parametrize("src,callee", [
    ("def f(x):\n    return kept(x, 2)\n", "kept"),
    ('def f(x):\n    """Doc."""\n    return mod.kept(x)\n', "mod.kept"),
    ("async def f(x):\n    return await client.get(x)\n", "client.get"),
    ("def f(self, x):\n    self.store.put(x)\n", "self.store.put"),
    ("def f(x):\n    return tokenize(x)\n", None),             # calls removed code: work left
    ("def f(x):\n    return _helper.run(x)\n", None),
    ("def f(x):\n    y = kept(x)\n    return y\n", None),       # two statements
    ("def f(x):\n    return x + 1\n", None),                   # no call
    ("def f(x):\n    return Parser(x).run()\n", None),         # a call on a call's result
    ("def f(x, *a, **k):\n    return kept(x, *a, flag=True, **k)\n", "kept"),
    ("def f(n):\n    return reduce(lambda a, _: a, range(n), 0)\n", None),   # work in the args
    ("def f(s):\n    return kept(s.strip().split(':')[1], 16)\n", None),
    ("def f(x):\n    return kept(_helper(x))\n", None),        # a removed helper does work
    ("def f(s):\n    return int(s)\n", None),                  # a builtin is no kept code
    ("def f(fn, x):\n    return fn(x)\n", None),               # a parameter: not kept code
    ("class C:\n    pass\n", None),
    ("def f(:\n", None),                                       # does not parse
])
def test_a_thin_wrapper_is_one_call_of_kept_code(src, callee):
    assert recall.wrapped_call(src, REMOVED) == callee


def test_what_the_code_raises_by_name():
    pieces = ["def f(x):\n    if x:\n        raise ValueError('bad')\n    raise errors.ParseError\n",
              "def g():\n    try:\n        pass\n    except KeyError:\n        raise\n",
              "def h(e):\n    raise e\n", "def broken(:\n"]
    assert recall.raised_types(pieces) == ["ValueError", "errors.ParseError"]


PIECE = '''def natsorted(seq, alg=0):
    """Sort an iterable naturally, returning a new list.

    This is a wrapper around index_natsorted(seq, alg=ns.LOCALE).
    Args:
    """
    return sorted(seq)
'''


def test_statement_lines_copied_from_the_removed_docstrings_are_counted():
    statement = ("# Implement `natsorted`\n\n    \"\"\"Sort an iterable naturally, returning a new list.\n"
                 "This is a wrapper around index_natsorted(seq, alg=ns.LOCALE).\nArgs:\n"
                 "Sort an iterable\n")
    assert recall.quoted_lines(statement, [PIECE]) == 2       # "Args:" and a fragment: no key
    assert recall.quoted_lines("nothing here\n", [PIECE]) == 0


@pytest.mark.parametrize("sig,want", [
    ('def f(x):\n    """Doc."""\n    ...\n', 'def f(x):\n    ...\n'),
    ('def f(x):\n    """Long\n    doc.\n    """\n    ...\n', 'def f(x):\n    ...\n'),
    ('class C:\n    """Doc."""\n\n    def m(self):\n        """Inner."""\n        ...\n',
     'class C:\n\n    def m(self):\n        ...\n'),
    ('class C:\n    """Only a docstring."""\n', 'class C:\n    """Only a docstring."""\n'),
    ("def f(x):\n    ...\n", "def f(x):\n    ...\n"),
    ("X: int = 3\n", "X: int = 3\n"),
    ('"""Module doc."""\n\ndef f():\n    ...\n', '\ndef f():\n    ...\n'),
    ('@deco\ndef f(x, *, y=match):\n    """Doc."""\n    print(x y)\n', '@deco\ndef f(x, *, y=match):\n    ...\n'),
])
def test_docstrings_leave_the_interface(sig, want):
    assert recall.strip_docstrings(sig) == want


DAY = 86400
T2020, T2026 = 1577836800, 1767225600          # 2020-01-01, 2026-01-01 (UTC)


@pytest.mark.parametrize("stamps,since,keep", [
    ([T2026] * 10, T2026, True),
    ([T2020] * 10, T2026, False),
    ([T2020] * 5 + [T2026] * 5, T2026, True),      # half: at the share
    ([T2020] * 6 + [T2026] * 4, T2026, False),
    ([T2026 - 1] * 3, T2026, False),               # the day before
    ([], T2026, False),
])
def test_fresh_keeps_features_mostly_changed_after_the_day(stamps, since, keep):
    assert recall.fresh(stamps, since) is keep


def test_code_age_gives_newest_median_and_oldest_days():
    age = recall.code_age([T2020, T2020 + 10 * DAY, T2026])
    assert (age.oldest, age.median, age.newest, age.lines) == (
        "2020-01-01", "2020-01-11", "2026-01-01", 3)
    assert recall.code_age([]) is None


def _git(repo: Path, *args: str, date: str = "2020-01-01T00:00:00+0000") -> None:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date,
           "PATH": "/usr/bin:/bin"}
    subprocess.run(["git", "-c", "init.defaultBranch=main", *args], cwd=repo, env=env, check=True,
                   capture_output=True)


def _repo(path: Path, *versions: tuple[str, str]) -> Path:
    """A git repository whose m.py went through `versions` ((text, date) each, a commit each)."""
    path.mkdir()
    for i, (text, date) in enumerate(versions):
        (path / "m.py").write_text(text)
        if i == 0:
            _git(path, "init", "-q")
        _git(path, "add", "-A")
        _git(path, "commit", "-q", "-m", f"v{i}", date=date)
    return path


def _shallow(repo: Path, dest: Path) -> Path:
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{repo}", str(dest)], check=True)
    return dest


OLD, NEW, LATER = "2020-01-01T00:00:00+0000", "2026-01-01T00:00:00+0000", "2027-01-01T00:00:00+0000"


@dataclass
class Span:
    path: str
    start: int
    end: int


def test_blame_dates_each_line_by_the_commit_that_last_changed_it(tmp_path):
    repo = _repo(tmp_path / "r", ("a = 1\nb = 2\nc = 3\n", OLD),
                 ("a = 1\nb = 20\nc = 3\nd = 4\n", NEW),
                 ("a = 1\nb  =  20\nc = 3\nd = 4\n", LATER))           # whitespace only
    blame = Blame(repo)
    assert blame.times("m.py") == [T2020, T2026, T2020, T2026]
    assert blame.lines("m.py", 2, 3) == [T2026, T2020]
    assert blame.times("absent.py") == []
    # Nested spans (a class and its method) count each line once.
    assert sorted(span_times(blame, [Span("m.py", 1, 4), Span("m.py", 2, 2)])) == [
        T2020, T2020, T2026, T2026]
    assert no_history(repo) is None
    require_history(repo, "r")
    clone = _shallow(repo, tmp_path / "shallow")
    assert no_history(clone) == "a shallow clone"
    with pytest.raises(Exception, match="shallow clone"):
        require_history(clone, "shallow")
    assert no_history(_repo(tmp_path / "one", ("a = 1\n", OLD))).startswith("one commit")


@pytest.mark.parametrize("args,message", [
    (["--since", "last year"], "--since wants a day like 2025-06-01"),
    (["--statement-style", "paraphrase"], "unknown --statement-style paraphrase"),
    (["--since", "2026-01-01"], "--since needs the repository's history"),
])
def test_since_and_style_refuse_what_they_cannot_use(args, message, tmp_path):
    """One line and exit 2, before any environment is built (no engine needed)."""
    import sys

    clone = _shallow(_repo(tmp_path / "r", ("a = 1\n", OLD), ("a = 2\n", NEW)), tmp_path / "shallow")
    res = subprocess.run([sys.executable, "-m", "taskforge", "generate", str(clone), "--out",
                          str(tmp_path / "out"), *args], capture_output=True, text=True, timeout=120)
    assert res.returncode == 2, res.stderr
    assert message in res.stderr and "Traceback" not in res.stderr, res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert not (tmp_path / "out" / "report.json").exists()


def test_candidates_settling_at_once_all_see_the_history(tmp_path):
    """Candidates settle in threads and share one Settler: every thread that
    asks for the blame gets it, not only the first (the others once read None
    while the first still asked git, and a task went out with no code age)."""
    import threading
    from types import SimpleNamespace

    from taskforge.orchestrate.settle import Settler

    repo = _repo(tmp_path / "r", ("a = 1\n", OLD), ("a = 1\nb = 2\n", NEW))
    fields = dict.fromkeys(("opts", "ctx", "cov", "texts", "image_scan", "image", "n_flaky",
                            "protected", "state", "out_dir"))
    settler = Settler(src=SimpleNamespace(path=repo), **fields)
    start = threading.Barrier(8)
    seen: list = []

    def ask():
        start.wait()
        seen.append(settler.blame)

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(seen) == 8 and all(isinstance(b, Blame) for b in seen), seen
    assert len({id(b) for b in seen}) == 1
