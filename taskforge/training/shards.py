"""Task shards: task directories as rows of Parquet (or JSON lines) files with a
fixed, versioned schema, and back.

A row holds the SWE-bench columns, taskforge's own figures, the workspace as a
deterministic tar.gz (with its sha256, the row's content address) and the hidden
tests as another archive. Columns in `POLICY_COLUMNS` may be shown to the policy;
every other column (gold patch, hidden tests, test ids) is for the grader only.

Determinism: rows are sorted by instance_id, the schema is fixed, archives are
deterministic and the Parquet writer options are fixed, so sharding the same
tasks twice gives byte-identical files. `manifest.json` lists every shard with
its row count, size and sha256.

Splits are by repository: a repository's split comes from a hash of the seed
and its normalised name alone, so no repository spans two splits and a
repository never changes split as the dataset grows. Fractions hold in
expectation over many repositories, not exactly over a few. A family of
near-duplicate tasks (`package/families.py`: most hidden tests shared) lies in
one repository, so it never spans two splits either; `write_shards` computes
the families over every task it shards (`family` column, schema 5), so tasks
of one repository generated in separate runs are grouped too.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import re
import shutil
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Literal, NamedTuple, cast

from pydantic import BaseModel, ConfigDict, ValidationError

from taskforge.errors import UserError
from taskforge.fsutil import atomic_write, readable
from taskforge.models import (
    Adequacy,
    Contamination,
    Difficulty,
    EnvironmentRecipe,
    GradingPlan,
    RemovedSymbol,
    TaskRecord,
)
from taskforge.package import archive
from taskforge.package.families import families
from taskforge.package.store import load_task

SHARD_SCHEMA_VERSION = 7      # 5: family; 6: contamination_json; 7: feature_removal
META_KEY = b"taskforge.shard_schema_version"
FORMATS = ("parquet", "jsonl")
ROW_GROUP = 64          # rows per Parquet row group: a reward worker reads one group, not a shard

# Columns a trainer may put in front of the policy. Everything else grades.
POLICY_COLUMNS = ("instance_id", "repo", "base_commit", "problem_statement", "image_name",
                  "version", "created_at", "feature_kind", "feature_name", "touched_files",
                  "workspace_tgz", "workspace_sha256")


class EnvVar(BaseModel):
    name: str
    value: str


class ShardRow(BaseModel):
    """One task as a shard row (schema version 3). Field order is column order."""
    model_config = ConfigDict(extra="forbid", ser_json_bytes="base64", val_json_bytes="base64")

    # SWE-bench columns
    instance_id: str
    repo: str
    base_commit: str
    patch: str
    test_patch: str
    problem_statement: str
    FAIL_TO_PASS: list[str]
    PASS_TO_PASS: list[str]
    image_name: str
    version: str
    created_at: str
    environment_setup_commit: str
    # taskforge's own
    source_commit: str
    feature_kind: str
    feature_name: str
    feature_removal: str = "definitions"    # "body": the function kept its signature
    removed_symbols: list[RemovedSymbol]
    touched_files: list[str]
    removed_lines: int
    n_removed_symbols: int
    hidden_tests: int
    remaining_tests: int
    workspace_files: int
    timing_remaining_suite: float
    timing_hidden_on_stripped: float
    timing_adequacy: float          # stand-ins and gold mutants (issue 11)
    validation_rounds: int
    flaky_excluded: int
    hidden_test_files: list[str]
    protected_files: list[str]
    test_command: list[str]
    test_options: list[str]
    test_paths: list[str]
    test_env: list[EnvVar]          # a list, not a map: `datasets` has no map type
    task_schema_version: int
    taskforge_version: str
    grading_json: str               # GradingPlan as JSON (copies, time limit): grader only
    environment_json: str           # EnvironmentRecipe as JSON ("" if none): to rebuild the env
    difficulty_tier: str            # easy, medium or hard: for selecting a curriculum
    difficulty_json: str            # Difficulty as JSON (the measures behind the tier)
    adequacy_json: str              # Adequacy as JSON (stand-ins, mutation score)
    contamination_json: str         # Contamination as JSON (code age, statement style, wrappers)
    family: str                     # near-duplicate tasks share it: keep it within one split
    workspace_tgz: bytes            # deterministic tar.gz of workspace/ without .git
    workspace_sha256: str
    hidden_tgz: bytes               # hidden/: grader only
    hidden_sha256: str
    row_sha256: str                 # over every other column: integrity and cache key


def arrow_schema():
    """The Parquet schema of `ShardRow`, with the schema version in its metadata."""
    import pyarrow as pa

    s, i64, f64 = pa.string(), pa.int64(), pa.float64()

    def scalar(name: str, ann) -> object:
        # From the model, so a field added to RemovedSymbol is a column, never dropped.
        if ann is bool:
            return pa.bool_()
        if ann is int:
            return i64
        if ann is str or getattr(ann, "__origin__", None) is Literal or (
                isinstance(ann, type) and issubclass(ann, str)):
            return s
        raise TypeError(f"RemovedSymbol.{name}: no shard column type for {ann!r}")

    symbol = pa.struct([(name, scalar(name, f.annotation))
                        for name, f in RemovedSymbol.model_fields.items()])
    env = pa.struct([("name", s), ("value", s)])
    types = {str: s, int: i64, float: f64, bytes: pa.large_binary(), list[str]: pa.list_(s),
             list[RemovedSymbol]: pa.list_(symbol), list[EnvVar]: pa.list_(env)}
    fields = [pa.field(name, types[f.annotation], nullable=False)
              for name, f in ShardRow.model_fields.items()]
    return pa.schema(fields, metadata={META_KEY: str(SHARD_SCHEMA_VERSION).encode()})


class ShardFile(BaseModel):
    path: str                       # relative to the manifest: data/<split>-NNNNN-of-NNNNN.<fmt>
    split: str
    rows: int
    bytes: int
    sha256: str
    first_instance_id: str
    last_instance_id: str


class Manifest(BaseModel):
    """manifest.json: what a shard run wrote. No timestamps, so it is deterministic too."""
    model_config = ConfigDict(extra="forbid")

    shard_schema_version: int = SHARD_SCHEMA_VERSION
    format: Literal["parquet", "jsonl"]
    taskforge_version: str
    split_by: Literal["repo"] = "repo"
    seed: int
    splits: dict[str, float]        # requested fractions
    split_rows: dict[str, int]      # rows actually in each split
    repos: dict[str, str]           # normalised repository -> its split
    shard_size: int
    total_rows: int
    columns: list[str]
    policy_columns: list[str]
    shards: list[ShardFile]


# ---------------------------------------------------------------- task <-> row

def _git_executables(ws: Path) -> set[str] | None:
    from taskforge.gitutil import git

    if not (ws / ".git").is_dir():
        return None
    out = git(ws, "-c", "safe.directory=*", "ls-files", "-s", "-z")
    return {e.split("\t", 1)[1] for e in out.split("\0") if e.startswith("100755 ")}


def _check_clean(task_dir: Path, ws: Path) -> None:
    """A workspace changed since generation would not rebuild to its base_commit."""
    from taskforge.gitutil import git

    if not (ws / ".git").is_dir():
        raise UserError(f"corrupt task {task_dir}: workspace/.git is missing")
    try:
        # --no-optional-locks: status must not refresh (rewrite) the task's index
        dirty = git(ws, "--no-optional-locks", "-c", "safe.directory=*", "-c",
                    "core.fileMode=false", "status", "--porcelain", "--untracked-files=all")
    except RuntimeError as exc:
        raise UserError(f"corrupt task {task_dir}: {exc}") from None
    if dirty.strip():
        raise UserError(f"task {task_dir}: workspace has changes since generation "
                        f"({dirty.strip().splitlines()[0].strip()})")


def row_digest(fields: dict) -> str:
    """sha256 over the canonical JSON of a row's columns, archives by their sha256."""
    canon = {k: (hashlib.sha256(v).hexdigest() if isinstance(v, bytes) else v)
             for k, v in fields.items() if k != "row_sha256"}
    text = json.dumps(canon, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _same(v: Any) -> Any:
    return v


def _json(v: BaseModel) -> str:
    return v.model_dump_json()


class Column(NamedTuple):
    """How one row column comes from a TaskRecord field (a dotted path) and goes
    back: the one place the two shapes meet. `to_record` None: derived, not read back."""
    path: str
    to_row: Callable[[Any], Any] = _same
    to_record: Callable[[Any], Any] | None = _same


# Every column but the archives and digests, in no particular order (ShardRow
# fixes the column order). A new TaskRecord field needs an entry here and a
# SHARD_SCHEMA_VERSION bump: tests compare RECORD_FIELDS with TaskRecord.
COLUMNS: dict[str, Column] = {
    **{name: Column(name) for name in (
        "instance_id", "repo", "base_commit", "patch", "test_patch", "problem_statement",
        "FAIL_TO_PASS", "PASS_TO_PASS", "image_name", "version", "created_at",
        "environment_setup_commit", "source_commit", "flaky_excluded", "hidden_test_files",
        "protected_files", "test_command", "test_options", "test_paths", "taskforge_version")},
    "task_schema_version": Column("schema_version"),
    "feature_kind": Column("feature.kind"),
    "feature_name": Column("feature.name"),
    "feature_removal": Column("feature.removal"),
    "removed_symbols": Column("feature.symbols", lambda syms: [s.model_dump() for s in syms]),
    "touched_files": Column("feature.touched_files"),
    "removed_lines": Column("sizes.removed_lines"),
    "n_removed_symbols": Column("sizes.removed_symbols"),
    "hidden_tests": Column("sizes.hidden_tests"),
    "remaining_tests": Column("sizes.remaining_tests"),
    "workspace_files": Column("sizes.workspace_files"),
    "timing_remaining_suite": Column("timings.remaining_suite"),
    "timing_hidden_on_stripped": Column("timings.hidden_on_stripped"),
    "timing_adequacy": Column("timings.adequacy"),
    "validation_rounds": Column("timings.rounds"),
    "test_env": Column("test_env", lambda env: [{"name": k, "value": v} for k, v in env.items()],
                       lambda rows: {e.name: e.value for e in rows}),
    "grading_json": Column("grading", _json, GradingPlan.model_validate_json),
    "environment_json": Column("environment", lambda e: e.model_dump_json() if e else "",
                               lambda t: EnvironmentRecipe.model_validate_json(t) if t else None),
    "difficulty_tier": Column("difficulty.tier", lambda t: t.value, None),
    "difficulty_json": Column("difficulty", _json, Difficulty.model_validate_json),
    "adequacy_json": Column("adequacy", _json, Adequacy.model_validate_json),
    "contamination_json": Column("contamination", _json, Contamination.model_validate_json),
    "family": Column("family"),
}

# TaskRecord fields the row carries (under these or other names).
RECORD_FIELDS = frozenset(c.path.split(".")[0] for c in COLUMNS.values())


def _get(obj: Any, path: str) -> Any:
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def task_to_row(task_dir: str | Path, family: str | None = None) -> ShardRow:
    """One task as a row; `family` (computed over the tasks sharded together)
    replaces the one generate recorded."""
    task = load_task(task_dir)
    rec = task.record
    if family is not None:
        rec = rec.model_copy(update={"family": family})
    elif not rec.family:
        rec = rec.model_copy(update={"family": rec.instance_id})
    _check_clean(task.dir, task.workspace)
    ws = archive.pack(task.workspace, _git_executables(task.workspace))
    hidden = archive.pack(task.hidden)
    fields: dict[str, Any] = {col: c.to_row(_get(rec, c.path)) for col, c in COLUMNS.items()}
    fields.update(workspace_tgz=ws, workspace_sha256=archive.sha256(ws),
                  hidden_tgz=hidden, hidden_sha256=archive.sha256(hidden))
    fields["row_sha256"] = row_digest(fields)
    return ShardRow.model_validate(fields)


def row_to_record(row: ShardRow) -> TaskRecord:
    data: dict[str, Any] = {}
    for col, c in COLUMNS.items():
        if c.to_record is None:
            continue
        *parents, leaf = c.path.split(".")
        at = data
        for part in parents:
            at = at.setdefault(part, {})
        at[leaf] = c.to_record(getattr(row, col))
    return TaskRecord.model_validate(data)


def check_row(row: ShardRow, where: str = "shard") -> None:
    """Every digest in the row must match its content."""
    bad = None
    if archive.sha256(row.workspace_tgz) != row.workspace_sha256:
        bad = "workspace archive"
    elif archive.sha256(row.hidden_tgz) != row.hidden_sha256:
        bad = "hidden-test archive"
    elif row_digest(row.model_dump()) != row.row_sha256:
        bad = "row"
    if bad:
        raise UserError(f"corrupt {where}: {row.instance_id}: {bad} checksum mismatch")


def row_to_task(row: ShardRow | dict, dest: Path, replace: bool = True) -> Path:
    """Rebuild the task directory `dest` from a row, atomically.

    The workspace comes back as the same one-commit repository: `fresh_repo`
    uses fixed names and dates, so the rebuilt commit must equal base_commit,
    and a row whose workspace does not is refused as corrupt. With
    replace=False an existing `dest` is kept (cache use: first writer wins).
    """
    from taskforge.package.writer import fresh_repo

    if isinstance(row, dict):
        row = parse_row(row)
    check_row(row)
    record = row_to_record(row)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{row.instance_id[:40]}-", dir=dest.parent))
    try:
        ws = tmp / "workspace"
        archive.unpack(row.workspace_tgz, ws, f"workspace archive of {row.instance_id}")
        archive.unpack(row.hidden_tgz, tmp / "hidden", f"hidden-test archive of {row.instance_id}")
        sha = fresh_repo(ws)
        if sha != row.base_commit:
            raise UserError(f"corrupt shard row {row.instance_id}: rebuilt workspace commit "
                            f"{sha[:12]} is not base_commit {row.base_commit[:12]}")
        atomic_write(tmp / "task.json", record.model_dump_json(indent=2) + "\n")
        atomic_write(tmp / "problem_statement.md", record.problem_statement)
        atomic_write(tmp / "gold.patch", record.patch)
        atomic_write(tmp / "test.patch", record.test_patch)
        for p in [tmp, *tmp.rglob("*")]:           # the modes package.write_task leaves
            if not p.is_symlink():
                p.chmod(0o755 if p.is_dir() else 0o644)
        if dest.exists():
            if not replace:
                shutil.rmtree(tmp, ignore_errors=True)
                return dest
            shutil.rmtree(dest)
        try:
            os.rename(tmp, dest)
        except OSError:
            if replace or not (dest / "task.json").is_file():
                raise
            shutil.rmtree(tmp, ignore_errors=True)   # another writer got there first
        return dest
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


BYTES_COLUMNS = ("workspace_tgz", "hidden_tgz")
_URLSAFE = str.maketrans("-_", "+/")    # pydantic writes URL-safe base64; accept both


def parse_row(data: dict) -> ShardRow:
    """A row from pyarrow, pandas or `datasets` (a dict); archives may come as base64 text
    (JSON lines shards, or a row that went through JSON on its way here)."""
    try:
        data = {k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in data.items()}  # numpy
        stamped = [k for k, v in data.items() if isinstance(v, datetime)]
        if stamped:     # the offset is already lost: say so rather than fail a checksum later
            raise UserError(f"shard row {data.get('instance_id', '?')}: {stamped[0]} was read as a "
                            f"timestamp (JSON type guessing); read JSON lines shards with "
                            f"taskforge.training.shards.read_rows, or use Parquet")
        if any(isinstance(data.get(k), str) for k in BYTES_COLUMNS):
            data = {**data, **{k: base64.b64decode(data[k].translate(_URLSAFE), validate=True)
                               for k in BYTES_COLUMNS if isinstance(data.get(k), str)}}
        return ShardRow.model_validate(data)
    except binascii.Error as exc:
        raise UserError(f"corrupt shard row {data.get('instance_id', '?')}: archive: {exc}") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(x) for x in first.get("loc", ()))
        raise UserError(f"corrupt shard row {data.get('instance_id', '?')}: "
                        f"{loc or 'row'}: {first.get('msg')}") from None


