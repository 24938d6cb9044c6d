"""The reward API against real tasks and the real engine: verl's signature (from
a task root and from a bare shard row), TRL's and OpenRLHF's adapters, batch
concurrency, answers wrapped in prose, hostile diffs, and infrastructure
failures that come back flagged instead of as 0."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import taskforge
from taskforge.errors import InfraError, UserError
from taskforge.training import rewards
from tests.conftest import CLI, ROOT

NEW_FILE = ("diff --git a/NOTES.md b/NOTES.md\nnew file mode 100644\n--- /dev/null\n"
            "+++ b/NOTES.md\n@@ -0,0 +1 @@\n+notes\n")


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("TASKFORGE_CACHE", str(tmp_path / "cache"))
    for var in ("TASKFORGE_TASKS", "TASKFORGE_REWARD_URL", "TASKFORGE_INFRA_SCORE"):
        monkeypatch.delenv(var, raising=False)


def gold_answer(task: Path) -> str:
    return ("I restored the function.\n\n```diff\n" + (task / "gold.patch").read_text()
            + "```\nThat should do it.")


def test_extract_diff():
    d = "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n"
    assert rewards.extract_diff(f"prose\n```diff\n{d}```\nmore") == d
    assert rewards.extract_diff(f"```patch\n{d}```\n```diff\n{d}```") == d + d
    assert rewards.extract_diff(f"Here:\n{d}```\n") == d
    assert rewards.extract_diff(d) == d
    assert rewards.extract_diff("no diff at all") == "no diff at all"
    assert rewards.extract_diff("") == ""


def test_a_new_file_with_a_name_git_quotes_keeps_the_golds_one(tasks, tmp_path):
    """`git diff` quotes a name with bytes past ASCII (core.quotepath): an honest
    `docs/café notes.md` beside the gold scored 0 as "quoted or escaped" (red
    team of 2026-12-05, 9)."""
    out, ids = tasks
    note = ('diff --git "a/docs/caf\\303\\251 notes.md" "b/docs/caf\\303\\251 notes.md"\n'
            'new file mode 100644\n--- /dev/null\n+++ "b/docs/caf\\303\\251 notes.md"\n@@ -0,0 +1 @@\n+notes\n')
    r = rewards.score((out / ids[0] / "gold.patch").read_text() + note, ids[0], tasks=out)
    assert r.reward == 1.0, r


def test_a_file_that_is_not_utf8_reaches_the_tree_byte_for_byte(tasks, tmp_path):
    """Red team 12: an honest latin-1 module (its coding line, a non-ASCII name)
    in a patch file scored 0: the patch was decoded with errors="replace", so git
    apply wrote U+FFFD for its bytes and the module no longer parsed."""
    out, ids = tasks
    task = out / ids[0]
    ws = tmp_path / "ws"
    shutil.copytree(task / "workspace", ws)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "init", "-q"], cwd=ws, check=True)
    subprocess.run([*git, "add", "-A"], cwd=ws, check=True)
    subprocess.run([*git, "commit", "-qm", "base", "--allow-empty"], cwd=ws, check=True)
    subprocess.run([*git, "apply", str(task / "gold.patch")], cwd=ws, check=True)
    (ws / "textkit" / "_latin.py").write_bytes(b"# -*- coding: latin-1 -*-\nn\xfameros = (1, 2, 3)\n")
    init = ws / "textkit" / "__init__.py"
    init.write_text(init.read_text() + "\nfrom textkit._latin import n\u00fameros as _numbers  # noqa: E402\n")
    subprocess.run([*git, "add", "-A"], cwd=ws, check=True)
    patch = subprocess.run([*git, "diff", "--cached"], cwd=ws, check=True, capture_output=True).stdout
    assert b"n\xfameros" in patch
    (tmp_path / "latin.patch").write_bytes(patch)
    res = subprocess.run([*CLI, "verify", str(task), "--patch", str(tmp_path / "latin.patch"), "--json"],
                         capture_output=True, text=True)
    assert json.loads(res.stdout)["reward"] == 1.0, res.stdout[-3000:]


def test_unsafe_diffs_score_zero_and_touch_nothing(tasks, tmp_path):
    out, ids = tasks
    marker = Path("/tmp") / f"tf-escape-{os.getpid()}"
    evil = {
        "parent": f"--- a/../../../..{marker}\n+++ b/../../../..{marker}\n@@ -0,0 +1 @@\n+x\n",
        "quoted": 'diff --git "a/\\056\\056/x" "b/\\056\\056/x"\nnew file mode 100644\n'
                  '--- /dev/null\n+++ "b/\\056\\056/x"\n@@ -0,0 +1 @@\n+x\n',
        "symlink": "diff --git a/link b/link\nnew file mode 120000\n--- /dev/null\n+++ b/link\n"
                   "@@ -0,0 +1 @@\n+/etc\n\\ No newline at end of file\n",
    }
    for name, diff in evil.items():
        r = rewards.score(diff, ids[0], tasks=out)
        assert r.reward == 0.0 and r.infra_error is None, (name, r)
        assert r.reason.startswith("patch-rejected:"), (name, r.reason)
    assert not marker.exists()


def test_verl_signature_from_a_task_root(tasks, monkeypatch):
    out, ids = tasks
    monkeypatch.setenv("TASKFORGE_TASKS", str(out))
    got = taskforge.reward("taskforge", gold_answer(out / ids[0]), ids[0], {"split": "train"})
    assert got == {"score": 1.0, "resolved": 1.0, "infra_error": 0.0, "f2p_frac": 1.0}
    r = rewards.score("", json.dumps({"instance_id": ids[0]}))
    assert r.reward == 0.0 and r.reason.startswith("empty solution") and r.seconds < 1
    with pytest.raises(UserError, match="no task"):
        rewards.score("x", "textkit__no-such-task")
    with pytest.raises(UserError, match="no task"):
        rewards.score("x", "../" + ids[0])


def test_verl_signature_from_a_bare_shard_row(tasks, shard_dir, tmp_path, monkeypatch):
    """A Ray worker with only the data: the row in extra_info is rebuilt once into
    a content-addressed cache and graded."""
    import datasets

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out, ids = tasks
    ds = datasets.load_dataset("parquet", data_dir=str(shard_dir), split="train",
                               cache_dir=str(tmp_path / "hf"))
    row = next(r for r in ds if r["instance_id"] == ids[1])
    gold = rewards.reward("taskforge", f"```diff\n{row['patch']}```", row["instance_id"], row)
    empty = rewards.reward("taskforge", "", row["instance_id"], row)
    assert gold["score"] == 1.0 and empty["score"] == 0.0
    cached = list((tmp_path / "cache" / "tasks").iterdir())
    assert [p.name for p in cached] == [f"{row['instance_id']}-{row['row_sha256'][:16]}"]
    stamp = (cached[0] / "task.json").stat().st_mtime_ns
    assert rewards.materialize(row) == cached[0]
    assert (cached[0] / "task.json").stat().st_mtime_ns == stamp


def test_batch_trl_and_openrlhf(tasks, shard_dir):
    out, ids = tasks
    a, b = out / ids[0], out / ids[1]
    import numpy as np

    # As verl's batch reward manager passes them: numpy object arrays.
    got = rewards.compute_score_batch(
        np.array(["taskforge"] * 5, dtype=object),
        [gold_answer(a), gold_answer(b), NEW_FILE, "```diff\n--- a/x\n+++ b/x\n@@ junk\n```", ""],
        [ids[0], ids[1], ids[0], ids[1], ids[0]],
        np.array([{"index": i} for i in range(5)], dtype=object), tasks=str(shard_dir), workers=3)
    assert [g["score"] for g in got] == [1.0, 1.0, 0.0, 0.0, 0.0]
    assert [g["infra_error"] for g in got] == [0.0] * 5

    trl = rewards.trl_reward_func(tasks=out, workers=2)
    assert trl.__name__ == "taskforge_reward"
    scores = trl(prompts=["p", "p"], completions=[[{"role": "assistant", "content": gold_answer(a)}],
                                                  [{"role": "assistant", "content": "no idea"}]],
                 instance_id=[ids[0], ids[0]], trainer_state=None)
    assert scores == [1.0, 0.0]
    import asyncio
    import inspect

    trl_async = rewards.trl_reward_func(tasks=out, workers=2, asynchronous=True)
    assert inspect.iscoroutinefunction(trl_async) and trl_async.__name__ == "taskforge_reward"
    assert asyncio.run(trl_async(prompts=["p"], completions=[gold_answer(a)],
                                 instance_id=[ids[0]])) == [1.0]

    # TRL's metric hooks: resolved, F2P fraction and infrastructure errors as
    # zero-weight reward functions, reading the reward's gradings (one per answer).
    calls = []
    real = rewards.score_many

    def counting(items, *args, **kwargs):
        calls.append(len(items))
        return real(items, *args, **kwargs)

    funcs = rewards.trl_reward_funcs(tasks=out, workers=2)
    batch = {"prompts": ["p", "p"], "completions": [gold_answer(a), "no idea"],
             "instance_id": [ids[0], ids[0]]}
    import unittest.mock

    with unittest.mock.patch.object(rewards, "score_many", counting):
        got = [f(**batch) for f in funcs]
    assert got == [[1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [0.0, 0.0]]
    assert [f.__name__ for f in funcs] == ["taskforge_reward", "taskforge_resolved",
                                           "taskforge_f2p_frac", "taskforge_infra_error"]
    assert calls == [2]                       # graded once for all four

    prompt = "<|user|>fix it<|assistant|>"
    res = rewards.openrlhf_rewards({"query": [prompt + gold_answer(b), prompt + "nothing"],
                                    "prompts": [prompt, prompt], "labels": [ids[1], ids[1]]},
                                   tasks=out, workers=2)
    assert res["rewards"] == [1.0, 0.0] and res["extra_logs"]["infra_error"] == [0.0, 0.0]


def test_infrastructure_failures_are_flagged_never_zero(tasks, tmp_path):
    """A task whose environment image is gone: the engine cannot grade it."""
    out, ids = tasks
    root = tmp_path / "tasks"
    broken = root / ids[0]
    shutil.copytree(out / ids[0], broken, symlinks=True)
    rec = json.loads((broken / "task.json").read_text())
    rec["image_name"] = "taskforge/env-gone:missing"
    (broken / "task.json").write_text(json.dumps(rec, indent=2))
    answer = gold_answer(broken)

    r = rewards.score(answer, ids[0], tasks=root)
    assert r.reward is None and "not found" in r.infra_error and not r.resolved
    with pytest.raises(InfraError, match="infra_score"):
        rewards.reward("taskforge", answer, ids[0], {"task_dir": str(broken)})
    flagged = rewards.reward("taskforge", answer, ids[0], {"task_dir": str(broken)}, infra_score=0.0)
    assert flagged["infra_error"] == 1.0 and flagged["score"] == 0.0
    assert rewards.trl_reward_func(tasks=root)(completions=[answer], instance_id=[ids[0]]) == [None]
    payload = {"query": [answer], "prompts": [""], "labels": [ids[0]]}
    with pytest.raises(InfraError):
        rewards.openrlhf_rewards(payload, tasks=root)
    assert rewards.openrlhf_rewards(payload, tasks=root, infra_score=-1.0)["extra_logs"] == {
        "resolved": [0.0], "infra_error": [1.0]}


def test_reward_demo_example_runs(tasks, tmp_path):
    out, ids = tasks
    src = tmp_path / "src"
    src.mkdir()
    for i in ids[:2]:
        shutil.copytree(out / i, src / i, symlinks=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    res = subprocess.run([sys.executable, "examples/reward_demo.py", str(src), "--workdir",
                          str(tmp_path / "work")], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    shown = json.loads(res.stdout)
    assert shown["verl_gold"]["score"] == 1.0 and shown["trl"] == [1.0, 0.0]


EXPORT_COLUMNS = {"verl": ["data_source", "prompt", "ability", "reward_model", "extra_info",
                            "instance_id"],
                   "trl": ["prompt", "instance_id"], "openrlhf": ["prompt", "instance_id"]}


@pytest.mark.parametrize("trainer", sorted(EXPORT_COLUMNS))
def test_export_gives_each_trainer_its_shape_and_keeps_the_answer_out(tasks, shard_dir, tmp_path,
                                                                     trainer):
    """A chat `prompt`, a top-level `instance_id`, nothing that grades (TRL hands
    every column to the reward and prints rows in its warnings); prompt lengths
    against the trainer's limit; a dataset card; files a trainer's user can read."""
    import pandas as pd

    out, ids = tasks
    dest = tmp_path / trainer
    res = subprocess.run([*CLI, "export", str(shard_dir), "--to", trainer, "--out", str(dest),
                          "--max-prompt-length", "600", "--json"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    assert report["columns"] == EXPORT_COLUMNS[trainer]
    split = report["splits"][0]
    assert split["prompt_tokens"]["limit"] == 600 and split["prompt_tokens"]["max"] > 0
    over = split["prompt_tokens"]["over_limit"]
    assert (over > 0) == ("exceed the prompt limit" in report["note"])
    df = pd.read_parquet(dest / split["path"])
    assert list(df.columns) == EXPORT_COLUMNS[trainer] and len(df) == split["rows"]
    assert "instance_id" in (dest / "README.md").read_text()
    for p in [dest, *dest.iterdir()]:
        assert p.stat().st_mode & 0o044 == 0o044, p          # group/other can read
    for _, rec in df.iterrows():
        iid = rec["instance_id"]
        assert rec["prompt"][0]["role"] == "user"
        prompt = rec["prompt"][0]["content"]
        hunks, cur = [], []
        for ln in (out / iid / "gold.patch").read_text().splitlines() + ["@@"]:
            if ln.startswith("+") and not ln.startswith("+++"):
                cur.append(ln[1:])
            elif cur:
                hunks.append("\n".join(cur))
                cur = []
        body = max(hunks, key=len)                  # the removed definition itself
        assert body.count("\n") >= 2 and body not in prompt, iid
        assert "Answer with a unified diff" in prompt
        if trainer == "verl":
            assert rec["reward_model"]["ground_truth"] == iid == rec["extra_info"]["instance_id"]
    again = subprocess.run([*CLI, "export", str(shard_dir), "--to", trainer, "--out",
                            str(dest)], capture_output=True, text=True, timeout=120)
    assert again.returncode == 2 and "not empty" in again.stderr


def test_the_model_reads_no_hidden_input_and_no_text_its_solution_chose():
    """A copy's finding names the hidden input it changed, a monitor finding
    echoes a path the solution opened, a grader's finding what the run left
    (held-out rounds 21 and 22 spelled the hidden inputs they read into such
    details): the reason a model reads gives their kind only; the patch
    guard's own words stay."""
    from taskforge.grade.answer import public_reason
    from taskforge.grade.findings import FindingKind as K
    from taskforge.grade.findings import Policy, Source, finding

    copy = finding(K.COPY_PASSED, Source.GRADER, "a must-fail copy of test_r passed (input 'VX' twinned as 'IX')",
                   policy=Policy.SCORE)
    probe = finding(K.PROC_ACCESS, Source.MONITOR, "opens /proc/self/X'--5'|B62", policy=Policy.SCORE)
    left = finding(K.OVER_LIMIT, Source.GRADER, "the run left n='VX'|'IIII'/d/d/d", policy=Policy.SCORE)
    patch = finding(K.PATCH_REJECTED, Source.GRADER, "a path outside the workspace", policy=Policy.SCORE)
    assert "VX" in copy.text() and "--5" in probe.text() and "IIII" in left.text()
    assert [public_reason(f) for f in (copy, probe, left)] == [f.kind.value for f in (copy, probe, left)]
    assert public_reason(patch) == patch.text()
