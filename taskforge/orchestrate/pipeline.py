"""`generate`: from a repository to validated, packaged tasks.

Stages (docs/architecture.md): fetch -> layout -> environment image ->
baseline x2 with per-test coverage -> symbol index -> propose -> validate in
parallel warm sandboxes -> package. Every drop is recorded with its reason.
"""
from __future__ import annotations

import json
import logging
import re
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from itertools import zip_longest
from pathlib import Path
from typing import Any, Callable

from taskforge import __version__
from taskforge.analysis.coverage_map import CoverageMap
from taskforge.analysis.dynamic import hopeless_check
from taskforge.analysis.pyparse import parse as parse_python
from taskforge.analysis.symbols import index_repo
from taskforge.analysis.testindex import group_ids, index_tests
from taskforge.env.detect import detect, find_config, pytest_pin
from taskforge.errors import InfraError, TaskforgeError, UserError
from taskforge.fsutil import atomic_write, rmtree
from taskforge.leaks.audit import cache_root
from taskforge.leaks.scan import ImageIndex, Scanner, image_fs_cache, needles_for
from taskforge.models import (
    STAGE_ORDER,
    CopyCoverage,
    DropReason,
    EnvironmentRecipe,
    FunnelStage,
    GenerateReport,
    Prediction,
    ResumeInfo,
    Stage,
    Tier,
)
from taskforge.orchestrate.options import Options
from taskforge.orchestrate.settle import Settler
from taskforge.orchestrate.state import BaselineState, RunState, make_scratch, reap_dead_runs
from taskforge.package.families import families
from taskforge.package.store import load_task
from taskforge.propose.features import combine, combined, grown, propose
from taskforge.propose.recall import code_age, fresh
from taskforge.repo.blame import Blame, require_history, span_times
from taskforge.repo.layout import scan, walk
from taskforge.repo.source import fetch
from taskforge.sandbox import generation_store
from taskforge.validate.checks import Context, RunArgs, Verdict, Worker

MAX_NAMED = 200          # test ids named in report.json per list (red at baseline, flaky)
UNSTABLE_ID = re.compile(r"\b\d{1,2}:\d{2}:\d{2}\b|\b0x[0-9a-fA-F]{8,}\b")
MAX_ID_BYTES = 32 << 10  # a test id longer cannot be named on a command line (Linux: 128 KiB an argument)
TEXT_SUFFIXES = (".py", ".pyi", ".md", ".rst", ".txt", ".cfg", ".toml", ".ini", ".json", ".yaml",
                 ".yml", ".html", ".j2", ".tmpl")

logger = logging.getLogger(__name__)




class Progress:
    """Progress callbacks; the CLI plugs rich in, the library default is silent."""

    def stage(self, text: str) -> None: ...

    def start(self, total: int) -> None: ...

    def advance(self, text: str) -> None: ...

    def done(self) -> None: ...


def generate(repo: str, out: str | Path, options: Options | None = None,
             progress: Progress | None = None, log: Callable[[str], None] | None = None
             ) -> GenerateReport:
    """Tasks from `repo` into `out` (resuming what an interrupted run there left)."""
    return GenerateRun(repo, out, options, progress, log).run()


