"""taskforge: turn real, tested Python repositories into verifiable
feature-reimplementation tasks for reinforcement learning.

The library API is what the CLI wraps; a trainer imports it directly:

    from taskforge import generate, Options, verify, Solution, score, load_task
"""
from taskforge.errors import InfraError, TaskforgeError, UserError

__version__ = "0.1.0"
__all__ = ["generate", "verify", "load_task", "TaskforgeError", "UserError", "InfraError"]
__all__ += ["reward", "Options", "verify_many", "Solution", "score", "score_many"]


# The stable library API: names here keep working whatever module they live in.
_LAZY = {
    "generate": "taskforge.orchestrate.pipeline", "Options": "taskforge.orchestrate.options",
    "verify": "taskforge.grade.verify", "verify_many": "taskforge.grade.verify",
    "Solution": "taskforge.grade.verify", "load_task": "taskforge.package.store",
    "reward": "taskforge.training.rewards",      # verl's signature; the rest is in training.rewards
    "score": "taskforge.training.rewards", "score_many": "taskforge.training.rewards",
}


def __getattr__(name: str):
    # Lazy: importing taskforge must not pull in docker, libcst or pytest.
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(name)
