"""Scratch directories a killed process leaves are removed later (the host stays
bounded): CI runs that killed processes on purpose left warm pools' filled
workspaces in /tmp, run after run."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from taskforge.sandbox.owner import owned_dir, reap_dirs

ROOT = Path(__file__).resolve().parent.parent


def test_the_directories_of_a_killed_process_go_and_live_ones_stay():
    child = subprocess.Popen(
        [sys.executable, "-c", "from taskforge.sandbox.owner import owned_dir\n"
         "for p in ('tf-warm-', 'tf-verify-', 'taskforge-'):\n"
         "    d = owned_dir(p); (d / 'workspace').mkdir(); print(d, flush=True)\n"
         "import time; time.sleep(120)"],
        cwd=ROOT, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert child.stdout is not None
    dead = [Path(child.stdout.readline().strip()) for _ in range(3)]
    mine = owned_dir("tf-warm-")
    unowned = Path(tempfile.mkdtemp(prefix="tf-warm-"))      # an older taskforge's: not ours to judge
    try:
        assert all(d.is_dir() for d in dead)
        reap_dirs()
        assert all(d.is_dir() for d in dead), "removed while the owner lives"
        child.send_signal(signal.SIGKILL)
        child.wait()
        assert reap_dirs() >= 3
        assert not any(d.exists() for d in dead)
        assert mine.is_dir() and unowned.is_dir()
    finally:
        child.kill()
        for d in (mine, unowned, *dead):
            subprocess.run(["rm", "-rf", str(d)], check=False)
