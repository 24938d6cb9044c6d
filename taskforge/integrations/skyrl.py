"""SkyRL-Gym: see taskforge.training.integrations.skyrl (importing registers "taskforge")."""
from taskforge.training.integrations.skyrl import (  # noqa: F401
    ENTRY_POINT,
    ENV_ID,
    TaskforgeTextEnv,
    parse_tool_calls,
    register_env,
    system_prompt,
)
