"""What `verify` reports (VerifyResult): beside the task records of
taskforge.models, but grade's own, since its findings are grade's vocabulary."""
from __future__ import annotations

from pydantic import BaseModel, Field

from taskforge.grade.findings import Finding
from taskforge.models import TestResult


class VerifyResult(BaseModel):
    """What `verify` reports. `error` is set only for infrastructure failures:
    then `reward` is None and a trainer should mask the sample."""
    instance_id: str
    solution: str
    reward: float | None
    resolved: bool
    f2p_passed: int
    f2p_total: int
    p2p_passed: int
    p2p_total: int
    p2p_regressions: list[str]
    f2p_failures: list[str]
    tests: list[TestResult]
    tampering: list[str] = Field(default_factory=list)     # findings that cost or flag, as text
    findings: list[Finding] = Field(default_factory=list)
    copies_planted: int = 0
    copies_matched: int = 0          # planted copies whose every id ended as on the gold
    collection_errors: list[str] = Field(default_factory=list)
    error: str | None = None
    exit_code: int | None = None
    timed_out: bool = False
    test_seconds: float = 0.0
    wall_seconds: float = 0.0
