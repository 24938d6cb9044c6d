"""The daemonless backend's environment store: root filesystem directories
(rootfs.py builds them), realised from each task's recorded recipe."""
from __future__ import annotations

from collections.abc import Callable

from taskforge.sandbox.base import EnvironmentRequest, EnvironmentStore
from taskforge.sandbox.bwrap import rootfs


class RootfsStore(EnvironmentStore):
    def exists(self, name: str) -> bool:
        return rootfs.exists(name)

    def build_task(self, req: EnvironmentRequest, log: Callable[[str], None]) -> None:
        rootfs.prepare_task(req, log=log)

    def ensure_base(self, python: str, log: Callable[[str], None]) -> str:
        rootfs.ensure_base(python, log=log)
        return rootfs.base_name(python)
