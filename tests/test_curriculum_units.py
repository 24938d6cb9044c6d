"""Curriculum without a sandbox: the solve stats store (records, torn lines,
aggregates), the store a call records into, and `select` over small task
directories and shards made here (no generate run): the tier and solve-rate
band filter, its counts, the splits it inherits and the input it refuses.
The fast tier; tests/test_curriculum.py has the concurrent writers and the
end-to-end runs through `taskforge serve`."""
from __future__ import annotations

import json
import logging
import os
import stat
import subprocess
from pathlib import Path

import pytest

from taskforge.errors import UserError
from taskforge.models import Difficulty, FeatureInfo, RemovedSymbol, TaskRecord, TaskSizes, TaskTimings, Tier
from taskforge.training import curriculum, shards
from taskforge.training.curriculum import Attempt, Pick, SolveStats, aggregate, pick

STATS_ENV = "TASKFORGE_STATS"


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("TASKFORGE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(STATS_ENV, raising=False)


# ---------------------------------------------------------------- the store

def lines_of(p: Path) -> list[dict]:
    return [json.loads(ln) for ln in p.read_text().splitlines()]


def test_record_appends_one_json_line_per_attempt(tmp_path):
    path = tmp_path / "deep" / "er" / "s.jsonl"          # directories made on first record
    store = SolveStats(path)
    assert repr(store) == f"SolveStats({str(path)!r})"
    assert store.record("a", 1, 1, at=12.34567) is True
    assert store.record("b", 0.25, False, at=100.0) is True
    assert lines_of(path) == [{"instance_id": "a", "reward": 1.0, "resolved": True, "at": 12.346},
                              {"instance_id": "b", "reward": 0.25, "resolved": False, "at": 100.0}]
    assert path.read_bytes().endswith(b"}\n") and path.read_bytes().count(b"\n") == 2


def test_a_long_record_is_written_whole(tmp_path):
    store = SolveStats(tmp_path / "s.jsonl")
    assert store.record("x" * 5000, 1.0, True, at=1.0)           # one write of over 5 kB
    assert [a.instance_id for a in store.attempts()[0]] == ["x" * 5000]


def test_the_store_descriptor_is_not_inherited(tmp_path, monkeypatch):
    """Opened close-on-exec: a reward server's or Ray worker's children never hold it."""
    flags_seen = []
    real = os.open

    def spy(path, flags, *a):
        flags_seen.append(flags)
        return real(path, flags, *a)

    monkeypatch.setattr(curriculum.os, "open", spy)
    SolveStats(tmp_path / "s.jsonl").record("a", 1.0, True)
    (flags,) = flags_seen
    want = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
    assert flags & want == want


def test_record_without_a_time_stamps_now(tmp_path):
    import time

    before = time.time()
    SolveStats(tmp_path / "s.jsonl").record("a", 0.0, False)
    (line,) = lines_of(tmp_path / "s.jsonl")
    assert before - 0.001 <= line["at"] <= time.time() + 0.001


def test_an_ungradable_answer_writes_nothing(tmp_path):
    path = tmp_path / "d" / "s.jsonl"
    assert SolveStats(path).record("a", None, True) is False
    assert not path.parent.exists()


def test_the_store_file_is_readable_by_all(tmp_path):
    old = os.umask(0o022)
    try:
        SolveStats(tmp_path / "s.jsonl").record("a", 1.0, True)
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "s.jsonl").stat().st_mode) == 0o644


def test_a_short_write_is_an_error(tmp_path, monkeypatch):
    real = os.write
    monkeypatch.setattr(curriculum.os, "write", lambda fd, data: real(fd, data[:10]))
    with pytest.raises(OSError, match="short write .* 10 of"):
        SolveStats(tmp_path / "s.jsonl").record("a", 1.0, True)


