"""The Docker engine connection: one shared SDK client, and the errors the SDK
raises. The only place the docker package is imported."""
from __future__ import annotations

import threading

from taskforge.errors import InfraError

LABEL = "taskforge"
_client = None
_client_lock = threading.Lock()


def client():
    """A shared docker client; InfraError when no engine answers."""
    global _client
    with _client_lock:
        if _client is None:
            try:
                import docker

                c = docker.from_env(timeout=120, max_pool_size=32)
                c.ping()
            except Exception as exc:  # docker raises several unrelated types here
                raise InfraError(f"cannot reach the Docker engine ({_short(exc)}); "
                                 "is dockerd running and DOCKER_HOST right?") from None
            _client = c
        return _client


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:200]

def docker_errors() -> tuple[type[BaseException], ...]:
    """What the SDK raises for a container that went away or an engine hiccup."""
    import docker.errors
    import requests.exceptions

    return (docker.errors.DockerException, requests.exceptions.RequestException)
