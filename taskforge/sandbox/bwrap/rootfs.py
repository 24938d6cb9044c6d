"""Environments as plain directories, for sandboxes that need no Docker daemon.

A task names its environment (`image_name`) and records the recipe that made
it (`environment`: the Python version and the install script). Docker realises
the name as an image; a daemonless backend realises the same name as a root
filesystem directory built here from the same recipe, with no daemon anywhere:

  base rootfs   a Debian tree from debootstrap (scripts/make-debian-rootfs.sh)
                or any directory with python3 and its venv module
                ($TASKFORGE_ROOTFS_BASE), set up like the Dockerfile does
                (venv at /opt/tf/venv with pytest, user 1000, mount points);
  env rootfs    a copy of the base with the recipe's script run in it under
                bubblewrap, network on, the task's workspace at /workspace
                (the install is editable: the code itself never enters the tree).

Directories are built beside their final place and renamed into it, so a
crashed build leaves nothing that looks finished.
"""
from __future__ import annotations

import json
import logging
import os
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path

from taskforge.errors import InfraError, UserError
from taskforge.sandbox.base import SANDBOX_UID

logger = logging.getLogger(__name__)

META = "taskforge-rootfs.json"
ENV = {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1", "PIP_NO_CACHE_DIR": "1",
       "PIP_DISABLE_PIP_VERSION_CHECK": "1", "VIRTUAL_ENV": "/opt/tf/venv", "LANG": "C.UTF-8",
       "PATH": "/opt/tf/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
# Where sandboxes mount things: a read-only root cannot grow mount points later.
MOUNT_POINTS = ("workspace", "opt/tf/lib", "opt/tf/out", "opt/tf/build", "tmp", "proc", "dev")
_build_lock = threading.Lock()

# The common locales (the Dockerfile's LOCALES, the same list: a test checks).
LOCALES = (
    "en_US.UTF-8 UTF-8|"
    "en_US ISO-8859-1|"
    "en_GB.UTF-8 UTF-8|"
    "de_DE.UTF-8 UTF-8|"
    "de_DE ISO-8859-1|"
    "fr_FR.UTF-8 UTF-8|"
    "es_ES.UTF-8 UTF-8|"
    "it_IT.UTF-8 UTF-8|"
    "nl_NL.UTF-8 UTF-8|"
    "pt_BR.UTF-8 UTF-8|"
    "ru_RU.UTF-8 UTF-8|"
    "ja_JP.UTF-8 UTF-8|"
    "zh_CN.UTF-8 UTF-8"
)

# The Dockerfile's RUN step, for a directory instead of an image.
BASE_SETUP = """\
set -eu
if ! command -v locale-gen >/dev/null 2>&1; then
  (apt-get update -qq && apt-get install -y -qq --no-install-recommends locales >/dev/null \\
   && rm -rf /var/lib/apt/lists/*) || echo "warning: no locales package: only C.UTF-8" >&2
fi
if command -v locale-gen >/dev/null 2>&1; then
  echo "$LOCALES" | tr '|' '\\n' > /etc/locale.gen && locale-gen >/dev/null
fi
python3 -m venv /opt/tf/venv
/opt/tf/venv/bin/pip install -q "pytest>=7.4" "pytest-cov>=4.1" "coverage>=7.4"
if ! getent passwd 1000 >/dev/null; then useradd -u 1000 -U -m -s /bin/sh sandbox; fi
mkdir -p /workspace /opt/tf/out /opt/tf/lib
chown 1000:1000 /workspace /opt/tf/out
"""


def store() -> Path:
    """Where environment directories live: $TASKFORGE_ROOTFS, else ~/.cache/taskforge/rootfs."""
    return Path(os.environ.get("TASKFORGE_ROOTFS")
                or Path.home() / ".cache" / "taskforge" / "rootfs")


def path_for(name: str) -> Path:
    """The directory that realises environment `name` (an image name)."""
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._") or "env"
    return store() / slug


def exists(name: str) -> bool:
    return (path_for(name) / META).is_file()


def meta(name: str) -> dict:
    try:
        return json.loads((path_for(name) / META).read_text())
    except (OSError, ValueError):
        raise InfraError(f"environment {name} has no root filesystem here; prepare it with "
                         f"`taskforge env prepare TASK` (needs no Docker)") from None


def bwrap() -> str:
    found = shutil.which("bwrap")
    if not found:
        raise InfraError("bubblewrap is not installed (apt-get install bubblewrap)")
    return found


def _run_in(root: Path, script: str, binds: Sequence[tuple[Path, str]] = (), timeout: float = 1800,
            env: dict[str, str] | None = None) -> str:
    """Run a build script as root in `root` (writable), network on."""
    argv = [bwrap(), "--bind", str(root), "/", "--proc", "/proc", "--dev", "/dev",
            "--perms", "1777", "--tmpfs", "/tmp", "--die-with-parent", "--new-session",
            "--unshare-ipc", "--unshare-pid", "--unshare-uts"]
    for host in ("/etc/resolv.conf", "/etc/hosts"):
        if Path(host).is_file():
            argv += ["--ro-bind", host, host]
    for source, inside in binds:
        argv += ["--bind", str(source), inside]
    argv += ["--clearenv", "--chdir", "/"]
    for k, v in {**ENV, "HOME": "/root", **(env or {})}.items():
        argv += ["--setenv", k, v]
    argv += ["sh", "-c", script]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise InfraError(f"the environment build timed out after {timeout:.0f}s") from None
    out = proc.stdout + proc.stderr
    if proc.returncode != 0:
        from taskforge.sandbox.docker.images import install_error

        raise UserError(f"installing the repository failed: {install_error(out).strip()[:300]}")
    return out


def _pip_settings(root: Path) -> None:
    """The host's index settings and CA bundle, as the Docker build gets them."""
    from taskforge.sandbox.docker.images import HOST_CA, host_pip_conf

    conf = host_pip_conf()
    (root / "opt/tf/build").mkdir(parents=True, exist_ok=True)
    if Path(HOST_CA).is_file():
        shutil.copy(HOST_CA, root / "opt/tf/build/ca-bundle.crt")
    if conf:
        (root / "etc/pip.conf").write_text(conf)


# What the sandbox user (uid 1000, "other" to root's files) must be able to
# traverse for anything to start: the tree's root, the interpreter's path, the
# runner's mount point. A debootstrap into `mktemp -d` is 0700 at its root, and
# `cp -a` carries that mode onto every copy.
TRAVERSED = ("", "usr", "usr/bin", "usr/lib", "opt", "opt/tf", "opt/tf/venv", "opt/tf/venv/bin",
             "opt/tf/lib", "etc", "workspace")


def unusable(root: Path) -> list[str]:
    """The directories of `root` (of TRAVERSED, where present) that a user who owns
    none of them cannot search: a sandbox made from this tree cannot start."""
    bad = []
    for rel in TRAVERSED:
        try:
            st = os.stat(root / rel)
        except FileNotFoundError:
            continue
        except OSError:
            bad.append("/" + rel)
            continue
        if not st.st_mode & 0o001 and st.st_uid != SANDBOX_UID:
            bad.append("/" + rel)
    return bad


def check_usable(root: Path) -> None:
    """Refuse a tree the sandbox user cannot use, naming the path and the fix,
    before anything is graded with it (a grade from it would be a false 0)."""
    bad = unusable(root)
    if bad:
        first = root / bad[0].lstrip("/")
        raise InfraError(f"root filesystem {root} is unusable: the sandbox user cannot search "
                         f"{', '.join(bad)} (fix: chmod o+rx {first}, or rebuild the tree)",
                         retry=False)


def _finish(tmp: Path, final: Path, info: dict) -> Path:
    for rel in MOUNT_POINTS:
        (tmp / rel).mkdir(parents=True, exist_ok=True)
    os.chmod(tmp, 0o755)                 # mkdtemp's 0700, or the copied source's mode
    check_usable(tmp)
    (tmp / META).write_text(json.dumps(info, indent=1, sort_keys=True))
    if final.exists():
        shutil.rmtree(final)
    os.replace(tmp, final)
    return final


def default_base(python: str) -> str | None:
    """Where scripts/make-debian-rootfs.sh puts the Debian tree whose python3 is
    `python` (the path scripts/demo.sh and .ci/run use), if it is there."""
    from taskforge.sandbox.docker.images import DEBIAN_SUITES

    suite = DEBIAN_SUITES.get(python)
    path = Path(f"/var/lib/taskforge/debian-{suite}") if suite else None
    return str(path) if path is not None and (path / "usr/bin/python3").exists() else None


def base_name(python: str) -> str:
    """Named by what builds it: a tree set up by an older BASE_SETUP is another
    base, never taken for this one (as Docker's base image tag hashes the
    Dockerfile)."""
    return f"taskforge/base-rootfs:py{python}-{_sha(BASE_SETUP + LOCALES)[:8]}"


def ensure_base(python: str, source: str | Path | None = None, log=logger.info) -> Path:
    """The set-up base for `python`, from `source` or $TASKFORGE_ROOTFS_BASE (a
    directory with python3 of that version, e.g. from debootstrap)."""
    name = base_name(python)
    if exists(name):
        return path_for(name)
    src = Path(source or os.environ.get(f"TASKFORGE_ROOTFS_BASE_{python.replace('.', '_')}")
               or os.environ.get("TASKFORGE_ROOTFS_BASE") or default_base(python) or "")
    if not str(src) or not (src / "usr/bin/python3").exists():
        raise InfraError(f"no base root filesystem for Python {python}: set TASKFORGE_ROOTFS_BASE "
                         f"to a directory with python3 (scripts/make-debian-rootfs.sh DIR makes one)")
    final = path_for(name)
    final.parent.mkdir(parents=True, exist_ok=True)
    with _build_lock:
        if exists(name):
            return final
        log(f"setting up base root filesystem {final} from {src}")
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=final.parent))
        try:
            _copy(src, tmp)
            _pip_settings(tmp)
            _run_in(tmp, BASE_SETUP, env={"LOCALES": LOCALES, "DEBIAN_FRONTEND": "noninteractive"})
            version = _run_in(tmp, "python3 -c 'import sys; print(\"%d.%d\" % sys.version_info[:2])'")
            if version.strip().splitlines()[-1] != python:
                raise InfraError(f"{src} has Python {version.strip()}, not {python}")
            return _finish(tmp, final, {"name": name, "python": python, "env": ENV})
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise


def prepare_task(req, log=logger.info) -> Path:
    """The environment of a task, built here without Docker from its recorded
    recipe. `req`: a sandbox.base.EnvironmentRequest."""
    recipe = req.recipe_or_fail(": generate it again to grade it without Docker")
    if exists(req.name):
        return path_for(req.name)
    with tempfile.TemporaryDirectory(prefix="tf-envtree-") as tmp:
        tree = req.install_tree(Path(tmp) / "workspace")
        return ensure_env(req.name, recipe, tree, log=log)


def ensure_env(name: str, recipe, workspace: Path, log=logger.info, timeout: float = 1800) -> Path:
    """The environment `name` built from `recipe` (python, script) with
    `workspace` as the project to install. No Docker involved."""
    if exists(name):
        return path_for(name)
    base = ensure_base(recipe.python, log=log)
    final = path_for(name)
    with _build_lock:
        if exists(name):
            return final
        log(f"building environment {name} in {final}")
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=final.parent))
        work = Path(tempfile.mkdtemp(prefix="tf-envroot-")) / "workspace"
        try:
            _copy(base, tmp)
            (tmp / META).unlink()
            shutil.copytree(workspace, work, ignore=shutil.ignore_patterns(".git"), symlinks=True)
            _run_in(tmp, recipe.script, binds=[(work, "/workspace")], timeout=timeout,
                    env={"HOME": "/tmp"})
            # What the install wrote into /workspace (egg-info) stays out: the
            # sandbox mounts the task's own workspace there.
            for child in (tmp / "workspace").iterdir():
                shutil.rmtree(child) if child.is_dir() else child.unlink()
            return _finish(tmp, final, {"name": name, "python": recipe.python, "env": ENV,
                                        "script_sha256": _sha(recipe.script)})
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        finally:
            shutil.rmtree(work.parent, ignore_errors=True)


def _copy(src: Path, dst: Path) -> None:
    """cp -a (reflinks where the filesystem has them): owners, modes, links kept."""
    res = subprocess.run(["cp", "-a", "--reflink=auto", f"{src}/.", str(dst)],
                         capture_output=True, text=True)
    if res.returncode != 0:
        raise InfraError(f"copying {src} failed: {res.stderr.strip()[:200]}")


def _sha(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()
