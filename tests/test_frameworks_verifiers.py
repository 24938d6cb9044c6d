"""verifiers 0.4 (its own loader, discovery of the top-level `taskforge_verifiers`,
and its rollout code: Env.serving + run_slot, the `null` chat harness in the
`subprocess` runtime) against a scripted chat-completions server on 127.0.0.1.
Single-turn: the gold diff as the answer earns 1, an answer with no diff 0.
Agent: tool calls that write the fix then submit earn 1, looking around and
submitting 0. Real engine, real task."""
from __future__ import annotations

import asyncio
import json

import pytest

pytestmark = pytest.mark.frameworks


def test_discovery_loads_the_top_level_module():
    from verifiers.v1.utils.loaders import environment_class, taskset_class

    import taskforge_verifiers
    from taskforge.integrations.verifiers import load_environment
    from taskforge.training.integrations import verifiers as ours

    assert taskset_class("taskforge_verifiers") is ours.TaskforgeTaskset
    assert environment_class("taskforge_verifiers") is ours.TaskforgeEnv
    with pytest.raises(ModuleNotFoundError):          # why the module is a top-level one
        taskset_class("taskforge.training.integrations.verifiers")
    assert taskforge_verifiers.load_environment is load_environment is ours.load_environment


def test_a_taskset_without_tasks_is_refused(tmp_path):
    from taskforge.errors import UserError
    from taskforge.training.integrations.verifiers import load_environment

    env = load_environment(tmp_path, "agent")
    assert list(env.taskset) == []
    with pytest.raises(UserError, match="needs tasks"):
        list(load_environment("", "agent").taskset)


def call(name: str, **arguments) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


def rollout(env, chat, script: list[str]):
    """One episode of the env's one task, through verifiers' own rollout code."""
    import verifiers.v1 as vf

    chat.script = script
    (task,) = list(env.taskset)
    ctx = vf.ModelContext(model="fake", client=vf.EvalClientConfig(base_url=chat.base_url,
                                                                  api_key_var="TF_FAKE_KEY"))

    async def run():
        async with env.serving():
            return await env.run_slot(env.slots(task)[0], ctx)

    episode = asyncio.run(run())
    assert episode.ok, episode.errors
    (trace,) = episode.traces
    return trace


@pytest.fixture(scope="module")
def chat(tasks):
    from tests.fake_chat import FakeChat

    with FakeChat() as server:
        yield server


@pytest.mark.parametrize("mode", ["single_turn", "agent"])
def test_verifiers_rollouts_score_the_fix_1_and_idling_0(mode, tasks, chat, tmp_path, monkeypatch):
    from taskforge.training.integrations.verifiers import load_environment
    from tests.test_episodes import solved_files

    monkeypatch.setenv("TF_FAKE_KEY", "not-a-secret")
    out, ids = tasks
    task = out / ids[0]
    env = load_environment(out, mode, instance_ids=[ids[0]], max_turns=8)
    if mode == "single_turn":
        fix = [f"Here is the change.\n```diff\n{(task / 'gold.patch').read_text()}```"]
        idle = ["I looked at the code; it seems fine as it is."]
    else:
        fix = [call("bash", command="ls -a"),
               "\n".join(call("str_replace_editor", command="create", path=rel, file_text=data.decode())
                         for rel, data in solved_files(task, tmp_path).items()),
               call("submit")]
        idle = [call("str_replace_editor", command="view", path="."), "Looks fine.", call("submit")]
    rewards = []
    for script in (fix, idle):
        before = len(chat.requests)
        trace = rollout(env, chat, script)
        rewards.append(trace.rewards["solved"].score)
        assert len(chat.requests) - before == len(script)        # the model was asked each turn
    assert rewards == [1.0, 0.0]
    if mode == "agent":
        last = chat.requests[-1]["messages"]
        assert "Submitted" not in json.dumps(last) and "<tool_response>" in json.dumps(last)
