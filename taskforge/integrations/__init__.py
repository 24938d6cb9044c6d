"""The documented short names of the framework adapters (taskforge.integrations.skyrl,
.openenv, .verifiers): each re-exports taskforge.training.integrations' module of the
same name, imported only when asked for (each needs its framework's extra)."""