def test_reading_skips_blank_and_garbled_lines_and_recovers_a_glued_record(tmp_path):
    path = tmp_path / "s.jsonl"
    store = SolveStats(path)
    assert store.attempts() == ([], 0)                      # no file: nothing, no error
    good = '{"instance_id": "a", "reward": 1.0, "resolved": true, "at": 1}'
    path.write_text("\n".join([
        good,
        "",                                                  # blank: not a skipped line
        "   ",
        '{"instance_id": "a", "rew' + good.replace('"a"', '"b"'),   # torn, then a whole record
        "x" + good.replace('"a"', '"e"'),                         # one torn byte, then a record
        '{"instance_id": "c", "rew',                         # torn, nothing glued
        '{"instance_id": "", "reward": 1.0, "resolved": true, "at": 1}',    # empty id
        '{"instance_id": "d", "reward": Infinity, "resolved": true, "at": 1}',
        '[1, 2]',
        '\xff\xfe',
    ]) + "\n")
    got, skipped = store.attempts()
    assert [a.instance_id for a in got] == ["a", "b", "e"]
    assert skipped == 7


def test_aggregate_counts_attempts_solves_rates_and_the_last_time():
    atts = [Attempt(instance_id=i, reward=r, resolved=s, at=t) for i, r, s, t in [
        ("b", 1.0, True, 5.0), ("a", 0.5, False, 9.0), ("b", 0.0, False, 3.0),
        ("b", 0.5, True, 4.0), ("a", 0.0, False, 1.0)]]
    rep = aggregate(atts, "p", 2)
    assert (rep.path, rep.attempts, rep.solves, rep.skipped_lines) == ("p", 5, 2, 2)
    assert list(rep.tasks) == ["a", "b"]                     # sorted
    a, b = rep.tasks["a"], rep.tasks["b"]
    assert (a.attempts, a.solves, a.solve_rate, a.mean_reward, a.last_at) == (2, 0, 0.0, 0.25, 9.0)
    assert (b.attempts, b.solves, b.solve_rate, b.mean_reward, b.last_at) == (3, 2, 0.666667, 0.5, 5.0)
    assert aggregate([]).model_dump() == {"path": "", "attempts": 0, "solves": 0, "skipped_lines": 0,
                                          "tasks": {}}
    assert aggregate([], "p") == curriculum.StatsReport(path="p")    # nothing read: the empty report
    third = aggregate([Attempt(instance_id="a", reward=r, resolved=False, at=1.0) for r in (1.0, 0, 0)])
    assert third.tasks["a"].mean_reward == 0.333333                  # six places
    early = aggregate([Attempt(instance_id="a", reward=0.0, resolved=False, at=0.5)])
    assert early.tasks["a"].last_at == 0.5                           # whatever the clock said


def test_read_stats_merges_several_stores_and_refuses_a_missing_one(tmp_path):
    one, two = SolveStats(tmp_path / "1.jsonl"), SolveStats(tmp_path / "2.jsonl")
    one.record("a", 1.0, True, at=1)
    two.record("a", 0.0, False, at=2)
    two.record("b", 1.0, True, at=3)
    with open(two.path, "a") as fh:
        fh.write("garbage\n")
    rep = curriculum.read_stats([one.path, str(two.path)])
    assert rep.path == f"{one.path}{os.pathsep}{two.path}"
    assert (rep.attempts, rep.solves, rep.skipped_lines) == (3, 2, 1)
    assert {k: (t.attempts, t.solves) for k, t in rep.tasks.items()} == {"a": (2, 1), "b": (1, 1)}
    assert one.report().attempts == 1 and one.report().path == str(one.path)
    with pytest.raises(UserError, match="no such stats file: .*nope"):
        curriculum.read_stats([one.path, tmp_path / "nope"])


def test_the_store_a_call_records_into(tmp_path, monkeypatch):
    s = SolveStats(tmp_path / "x.jsonl")
    assert curriculum.open_store(False) is None
    assert curriculum.open_store(s) is s
    assert curriculum.open_store(None) is None and curriculum.open_store(True) is None
    assert curriculum.open_store(tmp_path / "y.jsonl").path == tmp_path / "y.jsonl"
    assert curriculum.open_store(str(tmp_path / "y.jsonl")).path == tmp_path / "y.jsonl"
    assert curriculum.open_store("") is None
    monkeypatch.setenv(STATS_ENV, str(tmp_path / "env.jsonl"))
    assert curriculum.open_store(None).path == tmp_path / "env.jsonl"
    assert curriculum.open_store(True).path == tmp_path / "env.jsonl"
    assert curriculum.open_store(False) is None
    assert curriculum.open_store(tmp_path / "y.jsonl").path == tmp_path / "y.jsonl"
    monkeypatch.setenv(STATS_ENV, "")
    assert curriculum.open_store(None) is None


