"""`taskforge harden`: solved features grown and paired into larger tasks. The
growth and the pairing are pure functions (table tests); end to end, the
harder tasks are cut from the fixture's solved tasks through every gate, grade
gold 1 and empty 0, and hold the definitions (and, paired, the files) of their
parts."""
from __future__ import annotations

import json

import pytest

from taskforge.models import FeatureKind
from taskforge.orchestrate.harden import Part, growth_order, newest_cut, plan, solved, task_dirs_of
from taskforge.propose.features import combined, grown
from tests.conftest import run_cli


def part(name, files=("a.py",), symbols=None, hidden=None, family="", lines=10, rate=1.0,
         attempts=2, kind=FeatureKind.FUNCTION, names=(), commit="c1", cut_at="2026-01-01"):
    return Part(instance_id=f"id-{name}", feature=name, kind=kind, files=frozenset(files),
                symbols=frozenset(symbols or {name}), hidden=frozenset(hidden or {f"t::{name}"}),
                family=family, lines=lines, solve_rate=rate, attempts=attempts, names=names,
                commit=commit, cut_at=cut_at)


@pytest.mark.parametrize("parts,min_rate,min_attempts,want", [
    ([part("p.a", rate=0.5), part("p.b", rate=0.49)], 0.5, 1, ["p.a"]),       # the rate's edge
    ([part("p.a", attempts=3), part("p.b", attempts=4)], 0.5, 4, ["p.b"]),    # attempts' edge
    ([part("p.m", kind=FeatureKind.MODULE), part("p.a")], 0.0, 1, ["p.a"]),   # no whole modules
])
def test_what_counts_as_solved(parts, min_rate, min_attempts, want):
    assert [p.feature for p in solved(parts, min_rate, min_attempts)] == want


@pytest.mark.parametrize("parts,per_repo,want", [
    # More files together first, then more lines; each feature in one pair.
    ([part("p.a", files=("a.py",), lines=50), part("p.b", files=("a.py",), lines=40),
      part("p.c", files=("c.py",), lines=5), part("p.d", files=("d.py",), lines=5)], 4,
     [("p.a", "p.c"), ("p.b", "p.d")]),
    # The budget.
    ([part("p.a", files=("a.py",)), part("p.b", files=("b.py",)), part("p.c", files=("c.py",)),
      part("p.d", files=("d.py",))], 1, [("p.a", "p.b")]),
    # Overlaps never pair: a method inside a class, a shared hidden test, one family.
    ([part("p.K", symbols={"p.K"}), part("p.K.m", symbols={"p.K.m"})], 4, []),
    ([part("p.a", hidden={"t::x"}), part("p.b", hidden={"t::x", "t::y"})], 4, []),
    ([part("p.a", family="F"), part("p.b", family="F")], 4, []),
    ([part("p.a", family="F"), part("p.b", family="G")], 4, [("p.a", "p.b")]),
    # A part overlapping one already paired joins no other pair: a method and a
    # cluster around it (each pairable alone) never both end in harder tasks.
    ([part("p.K.m", files=("k.py",), symbols={"p.K.m"}, lines=30),
      part("p.K.m+c", files=("k.py",), symbols={"p.K.m", "p.K.n"}, hidden={"t::c"}, lines=40),
      part("p.x", files=("x.py",)), part("p.y", files=("y.py",))], 4,
     [("p.K.m+c", "p.x")]),
    # A solved harder task brings its features: the group has three.
    ([part("p.a+p.b", symbols={"p.a", "p.b"}, names=("p.a", "p.b"), hidden={"t::a", "t::b"}),
      part("p.c", files=("c.py",))], 4, [("p.a", "p.b", "p.c")]),
    # One feature alone pairs with nothing.
    ([part("p.a")], 4, []),
])
def test_the_pairs_harden_tries(parts, per_repo, want):
    assert plan(parts, per_repo) == want
    assert plan(list(reversed(parts)), per_repo) == want          # deterministic


def test_pairs_are_cut_at_the_newest_commit_by_its_date():
    # "c9" sorts last as text but was cut first: the date decides.
    parts = [part("p.a", commit="c9", cut_at="2025-01-01"), part("p.b", commit="a1", cut_at="2026-05-01"),
             part("p.c", commit="a1", cut_at="2026-05-01")]
    assert [p.feature for p in newest_cut(parts)] == ["p.b", "p.c"]
    assert newest_cut([]) == []


