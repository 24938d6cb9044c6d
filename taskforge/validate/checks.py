"""Validate a candidate removal for real, in a warm sandbox.

Per candidate, on its exact tree, B first (it is short):
  B. with the hidden tests restored on the stripped source they all fail;
  A. the stripped workspace collects and every remaining baseline test passes;
  C. with the original code restored they all pass (the gold patch): the gold
     tree is the baseline tree, which passed twice, so C costs no run.
Hidden tests that B shows still pass leave the hidden set before A runs; tests
that A shows depend on the feature join it, and A runs again (B only for the
newcomers: its tree does not change). Every accepted task had its own trees
run, never a neighbour's.
"""
from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from taskforge.analysis.symbols import RepoIndex
from taskforge.analysis.testindex import TestModule, split_nodeid
from taskforge.errors import UserError
from taskforge.fsutil import copy_tree, share_with_sandbox
from taskforge.grade.testrun import OUT_IN_SANDBOX, PytestRunner, runner_mount
from taskforge.models import Removal, Stage
from taskforge.propose.features import Candidate
from taskforge.remove.transform import branch_source, hollow_source, remove_source, strip_tests
from taskforge.sandbox import GENERATION_BACKEND, Limits, Mount, SandboxSpec, open_sandbox

MAX_ROUNDS = 3


@dataclass
class RunArgs:
    """How this repository's tests are run: pytest options for every run, paths
    for whole-suite runs, extra environment."""
    options: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class Context:
    """What every validation needs, shared read-only between workers."""
    src: Path                                # pristine tree of the source commit
    index: RepoIndex
    tests: dict[str, TestModule]
    passing: set[str]                        # P: passed in both baseline runs
    all_ids: set[str]
    by_key: dict[str, set[str]]              # "file::Class::test" -> ids (params)
    cap: int
    timeout: float
    layout: object
    run_args: RunArgs = field(default_factory=RunArgs)
    recipe: object = None                    # models.EnvironmentRecipe of the image
    _by_class: dict[str, set[str]] | None = None

    def class_ids(self, file: str, cls: str) -> set[str]:
        """Every collected id of test class `cls` in `file` (inherited tests included)."""
        if self._by_class is None:
            by: dict[str, set[str]] = {}
            for nid in self.all_ids:
                f, path = split_nodeid(nid)
                if len(path) >= 2:
                    by.setdefault(f"{f}::{path[0]}", set()).add(nid)
            self._by_class = by
        return self._by_class.get(f"{file}::{cls}", set())


@dataclass
class Verdict:
    candidate: Candidate
    ok: bool
    stage: Stage                             # the first stage not passed (TASKS when ok)
    reason: str = ""
    hidden: set[str] = field(default_factory=set)
    source_changes: dict[str, str | None] = field(default_factory=dict)
    test_changes: dict[str, str | None] = field(default_factory=dict)
    exported: set[tuple[str, str]] = field(default_factory=set)
    removed_lines: int = 0
    seconds: dict[str, float] = field(default_factory=dict)
    test_seconds_total: float = 0.0          # every run, accepted or not
    rounds: int = 0
    resumed: bool = False                    # written by an earlier, interrupted run
    vanished: set[str] = field(default_factory=set)   # doctests that lived in removed code
    # BRANCH: cases of a hidden test function that pass without the arm (its
    # other rows take other paths): hidden with their function, graded as
    # PASS_TO_PASS, not FAIL_TO_PASS
    passing_hidden: set[str] = field(default_factory=set)


class TreeCopy:
    """A private copy of the source tree, edited and put back file by file."""

    def __init__(self, src: Path, scratch: Path, n: int):
        self.src = src
        self.tree = scratch / f"tree{n}"
        copy_tree(src, self.tree)
        self.dirty: set[str] = set()

    def apply(self, changes: dict[str, str | None]) -> None:
        for rel, content in changes.items():
            p = self.tree / rel
            self.dirty.add(rel)
            if content is None:
                p.unlink(missing_ok=True)
            else:
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_text(content, encoding="utf-8")

    def reset(self) -> None:
        for rel in self.dirty:
            orig, p = self.src / rel, self.tree / rel
            if orig.exists():
                shutil.copy2(orig, p)
            else:
                p.unlink(missing_ok=True)
        self.dirty.clear()

    def edits(self) -> dict[str, str | None]:
        """Every file edited since the last reset, as it now is (None: gone)."""
        out: dict[str, str | None] = {}
        for rel in sorted(self.dirty):
            p = self.tree / rel
            out[rel] = p.read_text(encoding="utf-8") if p.is_file() else None
        return out