class Result:
    def __init__(self, instance_id, reward, resolved=False):
        self.instance_id, self.reward, self.resolved = instance_id, reward, resolved


def test_record_a_result_only_when_graded_named_and_a_store_set(tmp_path, monkeypatch, caplog):
    path = tmp_path / "s.jsonl"
    curriculum.record(Result("a", 1.0, True), path)
    curriculum.record(Result("b", None), path)              # ungradable
    curriculum.record(Result("", 1.0), path)                # no id
    curriculum.record(Result("c", 0.0), None)               # no store
    curriculum.record(Result("d", 0.0), False)
    monkeypatch.setenv(STATS_ENV, str(path))
    curriculum.record(Result("e", 0.0), None)
    assert [(x["instance_id"], x["reward"], x["resolved"]) for x in lines_of(path)] == [
        ("a", 1.0, True), ("e", 0.0, False)]
    blocked = tmp_path / "file"
    blocked.write_text("")
    with caplog.at_level(logging.WARNING, logger="taskforge.training.curriculum"):
        curriculum.record(Result("f", 1.0, True), blocked / "s.jsonl")     # warns, never raises
    assert any("could not record the attempt on f" in r.getMessage() for r in caplog.records)


def test_default_stats_path(tmp_path, monkeypatch):
    src = tmp_path / "my shards!"
    p = curriculum.default_stats_path(src)
    assert p.parent == tmp_path / "cache" / "stats"
    name, digest = p.stem.rsplit("-", 1)
    assert name == "my_shards_" and len(digest) == 12 and int(digest, 16) >= 0
    assert p.suffix == ".jsonl"
    assert curriculum.default_stats_path(tmp_path / "other" / "my shards!") != p
    assert curriculum.default_stats_path(src) == p                   # stable
    long = curriculum.default_stats_path(tmp_path / ("x" * 100))
    assert long.stem.rsplit("-", 1)[0] == "x" * 60
    assert curriculum.default_stats_path("/").name.startswith("tasks-")
    monkeypatch.delenv("TASKFORGE_CACHE")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert curriculum.default_stats_path(src).parent == tmp_path / "home" / ".cache" / "taskforge" / "stats"
    monkeypatch.setenv(STATS_ENV, str(tmp_path / "s.jsonl"))
    assert curriculum.default_stats_path(src) == tmp_path / "s.jsonl"


# ---------------------------------------------------------------- parsing

@pytest.mark.parametrize("text,want", [
    ("0.1:0.9", (0.1, 0.9)), ("10%:90%", (0.1, 0.9)), ("0:1", (0.0, 1.0)),
    (" 0.2 : 0.8 ", (0.2, 0.8)), ("5%:0.5", (0.05, 0.5)), ("0.3:0.3", (0.3, 0.3)),
    ("100%:100%", (1.0, 1.0)),
])
def test_parse_band(text, want):
    assert curriculum.parse_band(text) == pytest.approx(want)


@pytest.mark.parametrize("text,msg", [
    ("0.9:0.1", "LO 0.9 is above HI 0.1"),
    ("abc", "expected LO:HI"), ("0.5", "expected LO:HI"), ("0:1:1", "expected LO:HI"),
    ("-0.1:0.5", "expected LO:HI"), ("0:1.5", "expected LO:HI"), ("0:101%", "expected LO:HI"),
    ("nan:1", "expected LO:HI"), ("0:inf", "expected LO:HI"), (":", "expected LO:HI"),
])
def test_parse_band_refuses(text, msg):
    with pytest.raises(UserError, match=f"bad --solve-rate {text!r}.*{msg}"):
        curriculum.parse_band(text)


