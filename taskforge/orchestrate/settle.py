"""Settling one candidate: validate the removal, then grade plan, statement,
adequacy and leak check, and write the task at once (or journal why not).

Each step is a method that may turn the verdict down with a stage and a reason;
the first that does stops the rest. `generate` runs `Settler.settle` on many
candidates in parallel workers and `Settler.earlier` to resume a run.
"""
from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from taskforge import __version__
from taskforge.analysis.coverage_map import CoverageMap
from taskforge.errors import TaskforgeError, UserError
from taskforge.grade.mutants import test_ref
from taskforge.grade.pool import GradeCheckError, Pool, build_pool, final_check, verify_timeout
from taskforge.leaks.audit import LeakError, leak_checker
from taskforge.models import (
    Adequacy,
    FeatureInfo,
    FeatureKind,
    GradingPlan,
    RemovedSymbol,
    Stage,
    TaskRecord,
    TaskSizes,
    TaskTimings,
)
from taskforge.orchestrate.options import Options
from taskforge.orchestrate.state import RunState, VerdictState
from taskforge.package.statement import Underspecified, doc_pointers, problem_statement, required_strings
from taskforge.package.store import load_task
from taskforge.package.writer import task_id, write_task
from taskforge.propose.difficulty import rate, statements_in
from taskforge.validate import adequacy
from taskforge.validate.checks import Context, Verdict, Worker, validate

GLUE_STATEMENTS = 5     # a definition of fewer statements is glue: it may go ungraded


@dataclass
class Settled:
    """What the steps after validation hand on, for one candidate."""
    tid: str
    pool: Pool | None = None
    graded: list[str] = field(default_factory=list)     # hidden ids that grade
    required: list[str] = field(default_factory=list)   # exact strings the statement lists
    docs: list[str] = field(default_factory=list)
    adequacy: Adequacy | None = None