class GenerateRun:
    """One generate: what it was asked, the places and workers it holds, and
    what each stage found. The methods are the stages, in the order `run` calls
    them; each reads what the ones before it set."""

    def __init__(self, repo: str, out: str | Path, options: Options | None = None,
                 progress: Progress | None = None, log: Callable[[str], None] | None = None):
        self.repo = repo
        self.opts = options or Options()
        self.prog = progress or Progress()
        self.say = log or (lambda s: None)
        self.out_dir = Path(out).resolve()
        self.timings: dict[str, float] = {}
        self.workers: list[Worker] = []
        self.remote: Any = None          # orchestrate.remote.RemoteWorkers with --remote-workers
        self.cached: Any = None           # the baseline an interrupted run saved, if any

    def run(self) -> GenerateReport:
        t_all = time.monotonic()
        self._claim()
        try:
            self.fetch()
            self.read()
            self.environment_and_baseline()
            proposal = self.propose_features()
            verdicts = self.validate(proposal)
            return self.package(proposal, verdicts, t_all)
        except TaskforgeError:
            self._discard_if_empty()
            raise
        finally:
            self.background.shutdown(wait=True, cancel_futures=True)
            _close(self.workers, self.remote)
            rmtree(self.scratch)
            self.state.unlock()

    def _claim(self) -> None:
        """The output directory locked for this run (an interrupted run's
        half-written task removed), a scratch directory, and the background
        threads that overlap indexing and the image scan with the sandbox work."""
        self.created = not self.out_dir.exists()
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.state = RunState(self.out_dir)
        self.state.lock()
        for stale in self.out_dir.glob(".tmp-*"):
            rmtree(stale)
        reap_dead_runs()
        self.scratch = make_scratch()
        self.background = ThreadPoolExecutor(max_workers=2, thread_name_prefix="tf-bg")

    def _discard_if_empty(self) -> None:
        """Bad input or no engine leaves nothing behind; a run that got as far as
        a saved baseline keeps it for the rerun."""
        out_dir, state = self.out_dir, self.state
        if self.created and not any(p.name != ".state" for p in out_dir.iterdir()) \
                and not any(state.dir.glob("baseline-*.json")):
            state.unlock()
            rmtree(out_dir)

    def fetch(self) -> None:
        self.prog.stage("cloning")
        t = time.monotonic()
        self.src = fetch(self.repo, self.scratch / "src", ref=self.opts.ref)
        self.timings["clone"] = time.monotonic() - t
        if self.opts.since is not None:
            require_history(self.src.path, self.repo)

    def read(self) -> None:
        self.prog.stage("reading the repository")
        src = self.src
        self.layout = layout = read_repository(src.path, self.repo)
        # libcst indexing is slow and needs no container: it overlaps the image and baseline.
        self.indexing = self.background.submit(lambda: (index_repo(src.path, layout),
                                                        index_tests(src.path, layout.test_files)))
        self.plan = plan = install_plan(src.path, self.repo, layout, self.opts, self.say)
        self.run_args = RunArgs(options=plan.test_options, paths=plan.test_paths, env=plan.env)
        self.ignored: list[str] = []      # test files left out: they do not collect at baseline
        self.hung: list[str] = []         # tests left out: the baseline timed out in them

    def environment_and_baseline(self) -> None:
        """The environment, then the baseline runs in it; built once more with
        a pinned pytest when the newest does not collect the suite, and run
        again without the test files that do not collect (no rebuild)."""
        build, attempt = True, 0
        while True:
            if build:
                attempt += 1
                self.prog.stage("building the environment image")
                t = time.monotonic()
                self.image, self.build_secs = build_environment(self.src, self.plan, self.say)
                self.timings["image"] = time.monotonic() - t
                self.image_scan = self.background.submit(ImageScan.open, self.image)
            if self.opts.remote_workers:
                # Started now: their nodes build the environment while the baseline runs here.
                from taskforge.orchestrate.remote import RemoteWorkers

                self.remote = RemoteWorkers(self.opts.remote_workers, self.src.path, self.scratch, self.image,
                                       self.src.name, self.src.commit, self.plan.python,
                                       self.plan.script(), self.run_args)
            self.prog.stage("baseline runs")
            t = time.monotonic()
            done = self._baseline(attempt)
            if done is True:
                break
            build = done is False
        self.timings["baseline"] = time.monotonic() - t

    def _open_workers(self, n: int) -> None:
        _open_workers(self.src.path, self.image, self.scratch, n, self.run_args, self.workers)

    def _baseline(self, attempt: int) -> bool | None:
        """The baseline (an earlier run's if it saved one); False when the
        environment was re-pinned and must be built again, None when test
        files that do not collect were left out and it must run again."""
        src, opts = self.src, self.opts
        key = RunState.baseline_key(src.commit, self.image, __version__, str(opts.timeout),
                                    repr(self.run_args))
        self.cached = self.state.load_baseline(key)
        self.workers.append(Worker(src.path, self.image, self.scratch, 0, run_args=self.run_args))
        if self.cached is not None:
            self.base_state, self.cov_file = self.cached
            self.say("baseline: reusing the runs of an earlier, interrupted generate")
            self._open_workers(opts.jobs)
            return True
        try:
            base_state, cov_file = run_baseline(self.workers, self.layout, opts, key,
                                                self._open_workers)
        except DoesNotCollect as exc:
            if self._repin(exc, attempt):
                return False
            files = uncollected_files(exc.errors, self.layout.test_files, self.ignored)
            if files is None:
                raise
            # A red baseline is data: the files that do not collect go, the rest runs.
            self.say(f"{len(files)} test file(s) do not collect at baseline ({exc.message}); "
                     f"left out of every run")
            self.ignored += files
            self._leave_out(files)
            return None
        except SuiteHangs as exc:
            tests = hung_tests(exc.running, self.hung)
            if tests is None:
                raise
            self.say(f"the baseline timed out in {exc.running[0]}; {tests[0]} left out of every run")
            self.hung += tests
            self._leave_out(tests)
            return None
        self.base_state = base_state
        self.cov_file = self.state.save_baseline(base_state, cov_file)
        self._open_workers(opts.jobs)
        return True

    def _leave_out(self, items: list[str]) -> None:
        """Every later run without `items` (test ids deselected, files ignored);
        the workers go, to start again with those options."""
        self.run_args = RunArgs(options=[*self.run_args.options, *(
            f"--deselect={t}" if "::" in t else f"--ignore={t}" for t in items)],
                                paths=self.run_args.paths, env=self.run_args.env)
        _close(self.workers, self.remote)
        self.workers.clear()
        self.remote = None

    def _repin(self, exc: DoesNotCollect, attempt: int) -> bool:
        """Pin a pytest the project's constraints allow (once, and only for a
        detected install); False when there is none to try."""
        pin = (pytest_pin(exc.errors, self.src.path, _pytest_version(self.workers[0]))
               if attempt == 1 and self.plan.install is None else None)
        if pin is None:
            return False
        self.say(f"the newest pytest does not collect the suite ({exc.message}); "
                 f"building the environment again with {pin}")
        self.plan.pytest_pin = pin
        _close(self.workers, self.remote)
        self.workers.clear()
        self.remote = None
        return True

    def propose_features(self):
        self.passing, self.flaky = set(self.base_state.passing), set(self.base_state.flaky)
        self.all_ids = set(self.base_state.all_ids)
        self.cov = CoverageMap.load(self.cov_file)
        self.prog.stage("proposing features")
        t = time.monotonic()
        opts, passing, all_ids, cov = self.opts, self.passing, self.all_ids, self.cov
        self.index, self.tests = index, tests = self.indexing.result()
        hopeless, late = hopeless_check(self.src.path, self.layout, self.image_scan.result(),
                                        self.plan.python)
        proposal = propose(index, cov, passing, all_ids, tests, max_share=opts.max_share,
                           hopeless=hopeless, late=late, min_statements=opts.min_statements,
                           min_tier=opts.min_tier, max_symbols=opts.max_feature_defs,
                           # harden combines features that made tasks: none is held back
                           check_predictions=opts.check_predictions or bool(opts.combine),
                           branches=opts.branches)
        self.drops = [DropReason(candidate=n, stage=Stage.CANDIDATES, reason=r)
                      for n, r in proposal.drops]
        self.cap = cap = max(1, int(opts.max_share * len(passing)))
        if opts.combine or opts.around:
            # harden: features grown around solved ones, then the groups. They
            # are what this run considers: the parts' own drops are not its.
            grew, lost = (grown(proposal.candidates, list(opts.around), set(opts.known)) if opts.around
                          else ([], []))
            pairs, unpaired = combined(
                proposal.candidates, list(opts.combine),
                lambda parts: combine(index, cov, tests, passing, all_ids, parts, cap))
            lost = ([] if opts.combine else lost) + unpaired
            self.drops = [DropReason(candidate=n, stage=Stage.CANDIDATES, reason=r) for n, r in lost]
            # Interleaved, so that a run asked for a few tasks tries both kinds.
            proposal.candidates = [c for pair in zip_longest(grew, pairs) for c in pair if c is not None]
            proposal.considered = len(proposal.candidates) + len(lost)
        proposal.candidates = asked_for(proposal.candidates, opts, self.drops)
        if opts.since is not None:
            proposal.candidates = recent_only(proposal.candidates, Blame(self.src.path), opts.since,
                                              self.drops)
        self.timings["propose"] = time.monotonic() - t
        return proposal

    def validate(self, proposal) -> list[Verdict]:
        src, opts, layout = self.src, self.opts, self.layout
        texts = _text_files(src.path)
        ctx = Context(src=src.path, index=self.index, tests=self.tests, passing=self.passing,
                      all_ids=self.all_ids, by_key=group_ids(self.all_ids), cap=self.cap,
                      timeout=opts.timeout, layout=layout, run_args=self.run_args,
                      recipe=EnvironmentRecipe(python=self.plan.python, script=self.plan.script()))
        self.prog.stage("validating candidates")
        t = time.monotonic()
        protected = sorted(layout.protected_files)     # scan's own walk: no second one
        self.settler = settler = Settler(
            opts=opts, ctx=ctx, cov=self.cov, texts=texts, image_scan=self.image_scan, src=src,
            image=self.image, n_flaky=len(self.flaky), protected=protected, state=self.state,
            out_dir=self.out_dir)
        remote = self.remote
        verdicts = validate_all(self.workers, proposal.candidates, opts.max_tasks, self.prog,
                                settler.settle, settler.earlier,
                                joining=remote.joined if remote else None,
                                most=len(self.workers) + opts.remote_workers,
                                on_stop=self._stop_checks)
        self.timings["validate"] = time.monotonic() - t
        if remote is not None:
            for why in remote.failed[:3]:
                self.say(f"a remote worker could not start: {why}")
            if remote.pending:
                self.say(f"{len(remote.pending)} remote worker(s) never started "
                         "(no free CPU on the cluster?)")
        return verdicts

    def _stop_checks(self) -> None:
        """The run stops: the checks in flight conclude nothing from here on
        (settle.Stopped), and their sandboxes close under them, so that the
        stop waits seconds, not a candidate's whole validation."""
        self.settler.stop.set()
        _close(self.workers, None)

    def package(self, proposal, verdicts: list[Verdict], t_all: float) -> GenerateReport:
        """The deterministic prefix of tasks kept, their families marked, and
        report.json written."""
        out_dir, opts, tid_of = self.out_dir, self.opts, self.settler.tid_of
        t = time.monotonic()
        tasks, necessary, adequacy_secs = tally(verdicts, proposal.candidates, tid_of, opts,
                                                self.drops)
        # Necessary: the two runs as bare runs; what coverage adds is taskforge's cost.
        base_state = self.base_state
        necessary += base_state.bare_seconds + min(base_state.bare_seconds,
                                                   base_state.coverage_seconds)
        # Tasks past the deterministic prefix (validated while it was settling) go,
        # so the task set never depends on timing.
        chosen = set(tasks)
        for cand in proposal.candidates:
            tid = tid_of(cand)
            if tid not in chosen and (out_dir / tid / "task.json").is_file():
                rmtree(out_dir / tid)
        fams = mark_families(out_dir, tasks)
        timings = self.timings
        timings["package"] = time.monotonic() - t
        timings["total"] = time.monotonic() - t_all
        timings["test_seconds_all"] = (base_state.bare_seconds + base_state.coverage_seconds
                                       + sum(v.test_seconds_total for v in verdicts))
        timings["test_seconds_necessary"] = necessary
        timings["test_seconds_adequacy"] = adequacy_secs
        timings["image_build"] = self.build_secs
        n_remote, remote_runs, lost = self._remote_counts()
        report = GenerateReport(
            repo=self.src.repo, source_commit=self.src.commit, image_name=self.image,
            baseline_tests=len(self.all_ids), baseline_passing=len(self.passing),
            baseline_failing=len(base_state.failing), flaky_excluded=len(self.flaky),
            baseline_failing_ids=sorted(base_state.failing)[:MAX_NAMED],
            pytest_pin=self.plan.pytest_pin, flaky_ids=sorted(self.flaky)[:MAX_NAMED],
            uncollected_files=self.ignored[:MAX_NAMED],
            hung_tests=self.hung,
            funnel=funnel(proposal.considered, self.drops),
            drops=self.drops, tasks=tasks, timings={k: round(v, 3) for k, v in timings.items()},
            jobs=opts.jobs, remote_workers=n_remote, remote_runs=remote_runs, remote_workers_lost=lost,
            resumed=ResumeInfo(baseline=self.cached is not None,
                               tasks=sum(1 for v in verdicts if v.resumed and v.ok),
                               rejections=sum(1 for v in verdicts if v.resumed and not v.ok)),
            prediction=prediction_of(verdicts, proposal.predicted, proposal.deferred),
            copies=_copy_coverage(out_dir, tasks), families=fams,
            **_distribution(out_dir, tasks))
        atomic_write(out_dir / "report.json", report.model_dump_json(indent=2) + "\n")
        return report

    def _remote_counts(self) -> tuple[int, int, int]:
        """Remote workers that joined, the runs they made, and those lost."""
        remote = self.remote
        if remote is None:
            return 0, 0, 0
        return len(remote.workers), remote.runs, sum(w.lost for w in remote.workers)


