"""What an interrupted `generate` keeps, so a rerun does no finished work twice.

Everything lives under OUT/.state/ and is written atomically, so a kill -9 at
any instant leaves either the old file or the new one:

- `baseline-<key>.json` + `.coverage`: the two baseline runs and the per-test
  coverage map, keyed by what decides them (source commit, image, test args).
- `verdicts/<task id>.json`: every rejected candidate with its stage and reason
  (accepted ones are their task directory, written the moment they validate).
- `lock`: one generate per output directory at a time.

Containers and scratch directories carry an owner token (host, pid, process
start time); a later run removes those whose owner is dead.
"""
from __future__ import annotations

import fcntl
import hashlib
import logging
from pathlib import Path
from typing import IO

from pydantic import BaseModel

from taskforge.errors import TaskforgeError, UserError
from taskforge.fsutil import atomic_write
from taskforge.models import FeatureKind, Stage
from taskforge.sandbox import BACKENDS, backend_class
from taskforge.sandbox.owner import owned_dir, owner_alive, reap_dirs

log = logging.getLogger(__name__)

STATE_VERSION = 2          # 2: funnel stages of issue 11, uncopied tests leave the grading


class BaselineState(BaseModel):
    """The baseline of one (commit, image, test args): outcomes and timings."""
    state_version: int = STATE_VERSION
    key: str
    passing: list[str]
    flaky: list[str]
    failing: list[str]
    all_ids: list[str]
    coverage_seconds: float          # the run with per-test coverage
    bare_seconds: float              # the plain run


class VerdictState(BaseModel):
    """A candidate that did not become a task, and why."""
    state_version: int = STATE_VERSION
    candidate: str
    kind: FeatureKind
    source_commit: str
    stage: Stage                      # an unknown stage (older taskforge): not loaded, rerun
    reason: str
    test_seconds: float = 0.0
    options: str = ""                 # the generate options a verdict depends on


def reap_dead_runs() -> int:
    """Remove containers and scratch dirs left by generate runs that died (kill -9)."""
    n = 0
    for name in BACKENDS:
        try:
            n += backend_class(name).reap_orphans(owner_alive)
        except TaskforgeError as exc:       # a backend not usable here left nothing
            log.debug("not reaping %s sandboxes: %s", name, exc.message)
    return n + reap_dirs()


def make_scratch() -> Path:
    return owned_dir("taskforge-")


class RunState:
    def __init__(self, out_dir: Path):
        self.dir = out_dir / ".state"
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "verdicts").mkdir(exist_ok=True)
        self._lock_fh: IO[str] | None = None

    def lock(self) -> None:
        fh = open(self.dir / "lock", "a+")
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.close()
            raise UserError(f"another taskforge generate is writing to {self.dir.parent}") from None
        self._lock_fh = fh

    def unlock(self) -> None:
        if self._lock_fh is not None:
            self._lock_fh.close()
            self._lock_fh = None

    # -- baseline -----------------------------------------------------------
    @staticmethod
    def baseline_key(*parts: str) -> str:
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]

    def load_baseline(self, key: str) -> tuple[BaselineState, Path] | None:
        js, cov = self.dir / f"baseline-{key}.json", self.dir / f"baseline-{key}.coverage"
        try:
            st = BaselineState.model_validate_json(js.read_text())
        except (OSError, ValueError):
            return None
        if st.key != key or st.state_version != STATE_VERSION or not cov.is_file():
            return None
        return st, cov

    def save_baseline(self, st: BaselineState, coverage_db: Path) -> Path:
        cov = self.dir / f"baseline-{st.key}.coverage"
        atomic_write(cov, coverage_db.read_bytes())       # the data first, then its index
        atomic_write(self.dir / f"baseline-{st.key}.json", st.model_dump_json() + "\n")
        return cov

    # -- verdicts -----------------------------------------------------------
    def load_verdict(self, tid: str, source_commit: str, options: str = "") -> VerdictState | None:
        try:
            v = VerdictState.model_validate_json((self.dir / "verdicts" / f"{tid}.json").read_text())
        except (OSError, ValueError):
            return None
        return v if (v.source_commit == source_commit and v.state_version == STATE_VERSION
                     and v.options == options) else None

    def save_verdict(self, tid: str, v: VerdictState) -> None:
        atomic_write(self.dir / "verdicts" / f"{tid}.json", v.model_dump_json() + "\n")
