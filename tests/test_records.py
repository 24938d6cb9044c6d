"""Records on disk outlive the code's names: task.json and report.json written
before issue 27's renames (test copies were "mutants", remote workers were
"helpers") load under the new names, and are written under the new ones only."""
from __future__ import annotations

import pytest

from taskforge.models import GenerateReport, GradingPlan, renamed

COPY = {"file": "tests/test_a.py", "func": "test_a", "kind": "value", "site": "line 3: 1 -> 2",
        "source": "def __tf_mutant_name__():\n    assert f() == 2\n"}


@pytest.mark.parametrize("data, table, expected", [
    ({"mutants": 1}, {"mutants": "copies"}, {"copies": 1}),
    ({"mutants": 1, "copies": 2}, {"mutants": "copies"}, {"copies": 2}),   # the new name wins
    ({"copies": 2}, {"mutants": "copies"}, {"copies": 2}),
    ({"a": 1, "helpers": 3}, {"helpers": "remote_workers"}, {"a": 1, "remote_workers": 3}),
    ([1, 2], {"mutants": "copies"}, [1, 2]),                               # not a mapping: as it is
])
def test_renamed_reads_an_old_key_as_its_new_name(data, table, expected):
    before = dict(data) if isinstance(data, dict) else list(data)
    assert renamed(data, table) == expected
    assert data == before                                                  # the input is not edited


def test_a_grading_plan_written_before_the_rename_loads():
    old = {"mutants": [COPY], "hidden_with_mutant": 1, "hidden_functions": 2, "rename": True}
    plan = GradingPlan.model_validate(old)
    assert [c.func for c in plan.copies] == ["test_a"] and plan.hidden_with_copy == 1
    dumped = plan.model_dump()
    assert "mutants" not in dumped and "hidden_with_mutant" not in dumped
    assert GradingPlan.model_validate_json(plan.model_dump_json()) == plan


def test_a_report_written_before_the_rename_loads():
    old = {"repo": "r", "source_commit": "c", "image_name": "i", "baseline_tests": 1,
           "baseline_passing": 1, "baseline_failing": 0, "flaky_excluded": 0, "funnel": [],
           "drops": [], "tasks": [], "helpers": 2, "remote_runs": 5, "helpers_lost": 1,
           "mutants": {"tasks_with_mutants": 1, "hidden_functions": 3, "hidden_with_mutant": 2,
                       "pool_size": 7, "graded": 3}}
    rep = GenerateReport.model_validate(old)
    assert (rep.remote_workers, rep.remote_runs, rep.remote_workers_lost) == (2, 5, 1)
    c = rep.copies
    assert (c.tasks_with_copies, c.hidden_functions, c.hidden_with_copy, c.copies, c.graded) == (1, 3, 2, 7, 3)
    assert not {"helpers", "helpers_lost", "mutants"} & set(rep.model_dump())


def test_a_grading_case_recorded_before_the_rename_replays_the_same():
    """A case recorded with the old keys (defences.mutants, plan.mutants) keeps its
    copies and its switches: dropped silently, the naive grader's copies would be
    on and the plan's copies gone, and the replay would decide another reward."""
    import json
    from pathlib import Path

    from taskforge.grade import cases

    path = Path(__file__).parent / "data" / "grading" / "always-equal-decoded-and-exec@roman.ours.json.gz"
    case = cases.load(path)
    assert case.plan.copies and case.reward == 0.0
    old = json.loads(case.model_dump_json())
    old["defences"]["mutants"] = old["defences"].pop("copies")
    old["plan"]["mutants"] = old["plan"].pop("copies")
    again = cases.GradingCase.model_validate(old)
    assert again == case
    assert cases.replay(again).reward == case.reward == 0.0
    naive = json.loads(cases.load(path.with_name(path.name.replace(".ours.", ".naive."))).model_dump_json())
    naive["defences"]["mutants"] = naive["defences"].pop("copies")
    assert cases.GradingCase.model_validate(naive).defences.copies is False
