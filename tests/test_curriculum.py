"""Curriculum: the solve stats store under concurrent writers (threads and
processes), torn lines and infrastructure errors; recording through the library
and through a real `taskforge serve`; then `taskforge select` by solve-rate band
and difficulty tier, writing shard subsets that read back and serve."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from taskforge.errors import UserError
from taskforge.models import Difficulty, TaskRecord, Tier
from taskforge.training import curriculum, rewards, shards
from taskforge.training.rewards import RewardResult
from tests.conftest import ROOT
from tests.test_server import NEW_FILE, call, server


def tf(*args, env_extra: dict | None = None):
    """The worktree's CLI in a fresh process, without a $TASKFORGE_STATS of the caller's."""
    env = {k: v for k, v in os.environ.items() if k != curriculum.STATS_ENV}
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "taskforge", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600, env=env)


def one_line_error(res, needle: str, code: int = 2):
    assert res.returncode == code, (res.returncode, res.stdout, res.stderr)
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr
    assert needle in lines[0], lines[0]


def files_of(d: Path) -> dict[str, bytes]:
    return {p.relative_to(d).as_posix(): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("TASKFORGE_CACHE", str(tmp_path / "cache"))
    for var in ("TASKFORGE_TASKS", "TASKFORGE_REWARD_URL", curriculum.STATS_ENV):
        monkeypatch.delenv(var, raising=False)


# ---------------------------------------------------------------- the store

WRITER = """
import sys
from taskforge.training.curriculum import SolveStats
s = SolveStats(sys.argv[1])
for n in range(int(sys.argv[3])):
    s.record(f"proc{sys.argv[2]}-{n % 7}", float(n % 2), n % 2 == 1)