def test_parse_tiers_dedups_in_order_and_refuses_an_unknown_one():
    assert curriculum.parse_tiers(["hard", " Easy , medium,,", "HARD", ""]) == [Tier.HARD, Tier.EASY,
                                                                               Tier.MEDIUM]
    assert curriculum.parse_tiers([]) == []
    with pytest.raises(UserError, match="bad --tier 'hardest'"):
        curriculum.parse_tiers(["easy,hardest"])


# ---------------------------------------------------------------- pick

@pytest.mark.parametrize("p,kept", [(Pick.IN_BAND, True), (Pick.UNTRIED_KEPT, True),
                                    (Pick.UNTRIED_DROPPED, False), (Pick.BELOW, False),
                                    (Pick.ABOVE, False), (Pick.OTHER_TIER, False)])
def test_which_picks_keep_the_task(p, kept):
    assert p.kept is kept


@pytest.mark.parametrize("attempts,rate,band,min_attempts,untried,want", [
    (3, 0.5, None, 3, "include", Pick.IN_BAND),                 # exactly min_attempts: tried
    (2, 0.5, None, 3, "include", Pick.UNTRIED_KEPT),
    (2, 0.5, None, 3, "exclude", Pick.UNTRIED_DROPPED),
    (0, None, None, 1, "exclude", Pick.UNTRIED_DROPPED),
    (5, 0.0, None, 1, "include", Pick.IN_BAND),                 # no band: every rate
    (5, None, (0.2, 0.8), 1, "include", Pick.IN_BAND),          # no rate to compare
    (5, 0.2 - 1e-12, (0.2, 0.8), 1, "include", Pick.IN_BAND),   # float noise at an end is in
    (5, 0.8 + 1e-12, (0.2, 0.8), 1, "include", Pick.IN_BAND),
    (5, 0.2 - 1e-9, (0.2, 0.8), 1, "include", Pick.IN_BAND),    # the tolerance itself is in
    (5, 0.8 + 1e-9, (0.2, 0.8), 1, "include", Pick.IN_BAND),
    (5, 0.2 - 1e-6, (0.2, 0.8), 1, "include", Pick.BELOW),
    (5, 0.8 + 1e-6, (0.2, 0.8), 1, "include", Pick.ABOVE),
    (5, 0.0, (0.0, 0.0), 1, "include", Pick.IN_BAND),           # never solved: a band of one
    (5, 1.0, (0.0, 0.99), 1, "include", Pick.ABOVE),
    (5, 0.5, (0.6, 1.0), 1, "exclude", Pick.BELOW),
])
def test_pick_by_attempts_then_band(attempts, rate, band, min_attempts, untried, want):
    assert pick("easy", attempts, rate, tiers=set(), band=band, min_attempts=min_attempts,
                untried=untried) is want


def test_pick_untried_exclude_as_argv_gives_it():
    exclude = "".join(["ex", "clude"])                             # not interned
    assert pick("easy", None, None, tiers=set(), band=None, min_attempts=1,
                untried=exclude) is Pick.UNTRIED_DROPPED


def test_pick_tier_comes_first_and_no_tiers_means_every_tier():
    kw: dict = {"band": (0.4, 0.6), "min_attempts": 1, "untried": "exclude"}
    assert pick("easy", 5, 0.5, tiers={"hard"}, **kw) is Pick.OTHER_TIER
    assert pick("easy", None, None, tiers={"hard"}, **kw) is Pick.OTHER_TIER
    assert pick("hard", 5, 0.5, tiers={"hard", "easy"}, **kw) is Pick.IN_BAND
    assert pick("", 5, 0.5, tiers=set(), **kw) is Pick.IN_BAND


# ---------------------------------------------------------------- select

GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "GIT_AUTHOR_DATE": "2024-01-01T00:00:00+0000",
           "GIT_COMMITTER_DATE": "2024-01-01T00:00:00+0000", "PATH": "/usr/bin:/bin",
           "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}