def _pytest_version(worker: Worker) -> str:
    """The pytest the environment holds ("" if it cannot say)."""
    try:
        res = worker.sandbox.exec(["python", "-c", "import pytest; print(pytest.__version__)"],
                                  timeout=60)
    except TaskforgeError:
        return ""
    return res.output.strip().splitlines()[-1] if res.exit_code == 0 and res.output.strip() else ""


def _close(workers: list[Worker], remote) -> None:
    if remote is not None:
        remote.close()
    if workers:        # removing a container takes a while: all at once
        with ThreadPoolExecutor(max_workers=len(workers)) as closer:
            list(closer.map(Worker.close, workers))


def read_repository(root: Path, repo: str):
    """The file layout, refusing what is no task material (no code, no tests,
    source that this Python cannot parse)."""
    layout = scan(root)
    if not layout.source_files and not layout.test_files:
        raise UserError(f"not a Python repository: no Python files in {repo}")
    if not layout.test_files:
        raise UserError(f"no tests found in {repo} (looked for test_*.py, *_test.py, tests/)")
    if not layout.source_files:
        raise UserError(f"no package code found in {repo} outside its tests")
    # Source files only: a test file this Python cannot parse (PEP 695 syntax a
    # conftest skips below 3.12) is pytest's to collect or ignore.
    check_syntax(root, layout.source_files)
    return layout