"""


def test_concurrent_appends_from_threads_and_processes_lose_nothing(tmp_path):
    path = tmp_path / "deep" / "stats.jsonl"          # the directory is made on first record
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(k), "600"], cwd=ROOT)
             for k in range(2)]
    store = curriculum.SolveStats(path)
    start = threading.Barrier(8)

    def writer(k: int):
        start.wait()
        for n in range(250):
            # long ids: lines of ~600 bytes, so appends are not trivially small
            store.record(f"thread{k}-{n % 5}-" + "x" * 500, 1.0 if n % 5 == 0 else 0.0, n % 5 == 0)

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for p in procs:
        assert p.wait(timeout=120) == 0

    report = store.report()
    assert report.skipped_lines == 0
    assert report.attempts == 8 * 250 + 2 * 600
    lines = path.read_bytes().splitlines()
    assert len(lines) == report.attempts and all(json.loads(ln)["instance_id"] for ln in lines)
    for k in range(8):
        for i in range(5):
            t = report.tasks[f"thread{k}-{i}-" + "x" * 500]
            assert t.attempts == 50 and t.solves == (50 if i == 0 else 0)
    for k in range(2):
        per_task = [report.tasks[f"proc{k}-{i}"] for i in range(7)]
        assert sum(t.attempts for t in per_task) == 600
        assert sum(t.solves for t in per_task) == 300
    assert report.solves == 8 * 50 + 2 * 300


def test_garbled_lines_are_skipped_and_infra_errors_not_counted(tmp_path):
    path = tmp_path / "stats.jsonl"
    store = curriculum.SolveStats(path)
    assert store.report().attempts == 0               # no file yet: no attempts, no error
    assert store.record("a", 1.0, True)
    assert not store.record("a", None, False)          # ungradable: not an attempt
    curriculum.record(RewardResult(instance_id="a", reward=None, infra_error="engine gone"), store)
    curriculum.record(RewardResult(instance_id="b", reward=0.0), store)
    with open(path, "ab") as fh:
        fh.write(b"\x00\xffnot json\n\n   \n")
        fh.write(b'{"instance_id": "c", "reward": NaN, "resolved": false, "at": 1}\n')
        fh.write(b'{"instance_id": "b", "reward": 1.0, "resolved": true}\n')   # no "at"
        # A writer died mid-line; the next record is glued to it and still counts.
        fh.write(b'{"instance_id": "a", "rew')
    store.record("a", 0.0, False)
    with open(path, "ab") as fh:
        fh.write(b'{"instance_id": "b", "reward": 1.0, "res')     # torn last line
    report = store.report()
    assert report.skipped_lines == 5
    assert {k: (t.attempts, t.solves) for k, t in report.tasks.items()} == {"a": (2, 1), "b": (1, 0)}
    assert report.tasks["a"].solve_rate == 0.5 and report.tasks["b"].solve_rate == 0.0

    # A store that cannot be written costs a warning, not the reward.
    blocked = tmp_path / "file"
    blocked.write_text("")
    curriculum.record(RewardResult(instance_id="a", reward=1.0, resolved=True),
                      blocked / "stats.jsonl")


def test_band_and_tier_parsing():
    assert curriculum.parse_band("0.1:0.9") == (0.1, 0.9)
    assert curriculum.parse_band("10%:90%") == (0.1, 0.9)
    assert curriculum.parse_band("0:1") == (0.0, 1.0)
    for bad in ("0.9:0.1", "abc", "0.5", "0:1:1", "-0.1:0.5", "0:1.5", "nan:1", ":"):
        with pytest.raises(UserError, match="--solve-rate"):
            curriculum.parse_band(bad)
    assert curriculum.parse_tiers(["hard", "easy,medium", "HARD"]) == [Tier.HARD, Tier.EASY,
                                                                      Tier.MEDIUM]
    with pytest.raises(UserError, match="--tier"):
        curriculum.parse_tiers(["hardest"])


def test_library_records_attempts(tasks, tmp_path, monkeypatch):
    """score_task / score / score_many record where told; empty answers cost no sandbox."""
    out, ids = tasks
    path = tmp_path / "lib.jsonl"
    r = rewards.score_task(out / ids[0], "", stats=path)
    assert r.reward == 0.0 and r.reason.startswith("empty solution")
    rewards.score("", ids[1], tasks=out, stats=curriculum.SolveStats(path))
    rewards.score_many([{"solution_str": " ", "ground_truth": i} for i in ids], tasks=out,
                       stats=path)
    monkeypatch.setenv(curriculum.STATS_ENV, str(path))
    rewards.score("", ids[2], tasks=out)                         # from $TASKFORGE_STATS
    rewards.score("", ids[2], tasks=out, stats=False)            # turned off
    report = curriculum.SolveStats(path).report()
    assert {k: t.attempts for k, t in report.tasks.items()} == {ids[0]: 2, ids[1]: 2, ids[2]: 2}
    assert report.solves == 0
    monkeypatch.delenv(curriculum.STATS_ENV)
    rewards.score("", ids[2], tasks=out)                         # nothing set: nothing recorded
    assert curriculum.SolveStats(path).report().attempts == 6


def test_default_stats_path_is_outside_the_task_source(tmp_path, monkeypatch):
    p = curriculum.default_stats_path(tmp_path / "shards")
    assert p.is_relative_to(tmp_path / "cache" / "stats") and p.name.startswith("shards-")
    assert p != curriculum.default_stats_path(tmp_path / "other" / "shards")
    monkeypatch.setenv(curriculum.STATS_ENV, str(tmp_path / "s.jsonl"))
    assert curriculum.default_stats_path(tmp_path / "shards") == tmp_path / "s.jsonl"


# ---------------------------------------------------------------- end to end

def test_solve_rates_through_serve_then_select(tasks, shard_dir, tmp_path):
    out, ids = tasks
    a, b, c = ids
    gold = {i: (out / i / "gold.patch").read_text() for i in ids}
    stats = tmp_path / "run" / "stats.jsonl"
    with server(shard_dir, tmp_path, "--concurrency", "2", "--stats", str(stats)) as base:
        status, health, _ = call(base, "/health")
        assert status == 200 and health["stats"] == str(stats)
        # A: gold twice; B: gold once and a wrong answer; C: two wrong answers.
        status, body, _ = call(base, "/reward/batch", {"items": [
            {"instance_id": a, "solution": f"Done.\n```diff\n{gold[a]}```"},
            {"instance_id": b, "solution": gold[b]},
            {"instance_id": b, "solution": " "}]})
        assert status == 200 and [r["reward"] for r in body["results"]] == [1.0, 1.0, 0.0], body
        status, body, _ = call(base, "/reward", {"instance_id": a, "solution": gold[a]})
        assert status == 200 and body["reward"] == 1.0, body
        status, body, _ = call(base, "/get_reward", {"query": ["Q:" + NEW_FILE, "Q:nothing"],
                                                     "prompts": ["Q:", "Q:"], "labels": [c, c]})
        assert status == 200 and body["rewards"] == [0.0, 0.0], body
        # An answer that could not be graded (its deadline passed) is no attempt.
        status, body, _ = call(base, "/reward", {"instance_id": c, "solution": gold[c],
                                                 "timeout": 0.05})
        assert status == 200 and body["reward"] is None and "timed out" in body["infra_error"]

        status, got, _ = call(base, "/stats")
        assert status == 200, got
        assert {k: (t["attempts"], t["solves"]) for k, t in got["tasks"].items()} == {
            a: (2, 2), b: (1 * 2, 1), c: (2, 0)}
        assert [got["tasks"][i]["solve_rate"] for i in ids] == [1.0, 0.5, 0.0]
        assert got["attempts"] == 6 and got["solves"] == 3 and got["skipped_lines"] == 0
        assert got["path"] == str(stats)
    assert len(stats.read_text().splitlines()) == 6

    res = tf("stats", "--stats", stats, "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["tasks"] == got["tasks"]
    res = tf("stats", "--stats", stats)
    assert res.returncode == 0 and "3 task(s), 6 attempt(s), 3 solve(s)" in res.stdout, res.stdout

    # At the edge: solved sometimes, but not always nor never.
    edge = tmp_path / "edge"
    res = tf("select", shard_dir, "--out", edge, "--stats", stats, "--solve-rate", "0.1:0.9",
             "--json")
    assert res.returncode == 0, res.stderr
    sel = json.loads(res.stdout)
    assert sel["instance_ids"] == [b] and sel["kept"] == 1 and sel["read"] == 3
    assert sel["by_band"] == {"below": 1, "in_band": 1, "above": 1, "untried": 0, "untried_kept": 0}
    rows = list(shards.read_rows([edge]))
    assert [r.instance_id for r in rows] == [b]
    assert rows[0] == shards.ShardIndex([shard_dir]).row(b)        # the same row, byte for byte
    assert shards.read_manifest(edge).total_rows == 1

    # Every band: all three; the subset is then the input shard set, byte for byte.
    everything = tmp_path / "all"
    res = tf("select", shard_dir, "--out", everything, "--stats", stats, "--solve-rate", "0:1")
    assert res.returncode == 0, res.stderr
    assert "kept 3 of 3 task(s)" in res.stdout and "in 0:1 3" in res.stdout, res.stdout
    assert files_of(everything) == files_of(shard_dir)

    # The same from the task directories, and with 10%:90% as percentages.
    res = tf("select", *[out / i for i in ids], "--out", tmp_path / "edge2", "--stats", stats,
             "--solve-rate", "10%:90%", "--json")
    assert res.returncode == 0 and json.loads(res.stdout)["instance_ids"] == [b], res.stderr
    assert files_of(tmp_path / "edge2") == files_of(edge)

    # Too few attempts: untried; dropped on request.
    res = tf("select", shard_dir, "--out", tmp_path / "few", "--stats", stats,
             "--min-attempts", "3", "--json")
    assert res.returncode == 0 and json.loads(res.stdout)["by_band"]["untried_kept"] == 3
    res = tf("select", shard_dir, "--out", tmp_path / "none", "--stats", stats,
             "--min-attempts", "3", "--untried", "exclude")
    one_line_error(res, "passes the filters")
    assert not (tmp_path / "none").exists()

    # The subset serves: B grades there; A is not in it.
    with server(edge, tmp_path, "--no-stats") as base:
        status, health, _ = call(base, "/health")
        assert status == 200 and health["tasks"] == 1 and health["stats"] is None
        r = rewards.score(gold[b], b, url=base)
        assert r.reward == 1.0 and r.resolved
        assert call(base, "/reward", {"instance_id": a, "solution": gold[a]})[0] == 404
        assert call(base, "/stats")[0] == 404


def _retier(src: Path, dest: Path, tier: Tier) -> Path:
    shutil.copytree(src, dest, symlinks=True)
    rec = TaskRecord.model_validate_json((dest / "task.json").read_text())
    rec.difficulty = Difficulty(tier=tier, score={"easy": 1.0, "medium": 5.0, "hard": 9.0}[tier.value],
                                removed_lines=rec.sizes.removed_lines)
    (dest / "task.json").write_text(rec.model_dump_json(indent=2) + "\n")
    return dest


def test_select_by_tier(tasks, tmp_path):
    out, ids = tasks
    root = tmp_path / "tasks"
    tiers = dict(zip(ids, (Tier.EASY, Tier.MEDIUM, Tier.HARD)))
    for i, t in tiers.items():
        _retier(out / i, root / i, t)
    src = tmp_path / "src"
    shards.write_shards([root], src, fmt="jsonl")
    assert {r.instance_id: r.difficulty_tier for r in shards.read_rows([src])} == {
        i: t.value for i, t in tiers.items()}

    res = tf("select", src, "--out", tmp_path / "mh", "--tier", "medium", "--tier", "hard",
             "--format", "parquet", "--json")
    assert res.returncode == 0, res.stderr
    sel = json.loads(res.stdout)
    assert sel["instance_ids"] == ids[1:] and sel["tiers"] == ["medium", "hard"]
    assert sel["by_tier"] == {"easy": {"read": 1, "kept": 0}, "medium": {"read": 1, "kept": 1},
                              "hard": {"read": 1, "kept": 1}}
    rows = list(shards.read_rows([tmp_path / "mh"]))
    assert [(r.instance_id, r.difficulty_tier) for r in rows] == [(ids[1], "medium"),
                                                                  (ids[2], "hard")]
    rec = shards.row_to_record(rows[1])
    assert rec.difficulty.tier == Tier.HARD and rec.difficulty.score == 9.0
    assert rec == TaskRecord.model_validate_json((root / ids[2] / "task.json").read_text())

    # Tier and band together, from task directories; a task without stats is untried.
    stats = curriculum.SolveStats(tmp_path / "s.jsonl")
    stats.record(ids[0], 1.0, True)
    stats.record(ids[1], 0.0, False)
    res = tf("select", root, "--out", tmp_path / "easy-or-medium", "--tier", "easy,medium",
             "--stats", stats.path, "--solve-rate", "0:0.5", "--json")
    assert res.returncode == 0, res.stderr
    sel = json.loads(res.stdout)
    assert sel["instance_ids"] == [ids[1]]
    assert sel["by_band"] == {"below": 0, "in_band": 1, "above": 1, "untried": 0, "untried_kept": 0}
    res = tf("select", root, "--out", tmp_path / "hard-untried", "--tier", "hard",
             "--stats", stats.path, "--solve-rate", "0:0.5")
    assert res.returncode == 0 and "untried 1 (1 kept" in res.stdout, res.stdout
    assert [r.instance_id for r in shards.read_rows([tmp_path / "hard-untried"])] == [ids[2]]


def test_select_refuses_bad_input_in_one_line(shard_dir, tmp_path):
    stats = tmp_path / "s.jsonl"
    curriculum.SolveStats(stats).record("x", 1.0, True)
    base = ["select", shard_dir, "--out", tmp_path / "o", "--stats", stats]
    one_line_error(tf(*base, "--solve-rate", "0.9:0.1"), "LO 0.9 is above HI 0.1")
    one_line_error(tf(*base, "--solve-rate", "abc"), "bad --solve-rate 'abc'")
    one_line_error(tf(*base, "--tier", "hardest"), "bad --tier 'hardest'")
    one_line_error(tf(*base, "--untried", "maybe"), "bad --untried")
    one_line_error(tf(*base, "--format", "csv"), "unknown shard format")
    one_line_error(tf("select", shard_dir, "--out", tmp_path / "o", "--solve-rate", "0:1"),
                   "need --stats")
    one_line_error(tf("select", shard_dir, "--out", tmp_path / "o", "--stats", tmp_path / "nope",
                      "--solve-rate", "0:1"), "no such stats file")
    one_line_error(tf("select", tmp_path / "missing", "--out", tmp_path / "o"), "no such task")
    one_line_error(tf("select", shard_dir, "--out", shard_dir), "is one of the inputs")
    one_line_error(tf("stats"), "no stats file")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("tier,attempts,rate,tiers,band,untried,want", [
    ("hard", 4, 0.5, set(), None, "include", "in-band"),             # no filter at all
    ("easy", 4, 0.5, {"hard"}, None, "include", "other-tier"),
    ("hard", 4, 0.5, {"hard", "easy"}, None, "include", "in-band"),
    ("hard", None, None, set(), (0.2, 0.8), "include", "untried-kept"),
    ("hard", None, None, set(), (0.2, 0.8), "exclude", "untried-dropped"),
    ("hard", 1, 1.0, set(), (0.2, 0.8), "include", "untried-kept"),   # under min_attempts (2)
    ("hard", 2, 0.1, set(), (0.2, 0.8), "include", "below"),
    ("hard", 2, 0.9, set(), (0.2, 0.8), "include", "above"),
    ("hard", 5, 0.2, set(), (0.2, 0.8), "include", "in-band"),        # both ends are in
    ("hard", 5, 0.8, set(), (0.2, 0.8), "include", "in-band"),
    ("hard", 5, 0.19, set(), (0.2, 0.8), "include", "below"),
    ("hard", 5, 0.81, set(), (0.2, 0.8), "include", "above"),
    ("easy", None, None, {"hard"}, (0.2, 0.8), "exclude", "other-tier"),  # the tier first
])
def test_select_picks_by_tier_attempts_then_band(tier, attempts, rate, tiers, band, untried, want):
    from taskforge.training.curriculum import pick

    p = pick(tier, attempts, rate, tiers=tiers, band=band, min_attempts=2, untried=untried)
    assert p.value == want
    assert p.kept is (want in ("in-band", "untried-kept"))
