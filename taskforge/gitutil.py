"""git as taskforge runs it on trees it makes: no hooks, no system or user
config, fixed identities and dates (so a workspace's commit is the same bytes
in every run), and a failure as an exception with git's own words."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

GIT_ENV = {"GIT_AUTHOR_NAME": "taskforge", "GIT_AUTHOR_EMAIL": "taskforge@localhost",
           "GIT_COMMITTER_NAME": "taskforge", "GIT_COMMITTER_EMAIL": "taskforge@localhost",
           "GIT_AUTHOR_DATE": "2000-01-01T00:00:00+0000",
           "GIT_COMMITTER_DATE": "2000-01-01T00:00:00+0000",
           "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent", "GIT_TERMINAL_PROMPT": "0"}


def git(cwd: Path, *args: str) -> str:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("GIT_")}, **GIT_ENV}
    res = subprocess.run(["git", "-c", "core.hooksPath=/dev/null", "-c", "init.defaultBranch=main",
                          "-c", "core.autocrlf=false", "-c", "commit.gpgsign=false", *args],
                         cwd=cwd, env=env, capture_output=True, text=True, errors="surrogateescape")
    if res.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {res.stderr.strip()[:300]}")
    return res.stdout