class Worker(TreeCopy):
    """One warm sandbox over one private copy of the source tree."""

    def __init__(self, src: Path, image: str, scratch: Path, n: int, limits: Limits | None = None,
                 run_args: "RunArgs | None" = None):
        super().__init__(src, scratch, n)
        self.out = scratch / f"out{n}"
        self.out.mkdir(parents=True, exist_ok=True)
        share_with_sandbox(self.tree)
        share_with_sandbox(self.out)
        spec = SandboxSpec(image=image, mounts=[Mount(host=str(self.tree), container="/workspace"),
                                               Mount(host=str(self.out), container=OUT_IN_SANDBOX),
                                               runner_mount()],
                           limits=limits or Limits(), labels={"taskforge.role": "generate"})
        self.sandbox = open_sandbox(spec, GENERATION_BACKEND)
        ra = run_args or RunArgs()
        self.runner = PytestRunner(self.sandbox, self.out, ra.options, ra.paths, ra.env)

    def close(self) -> None:
        self.sandbox.close()


def expand(ctx: Context, ids: set[str]) -> set[str]:
    """Whole test functions: every parametrization of a hidden test goes with it."""
    out = set()
    for nid in ids:
        f, path = split_nodeid(nid)
        out |= ctx.by_key.get(f + "::" + "::".join(path), {nid})
    return out


def plan_tests(ctx: Context, hidden: set[str], hidden_files: set[str],
               exported: set[tuple[str, str]]) -> tuple[dict[str, str | None], set[str]]:
    """Test-file changes for a hidden set; returns (changes, ids removed from the tree)."""
    per_file: dict[str, set[tuple[str, ...]]] = {}
    for nid in hidden:
        f, path = split_nodeid(nid)
        if path:
            per_file.setdefault(f, set()).add(path)
            # A class whose every test is hidden goes whole: its body may name the
            # feature (`DECORATOR = staticmethod(mod.removed)`) and its tests may be
            # inherited, so there is no method to take out.
            if len(path) >= 2 and ctx.class_ids(f, path[0]) <= hidden:
                per_file[f].add(path[:1])
    changes: dict[str, str | None] = {}
    gone: set[str] = set()
    for rel, tm in ctx.tests.items():
        if rel in hidden_files:
            changes[rel] = None
        elif rel in per_file or any(b.name and (b.module, b.name) in exported for b in tm.bindings):
            if tm.unparsable:
                raise UserError(f"hidden tests in {rel}, which cannot be edited here: "
                                f"{tm.unparsable}")
            code = (ctx.src / rel).read_text(encoding="utf-8")
            new, changed = strip_tests(tm, code, per_file.get(rel, set()), exported)
            if changed:
                changes[rel] = new
        if rel in changes and changes[rel] is None:
            gone |= ctx.by_key.get(rel, set())
    return changes, gone


def vanished_doctests(ctx: Context, cand: Candidate, changes: dict[str, str | None]) -> set[str]:
    """Doctest items (`pkg/mod.py::pkg.mod.func`) of removed code: they go with the
    docstrings they live in, so they are neither hidden tests nor remaining ones."""
    if cand.removal is not Removal.DEFINITIONS:
        return set()                    # the docstring stays, and its examples with it
    names = [s.qualname for s in cand.symbols]
    out = set()
    for nid in ctx.all_ids:
        f, _, name = nid.partition("::")
        if f in ctx.tests or f not in changes:
            continue
        if changes[f] is None or any(name == q or name.startswith(q + ".") for q in names):
            out.add(nid)
    return out


