"""Curriculum: per-task solve rates from the rewards given, and shard subsets
selected by difficulty tier and solve-rate band.

The store is an append-only JSON lines file, one graded attempt a line:

    {"instance_id": "...", "reward": 1.0, "resolved": true, "at": 1718000000.123}

- Each line goes out in one `os.write` on an `O_APPEND` descriptor opened for
  that write, so threads of one process and several processes (a reward server,
  Ray workers) can record into the same local file without a lock and without
  losing or interleaving lines. (Not on NFS, where O_APPEND is not atomic: give
  each host its own file and pass them all to `select`.)
- Reading aggregates the file: attempts, solves, solve rate and mean reward
  per task. A torn or garbled line is skipped and counted, never fatal; a
  record glued to a torn one is still recovered.
- An answer that could not be graded (reward None: an infrastructure error)
  is not an attempt and is never recorded.

Recording: `rewards.score_task` / `score` / `score_many` record when given
`stats=` (a path or a SolveStats) or when $TASKFORGE_STATS is set; `stats=False`
turns it off. `taskforge serve` records what it answers (see `default_stats_path`)
and serves the aggregate at GET /stats. `taskforge select` reads it.
"""
from __future__ import annotations

import hashlib
import logging
import math
import os
import re
import time
from enum import Enum
from pathlib import Path
from typing import Iterable, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from taskforge.errors import UserError
from taskforge.models import TIER_ORDER, Tier

log = logging.getLogger("taskforge.training.curriculum")
STATS_ENV = "TASKFORGE_STATS"
_RECORD_START = b'{"instance_id"'


class Attempt(BaseModel):
    """One line of the store: one graded answer."""
    model_config = ConfigDict(extra="ignore")

    instance_id: str = Field(min_length=1)
    reward: float = Field(allow_inf_nan=False)
    resolved: bool
    at: float                     # unix time, seconds


class TaskStats(BaseModel):
    instance_id: str
    attempts: int = 0
    solves: int = 0
    solve_rate: float = 0.0       # solves / attempts (resolved answers, not reward > 0)
    mean_reward: float = 0.0
    last_at: float = 0.0


class StatsReport(BaseModel):
    """The store, aggregated (GET /stats, `taskforge stats --json`)."""
    path: str
    attempts: int = 0
    solves: int = 0
    skipped_lines: int = 0        # torn or garbled lines left out
    tasks: dict[str, TaskStats] = Field(default_factory=dict)


