"""mini-swe-agent's Environment protocol on a taskforge episode.

    from minisweagent.agents.default import DefaultAgent
    from taskforge.training.integrations.minisweagent import TaskforgeEnvironment

    env = TaskforgeEnvironment("tasks/lib__feature-1a2b3c4d")
    agent = DefaultAgent(model, env, **agent_config)
    agent.run(env.task_statement())
    result = env.reward()          # verify on the episode's diff, in a fresh sandbox
    env.close()

Commands run in the task's sandbox (no network, no hidden tests) instead of on
the host, as mini-swe-agent's LocalEnvironment would. The submission marker
ends the run the way mini-swe-agent expects (its `Submitted` exception); the
reward comes from the workspace's diff, not from what the agent prints.
"""
from __future__ import annotations

import platform
import shlex
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from taskforge.training.episodes import Episode, EpisodeLimits

SUBMIT_MARKER = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"


class TaskforgeEnvironmentConfig(BaseModel):
    task: str
    cwd: str = "/workspace"
    timeout: int = 60


class TaskforgeEnvironment:
    def __init__(self, task: str | Path, *, limits: EpisodeLimits | None = None,
                 episode: Episode | None = None, **kwargs):
        self.config = TaskforgeEnvironmentConfig(task=str(task), **kwargs)
        limits = limits or EpisodeLimits(command_timeout=self.config.timeout)
        self.episode = episode or Episode(task, limits)

    def execute(self, action: dict, cwd: str = "", *, timeout: int | None = None) -> dict[str, Any]:
        command = action.get("command", "")
        if cwd and cwd != self.config.cwd:
            command = f"cd {shlex.quote(cwd)} && {command}"
        r = self.episode.run(command, timeout or self.config.timeout)
        output = {"output": r.output, "returncode": r.exit_code if r.exit_code is not None else -1,
                  "exception_info": (f"The command timed out after {timeout or self.config.timeout}s"
                                     if r.timed_out else "")}
        self._check_finished(output)
        return output

    def _check_finished(self, output: dict) -> None:
        lines = output.get("output", "").lstrip().splitlines(keepends=True)
        if lines and lines[0].strip() == SUBMIT_MARKER and output["returncode"] == 0:
            from minisweagent.exceptions import Submitted

            submission = "".join(lines[1:])
            raise Submitted({"role": "exit", "content": submission,
                             "extra": {"exit_status": "Submitted", "submission": submission}})

    def task_statement(self) -> str:
        return self.episode.task.record.problem_statement

    def reward(self, timeout: float | None = None):
        """verify's result for the episode's current tree (reward, reasons)."""
        return self.episode.submit(timeout=timeout)

    def get_template_vars(self, **kwargs) -> dict[str, Any]:
        return {**self.config.model_dump(), **platform.uname()._asdict(), **kwargs}

    def serialize(self) -> dict:
        return {"info": {"config": {"environment": self.config.model_dump(mode="json"),
                                    "environment_type": f"{type(self).__module__}."
                                                        f"{type(self).__name__}"}}}

    def close(self) -> None:
        self.episode.close()