def policy_view(row: ShardRow | dict) -> dict:
    """Only the columns a policy may see."""
    d = row.model_dump() if isinstance(row, ShardRow) else row
    return {k: d[k] for k in POLICY_COLUMNS if k in d}


# ---------------------------------------------------------------- splits

def normalize_repo(repo: str) -> str:
    r = repo.strip().rstrip("/")
    if r.endswith(".git"):
        r = r[:-4]
    return r.lower()


def parse_splits(text: str) -> dict[str, float]:
    """'train=0.8,val=0.1,test=0.1' -> fractions, which must add up to 1."""
    out: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, frac = part.partition("=")
        name = name.strip()
        if not re.fullmatch(r"[a-z][a-z0-9_]*", name) or name in out:
            raise UserError(f"bad split name {name!r} (lowercase letters, digits, _; each once)")
        try:
            f = float(frac) if sep else 1.0
        except ValueError:
            raise UserError(f"bad split fraction {frac!r} for {name}") from None
        if not 0.0 <= f <= 1.0:
            raise UserError(f"bad split fraction {frac!r} for {name}")
        out[name] = f
    if not out or abs(sum(out.values()) - 1.0) > 1e-6:
        raise UserError(f"split fractions must add up to 1 (got {text!r})")
    return out


def assign_split(repo: str, splits: dict[str, float], seed: int) -> str:
    h = hashlib.sha256(f"taskforge-split\0{seed}\0{normalize_repo(repo)}".encode()).digest()
    u = int.from_bytes(h[:8], "big") / 2.0 ** 64
    acc = 0.0
    names = list(splits)
    for name in names:
        acc += splits[name]
        if u < acc:
            return name
    return [n for n in names if splits[n] > 0][-1]


