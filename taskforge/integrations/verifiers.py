"""verifiers: see taskforge.training.integrations.verifiers (discovery: taskforge_verifiers)."""
from taskforge.training.integrations.verifiers import Mode, TaskforgeEnv, TaskforgeTaskset, load_environment

__all__ = ["Mode", "TaskforgeEnv", "TaskforgeTaskset", "load_environment"]
