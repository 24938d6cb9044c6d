"""The grading core on real runs, without a sandbox.

Every red-team attack (tests/redteam_kit.py) and the honest cases were graded
on the real sandboxes of both backends, by the naive grader and by ours, and
what the sandbox returned was kept (tests/data/grading/, written by
scripts/record_grading_cases.sh). Here each run replays through the core as it
is now (`events.read_run`, then `decide.judge`): the attack must still beat the
naive grader and still score 0 against ours, the honest runs must still score
1, and each defence of the core must be the one that stops some attack (its
switch off, that attack's run pays). A change to the core that would let an
attack through fails here, in the fast tier.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from redteam_kit import ATTACKS, case_ids  # noqa: E402

from taskforge.grade.cases import GradingCase, load_all, replay  # noqa: E402
from taskforge.grade.copies import Plan  # noqa: E402
from taskforge.grade.findings import Severity  # noqa: E402

DATA = Path(__file__).resolve().parent / "data" / "grading"
CASES = {c.name: c for c in load_all(DATA)}
ATTACK_OF = {name: a for a in ATTACKS for name in case_ids() if name.split("@")[0] == a.name}
HONEST = sorted(n for n in CASES if n.startswith("honest-"))


def kinds(j) -> list[str]:
    return [f.kind.value for f in j.findings]


def fatal(j) -> set[str]:
    return {f.kind.value for f in j.findings if f.severity is Severity.FATAL}


def test_every_attack_and_its_honest_twin_is_recorded():
    missing = [f"{n}.{g}" for n in case_ids() for g in ("naive", "ours") if f"{n}.{g}" not in CASES]
    assert not missing, f"record them: scripts/record_grading_cases.sh ({missing[:5]})"
    twins = {n for n in HONEST if n.startswith("honest-twin@")}
    assert {n.rsplit("@", 1)[1] for n in twins} == {"docker", "bwrap"}, twins


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_core_decides_as_the_grader_did(name):
    """The replay's reward and findings are what verify decided on the run."""
    case = CASES[name]
    j = replay(case)
    assert (j.reward, kinds(j)) == (case.reward, case.kinds)


@pytest.mark.parametrize("name", case_ids())
def test_the_attack_beats_the_naive_grader_and_not_ours(name):
    attack = ATTACK_OF[name]
    naive, ours = CASES[f"{name}.naive"], CASES[f"{name}.ours"]
    assert replay(naive).reward == 1.0, kinds(replay(naive))
    j = replay(ours)
    assert j.reward == 0.0
    assert fatal(j) or j.f2p_failures or j.p2p_regressions
    if attack.kinds:
        assert set(kinds(j)) & set(attack.kinds), (attack.kinds, kinds(j))


@pytest.mark.parametrize("name", HONEST)
def test_honest_runs_score_one(name):
    j = replay(CASES[name])
    assert j.reward == 1.0 and not fatal(j), kinds(j)
    assert j.copies_matched == j.copies_planted


CORE = ("copies", "exit_checks", "strict-events", "monitor")


def core_with(case: GradingCase, on: set[str]):
    """The recorded run judged by the core with only the defences `on` (and
    none of what preparing the tree found: the file-side defences are not the
    core's). The run is what it was: what the sandbox and the file-side
    defences did to it stays done."""
    d = case.defences.model_copy(update={k: k in on for k in ("exit_checks", "monitor", "isolation", "bounds")})
    plan = case.plan.plan() if "copies" in on else Plan(originals=case.plan.plan().originals)
    return replay(case, defences=d, plan=plan, lenient="strict-events" not in on, prior=[])


# Each defence of the core, and an attack that it alone stops: with no defence
# of the core, the recorded run of ours scores 1; with that one, 0. (Most
# attacks are stopped by more than one; the sandbox's and the files' defences
# change the run itself, and their attacks run end to end in test_redteam.py.)
STOPPED_BY = {
    "copies": "always-equal-def@roman",
    "exit_checks": "crash-mid-stream@roman",
    "strict-events": "forge-then-os-exit@roman",
    "monitor": "oracle-settrace@roman",
}


@pytest.mark.parametrize("switch", CORE)
@pytest.mark.parametrize("backend", ["docker", "bwrap"])
def test_each_defence_of_the_core_alone_stops_an_attack(switch, backend):
    name = STOPPED_BY[switch] + ("" if backend == "docker" else "@bwrap")
    ours = CASES[f"{name}.ours"]
    assert core_with(ours, set()).reward == 1.0, kinds(core_with(ours, set()))
    assert core_with(ours, {switch}).reward == 0.0
    for twin in (n for n in HONEST if n.endswith(f"@{backend}")):
        assert core_with(CASES[twin], {switch}).reward == 1.0     # the honest twin keeps its 1


def test_the_copies_stop_every_forgery_that_the_rest_of_the_core_misses():
    """Without the copies, these attacks' runs pay under every other defence of
    the core: the copies are what a forged report cannot get past."""
    only = [n[:-5] for n, c in CASES.items() if n.endswith(".ours")
            and core_with(c, set(CORE) - {"copies"}).reward == 1.0]
    assert only and all(core_with(CASES[f"{n}.ours"], set(CORE)).reward == 0.0 for n in only)
    assert {"always-equal-def@roman", "oracle-caller-frame@real", "rewrite-reports-in-the-guard@roman"} <= set(only)
