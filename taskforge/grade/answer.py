"""Grading a model's answer: the diff found in its text, the patch guard, then
`verify`, as a RewardResult. The one core that the reward API, `serve` and the
cluster's grader actors all call, so none of them depends on another."""
from __future__ import annotations

import re
import time
from pathlib import Path

from pydantic import BaseModel

from taskforge.errors import InfraError
from taskforge.grade.findings import FindingKind as K
from taskforge.grade.findings import Source
from taskforge.grade.verify import Solution, verify
from taskforge.package.store import load_task
from taskforge.package.writer import unsafe_diff


class RewardResult(BaseModel):
    """One graded answer. `reward` is None exactly when `infra_error` is set."""
    instance_id: str
    reward: float | None
    resolved: bool = False
    infra_error: str | None = None
    reason: str = ""
    f2p_passed: int = 0
    f2p_total: int = 0
    p2p_passed: int = 0
    p2p_total: int = 0
    seconds: float = 0.0


_FENCE = re.compile(r"^```[ \t]*(diff|patch|udiff)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)
_DIFF_START = re.compile(r"^(diff --git |--- (a/|/dev/null))", re.M)


def extract_diff(text: str) -> str:
    """The diff in an LLM answer: every ```diff (or ```patch) block, in order;
    else everything from the first diff header on; else the text itself."""
    if not text:
        return ""
    blocks = [m.group(2) for m in _FENCE.finditer(text)]
    if blocks:
        return "".join(b if b.endswith("\n") else b + "\n" for b in blocks)
    m = _DIFF_START.search(text)
    if m:
        body = text[m.start():]
        end = re.search(r"^```[ \t]*$", body, re.M)    # an unlabelled fence closing it
        return body[:end.start()] if end else body
    return text


def public_reason(f) -> str:
    """A fatal finding as the model may read it: its kind, and its words only
    where they are about the submitted patch itself (the patch guard's, the
    static scan's). Everything found while or after the tests ran can carry
    what the solution read in the sandbox: a copy's finding names the hidden
    input it changed, the monitor's echo paths it opened, and the grader's
    spell what it left behind (a directory named from the hidden inputs,
    held-out round 22) or a line it wrote to the result pipe. Round 21 read
    every hidden input out of such details in two verifies. VerifyResult
    keeps everything for the trainer."""
    if f.kind is K.PATCH_REJECTED or f.source is Source.STATIC:
        return f.text()
    return f.kind.value


def _from_verify(v, t0: float) -> RewardResult:
    if v.error:
        reason = f"infrastructure: {v.error}"
    elif v.resolved:
        reason = "resolved"
    else:
        fatal = [public_reason(f) for f in v.findings if f.severity.value == "fatal"]
        parts = []
        if fatal:
            parts.append(fatal[0])
        if v.f2p_failures:
            parts.append(f"hidden tests failing: {len(v.f2p_failures)}/{v.f2p_total}")
        if v.p2p_regressions:
            parts.append(f"regressions: {len(v.p2p_regressions)}/{v.p2p_total}")
        if v.timed_out:
            parts.append("timed out")
        reason = "; ".join(parts) or "not resolved"
    return RewardResult(instance_id=v.instance_id, reward=v.reward, resolved=v.resolved,
                        infra_error=v.error, reason=reason[:500], f2p_passed=v.f2p_passed,
                        f2p_total=v.f2p_total, p2p_passed=v.p2p_passed, p2p_total=v.p2p_total,
                        seconds=round(time.monotonic() - t0, 3))


def grade_task(task_dir: str | Path, solution_str: str, timeout: float | None,
               t0: float | None = None, pool=None, backend: str | None = None) -> RewardResult:
    """Grade one answer here (no curriculum record): what a cluster actor runs."""
    t0 = t0 if t0 is not None else time.monotonic()
    rec = load_task(task_dir).record
    diff = extract_diff(solution_str or "")

    def zero(reason: str) -> RewardResult:
        return RewardResult(instance_id=rec.instance_id, reward=0.0, reason=reason,
                            f2p_total=len(rec.FAIL_TO_PASS), p2p_total=len(rec.PASS_TO_PASS),
                            seconds=round(time.monotonic() - t0, 3))

    if not diff.strip():
        # The untouched workspace fails the hidden tests by construction (generate
        # checks it), so no sandbox is spent on it.
        return zero("empty solution: no diff")
    bad = unsafe_diff(diff)
    if bad:
        return zero(f"patch-rejected: {bad}")
    try:
        v = verify(task_dir, Solution.from_patch(diff), timeout=timeout, pool=pool,
                   backend=backend)
    except InfraError as exc:
        return RewardResult(instance_id=rec.instance_id, reward=None, infra_error=exc.message,
                            reason=f"infrastructure: {exc.message}",
                            seconds=round(time.monotonic() - t0, 3))
    except Exception as exc:  # noqa: BLE001 - disk full, a bug: never the policy's doing,
        # and never another item's loss
        msg = f"{type(exc).__name__}: {str(exc)[:200]}"
        return RewardResult(instance_id=rec.instance_id, reward=None, infra_error=msg,
                            reason=f"infrastructure: {msg}", seconds=round(time.monotonic() - t0, 3))
    return _from_verify(v, t0)