def install_plan(root: Path, repo: str, layout, opts: Options, say: Callable[[str], None]):
    """How to install and test the repository: detected, then taskforge.toml and
    the options' overrides on top."""
    config, config_files = find_config(root, repo)
    if opts.config is not None:
        config = config.merged(opts.config)
    plan = detect(root, layout, config)
    for f in config_files:
        say(f"using overrides from {f}")
    return plan


def build_environment(src, plan, say: Callable[[str], None]) -> tuple[str, float]:
    """The repository's environment on the generation backend: (name, build
    seconds). Files the install writes from git metadata (a version file) are
    added to the tree, which a clone lacks."""
    envs = generation_store()
    base = envs.ensure_base(plan.python, log=say)
    try:
        image, build_secs = envs.ensure_environment(src.path, src.name, src.commit, base,
                                                    plan.script(), log=say)
    except UserError as exc:
        raise UserError(f"{exc.message} (tried: {plan.describe()})") from None
    for rel, text in envs.generated_files(image).items():
        if not (src.path / rel).exists():
            say(f"adding {rel}, which the install generates")
            atomic_write(src.path / rel, text)
    return image, build_secs


def asked_for(candidates: list, opts: Options, drops: list[DropReason]) -> list:
    """The candidates of the kinds (--kind) and names (--only) asked for; the
    others join `drops`."""
    wanted = []
    for c in candidates:
        if c.kind in opts.kinds and (not opts.only or named(c.name, opts.only)):
            wanted.append(c)
        else:
            drops.append(DropReason(candidate=c.name, stage=Stage.CANDIDATES,
                                    reason=f"not asked for: kind {c.kind}" if c.kind not in
                                    opts.kinds else "not asked for: --only"))
    return wanted


