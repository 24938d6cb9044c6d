"""Settling one candidate: validate the removal, then grade plan, statement,
adequacy and leak check, and write the task at once (or journal why not).

Each step is a method that may turn the verdict down with a stage and a reason;
the first that does stops the rest. `generate` runs `Settler.settle` on many
candidates in parallel workers and `Settler.earlier` to resume a run.
"""
from __future__ import annotations

import ast
import functools
import secrets
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from taskforge import __version__
from taskforge.analysis.coverage_map import CoverageMap
from taskforge.analysis.pyparse import parse as parse_python
from taskforge.errors import TaskforgeError, UserError
from taskforge.grade.calibrate import Calibration, GradeCheckError, calibrate, final_check, verify_timeout
from taskforge.grade.copies import protected_tests, test_ref, value_protected
from taskforge.grade.seals import SEAL_RULES
from taskforge.grade.verify import sealed_ids, shown_ids
from taskforge.leaks.audit import LeakError, leak_checker
from taskforge.models import (
    SCHEMA_VERSION,
    Adequacy,
    Contamination,
    FeatureInfo,
    FeatureKind,
    GradingPlan,
    Removal,
    RemovedSymbol,
    Stage,
    StatementStyle,
    SymbolCoverage,
    TaskRecord,
    TaskSizes,
    TaskTimings,
)
from taskforge.orchestrate.options import Options
from taskforge.orchestrate.state import RunState, VerdictState
from taskforge.package.statement import (
    REQUIRED_PER_LINES,
    Underspecified,
    checked_behaviours,
    collaborator_methods,
    doc_pointers,
    first_changed_line,
    problem_statement,
    required_limit,
    required_strings,
    told_in_full,
)
from taskforge.package.store import load_task
from taskforge.package.writer import task_id, write_task
from taskforge.propose import recall
from taskforge.propose.branches import Arm, condition
from taskforge.propose.difficulty import rate, snippet
from taskforge.propose.features import thin_wrappers
from taskforge.repo.blame import Blame, no_history, span_times
from taskforge.validate import adequacy
from taskforge.validate.checks import Context, Verdict, Worker, validate

# Rejections journalled under another grading scheme are no answer for this one
# (2: issue 24, every hidden test graded, partial solutions must fail).
GRADING_SCHEME = 2


