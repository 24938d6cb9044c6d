"""SkyRL-Gym (skyrl-gym's own registry and `make`, as skyrl-train calls it) on a
taskforge episode: a scripted trajectory that fixes the task earns 1, one that
looks around and submits earns 0. Real engine, real task."""
from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.frameworks


def call(name: str, **arguments) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


@pytest.mark.parametrize("text, expected", [
    ("thinking... " + call("bash", command="ls"), [("bash", {"command": "ls"})]),
    (call("bash", command="a") + "\n" + call("submit"), [("bash", {"command": "a"}), ("submit", {})]),
    ('<tool_call>{"name": "bash", "parameters": {"command": "x"}}</tool_call>', [("bash", {"command": "x"})]),
    ("<tool_call>not json</tool_call>", [("", "not json")]),
    ('<tool_call>["bash"]</tool_call>', [("", '["bash"]')]),
    ("no call at all", []),
])
def test_parse_tool_calls(text, expected):
    from taskforge.training.integrations.skyrl import parse_tool_calls

    assert parse_tool_calls(text) == expected


def test_registered_by_name_and_documented_alias():
    import skyrl_gym

    import taskforge.integrations.skyrl as alias
    from taskforge.training.integrations import skyrl

    assert alias.TaskforgeTextEnv is skyrl.TaskforgeTextEnv
    assert skyrl_gym.spec("taskforge").entry_point == skyrl.ENTRY_POINT


def test_a_row_without_a_task_is_refused():
    import skyrl_gym

    import taskforge.integrations.skyrl  # noqa: F401 - registers
    from taskforge.errors import UserError

    with pytest.raises(UserError, match="ground_truth"):
        skyrl_gym.make("taskforge", env_config={}, extras={"reward_spec": {"method": "rule"}})


def run_trajectory(env, actions: list[str]) -> tuple[float | None, list[dict]]:
    prompt, meta = env.init([])
    assert prompt[-1]["role"] == "user" and meta["tools"][0]["function"]["name"] == "bash"
    outs = []
    for action in actions:
        out = env.step(action)
        outs.append(out)
        if out["done"]:
            return out["reward"], outs
    raise AssertionError("the trajectory did not end")


def test_skyrl_gym_make_scripted_trajectories(tasks, tmp_path):
    import skyrl_gym

    import taskforge.integrations.skyrl  # noqa: F401 - registers "taskforge"
    from tests.test_episodes import solved_files

    out, ids = tasks
    task = out / ids[0]
    fix = [call("bash", command="ls -a"),
           *[call("str_replace_editor", command="create", path=rel, file_text=data.decode())
             for rel, data in solved_files(task, tmp_path).items()],
           call("bash", command="python3 -m pytest -q 2>&1 | tail -1"),
           call("submit")]
    idle = [call("bash", command="ls"), call("str_replace_editor", command="view", path="."),
            "I am done.", call("submit")]
    rewards = []
    for script in (fix, idle):
        # The row as taskforge's shards give it to skyrl-train: the id in reward_spec.
        env = skyrl_gym.make("taskforge", env_config={"tasks": str(out), "max_turns": 10},
                             extras={"reward_spec": {"method": "rule", "ground_truth": ids[0]}})
        try:
            reward, outs = run_trajectory(env, script)
            assert all(o["reward"] == 0.0 for o in outs[:-1])      # only the submit step pays
            assert outs[-1]["metadata"]["instance_id"] == ids[0]
            rewards.append(reward)
        finally:
            env.close()
        assert env.episode is not None and env.episode.closed
    assert rewards == [1.0, 0.0]
    assert "No tool call found" in outs[2]["observations"][0]["content"]


def test_out_of_turns_grades_the_tree(tasks):
    """At max_turns the episode ends and the tree as it stands is graded (here: 0)."""
    import skyrl_gym

    import taskforge.integrations.skyrl  # noqa: F401 - registers "taskforge"

    out, ids = tasks
    env = skyrl_gym.make("taskforge", env_config={"tasks": str(out), "max_turns": 2},
                         extras={"reward_spec": {"ground_truth": ids[0]}})
    try:
        env.init([])
        assert not env.step(call("bash", command="ls"))["done"]
        last = env.step(call("bash", command="ls"))
        assert last["done"] and last["reward"] == 0.0 and last["metadata"]["reason"]
    finally:
        env.close()
