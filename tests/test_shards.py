"""Shards: real generated tasks written as Parquet/JSON lines, loaded with
pyarrow, pandas and `datasets`, rebuilt into task directories that verify
exactly like the originals; corrupt input gets one clear line."""
from __future__ import annotations

import filecmp
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from taskforge.grade.verify import Solution, verify_many
from taskforge.package.store import load_task
from taskforge.training import shards
from tests.conftest import ROOT

FIXTURES = ("textkit", "geomlib", "ledger")


def tf(*args, **kw):
    """The worktree's CLI in a fresh process."""
    return subprocess.run([sys.executable, "-m", "taskforge", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600, **kw)


def one_line_error(res, needle: str, code: int = 2):
    assert res.returncode == code, (res.returncode, res.stdout, res.stderr)
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr
    assert needle in lines[0], lines[0]


@pytest.fixture(scope="module")
def task_roots(generated):
    return [generated(name)[0] for name in FIXTURES]


@pytest.fixture(scope="module")
def split_seed(task_roots):
    """A seed that spreads the three fixture repositories over at least two splits."""
    repos = {load_task(d).record.repo for d in shards.find_tasks(task_roots)}
    fracs = shards.parse_splits("train=0.5,val=0.25,test=0.25")
    return next(s for s in range(200)
                if len({shards.assign_split(r, fracs, s) for r in repos}) >= 2)


@pytest.fixture(scope="module")
def sharded(task_roots, split_seed, tmp_path_factory):
    out = tmp_path_factory.mktemp("shards") / "a"
    m = shards.write_shards(task_roots, out, shard_size=4,
                            splits=shards.parse_splits("train=0.5,val=0.25,test=0.25"),
                            seed=split_seed)
    return out, m


def files_of(d: Path) -> dict[str, bytes]:
    return {p.relative_to(d).as_posix(): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def test_two_runs_are_byte_identical(sharded, task_roots, split_seed, tmp_path):
    out, m = sharded
    res = tf("shard", *task_roots, "--out", tmp_path / "b", "--shard-size", 4,
             "--splits", "train=0.5,val=0.25,test=0.25", "--seed", split_seed, "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == json.loads(m.model_dump_json())
    a, b = files_of(out), files_of(tmp_path / "b")
    assert a.keys() == b.keys() and a == b
    assert len(m.shards) >= 3 and "manifest.json" in a
    for f in m.shards:
        data = (out / f.path).read_bytes()
        assert hashlib.sha256(data).hexdigest() == f.sha256 and len(data) == f.bytes


def test_manifest_and_splits_by_repository(sharded, task_roots):
    out, m = sharded
    n_tasks = len(shards.find_tasks(task_roots))
    assert m.total_rows == n_tasks == sum(f.rows for f in m.shards) == sum(m.split_rows.values())
    assert m.shard_schema_version == shards.SHARD_SCHEMA_VERSION
    assert all(f.rows <= 4 for f in m.shards)
    repo_splits: dict[str, set] = {}
    family_splits: dict[str, set] = {}
    hidden: dict[str, list[str]] = {}
    repo_of: dict[str, str] = {}
    for f in m.shards:
        for row in shards.iter_rows(out / f.path):
            repo_splits.setdefault(shards.normalize_repo(row.repo), set()).add(f.split)
            family_splits.setdefault(row.family, set()).add(f.split)
            hidden[row.instance_id] = row.FAIL_TO_PASS
            repo_of[row.instance_id] = shards.normalize_repo(row.repo)
    assert all(len(s) == 1 for s in repo_splits.values()), repo_splits
    # Families of near-duplicates (issue 24), recomputed over every task sharded:
    # each one's id is a task of it, and it never spans two splits.
    from taskforge.package.families import families
    assert all(len(s) == 1 for s in family_splits.values()), family_splits
    assert set(families(hidden, repo_of).values()) == set(family_splits)
    assert {r: s.pop() for r, s in repo_splits.items()} == m.repos
    assert len(set(m.repos.values())) >= 2
    # Stable names, not the temporary checkout paths the fixtures were cloned from.
    assert all("/" not in r and not r.startswith("tmp") for r in m.repos), m.repos
    # Readable by a trainer running as another user (mkstemp/mkdtemp give 0600/0700).
    umask = os.umask(0o022)
    os.umask(umask)
    for p in [out, *out.rglob("*")]:
        want = (0o777 if p.is_dir() else 0o666) & ~umask
        assert p.stat().st_mode & 0o777 == want, (p, oct(p.stat().st_mode))


def test_loads_with_pyarrow_pandas_and_datasets(sharded, tmp_path, monkeypatch):
    import datasets
    import pandas as pd
    import pyarrow.parquet as pq

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out, m = sharded
    for f in m.shards:
        table = pq.read_table(out / f.path)
        assert table.num_rows == f.rows
        assert table.schema.metadata[shards.META_KEY] == str(shards.SHARD_SCHEMA_VERSION).encode()
        assert table.column_names == list(shards.ShardRow.model_fields)
        assert table.column("instance_id").to_pylist() == sorted(table.column("instance_id").to_pylist())
    df = pd.read_parquet(out / "data")
    assert len(df) == m.total_rows and (df.removed_lines > 0).all()
    assert shards.parse_row(df.iloc[0].to_dict()).instance_id == df.iloc[0].instance_id
    dd = datasets.load_dataset("parquet", data_dir=str(out), cache_dir=str(tmp_path / "hf"))
    assert {k: len(v) for k, v in dd.items()} == {k: v for k, v in m.split_rows.items() if v}
    row = next(iter(dd.values()))[0]
    assert isinstance(row["workspace_tgz"], bytes) and row["removed_symbols"][0]["qualname"]
    shards.check_row(shards.parse_row(row))


def test_task_record_round_trips(task_roots):
    from taskforge.models import TaskRecord, TaskSizes, TaskTimings

    assert [f.name for f in shards.arrow_schema()] == list(shards.ShardRow.model_fields)
    # A field added to task.json needs a column (and a schema version bump).
    assert set(TaskRecord.model_fields) == shards.RECORD_FIELDS
    assert set(TaskSizes.model_fields) == {"removed_lines", "removed_symbols", "hidden_tests",
                                           "remaining_tests", "workspace_files"}
    assert set(TaskTimings.model_fields) == {"remaining_suite", "hidden_on_stripped", "adequacy",
                                             "rounds"}
    assert shards.SHARD_SCHEMA_VERSION == 7      # 7: feature_removal (6: contamination_json, 5: family)
    for d in shards.find_tasks(task_roots)[::4]:
        row = shards.task_to_row(d)
        rec = load_task(d).record
        assert shards.row_to_record(row) == rec
        assert row.difficulty_tier == rec.difficulty.tier.value


def test_unshard_rebuilds_tasks_that_verify_the_same(sharded, task_roots, tmp_path):
    out, m = sharded
    res = tf("unshard", out, "--out", tmp_path / "tasks", "--json")
    assert res.returncode == 0, res.stderr
    rebuilt = [Path(p) for p in json.loads(res.stdout)["tasks"]]
    originals = {d.name: d for d in shards.find_tasks(task_roots)}
    assert sorted(p.name for p in rebuilt) == sorted(originals)
    for new in rebuilt:
        old = originals[new.name]
        for name in ("task.json", "gold.patch", "test.patch", "problem_statement.md"):
            assert filecmp.cmp(old / name, new / name, shallow=False), (new.name, name)
        cmp = filecmp.dircmp(old / "hidden", new / "hidden")
        assert not (cmp.left_only or cmp.right_only or cmp.diff_files)
        # The whole workspace, its one-commit repository included, comes back byte for
        # byte. Not .git/index: its stat cache is rewritten by any `git status` run on
        # the original (other tests do), while the rebuilt one is as generate wrote it.
        old_ws, new_ws = files_of(old / "workspace"), files_of(new / "workspace")
        assert old_ws.pop(".git/index", None) and new_ws.pop(".git/index", None)
        assert old_ws == new_ws, new.name
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=new / "workspace",
                              capture_output=True, text=True).stdout.strip()
        assert head == load_task(new).record.base_commit
    task = next(p for p in rebuilt if p.name.startswith("ledger"))
    gold, empty = verify_many([(task, Solution.gold()), (task, Solution.empty())], workers=2)
    assert gold.error is None and gold.reward == 1.0, gold.model_dump_json(indent=1)
    assert empty.error is None and empty.reward == 0.0


def test_jsonl_shards_round_trip(task_roots, tmp_path, monkeypatch):
    import datasets

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    roots = task_roots[:1]
    m = shards.write_shards(roots, tmp_path / "j", fmt="jsonl")
    shards.write_shards(roots, tmp_path / "j2", fmt="jsonl")
    assert files_of(tmp_path / "j") == files_of(tmp_path / "j2")
    rows = list(shards.read_rows([tmp_path / "j"]))
    assert [r.instance_id for r in rows] == sorted(r.instance_id for r in rows)
    assert rows == [shards.task_to_row(d) for d in sorted(shards.find_tasks(roots),
                                                           key=lambda d: d.name)]
    ds = datasets.load_dataset("json", data_files=str(tmp_path / "j" / "data" / "*.jsonl"),
                               split="train", cache_dir=str(tmp_path / "hf"))
    assert len(ds) == m.total_rows
    written = shards.unshard([tmp_path / "j" / m.shards[0].path], tmp_path / "tasks")
    assert len(written) == m.total_rows and load_task(written[0]).record.instance_id


def test_policy_view_hides_the_grader_columns(sharded):
    out, m = sharded
    row = next(shards.read_rows([out]))
    view = shards.policy_view(row)
    assert "problem_statement" in view and "workspace_tgz" in view
    for secret in ("patch", "test_patch", "hidden_tgz", "FAIL_TO_PASS", "PASS_TO_PASS",
                   "hidden_test_files"):
        assert secret not in view


def test_split_assignment_is_stable_and_proportional():
    fr = shards.parse_splits("train=0.8,val=0.1,test=0.1")
    repos = [f"https://example.org/org/repo{i}.git" for i in range(2000)]
    got = [shards.assign_split(r, fr, 0) for r in repos]
    share = got.count("train") / len(got)
    assert 0.75 < share < 0.85
    assert got == [shards.assign_split(r, fr, 0) for r in repos]
    assert got != [shards.assign_split(r, fr, 1) for r in repos]
    same = ("https://Example.org/org/Repo1.git", "https://example.org/org/repo1/",
            "https://example.org/org/repo1")
    assert len({shards.assign_split(r, fr, 0) for r in same}) == 1


def test_bad_input_gets_one_line(sharded, task_roots, tmp_path):
    out, m = sharded
    one_line_error(tf("shard", tmp_path / "nope", "--out", tmp_path / "x"), "no such task directory")
    one_line_error(tf("shard", task_roots[0], "--out", tmp_path / "x", "--splits", "train=0.5"),
                   "add up to 1")
    one_line_error(tf("shard", task_roots[0], "--out", tmp_path / "x", "--format", "csv"),
                   "unknown shard format")
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "keep.txt").write_text("mine")
    one_line_error(tf("shard", task_roots[0], "--out", tmp_path / "busy"), "not a shard directory")
    assert (tmp_path / "busy" / "keep.txt").read_text() == "mine"
    one_line_error(tf("shard", task_roots[0], task_roots[0], "--out", tmp_path / "x"),
                   "duplicate instance_id")
    one_line_error(tf("unshard", tmp_path / "nope", "--out", tmp_path / "t"), "no such shard")

    # One flipped byte in a shard: the manifest catches it.
    bad = tmp_path / "flip"
    subprocess.run(["cp", "-r", str(out), str(bad)], check=True)
    f = bad / m.shards[0].path
    data = bytearray(f.read_bytes())
    data[len(data) // 2] ^= 0xFF
    f.write_bytes(bytes(data))
    one_line_error(tf("unshard", bad, "--out", tmp_path / "t"), "checksum mismatch")
    # Without a manifest, a truncated file is still refused.
    lone = tmp_path / "lone.parquet"
    lone.write_bytes((out / m.shards[0].path).read_bytes()[:5000])
    one_line_error(tf("unshard", lone, "--out", tmp_path / "t"), "corrupt shard")
    # A row whose workspace was swapped for another's fails its digests.
    rows = list(shards.iter_rows(out / m.shards[0].path))
    forged = rows[0].model_copy(update={"workspace_tgz": rows[1].workspace_tgz,
                                        "workspace_sha256": rows[1].workspace_sha256})
    (tmp_path / "forged.jsonl").write_text(forged.model_dump_json() + "\n")
    one_line_error(tf("unshard", tmp_path / "forged.jsonl", "--out", tmp_path / "t"),
                   "checksum mismatch")
    # A manifest from a future schema.
    future = tmp_path / "future"
    subprocess.run(["cp", "-r", str(out), str(future)], check=True)
    man = json.loads((future / "manifest.json").read_text())
    man["shard_schema_version"] = 99
    (future / "manifest.json").write_text(json.dumps(man))
    one_line_error(tf("unshard", future, "--out", tmp_path / "t"), "not supported")
    assert not (tmp_path / "t").exists() or not any((tmp_path / "t").iterdir())


def test_rebuilt_workspace_must_match_base_commit(sharded, tmp_path):
    """A row whose recorded base_commit disagrees with its workspace is refused."""
    out, _ = sharded
    row = next(shards.read_rows([out]))
    fields = row.model_dump()
    fields["base_commit"] = "0" * 40
    fields["row_sha256"] = shards.row_digest(fields)
    with pytest.raises(Exception) as exc:
        shards.row_to_task(fields, tmp_path / "t" / row.instance_id)
    assert "base_commit" in str(exc.value)
    assert not (tmp_path / "t" / row.instance_id).exists()
    assert not [p for p in (tmp_path / "t").iterdir()]       # no temp directory left behind


def test_dirty_workspace_is_refused(task_roots, tmp_path):
    src = shards.find_tasks(task_roots)[0]
    copy = tmp_path / src.name
    subprocess.run(["cp", "-a", str(src), str(copy)], check=True)
    (copy / "workspace" / "stray.py").write_text("x = 1\n")
    with pytest.raises(Exception) as exc:
        shards.write_shards([copy], tmp_path / "out")
    assert "changes since generation" in str(exc.value)
    assert not (tmp_path / "out").exists()
    assert os.listdir(tmp_path) == [copy.name]


def test_sharding_leaves_the_tasks_untouched(task_roots):
    d = shards.find_tasks(task_roots)[1]
    before = files_of(d)
    shards.task_to_row(d)
    assert files_of(d) == before
