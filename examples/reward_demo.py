"""Shard tasks, load the shards with `datasets`, and score answers through the
reward functions a trainer calls: verl's signature and TRL's.

    python examples/reward_demo.py TASKS_DIR [--workdir DIR]

TASKS_DIR is what `taskforge generate` wrote. Exits 0 when the gold patch
scores 1 and a non-answer scores 0 both ways.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from datasets import load_dataset

import taskforge
from taskforge.training.rewards import trl_reward_func
from taskforge.training.shards import write_shards


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("tasks", help="a directory of task directories")
    ap.add_argument("--workdir", help="where shards go (default: a temporary directory)")
    args = ap.parse_args()
    work = Path(args.workdir or tempfile.mkdtemp(prefix="tf-demo-"))

    # 1. Shards: Parquet files plus manifest.json, split by repository.
    shard_dir = work / "shards"
    manifest = write_shards([args.tasks], shard_dir)
    print(f"{manifest.total_rows} task(s) -> {shard_dir}", file=sys.stderr)

    # 2. Load them as a trainer would.
    ds = load_dataset("parquet", data_dir=str(shard_dir), split="train",
                      cache_dir=str(work / "hf-cache"))
    row = ds[0]
    iid = row["instance_id"]

    # 3. verl: compute_score(data_source, solution_str, ground_truth, extra_info).
    #    ground_truth is the instance id; the tasks are found through extra_info
    #    (or $TASKFORGE_TASKS). A shard directory is enough: the task directory is
    #    rebuilt on demand into a content-addressed cache.
    answer = f"The function was missing; this restores it.\n\n```diff\n{row['patch']}```\n"
    extra = {"tasks": str(shard_dir)}
    gold = taskforge.reward("taskforge", answer, iid, extra)
    empty = taskforge.reward("taskforge", "I could not solve it.", iid, extra)

    # 4. TRL: GRPOTrainer(reward_funcs=[trl_reward_func(...)]) calls it like this,
    #    with the dataset's instance_id column as a keyword argument.
    trl = trl_reward_func(tasks=shard_dir, workers=2)
    trl_scores = trl(prompts=["..."] * 2,
                     completions=[[{"role": "assistant", "content": answer}],
                                  [{"role": "assistant", "content": ""}]],
                     instance_id=[iid, iid])

    print(json.dumps({"instance_id": iid, "verl_gold": gold, "verl_empty": empty,
                      "trl": trl_scores}, indent=2))
    ok = gold["score"] == 1.0 and empty["score"] == 0.0 and trl_scores == [1.0, 0.0]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