@dataclass
class Settled:
    """What the steps after validation hand on, for one candidate."""
    tid: str
    calibration: Calibration | None = None
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
    _blame: Blame | None = None
    # Set when the run stops (Ctrl-C, SIGTERM) before the workers' sandboxes are
    # closed under the checks in flight: what those checks conclude from then
    # on is the stop's doing, so it is neither journaled nor written.
    stop: threading.Event = field(default_factory=threading.Event)
    _blame_read: bool = False
    _blame_lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def blame(self) -> Blame | None:
        """Line dates of the source, or None where they would say nothing
        (a shallow clone, one commit). Candidates settle in threads: the lock
        keeps a second thread from reading None while the first still asks git."""
        with self._blame_lock:
            if not self._blame_read:
                self._blame = None if no_history(self.src.path) else Blame(self.src.path)
                self._blame_read = True
        return self._blame

    @property
    def verdict_options(self) -> str:
        """A rejection journalled under other grading options is no answer for these."""
        o = self.opts
        return repr((o.require_copies, o.check_adequacy, o.keep_weak, o.min_mutation_score,
                     o.gold_mutants, GRADING_SCHEME, required_limit(0), REQUIRED_PER_LINES))

    def tid_of(self, cand) -> str:
        kind = cand.kind if cand.removal is Removal.DEFINITIONS else f"{cand.kind}:{cand.removal}"
        return task_id(self.src.name, self.src.commit, cand.name, kind)

    def earlier(self, cand) -> Verdict | None:
        """The verdict an interrupted run already reached for this candidate."""
        tdir = self.out_dir / self.tid_of(cand)
        try:
            rec = load_task(tdir).record
            # A task written under another statement style, or rated by other tier
            # rules, is written again.
            if (rec.source_commit == self.src.commit and rec.schema_version == SCHEMA_VERSION
                    and rec.contamination.statement_style == self.opts.statement_style
                    and rate(rec.difficulty.model_copy()).tier == rec.difficulty.tier):
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
        if self.stop.is_set():
            raise Stopped(cand.name)
        if not v.ok:
            self.state.save_verdict(s.tid, VerdictState(
                options=self.verdict_options, candidate=cand.name, kind=cand.kind,
                source_commit=self.src.commit, stage=v.stage, reason=v.reason,
                test_seconds=v.test_seconds_total))
        return v

    def grading(self, w: Worker, v: Verdict, s: Settled) -> None:
        """The must-fail copies on the gold; every stable hidden test grades.

        Every hidden test that exercises the feature is graded, copies or not
        (issue 24): leaving out the tests no must-fail copy could be made for
        paid 1.0 for a `parse_isodate` that only raised (30 of its 31 tests were
        out) and for clusters with two of three functions unwritten. A hollow
        reward is certain; a forged one needs a solution that defeats the
        supervisor's separate uid and strict event stream, the monitor, and the
        copies of the other tests (a test without value copies keeps its
        negated ones). So the tests without copies grade, listed as
        `grading.unprotected`, and only a task none of whose tests has a copy
        is left unwritten (unless `require_copies` is off)."""
        ctx, opts = self.ctx, self.opts
        f2p = sorted(v.hidden & ctx.passing - v.passing_hidden)
        # The copies' seed is secret, never the task id: a solution that knew
        # it could run propose with each member of a group as the original and
        # keep the one that draws the planted copies.
        cal = calibrate(w, f2p, seed=f"{s.tid}:{secrets.token_hex(16)}", timeout=ctx.timeout,
                          passing=ctx.passing - v.hidden - v.vanished | set(f2p) | v.passing_hidden,
                          removed={sym.qualname.rpartition(".")[2] for sym in v.candidate.symbols})
        s.calibration = cal
        v.test_seconds_total += cal.seconds
        if not set(f2p) - cal.unstable:
            v.ok = False
            v.reason = ("every hidden test id changes between runs" if f2p else
                        "no hidden test left: they lived in the removed code")
            return
        s.graded = sorted(set(f2p) - cal.unstable)
        # A test whose literal expectations are sealed needs no copy (grade/seals.py).
        cal.sealed = sealed_ids(self.src.path, s.graded)
        cal.shown = shown_ids(self.src.path, s.graded)
        cal.uncopied = set(unprotected(s.graded, cal)) - cal.sealed
        if opts.require_copies and not set(s.graded) - cal.uncopied:
            v.ok = False
            v.reason = (f"hidden tests without must-fail copies: all {len(s.graded)}"
                        f", e.g. {s.graded[0]}" + (f" ({cal.note})" if cal.note else ""))
        elif opts.require_copies and not valued(s.graded, cal):
            # Held-out round 15: Polygon.centroid's value test was judged by the
            # answer's own `is_close`; only its zero-area test, an exception's
            # class, was protected. A stub with that exception scored 1.
            v.ok = False
            v.reason = (f"no hidden test's value is protected, only exception classes: "
                        f"{len(s.graded)} graded, e.g. {s.graded[0]}")

    def specify(self, v: Verdict, s: Settled) -> None:
        """The exact strings the hidden tests require, stated; doc pointers."""
        v.stage = Stage.SPECIFIED
        ws = _workspace_files(self.texts, v.source_changes, v.test_changes)
        try:
            s.required = required_strings(self.src.path, s.graded, "\n".join(ws.values()),
                                          limit=required_limit(v.candidate.difficulty.removed_lines),
                                          code_text="\n".join(t for rel, t in ws.items() if rel.endswith(".py")))
        except Underspecified as exc:
            v.ok, v.reason = False, str(exc)
        cal = s.calibration
        if v.ok and cal is not None:
            # A sealed test that checks only strings the statement states (or
            # the workspace shows) has nothing hidden: without a value copy it
            # is unprotected (statement.told_in_full).
            copied = protected_tests(cal.copies)
            bare = [t for t in s.graded if t in cal.sealed
                    and ((r := test_ref(t)) is None or (r.file, r.cls, r.func) not in copied)]
            told = told_in_full(self.src.path, bare)
            cal.uncopied |= told
            if told and self.opts.require_copies and not set(s.graded) - cal.uncopied:
                v.ok = False
                v.reason = (f"hidden tests without must-fail copies: all {len(s.graded)}; the seals of "
                            f"{len(told)} hide nothing the statement does not state, e.g. {sorted(told)[0]}")
        s.docs = doc_pointers(ws, sorted({sym.name for sym in v.candidate.symbols if sym.public}))

    def check_adequacy(self, w: Worker, v: Verdict, s: Settled) -> None:
        """Stand-ins that do no work must fail; gold mutants must mostly die."""
        opts, cand = self.opts, v.candidate
        assert s.calibration is not None
        v.stage = Stage.CONSTRAINED
        f2p = s.graded
        # From the gold's own run time: a stand-in or mutant that runs past it hangs.
        limit = min(self.ctx.timeout, max(20.0, 5 * s.calibration.seconds + 15))
        adq, spent = adequacy.check(w, f2p, cand.symbols,
                                    cand.root.module if cand.kind == FeatureKind.MODULE else None,
                                    seed=s.tid, timeout=limit, mutants=opts.gold_mutants,
                                    constants=s.required, batch=opts.batch_probes,
                                    arm=(cand.arm.line, cand.arm.end) if cand.arm else None)
        s.adequacy = adq
        v.test_seconds_total += spent
        v.seconds["adequacy"] = spent
        if adq.standins_passing_all:
            v.ok = False
            v.reason = (f"hidden tests do not constrain it: a stand-in that does no work "
                        f"({adq.standins_passing_all[0]}) passes all {len(f2p)}")
        elif adq.partials_passing_all:
            v.ok = False
            name = adq.partials_passing_all[0]
            how, _, sym = name.partition(":")
            stubbed = "raise NotImplementedError" if how == "stub-raise" else "a constant"
            v.reason = (f"a removed symbol is not needed by the graded tests: the gold with "
                        f"{sym} stubbed ({stubbed}) passes all {len(f2p)}")
        elif (adq.mutation_score is not None and adq.mutation_score < opts.min_mutation_score
              and not opts.keep_weak):
            v.ok = False
            v.reason = (f"hidden tests do not constrain it: mutation score "
                        f"{adq.mutation_score:.2f} ({adq.mutants_killed} of {adq.mutants} "
                        f"gold mutants killed; minimum {opts.min_mutation_score})")

    def package(self, v: Verdict, s: Settled) -> None:
        """Leak check, write the task, and grade the finished directory (final check)."""
        assert s.calibration is not None
        cand = v.candidate
        v.stage = Stage.LEAK_FREE
        try:
            scan = self.image_scan.result()
            record_fn = _record_builder(s.tid, self.src, self.image, v, self.ctx, self.cov,
                                        self.n_flaky,
                                        self.protected, s.calibration, s.adequacy, s.required, s.docs,
                                        style=self.opts.statement_style, blame=self.blame)
            check = leak_checker(self.src.path, cand.symbols, sorted(v.hidden & self.ctx.passing),
                                 scan.hits(self.src.path, cand.symbols))
            write_task(self.out_dir, s.tid, self.src.path, v.source_changes, v.test_changes,
                       self.protected, record_fn, leak_check=check, final_check=self._final_check)
        except LeakError as exc:
            v.ok = False
            v.reason = f"leaks the removed code: {exc}"
        except GradeCheckError as exc:
            v.ok, v.stage = False, Stage.GOLD
            v.reason = str(exc)
        else:
            v.stage = Stage.TASKS


    def _final_check(self, task_dir: Path) -> None:
        """The final check, and no task published once the run stops: a stand-in
        whose sandbox closed under it fails as a real one would not."""
        final_check(task_dir)
        if self.stop.is_set():
            raise Stopped(task_dir.name)


