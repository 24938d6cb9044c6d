"""Runs last (file order): nothing taskforge started is left in the engine."""
from taskforge.sandbox.owner import owner_alive, owner_token


def test_no_taskforge_containers_left(docker_engine):
    """Every taskforge container is gone, except those of other live processes that
    share the engine (a second test run, a reward server): this session and every
    process it started, killed ones included, have exited by now."""
    me = owner_token()
    left = [c for c in docker_engine.containers.list(all=True, ignore_removed=True, filters={"label": "taskforge"})
            if (c.labels or {}).get("taskforge.owner", me) == me
            or not owner_alive(c.labels["taskforge.owner"])]
    assert left == [], [c.name for c in left]