# ---------------------------------------------------------------- writing

def find_tasks(paths: Iterable[str | Path]) -> list[Path]:
    """Task directories among `paths`: each is a task or a directory of tasks."""
    found: list[Path] = []
    for p in map(Path, paths):
        if (p / "task.json").is_file():
            found.append(p)
        elif p.is_dir():
            kids = sorted(c for c in p.iterdir() if (c / "task.json").is_file())
            if not kids:
                raise UserError(f"no tasks in {p} (neither a task nor a directory of tasks)")
            found += kids
        else:
            raise UserError(f"no such task directory: {p}")
    return found


def _encode(rows: list[ShardRow], fmt: str) -> bytes:
    if fmt == "jsonl":
        return "".join(r.model_dump_json() + "\n" for r in rows).encode()
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pylist([r.model_dump() for r in rows], schema=arrow_schema())
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, row_group_size=ROW_GROUP, compression="zstd",
                   compression_level=3, use_dictionary=False, write_statistics=False,
                   store_schema=True, version="2.6", data_page_version="1.0")
    return sink.getvalue().to_pybytes()


def write_shards(tasks: Iterable[str | Path], out: str | Path, fmt: str = "parquet",
                 shard_size: int = 256, splits: dict[str, float] | None = None,
                 seed: int = 0, log=None) -> Manifest:
    """Shard task directories into `out` (replaced whole if it is a previous shard
    directory); the manifest is written last."""
    _check_out(out, fmt, shard_size)
    task_dirs = find_tasks(tasks)
    index: dict[str, tuple[Path, str]] = {}
    hidden: dict[str, list[str]] = {}
    for d in task_dirs:
        rec = load_task(d).record
        if rec.instance_id in index:
            raise UserError(f"duplicate instance_id {rec.instance_id} in {index[rec.instance_id][0]} "
                            f"and {d}")
        index[rec.instance_id] = (d, rec.repo)
        hidden[rec.instance_id] = rec.FAIL_TO_PASS
    fam = families(hidden, {iid: normalize_repo(repo) for iid, (_, repo) in index.items()})
    return write_rows({iid: repo for iid, (_, repo) in index.items()},
                      lambda ids: [task_to_row(index[iid][0], fam[iid]) for iid in ids],
                      out, fmt, shard_size, splits, seed, log)