class SolveStats:
    """The append-only attempt store at `path` (created on first record)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"SolveStats({str(self.path)!r})"

    def record(self, instance_id: str, reward: float | None, resolved: bool,
               at: float | None = None) -> bool:
        """Append one attempt; an ungradable answer (reward None) is not one.
        Returns whether a line was written."""
        if reward is None:
            return False
        line = Attempt(instance_id=instance_id, reward=float(reward), resolved=bool(resolved),
                       at=round(time.time() if at is None else at, 3)).model_dump_json() + "\n"
        data = line.encode()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0),
                     0o644)
        try:
            n = os.write(fd, data)       # one write: appended whole, never interleaved
        finally:
            os.close(fd)
        if n != len(data):               # disk full: the torn line is skipped on reading
            raise OSError(f"short write to {self.path}: {n} of {len(data)} bytes")
        return True

    def attempts(self) -> tuple[list[Attempt], int]:
        """Every readable attempt, and how many lines were skipped."""
        out: list[Attempt] = []
        skipped = 0
        try:
            fh = open(self.path, "rb")
        except FileNotFoundError:
            return out, 0
        with fh:
            for line in fh:
                if not line.strip():
                    continue
                a = _parse(line)
                if a is None:
                    # A torn line glued to the next record: that record is still whole.
                    cut = line.rfind(_RECORD_START)
                    a = _parse(line[cut:]) if cut > 0 else None
                    skipped += 1
                if a is not None:
                    out.append(a)
        return out, skipped

    def report(self) -> StatsReport:
        attempts, skipped = self.attempts()
        return aggregate(attempts, str(self.path), skipped)


def _parse(line: bytes) -> Attempt | None:
    try:
        return Attempt.model_validate_json(line)
    except (ValidationError, ValueError):
        return None


def aggregate(attempts: Iterable[Attempt], path: str = "", skipped: int = 0) -> StatsReport:
    tasks: dict[str, TaskStats] = {}
    total = solves = 0
    rewards: dict[str, float] = {}
    for a in attempts:
        t = tasks.get(a.instance_id) or tasks.setdefault(a.instance_id, TaskStats(instance_id=a.instance_id))
        t.attempts += 1
        t.solves += a.resolved
        t.last_at = max(t.last_at, a.at)
        rewards[a.instance_id] = rewards.get(a.instance_id, 0.0) + a.reward
        total += 1
        solves += a.resolved
    for iid, t in tasks.items():
        t.solve_rate = round(t.solves / t.attempts, 6)
        t.mean_reward = round(rewards[iid] / t.attempts, 6)
    return StatsReport(path=path, attempts=total, solves=solves, skipped_lines=skipped,
                       tasks=dict(sorted(tasks.items())))


def read_stats(paths: Iterable[str | Path]) -> StatsReport:
    """Several stores (one per host, say) as one; each must exist."""
    files = [Path(p) for p in paths]
    everything: list[Attempt] = []
    skipped = 0
    for p in files:
        if not p.is_file():
            raise UserError(f"no such stats file: {p}")
        got, n = SolveStats(p).attempts()
        everything += got
        skipped += n
    return aggregate(everything, os.pathsep.join(map(str, files)), skipped)


def open_store(stats: str | Path | SolveStats | bool | None = None) -> SolveStats | None:
    """The store a library call records into: `stats` itself, or $TASKFORGE_STATS
    when stats is None; none when stats is False (or nothing is set)."""
    if stats is False:
        return None
    if isinstance(stats, SolveStats):
        return stats
    if stats is None or stats is True:
        stats = os.environ.get(STATS_ENV) or None
    return SolveStats(stats) if stats else None


def record(result, stats: str | Path | SolveStats | bool | None = None) -> None:
    """Record a RewardResult (anything with instance_id, reward, resolved) if a
    store is set. A store that cannot be written costs a warning, never a reward."""
    store = open_store(stats)
    if store is None or result.reward is None or not result.instance_id:
        return
    try:
        store.record(result.instance_id, result.reward, result.resolved)
    except OSError as exc:
        log.warning("could not record the attempt on %s in %s: %s", result.instance_id,
                    store.path, exc)


def default_stats_path(tasks: str | Path) -> Path:
    """Where `serve` records by default: $TASKFORGE_STATS, else one file per task
    source under $TASKFORGE_CACHE (default ~/.cache/taskforge)/stats/. Never inside
    the task source: a shard directory is replaced whole by the next `shard` run."""
    env = os.environ.get(STATS_ENV)
    if env:
        return Path(env)
    root = Path(tasks).resolve()
    base = Path(os.environ.get("TASKFORGE_CACHE") or Path.home() / ".cache" / "taskforge")
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", root.name)[:60] or "tasks"
    return base / "stats" / f"{name}-{hashlib.sha256(str(root).encode()).hexdigest()[:12]}.jsonl"


# ---------------------------------------------------------------- selection

def parse_band(text: str) -> tuple[float, float]:
    """'0.1:0.9' or '10%:90%' -> (0.1, 0.9), both ends included."""
    parts = text.split(":")

    def one(s: str) -> float:
        s = s.strip()
        pct = s.endswith("%")
        v = float(s[:-1] if pct else s)
        v = v / 100 if pct else v
        if not math.isfinite(v) or not 0.0 <= v <= 1.0:
            raise ValueError
        return v

    try:
        if len(parts) != 2:
            raise ValueError
        lo, hi = one(parts[0]), one(parts[1])
    except ValueError:
        raise UserError(f"bad --solve-rate {text!r}: expected LO:HI with 0 <= LO <= HI <= 1, "
                        f"e.g. 0.1:0.9 or 10%:90%") from None
    if lo > hi:
        raise UserError(f"bad --solve-rate {text!r}: LO {lo:g} is above HI {hi:g}")
    return lo, hi


def parse_tiers(values: Iterable[str]) -> list[Tier]:
    out: list[Tier] = []
    for v in values:
        for part in filter(None, (p.strip().lower() for p in v.split(","))):
            try:
                t = Tier(part)
            except ValueError:
                raise UserError(f"bad --tier {part!r} (easy, medium, hard)") from None
            if t not in out:
                out.append(t)
    return out


class TierCount(BaseModel):
    read: int = 0
    kept: int = 0


class BandCount(BaseModel):
    """Rows of the chosen tiers by solve rate, and how many of each were kept."""
    below: int = 0
    in_band: int = 0
    above: int = 0
    untried: int = 0              # fewer than min_attempts attempts
    untried_kept: int = 0


class Pick(str, Enum):
    """What `select` does with one task, and why."""
    OTHER_TIER = "other-tier"          # dropped: not a tier asked for
    UNTRIED_KEPT = "untried-kept"      # fewer attempts than asked for, kept (--untried include)
    UNTRIED_DROPPED = "untried-dropped"
    BELOW = "below"                    # dropped: solved less often than the band
    ABOVE = "above"                    # dropped: solved more often
    IN_BAND = "in-band"                # kept (also: no band asked for)

    @property
    def kept(self) -> bool:
        return self in (Pick.UNTRIED_KEPT, Pick.IN_BAND)


def pick(tier: str, attempts: int | None, rate: float | None, *, tiers: set[str],
         band: tuple[float, float] | None, min_attempts: int, untried: str) -> Pick:
    """The filter of `select` for one task (pure): its tier, then its attempts
    (None: no statistics), then its solve rate against the band, both ends in."""
    if tiers and tier not in tiers:
        return Pick.OTHER_TIER
    if attempts is None or attempts < min_attempts:
        return Pick.UNTRIED_DROPPED if untried == "exclude" else Pick.UNTRIED_KEPT
    if band is not None and rate is not None:
        if rate < band[0] - 1e-9:
            return Pick.BELOW
        if rate > band[1] + 1e-9:
            return Pick.ABOVE
    return Pick.IN_BAND


class SelectReport(BaseModel):
    out: str
    format: str
    read: int
    kept: int
    tiers: list[str]              # the tier filter; empty: every tier
    solve_rate: tuple[float, float] | None
    min_attempts: int
    untried: Literal["include", "exclude"]
    stats: str | None
    by_tier: dict[str, TierCount]
    by_band: BandCount
    splits: dict[str, int]        # kept rows in each split
    shards: int                   # shard files written
    instance_ids: list[str]


def _is_shard_input(p: Path) -> bool:
    if p.is_file():
        return p.suffix in (".parquet", ".jsonl")
    return p.is_dir() and ((p / "manifest.json").is_file()
                           or (p.name == "data" and (p.parent / "manifest.json").is_file()))


def _manifest_top(p: Path) -> Path | None:
    if p.is_dir():
        top = p.parent if p.name == "data" and not (p / "manifest.json").is_file() else p
    else:
        top = p.parent.parent if p.parent.name == "data" else p.parent
    return top if (top / "manifest.json").is_file() else None


Rows = dict  # instance_id -> (repo, tier, where its row comes from: a task directory or a ShardIndex)


def _stats_paths(stats: str | Path | Iterable[str | Path] | None) -> list[Path]:
    """The stats files given, else $TASKFORGE_STATS's, else none."""
    if isinstance(stats, (str, Path)):
        return [Path(stats)]
    if stats is None:
        return [Path(os.environ[STATS_ENV])] if os.environ.get(STATS_ENV) else []
    return [Path(s) for s in stats]