def make_task(root: Path, iid: str, repo: str, tier: Tier) -> Path:
    """A small task directory as generate writes one (enough for shards)."""
    d = root / iid
    ws = d / "workspace"
    (ws / "pkg").mkdir(parents=True)
    (ws / "pkg" / "m.py").write_text(f"def f():\n    return {iid!r}\n")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "task"]):
        subprocess.run(["git", "-c", "init.defaultBranch=main", *args], cwd=ws, env=GIT_ENV,
                       check=True)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ws, capture_output=True, text=True,
                          check=True).stdout.strip()
    (d / "hidden" / "tests").mkdir(parents=True)
    (d / "hidden" / "tests" / "test_m.py").write_text(f"def test_{iid}():\n    assert True\n")
    sym = RemovedSymbol(qualname="pkg.m.g", kind="function", path="pkg/m.py", start_line=1,
                        end_line=2, signature="def g():")
    rec = TaskRecord(instance_id=iid, repo=repo, base_commit=head, source_commit=head,
                     environment_setup_commit=head, created_at="2024-01-01T00:00:00+00:00",
                     patch="", test_patch="", problem_statement="Write g.",
                     FAIL_TO_PASS=[f"tests/test_m.py::test_{iid}"], PASS_TO_PASS=[],
                     image_name="img", feature=FeatureInfo(kind="function", name="pkg.m.g", symbols=[sym],
                                                           touched_files=["pkg/m.py"]),
                     hidden_test_files=["tests/test_m.py"], protected_files=["tests/test_m.py"],
                     test_command=["pytest"], sizes=TaskSizes(removed_lines=2, removed_symbols=1,
                                                              hidden_tests=1, remaining_tests=0,
                                                              workspace_files=1),
                     timings=TaskTimings(), taskforge_version="0", difficulty=Difficulty(tier=tier))
    (d / "task.json").write_text(rec.model_dump_json(indent=2) + "\n")
    return d


TIERS = {"t-easy": Tier.EASY, "t-easy2": Tier.EASY, "t-medium": Tier.MEDIUM, "t-hard": Tier.HARD}
REPOS = {"t-easy": "r/one", "t-easy2": "r/two", "t-medium": "r/one", "t-hard": "r/three"}


@pytest.fixture(scope="module")
def task_dirs(tmp_path_factory):
    """Four tasks (two easy, a medium, a hard) as task directories and as shards."""
    root = tmp_path_factory.mktemp("task_dirs")
    tasks = root / "tasks"
    for iid, tier in TIERS.items():
        make_task(tasks, iid, REPOS[iid], tier)
    shard_dir = root / "shards"
    shards.write_shards([tasks], shard_dir, fmt="jsonl", shard_size=2,
                        splits={"train": 0.5, "test": 0.5}, seed=3)
    return tasks, shard_dir


@pytest.fixture
def stats(tmp_path):
    """easy: solved 1 of 2; easy2: 2 of 2; medium: 0 of 3; hard: untried."""
    s = SolveStats(tmp_path / "s.jsonl")
    for iid, solved in [("t-easy", True), ("t-easy", False), ("t-easy2", True), ("t-easy2", True),
                        ("t-medium", False), ("t-medium", False), ("t-medium", False)]:
        s.record(iid, float(solved), solved, at=1.0)
    return s.path


def rows_of(d: Path) -> dict[str, bytes]:
    return {r.instance_id: r.model_dump_json().encode() for r in shards.read_rows([d])}