def _check_out(out: str | Path, fmt: str, shard_size: int) -> None:
    if fmt not in FORMATS:
        raise UserError(f"unknown shard format {fmt!r} (parquet, jsonl)")
    if shard_size < 1:
        raise UserError("--shard-size must be at least 1")
    out = Path(out)
    if out.exists() and (not out.is_dir() or (any(out.iterdir())
                                              and not (out / "manifest.json").is_file())):
        raise UserError(f"--out {out} exists and is not a shard directory")


def write_rows(repos_by_id: dict[str, str], load, out: str | Path, fmt: str = "parquet",
               shard_size: int = 256, splits: dict[str, float] | None = None,
               seed: int = 0, log=None) -> Manifest:
    """Write the rows of `repos_by_id` (instance_id -> repo) into `out`, as
    write_shards does; `load(ids)` gives the ShardRows of one shard's ids, so only
    one shard's rows are in memory at a time."""
    from taskforge import __version__

    _check_out(out, fmt, shard_size)
    splits = splits or {"train": 1.0}
    out = Path(out)
    repos = {normalize_repo(repo): assign_split(repo, splits, seed) for repo in repos_by_id.values()}
    by_split: dict[str, list[str]] = {name: [] for name in splits}
    for iid in sorted(repos_by_id):
        by_split[repos[normalize_repo(repos_by_id[iid])]].append(iid)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{out.name}-", dir=out.parent))
    try:
        files: list[ShardFile] = []
        for split, ids in by_split.items():
            chunks = [ids[i:i + shard_size] for i in range(0, len(ids), shard_size)]
            for n, chunk in enumerate(chunks):
                name = f"data/{split}-{n:05d}-of-{len(chunks):05d}.{fmt}"
                rows = list(load(chunk))
                if [r.instance_id for r in rows] != chunk:
                    raise UserError(f"{name}: the rows read are not the rows asked for")
                data = _encode(rows, fmt)
                atomic_write(tmp / name, data)
                files.append(ShardFile(path=name, split=split, rows=len(rows), bytes=len(data),
                                       sha256=hashlib.sha256(data).hexdigest(),
                                       first_instance_id=chunk[0], last_instance_id=chunk[-1]))
                if log:
                    log(f"{name}: {len(rows)} rows, {len(data)} bytes")
        manifest = Manifest(format=cast(Literal["parquet", "jsonl"], fmt),    # _check_out checked it
                            taskforge_version=__version__, seed=seed, splits=splits,
                            split_rows={s: len(ids) for s, ids in by_split.items()},
                            repos=dict(sorted(repos.items())), shard_size=shard_size,
                            total_rows=len(repos_by_id), columns=list(ShardRow.model_fields),
                            policy_columns=list(POLICY_COLUMNS), shards=files)
        atomic_write(tmp / "manifest.json", manifest.model_dump_json(indent=2) + "\n")
        for d in [tmp, *(p for p in tmp.rglob("*") if p.is_dir())]:
            readable(d)                       # mkdtemp made it 0700
        if out.exists():
            old = Path(tempfile.mkdtemp(prefix=f".old-{out.name}-", dir=out.parent))
            os.replace(out, old / "x")
            os.replace(tmp, out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, out)
        return manifest
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


