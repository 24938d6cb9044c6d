"""`taskforge harden`: solved features paired into larger tasks. The pairing is a
pure function (table tests); end to end, the combined tasks are cut from the
fixture's solved tasks through every gate, grade gold 1 and empty 0, and hold
the union of their parts."""
from __future__ import annotations

import json

import pytest

from taskforge.models import FeatureKind
from taskforge.orchestrate.harden import Part, plan, solved
from tests.conftest import run_cli


def part(name, files=("a.py",), symbols=None, hidden=None, family="", lines=10, rate=1.0,
         attempts=2, kind=FeatureKind.FUNCTION):
    return Part(instance_id=f"id-{name}", feature=name, kind=kind, files=frozenset(files),
                symbols=frozenset(symbols or {name}), hidden=frozenset(hidden or {f"t::{name}"}),
                family=family, lines=lines, solve_rate=rate, attempts=attempts)


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
    # One feature alone pairs with nothing.
    ([part("p.a")], 4, []),
])
def test_the_pairs_harden_tries(parts, per_repo, want):
    assert plan(parts, per_repo) == want
    assert plan(list(reversed(parts)), per_repo) == want          # deterministic


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
                  "--out", tmp_path / "harder", "--per-repo", "2", "--min-attempts", "2", "--json")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    row = json.loads(res.stdout)["repos"][0]
    assert row["tasks"] and len(row["tasks"]) <= len(row["planned"]) <= 2, row
    by_name = {r.feature.name: r for r in recs.values()}
    harder = [load_task(f"{row['out']}/{t}").record for t in row["tasks"]]
    for rec in harder:
        pair = next(p for p in row["planned"] if rec.feature.name == "+".join(sorted(p)))
        parts = [by_name[n] for n in pair]
        assert recs[unsolved].feature.name not in pair            # only solved features
        assert rec.feature.kind == FeatureKind.CLUSTER
        mine = {s.qualname for s in rec.feature.symbols}
        assert mine >= {s.qualname for p in parts for s in p.feature.symbols}
        assert set(rec.feature.touched_files) == {f for p in parts for f in p.feature.touched_files}
        assert rec.difficulty.removed_lines >= max(p.difficulty.removed_lines for p in parts)
        assert rec.source_commit == parts[0].source_commit
    tasks = [f"{row['out']}/{t}" for t in row["tasks"]]
    results = verify_many([(t, s) for t in tasks for s in (Solution.gold(), Solution.empty())])
    assert [r.reward for r in results] == [1.0, 0.0] * len(tasks), [r.error for r in results]


def test_harden_refuses_a_missing_stats_file_in_one_line(tmp_path):
    res = run_cli("harden", tmp_path, "--tasks", tmp_path, "--stats", tmp_path / "none.jsonl",
                  "--out", tmp_path / "o")
    assert res.returncode == 2 and "no such stats file" in res.stderr, res.stderr
    assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1