@dataclass
class Settler:
    opts: Options
    ctx: Context
    cov: CoverageMap
    texts: dict[str, str]
    image_scan: Any                     # a Future of pipeline.ImageScan
    src: Any                            # repo.source.Source
    image: str
    n_flaky: int
    protected: list[str]
    state: RunState
    out_dir: Path

    @property
    def verdict_options(self) -> str:
        """A rejection journalled under other grading options is no answer for these."""
        o = self.opts
        return repr((o.require_copies, o.check_adequacy, o.keep_weak, o.min_mutation_score,
                     o.gold_mutants))

    def tid_of(self, cand) -> str:
        return task_id(self.src.name, self.src.commit, cand.name, cand.kind)

    def earlier(self, cand) -> Verdict | None:
        """The verdict an interrupted run already reached for this candidate."""
        tdir = self.out_dir / self.tid_of(cand)
        try:
            rec = load_task(tdir).record
            if rec.source_commit == self.src.commit:
                return Verdict(candidate=cand, ok=True, stage=Stage.TASKS, resumed=True,
                               seconds={"remaining_suite": rec.timings.remaining_suite,
                                        "hidden_on_stripped": rec.timings.hidden_on_stripped,
                                        "adequacy": rec.timings.adequacy})
        except TaskforgeError:
            pass
        vs = self.state.load_verdict(self.tid_of(cand), self.src.commit, self.verdict_options)
        if vs is not None:
            return Verdict(candidate=cand, ok=False, stage=vs.stage, reason=vs.reason, resumed=True)
        return None

    def settle(self, w: Worker, cand) -> Verdict:
        """Validate, then write the task at once (or journal the rejection)."""
        try:
            v = validate(w, self.ctx, cand)
        except UserError as exc:          # this candidate only: never the batch
            v = Verdict(candidate=cand, ok=False, stage=Stage.REMOVED, reason=exc.message)
        s = Settled(tid=self.tid_of(cand))
        if v.ok:
            self.grading(w, v, s)
        if v.ok:
            self.specify(v, s)
        if v.ok and self.opts.check_adequacy:
            self.check_adequacy(w, v, s)
        if v.ok:
            self.package(v, s)
        if not v.ok:
            self.state.save_verdict(s.tid, VerdictState(
                options=self.verdict_options, candidate=cand.name, kind=cand.kind,
                source_commit=self.src.commit, stage=v.stage, reason=v.reason,
                test_seconds=v.test_seconds_total))
        return v

    def grading(self, w: Worker, v: Verdict, s: Settled) -> None:
        """The mutant pool on the gold; which hidden tests can grade; every tested
        public definition keeps a graded test."""
        ctx, cand, opts = self.ctx, v.candidate, self.opts
        f2p = sorted(v.hidden & ctx.passing)
        pool = build_pool(w, f2p, seed=s.tid, timeout=ctx.timeout,
                          passing=ctx.passing - v.hidden - v.vanished | set(f2p))
        s.pool = pool
        v.test_seconds_total += pool.seconds
        uncovered = uncopied(f2p, pool)
        if not set(f2p) - pool.unstable:
            v.ok = False
            v.reason = ("every hidden test id changes between runs" if f2p else
                        "no hidden test left: they lived in the removed code")
            return
        if opts.require_copies and uncovered:
            # A hidden test with no copy could be forged: it leaves the grading
            # (like an unstable id) and the rest must still constrain the feature.
            bad = set(uncovered)
            pool.uncopied = {t for t in f2p if t.partition("[")[0] in bad}
            if not set(f2p) - pool.unstable - pool.uncopied:
                v.ok = False
                v.reason = (f"hidden tests without must-fail copies: all {len(uncovered)}"
                            f", e.g. {uncovered[0]}"
                            + (f" ({pool.note})" if pool.note else ""))
            # Their other copies (negated assertions) would grade them after all.
            kept_fns = {(r.file, tuple(r.cls), r.func) for r in map(
                test_ref, set(f2p) - pool.uncopied) if r}
            pool.mutants = [m for m in pool.mutants
                            if (m.file, tuple(m.cls), m.func) in kept_fns]
        if not v.ok:
            return
        # Every tested public definition keeps a graded test: excluding the
        # uncopied ones must not leave part of the feature ungraded.
        # Glue (a wrapper of a few statements, like semver's `__main__.main`
        # over `cli.main`, often the entry point) may go ungraded.
        s.graded = sorted(set(f2p) - pool.unstable - pool.uncopied)
        testers = {sym.qualname: self.cov.tests_for(sym.path, sym.body_lines)
                   for sym in cand.symbols if sym.public and sym.kind != "module"
                   and statements_in(ctx.index.modules[sym.module].code, sym.start,
                                     sym.end) >= GLUE_STATEMENTS}
        kept = set(s.graded)
        bare = [q for q, t in testers.items() if t & v.hidden and not t & kept]
        if bare:
            v.ok = False
            v.reason = (f"no graded hidden test exercises {bare[0]} "
                        f"(its tests have no must-fail copies)")

    def specify(self, v: Verdict, s: Settled) -> None:
        """The exact strings the hidden tests require, stated; doc pointers."""
        v.stage = Stage.SPECIFIED
        ws = _workspace_files(self.texts, v.source_changes, v.test_changes)
        try:
            s.required = required_strings(self.src.path, s.graded, "\n".join(ws.values()))
        except Underspecified as exc:
            v.ok, v.reason = False, str(exc)
        s.docs = doc_pointers(ws, sorted({sym.name for sym in v.candidate.symbols if sym.public}))

    def check_adequacy(self, w: Worker, v: Verdict, s: Settled) -> None:
        """Stand-ins that do no work must fail; gold mutants must mostly die."""
        opts, cand = self.opts, v.candidate
        assert s.pool is not None
        v.stage = Stage.CONSTRAINED
        f2p = s.graded
        # From the gold's own run time: a stand-in or mutant that runs past it hangs.
        limit = min(self.ctx.timeout, max(20.0, 5 * s.pool.seconds + 15))
        adq, spent = adequacy.check(w, f2p, cand.symbols,
                                    cand.root.module if cand.kind == FeatureKind.MODULE else None,
                                    seed=s.tid, timeout=limit, mutants=opts.gold_mutants,
                                    constants=s.required)
        s.adequacy = adq
        v.test_seconds_total += spent
        v.seconds["adequacy"] = spent
        if adq.standins_passing_all:
            v.ok = False
            v.reason = (f"hidden tests do not constrain it: a stand-in that does no work "
                        f"({adq.standins_passing_all[0]}) passes all {len(f2p)}")
        elif (adq.mutation_score is not None and adq.mutation_score < opts.min_mutation_score
              and not opts.keep_weak):
            v.ok = False
            v.reason = (f"hidden tests do not constrain it: mutation score "
                        f"{adq.mutation_score:.2f} ({adq.mutants_killed} of {adq.mutants} "
                        f"gold mutants killed; minimum {opts.min_mutation_score})")

    def package(self, v: Verdict, s: Settled) -> None:
        """Leak check, write the task, and grade the finished directory (final check)."""
        assert s.pool is not None
        cand = v.candidate
        v.stage = Stage.LEAK_FREE
        try:
            scan = self.image_scan.result()
            record_fn = _record_builder(s.tid, self.src, self.image, v, self.ctx, self.n_flaky,
                                        self.protected, s.pool, s.adequacy, s.required, s.docs)
            check = leak_checker(self.src.path, cand.symbols, sorted(v.hidden & self.ctx.passing),
                                 scan.hits(self.src.path, cand.symbols))
            write_task(self.out_dir, s.tid, self.src.path, v.source_changes, v.test_changes,
                       self.protected, record_fn, leak_check=check, final_check=final_check)
        except LeakError as exc:
            v.ok = False
            v.reason = f"leaks the removed code: {exc}"
        except GradeCheckError as exc:
            v.ok, v.stage = False, Stage.GOLD
            v.reason = str(exc)
        else:
            v.stage = Stage.TASKS


