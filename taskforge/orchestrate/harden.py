"""`taskforge harden`: harder tasks from the repositories whose tasks get solved.

A trainer's model outgrows a task set: the tasks it solves teach it little.
Two ways up from a solved feature (HardenMode):
- grow: a proposed feature that holds the solved one and more (the helper it
  calls with that helper's other users, the class or module around it;
  propose.features.grown). The model must rebuild what the part it solved
  stood on, with the part's own tests among the hidden ones.
- pair: two solved features removed at once, a larger task that still
  validates (each part is closed under its dependents, so their union is
  too). `plan` picks the pairs (a pure function with a table test).
Pairs of unrelated features measured no harder than their parts (a solver
takes them one after the other: bench/statement_only.md), so both is the
default, growth first. `harden` reads the tasks and the solve statistics and
runs generate on each repository with those candidates only (Options.around,
Options.combine), at the commit the tasks were cut from. Every task passes the
gates a generated one does (green rest, failing hidden tests, copies,
stand-ins, partial solutions, leaks, gold 1 and empty 0).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel, Field

from taskforge.errors import TaskforgeError, UserError
from taskforge.models import FeatureKind, StatementStyle


class HardenMode(StrEnum):
    """Which harder tasks `harden` makes from solved features."""
    GROW = "grow"      # a proposed feature holding a solved one and more
    PAIR = "pair"      # two solved features removed as one task
    BOTH = "both"      # grown and paired, interleaved


@dataclass(frozen=True)
class Part:
    """What `plan` needs of one task."""
    instance_id: str
    feature: str                        # the proposed feature's name (FeatureInfo.name)
    kind: FeatureKind
    files: frozenset[str]               # source files its removal touches
    symbols: frozenset[str]             # removed definitions' qualnames
    hidden: frozenset[str]              # its FAIL_TO_PASS
    family: str = ""
    lines: int = 0                      # removed lines
    solve_rate: float = 0.0
    attempts: int = 0
    names: tuple[str, ...] = ()         # the proposed features it removes (a harder task: several)
    commit: str = ""                    # the source commit it was cut from
    cut_at: str = ""                    # that commit's date (ISO 8601)
    style: str = ""                     # its statement style

    def features(self) -> tuple[str, ...]:
        return self.names or (self.feature,)


def solved(parts: Iterable[Part], min_rate: float, min_attempts: int) -> list[Part]:
    """Tasks the model solves: at least `min_attempts` attempts, solve rate at or
    above `min_rate`. Whole modules are not combined (their file goes whole)."""
    return [p for p in parts if p.attempts >= min_attempts and p.solve_rate >= min_rate
            and p.kind != FeatureKind.MODULE]


def _overlap(a: Part, b: Part) -> bool:
    """One contains or shares a definition, shares a hidden test, or is of one family:
    together they are hardly larger than one of them."""
    def inside(x: str, names: frozenset[str]) -> bool:
        return x in names or any(x.startswith(n + ".") for n in names)
    return (any(inside(s, b.symbols) for s in a.symbols) or any(inside(s, a.symbols) for s in b.symbols)
            or bool(a.hidden & b.hidden) or (bool(a.family) and a.family == b.family))


def newest_cut(parts: list[Part]) -> list[Part]:
    """The parts cut from the newest source commit (by its date): pairs are
    removed together at one commit."""
    if not parts:
        return []
    last = max(parts, key=lambda p: (p.cut_at, p.commit))
    return [p for p in parts if p.commit == last.commit]


def plan(parts: list[Part], per_repo: int) -> list[tuple[str, ...]]:
    """Pairs of features of one repository to remove together, at most
    `per_repo`: pairs over more files first (multi-file features are what
    "hard" means), then more removed lines; ties by name, so the plan is
    deterministic. Overlapping parts never pair, and a part that overlaps one
    already paired (the same feature, or a cluster around the same method)
    joins no other pair, so two harder tasks never share code. A part that is
    itself a harder task contributes its features: solved pairs grow to
    three or four features. Each group is the sorted names of its features."""
    by_name = {p.feature: p for p in parts}
    cands = []
    ps = sorted(by_name.values(), key=lambda p: p.feature)
    for i, a in enumerate(ps):
        for b in ps[i + 1:]:
            if not _overlap(a, b):
                cands.append((-len(a.files | b.files), -(a.lines + b.lines), a.feature, b.feature))
    cands.sort()
    used: list[Part] = []
    out: list[tuple[str, ...]] = []
    for _, _, x, y in cands:
        if len(out) >= per_repo:
            break
        pair = [by_name[x], by_name[y]]
        if any(p is u or _overlap(p, u) for p in pair for u in used):
            continue
        group = tuple(sorted({*pair[0].features(), *pair[1].features()}))
        if len(group) < 2 or group in out:
            continue
        used += pair
        out.append(group)
    return out


def growth_order(parts: list[Part]) -> list[Part]:
    """The solved features to grow, most solved first (then larger, then by
    name): whole modules have nothing around them to take."""
    return sorted((p for p in parts if p.kind != FeatureKind.MODULE and p.symbols),
                  key=lambda p: (-p.solve_rate, -p.lines, p.feature))


class HardenRepo(BaseModel):
    repo: str
    out: str = ""
    solved: int = 0                       # its tasks the model solves
    planned: list[list[str]] = Field(default_factory=list)
    grow: list[str] = Field(default_factory=list)   # solved features grown around (names)
    tasks: list[str] = Field(default_factory=list)
    error: str | None = None


class HardenReport(BaseModel):
    """What `harden` read and wrote: per repository, the pairs tried and the tasks made."""
    tasks_read: int = 0
    solved: int = 0
    repos: list[HardenRepo] = Field(default_factory=list)


def parts_of(task_dirs: Iterable[Path], stats) -> dict[str, list[Part]]:
    """Each task as a Part, by its record's repository name, with its solve stats."""
    from taskforge.package.store import load_task

    out: dict[str, list[Part]] = {}
    for d in task_dirs:
        rec = load_task(d).record
        st = stats.tasks.get(rec.instance_id)
        p = Part(instance_id=rec.instance_id, feature=rec.feature.name, kind=rec.feature.kind,
                 files=frozenset(rec.feature.touched_files),
                 symbols=frozenset(s.qualname for s in rec.feature.symbols),
                 hidden=frozenset(rec.FAIL_TO_PASS), family=rec.family,
                 lines=rec.difficulty.removed_lines,
                 solve_rate=st.solve_rate if st else 0.0, attempts=st.attempts if st else 0,
                 names=tuple(rec.feature.parts), commit=rec.source_commit, cut_at=rec.created_at,
                 style=rec.contamination.statement_style.value)
        out.setdefault(rec.repo, []).append(p)
    return out


