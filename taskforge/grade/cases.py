"""A graded run kept as data: what the real sandbox returned, with the facts
the grading core read beside it, so that the decision replays without a
sandbox (tests/test_grading_replay.py).

`verify(..., record=...)` hands one `GradingCase` per graded run to its
callback; scripts/record_grading_cases.sh records every red-team attack and
honest case on both sandbox backends into tests/data/grading/.
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, model_validator

from taskforge.analysis.testindex import TestRef
from taskforge.fsutil import atomic_write
from taskforge.grade import decide
from taskforge.grade.copies import Plan
from taskforge.grade.defences import Defences
from taskforge.grade.events import read_run
from taskforge.grade.findings import Finding, exemptions
from taskforge.grade.result import VerifyResult
from taskforge.grade.seals import SealPlan
from taskforge.models import TestCopy, renamed
from taskforge.sandbox.base import ExecResult

CASE_VERSION = 1


class PlanRecord(BaseModel):
    originals: dict[str, tuple[str, list[str], str]] = Field(default_factory=dict)  # name -> (file, cls, func)
    copies: dict[str, TestCopy] = Field(default_factory=dict)
    # grade/seals.SealPlan: what the host kept of the run's seals
    seal_expected: dict[str, str] = Field(default_factory=dict)
    seal_required: dict[str, list[str]] = Field(default_factory=dict)
    seal_parts: dict[str, dict[str, str]] = Field(default_factory=dict)
    seal_rows: dict[str, dict[str, tuple[str, list[str]]]] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _old_names(cls, data: Any) -> Any:
        return renamed(data, {"mutants": "copies"})     # cases recorded before issue 27's renames

    @classmethod
    def of(cls, plan: Plan) -> "PlanRecord":
        return cls(originals={n: (r.file, list(r.cls), r.func) for n, r in plan.originals.items()},
                   copies=dict(plan.copies), seal_expected=dict(plan.seals.expected),
                   seal_required={h: sorted(t) for h, t in plan.seals.required.items()},
                   seal_parts={h: dict(p) for h, p in plan.seals.parts.items()},
                   seal_rows={h: {k: (old, sorted(toks)) for k, (old, toks) in r.items()}
                              for h, r in plan.seals.rows.items()})

    def plan(self) -> Plan:
        seals = SealPlan(expected=dict(self.seal_expected),
                         required={h: set(t) for h, t in self.seal_required.items()},
                         parts={h: dict(p) for h, p in self.seal_parts.items()},
                         rows={h: {k: [old, set(toks)] for k, (old, toks) in r.items()}
                               for h, r in self.seal_rows.items()})
        return Plan(originals={n: TestRef(f, tuple(c), fn) for n, (f, c, fn) in self.originals.items()},
                    copies=dict(self.copies), seals=seals)


class GradingCase(BaseModel):
    version: int = CASE_VERSION
    name: str = ""                   # set by the recorder: attack@target@backend:grader
    backend: str = ""
    defences: Defences
    fail_to_pass: list[str]
    pass_to_pass: list[str] = Field(default_factory=list)
    allowed: list[tuple[str, str]] = Field(default_factory=list)
    prior: list[Finding] = Field(default_factory=list)    # what preparing the tree found
    plan: PlanRecord
    raw: ExecResult                  # the sandbox's output, as the host read it
    reward: float                    # what the grader decided then
    kinds: list[str] = Field(default_factory=list)        # its findings' kinds, in order

    def facts(self) -> decide.TaskFacts:
        return decide.TaskFacts(tuple(self.fail_to_pass), tuple(self.pass_to_pass),
                                exemptions(self.allowed))


def case_of(rec, d: Defences, prior: list[Finding], plan: Plan, raw: ExecResult,
            result: VerifyResult) -> GradingCase:
    return GradingCase(defences=d, fail_to_pass=list(rec.FAIL_TO_PASS),
                       pass_to_pass=list(rec.PASS_TO_PASS),
                       allowed=[(k, f) for k, f in rec.grading.allowed], prior=list(prior),
                       plan=PlanRecord.of(plan), raw=raw, reward=result.reward or 0.0,
                       kinds=[f.kind.value for f in result.findings])


def replay(case: GradingCase, defences: Defences | None = None, plan: Plan | None = None,
           lenient: bool | None = None, prior: list[Finding] | None = None) -> decide.Judgement:
    """The decision on the recorded run, by the core as it is now. `defences`,
    `plan`, `lenient` (the naive event parser) and `prior` override the
    recorded ones, to show what a defence of the core stops."""
    d = defences or case.defences
    naive = (not case.defences.isolation) if lenient is None else lenient
    run = read_run(case.raw, naive=naive, keep_raw=True)
    return decide.judge(case.facts(), run, plan if plan is not None else case.plan.plan(),
                        case.prior if prior is None else prior, d)


def save(case: GradingCase, directory: Path) -> Path:
    """One case as gzipped JSON, named for the case, written atomically."""
    path = directory / (case.name.replace("/", "_") + ".json.gz")
    data = gzip.compress(case.model_dump_json().encode(), compresslevel=9, mtime=0)
    atomic_write(path, data)
    return path


def load(path: Path) -> GradingCase:
    return GradingCase.model_validate(json.loads(gzip.decompress(path.read_bytes())))


def load_all(directory: Path) -> list[GradingCase]:
    return [load(p) for p in sorted(directory.glob("*.json.gz"))]