def _workspace_files(texts: dict[str, str], *changes: dict[str, str | None]) -> dict[str, str]:
    """The text files of the workspace the agent gets: the repository with the removal
    (source and hidden tests) applied."""
    merged = dict(texts)
    for ch in changes:
        for rel, content in ch.items():
            if content is None:
                merged.pop(rel, None)
            else:
                merged[rel] = content
    return merged


def uncopied(f2p: list[str], pool: Pool) -> list[str]:
    """Hidden test functions (doctests and other items too) with no value copy."""
    covered = {(m.file, tuple(m.cls), m.func) for m in pool.mutants if m.kind == "value"}
    out = []
    for nid in f2p:
        if nid in pool.unstable:
            continue
        ref = test_ref(nid)
        key = (ref.file, ref.cls, ref.func) if ref else None
        if key not in covered:
            out.append(nid.partition("[")[0])
    return sorted(set(out))


def _record_builder(tid, src, image, v: Verdict, ctx: Context, n_flaky: int,
                    protected: list[str], pool: Pool, adq=None, required=(), docs=()):
    cand = v.candidate
    f2p = sorted(v.hidden & ctx.passing - pool.unstable - pool.uncopied)
    measured = v.seconds.get("remaining_suite", 0.0) + pool.seconds
    grading = GradingPlan(
        mutants=pool.mutants, rename=pool.rename, timeout=verify_timeout(measured),
        measured_seconds=round(measured, 3),
        # Negated copies stop blind forgers only: not counted as protection.
        hidden_with_mutant=len({(m.file, tuple(m.cls), m.func) for m in pool.mutants
                                if m.kind == "value"}),
        hidden_functions=len({(r.file, tuple(r.cls), r.func) for r in map(test_ref, f2p) if r}),
        unstable_excluded=len(pool.unstable), uncopied_excluded=len(pool.uncopied),
        plant_seed=secrets.token_hex(16))
    p2p = sorted(ctx.passing - v.hidden - v.vanished)
    own = {s.qualname for s in cand.symbols}
    exports = sorted(f"{m}.{n}" for (m, n) in v.exported      # re-exports of removed names
                     if f"{m}.{n}" not in own and not n.startswith("_"))
    touched = sorted(v.source_changes)
    statement = problem_statement(src.name, cand.root, cand.symbols, exports, touched, len(f2p),
                                  kind=cand.kind, required=list(required), docs=list(docs))
    difficulty = rate(cand.difficulty.model_copy(update={"hidden_tests": len(f2p)}))
    symbols = [RemovedSymbol(qualname=s.qualname, kind=s.kind, path=s.path, start_line=s.start,
                             end_line=s.end, signature=s.signature, public=s.public,
                             module=s.module)
               for s in cand.symbols]
    hidden_files = sorted(v.test_changes)

    def build(base_commit, patch, test_patch, workspace_files):
        return TaskRecord(
            instance_id=tid, repo=src.origin or src.repo, base_commit=base_commit, source_commit=src.commit,
            environment_setup_commit=src.commit, created_at=src.commit_date,
            patch=patch, test_patch=test_patch, problem_statement=statement,
            FAIL_TO_PASS=f2p, PASS_TO_PASS=p2p, image_name=image, environment=ctx.recipe,
            feature=FeatureInfo(kind=cand.kind, name=cand.name, symbols=symbols,
                                touched_files=touched),
            hidden_test_files=hidden_files,
            protected_files=protected,
            test_command=["python", "-m", "pytest", "-p", "no:cacheprovider",
                          *ctx.run_args.options, *ctx.run_args.paths],
            test_options=ctx.run_args.options, test_paths=ctx.run_args.paths,
            test_env=ctx.run_args.env,
            flaky_excluded=n_flaky,
            sizes=TaskSizes(removed_lines=v.removed_lines, removed_symbols=len(cand.symbols),
                            hidden_tests=len(f2p), remaining_tests=len(p2p),
                            workspace_files=workspace_files),
            timings=TaskTimings(rounds=v.rounds, **{k: round(x, 3) for k, x in v.seconds.items()}),
            taskforge_version=__version__, grading=grading, difficulty=difficulty,
            **({"adequacy": adq} if adq is not None else {}))
    return build