def task_dirs_of(paths: Iterable[str | Path]) -> list[Path]:
    """Task directories, given as themselves or as directories holding them (one
    level, or a corpus: two)."""
    found: list[Path] = []
    for p in map(Path, paths):
        if (p / "task.json").is_file():
            found.append(p)
        elif p.is_dir():
            for t in sorted([*p.glob("*/task.json"), *p.glob("*/*/task.json")]):
                d = t.parent
                # Not a task's own tree (a project may ship a task.json), nor one being written.
                if d.name.startswith(".") or d.parent.name.startswith(".") or d.name in (
                        "workspace", "hidden") or (d.parent / "task.json").is_file():
                    continue
                found.append(d)
        else:
            raise UserError(f"no such task directory: {p}")
    return found


def source_name(repo: str) -> str:
    """The name generate records for `repo` (TaskRecord.repo): its origin's stable name."""
    from taskforge.repo.source import _is_url, _origin_of, stable_name

    if _is_url(repo):
        return stable_name(repo)
    path = Path(repo).expanduser()
    return stable_name(_origin_of(path) or str(path.resolve()))


def harden(repos: list[str], tasks: Sequence[str | Path], out: str | Path,
           stats_paths: Sequence[str | Path],
           min_solve: float = 0.5, min_attempts: int = 1, per_repo: int = 4, options=None,
           log: Callable[[str], None] | None = None,
           statement_style: StatementStyle | None = None,
           mode: HardenMode = HardenMode.BOTH) -> HardenReport:
    """Harder tasks for each of `repos` from its solved tasks among `tasks`, into
    OUT/<name>/. A repository with fewer than two solved features, or whose
    generate fails, is reported with its reason; the others go on. `options`
    are generate's (install overrides, --max-feature-defs as the tasks were
    made); the statement style is the tasks' own unless `statement_style` says.
    `mode`: grow, pair or both; up to `per_repo` tasks of each kind."""
    options_style = statement_style
    from taskforge.orchestrate.corpus import corpus_dirs
    from taskforge.orchestrate.options import Options
    from taskforge.orchestrate.pipeline import generate
    from taskforge.training.curriculum import read_stats

    say = log or (lambda s: None)
    if not repos:
        raise UserError("no repositories: give the ones the tasks were generated from")
    if not stats_paths:
        raise UserError("no solve statistics: give --stats FILE (what serve or the reward API records)")
    if not 0.0 <= min_solve <= 1.0:
        raise UserError(f"--min-solve must be within 0..1, not {min_solve}")
    if options is not None and not 0.0 < options.max_share <= 1.0:
        raise UserError(f"--max-share must be within 0..1, not {options.max_share}")
    if per_repo < 1 or min_attempts < 1:
        raise UserError("--per-repo and --min-attempts must be at least 1")
    stats = read_stats(stats_paths)
    dirs = task_dirs_of(tasks)
    if not dirs:
        raise UserError("no tasks found in " + ", ".join(map(str, tasks)))
    by_repo = parts_of(dirs, stats)
    report = HardenReport(tasks_read=len(dirs))
    base = options or Options()
    for repo, dest in corpus_dirs(repos, Path(out)):
        row = HardenRepo(repo=repo, out=str(dest))
        report.repos.append(row)
        name = source_name(repo)
        mine = solved(by_repo.get(name, []), min_solve, min_attempts)
        row.solved = len(mine)
        report.solved += len(mine)
        mine = newest_cut(mine)
        pairs = plan(mine, per_repo) if mode is not HardenMode.GROW else []
        grow = growth_order(mine) if mode is not HardenMode.PAIR else []
        row.planned = [list(p) for p in pairs]
        row.grow = [p.feature for p in grow]
        if not pairs and not grow:
            what = "can pair" if mode is HardenMode.PAIR else "to grow or pair"
            row.error = (f"{len(mine)} solved feature(s) {what} (of {len(by_repo.get(name, []))} "
                         f"task(s) read for {name}): nothing to make harder")
            say(f"{repo}: {row.error}")
            continue
        say(f"{repo}: {len(grow)} solved feature(s) to grow, {len(pairs)} pair(s)")
        # The tasks' own statement style, unless the options name one.
        styles = {p.style for p in mine}
        style = (StatementStyle(styles.pop()) if len(styles) == 1 and options_style is None
                 else options_style or base.statement_style)
        wanted = len(pairs) + min(per_repo, len(grow))
        opts = replace(base, ref=mine[0].commit, combine=tuple(pairs), max_tasks=wanted, only=(), branches=False,
                       around=tuple(tuple(sorted(p.symbols)) for p in grow),
                       known=tuple(sorted({n for p in by_repo.get(name, []) for n in p.features()})),
                       statement_style=style)
        try:
            row.tasks = sorted(generate(repo, dest, opts, log=say).tasks)
        except TaskforgeError as exc:
            row.error = exc.message
            say(f"{repo}: {exc.message}")
    return report