def test_select_by_band_keeps_the_tasks_within_it_and_counts_the_rest(task_dirs, stats, tmp_path):
    tasks, src = task_dirs
    out = tmp_path / "out"
    rep = curriculum.select([src], out, solve_rate="0.25:0.75", stats=stats, fmt="jsonl")
    assert rep.instance_ids == ["t-easy", "t-hard"] and (rep.read, rep.kept) == (4, 2)
    assert rep.by_band.model_dump() == {"below": 1, "in_band": 1, "above": 1, "untried": 1,
                                        "untried_kept": 1}
    assert {k: v.model_dump() for k, v in rep.by_tier.items()} == {
        "easy": {"read": 2, "kept": 1}, "medium": {"read": 1, "kept": 0}, "hard": {"read": 1, "kept": 1}}
    assert rep.solve_rate == (0.25, 0.75) and rep.tiers == [] and rep.stats == str(stats)
    assert (rep.min_attempts, rep.untried, rep.format, rep.out) == (1, "include", "jsonl", str(out))
    got = rows_of(out)
    whole = rows_of(src)
    assert got == {i: whole[i] for i in ("t-easy", "t-hard")}          # the same rows
    m = shards.read_manifest(out)
    assert (m.seed, m.splits) == (3, {"train": 0.5, "test": 0.5})      # inherited
    assert sum(rep.splits.values()) == 2 and rep.splits == m.split_rows
    assert rep.shards == len(m.shards) >= 1


def test_select_by_tier_from_task_directories_without_stats(task_dirs, tmp_path):
    tasks, _ = task_dirs
    logged: list[str] = []
    rep = curriculum.select([tasks], tmp_path / "o", tiers=["hard,medium"], fmt="jsonl",
                            shard_size=1, log=logged.append)
    assert rep.instance_ids == ["t-hard", "t-medium"] and rep.tiers == ["hard", "medium"]
    assert rep.stats is None and rep.solve_rate is None
    assert rep.by_band.model_dump() == {"below": 0, "in_band": 0, "above": 0, "untried": 2,
                                        "untried_kept": 2}
    assert rep.by_tier["easy"].model_dump() == {"read": 2, "kept": 0}
    assert rep.shards == 2 and len(logged) == 2                        # shard_size and log passed on
    m = shards.read_manifest(tmp_path / "o")
    assert (m.seed, m.splits) == (0, {"train": 1.0})                   # no manifest: all train
    assert rows_of(tmp_path / "o").keys() == {"t-hard", "t-medium"}
    rec = TaskRecord.model_validate_json((tasks / "t-hard" / "task.json").read_text())
    assert shards.row_to_record(shards.ShardIndex([tmp_path / "o"]).row("t-hard")) == \
        rec.model_copy(update={"family": "t-hard"})                  # a task alone is its family


def test_select_tier_and_band_with_min_attempts_and_untried_excluded(task_dirs, stats, tmp_path):
    _, src = task_dirs
    rep = curriculum.select([src / "data"], tmp_path / "o", tiers=["easy", "medium"],
                            solve_rate=(0.0, 0.5), stats=[stats], min_attempts=2,
                            untried="exclude", fmt="jsonl", splits={"train": 1.0}, seed=7)
    assert rep.instance_ids == ["t-easy", "t-medium"]
    assert rep.by_band.model_dump() == {"below": 0, "in_band": 2, "above": 1, "untried": 0,
                                        "untried_kept": 0}
    assert rep.by_tier["hard"].model_dump() == {"read": 1, "kept": 0}
    m = shards.read_manifest(tmp_path / "o")
    assert (m.seed, m.splits) == (7, {"train": 1.0})
    rep = curriculum.select([src], tmp_path / "o3", stats=stats, min_attempts=3, untried="exclude",
                            fmt="jsonl")
    assert rep.instance_ids == ["t-medium"] and rep.by_band.untried == 3


def test_select_from_a_data_directory_inherits_its_manifest(task_dirs, tmp_path):
    _, src = task_dirs
    rep = curriculum.select([src / "data"], tmp_path / "o", tiers=["medium"], fmt="jsonl")
    m = shards.read_manifest(tmp_path / "o")
    assert rep.instance_ids == ["t-medium"] and (m.seed, m.splits) == (3, {"train": 0.5, "test": 0.5})
    assert m.shard_size == 256                                          # shard's default


