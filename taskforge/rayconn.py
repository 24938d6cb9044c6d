"""Joining the Ray cluster: the one place that imports Ray (an optional extra)."""
from __future__ import annotations

import os
import signal
import threading

from taskforge.errors import InfraError, UserError


def _ray():
    try:
        import ray
    except ImportError:
        raise UserError("Ray is not installed: pip install 'taskforge[ray]'") from None
    return ray


def connect(address: str | None = None) -> None:
    """Join the cluster at `address` (default $RAY_ADDRESS, else a running local
    one); a no-op when this process already has."""
    ray = _ray()
    if ray.is_initialized():
        return
    addr = address or os.environ.get("RAY_ADDRESS") or "auto"
    # ray.init makes SIGTERM exit(15) at once; the process that joins (serve, a
    # trainer) keeps its own handling, so a stop stays graceful.
    main = threading.current_thread() is threading.main_thread()
    before = signal.getsignal(signal.SIGTERM) if main else None
    try:
        ray.init(address=addr, logging_level="ERROR", log_to_driver=False)
    except (ConnectionError, RuntimeError) as exc:
        raise InfraError(f"cannot join the Ray cluster at {addr}: {str(exc).splitlines()[0][:200]}"
                         " (start one with `ray start --head`, or set RAY_ADDRESS)") from None
    finally:
        if main and before is not None:
            signal.signal(signal.SIGTERM, before)


def alive_nodes() -> list[dict]:
    return [n for n in _ray().nodes() if n.get("Alive")]
