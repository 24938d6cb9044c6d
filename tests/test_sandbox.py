"""The Docker sandbox for real: hardening, bounded exec, nothing left behind."""
from __future__ import annotations

import time

from taskforge.sandbox import SandboxSpec, open_sandbox


def test_hardened_sandbox(base_image, docker_engine):
    with open_sandbox(SandboxSpec(image=base_image, labels={"taskforge.role": "test"})) as sb:
        cid = sb.container.id
        assert sb.exec(["id", "-u"], timeout=10).output.strip() == "1000"
        assert sb.exec(["touch", "/etc/x"], timeout=10).exit_code != 0          # read-only root
        assert sb.exec(["touch", "/tmp/x"], timeout=10).exit_code == 0          # writable /tmp
        net = sb.exec(["python", "-c", "import socket; socket.create_connection(('1.1.1.1', 80), 3)"],
                      timeout=20)
        assert net.exit_code != 0                                               # no network
        t0 = time.monotonic()
        res = sb.exec(["sleep", "60"], timeout=2)
        assert time.monotonic() - t0 < 15 and res.exit_code in (124, 137, -9, None)
        attrs = docker_engine.api.inspect_container(cid)["HostConfig"]
        assert attrs["ReadonlyRootfs"] and attrs["CapDrop"] == ["ALL"]
        assert attrs["NetworkMode"] == "none" and attrs["PidsLimit"] > 0 and attrs["Memory"] > 0
    assert not docker_engine.containers.list(all=True, filters={"id": cid})
