"""OpenEnv: see taskforge.training.integrations.openenv."""
from taskforge.training.integrations.openenv import TaskforgeEnvironment, create_openenv_app

__all__ = ["TaskforgeEnvironment", "create_openenv_app"]
