"""SkyRL-Gym: taskforge's environment through skyrl_gym.make, as skyrl-train builds it,
driven by a scripted policy that looks around and submits (reward 0).

    pip install 'taskforge[skyrl]'
    python examples/skyrl_env.py TASKS_DIR [INSTANCE_ID]
"""
from __future__ import annotations

import json
import sys

import skyrl_gym

import taskforge.integrations.skyrl  # noqa: F401 - registers "taskforge"
from taskforge.training.rewards import TaskSource


def call(name: str, **arguments) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


def main() -> int:
    tasks = sys.argv[1]
    iid = sys.argv[2] if len(sys.argv) > 2 else TaskSource(tasks).ids()[0]
    env = skyrl_gym.make("taskforge", env_config={"tasks": tasks, "max_turns": 10},
                         extras={"reward_spec": {"method": "rule", "ground_truth": iid}})
    try:
        prompt, meta = env.init([])
        print(f"{iid}: {len(meta['tools'])} tools; statement of {len(prompt[-1]['content'])} chars")
        for action in (call("bash", command="ls -a"),
                       call("str_replace_editor", command="view", path="."), call("submit")):
            out = env.step(action)
            print("done" if out["done"] else out["observations"][0]["content"][:200])
        print("reward", out["reward"], out["metadata"].get("reason"))
        return 0 if out["done"] and out["reward"] == 0.0 else 1
    finally:
        env.close()


if __name__ == "__main__":
    sys.exit(main())
