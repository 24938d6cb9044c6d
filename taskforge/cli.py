"""The `taskforge` command: a thin layer over the library API."""
from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, cast

import typer

from taskforge.errors import InfraError, TaskforgeError, UserError

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from taskforge.orchestrate.pipeline import Progress as PipelineProgress

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Turn tested Python repositories into verifiable feature-reimplementation tasks.")
image_app = typer.Typer(no_args_is_help=True, help="Manage sandbox images.")
app.add_typer(image_app, name="image")


def _json_mode() -> bool:
    return "--json" in sys.argv[1:]


INTERRUPTED = "interrupted"
_said: set[str] = set()


def _error(message: str, kind: str = "usage") -> None:
    """One line on stderr; with --json also a JSON object on stdout, so a caller
    that parses stdout learns why instead of reading nothing."""
    _said.add(message)
    typer.echo(f"error: {message}", err=True)
    if _json_mode():
        typer.echo(json.dumps({"error": message, "kind": kind}))


def _fail(exc: TaskforgeError) -> None:
    kind = "user" if isinstance(exc, UserError) else "infra" if isinstance(exc, InfraError) else "error"
    _error(exc.message, kind)
    raise typer.Exit(exc.exit_code)


SANDBOX_OPTION = typer.Option(None, "--sandbox", help="Sandbox backend: docker or bwrap "
                              "(bubblewrap, no daemon; see `taskforge env prepare`). Default: "
                              "$TASKFORGE_SANDBOX, else docker.")


def _backend(name: str | None) -> str | None:
    from taskforge.sandbox import BACKENDS

    if name is not None and name not in BACKENDS:
        _error(f"--sandbox must be one of {', '.join(BACKENDS)}, not {name!r}")
        raise typer.Exit(2) from None
    return name


def _term_as_interrupt() -> None:
    """SIGTERM (a scheduler's stop, `timeout`, `kill`) unwinds as Ctrl-C does:
    exit 130, sandboxes closed and half-written output removed (the checks in
    flight have their sandboxes closed under them and journal nothing:
    pipeline._stop_checks). By default SIGTERM killed the process where it
    stood, and its containers lived on until a later run's reaper found their
    owner dead. uvicorn (`serve`) and Ray handle SIGTERM while they run and put
    this handler back after."""
    import signal
    import threading

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    if threading.current_thread() is threading.main_thread() \
            and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, interrupt)


def main() -> None:
    """The console entry point. Under --json, usage errors (an unknown option, a
    missing argument) answer in JSON on stdout too; otherwise typer's own handling."""
    _term_as_interrupt()
    if not _json_mode():
        try:
            app(prog_name="taskforge")
        except SystemExit as exc:
            _said_interrupted(exc.code)
            raise
        return
    ClickException: type[Any]       # typer's vendored copy or click's own: two distinct classes
    try:
        from typer._click.exceptions import ClickException  # typer >= 0.16 vendors click
    except ImportError:
        from click.exceptions import ClickException
    try:
        rc = app(prog_name="taskforge", standalone_mode=False)
    except ClickException as exc:
        typer.echo(json.dumps({"error": exc.format_message(), "kind": "usage"}))
        typer.echo(f"error: {exc.format_message()}", err=True)
        sys.exit(exc.exit_code)
    rc = rc if isinstance(rc, int) else 0          # non-standalone click returns Exit codes
    _said_interrupted(rc)
    sys.exit(rc)


def _said_interrupted(code) -> None:
    """Every command stopped by Ctrl-C or SIGTERM says so once (typer ends
    them with exit 130 and no word; generate and harden say it themselves)."""
    if code == 130 and INTERRUPTED not in _said:
        _error(INTERRUPTED, "interrupted")


class _RichProgress:
    """Progress on stderr with rich; silent with --quiet or when stderr is not a terminal."""

    def __init__(self, quiet: bool):
        from rich.console import Console

        self.console = Console(stderr=True)
        # Progress is for people: off when stderr is not a terminal (logs, pipes, tests).
        self.quiet = quiet or not self.console.is_terminal
        self.bar: Progress | None = None
        self.task: TaskID | None = None

    def stage(self, text: str) -> None:
        if not self.quiet:
            self.console.log(text)

    def start(self, total: int) -> None:
        if self.quiet:
            return
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.bar = Progress(TextColumn("validating"), BarColumn(), MofNCompleteColumn(),
                            TimeElapsedColumn(), TextColumn("{task.description}"),
                            console=self.console, transient=True)
        self.bar.start()
        self.task = self.bar.add_task("", total=total)

    def advance(self, text: str) -> None:
        if self.bar is not None:
            # start() sets the task along with the bar
            self.bar.update(cast("TaskID", self.task), advance=1, description=text[:70])

    def done(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


def _day_start(day: str) -> int:
    """YYYY-MM-DD as the Unix time of its first second (UTC); exit 2 otherwise."""
    from datetime import UTC, datetime

    try:
        return int(datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=UTC).timestamp())
    except ValueError:
        _error(f"--since wants a day like 2025-06-01, not {day!r}")
        raise typer.Exit(2) from None