class Cand:
    def __init__(self, name):
        self.name = name


@pytest.mark.parametrize("groups,want,dropped", [
    ([("a", "b")], ["a+b"], []),
    ([("a", "b"), ("b", "a")], ["a+b"], [("a+b", "the same group twice")]),
    ([("a", "gone")], [], [("a+gone", "not proposed at this commit: gone")]),
    ([("a", "m")], [], [("a+m", "refused")]),
])
def test_combined_keeps_each_group_once_and_says_why_one_goes(groups, want, dropped):
    def make(parts):
        names = [p.name for p in parts]
        return (None, "refused") if "m" in names else (Cand("+".join(sorted(names))), "")
    got, drops = combined([Cand(n) for n in ("a", "b", "m")], groups, make)
    assert [c.name for c in got] == want and drops == dropped


class Grown:
    """What `grown` reads of a candidate: its name, definitions and size."""
    def __init__(self, name, symbols, files=1, lines=10):
        from types import SimpleNamespace
        self.name = name
        self.symbols = [SimpleNamespace(qualname=q) for q in symbols]
        self.difficulty = SimpleNamespace(files=files, removed_lines=lines)


GROWN = [Grown("p.f", ["p.f"]), Grown("p._h", ["p._h", "p.f", "p.g"], files=2, lines=40),
         Grown("p.K", ["p.K"], lines=60), Grown("p", ["p"], lines=300),
         Grown("q.x", ["q.x"]), Grown("p.g", ["p.g", "p._i"], lines=20)]


@pytest.mark.parametrize("solved_,want", [
    # A helper the solved function calls, with its other users; then the module.
    ([("p.f",)], ["p._h", "p"]),
    # A method grows into its class (taken whole) and the module.
    ([("p.K.m",)], ["p", "p.K"]),
    # Round-robin: each solved feature's largest container first.
    ([("p.f",), ("p.K.m",)], ["p._h", "p", "p.K"]),
    # Strictly larger: the feature itself is not a growth of it; nor is another
    # solved task as it was (p.g holds nothing of p.f; p._h holds both).
    ([("p.g", "p._i")], ["p"]),
    ([("p.f",), ("p.g", "p._i")], ["p._h", "p"]),
    # Nothing around it.
    ([("q.x",)], []),
    ([()], []),
])
def test_what_harden_grows_around_a_solved_feature(solved_, want):
    got, drops = grown(GROWN, solved_)
    assert [c.name for c in got] == want
    assert sorted([c.name for c in got] + [n for n, _ in drops]) == sorted(c.name for c in GROWN)
    # A task the repository has already (the module, say) is never made again.
    got, drops = grown(GROWN, solved_, known={"p"})
    want = [n for n in want if n != "p"]
    assert [c.name for c in got] == want
    assert sorted([c.name for c in got] + [n for n, _ in drops]) == sorted(c.name for c in GROWN)


def test_the_most_solved_features_grow_first_and_modules_not_at_all():
    parts = [part("p.a", rate=0.6, lines=90), part("p.b", rate=1.0, lines=5), part("p.c", rate=1.0, lines=50),
             part("p.m", kind=FeatureKind.MODULE, rate=1.0)]
    assert [p.feature for p in growth_order(parts)] == ["p.c", "p.b", "p.a"]


def test_task_directories_are_found_as_tasks_corpora_or_themselves(tmp_path):
    for d in ("one/t1", "corpus/repo/t2", "corpus/repo/.tmp-t3", "one/t1/workspace"):
        (tmp_path / d).mkdir(parents=True)
        (tmp_path / d / "task.json").write_text("{}")
    assert task_dirs_of([tmp_path / "one"]) == [tmp_path / "one/t1"]
    assert task_dirs_of([tmp_path / "corpus"]) == [tmp_path / "corpus/repo/t2"]
    assert task_dirs_of([tmp_path / "one/t1"]) == [tmp_path / "one/t1"]