def named(name: str, patterns: tuple[str, ...]) -> bool:
    """--only: a pattern names the candidates whose name holds it. A case of a
    function (`qualname@line`) is named only by a pattern with an `@`, so that
    asking for a function keeps meaning its whole definition now that cases are
    offered by default: `fmt` names `fmt`, `fmt@` each of its cases, `fmt@12` one."""
    whole = "@" not in name
    return any(p in name and (whole or "@" in p) for p in patterns)


def recent_only(candidates: list, blame: Blame, since: int, drops: list[DropReason]) -> list:
    """--since: the candidates whose removed lines mostly changed at or after
    `since`; the others join `drops` with their median line's day."""
    kept = []
    for c in candidates:
        stamps = span_times(blame, c.removed_spans())
        if fresh(stamps, since):
            kept.append(c)
            continue
        age = code_age(stamps)
        drops.append(DropReason(candidate=c.name, stage=Stage.CANDIDATES,
                                reason="older than --since: " + (
                                    f"half its lines last changed by {age.median}" if age
                                    else "no blame for its lines")))
    return kept


def tally(verdicts: list[Verdict], candidates: list, tid_of: Callable[[Any], str], opts: Options,
          drops: list[DropReason]) -> tuple[list[str], float, float]:
    """(task ids, necessary test seconds of the tasks, their adequacy seconds);
    every rejection and every candidate past the --max-tasks prefix joins `drops`."""
    tasks: list[str] = []
    necessary = 0.0
    adequacy_secs = 0.0        # stand-in and gold-mutant runs of the tasks written
    for v in verdicts:
        if not v.ok:
            drops.append(DropReason(candidate=v.candidate.name, stage=v.stage, reason=v.reason))
            continue
        tasks.append(tid_of(v.candidate))
        necessary += v.seconds.get("remaining_suite", 0) + v.seconds.get("hidden_on_stripped", 0)
        adequacy_secs += v.seconds.get("adequacy", 0)
    for c in candidates[len(verdicts):]:
        drops.append(DropReason(candidate=c.name, stage=Stage.TRIED,
                                reason=f"not tried: {opts.max_tasks} task(s) found first "
                                       f"(--max-tasks)"))
    return tasks, necessary, adequacy_secs


RED_REST = ("remaining suite red", "stripped tree does not collect")


def prediction_of(verdicts: list[Verdict], rejected: int, deferred: int = 0) -> Prediction:
    """How the prediction of a red suite (propose.features: helper_names_it,
    runs_at_import) fared on the candidates that reached the rest-of-suite run:
    a flagged one tried (deferred, or dropped but for --check-predictions)
    confirms it when the rest was red or did not collect; one not flagged that
    was red is a miss. A candidate dropped
    before that run (hidden tests still pass, too central) tells nothing."""
    after = STAGE_ORDER.index(Stage.REMAINING_GREEN)
    out = Prediction(rejected=rejected, deferred=deferred)
    for v in verdicts:
        red = v.stage is Stage.REMAINING_GREEN and v.reason.startswith(RED_REST)
        green = v.ok or STAGE_ORDER.index(v.stage) > after
        flagged = bool(v.candidate.predicted or v.candidate.deferred)
        if flagged and (red or green):
            out.checked += 1
            out.confirmed += red
        elif not flagged and red:
            out.missed += 1
    return out