class Stopped(Exception):
    """The run stopped while this candidate was being settled: no verdict."""


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


def valued(graded: list[str], cal: Calibration) -> list[str]:
    """Graded ids a value seal or a copy of a value (not only of an exception
    class) protects."""
    covered = value_protected(cal.copies)
    return sorted(t for t in graded if t in cal.sealed or ((r := test_ref(t)) is not None
                                                            and (r.file, r.cls, r.func) in covered))


def unprotected(graded: list[str], cal: Calibration) -> list[str]:
    """Graded ids (doctests and other items too) whose test function has no value
    copy (copies.protected_tests): a forger who tells them apart needs no guess for them."""
    covered = protected_tests(cal.copies)
    out = []
    for nid in graded:
        ref = test_ref(nid)
        if (ref.file, ref.cls, ref.func) not in covered if ref else True:
            out.append(nid)
    return sorted(out)


def symbol_coverage(cov: CoverageMap, symbols, codes: dict[str, str],
                    graded: set[str], arm: Arm | None = None) -> list[SymbolCoverage]:
    """Per removed definition: its body's statement lines, those a graded test ran
    (from the baseline's per-test coverage), and how many graded tests run it.
    A case (`arm`) counts the arm's lines alone: the rest of its function stays."""
    out = []
    for sym in symbols:
        if arm is not None:
            lines = arm.lines
        elif sym.kind == "module":
            lines = set(range(sym.start, sym.end + 1))
        else:
            lines = set(sym.body_lines)
        stmts = statement_lines(codes.get(sym.path, ""), lines)
        table = cov.by_file.get(sym.path, {})
        ran = {ln for ln in stmts if table.get(ln, frozenset()) & graded}
        tests = cov.tests_for(sym.path, lines) & graded
        out.append(SymbolCoverage(qualname=sym.qualname, statements=len(stmts), covered=len(ran),
                                  tests=len(tests), missed=sorted(stmts - ran)[:50]))
    return out