# ---------------------------------------------------------------- reading

def read_manifest(shard_dir: str | Path) -> Manifest:
    p = Path(shard_dir) / "manifest.json"
    if not p.is_file():
        raise UserError(f"no manifest.json in {shard_dir}")
    try:
        m = Manifest.model_validate_json(p.read_bytes())
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(x) for x in first.get("loc", ()))
        raise UserError(f"corrupt manifest {p}: {loc or 'document'}: {first.get('msg')}") from None
    if m.shard_schema_version != SHARD_SCHEMA_VERSION:
        raise UserError(f"{p}: shard schema version {m.shard_schema_version} is not supported "
                        f"(this taskforge reads {SHARD_SCHEMA_VERSION})")
    return m


def shard_paths(paths: Iterable[str | Path], verify: bool = True) -> list[Path]:
    """Shard files among `paths` (shard directories or files), checked against
    their manifest's size and sha256 where there is one."""
    out: list[Path] = []
    for p in map(Path, paths):
        listed: list[tuple[Path, ShardFile | None]]
        if p.is_dir():
            if p.name == "data" and not (p / "manifest.json").is_file():
                p = p.parent
            m = read_manifest(p)
            listed = [(p / f.path, f) for f in m.shards]
        elif p.is_file():
            entry = None
            top = p.parent.parent if p.parent.name == "data" else p.parent
            if (top / "manifest.json").is_file():
                rel = p.resolve().relative_to(top.resolve()).as_posix()
                entry = next((f for f in read_manifest(top).shards if f.path == rel), None)
            listed = [(p, entry)]
        else:
            raise UserError(f"no such shard or shard directory: {p}")
        for f, entry in listed:
            if not f.is_file():
                raise UserError(f"shard {f} listed in the manifest is missing")
            if verify and entry is not None:
                data = f.read_bytes()
                if len(data) != entry.bytes or hashlib.sha256(data).hexdigest() != entry.sha256:
                    raise UserError(f"checksum mismatch: {f} does not match its manifest entry")
            out.append(f)
    return out