def mark_families(out_dir: Path, tasks: list[str]) -> dict[str, list[str]]:
    """Write each task's family into its task.json (a family is computed over every
    task of the run, resumed ones too); {family: its tasks} for families of 2+."""
    recs = {tid: load_task(out_dir / tid).record for tid in tasks}
    fam = families({tid: r.FAIL_TO_PASS for tid, r in recs.items()})
    for tid, rec in recs.items():
        if rec.family != fam[tid]:
            tj = out_dir / tid / "task.json"
            data = json.loads(tj.read_text())
            data["family"] = fam[tid]
            atomic_write(tj, json.dumps(data, indent=2) + "\n")
    out: dict[str, list[str]] = {}
    for tid in sorted(fam):
        out.setdefault(fam[tid], []).append(tid)
    return {f: ts for f, ts in out.items() if len(ts) > 1}


def funnel(considered: int, drops: list[DropReason]) -> list[FunnelStage]:
    """Stage counts from the drops: every candidate is counted once, at the first
    stage it did not pass (or as a task), so each step down is its drops."""
    out, n = [], considered
    for st in STAGE_ORDER:
        n -= sum(1 for d in drops if d.stage == st)
        out.append(FunnelStage(name=st, count=n))
    return out


def _distribution(out_dir: Path, tasks: list[str]) -> dict:
    """Tasks per difficulty tier and per kind, and how many are large."""
    tiers = {t.value: 0 for t in Tier}
    kinds: dict[str, int] = {}
    large = 0
    for tid in tasks:
        rec = load_task(out_dir / tid).record
        tiers[rec.difficulty.tier.value] += 1
        kinds[rec.feature.kind.value] = kinds.get(rec.feature.kind.value, 0) + 1
        large += rec.difficulty.removed_lines >= 40 or rec.difficulty.files >= 2
    return {"difficulty": tiers, "kinds": kinds, "large_tasks": large}


def _text_files(root: Path) -> dict[str, str]:
    """The repository's text files, read once: statements search them."""
    out = {}
    for rel in walk(root):
        if rel.endswith(TEXT_SUFFIXES) or "/" not in rel:
            try:
                p = root / rel
                if p.is_file() and p.stat().st_size <= 2_000_000:
                    out[rel] = p.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
    return out


def _copy_coverage(out_dir: Path, tasks: list[str]) -> CopyCoverage:
    """How much of the written tasks' hidden tests the must-fail copies cover."""
    cov = CopyCoverage()
    for tid in tasks:
        g = load_task(out_dir / tid).record.grading
        cov.tasks_with_copies += bool(g.copies)
        cov.hidden_functions += g.hidden_functions
        cov.hidden_with_copy += g.hidden_with_copy
        cov.copies += len(g.copies)
        cov.graded += g.graded
        cov.protected += g.protected
        cov.unprotected += len(g.unprotected)
        cov.crossed += len({m.cross for m in g.copies if m.cross})
    return cov


def _open_workers(src: Path, image: str, scratch: Path, jobs: int, run_args,
                  into: list[Worker]) -> None:
    """Workers up to `jobs` in all, each added to `into` as soon as it exists (so
    it is closed even if the run fails while the others are still starting)."""
    for n in range(len(into), jobs):
        into.append(Worker(src, image, scratch, n, run_args=run_args))


class ImageScan:
    """The environment image's files and identifier index, read once per generate."""

    def __init__(self, root: Path, index: ImageIndex):
        self.root, self.index = root, index

    @classmethod
    def open(cls, image: str) -> "ImageScan":
        root = image_fs_cache(image, cache_root())
        return cls(root, ImageIndex.load(root))

    def hits(self, src: Path, symbols) -> dict[str, str]:
        """{qualname: image path} for removed symbols whose code the image holds."""
        needles = needles_for(src, symbols, set())
        if not needles:
            return {}
        sc = Scanner(needles)
        sc.scan_indexed(self.root, self.index)
        out: dict[str, str] = {}
        for f in sc.findings:
            key = next((n.symbol for n in needles if f.symbol in (n.symbol, n.short)), f.symbol)
            out.setdefault(key, f.path)
        return out


def check_syntax(root: Path, files: list[str]) -> None:
    """A one-line error for a file Python cannot parse, before any image work."""
    for rel in files:
        try:
            parse_python((root / rel).read_bytes(), rel)     # under pyparse's lock
        except SyntaxError as exc:
            raise UserError(f"syntax error in {rel} line {exc.lineno}: {exc.msg}") from None
        except (ValueError, OSError) as exc:
            raise UserError(f"cannot read {rel}: {exc}") from None