def named_in_params(ctx: Context, cand: Candidate) -> set[str]:
    """Parametrized cases whose id names a removed symbol (`test_doc[max_ver]`): tests
    parametrized over the package's own names lose that case with the symbol."""
    if cand.removal is not Removal.DEFINITIONS:
        return set()                    # every name stays
    # Top-level names only: a method name (`copy`, `get`) in an id is a coincidence.
    names = {s.name for s in cand.symbols if len(s.name) >= 3 and s.kind in ("function", "class")}
    if not names:
        return set()
    pat = re.compile(r"(?<![A-Za-z0-9_])(?:%s)(?![A-Za-z0-9_])" % "|".join(map(re.escape, names)))
    return {nid for nid in ctx.passing if "[" in nid and pat.search(nid[nid.index("["):])}


def validate(worker: Worker, ctx: Context, cand: Candidate) -> Verdict:
    """B before A: the hidden tests on the stripped source are a short run that says
    which of them really need the feature; A, the whole remaining suite, then runs
    once on the final tree in the common case. B's tree (stripped source, every
    test file as shipped) is the same in every round, so each hidden test runs there
    once; A reruns only when it shows more tests depend on the feature."""
    return Validation(worker, ctx, cand).run()


class Retry(Exception):
    """A round ended with more tests hidden (or test files to strip): run again."""