def test_harden_combines_solved_features_into_larger_tasks(generated, fixture_repos, tmp_path):
    from taskforge.grade.verify import Solution, verify_many
    from taskforge.package.store import load_task
    from taskforge.training.curriculum import SolveStats

    out, report = generated("textkit")
    recs = {t: load_task(out / t).record for t in report.tasks}
    stats = SolveStats(tmp_path / "stats.jsonl")
    unsolved = sorted(t for t, r in recs.items() if r.feature.kind != FeatureKind.MODULE)[0]
    for t in report.tasks:
        for _ in range(2):
            stats.record(recs[t].instance_id, 0.0 if t == unsolved else 1.0, t != unsolved)
    res = run_cli("harden", fixture_repos["textkit"], "--tasks", out, "--stats", stats.path,
                  "--out", tmp_path / "harder", "--per-repo", "2", "--min-attempts", "2", "--json",
                  "--mode", "pair")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    row = json.loads(res.stdout)["repos"][0]
    assert row["tasks"] and len(row["tasks"]) <= len(row["planned"]) <= 2, row
    by_name = {r.feature.name: r for r in recs.values()}
    harder = [load_task(f"{row['out']}/{t}").record for t in row["tasks"]]
    for rec in harder:
        pair = next(p for p in row["planned"] if rec.feature.name == "+".join(sorted(p)))
        parts = [by_name[n] for n in pair]
        assert recs[unsolved].feature.name not in pair            # only solved features
        assert rec.feature.kind == FeatureKind.CLUSTER and rec.feature.parts == sorted(pair)
        assert "removed together" in rec.problem_statement
        assert "use one another" not in rec.problem_statement
        mine = {s.qualname for s in rec.feature.symbols}
        assert mine >= {s.qualname for p in parts for s in p.feature.symbols}
        assert set(rec.feature.touched_files) == {f for p in parts for f in p.feature.touched_files}
        assert rec.difficulty.removed_lines >= max(p.difficulty.removed_lines for p in parts)
        assert rec.source_commit == parts[0].source_commit
    tasks = [f"{row['out']}/{t}" for t in row["tasks"]]
    results = verify_many([(t, s) for t in tasks for s in (Solution.gold(), Solution.empty())])
    assert [r.reward for r in results] == [1.0, 0.0] * len(tasks), [r.error for r in results]


def test_harden_grows_features_around_solved_ones(generated, fixture_repos, tmp_path):
    """Every solved feature of the fixture's first run may grow: each harder
    task holds all of one solved feature's definitions and more, is none of
    the tasks made already, and grades gold 1 and empty 0."""
    from taskforge.grade.verify import Solution, verify_many
    from taskforge.package.store import load_task
    from taskforge.training.curriculum import SolveStats

    out, report = generated("textkit")
    recs = [load_task(out / t).record for t in report.tasks]
    stats = SolveStats(tmp_path / "stats.jsonl")
    for r in recs:
        stats.record(r.instance_id, 1.0, True)
    res = run_cli("harden", fixture_repos["textkit"], "--tasks", out, "--stats", stats.path,
                  "--out", tmp_path / "harder", "--per-repo", "2", "--mode", "grow", "--json")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    row = json.loads(res.stdout)["repos"][0]
    assert row["tasks"] and not row["planned"] and len(row["tasks"]) <= 2, row
    solved_sets = [{s.qualname for s in r.feature.symbols} for r in recs if r.feature.kind != FeatureKind.MODULE]
    for t in row["tasks"]:
        rec = load_task(f"{row['out']}/{t}").record
        mine = {s.qualname for s in rec.feature.symbols}
        assert rec.feature.name not in {r.feature.name for r in recs}
        held = [s for s in solved_sets if all(q in mine or any(q.startswith(m + ".") for m in mine) for q in s)]
        assert held and all(len(mine) > len(s) or rec.feature.kind == FeatureKind.MODULE for s in held), t
    tasks = [f"{row['out']}/{t}" for t in row["tasks"]]
    results = verify_many([(t, s) for t in tasks for s in (Solution.gold(), Solution.empty())])
    assert [r.reward for r in results] == [1.0, 0.0] * len(tasks), [r.error for r in results]


def test_harden_refuses_a_missing_stats_file_in_one_line(tmp_path):
    res = run_cli("harden", tmp_path, "--tasks", tmp_path, "--stats", tmp_path / "none.jsonl",
                  "--out", tmp_path / "o")
    assert res.returncode == 2 and "no such stats file" in res.stderr, res.stderr
    assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("defs,files", [(1, 4), (16, 4), (19, 4), (20, 5), (48, 12)])
def test_a_raised_definitions_limit_raises_the_files_limit_with_it(defs, files):
    from taskforge.propose.features import feature_files

    assert feature_files(defs) == files