def _check_args(inputs: list[Path], out: Path, untried: str, min_attempts: int, band,
                stats_paths: list[Path]) -> None:
    if not inputs:
        raise UserError("no input: give shard directories or task directories")
    if untried not in ("include", "exclude"):
        raise UserError(f"bad --untried {untried!r} (include, exclude)")
    if min_attempts < 1:
        raise UserError("--min-attempts must be at least 1")
    if (band is not None or untried == "exclude") and not stats_paths:
        raise UserError("--solve-rate and --untried exclude need --stats FILE "
                        f"(or ${STATS_ENV})")
    for p in inputs:
        if p.exists() and out.exists() and p.resolve() == out.resolve():
            raise UserError(f"--out {out} is one of the inputs")


def _read_rows(inputs: list[Path]) -> tuple[Rows, list]:
    """Every input row (instance_id -> (repo, tier, where)), and the input
    shards' manifests. A repeated instance_id is refused."""
    from taskforge.package.store import load_task
    from taskforge.training import shards

    rows: Rows = {}
    manifests = []
    for p in inputs:
        entries: list[tuple[str, str, str, Path | shards.ShardIndex]]
        if _is_shard_input(p):
            shards.shard_paths([p], verify=True)        # whole files against the manifest
            idx = shards.ShardIndex([p])
            top = _manifest_top(p)
            if top is not None:
                manifests.append(shards.read_manifest(top))
            entries = [(iid, *idx.info[iid], idx) for iid in idx.ids()]
        else:
            entries = []
            for d in shards.find_tasks([p]):
                rec = load_task(d).record
                entries.append((rec.instance_id, rec.repo, rec.difficulty.tier.value, d))
        for iid, repo, tier, where in entries:
            if iid in rows:
                raise UserError(f"duplicate instance_id {iid} in the inputs")
            rows[iid] = (repo, tier, where)
    if not rows:
        raise UserError("no tasks in the inputs")
    return rows, manifests


