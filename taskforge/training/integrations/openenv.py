"""An OpenEnv server for taskforge episodes (openenv-core's `create_app`).

    taskforge serve --tasks tasks/ --openenv          # mounted at /openenv
    # or alone:  uvicorn.run(create_openenv_app("tasks/"), port=8001)

    from openenv.core import GenericEnvClient
    with GenericEnvClient(base_url="http://127.0.0.1:8000/openenv").sync() as env:
        env.reset(instance_id="lib__feature-1a2b3c4d")        # opens an episode
        env.step({"type": "list_tools"})                      # taskforge's tool set
        env.step({"type": "call_tool", "tool_name": "bash", "arguments": {"command": "ls"}})
        r = env.step({"type": "call_tool", "tool_name": "submit", "arguments": {}})
        r.reward, r.done                                      # verify on the diff; True

Each WebSocket session is one environment: `reset` opens an episode of the
named task (closing the session's previous one), `step` takes OpenEnv's
standard MCP actions (`list_tools`, `call_tool`) over taskforge's tools
(taskforge.training.tools), and a `submit` call ends the episode with its
reward (None, with `result.infra_error`, when grading itself failed). The
session's episode closes with the session. Inside `taskforge serve` the
episodes live in the server's Episodes (its limit and idle reaper) and submissions
are graded through its admission gate.
"""
from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.mcp_types import (
    CallToolAction,
    CallToolObservation,
    ListToolsAction,
    ListToolsObservation,
    Tool,
    ToolError,
    ToolErrorType,
)
from openenv.core.env_server.types import Action, Observation, State

from taskforge.errors import UserError
from taskforge.grade.answer import RewardResult
from taskforge.training.episodes import Episode, EpisodeLimits, Episodes
from taskforge.training.rewards import TaskSource
from taskforge.training.tools import ToolName, call_tool, grade_episode, tool_specs

Grader = Callable[[Episode], Awaitable[RewardResult]]


class TaskObservation(Observation):
    """What reset gives: the task, its statement and the tools."""
    instance_id: str = ""
    episode_id: str = ""
    problem_statement: str = ""
    tools: list[Tool] = []


def mcp_tools() -> list[Tool]:
    return [Tool(name=s["name"], description=s["description"], input_schema=s["parameters"])
            for s in tool_specs()]


class TaskforgeEnvironment(Environment):
    """One OpenEnv session: at most one open episode at a time."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, source: TaskSource, episodes: Episodes, grader: Grader | None = None):
        super().__init__()
        self.source, self.episodes, self.grader = source, episodes, grader
        self.episode: Episode | None = None
        self.steps = 0
        self.done = False

    # OpenEnv calls reset/step in a worker thread (or awaits the *_async forms)
    def reset(self, seed: int | None = None, episode_id: str | None = None,
              instance_id: str | None = None, **kwargs: Any) -> TaskObservation:
        ids = self.source.ids()
        if instance_id is None:
            if not ids:
                raise UserError("no tasks")
            instance_id = ids[(seed or 0) % len(ids)]       # a seed picks a task, reproducibly
        if instance_id not in self.source:
            raise UserError(f"no task {instance_id!r}")
        self._close_episode()
        self.episode = self.episodes.start(self.source.get(instance_id))
        self.steps, self.done = 0, False
        rec = self.episode.task.record
        return TaskObservation(instance_id=rec.instance_id, episode_id=self.episode.id,
                               problem_statement=rec.problem_statement, tools=mcp_tools())

    def step(self, action: Action, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        return self._step(action, None)

    async def step_async(self, action: Action, timeout_s: float | None = None,
                         **kwargs: Any) -> Observation:
        loop = asyncio.get_running_loop()
        graded: RewardResult | None = None
        ep = self._live()
        if (isinstance(action, CallToolAction) and action.tool_name == ToolName.SUBMIT
                and self.grader is not None and ep is not None):
            graded = await self.grader(ep)                  # the server's gate, on its loop
        return await loop.run_in_executor(None, self._step, action, graded)

    def _step(self, action: Action, graded: RewardResult | None) -> Observation:
        if isinstance(action, ListToolsAction):
            return ListToolsObservation(tools=mcp_tools())
        if not isinstance(action, CallToolAction):
            raise UserError(f"expected a list_tools or call_tool action, not {type(action).__name__}")
        ep = self._live()
        if ep is None:
            return CallToolObservation(tool_name=action.tool_name, done=self.done, error=ToolError(
                error_type=ToolErrorType.EXECUTION_ERROR,
                message="no open episode: reset first" if not self.done else "the episode was submitted"))
        self.steps += 1
        out = call_tool(ep, action.tool_name, action.arguments,
                        submit=(lambda _ep: graded) if graded is not None else grade_episode)
        result: dict[str, Any] = {"output": out.output, "error": out.error}
        if out.result is not None:
            result["result"] = out.result.model_dump(mode="json")
        if out.done:
            self.done = True
            self._close_episode()
        return CallToolObservation(tool_name=action.tool_name, result=result, done=out.done,
                                   reward=out.reward if out.done else None)

    @property
    def state(self) -> State:
        ep = self.episode
        return State(episode_id=ep.id if ep is not None else None, step_count=self.steps,
                     instance_id=ep.task.record.instance_id if ep is not None else None,
                     done=self.done)

    def close(self) -> None:
        self._close_episode()

    def _live(self) -> Episode | None:
        return self.episode if self.episode is not None and not self.episode.closed else None

    def _close_episode(self) -> None:
        ep, self.episode = self.episode, None
        if ep is not None and not ep.closed:
            try:
                self.episodes.close(ep.id)
            except UserError:           # reaped meanwhile
                pass


def create_openenv_app(tasks: str | Path | TaskSource, episodes: Episodes | None = None,
                       grader: Grader | None = None, max_sessions: int = 8):
    """openenv-core's FastAPI app serving taskforge episodes (mountable in any ASGI app)."""
    source = tasks if isinstance(tasks, TaskSource) else TaskSource(tasks)
    live = episodes or Episodes(EpisodeLimits(), max_episodes=max_sessions)

    def factory() -> TaskforgeEnvironment:
        return TaskforgeEnvironment(source, live, grader)

    factory.SUPPORTS_CONCURRENT_SESSIONS = True     # type: ignore[attr-defined]  # read by openenv
    # CallToolAction as the action class: openenv then routes both MCP action types.
    return create_app(factory, CallToolAction, Observation, env_name="taskforge",
                      max_concurrent_envs=max(1, max_sessions))