@app.command(epilog="""Examples:

  taskforge generate fixtures/repos-git/textkit --out tasks/

  taskforge generate https://github.com/org/lib.git --ref v1.2.0 --out tasks/ --max-tasks 20 --json

  taskforge generate ../lib --out tasks/ --python 3.12 --test-cmd "pytest tests -m 'not slow'"

  taskforge generate ../lib --out tasks/ --install "pip install -e .\\[test] hypothesis"

  taskforge generate ../lib --out tasks/ --max-tasks 40 --difficulty medium --kind cluster --kind class

  RAY_ADDRESS=head:6379 taskforge generate ../lib --out tasks/ --remote-workers 16   # validations on the cluster

  taskforge generate ../lib --out tasks/ --since 2025-06-01 --statement-style own   # past a model's cutoff

  taskforge generate ../lib --out tasks/ --no-branches   # whole definitions and bodies only, no cases

Nothing per repository is needed in the common case: dependencies, test extras,
pytest plugins and the Python version are read from the project's own files.
Overrides go in a taskforge.toml in the repository, in LIB.taskforge.toml beside
a local repository LIB, in --config FILE, or in the flags below (flags win):

  python = "3.12"
  install = ["pip install -e .\\[test]"]
  pip = ["hypothesis"]
  test-cmd = "pytest tests"
""")
def generate(
    repo: str = typer.Argument(..., help="Git URL or local git repository."),
    out: Path = typer.Option(..., "--out", "-o", help="Directory to write tasks and report.json to."),
    ref: Optional[str] = typer.Option(None, help="Commit, tag or branch (default: HEAD)."),
    max_tasks: Optional[int] = typer.Option(None, "--max-tasks", min=1, help="Stop after this many tasks."),
    jobs: int = typer.Option(max(1, min(os.cpu_count() or 1, 4)), "--jobs", "-j", min=1,
                             help="Parallel validation sandboxes."),
    remote_workers: int = typer.Option(0, "--remote-workers", min=0, help="Remote workers on other nodes "
                                "of the Ray cluster ($RAY_ADDRESS), beside the --jobs local ones: "
                                "each realises the environment on its node from the recipe."),
    timeout: float = typer.Option(600.0, help="Seconds allowed for one test run."),
    max_share: float = typer.Option(0.4, help="Largest share of the suite one feature may hide."),
    kind: Optional[list[str]] = typer.Option(None, "--kind", help="Feature kinds to propose: "
                                             "function, method, class, module, cluster "
                                             "(repeatable; default all)."),
    difficulty: Optional[str] = typer.Option(None, "--difficulty", help="Lowest tier to propose: "
                                             "easy, medium or hard (default: every tier, spread)."),
    min_statements: int = typer.Option(3, "--min-statements", min=0, help="Smallest removal "
                                       "proposed, in statements of code (aliases and one-line "
                                       "wrappers are no task)."),
    min_mutation_score: float = typer.Option(0.5, "--min-mutation-score", min=0.0, max=1.0,
                                             help="Share of simple gold mutants the hidden tests "
                                             "must kill."),
    keep_weak: bool = typer.Option(False, "--keep-weak", help="Write tasks under the mutation "
                                   "score bar too (the score is in task.json). Tasks a do-nothing "
                                   "stand-in passes are never written."),
    allow_uncopied: bool = typer.Option(False, "--allow-uncopied", help="Write tasks none of whose "
                                        "hidden tests has must-fail copies (doctests, tests with no "
                                        "literal expected value). Such tests always grade; a task "
                                        "with no copy at all rests on the monitor alone."),
    python: Optional[str] = typer.Option(None, "--python", help="Python X.Y for the sandbox "
                                         "(default: what requires-python admits, preferring 3.11)."),
    install: Optional[list[str]] = typer.Option(None, "--install", help="Shell command that "
                                                "installs the repository (repeatable; replaces detection)."),
    test_cmd: Optional[str] = typer.Option(None, "--test-cmd", help='The pytest command, e.g. '
                                           '"pytest tests -m \'not slow\'".'),
    config: Optional[Path] = typer.Option(None, "--config", help="A taskforge.toml with overrides."),
    since: Optional[str] = typer.Option(None, "--since", help="Keep features most of whose "
                                        "removed lines last changed on or after this day "
                                        "(YYYY-MM-DD, git blame): code a model trained before "
                                        "it cannot recite. Needs the repository's history."),
    statement_style: str = typer.Option("upstream", "--statement-style", help="upstream: the "
                                        "interface with the upstream docstrings; own: signatures "
                                        "only, and what the code raises, in the statement's words "
                                        "(docstrings are retrieval keys for a model that read "
                                        "the project)."),
    max_feature_defs: int = typer.Option(40, "--max-feature-defs", min=1, help="A feature "
                                         "with its dependents (a whole module's too) grows while "
                                         "the tests its removal takes stay within --max-share, and "
                                         "has at most this many definitions, over at most a "
                                         "quarter as many files (4 at least)."),
    check_predictions: bool = typer.Option(False, "--check-predictions", help="Try candidates "
                                           "predicted to break the suite (a body that runs at "
                                           "import) last instead of dropping them, so report.json's "
                                           "`prediction` says how often the prediction is wrong."),
    branches: bool = typer.Option(True, "--branches/--no-branches", help="Also offer the larger "
                                  "arms of functions' if/elif/else chains as features (the arm "
                                  "becomes `raise NotImplementedError`; the condition and every "
                                  "other path stay), after every whole feature: tasks from a "
                                  "library whose tests all go through one dispatcher."),
    as_json: bool = typer.Option(False, "--json", help="Print report.json to stdout."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress output."),
) -> None:
    """Generate feature-reimplementation tasks from REPO into OUT."""
    from taskforge.env.detect import RepoConfig, load_config
    from taskforge.models import FeatureKind, StatementStyle, Tier
    from taskforge.orchestrate.pipeline import Options
    from taskforge.orchestrate.pipeline import generate as run

    names = [k.value for k in FeatureKind]
    kinds = tuple(kind or names)
    bad = [k for k in kinds if k not in names]
    if bad:
        _error(f"unknown --kind {bad[0]} ({', '.join(names)})")
        raise typer.Exit(2) from None
    tiers = [t.value for t in Tier]
    if difficulty is not None and difficulty not in tiers:
        _error(f"unknown --difficulty {difficulty} ({', '.join(tiers)})")
        raise typer.Exit(2) from None
    if python is not None and not re.fullmatch(r"3\.\d{1,2}", python):
        _error(f"--python wants a version like 3.12, not {python!r}")
        raise typer.Exit(2) from None
    since_ts = _day_start(since) if since is not None else None
    styles = [st.value for st in StatementStyle]
    if statement_style not in styles:
        _error(f"unknown --statement-style {statement_style} ({', '.join(styles)})")
        raise typer.Exit(2) from None
    prog = _RichProgress(quiet or as_json)
    try:
        overrides = load_config(config) if config is not None else RepoConfig()
        # By field name, which populate_by_name allows (the alias "test-cmd" is for taskforge.toml)
        overrides = overrides.merged(RepoConfig.model_validate(
            {"python": python, "install": install or None, "test_cmd": test_cmd}))
        report = run(repo, out, Options(ref=ref, max_tasks=max_tasks, jobs=jobs, timeout=timeout,
                                        remote_workers=remote_workers,
                                        require_copies=not allow_uncopied,
                                        max_share=max_share, kinds=kinds, config=overrides,
                                        min_statements=min_statements,
                                        min_tier=Tier(difficulty or "easy"),
                                        min_mutation_score=min_mutation_score,
                                        keep_weak=keep_weak, since=since_ts,
                                        statement_style=StatementStyle(statement_style),
                                        max_feature_defs=max_feature_defs,
                                        check_predictions=check_predictions, branches=branches),
                     progress=cast("PipelineProgress", prog), log=prog.stage)
    except TaskforgeError as exc:
        prog.done()
        _fail(exc)
    except KeyboardInterrupt:
        prog.done()
        _error(INTERRUPTED, "interrupted")
        raise typer.Exit(130) from None
    if as_json:
        typer.echo(report.model_dump_json(indent=2))
    else:
        typer.echo(f"{report.repo} @ {report.source_commit[:12]}: {len(report.tasks)} task(s) in {out}")
        typer.echo(f"baseline: {report.baseline_passing} passing, {report.baseline_failing} failing, "
                   f"{report.flaky_excluded} flaky excluded")
        for st in report.funnel:
            typer.echo(f"  {st.name:<24} {st.count}")
        typer.echo("difficulty: " + ", ".join(f"{k} {n}" for k, n in report.difficulty.items())
                   + "; kinds: " + ", ".join(f"{k} {n}" for k, n in sorted(report.kinds.items()))
                   + f"; large (40+ lines or 2+ files): {report.large_tasks}")
        m = report.copies
        typer.echo(f"copies: {m.hidden_with_copy} of {m.hidden_functions} hidden test functions "
                   f"have must-fail copies ({m.tasks_with_copies} of {len(report.tasks)} tasks); "
                   f"graded tests: {m.graded}, {m.protected} protected by copies, "
                   f"{m.unprotected} unprotected; {m.crossed} tests with crossed copies")
        if report.families:
            typer.echo(f"families of near-duplicate tasks: {len(report.families)} "
                       f"({sum(map(len, report.families.values()))} tasks)")
        reasons: dict[str, int] = {}
        for d in report.drops:
            key = f"{d.stage}: {d.reason.split(':')[0]}"
            reasons[key] = reasons.get(key, 0) + 1
        if reasons:
            typer.echo("drops:")
            for k, n in sorted(reasons.items(), key=lambda kv: -kv[1]):
                typer.echo(f"  {n:>4}  {k}")
        typer.echo(f"time: {report.timings.get('total', 0):.1f}s "
                   f"(test runs {report.timings.get('test_seconds_all', 0):.1f}s)")
    raise typer.Exit(0 if report.tasks else 1)


@app.command(epilog="""Examples:

  taskforge verify tasks/textkit__textkit.cases.to_snake-1a2b3c4d --gold

  taskforge verify TASK --patch solution.diff --json

  taskforge verify TASK --solution ./agent-workspace

  taskforge verify TASK --patch solution.diff --sandbox bwrap   # no Docker daemon
""")
def verify(
    task: Path = typer.Argument(..., help="A task directory written by generate."),
    gold: bool = typer.Option(False, "--gold", help="Grade the gold patch (expect reward 1)."),
    empty: bool = typer.Option(False, "--empty", help="Grade the untouched workspace (expect 0)."),
    patch: Optional[Path] = typer.Option(None, "--patch", help="A unified diff against workspace/."),
    solution: Optional[Path] = typer.Option(None, "--solution", help="A solved copy of workspace/."),
    timeout: Optional[float] = typer.Option(None, help="Seconds allowed for the test run "
                                            "(default: the task's own limit, from its measured run)."),
    policy: str = typer.Option("score", help="What monitor findings cost: 'score' (high-confidence "
                                             "ones score 0) or 'flag' (reported only)."),
    sandbox: Optional[str] = SANDBOX_OPTION,
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Grade a solution for TASK in a fresh sandbox; exit 0 resolved, 1 not, 2+ error."""
    from taskforge.grade.verify import Solution
    from taskforge.grade.verify import verify as run

    defences = _defences(policy)
    chosen = [x for x in (gold, empty, patch is not None, solution is not None) if x]
    if len(chosen) != 1:
        _error("give exactly one of --gold, --empty, --patch FILE, --solution DIR")
        raise typer.Exit(2) from None
    try:
        if gold:
            sol = Solution.gold()
        elif empty:
            sol = Solution.empty()
        elif patch is not None:
            if not patch.is_file():
                _error(f"no such patch file: {patch}")
                raise typer.Exit(2) from None
            sol = Solution.from_patch_file(patch)
        else:
            assert solution is not None     # exactly one of the four was given
            sol = Solution.from_dir(solution)
        result = run(task, sol, timeout=timeout, defences=defences, backend=_backend(sandbox))
    except TaskforgeError as exc:
        _fail(exc)
    if as_json:
        typer.echo(result.model_dump_json(indent=2))
    else:
        if result.error:
            _error(f"{result.error}")
        typer.echo(f"reward: {result.reward}")
        typer.echo(f"FAIL_TO_PASS: {result.f2p_passed}/{result.f2p_total} passed")
        typer.echo(f"PASS_TO_PASS: {result.p2p_passed}/{result.p2p_total} passed, "
                   f"{len(result.p2p_regressions)} regression(s)")
        for t in result.f2p_failures[:10]:
            typer.echo(f"  not passing: {t}")
        for t in result.p2p_regressions[:10]:
            typer.echo(f"  regression:  {t}")
        for t in result.collection_errors[:5]:
            typer.echo(f"  not collected: {t}")
        for f in result.findings:
            typer.echo(f"  {f.severity.value + ':':<8} {f.text()}")
        if result.copies_planted:
            typer.echo(f"copies: {result.copies_matched}/{result.copies_planted} ended as on the gold")
        typer.echo(f"time: {result.wall_seconds:.1f}s (tests {result.test_seconds:.1f}s)")
    if result.error:
        raise typer.Exit(3) from None
    raise typer.Exit(0 if result.resolved else 1)


def _defences(policy: str):
    from taskforge.grade.findings import Policy
    from taskforge.grade.verify import Defences

    try:
        return Defences(policy=Policy(policy))
    except ValueError:
        _error(f"--policy must be 'score' or 'flag', not {policy!r}")
        raise typer.Exit(2) from None


@app.command("verify-batch", epilog="""Examples:

  taskforge verify-batch pairs.jsonl --workers 4 --json > results.jsonl

pairs.jsonl holds one JSON object a line: {"task": "tasks/ID", "solution": S}, where S is
"gold", "empty", {"patch": "file.diff"} or {"dir": "solved-workspace/"}.
""")
def verify_batch(
    pairs: Path = typer.Argument(..., help="JSON lines of {task, solution}."),
    workers: int = typer.Option(max(1, os.cpu_count() or 1), "--workers", "-w", min=1,
                                help="Verifications at once."),
    timeout: Optional[float] = typer.Option(None, help="Seconds allowed for each test run "
                                            "(default: each task's own limit)."),
    policy: str = typer.Option("score", help="What monitor findings cost: 'score' or 'flag'."),
    warm: Optional[int] = typer.Option(None, "--warm", min=0, help="Sandboxes started ahead per "
                                       "task image, each used once (default: one per worker; "
                                       "0: start each on demand)."),
    sandbox: Optional[str] = SANDBOX_OPTION,
    ray: bool = typer.Option(False, "--ray", help="Grade on a Ray cluster (RAY_ADDRESS, or "
                             "--ray-address): actors on every node, each with that node's "
                             "sandboxes; a lost node's work is retried elsewhere."),
    ray_address: Optional[str] = typer.Option(None, "--ray-address", help="The cluster to join "
                                              "(default $RAY_ADDRESS, else a local one)."),
    as_json: bool = typer.Option(False, "--json", help="One JSON result a line."),
) -> None:
    """Grade many (task, solution) pairs concurrently; results in input order.
    One bad item (a missing task, a crashing solution) never costs the others."""
    from taskforge.grade.verify import Solution, verify_many

    defences = _defences(policy)
    if not pairs.is_file():
        _error(f"no such file: {pairs}")
        raise typer.Exit(2) from None
    items = []
    for n, line in enumerate(pairs.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            sol = obj["solution"]
            if sol == "gold":
                s = Solution.gold()
            elif sol == "empty":
                s = Solution.empty()
            elif isinstance(sol, dict) and "patch" in sol:
                s = Solution.from_patch_file(sol["patch"])
            elif isinstance(sol, dict) and "dir" in sol:
                s = Solution.from_dir(sol["dir"])
            else:
                raise ValueError(f"unknown solution {sol!r}")
            items.append((obj["task"], s))
        except (ValueError, KeyError, TypeError, OSError, TaskforgeError) as exc:
            msg = exc.message if isinstance(exc, TaskforgeError) else str(exc)
            _error(f"{pairs}:{n}: {msg}")
            raise typer.Exit(2) from None
    if ray:
        _verify_batch_ray(items, timeout, _backend(sandbox), warm, ray_address, as_json)
    results = verify_many(items, workers=workers, timeout=timeout, defences=defences, warm=warm,
                          backend=_backend(sandbox))
    for r in results:
        if as_json:
            typer.echo(r.model_dump_json())
        else:
            typer.echo(f"{r.instance_id}  {r.solution:<8} reward={r.reward}  "
                       f"f2p={r.f2p_passed}/{r.f2p_total}  "
                       f"{'error=' + r.error if r.error else ''}")
    raise typer.Exit(3 if any(r.error for r in results) else 0)


def _verify_batch_ray(items, timeout, backend, warm, address, as_json) -> None:
    from taskforge.training.raygrade import ClusterGrader

    try:
        grader = ClusterGrader(address=address, backend=backend, warm=1 if warm is None else warm)
        try:
            results = grader.grade_many(items, timeout=timeout)
        finally:
            grader.close()
    except TaskforgeError as exc:
        _fail(exc)
    for r in results:
        if as_json:
            typer.echo(json.dumps(r))
        else:
            typer.echo(f"{r.get('instance_id')}  {r.get('solution', ''):<8} reward={r.get('reward')}  "
                       f"node={str(r.get('node', ''))[:8]}  "
                       f"{'error=' + r['error'] if r.get('error') else ''}")
    raise typer.Exit(3 if any(r.get("error") for r in results) else 0)


@app.command(epilog="""Examples:

  taskforge corpus https://github.com/a/x.git https://github.com/b/y.git --out tasks/

  taskforge corpus --from corpus.toml --out tasks/ --ray      # on the Ray cluster

corpus.toml: repos = ["URL or path", ...] and optionally max_tasks = N; a .txt
file holds one repository a line.
""")
def corpus(
    repos: Optional[list[str]] = typer.Argument(None, help="Git URLs or local repositories."),
    source: Optional[Path] = typer.Option(None, "--from", help="A TOML (repos = [...]) or a "
                                          "text file with one repository a line."),
    out: Path = typer.Option(..., "--out", "-o", help="Output directory: OUT/<name>/ per "
                             "repository, OUT/corpus.json."),
    max_tasks: Optional[int] = typer.Option(None, "--max-tasks", min=1, help="Per repository."),
    jobs: int = typer.Option(max(1, min(os.cpu_count() or 1, 4)), "--jobs", "-j", min=1,
                             help="Validation workers per repository."),
    remote_workers: int = typer.Option(0, "--remote-workers", min=0, help="Per repository: remote workers "
                                "on other nodes of the Ray cluster, beside its --jobs."),
    ray: bool = typer.Option(False, "--ray", help="One Ray task per repository on the cluster "
                             "($RAY_ADDRESS or --ray-address); a lost node's repository is "
                             "retried elsewhere and resumes from its journal."),
    ray_address: Optional[str] = typer.Option(None, "--ray-address"),
    branches: bool = typer.Option(True, "--branches/--no-branches",
                                  help="As generate's --branches/--no-branches."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per repository."),
) -> None:
    """Generate tasks from many repositories, locally one after another or spread
    over a Ray cluster. One repository's failure never costs another its tasks."""
    from taskforge.orchestrate.pipeline import Options

    names = list(repos or [])
    limit = max_tasks
    if source is not None:
        try:
            if source.suffix == ".toml":
                import tomllib

                data = tomllib.loads(source.read_text())
                names += [str(r) for r in data.get("repos", [])]
                limit = limit or data.get("max_tasks")
            else:
                names += [ln.strip() for ln in source.read_text().splitlines()
                          if ln.strip() and not ln.lstrip().startswith("#")]
        except (OSError, ValueError) as exc:
            _error(f"cannot read {source}: {exc}")
            raise typer.Exit(2) from None
    if not names:
        _error("no repositories: give them as arguments or with --from FILE")
        raise typer.Exit(2) from None
    opts = Options(max_tasks=limit, jobs=jobs, remote_workers=remote_workers, branches=branches)
    from taskforge.orchestrate.corpus import CorpusReport, summary_line

    if ray:
        from taskforge.orchestrate.cluster import generate_corpus

        try:
            generate_corpus(names, out, opts, address=ray_address)
        except TaskforgeError as exc:
            _fail(exc)
        report = CorpusReport.model_validate_json((out / "corpus.json").read_text())
    else:
        from taskforge.orchestrate.corpus import run_local

        report = run_local(names, out, opts, log=lambda s: typer.echo(s, err=True))
    for r in report.rows:
        if as_json:
            typer.echo(json.dumps(r.model_dump(mode="json")))
        elif r.tasks:
            typer.echo(f"{r.repo}: {len(r.tasks)} task(s) in {r.out} ({r.seconds:.0f} s)")
        else:
            typer.echo(f"{r.repo}: " + (f"error: {r.error}" if r.error else f"no task: {r.cause}"))
    typer.echo(summary_line(report), err=as_json)
    raise typer.Exit(0 if report.yielding else 1)


@image_app.command("build", epilog="""Examples:

  taskforge image build                      # FROM python:3.11-slim (needs a registry)

  taskforge image build --base taskforge/debian-python:bookworm
""")
def image_build(
    base: Optional[str] = typer.Option(None, help="Base image (default: $TASKFORGE_BASE_IMAGE "
                                                   "or python:3.11-slim)."),
    as_json: bool = typer.Option(False, "--json", help="Print the image name as JSON."),
) -> None:
    """Build the sandbox base image from the top-level Dockerfile."""
    from taskforge.sandbox.docker.images import ensure_base_image

    try:
        if base:
            os.environ["TASKFORGE_BASE_IMAGE"] = base
        name = ensure_base_image(base, log=lambda s: typer.echo(s, err=True))
    except TaskforgeError as exc:
        _fail(exc)
    typer.echo(json.dumps({"image": name}) if as_json else name)


env_app = typer.Typer(no_args_is_help=True, help="Environments for sandboxes without Docker.")
app.add_typer(env_app, name="env")


@env_app.command("prepare", epilog="""Examples:

  scripts/make-debian-rootfs.sh /var/lib/taskforge/debian-bookworm     # once per host
  export TASKFORGE_ROOTFS_BASE=/var/lib/taskforge/debian-bookworm
  taskforge env prepare tasks/*/
  taskforge verify tasks/ID --gold --sandbox bwrap
""")
def env_prepare(
    tasks: list[Path] = typer.Argument(..., help="Task directories."),
    base: Optional[Path] = typer.Option(None, "--base", help="A root filesystem with python3 "
                                        "(default: $TASKFORGE_ROOTFS_BASE)."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per environment."),
) -> None:
    """Build each task's environment as a root filesystem directory, from the
    recipe the task records, with no Docker daemon (for `--sandbox bwrap`).
    Tasks that share an environment build it once; one failure never stops the rest."""
    from taskforge.package.store import load_task
    from taskforge.sandbox.bwrap import rootfs

    if base is not None:
        os.environ["TASKFORGE_ROOTFS_BASE"] = str(base)
    failed = 0
    for task in tasks:
        try:
            loaded = load_task(task)
            rec = loaded.record
            path = rootfs.prepare_task(loaded.environment_request(),
                                       log=lambda s: typer.echo(s, err=True))
            out = {"task": str(task), "environment": rec.image_name, "path": str(path)}
        except TaskforgeError as exc:
            failed += 1
            out = {"task": str(task), "error": exc.message}
            if not as_json:
                _error(f"{task}: {exc.message}", kind=type(exc).__name__)
        if as_json:
            typer.echo(json.dumps(out))
        elif "path" in out:
            typer.echo(f"{out['environment']}: {out['path']}")
    raise typer.Exit(3 if failed else 0)


@app.command(epilog="""Examples:

  taskforge audit tasks/textkit__textkit.cases.to_snake-1a2b3c4d

  taskforge audit TASK --json --no-image
""")
def audit(
    task: Path = typer.Argument(..., help="A task directory."),
    image: bool = typer.Option(True, "--image/--no-image", help="Also scan the environment image."),
    as_json: bool = typer.Option(False, "--json", help="Print the findings as JSON."),
) -> None:
    """Look for the removed code in TASK's workspace, git objects and image; exit 1 on findings."""
    from taskforge.leaks.audit import audit as run

    try:
        report = run(task, image=image)
    except TaskforgeError as exc:
        _fail(exc)
    if as_json:
        typer.echo(json.dumps(report.as_dict(), indent=2))
    else:
        for f in report.findings:
            typer.echo(f.line())
        typer.echo(f"{len(report.findings)} finding(s), {report.needles} removed bodies searched"
                   f"{' (workspace and image)' if report.image_scanned else ' (workspace)'} "
                   f"in {report.seconds:.2f}s")
    raise typer.Exit(1 if report.findings else 0)


@app.command(epilog="Example:\n\n  taskforge cleanup")
def cleanup(as_json: bool = typer.Option(False, "--json")) -> None:
    """Remove every container taskforge started that is still around."""
    from taskforge.sandbox import backend_class

    try:
        n = backend_class("docker").remove_leftovers()
    except TaskforgeError as exc:
        _fail(exc)
    typer.echo(json.dumps({"removed": n}) if as_json else f"removed {n} container(s)")


@app.command(epilog="""Examples:

  taskforge shard tasks/ --out shards/

  taskforge shard tasks-a/ tasks-b/ --out shards/ --splits train=0.8,val=0.1,test=0.1 --seed 7

  taskforge shard tasks/ --out shards-jsonl/ --format jsonl --shard-size 100 --json

Writes OUT/data/<split>-NNNNN-of-NNNNN.<format> and OUT/manifest.json. A repository's
tasks all go to one split; the same tasks and options give byte-identical files.
""")
def shard(
    tasks: list[Path] = typer.Argument(..., help="Task directories, or directories of tasks."),
    out: Path = typer.Option(..., "--out", "-o", help="Shard directory to write (replaced whole)."),
    fmt: str = typer.Option("parquet", "--format", help="parquet or jsonl."),
    shard_size: int = typer.Option(256, "--shard-size", min=1, help="Rows per shard file."),
    splits: str = typer.Option("train=1", help="Split fractions by repository, e.g. "
                               "train=0.8,val=0.1,test=0.1."),
    seed: int = typer.Option(0, help="Seed of the repository-to-split hash."),
    as_json: bool = typer.Option(False, "--json", help="Print manifest.json to stdout."),
) -> None:
    """Write TASKS as deterministic shards with a manifest, split by repository."""
    from taskforge.training.shards import parse_splits, write_shards

    try:
        manifest = write_shards(tasks, out, fmt=fmt, shard_size=shard_size,
                                splits=parse_splits(splits), seed=seed)
    except TaskforgeError as exc:
        _fail(exc)
    if as_json:
        typer.echo(manifest.model_dump_json(indent=2))
    else:
        for f in manifest.shards:
            typer.echo(f"{out / f.path}  {f.rows} rows  {f.bytes} bytes  sha256 {f.sha256[:16]}")
        typer.echo(f"{manifest.total_rows} task(s) in {len(manifest.shards)} shard(s): "
                   + ", ".join(f"{k} {v}" for k, v in manifest.split_rows.items()))


@app.command(epilog="""Examples:

  taskforge export shards/ --to verl --out verl-data/ --max-prompt-length 4096

  taskforge export shards/ --to trl --out trl-data/ --tokenizer ./my-tokenizer --json

  taskforge export shards/ --to openrlhf --out orl-data/""")
def export(
    shards: Path = typer.Argument(..., help="A shard directory (taskforge shard)."),
    to: str = typer.Option(..., "--to", help="verl, trl, openrlhf, or harbor (task directories)."),
    out: Path = typer.Option(..., "--out", "-o", help="Directory to write (must not exist or be empty)."),
    tokenizer: Optional[str] = typer.Option(None, help="A local tokenizer (transformers) to count "
                                            "prompt tokens with; else ~4 characters a token."),
    max_prompt_length: Optional[int] = typer.Option(None, min=1, help="The trainer's prompt limit "
                                                    "to check against (default: its own default)."),
    as_json: bool = typer.Option(False, "--json", help="Print export.json to stdout."),
) -> None:
    """Write SHARDS in a trainer's dataset shape: a chat `prompt`, the `instance_id`
    the reward needs, no grading columns; per split, with a dataset card."""
    from taskforge.training.export import export as run

    if to == "harbor":
        from taskforge.training.harbor import export_harbor

        try:
            harbor = export_harbor(shards, out, log=None if as_json else lambda s: typer.echo(s, err=True))
        except TaskforgeError as exc:
            _fail(exc)
        typer.echo(harbor.model_dump_json(indent=2) if as_json
                   else f"{len(harbor.tasks)} Harbor task(s) in {out}\nwarning: {harbor.note}")
        return
    try:
        report = run(shards, out, to, tokenizer=tokenizer, max_prompt_length=max_prompt_length,
                     log=None if as_json else lambda s: typer.echo(s, err=True))
    except TaskforgeError as exc:
        _fail(exc)
    if as_json:
        typer.echo(report.model_dump_json(indent=2))
    else:
        for sp in report.splits:
            typer.echo(f"{out / sp.path}  {sp.rows} rows")
        if report.note:
            typer.echo(f"warning: {report.note}", err=True)


@app.command(epilog="""Examples:

  taskforge unshard shards/ --out tasks/

  taskforge unshard shards/data/train-00000-of-00001.parquet --out tasks/ --json

Checks every shard against its manifest and every row against its digests, and
refuses a row whose rebuilt workspace commit is not its base_commit.
""")
def unshard(
    shards: list[Path] = typer.Argument(..., help="Shard directories (with manifest.json) or "
                                                  "shard files."),
    out: Path = typer.Option(..., "--out", "-o", help="Directory to write task directories to."),
    as_json: bool = typer.Option(False, "--json", help="Print the task directories as JSON."),
) -> None:
    """Rebuild task directories from shard rows."""
    from taskforge.training.shards import unshard as run

    try:
        written = run(shards, out)
    except TaskforgeError as exc:
        _fail(exc)
    if as_json:
        typer.echo(json.dumps({"tasks": [str(p) for p in written]}, indent=2))
    else:
        for p in written:
            typer.echo(str(p))
        typer.echo(f"{len(written)} task(s) in {out}")


@app.command(epilog="""Examples:

  taskforge serve --tasks tasks/ --port 8000

  taskforge serve --tasks shards/ --concurrency 4 --max-queue 256 --timeout 170

  curl -s localhost:8000/health
  curl -s localhost:8000/reward -d '{"instance_id": "ID", "solution": "<unified diff>"}'

  taskforge serve --tasks shards/ --stats run1-stats.jsonl    # then: taskforge select ...

  RAY_ADDRESS=head:6379 taskforge serve --tasks /shared/tasks --ray --host 0.0.0.0

Endpoints: GET /health, POST /reward, POST /reward/batch {"items": [...]},
POST /get_reward (OpenRLHF: {"query", "prompts", "labels"} -> {"rewards", ...}),
GET /stats (per-task attempts, solves, solve_rate). Every answer given with a reward
is recorded in the --stats file (default: $TASKFORGE_STATS, else one file per task
source under ~/.cache/taskforge/stats/, printed at start and in /health).
""")
def serve(
    tasks: Path = typer.Option(..., "--tasks", help="A directory of tasks, or a shard directory."),
    host: str = typer.Option("127.0.0.1", help="Address to listen on."),
    port: int = typer.Option(8000, help="Port to listen on."),
    concurrency: int = typer.Option(max(1, min(os.cpu_count() or 1, 4)), min=1,
                                    help="Answers graded at once."),
    max_queue: Optional[int] = typer.Option(None, "--max-queue", min=0,
                                            help="Answers waiting beyond those (default 4096); "
                                                 "past it, 503."),
    max_body: int = typer.Option(8 * 1024 * 1024, "--max-body", min=1024,
                                 help="Largest request body in bytes; past it, 413."),
    timeout: Optional[float] = typer.Option(None, help="Seconds allowed for one answer, queue "
                                            "included (default 170: under OpenRLHF's 180 s "
                                            "client timeout)."),
    infra_score: Optional[float] = typer.Option(None, "--infra-score",
                                                help="OpenRLHF endpoint: score for an answer that "
                                                     "could not be graded (default: answer 503)."),
    cache: Optional[Path] = typer.Option(None, help="Where shard rows become task directories "
                                                    "(default ~/.cache/taskforge/tasks)."),
    stats: Optional[Path] = typer.Option(None, "--stats", help="Solve stats file to append "
                                         "attempts to (JSON lines; shared safely)."),
    no_stats: bool = typer.Option(False, "--no-stats", help="Record no attempts."),
    max_episodes: int = typer.Option(64, "--max-episodes", min=0,
                                     help="Agent episodes open at once (0: no /episodes)."),
    episode_idle: float = typer.Option(900.0, "--episode-idle",
                                       help="Seconds an unused episode stays open."),
    warm: Optional[int] = typer.Option(None, "--warm", min=0, help="Sandboxes started ahead per "
                                       "task image, each used for one answer (default: the "
                                       "concurrency; 0: start each on demand)."),
    sandbox: Optional[str] = SANDBOX_OPTION,
    ray: bool = typer.Option(False, "--ray", help="Grade on actors over a Ray cluster (RAY_ADDRESS, "
                             "or the local one); --tasks must be on a path every node sees."),
    ray_address: Optional[str] = typer.Option(None, "--ray-address",
                                              help="The cluster to join (implies --ray)."),
    openenv: bool = typer.Option(False, "--openenv", help="Also serve the episodes as an OpenEnv "
                                 "environment at /openenv (needs the openenv extra)."),
    log_level: str = typer.Option("warning", "--log-level", help="debug, info, warning, error."),
) -> None:
    """Serve rewards over HTTP: JSON in and out, bounded concurrency and queue."""
    from taskforge.training.server import ServeConfig
    from taskforge.training.server import serve as run

    try:
        given: dict[str, Any] = {k: v for k, v in {"max_queue": max_queue, "timeout": timeout, "warm": warm,
                                   "sandbox": _backend(sandbox),
                                   "ray": ray_address or ("auto" if ray else None)}.items()
                 if v is not None}          # else ServeConfig's defaults
        cfg = ServeConfig(tasks=str(tasks), host=host, port=port, concurrency=concurrency,
                          max_body=max_body, infra_score=infra_score,
                          cache=str(cache) if cache else None, stats=str(stats) if stats else None,
                          record_stats=not no_stats, max_episodes=max_episodes,
                          episode_idle=episode_idle, openenv=openenv, **given)
        run(cfg, log_level=log_level)
    except TaskforgeError as exc:
        _fail(exc)


@app.command(epilog="""Examples:

  taskforge select shards/ --out edge/ --stats run1-stats.jsonl --solve-rate 0.1:0.9

  taskforge select shards/ --out hard/ --tier medium --tier hard --json

  taskforge select tasks/ --out fresh/ --stats run1-stats.jsonl --solve-rate 0:0.5 \\
      --min-attempts 4 --untried exclude --format jsonl

Tasks with fewer than --min-attempts attempts in the stats have no solve rate
yet: --untried include (the default) keeps them so they get tried, exclude drops
them. The subset is a shard directory like `shard` writes, with the same splits.
""")
def select(
    inputs: list[Path] = typer.Argument(..., help="Shard directories or files, task directories, "
                                                  "or directories of tasks."),
    out: Path = typer.Option(..., "--out", "-o", help="Shard directory to write (replaced whole)."),
    tier: list[str] = typer.Option([], "--tier", help="Keep this difficulty tier: easy, medium "
                                                      "or hard (repeatable; default all)."),
    solve_rate: Optional[str] = typer.Option(None, "--solve-rate", help="Keep tasks solved in "
                                             "LO:HI of their attempts, e.g. 0.1:0.9 (ends included)."),
    stats: list[Path] = typer.Option([], "--stats", help="Solve stats file(s) from serve or the "
                                     "reward API (default $TASKFORGE_STATS; repeatable)."),
    min_attempts: int = typer.Option(1, "--min-attempts", help="Attempts a task needs to have a "
                                     "solve rate; fewer: untried."),
    untried: str = typer.Option("include", "--untried", help="include or exclude tasks with "
                                "fewer than --min-attempts attempts."),
    fmt: str = typer.Option("parquet", "--format", help="parquet or jsonl."),
    shard_size: int = typer.Option(256, "--shard-size", min=1, help="Rows per shard file."),
    splits: Optional[str] = typer.Option(None, help="Split fractions (default: the input "
                                         "manifest's, else train=1)."),
    seed: Optional[int] = typer.Option(None, help="Split seed (default: the input manifest's)."),
    as_json: bool = typer.Option(False, "--json", help="Print the selection as JSON."),
) -> None:
    """Write the tasks of INPUTS at the edge of the model's ability (by difficulty
    tier and solve rate) as a shard subset that serve, unshard and trainers read."""
    from taskforge.training.curriculum import select as run
    from taskforge.training.shards import parse_splits

    try:
        report = run(inputs, out, tiers=tier, solve_rate=solve_rate, stats=stats or None,
                     min_attempts=min_attempts, untried=untried, fmt=fmt, shard_size=shard_size,
                     splits=parse_splits(splits) if splits is not None else None, seed=seed)
    except TaskforgeError as exc:
        _fail(exc)
    if as_json:
        typer.echo(report.model_dump_json(indent=2))
        return
    tiers = ", ".join(f"{t} {c.kept}/{c.read}" for t, c in report.by_tier.items() if c.read)
    typer.echo(f"kept {report.kept} of {report.read} task(s) in {out} "
               f"({report.shards} shard(s); " + ", ".join(f"{k} {v}" for k, v in report.splits.items())
               + ")")
    typer.echo(f"by tier (kept/read): {tiers}" + (f"  [filter: {', '.join(report.tiers)}]"
                                                   if report.tiers else ""))
    b = report.by_band
    band = (f"in {report.solve_rate[0]:g}:{report.solve_rate[1]:g}" if report.solve_rate
            else "tried")
    typer.echo(f"by solve rate: {band} {b.in_band}, below {b.below}, above {b.above}, "
               f"untried {b.untried} ({b.untried_kept} kept; fewer than {report.min_attempts} "
               f"attempt(s))")


@app.command(epilog="""Examples:

  taskforge harden ../lib --tasks tasks/ --stats run1-stats.jsonl --out harder/

  taskforge harden https://github.com/a/x.git --tasks corpus/ --stats a.jsonl --stats b.jsonl \\
      --out harder/ --min-solve 0.8 --min-attempts 4 --per-repo 8 --json

  taskforge harden ../lib --tasks tasks/ --stats run1-stats.jsonl --out harder/ --mode grow

For each repository, the features of its tasks solved in at least --min-solve
of their attempts are grown (a proposed feature that holds a solved one and
more: the helper it calls with its other users, the class or module around
it) and paired (more files first, then more lines; overlapping features and
one family never pair), each removed as one task, at the commit the tasks were
cut from, through every gate generate applies. --mode picks grow, pair or both.
""")
def harden(
    repos: list[str] = typer.Argument(..., help="The repositories the tasks were generated from "
                                                "(URLs or paths)."),
    tasks: list[Path] = typer.Option(..., "--tasks", help="Task directories, directories of "
                                     "tasks, or a corpus output (repeatable)."),
    stats: list[Path] = typer.Option(..., "--stats", help="Solve stats file(s) from serve or the "
                                     "reward API (repeatable)."),
    out: Path = typer.Option(..., "--out", "-o", help="OUT/<name>/ per repository."),
    min_solve: float = typer.Option(0.5, "--min-solve", help="A task is solved at this solve "
                                    "rate or above."),
    min_attempts: int = typer.Option(1, "--min-attempts", min=1, help="Attempts a task needs "
                                     "before its solve rate counts."),
    per_repo: int = typer.Option(4, "--per-repo", min=1, help="Harder tasks of each kind to "
                                 "make per repository."),
    mode: str = typer.Option("both", "--mode", help="grow (features around solved ones), pair "
                             "(solved features together) or both."),
    max_share: float = typer.Option(0.6, "--max-share", help="Largest share of the suite one "
                                    "harder task may hide (generate's default is 0.4: a feature "
                                    "grown around a solved one takes the tests of what it stood "
                                    "on too)."),
    jobs: int = typer.Option(max(1, min(os.cpu_count() or 1, 4)), "--jobs", "-j", min=1,
                             help="Validation workers per repository."),
    max_feature_defs: int = typer.Option(40, "--max-feature-defs", min=1, help="As the tasks "
                                         "were generated with (their features must be proposed "
                                         "again to be combined)."),
    statement_style: Optional[str] = typer.Option(None, "--statement-style", help="upstream or "
                                                  "own (default: the solved tasks' own style)."),
    config: Optional[Path] = typer.Option(None, "--config", help="A taskforge.toml with install "
                                          "or test overrides, as for generate."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Make harder tasks where the model solves the ones it has: features grown
    around its solved ones, and solved features removed together (pairs; a
    solved harder task joins another solved feature)."""
    from taskforge.env.detect import RepoConfig, load_config
    from taskforge.models import StatementStyle
    from taskforge.orchestrate.harden import HardenMode
    from taskforge.orchestrate.harden import harden as run
    from taskforge.orchestrate.options import Options

    styles = [st.value for st in StatementStyle]
    if statement_style is not None and statement_style not in styles:
        _error(f"unknown --statement-style {statement_style} ({', '.join(styles)})")
        raise typer.Exit(2) from None
    modes = [m.value for m in HardenMode]
    if mode not in modes:
        _error(f"unknown --mode {mode} ({', '.join(modes)})")
        raise typer.Exit(2) from None
    try:
        overrides = load_config(config) if config is not None else RepoConfig()
        report = run(repos, tasks, out, stats, min_solve=min_solve, min_attempts=min_attempts,
                     per_repo=per_repo,
                     options=Options(jobs=jobs, config=overrides, max_feature_defs=max_feature_defs,
                                     max_share=max_share),
                     statement_style=StatementStyle(statement_style) if statement_style else None,
                     log=None if as_json else typer.echo, mode=HardenMode(mode))
    except TaskforgeError as exc:
        _fail(exc)
    except KeyboardInterrupt:
        _error(INTERRUPTED, "interrupted")
        raise typer.Exit(130) from None
    if as_json:
        typer.echo(report.model_dump_json(indent=2))
    else:
        for r in report.repos:
            typer.echo(f"{r.repo}: {len(r.tasks)} harder task(s) from {len(r.grow)} solved feature(s) "
                       f"to grow and {len(r.planned)} pair(s), of {r.solved} solved"
                       + (f" ({r.error})" if r.error else "")
                       + (f" in {r.out}" if r.tasks else ""))
    raise typer.Exit(0 if any(r.tasks for r in report.repos) else 1)


@app.command("stats", epilog="""Examples:

  taskforge stats --stats run1-stats.jsonl

  taskforge stats --stats host-a.jsonl --stats host-b.jsonl --json
""")
def stats_cmd(
    stats: list[Path] = typer.Option([], "--stats", help="Solve stats file(s) (default "
                                     "$TASKFORGE_STATS; repeatable)."),
    as_json: bool = typer.Option(False, "--json", help="Print the aggregate as JSON."),
) -> None:
    """Per-task attempts, solves and solve rate recorded by serve or the reward API."""
    from taskforge.errors import UserError
    from taskforge.training.curriculum import STATS_ENV, read_stats

    try:
        if not stats and not os.environ.get(STATS_ENV):
            raise UserError(f"no stats file: pass --stats FILE or set ${STATS_ENV}")
        report = read_stats(stats or [Path(os.environ[STATS_ENV])])
    except TaskforgeError as exc:
        _fail(exc)
    if as_json:
        typer.echo(report.model_dump_json(indent=2))
        return
    for t in report.tasks.values():
        typer.echo(f"{t.solve_rate:6.1%}  {t.solves:>5}/{t.attempts:<5}  {t.instance_id}")
    typer.echo(f"{len(report.tasks)} task(s), {report.attempts} attempt(s), {report.solves} "
               f"solve(s)" + (f"; {report.skipped_lines} unreadable line(s) skipped"
                              if report.skipped_lines else ""))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(app())
