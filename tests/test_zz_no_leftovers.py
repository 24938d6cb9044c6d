"""Runs last (file order): nothing taskforge started is left in the engine."""


def test_no_taskforge_containers_left(docker_engine):
    left = docker_engine.containers.list(all=True, filters={"label": "taskforge"})
    assert left == [], [c.name for c in left]