def _parquet_file(path: Path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path, memory_map=True)
        meta = pf.schema_arrow.metadata or {}
    except (pa.ArrowException, OSError) as exc:
        raise UserError(f"corrupt shard {path}: {str(exc).splitlines()[0]}") from None
    version = meta.get(META_KEY)
    if version != str(SHARD_SCHEMA_VERSION).encode():
        raise UserError(f"shard {path}: shard schema version "
                        f"{version.decode() if version else 'missing'} is not supported "
                        f"(this taskforge reads {SHARD_SCHEMA_VERSION})")
    want = arrow_schema()
    if pf.schema_arrow.remove_metadata() != want.remove_metadata():
        raise UserError(f"shard {path}: columns do not match shard schema {SHARD_SCHEMA_VERSION}")
    return pf


def iter_rows(path: Path, check: bool = True) -> Iterator[ShardRow]:
    """Rows of one shard file, checked against their digests."""
    import pyarrow as pa

    path = Path(path)
    if path.suffix == ".jsonl":
        with open(path, "rb") as fh:
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    row = ShardRow.model_validate_json(line)
                except ValidationError as exc:
                    first = exc.errors()[0]
                    loc = ".".join(str(x) for x in first.get("loc", ()))
                    raise UserError(f"corrupt shard {path}:{n}: {loc or 'row'}: "
                                    f"{first.get('msg')}") from None
                if check:
                    check_row(row, f"shard {path}")
                yield row
        return
    pf = _parquet_file(path)
    try:
        for g in range(pf.num_row_groups):
            for d in pf.read_row_group(g).to_pylist():
                row = parse_row(d)
                if check:
                    check_row(row, f"shard {path}")
                yield row
    except pa.ArrowException as exc:
        raise UserError(f"corrupt shard {path}: {str(exc).splitlines()[0]}") from None