def test_a_task_directory_inside_a_shard_directory_is_read_as_a_task(task_dirs, tmp_path):
    import shutil

    tasks, src = task_dirs
    holder = tmp_path / "holder"
    shutil.copytree(src, holder)
    inner = make_task(holder, "t-inner", "r/five", Tier.HARD)           # named after "data"
    before = make_task(holder, "b-inner", "r/five", Tier.HARD)          # ... and before it
    rep = curriculum.select([inner, before], tmp_path / "o", fmt="jsonl")
    assert rep.instance_ids == ["b-inner", "t-inner"]
    assert shards.read_manifest(tmp_path / "o").seed == 0               # no manifest of its own


@pytest.mark.parametrize("folder", ["aa", "zz"])
def test_a_shard_file_outside_data_has_no_manifest_to_inherit(task_dirs, tmp_path, folder):
    """A shard file moved out of its shard directory's data/ stands alone, even
    when the folder it is in sits inside another shard directory."""
    import shutil

    _, src = task_dirs
    holder = tmp_path / "holder"
    shutil.copytree(src, holder)
    first = sorted((holder / "data").iterdir())[0]
    (holder / folder).mkdir()
    alone = holder / folder / first.name
    shutil.move(first, alone)
    rep = curriculum.select([alone], tmp_path / "o", fmt="jsonl")
    assert rep.read == rep.kept >= 1
    assert (shards.read_manifest(tmp_path / "o").seed, rep.splits) == (0, {"train": rep.read})


def test_select_from_shard_files_and_from_the_environment_stats(task_dirs, stats, tmp_path, monkeypatch):
    _, src = task_dirs
    monkeypatch.setenv(STATS_ENV, str(stats))
    files = sorted((src / "data").iterdir())
    rep = curriculum.select(files, tmp_path / "o", solve_rate="1:1", fmt="jsonl")
    assert rep.instance_ids == ["t-easy2", "t-hard"] and rep.stats == str(stats)
    assert shards.read_manifest(tmp_path / "o").seed == 3                 # a file's manifest too


def test_select_mixes_shards_and_task_directories_but_not_twice(task_dirs, tmp_path):
    tasks, src = task_dirs
    with pytest.raises(UserError, match="duplicate instance_id t-easy in the inputs"):
        curriculum.select([src, tasks / "t-easy"], tmp_path / "o", fmt="jsonl")
    extra = make_task(tmp_path / "more", "t-extra", "r/four", Tier.EASY)
    rep = curriculum.select([src, extra], tmp_path / "o", tiers=["easy"], fmt="jsonl",
                            splits={"train": 1.0})
    assert rep.instance_ids == ["t-easy", "t-easy2", "t-extra"]
    assert rows_of(tmp_path / "o")["t-extra"] == shards.task_to_row(extra).model_dump_json().encode()
    assert not (tmp_path / "o2").exists()


def test_select_writes_nothing_when_no_task_passes(task_dirs, stats, tmp_path):
    _, src = task_dirs
    with pytest.raises(UserError, match="no task of the 4 read passes the filters"):
        curriculum.select([src], tmp_path / "o", solve_rate="0.9:0.95", stats=stats, untried="exclude")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("kw,msg", [
    ({"paths": []}, "no input"),
    ({"untried": "maybe"}, "bad --untried 'maybe'"),
    ({"min_attempts": 0}, "--min-attempts must be at least 1"),
    ({"solve_rate": "0:1"}, "need --stats FILE"),
    ({"untried": "exclude"}, "need --stats FILE"),
    ({"untried": "".join(["ex", "clude"])}, "need --stats FILE"),     # as argv gives it: not interned
    ({"stats": "nope.jsonl"}, "no such stats file"),
    ({"tiers": ["x"]}, "bad --tier"),
    ({"solve_rate": "1:0", "stats": "nope.jsonl"}, "LO 1 is above HI 0"),
])
def test_select_refuses_bad_arguments(task_dirs, tmp_path, kw, msg, monkeypatch):
    _, src = task_dirs
    monkeypatch.chdir(tmp_path)
    args: dict = {"paths": [src], "out": tmp_path / "o", **kw}
    with pytest.raises(UserError, match=msg):
        curriculum.select(**args)
    assert not (tmp_path / "o").exists()


