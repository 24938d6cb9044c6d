"""Settle how a task is graded, at generation, by running the gold.

1. `calibrate`: candidate copies of the hidden tests run against the gold in
   the generation worker, beside the hidden tests themselves. A copy the gold
   fails is kept, with the outcome of each of its ids; hidden ids
   that do not come back (built from the clock, a memory address) are unstable
   and leave FAIL_TO_PASS.
2. `final_check`: the task directory, complete, is graded for real through
   `verify` (the same code path a trainer uses): the gold must score 1 and the
   empty solution 0, or the task is not written. Acts the gold itself performs
   (a library that reads frames, say) are recorded as exempt for this task.
"""
from __future__ import annotations

import ast
import json
import math
import random
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import AbstractSet

from taskforge.analysis.pyparse import parse as parse_python
from taskforge.analysis.testindex import TestRef
from taskforge.errors import InfraError
from taskforge.grade import copies as cp
from taskforge.grade import copy_blocks, copy_cross, copy_raises
from taskforge.grade.findings import Policy, Severity, Source
from taskforge.sandbox import GENERATION_BACKEND

MAX_TIMEOUT = 900.0
MIN_TIMEOUT = 30.0


class GradeCheckError(Exception):
    """The task does not grade as it must (the gold fails, the empty passes)."""


@dataclass
class Calibration:
    """What running the candidate copies on the gold settled for one task."""
    copies: list[cp.TestCopy] = field(default_factory=list)
    unstable: set[str] = field(default_factory=set)     # hidden ids the gold run did not report
    uncopied: set[str] = field(default_factory=set)     # graded ids with no value copy or seal: unprotected
    sealed: set[str] = field(default_factory=set)       # graded ids with a sealed site (verify.sealed_ids)
    shown: set[str] = field(default_factory=set)        # ... but for answers another test shows (verify.shown_ids)
    seconds: float = 0.0                                 # bare test time of the gold run
    functions: int = 0                                   # hidden test functions
    rename: bool = True          # False: the tests break when renamed (order, names)
    note: str = ""


