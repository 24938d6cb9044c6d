"""SkyRL-Gym's BaseTextEnv on a taskforge episode, registered as "taskforge".

    import skyrl_gym
    import taskforge.integrations.skyrl      # registers the id (skyrl-train: in your entrypoint)

    env = skyrl_gym.make("taskforge", env_config={"tasks": "tasks/"},
                         extras={"reward_spec": {"ground_truth": "lib__feature-1a2b3c4d"}})
    prompt, meta = env.init([])           # the task statement; meta["tools"]: the schemas
    out = env.step('<tool_call>{"name": "bash", "arguments": {"command": "ls"}}</tool_call>')
    ...                                   # out["reward"] on the step that calls submit
    env.close()

The model acts through taskforge's tool set (taskforge.training.tools) in the
Hermes/Qwen tool-call format that chat templates emit: each
`<tool_call>{"name", "arguments"}</tool_call>` block of an action is run in turn.
The episode ends on `submit` (its reward: verify on the diff, in a fresh
sandbox) or at `max_turns`, where the tree as it stands is graded the same way.
A grading infrastructure failure gives reward None (metadata `infra_error`):
mask it, never train on it as 0.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput

from taskforge.training.episodes import Episode, EpisodeLimits
from taskforge.training.tools import (
    ToolName,
    ToolOutcome,
    call_tool,
    grade_episode,
    parse_tool_calls,
    tool_schemas,
    tools_prompt,
)

ENV_ID = "taskforge"
ENTRY_POINT = "taskforge.training.integrations.skyrl:TaskforgeTextEnv"
__all__ = ["ENTRY_POINT", "ENV_ID", "TaskforgeTextEnv", "parse_tool_calls", "register_env", "system_prompt"]


def system_prompt() -> str:
    return tools_prompt()


def task_dir_of(env_config: Any, extras: dict[str, Any]) -> Path:
    """The task directory from the row's extras (`task_dir`, or the instance id
    in `reward_spec.ground_truth`, an id or taskforge's label JSON) under the
    env config's `tasks` (a directory of tasks, or shards)."""
    from taskforge.errors import UserError
    from taskforge.training.rewards import TaskSource, instance_id_of

    if extras.get("task_dir"):
        return Path(extras["task_dir"])
    truth = (extras.get("reward_spec") or {}).get("ground_truth")
    tasks = _get(env_config, "tasks")
    if truth is None or tasks is None:
        raise UserError("a taskforge SkyRL row needs extras.task_dir, or reward_spec.ground_truth "
                        "(the instance id) and env_config.tasks")
    return TaskSource(str(tasks)).get(instance_id_of(truth))


def _get(cfg: Any, key: str, default: Any = None) -> Any:
    if cfg is None:
        return default
    if isinstance(cfg, dict):
        return cfg.get(key, default)
    getter = getattr(cfg, "get", None)          # an OmegaConf DictConfig, as skyrl-train passes
    return getter(key, default) if callable(getter) else getattr(cfg, key, default)


class TaskforgeTextEnv(BaseTextEnv):
    """One taskforge task as a multi-turn text environment; the sandbox opens in init()."""

    def __init__(self, env_config: Any = None, extras: dict[str, Any] | None = None):
        super().__init__()
        extras = dict(extras or {})
        self.task_dir = task_dir_of(env_config, extras)
        self.max_turns = int(extras.get("max_turns", _get(env_config, "max_turns", 30)))
        self.limits = EpisodeLimits(command_timeout=float(_get(env_config, "command_timeout", 60.0)))
        self.backend = str(_get(env_config, "sandbox", "docker"))
        self.episode: Episode | None = None
        self.outcomes: list[ToolOutcome] = []
        self.reward: float | None = 0.0

    def init(self, prompt: list[dict[str, str]]) -> tuple[list[dict[str, str]], dict[str, Any]]:
        self.episode = Episode(self.task_dir, self.limits, self.backend)
        if not prompt:
            prompt = [{"role": "system", "content": system_prompt()},
                      {"role": "user", "content": self.episode.task.record.problem_statement}]
        return prompt, {"tools": tool_schemas(), "instance_id": self.episode.task.record.instance_id}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        assert self.episode is not None, "init() first"
        self.turns += 1
        texts: list[str] = []
        final: ToolOutcome | None = None
        calls = parse_tool_calls(action)
        for name, args in calls:
            out = call_tool(self.episode, name, args)
            self.outcomes.append(out)
            texts.append(f"<tool_response>\n{out.output}\n</tool_response>")
            if out.done:
                final = out
                break
        if not calls:
            texts.append("No tool call found. Call a tool with <tool_call>{\"name\": ..., "
                         "\"arguments\": {...}}</tool_call>; call submit when done.")
        if final is None and self.turns >= self.max_turns:
            res = grade_episode(self.episode)          # out of turns: the tree as it stands
            final = ToolOutcome(tool=ToolName.SUBMIT.value, output=f"Out of turns. Reward {res.reward}",
                                done=True, reward=res.reward, result=res)
        done = final is not None
        meta: dict[str, Any] = {"turn": self.turns, "tool_calls": len(calls)}
        if final is not None and final.result is not None:
            self.reward = final.reward
            meta.update(final.result.model_dump(mode="json"))
        return BaseTextEnvStepOutput(
            observations=[] if done else [{"role": "user", "content": "\n".join(texts)}],
            reward=self.reward if done else 0.0,       # None (infrastructure): masked
            done=done, metadata=meta, postprocessed_action=None)

    def get_metrics(self) -> dict[str, Any]:
        return {"turns": self.turns, "tool_errors": sum(o.error for o in self.outcomes),
                "submitted": float(any(o.tool == ToolName.SUBMIT and o.done for o in self.outcomes))}

    def close(self) -> None:
        if self.episode is not None:
            self.episode.close()


def register_env(env_id: str = ENV_ID) -> None:
    """Register the environment with skyrl_gym under `env_id` (once)."""
    import skyrl_gym
    from skyrl_gym.envs.registration import registry

    if env_id not in registry:
        skyrl_gym.register(id=env_id, entry_point=ENTRY_POINT)


register_env()
