"""SkyRL-Gym: see taskforge.training.integrations.skyrl (importing registers "taskforge")."""
from taskforge.training.integrations.skyrl import (
    ENTRY_POINT,
    ENV_ID,
    TaskforgeTextEnv,
    parse_tool_calls,
    register_env,
    system_prompt,
)

__all__ = ["ENTRY_POINT", "ENV_ID", "TaskforgeTextEnv", "parse_tool_calls", "register_env", "system_prompt"]
