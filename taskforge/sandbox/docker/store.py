"""Docker's environment store: images in the engine (images.py builds them).
The one store generation builds in (sandbox.GENERATION_BACKEND)."""
from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from taskforge.errors import InfraError
from taskforge.sandbox.base import EnvironmentRequest, GenerationStore
from taskforge.sandbox.docker import images
from taskforge.sandbox.docker.engine import LABEL, _short, client, docker_errors


class DockerImages(GenerationStore):
    def exists(self, name: str) -> bool:
        return images.image_exists(name)

    def build_task(self, req: EnvironmentRequest, log: Callable[[str], None]) -> None:
        images.prepare_task_image(req, log=log)

    def ensure_base(self, python: str, log: Callable[[str], None]) -> str:
        return images.ensure_base_image(log=log, python=python)

    def ensure_environment(self, tree: Path, repo_name: str, commit: str, base: str, script: str,
                           log: Callable[[str], None]) -> tuple[str, float]:
        return images.ensure_env_image(tree, repo_name, commit, base, script, log=log)

    def generated_files(self, name: str) -> dict[str, str]:
        return images.generated_files(name)

    def environment_id(self, name: str) -> str:
        try:
            return client().images.get(name).id
        except docker_errors() as exc:
            raise InfraError(f"no image {name}: {_short(exc)}") from None

    @contextmanager
    def export(self, name: str) -> Iterator[io.RawIOBase]:
        container = client().containers.create(name, command=["true"], labels={LABEL: "1"})
        try:
            yield _IterReader(container.export(chunk_size=1 << 20))
        finally:
            container.remove(force=True)


class _IterReader(io.RawIOBase):
    """The SDK's chunk iterator as a file, for tarfile's stream mode."""

    def __init__(self, it):
        self.it, self.buf = iter(it), b""

    def readable(self):
        return True

    def readinto(self, b):
        while not self.buf:
            try:
                self.buf = next(self.it)
            except StopIteration:
                return 0
        n = min(len(b), len(self.buf))
        b[:n], self.buf = self.buf[:n], self.buf[n:]
        return n
