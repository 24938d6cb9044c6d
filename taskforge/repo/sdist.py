"""Turn a release from the package index into a git repository.

Real projects for tests and benchmarks come from the index as sdists (which
usually carry the test suite), unpacked and committed as one pinned commit, so
taskforge treats them like any other repository and nothing is vendored here.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
import zipfile
from pathlib import Path

from taskforge.errors import InfraError, UserError
from taskforge.gitutil import git


def _download(name: str, version: str, into: Path) -> Path:
    """The sdist from the index's JSON API; pip download as the fallback."""
    index = os.environ.get("TASKFORGE_PYPI", "https://pypi.org")
    try:
        with urllib.request.urlopen(f"{index}/pypi/{name}/{version}/json", timeout=60) as r:
            meta = json.load(r)
        url = next(u["url"] for u in meta["urls"] if u["packagetype"] == "sdist")
        out = into / url.rsplit("/", 1)[-1]
        with urllib.request.urlopen(url, timeout=300) as r, open(out, "wb") as fh:
            shutil.copyfileobj(r, fh)
        return out
    except StopIteration:
        raise UserError(f"no sdist for {name}=={version}") from None
    except (OSError, ValueError, KeyError):
        pass
    res = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary",
                          ":all:", "-d", str(into), f"{name}=={version}"],
                         capture_output=True, text=True, timeout=600)
    archives = [p for p in into.iterdir() if p.suffix in (".gz", ".zip", ".bz2")]
    if not archives:
        lines = [ln for ln in (res.stderr or res.stdout).strip().splitlines() if "ERROR" in ln]
        raise InfraError(f"cannot download {name}=={version}: {lines[-1] if lines else 'pip failed'}")
    return archives[0]


def repo_from_sdist(name: str, version: str, dest: Path) -> Path:
    """Download name==version's sdist and commit it as a git repo at dest/<name>-<version>."""
    target = dest / f"{name}-{version}"
    if (target / ".git").is_dir():
        return target
    with tempfile.TemporaryDirectory(prefix="tf-sdist-") as tmp:
        archive = _download(name, version, Path(tmp))
        unpack = Path(tmp) / "x"
        if archive.suffix == ".zip":
            with zipfile.ZipFile(archive) as z:
                z.extractall(unpack)
        else:
            with tarfile.open(archive) as t:
                t.extractall(unpack, filter="data")
        roots = list(unpack.iterdir())
        root = roots[0] if len(roots) == 1 and roots[0].is_dir() else unpack
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(root, target) if not target.exists() else None
    git(target, "init", "-q")
    # As a clone looks: what the project's .gitignore names (a generated
    # `_version.py`, build output) is left out of the commit, so not in any clone.
    git(target, "add", "-A")
    git(target, "commit", "-q", "--no-verify", "-m", f"{name} {version} (sdist)")
    return target