def run_baseline(workers: list[Worker], layout, opts: Options, key: str, open_workers
                 ) -> tuple[BaselineState, Path]:
    """Two full runs: one with per-test coverage, one without; flaky = outcome differs.
    With two jobs or more they run at once, each on its own worker and tree (they
    are independent), while the remaining workers start."""
    cov_sources = layout.source_roots() or [""]
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="tf-cov") as cov_run:
        first = cov_run.submit(workers[0].runner.run, [], timeout=opts.timeout,
                               cov_sources=cov_sources)
        r2 = None
        if opts.jobs > 1:
            open_workers(2)
            r2 = workers[1].runner.run([], timeout=opts.timeout)
        r1 = first.result()
    _check_baseline(r1)
    if r2 is None:
        r2 = workers[0].runner.run([], timeout=opts.timeout)
    _check_baseline(r2)
    ids = set(r1.outcomes) | set(r2.outcomes)
    flaky = {i for i in ids if r1.outcomes.get(i) != r2.outcomes.get(i)} | unnameable(ids)
    passing = {i for i in ids - flaky if r1.outcomes.get(i) == "passed"}
    failing = {i for i in ids - flaky if r1.outcomes.get(i) in ("failed", "error")}
    considered = len(passing) + len(failing)
    if considered and len(failing) > opts.max_red * considered:
        ex = sorted(failing)[0]
        raise UserError(f"the test suite is mostly red at baseline: {len(failing)} of {considered} "
                        f"tests fail (more than {opts.max_red:.0%}; e.g. {ex})")
    if failing:
        logger.info("%d test(s) red at baseline, excluded (e.g. %s)", len(failing), sorted(failing)[0])
    if not passing:
        raise UserError("no test passes at baseline")
    if r1.coverage_file is None:
        raise InfraError("the baseline run wrote no coverage data")
    st = BaselineState(key=key, passing=sorted(passing), flaky=sorted(flaky),
                       failing=sorted(failing), all_ids=sorted(ids),
                       coverage_seconds=r1.test_seconds, bare_seconds=r2.test_seconds)
    return st, r1.coverage_file


def unnameable(ids: set[str]) -> set[str]:
    """Test ids no later run can name, so they are neither hidden nor graded
    (counted with the flaky ones; they still run with the whole suite): one
    built from the clock or a memory address names a different test at every
    run (two runs at once may agree), and one longer than MAX_ID_BYTES cannot
    be passed to pytest at all (semver 3.2.0 parametrizes a test with a
    200,000-character version: naming it made every validation's exec fail
    with E2BIG, and the whole generate with it)."""
    return {i for i in ids if UNSTABLE_ID.search(i.partition("[")[2]) or len(i.encode("utf-8")) > MAX_ID_BYTES}


MAX_UNCOLLECTED = 0.25     # share of the test files that may be left out for not collecting


def uncollected_files(errors: dict[str, str], test_files: list[str], ignored: list[str]
                      ) -> list[str] | None:
    """The test files to leave out when collection errors name them (markdown:
    one test module's `warnings.simplefilter('error')` at import turns another's
    collection warning into an error), or None: an error of the session or a
    conftest, a file not among the test files, one left out already (the
    errors move rather than go), or more than MAX_UNCOLLECTED of the files."""
    files = sorted({nid.split("::")[0] for nid in errors})
    known = set(test_files)
    if not files or any(not f or f not in known or f in ignored or f.endswith("conftest.py")
                        for f in files):
        return None
    if len(files) + len(ignored) > MAX_UNCOLLECTED * max(1, len(known)):
        return None
    return files


class DoesNotCollect(UserError):
    """The suite has collection errors at baseline; `errors` says which."""

    def __init__(self, errors: dict[str, str]):
        nid, msg = sorted(errors.items())[0]
        super().__init__(f"the test suite does not collect at baseline: {nid or '<session>'}: {msg}")
        self.errors = dict(errors)


class SuiteHangs(UserError):
    """The baseline ran out of time; `running` were the tests not finished."""

    def __init__(self, running: list[str]):
        where = f" (in {running[0]})" if running else ""
        super().__init__(f"the test suite timed out at baseline{where}")
        self.running = list(running)


MAX_HUNG = 3     # tests (or files) that hang at baseline left out, one rerun each, before refusing


def hung_tests(running: list[str], left_out: list[str]) -> list[str] | None:
    """What to leave out when the baseline timed out in a test (loguru: fork
    pools whose task never arrives under coverage): the test, or its whole file
    when a test of that file hung before (they share the cause), or None: no
    test was running (the session itself), several were (no one to blame), it
    was left out before, or MAX_HUNG are out already."""
    if len(running) != 1 or running[0] in left_out or len(left_out) >= MAX_HUNG:
        return None
    file = running[0].split("::")[0]
    if file in left_out:
        return None
    if any(t.split("::")[0] == file for t in left_out):
        return [file]
    return list(running)


