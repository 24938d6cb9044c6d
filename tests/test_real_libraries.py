"""Real projects from the package index (sdists with their tests, turned into
git repositories at test time), with no per-repo configuration."""
from __future__ import annotations

import pytest

from taskforge.grade.verify import Solution, verify_many
from taskforge.leaks.audit import audit
from taskforge.orchestrate.pipeline import Options, generate
from taskforge.package.store import load_task
from taskforge.repo.sdist import repo_from_sdist
from taskforge.validate.adequacy import partial_solutions, standin_solutions

REAL = [("cachetools", "5.3.3"), ("inflection", "0.5.1")]


@pytest.mark.network
@pytest.mark.parametrize("name,version", REAL)
def test_real_library_end_to_end(name, version, base_image, tmp_path_factory):
    repo = repo_from_sdist(name, version, tmp_path_factory.mktemp("sdists"))
    out = tmp_path_factory.mktemp(f"tasks-{name}")
    report = generate(str(repo), out, Options(max_tasks=2, jobs=2))
    assert len(report.tasks) == 2, report.model_dump_json(indent=1)
    # Every hidden test grades; those with must-fail copies are counted apart.
    m = report.copies
    assert m.tasks_with_copies == 2 and 0 < m.hidden_with_copy <= m.hidden_functions, m
    assert m.graded == m.protected + m.unprotected and m.protected > 0, m
    assert report.baseline_passing > 100
    for t in report.tasks:
        leaks = audit(out / t)
        assert leaks.findings == [], [f.line() for f in leaks.findings]
    pairs = [(out / t, s) for t in report.tasks for s in (Solution.gold(), Solution.empty())]
    # What a policy doing no work submits (return None, raise, return the first
    # argument, swallow every exception) never scores on a written task.
    standins = [(out / t, name, Solution.from_patch(diff)) for t in report.tasks
                for name, diff in standin_solutions(out / t).items()]
    assert len(standins) >= 2 * len(report.tasks)
    pairs += [(task, sol) for task, _, sol in standins]
    # The gold with one removed public definition stubbed never scores either.
    pairs += [(out / t, Solution.from_patch(diff)) for t in report.tasks
              for diff in partial_solutions(out / t).values()]
    results = verify_many(pairs, workers=2, timeout=300)
    for (task, sol), res in zip(pairs, results):
        assert res.error is None, res.error
        assert res.reward == (1.0 if sol.kind == "gold" else 0.0), (task.name, sol.kind)
    for rec in (load_task(out / t).record for t in report.tasks):
        assert not rec.adequacy.standins_passing_all and rec.adequacy.mutation_score >= 0.5