def calibrate(worker, f2p: list[str], seed: str, timeout: float,
               passing: set[str] | None = None, removed: AbstractSet[str] = frozenset()) -> Calibration:
    """Run the candidates on the worker's pristine (gold) tree, placed before
    their originals and then after them, the hidden tests renamed at random each
    time (as verify does), with every test of their files. Keep the copies the
    gold fails the same way both times, provided that every test that passes
    without them still does. If the tests break under renaming (unittest runs
    methods in name order), the task is graded without renaming and copies."""
    cal = Calibration()
    refs = {r for r in map(cp.test_ref, f2p) if r is not None}
    cal.functions = len(refs)
    # More sites per test where a task has few tests: crosses of them
    # (grade/copy_cross.py) then use the budget the few tests leave.
    per_test = max(2, min(copy_cross.MAX_AXES, 24 // max(1, len(refs))))
    candidates = cp.propose(worker.src, f2p, seed, sites_per_test=per_test, removed=removed)
    # Every row of a parametrized test runs in each of its copies, passing or not.
    ids = Counter(copy_cross.key_of_ref(r) for r in map(cp.test_ref, set(f2p) | set(passing or ()))
                  if r is not None)
    # Crosses first: their original (every axis's rewrite at once) is the one
    # planted for their test (cp.plant keeps the first), so it runs here too.
    candidates = copy_cross.crosses(worker.src, candidates, seed, ids) + candidates
    files = sorted({m.file for m in candidates} | {r.file for r in refs})
    must_pass = {t for t in (passing or set(f2p)) if t.split("::")[0] in files} | set(f2p)
    proposed = candidates        # what a block, a set or a level is whole against
    got = _placed_runs(worker, f2p, candidates, files, must_pass, seed, timeout, cal)
    if got == BROKEN:
        # A must-fail copy stops before its test puts module state back
        # (simpleeval's `simpleeval.MAX_POWER = 100 ... = old_max`), and the
        # tests after it fail: the copies of such tests go, and the rest are
        # tried again, rather than every copy of the task (six of simpleeval's
        # nineteen tasks had none, 40 of 42 tests unprotected). Again under a
        # second seed too (other names, so another order): a leak the static
        # look missed must not pass by the luck of one draw, or verify's
        # placements would break honest runs at random.
        setters = _state_setters(worker.src, candidates)
        keep = [m for m in candidates if (m.file, tuple(m.cls), m.func) not in setters]
        if keep and len(keep) < len(candidates):
            first, unstable = cal.note, set(cal.unstable)
            cal.unstable.clear()
            got = _placed_runs(worker, f2p, keep, files, must_pass, seed, timeout, cal)
            if not isinstance(got, str):
                check = _placed_runs(worker, f2p, keep, files, must_pass, seed + ":again", timeout, cal)
                if isinstance(check, str):
                    got = check
            if isinstance(got, str):
                got, cal.note, cal.unstable = BROKEN, first, unstable
            else:
                candidates = keep
                cal.note = f"copies of {len(setters)} test(s) that set module state left out"
    if isinstance(got, str):
        if got == BROKEN:
            cal.rename = False
        return cal
    profiles, plans, seconds, hidden_secs = got
    # The same candidate got another random name in each run: matched by identity.
    names = [{id(m): name for name, m in p.copies.items()} for p in plans]
    spent: dict[int, float] = {}
    for m in candidates:
        if id(m) not in names[0] or id(m) not in names[1]:
            continue
        a, b = profiles[0][names[0][id(m)]], profiles[1][names[1][id(m)]]
        if kept_outcomes(m, a, b):
            kept = m.model_copy(update={"expect": dict(sorted(a.items()))})
            spent[id(kept)] = seconds.get(names[0][id(m)], 0.0)
            cal.copies.append(kept)
    cal.copies = copy_cross.whole_levels(
        cp.whole_sets(copy_blocks.whole_blocks(cal.copies, proposed), proposed), proposed)
    # A cross runs its test once a combination: no more of them than the time
    # the hidden tests take themselves (a one-second test crossed 63 times
    # made a verify five times longer; review 2026-12-05-cross-review, finding 2).
    cal.copies = copy_cross.within_time(cal.copies, [spent.get(id(m), 0.0) for m in cal.copies],
                                        max(copy_cross.MIN_SECONDS, hidden_secs))
    return cal


BROKEN = "broken"


def _placed_runs(worker, f2p: list[str], candidates: list, files: list[str], must_pass: set[str],
                 seed: str, timeout: float, cal: Calibration):
    """The two gold runs with the candidates planted before their originals and
    after them: (profiles, plans, seconds of each copy, seconds of the hidden
    tests), or why not ("timeout", or BROKEN: a test that passes without the
    copies failed beside them; cal.note says which)."""
    profiles: list[dict[str, dict[str, str]]] = []
    plans: list[cp.Plan] = []
    seconds: dict[str, float] = {}          # planted name (first run) -> its run time
    hidden_secs = 0.0
    for place in ("before", "after"):
        worker.reset()
        try:
            worker.dirty |= set(files)
            plan = cp.plant(worker.tree, f2p, candidates, rename=True,
                             rng=random.Random(seed), place=place)
            run = worker.runner.run(files or sorted(f2p), timeout=timeout,
                                    extra_args=["--tb=line", "--continue-on-collection-errors"])
        finally:
            worker.reset()
        cal.seconds = max(cal.seconds, run.test_seconds)
        if run.timed_out:
            cal.note = "the gold run timed out"
            return "timeout"
        real = {plan.original_id(n): o for n, o in run.outcomes.items() if plan.copy_of(n) is None}
        cal.unstable |= {t for t in f2p if t not in real}
        broken = [t for t in must_pass - cal.unstable if real.get(t) != "passed"]
        if broken:
            # The copies or the new names changed what the real tests do (module
            # state, name order): no renaming and no copies rather than a grade
            # that depends on chance.
            cal.note = f"tests did not all pass renamed beside the copies (e.g. {broken[0]})"
            return BROKEN
        prof: dict[str, dict[str, str]] = {name: {} for name in plan.copies}
        for nid, outcome in run.outcomes.items():
            hit = plan.copy_of(nid)
            if hit is not None:
                prof[hit[0]][hit[1]] = outcome
        if not plans:
            for nid, secs in run.durations.items():
                hit = plan.copy_of(nid)
                if hit is not None:
                    seconds[hit[0]] = seconds.get(hit[0], 0.0) + secs
                elif plan.original_id(nid) in f2p:
                    hidden_secs += secs
        profiles.append(prof)
        plans.append(plan)
    return profiles, plans, seconds, hidden_secs


def _state_setters(root: Path, candidates: list) -> set[tuple[str, tuple[str, ...], str]]:
    """(file, classes, function) of the candidates' tests that set state a
    test after them would see: an attribute of an imported module
    (`simpleeval.MAX_POWER = 100`), or a global."""
    out: set[tuple[str, tuple[str, ...], str]] = set()
    for file in sorted({m.file for m in candidates}):
        try:
            tree = parse_python((root / file).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
            continue
        modules = cp._imported(tree)
        for m in candidates:
            if m.file != file:
                continue
            key = (m.file, tuple(m.cls), m.func)
            fn = cp.find_def(tree, TestRef(m.file, tuple(m.cls), m.func))
            if key not in out and fn is not None and copy_raises.sets_state(fn, modules):
                out.add(key)
    return out


def kept_outcomes(m: cp.TestCopy, a: Mapping[str, str], b: Mapping[str, str]) -> bool:
    """Whether a copy stays, given the gold's outcomes for it in the two runs
    (planted before and after its original): the same both times, each a pass
    or a failure, and a failure somewhere for a must-fail copy. A near twin
    of an input (copy_raises.fresh_copies) keeps whichever outcome the gold
    gave; a twin of an input a test shows accepted, only the gold's
    acceptance (its test then fails: no raise where one was expected); a
    twin of a block's traded input (copy_raises.traded_copies), only the
    outcome its input has, so twins of the raising and the accepted inputs
    ask only what the tests already fix; a twin two reshapes away or moved
    along a scale (copy_raises.TwinKind), only the gold's rejection: one the
    gold accepts asks what no test does (".23" from "1.2.3", which a strict
    honest parser refuses)."""
    if not (a == b and a and all(o in ("passed", "failed") for o in a.values())):
        return False
    if m.valued:                # the gold takes the twin: its value is kept at the capture run
        return all(o == "passed" for o in a.values())
    if m.traded:                # decided as its input is: accepted, or raising (its test passes)
        return "failed" in a.values() if m.fresh_accepted else all(o == "passed" for o in a.values())
    if m.twin_kind in ("twice", "scaled"):     # far from its input: only a rejection the gold makes
        return all(o == "passed" for o in a.values())
    if m.fresh and not m.fresh_accepted:
        return True
    return "failed" in a.values()


def verify_timeout(measured: float) -> float:
    """A verify's time limit from the task's measured graded run: generous for a
    loaded machine, far below the flat default for a fast suite."""
    return float(min(MAX_TIMEOUT, max(MIN_TIMEOUT, math.ceil(5 * measured + 20))))


def _definitions(root: Path, names: set[str]) -> dict[tuple[str, str], dict[str, str]]:
    """(enclosing class or "", function) -> {ast dump: file} for test functions
    named in `names`, anywhere in the Python files under `root`."""
    out: dict[tuple[str, str], dict[str, str]] = {}
    for path in sorted(root.rglob("*.py")):
        if ".git" in path.parts:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if not any(n in text for n in names):
            continue
        try:
            tree = parse_python(text)
        except (SyntaxError, ValueError):
            continue
        rel = path.relative_to(root).as_posix()

        def visit(body, cls: str, rel: str = rel) -> None:
            for node in body:
                if isinstance(node, ast.ClassDef):
                    visit(node.body, node.name, rel)
                elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in names:
                    out.setdefault((cls, node.name), {})[ast.dump(node)] = rel
        visit(tree.body, "")
    return out


def visible_hidden_tests(task_dir: Path, f2p: list[str]) -> list[str]:
    """Hidden tests whose definition is still in the workspace: a test module
    that pytest collected them through (lark's tests/__main__.py imports its
    test classes) lost the import, but the module that defines them stayed."""
    refs = {r for r in map(cp.test_ref, f2p) if r is not None}
    names = {r.func for r in refs}
    if not names:
        return []
    original = _definitions(task_dir / "hidden", names)
    shown = _definitions(task_dir / "workspace", names)
    out = []
    for r in sorted(refs, key=lambda r: (r.file, r.cls, r.func)):
        key = (r.cls[-1] if r.cls else "", r.func)
        # Its own definition: in its own file when that file defines it (a kept
        # `test_format` of another hidden file is not it), else any (lark's case).
        mine = {d: rel for d, rel in original.get(key, {}).items() if rel == r.file}
        for dump in mine or original.get(key, {}):
            if dump in shown.get(key, {}):
                out.append(f"{r.file}::{'::'.join([*r.cls, r.func])} is defined in "
                           f"workspace/{shown[key][dump]}")
                break
    return out


def _uncopied(rec: dict) -> set[str]:
    """Graded ids of a task record whose test function has no value copy."""
    copied = cp.protected_tests(cp.TestCopy.model_validate(m) for m in rec.get("grading", {}).get("copies", []))
    return {t for t in rec["FAIL_TO_PASS"]
            if (r := cp.test_ref(t)) is None or (r.file, r.cls, r.func) not in copied}


def set_grading(task_dir: Path, **fields) -> None:
    """Set fields of task.json's grading plan (the task directory is not yet published)."""
    tj = task_dir / "task.json"
    data = json.loads(tj.read_text())
    data.setdefault("grading", {}).update(fields)
    tj.write_text(json.dumps(data, indent=2) + "\n")


def final_check(task_dir: Path) -> None:
    """verify --gold must score 1 and --empty 0 on the finished task directory,
    and no hidden test may be defined in the workspace. Records the gold's own
    heuristic findings as exempt. Raises GradeCheckError."""
    from taskforge.grade.verify import Defences, Solution, capture_shapes, has_built, sealed_ids, shown_ids, verify

    rec = json.loads((task_dir / "task.json").read_text())
    shown = visible_hidden_tests(task_dir, rec["FAIL_TO_PASS"])
    if shown:
        raise GradeCheckError(f"a hidden test stays readable: {shown[0]}")

    # Unbounded: the gold is ours, and every act it does must reach `allowed`
    # (w3lib's gold does 117 distinct ones: capped, the gold scored 0 as a flood).
    def gold_run():
        got = verify(task_dir, Solution.gold(), defences=Defences(policy=Policy.FLAG, bounds=False),
                     backend=GENERATION_BACKEND)
        if got.error:
            raise GradeCheckError(f"verify --gold did not run: {got.error}")
        return got

    if rec.get("grading", {}).get("sealed") and rec["grading"].get("seal_rules", 1) >= 4 and (has_built(
            task_dir / "hidden", rec["FAIL_TO_PASS"], set(rec["grading"].get("unsealed", [])))
            or any(c.get("valued") for c in rec["grading"].get("copies", []))):
        # Built expectations, and value twins' values: what the gold's run
        # builds at each is kept on the host (grade/shapes.py); the run below
        # then checks the gold against them.
        try:
            shapes = capture_shapes(task_dir, backend=GENERATION_BACKEND)
        except InfraError as exc:
            raise GradeCheckError(exc.message) from exc
        # a test a kept shape seals is protected as a literal seal protects it
        skip = set(rec["grading"].get("unsealed", []))
        sealed = sealed_ids(task_dir / "hidden", rec["FAIL_TO_PASS"], skip, shapes)
        bare = sorted(set(rec["grading"].get("unprotected", [])) - sealed)
        set_grading(task_dir, shapes=shapes, sealed_graded=len(sealed), unprotected=bare,
                    protected=len(rec["FAIL_TO_PASS"]) - len(bare))
        rec = json.loads((task_dir / "task.json").read_text())
    gold = gold_run()
    if gold.reward != 1.0 and gold.f2p_failures and rec.get("grading", {}).get("sealed"):
        # The gold's value at a sealed site is not plain data (an object compared
        # with a literal by its own __eq__): those test functions stay unsealed,
        # every row of them (the red team of 2026-12-05 found the other rows of
        # a half-failing table still counted as sealed).
        funcs = {(r.file, r.cls, r.func) for r in map(cp.test_ref, gold.f2p_failures) if r is not None}
        off = sorted(t for t in rec["FAIL_TO_PASS"]
                     if (r := cp.test_ref(t)) is not None and (r.file, r.cls, r.func) in funcs)
        left = set(rec["grading"].get("unprotected", [])) | (_uncopied(rec) & set(off))
        set_grading(task_dir, unsealed=off, unprotected=sorted(left),
                    protected=len(rec["FAIL_TO_PASS"]) - len(left),
                    answers_shown=sorted(shown_ids(task_dir / "hidden", rec["FAIL_TO_PASS"], set(off),
                                                   rec["grading"].get("shapes"))),
                    sealed_graded=len(sealed_ids(task_dir / "hidden", rec["FAIL_TO_PASS"], set(off),
                                                 rec["grading"].get("shapes"))))
        gold = gold_run()
    if gold.reward != 1.0 and rec.get("grading", {}).get("sealed"):
        # Still not 1 (a copy's ids pytest numbered apart, say): graded as
        # before seals, rather than lose the task.
        left = _uncopied(rec)
        set_grading(task_dir, sealed=False, unsealed=[], sealed_graded=0, answers_shown=[], unprotected=sorted(left),
                    protected=len(rec["FAIL_TO_PASS"]) - len(left))
        gold = gold_run()
    if gold.reward != 1.0:
        why = [f.text() for f in gold.findings if f.severity is Severity.FATAL][:2]
        fails = (gold.f2p_failures + gold.p2p_regressions)[:2]
        raise GradeCheckError(f"verify --gold scores {gold.reward}: "
                              + "; ".join(why + [f"{t} {o.outcome}" for t in fails
                                                 for o in gold.tests if o.nodeid == t][:3]))
    allowed = sorted({(f.kind.value, f.site.rsplit(":", 1)[0]) for f in gold.findings
                      if f.source in (Source.STATIC, Source.MONITOR)
                      and f.severity is not Severity.INFO and f.site})
    if allowed:
        set_grading(task_dir, allowed=[list(a) for a in allowed])
    # Only the hidden tests' files: whether they fail is all this asks (the
    # rest of the suite was green on the stripped tree, and the gold's verify
    # above ran it under the grader).
    empty = verify(task_dir, Solution.empty(), backend=GENERATION_BACKEND, hidden_only=True)
    if empty.error:
        raise GradeCheckError(f"verify --empty did not run: {empty.error}")
    if not empty.f2p_failures:
        raise GradeCheckError("verify --empty scores 1: the hidden tests do not need the feature")
