"""taskforge: turn real, tested Python repositories into verifiable
feature-reimplementation tasks for reinforcement learning.

The library API is what the CLI wraps; a trainer imports it directly:

    from taskforge import generate, verify, load_task
"""
from taskforge.errors import InfraError, TaskforgeError, UserError

__version__ = "0.1.0"
__all__ = ["generate", "verify", "load_task", "TaskforgeError", "UserError", "InfraError"]
__all__ += ["reward"]


def __getattr__(name: str):
    # Lazy: importing taskforge must not pull in docker, libcst or pytest.
    if name == "generate":
        from taskforge.pipeline import generate
        return generate
    if name == "verify":
        from taskforge.verify import verify
        return verify
    if name == "load_task":
        from taskforge.task_store import load_task
        return load_task
    if name == "reward":            # verl's signature; the rest is in taskforge.rewards
        from taskforge.rewards import reward
        return reward
    raise AttributeError(name)