def inherited_split(manifests, splits: dict[str, float] | None, seed: int | None
                    ) -> tuple[dict[str, float], int]:
    """Splits and seed: the ones given, else the input manifests' (which must
    agree), else all in train with seed 0. So a repository stays in its split."""
    if splits is None or seed is None:
        keys = {(tuple(sorted(m.splits.items())), m.seed) for m in manifests}
        if len(keys) > 1:
            raise UserError("the input shards were split differently: pass --splits and --seed")
        if keys:
            (m_splits, m_seed), = keys
            splits = splits if splits is not None else dict(m_splits)
            seed = seed if seed is not None else m_seed
    return splits or {"train": 1.0}, 0 if seed is None else seed


def _filter(rows: Rows, report, tier_names: set[str], band, min_attempts: int, untried: str
            ) -> tuple[dict[str, str], dict[str, TierCount], BandCount]:
    """The rows `pick` keeps (instance_id -> repo), with the counts per tier and band."""
    by_tier = {t.value: TierCount() for t in TIER_ORDER}
    counts = BandCount()
    kept: dict[str, str] = {}
    for iid in sorted(rows):
        repo, tier, _ = rows[iid]
        tc = by_tier.setdefault(tier or "unknown", TierCount())
        tc.read += 1
        st = report.tasks.get(iid) if report is not None else None
        choice = pick(tier, st.attempts if st else None, st.solve_rate if st else None, tiers=tier_names,
                      band=band, min_attempts=min_attempts, untried=untried)
        counts.untried += choice in (Pick.UNTRIED_KEPT, Pick.UNTRIED_DROPPED)
        counts.untried_kept += choice is Pick.UNTRIED_KEPT
        counts.below += choice is Pick.BELOW
        counts.above += choice is Pick.ABOVE
        counts.in_band += choice is Pick.IN_BAND
        if choice.kept:
            tc.kept += 1
            kept[iid] = repo
    return kept, by_tier, counts


def select(paths: Iterable[str | Path], out: str | Path, tiers: Iterable[str] = (),
           solve_rate: str | tuple[float, float] | None = None,
           stats: str | Path | Iterable[str | Path] | None = None, min_attempts: int = 1,
           untried: str = "include", fmt: str = "parquet", shard_size: int = 256,
           splits: dict[str, float] | None = None, seed: int | None = None,
           log=None) -> SelectReport:
    """Write the tasks of `paths` (shard directories or files, task directories or
    directories of tasks) that pass the filters to the shard directory `out`.

    A task passes when its difficulty tier is one of `tiers` (any, if none) and,
    with `solve_rate` (LO, HI), its solve rate in `stats` is within [LO, HI].
    A task with fewer than `min_attempts` attempts is untried: kept with
    untried="include", dropped with "exclude". Splits and seed default to those
    of the input manifests, so a repository stays in its split."""
    from taskforge.training import shards

    inputs = [Path(p) for p in paths]
    out = Path(out)
    want_tiers = parse_tiers(tiers)
    band = parse_band(solve_rate) if isinstance(solve_rate, str) else solve_rate
    stats_paths = _stats_paths(stats)
    _check_args(inputs, out, untried, min_attempts, band, stats_paths)
    report = read_stats(stats_paths) if stats_paths else None
    rows, manifests = _read_rows(inputs)
    splits, seed = inherited_split(manifests, splits, seed)
    kept, by_tier, counts = _filter(rows, report, {t.value for t in want_tiers}, band, min_attempts, untried)
    if not kept:
        raise UserError(f"no task of the {len(rows)} read passes the filters; nothing written")

    def load(ids: list[str]) -> list:
        got = {}
        by_index: dict[int, tuple[shards.ShardIndex, list[str]]] = {}
        for iid in ids:
            where = rows[iid][2]
            if isinstance(where, Path):
                got[iid] = shards.task_to_row(where)
            else:
                by_index.setdefault(id(where), (where, []))[1].append(iid)
        for idx, some in by_index.values():
            got.update(zip(some, idx.rows(some)))
        return [got[i] for i in ids]

    manifest = shards.write_rows(kept, load, out, fmt=fmt, shard_size=shard_size, splits=splits,
                                 seed=seed, log=log)
    return SelectReport(out=str(out), format=fmt, read=len(rows), kept=len(kept),
                        tiers=[t.value for t in want_tiers], solve_rate=band,
                        min_attempts=min_attempts,
                        untried=cast(Literal["include", "exclude"], untried),     # checked above
                        stats=os.pathsep.join(map(str, stats_paths)) or None,
                        by_tier=by_tier, by_band=counts,
                        splits={k: v for k, v in manifest.split_rows.items()},
                        shards=len(manifest.shards), instance_ids=sorted(kept))
