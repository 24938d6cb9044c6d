"""taskforge's tasks for verifiers 0.4: the top-level module its discovery imports
(`vf-eval taskforge_verifiers`, `vf.load_environment`; dotted names fail in its
loader). The code is taskforge.training.integrations.verifiers."""
from taskforge.training.integrations.verifiers import (
    Mode,
    TaskforgeData,
    TaskforgeEnv,
    TaskforgeEnvConfig,
    TaskforgeTask,
    TaskforgeTaskset,
    TaskforgeTasksetConfig,
    load_environment,
)

__all__ = ["Mode", "TaskforgeData", "TaskforgeEnv", "TaskforgeEnvConfig", "TaskforgeTask",
           "TaskforgeTaskset", "TaskforgeTasksetConfig", "load_environment"]
