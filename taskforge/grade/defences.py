"""The grader's defences, as switches: each on by default, each off in the
red-team suite's naive grader, to show what it stops."""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, model_validator

from taskforge.grade.findings import Policy
from taskforge.models import renamed


class Defences(BaseModel):
    """The grader's defences, each on by default. The red-team suite switches
    them off to show that every attack it tries scores against a grader without
    them (and 0 against this one)."""
    restore_tests: bool = True     # test files and configs from the task's own copy
    startup_hooks: bool = True     # no sitecustomize, .pth or planted dist-info
    bytecode: bool = True          # no sourceless bytecode or new native modules
    shadowing: bool = True         # no top-level module named like stdlib or the runner
    static_scan: bool = True       # changed files read for runner patching, always-equal, ...
    isolation: bool = True         # supervisor uid, guard by path, strict events, reaping
    copies: bool = True           # must-fail copies of hidden tests
    built_copies: bool = True     # ... at a package-built expectation where a test has one
    raise_copies: bool = True     # ... exchanging a raising input with an accepted one (grade/copy_raises.py)
    raise_twins: bool = True      # ... a raising test on a near twin of an input (copy_raises.fresh_copies)
    value_twins: bool = True      # ... an equality on a near twin, the gold's value kept (copy_raises.valued_copies)
    word_twins: bool = True       # ... of those, a word of the feature's own lists swapped (grade/vocab.py)
    traded_twins: bool = True     # ... twins of a raising block's inputs, alike for each (copy_raises.traded_copies)
    rename: bool = True            # random names for the hidden tests at every run
    seals: bool = True             # literal expectations judged on the host (grade/seals.py)
    built_seals: bool = True       # ... and built ones, by the shape the gold built (grade/shapes.py)
    table_seals: bool = True       # ... in tables named by a module constant or picked in a branch (grade/seal_rows.py)
    monitor: bool = True           # the audit-hook monitor's findings count
    exit_checks: bool = True       # exit code, session end, expected ids all reported
    bounds: bool = True            # host-side size, file, depth, apply and scan bounds; monitor cap
    policy: Policy = Policy.SCORE

    @model_validator(mode="before")
    @classmethod
    def _old_names(cls, data: Any) -> Any:
        return renamed(data, {"mutants": "copies"})     # recorded before issue 27's renames

    @classmethod
    def naive(cls) -> "Defences":
        """A grader that runs the tests and believes what they report."""
        off: dict[str, Any] = {name: False for name, f in cls.model_fields.items() if f.annotation is bool}
        return cls(**off)