class Validation:
    """One candidate's rounds on its own tree; each step may turn it down by
    returning with `v.reason` set, or ask for another round (Retry)."""

    def __init__(self, worker: Worker, ctx: Context, cand: Candidate):
        self.worker, self.ctx, self.cand = worker, ctx, cand
        self.v = Verdict(candidate=cand, ok=False, stage=Stage.REMOVED)
        self.secs = {"remaining_suite": 0.0, "hidden_on_stripped": 0.0}
        self.on_stripped: dict[str, str] = {}    # hidden test -> outcome on the stripped source

    def run(self) -> Verdict:
        v, ctx, cand = self.v, self.ctx, self.cand
        removal = (hollow_source(ctx.index, cand.root) if cand.removal is Removal.BODY
                   else branch_source(ctx.index, cand.root, cand.arm.line)
                   if cand.removal is Removal.BRANCH and cand.arm is not None
                   else remove_source(ctx.index, cand.symbols))
        if cand.kind == "module":
            removal.changes[cand.root.path] = None       # the whole file goes
        if not removal.changes:
            v.reason = "nothing to remove"
            return v
        self.removal = removal
        v.source_changes, v.exported, v.removed_lines = (removal.changes, removal.exported,
                                                         removal.removed_lines)
        v.stage = Stage.HIDDEN_FAIL
        v.vanished = vanished_doctests(ctx, cand, removal.changes)
        self.hidden = expand(ctx, set(cand.hidden) | named_in_params(ctx, cand)) - v.vanished
        self.hidden_files = set(cand.hidden_files)
        try:
            for rnd in range(1, MAX_ROUNDS + 1):
                v.rounds = rnd
                v.stage = Stage.HIDDEN_FAIL
                test_changes = self.hidden_fail()
                if test_changes is None:
                    return v
                v.stage = Stage.REMAINING_GREEN
                try:
                    if not self.remaining_green(rnd, test_changes):
                        return v
                except Retry:
                    continue
                # Both hold on this exact tree: A just passed, and every hidden test failed
                # on the stripped source (a branch's: every one but passing_hidden).
                # C, the gold patch, needs no run of its own: workspace + gold + hidden tests
                # is the source tree (less caches, bytecode and doc lines that quoted the
                # feature), and the baseline ran the whole suite, as verify does, on that
                # tree twice with every one of these tests passing.
                v.stage = Stage.COPIES          # the next stage: orchestrate/settle goes on
                v.ok = True
                v.hidden = self.hidden
                v.test_changes = test_changes
                v.seconds = self.secs
                return v
            v.stage = Stage.REMAINING_GREEN
            v.reason = "did not settle in %d rounds" % MAX_ROUNDS
            return v
        finally:
            self.worker.reset()

    def run_hidden(self, targets: list[str]) -> None:
        """B's runs: each hidden test once on the stripped source."""
        v, ctx, worker = self.v, self.ctx, self.worker
        new = [t for t in targets if t not in self.on_stripped]
        if not new:
            return
        worker.reset()
        worker.apply(self.removal.changes)
        # These are meant to fail: one line per failure, not a traceback.
        b = worker.runner.run(new, timeout=ctx.timeout,
                              extra_args=["--continue-on-collection-errors", "--tb=line"])
        v.test_seconds_total += b.test_seconds
        if not self.on_stripped:     # necessary: one run of the hidden tests (later top-ups
            self.secs["hidden_on_stripped"] = b.test_seconds     # count as overhead)
        for t in new:
            self.on_stripped[t] = "timeout" if b.timed_out else b.outcomes.get(t, "missing")

    def hidden_fail(self) -> dict | None:
        """B: hidden tests restored on the stripped source; unhide whole test
        functions that pass without the feature. The test files' changes, or None
        (turned down)."""
        v, ctx = self.v, self.ctx
        v.passing_hidden = set()
        while True:
            test_changes, gone = plan_tests(ctx, self.hidden, self.hidden_files, self.removal.exported)
            self.hidden |= gone
            hidden = self.hidden
            branch = self.cand.removal is Removal.BRANCH
            # A branch's hidden rows that pass without it do not depend on it:
            # counted once the run has told them apart.
            if len(hidden & ctx.passing) > ctx.cap and not branch:
                v.reason = f"too central: {len(hidden & ctx.passing)} passing tests depend on it"
                return None
            targets = sorted((hidden & ctx.passing) - v.vanished)
            self.run_hidden(targets)
            still = {t for t in targets if self.on_stripped[t] == "passed"}
            if branch and len(hidden & ctx.passing - still) > ctx.cap:
                v.reason = f"too central: {len(hidden & ctx.passing - still)} passing tests depend on it"
                return None
            if not still:
                return test_changes
            keep_out = {t for t in still if expand(ctx, {t}) <= still}
            if self.cand.removal is Removal.BRANCH and len(still) < len(targets):
                if keep_out & hidden - gone:
                    self.hidden -= keep_out
                    continue
                # What is left passing shares a test function with cases that
                # fail: a table of inputs of which some take the arm.
                v.passing_hidden = still
                return test_changes
            if not keep_out or len(keep_out) == len(targets) or not keep_out & hidden - gone:
                v.reason = (f"hidden tests still pass without the feature: "
                            f"{len(still)} of {len(targets)}, e.g. {sorted(still)[0]}")
                return None
            self.hidden -= keep_out

    def remaining_green(self, rnd: int, test_changes: dict) -> bool:
        """A: the stripped workspace, hidden tests out, collects and passes. False:
        turned down; Retry: more tests depend on the feature, run the round again."""
        v, ctx, worker, hidden = self.v, self.ctx, self.worker, self.hidden
        worker.reset()
        worker.apply({**self.removal.changes, **test_changes})
        # Past this many failures the candidate is too central anyway: stop the run
        # there (a suite that fails everywhere is slow to run to the end).
        budget = ctx.cap - len(hidden & ctx.passing - v.passing_hidden) + 1 + len(ctx.all_ids - ctx.passing)
        a = worker.runner.run([], timeout=ctx.timeout,
                              extra_args=[f"--maxfail={budget}", "--tb=line"])
        v.test_seconds_total += a.test_seconds
        self.secs["remaining_suite"] = a.test_seconds
        if a.timed_out:
            v.reason = "remaining suite timed out"
            return False
        if a.collect_errors:
            bad = {k.split("::")[0] for k in a.collect_errors}
            non_test = [b for b in bad if b not in ctx.tests or b.endswith("conftest.py") or not b]
            if non_test or rnd == MAX_ROUNDS:
                first = next(iter(sorted(a.collect_errors.items())))
                v.reason = f"stripped tree does not collect: {first[0] or '<session>'}: {first[1]}"
                return False
            self.hidden_files |= bad
            raise Retry
        expected = ctx.passing - hidden - v.vanished
        failing = {t for t in expected if a.outcomes.get(t) != "passed"}
        if failing:
            if rnd == MAX_ROUNDS or len((hidden | failing) & ctx.passing - v.passing_hidden) > ctx.cap:
                ex = sorted(failing)[0]
                v.reason = (f"remaining suite red: {len(failing)} test(s) fail without the "
                            f"feature, e.g. {ex} ({a.outcomes.get(ex, 'missing')})")
                return False
            self.hidden |= expand(ctx, failing) - v.vanished
            raise Retry
        return True