def statement_lines(code: str, lines: set[int]) -> set[int]:
    """First lines of the statements among `lines` (docstrings, nested def and
    class headers left out: coverage marks a header at import, not at a call)."""
    try:
        tree = parse_python(code)
    except (SyntaxError, ValueError):
        return set()
    out = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt) or node.lineno not in lines:
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(
                node.value.value, str):
            continue
        out.add(node.lineno)
    return out


def removed_pieces(ctx: Context, symbols, arm: Arm | None = None) -> list[str]:
    """The source of each removed definition (a removed module: its whole text;
    a removed branch: its arm's lines)."""
    if arm is not None and symbols and symbols[0].module in ctx.index.modules:
        return [snippet(ctx.index.modules[symbols[0].module].code, arm.line, arm.end)]
    out = []
    for s in symbols:
        mod = ctx.index.modules.get(s.module)
        if mod is not None:
            out.append(mod.code if s.kind == "module" else snippet(mod.code, s.start, s.end))
    return out


def contamination_of(cand, ctx: Context, statement: str, style: StatementStyle,
                     blame: Blame | None) -> Contamination:
    """The facts that tell whether a model could recite the task (propose/recall.py);
    the wrappers are the ones difficulty left out."""
    whole = cand.root.module if cand.kind == FeatureKind.MODULE else None
    wrappers = thin_wrappers(ctx.index, cand.symbols, whole)
    age = recall.code_age(span_times(blame, cand.removed_spans())) if blame is not None else None
    pieces = removed_pieces(ctx, cand.symbols, cand.arm)
    if whole is not None and whole in ctx.index.modules:
        pieces.append(ctx.index.modules[whole].code)      # its docstring is in the statement
    return Contamination(code_age=age, statement_style=style,
                         wrappers=[f"{q} -> {c}" for q, c in sorted(wrappers.items())],
                         quoted_lines=recall.quoted_lines(statement, pieces))


