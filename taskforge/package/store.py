"""Load a task directory and check it is whole before anything runs on it."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from taskforge.errors import UserError
from taskforge.models import TaskRecord
from taskforge.sandbox.base import EnvironmentRequest


@dataclass
class Task:
    dir: Path
    record: TaskRecord

    @property
    def workspace(self) -> Path:
        return self.dir / "workspace"

    @property
    def hidden(self) -> Path:
        return self.dir / "hidden"

    def install_tree(self, dest: Path) -> Path:
        """The project an environment is built from: the workspace with the hidden
        tests put back, so that what only they import gets installed (as the
        original build, which saw the whole tree, did). Never shipped to an agent."""
        import shutil

        shutil.copytree(self.workspace, dest, ignore=shutil.ignore_patterns(".git"), symlinks=True)
        for rel in self.record.hidden_test_files:
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(self.hidden / rel, dest / rel)
        return dest


    def environment_request(self) -> EnvironmentRequest:
        """What a backend needs to realise this task's environment."""
        r = self.record
        return EnvironmentRequest(name=r.image_name, recipe=r.environment, repo=r.repo,
                                  commit=r.source_commit, label=r.instance_id,
                                  install_tree=self.install_tree)


def load_task(path: str | Path) -> Task:
    d = Path(path)
    if not d.is_dir():
        raise UserError(f"no such task directory: {path}")
    tj = d / "task.json"
    if not tj.is_file():
        raise UserError(f"corrupt task {path}: task.json is missing")
    try:
        raw = json.loads(tj.read_bytes())
    except (ValueError, UnicodeDecodeError) as exc:
        raise UserError(f"corrupt task {path}: task.json is not valid JSON ({exc})") from None
    try:
        record = TaskRecord.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(x) for x in first.get("loc", ()))
        raise UserError(f"corrupt task {path}: task.json: {loc or 'document'}: {first.get('msg')}") from None
    if not (d / "workspace").is_dir():
        raise UserError(f"corrupt task {path}: workspace/ is missing")
    if not (d / "hidden").is_dir():
        raise UserError(f"corrupt task {path}: hidden/ is missing")
    missing = [f for f in record.hidden_test_files
               if not (d / "hidden" / f).is_file()]
    if missing:
        raise UserError(f"corrupt task {path}: hidden test file missing: {missing[0]}")
    if not record.FAIL_TO_PASS:
        raise UserError(f"corrupt task {path}: FAIL_TO_PASS is empty")
    return Task(dir=d, record=record)