def _check_baseline(r) -> None:
    if r.timed_out:
        raise SuiteHangs(r.unfinished)
    if r.collect_errors:
        raise DoesNotCollect(r.collect_errors)
    if r.exit_code == 5 or (not r.outcomes and r.exit_code in (0, 5)):
        raise UserError("no tests were collected at baseline")
    if not r.outcomes:
        # A conftest that fails to import stops the session before any collection.
        tail = [ln for ln in r.log.splitlines() if ln.strip()][-1:] or ["no output"]
        exc = DoesNotCollect({"": r.log})
        exc.message = f"the test suite did not run at baseline (exit {r.exit_code}): {tail[0][:200]}"
        raise exc


MAX_INFRA_STREAK = 3        # candidates in a row meeting an infrastructure error end the run


def infra_verdict(cand, exc: InfraError) -> Verdict:
    """A candidate whose settling met an infrastructure error (a sandbox that
    would not start, an exec the kernel refused): no task and no verdict on
    the feature, listed among the drops, and not journaled (settle raised
    before it could), so a rerun settles it again."""
    return Verdict(candidate=cand, ok=False, stage=Stage.TRIED,
                   reason=f"infrastructure error, not settled (a rerun tries it again): {exc.message}")


def _reset(w) -> bool:
    """Put a worker's tree back after a failed candidate; False if it cannot be."""
    try:
        reset = getattr(w, "reset", None)
        if reset is not None:
            reset()
        return True
    except OSError as exc:
        logger.info("a worker is dropped: its tree could not be put back: %s", exc)
        return False


def validate_all(workers: list, candidates, max_tasks, prog, settle,
                 earlier=lambda c: None, joining=None, most: int | None = None,
                 on_stop: Callable[[], None] | None = None) -> list[Verdict]:
    """Settle candidates in order across workers; stop once max_tasks are found
    among a completed prefix (so the chosen set does not depend on timing).
    `earlier` returns a verdict an interrupted run already reached; `joining()`
    returns workers that became ready since (remote workers on other nodes, up to
    `most` workers in all). A worker lost mid-candidate (WorkerLost) is dropped
    and its candidate settled again by another. Any other infrastructure error
    costs its candidate only (infra_verdict: not journaled, so a rerun tries it
    again), unless MAX_INFRA_STREAK candidates in a row meet one: then the
    infrastructure is down, and the run ends with that error. On Ctrl-C or
    SIGTERM, `on_stop()` runs before the checks in flight are waited for: it
    closes their sandboxes, so that the wait is short."""
    from taskforge.orchestrate.remote import WorkerLost

    results: dict[int, Verdict] = {}
    prog.start(len(candidates))
    free = list(workers)
    retry: list[int] = []
    next_i = 0
    streak = 0                               # candidates in a row that met an infrastructure error

    def enough() -> bool:
        if max_tasks is None:
            return False
        ok = 0
        for i in range(len(candidates)):
            if i not in results:
                return False
            ok += results[i].ok
            if ok >= max_tasks:
                return True
        return False

    with ThreadPoolExecutor(max_workers=max(len(workers), most or 0, 1)) as threads:
        running = {}
        try:
            while True:
                if joining is not None:
                    free += joining()
                while free and (retry or next_i < len(candidates)) and not enough():
                    if retry:
                        i = retry.pop(0)
                    else:
                        i, next_i = next_i, next_i + 1
                        prior = earlier(candidates[i])
                        if prior is not None:
                            results[i] = prior
                            prog.advance(f"{candidates[i].name}: settled by an earlier run")
                            continue
                    w = free.pop()
                    running[threads.submit(settle, w, candidates[i])] = (i, w)
                if not running:
                    # Nothing runs, so every worker still alive is free.
                    if retry and not free:
                        raise WorkerLost("every worker was lost")
                    break
                # Polling, not blocking: remote workers may join while everything runs.
                done, _ = wait(running, timeout=1.0 if joining is not None else None,
                               return_when=FIRST_COMPLETED)
                for fut in done:
                    i, w = running.pop(fut)
                    try:
                        results[i] = fut.result()
                        streak = 0
                    except WorkerLost as exc:
                        retry.append(i)         # settled again: counted once, when it is
                        logger.info("%s: settled again: %s", candidates[i].name, exc.message)
                        continue
                    except InfraError as exc:
                        streak += 1
                        if streak >= MAX_INFRA_STREAK:
                            raise
                        results[i] = infra_verdict(candidates[i], exc)
                        if not _reset(w):
                            continue            # a worker whose tree cannot be put back is not used again
                    free.append(w)
                    v = results[i]
                    prog.advance(f"{v.candidate.name}: {'ok' if v.ok else v.reason[:60]}")
        except KeyboardInterrupt:
            if on_stop is not None:
                on_stop()
            raise
    prog.done()
    ordered = [results[i] for i in sorted(results)]
    if max_tasks is not None:
        ok, cut = 0, len(ordered)
        for j, v in enumerate(ordered):
            ok += v.ok
            if ok >= max_tasks:
                cut = j + 1
                break
        ordered = ordered[:cut]
    return ordered