def _arm_at(cand, ctx: Context, v: Verdict) -> int | None:
    """The workspace line where a case's arm now raises (statement.first_changed_line)."""
    mod = ctx.index.modules.get(cand.root.module)
    new = v.source_changes.get(cand.root.path)
    if cand.arm is None or mod is None or not new:
        return None
    return first_changed_line(mod.code, new)


def _record_builder(tid, src, image, v: Verdict, ctx: Context, cov: CoverageMap, n_flaky: int,
                    protected: list[str], cal: Calibration, adq=None, required=(), docs=(),
                    style: StatementStyle = StatementStyle.UPSTREAM, blame: Blame | None = None):
    cand = v.candidate
    f2p = sorted(v.hidden & ctx.passing - cal.unstable - v.passing_hidden)
    measured = v.seconds.get("remaining_suite", 0.0) + cal.seconds
    grading = GradingPlan(
        copies=cal.copies, rename=cal.rename, timeout=verify_timeout(measured),
        measured_seconds=round(measured, 3),
        # Tests with any candidate copy, complements included (what verify
        # decides always-equal by is the planted set, complements left out).
        hidden_with_copy=len({(m.file, tuple(m.cls), m.func) for m in cal.copies
                                if m.kind == "value"}),
        hidden_functions=len({(r.file, tuple(r.cls), r.func) for r in map(test_ref, f2p) if r}),
        unstable_excluded=len(cal.unstable), graded=len(f2p),
        protected=len(set(f2p) - cal.uncopied), unprotected=sorted(cal.uncopied & set(f2p)),
        coverage=symbol_coverage(cov, cand.symbols, {p: ctx.index.modules[m].code for m, p in
                                                     {(s.module, s.path) for s in cand.symbols}
                                                     if m in ctx.index.modules}, set(f2p), cand.arm),
        plant_seed=secrets.token_hex(16), sealed=True, sealed_graded=len(cal.sealed & set(f2p)),
        answers_shown=sorted(cal.shown & set(f2p) - cal.sealed), seal_rules=SEAL_RULES)
    p2p = sorted(ctx.passing - v.hidden - v.vanished | v.passing_hidden)
    own = {s.qualname for s in cand.symbols}
    exports = sorted(f"{m}.{n}" for (m, n) in v.exported      # re-exports of removed names
                     if f"{m}.{n}" not in own and not n.startswith("_"))
    touched = sorted(v.source_changes)
    pieces = removed_pieces(ctx, cand.symbols, cand.arm)
    removed = "\n".join(pieces)
    elsewhere = "\n".join(functools.reduce(lambda code, piece: code.replace(piece, ""), pieces, m.code)
                          for m in ctx.index.modules.values())
    statement = problem_statement(src.name, cand.root, cand.symbols, exports, touched, len(f2p),
                                  kind="combined" if cand.parts else cand.kind, removal=cand.removal,
                                  arm=cand.arm, arm_at=_arm_at(cand, ctx, v),
                                  required=list(required), docs=list(docs),
                                  style=style, raises=recall.raised_types(pieces),
                                  collaborators=collaborator_methods(ctx.src, f2p, removed, elsewhere),
                                  checked=checked_behaviours(f2p, [s.qualname for s in cand.symbols]))
    contamination = contamination_of(cand, ctx, statement, style, blame)
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
            feature=FeatureInfo(kind=cand.kind, name=cand.name, symbols=symbols, removal=cand.removal,
                                arm_lines=[cand.arm.line, cand.arm.end] if cand.arm else [],
                                arm_condition=condition(cand.arm) if cand.arm else "",
                                touched_files=touched, parts=list(cand.parts)),
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
            family=tid,                 # alone until generate's tally groups it
            contamination=contamination,
            **({"adequacy": adq} if adq is not None else {}))
    return build
