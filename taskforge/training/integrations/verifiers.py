"""verifiers 0.4 (`import verifiers.v1 as vf`): taskforge tasks as a Taskset and an Env.

    vf-eval taskforge_verifiers --env.taskset.tasks tasks/ --env.taskset.mode agent \\
        --env.agent.harness.id null --env.agent.runtime.type subprocess ...

    from taskforge.training.integrations.verifiers import load_environment
    env = load_environment(tasks="tasks/", mode="agent")      # a vf.Env

Discovery imports the top-level module `taskforge_verifiers` (shipped with the
`verifiers` extra), which exports the one Taskset subclass and the Env.

Two modes (`Mode`):
- single_turn: the prompt is the task statement; the model's one reply is an
  answer, its diff (a ```diff block, or the text from the first diff header) is
  graded by verify in a fresh sandbox: the `solved` reward.
- agent: the Env plays the user, as verifiers' OpenEnv taskset does: it opens a
  taskforge episode (the task's sandbox), sends the statement and taskforge's
  tools (taskforge.training.tools, called as <tool_call> blocks in the reply),
  answers each turn with the tools' output, and ends on `submit` (or at
  max_turns, grading the tree as it stands): the `solved` reward.
A grading infrastructure failure raises, so verifiers marks the episode failed
(retried or masked) instead of recording a 0.
"""
from __future__ import annotations

import asyncio
from enum import StrEnum
from typing import Any

import verifiers.v1 as vf

from taskforge.errors import InfraError
from taskforge.grade.answer import RewardResult

__all__ = ["Mode", "TaskforgeData", "TaskforgeEnv", "TaskforgeEnvConfig", "TaskforgeTask",
           "TaskforgeTaskset", "TaskforgeTasksetConfig", "load_environment"]

ANSWER_FORMAT = ("\n\nAnswer with the complete change as a unified diff against the repository "
                 "(paths a/... and b/...), in one ```diff block.")


class Mode(StrEnum):
    SINGLE_TURN = "single_turn"
    AGENT = "agent"


class TaskforgeTasksetConfig(vf.TasksetConfig):
    tasks: str = ""
    """A directory of task directories, or a shard directory."""
    mode: Mode = Mode.SINGLE_TURN
    instance_ids: list[str] = []
    """Only these tasks (default: all)."""
    max_turns: int = 30
    """Agent mode: the turns before the tree is graded as it stands."""
    sandbox: str = "docker"
    """The sandbox backend for agent episodes and grading."""
    timeout: float | None = None
    """Seconds for one grading (default: the task's own limit)."""


class TaskforgeData(vf.TaskData):
    instance_id: str
    task_dir: str
    mode: Mode
    max_turns: int = 30
    sandbox: str = "docker"
    grade_timeout: float | None = None


def _score(res: RewardResult) -> float:
    if res.reward is None:
        raise InfraError(f"{res.instance_id} could not be graded: {res.infra_error}")
    return float(res.reward)


class TaskforgeTask(vf.Task[TaskforgeData]):
    @vf.reward
    async def solved(self, task: TaskforgeData, trace: vf.Trace) -> Any:
        """single_turn: the reply's diff graded by verify. agent: recorded by the Env
        when the episode ends (an empty mapping here records nothing)."""
        if task.mode is Mode.AGENT:
            return {}
        from taskforge.grade.answer import grade_task

        res = await asyncio.to_thread(grade_task, task.task_dir, trace.last_reply, task.grade_timeout,
                                      None, None, task.sandbox)
        return _score(res)


class TaskforgeTaskset(vf.Taskset[TaskforgeTask, TaskforgeTasksetConfig]):
    def load(self):
        from taskforge.errors import UserError
        from taskforge.package.store import load_task
        from taskforge.training.rewards import TaskSource

        cfg = self.config
        if not cfg.tasks:
            raise UserError("the taskforge taskset needs tasks (--env.taskset.tasks DIR)")
        source = TaskSource(cfg.tasks)
        for iid in cfg.instance_ids or source.ids():
            task_dir = source.get(iid)
            rec = load_task(task_dir).record
            agent = cfg.mode is Mode.AGENT
            yield TaskforgeTask(TaskforgeData(
                id=iid, name=iid, instance_id=iid, task_dir=str(task_dir), mode=cfg.mode,
                max_turns=cfg.max_turns, sandbox=cfg.sandbox, grade_timeout=cfg.timeout,
                # agent mode: the Env opens the exchange (statement and tools)
                prompt=None if agent else rec.problem_statement + ANSWER_FORMAT), cfg.task)


class TaskforgeEnvConfig(vf.SingleAgentEnvConfig):
    pass


class TaskforgeEnv(vf.Env[TaskforgeEnvConfig]):
    """single_turn: the plain single-agent run. agent: the episode loop."""

    async def run(self, task, agents) -> None:
        data: TaskforgeData = task.data
        if data.mode is Mode.SINGLE_TURN:
            await agents.agent.run(task)
            return
        from taskforge.training.episodes import Episode, EpisodeLimits

        ep = await asyncio.to_thread(Episode, data.task_dir, EpisodeLimits(), data.sandbox)
        try:
            async with agents.agent.interaction(task) as interaction:
                res = await self._episode(ep, data, interaction)
            interaction.trace.record_reward("solved", _score(res))
        finally:
            await asyncio.to_thread(ep.close)

    async def _episode(self, ep, data: TaskforgeData, interaction) -> RewardResult:
        from taskforge.training.tools import call_tool, grade_episode, parse_tool_calls, tools_prompt

        message = tools_prompt() + "\n\nThe task:\n" + ep.task.record.problem_statement
        for _ in range(data.max_turns):
            segment = await interaction.turn(message)
            if segment.terminated:
                break
            calls = parse_tool_calls(segment.last_reply)
            outputs = []
            for name, args in calls:
                out = await asyncio.to_thread(call_tool, ep, name, args)
                if out.done and out.result is not None:
                    return out.result
                outputs.append(f"<tool_response>\n{out.output}\n</tool_response>")
            message = "\n".join(outputs) or ("No tool call found. " + "Call a tool with "
                                             "<tool_call>{\"name\": ..., \"arguments\": {...}}"
                                             "</tool_call>; call submit when done.")
        return await asyncio.to_thread(grade_episode, ep)     # out of turns: the tree as it is


def load_environment(tasks: str, mode: Mode | str = Mode.SINGLE_TURN, *,
                     instance_ids: list[str] | None = None, max_turns: int = 30,
                     sandbox: str = "docker", harness: str = "null", runtime: str = "subprocess",
                     **agent: Any) -> vf.Env:
    """The verifiers Env over taskforge's tasks, through verifiers' own loader
    (`vf.load_environment` on the `taskforge_verifiers` taskset). The default
    harness is verifiers' `null` chat loop in the `subprocess` runtime: the
    model's sandbox is taskforge's, not the harness's."""
    config = TaskforgeEnvConfig.model_validate({
        "taskset": {"id": "taskforge_verifiers", "tasks": str(tasks), "mode": Mode(mode),
                    "instance_ids": list(instance_ids or []), "max_turns": max_turns,
                    "sandbox": sandbox},
        "agent": {"harness": {"id": harness}, "runtime": {"type": runtime}, **agent}})
    return vf.load_environment(config)