def test_select_refuses_to_write_over_an_input(task_dirs, tmp_path):
    _, src = task_dirs
    copy = tmp_path / "copy"
    import shutil

    shutil.copytree(src, copy)
    with pytest.raises(UserError, match="is one of the inputs"):
        curriculum.select([copy], copy, fmt="jsonl")
    with pytest.raises(UserError, match="is one of the inputs"):
        curriculum.select([tmp_path / "missing", copy], tmp_path / ".." / tmp_path.name / "copy")
    assert rows_of(copy) == rows_of(src)
    with pytest.raises(UserError, match="no such task directory"):       # neither exists: no clash
        curriculum.select([tmp_path / "missing"], tmp_path / "missing")
    for name in ("a-out", "z-out"):                                    # empty directories, not inputs
        (tmp_path / name).mkdir()
        assert curriculum.select([copy], tmp_path / name, fmt="jsonl").kept == 4


def test_select_refuses_a_shard_that_does_not_match_its_manifest(task_dirs, tmp_path):
    import shutil

    _, src = task_dirs
    copy = tmp_path / "copy"
    shutil.copytree(src, copy)
    victim = sorted((copy / "data").iterdir())[0]
    victim.write_bytes(victim.read_bytes() + b"\n")
    with pytest.raises(UserError, match="checksum mismatch"):
        curriculum.select([copy], tmp_path / "o", fmt="jsonl")
    assert not (tmp_path / "o").exists()


class M:
    def __init__(self, splits, seed):
        self.splits, self.seed = splits, seed


@pytest.mark.parametrize("manifests,splits,seed,want", [
    ([], None, None, ({"train": 1.0}, 0)),
    ([], {"a": 1.0}, None, ({"a": 1.0}, 0)),
    ([], None, 5, ({"train": 1.0}, 5)),
    ([M({"x": 0.5, "y": 0.5}, 4)], None, None, ({"x": 0.5, "y": 0.5}, 4)),
    ([M({"x": 0.5, "y": 0.5}, 4)], {"a": 1.0}, None, ({"a": 1.0}, 4)),     # each from where given
    ([M({"x": 0.5, "y": 0.5}, 4)], None, 9, ({"x": 0.5, "y": 0.5}, 9)),
    ([M({"x": 1.0}, 4)], {"a": 1.0}, 2, ({"a": 1.0}, 2)),
    ([M({"y": 0.5, "x": 0.5}, 4), M({"x": 0.5, "y": 0.5}, 4)], None, None, ({"x": 0.5, "y": 0.5}, 4)),
    ([M({"x": 1.0}, 1), M({"x": 1.0}, 2)], {"a": 1.0}, 3, ({"a": 1.0}, 3)),   # both given: no matter
])
def test_inherited_split(manifests, splits, seed, want):
    assert curriculum.inherited_split(manifests, splits, seed) == want


@pytest.mark.parametrize("manifests,splits,seed", [
    ([M({"x": 1.0}, 1), M({"x": 1.0}, 2)], None, None),
    ([M({"x": 1.0}, 1), M({"y": 1.0}, 1)], {"a": 1.0}, None),
    ([M({"x": 1.0}, 1), M({"x": 1.0}, 2)], None, 4),
])
def test_inherited_split_refuses_disagreeing_inputs(manifests, splits, seed):
    with pytest.raises(UserError, match="split differently"):
        curriculum.inherited_split(manifests, splits, seed)


def test_an_unknown_tier_is_counted_apart(task_dirs, tmp_path, monkeypatch):
    """A row whose tier is empty (an old shard) is read under 'unknown'."""
    tasks, _ = task_dirs
    rows = {"a": ("r", "", tasks / "t-easy"), "b": ("r", "hard", tasks / "t-hard")}
    kept, by_tier, counts = curriculum._filter(rows, None, set(), None, 1, "include")
    assert kept == {"a": "r", "b": "r"}
    assert {k: (v.read, v.kept) for k, v in by_tier.items()} == {
        "easy": (0, 0), "medium": (0, 0), "hard": (1, 1), "unknown": (1, 1)}
    assert (counts.untried, counts.untried_kept) == (2, 2)