def read_rows(paths: Iterable[str | Path], check: bool = True) -> Iterator[ShardRow]:
    for f in shard_paths(paths, verify=check):
        yield from iter_rows(f, check=check)


def unshard(paths: Iterable[str | Path], out: str | Path, log=None) -> list[Path]:
    """Rebuild task directories under `out` from shards; returns them in row order."""
    out = Path(out)
    written: list[Path] = []
    seen: set[str] = set()
    for row in read_rows(paths):
        if row.instance_id in seen:
            raise UserError(f"duplicate instance_id {row.instance_id} in the shards")
        seen.add(row.instance_id)
        _safe_id(row.instance_id)
        written.append(row_to_task(row, out / row.instance_id))
        if log:
            log(str(written[-1]))
    return written


def _safe_id(instance_id: str) -> str:
    """An instance id names a directory: refuse ones that could name another."""
    if (not instance_id or len(instance_id) > 255 or instance_id in (".", "..")
            or instance_id.startswith(".") or any(c in instance_id for c in "/\\\0")):
        raise UserError(f"bad instance_id {instance_id!r}")
    return instance_id


class ShardIndex:
    """instance_id -> where its row is, for reading one row without a whole shard;
    also each row's repo and difficulty tier (`info`), for selecting without
    reading the archives."""

    def __init__(self, paths: Iterable[str | Path]):
        self.where: dict[str, tuple[Path, int]] = {}
        self.info: dict[str, tuple[str, str]] = {}     # instance_id -> (repo, difficulty_tier)
        for f in shard_paths(paths, verify=False):
            if f.suffix == ".jsonl":
                with open(f, "rb") as fh:
                    offset = 0
                    for line in fh:
                        if line.strip():
                            try:
                                d = json.loads(line)
                            except ValueError:
                                raise UserError(f"corrupt shard {f}: a line is not JSON") from None
                            iid = d.get("instance_id")
                            self.where[iid] = (f, offset)
                            self.info[iid] = (str(d.get("repo", "")), str(d.get("difficulty_tier", "")))
                        offset += len(line)
            else:
                pf = _parquet_file(f)
                for g in range(pf.num_row_groups):
                    t = pf.read_row_group(g, columns=["instance_id", "repo", "difficulty_tier"])
                    for iid, repo, tier in zip(*(t.column(c).to_pylist() for c in range(3))):
                        self.where[iid] = (f, g)
                        self.info[iid] = (repo, tier)

    def __contains__(self, instance_id: str) -> bool:
        return instance_id in self.where

    def __len__(self) -> int:
        return len(self.where)

    def ids(self) -> list[str]:
        return sorted(self.where)

    def row(self, instance_id: str) -> ShardRow:
        if instance_id not in self.where:
            raise UserError(f"no task {instance_id} in the shards")
        f, pos = self.where[instance_id]
        if f.suffix == ".jsonl":
            with open(f, "rb") as fh:
                fh.seek(pos)
                row = ShardRow.model_validate_json(fh.readline())
        else:
            rows = _parquet_file(f).read_row_group(pos).to_pylist()
            row = parse_row(next(r for r in rows if r["instance_id"] == instance_id))
        check_row(row, f"shard {f}")
        return row

    def rows(self, ids: list[str]) -> list[ShardRow]:
        """The checked rows of `ids`, in that order, reading each row group once."""
        missing = [i for i in ids if i not in self.where]
        if missing:
            raise UserError(f"no task {missing[0]} in the shards")
        got: dict[str, ShardRow] = {}
        groups: dict[tuple[Path, int], set[str]] = {}
        for iid in ids:
            f, pos = self.where[iid]
            if f.suffix == ".jsonl":
                got[iid] = self.row(iid)
            else:
                groups.setdefault((f, pos), set()).add(iid)
        for (f, g), want in groups.items():
            for d in _parquet_file(f).read_row_group(g).to_pylist():
                if d["instance_id"] in want:
                    row = parse_row(d)
                    check_row(row, f"shard {f}")
                    got[row.instance_id] = row
        return [got[i] for i in ids]
