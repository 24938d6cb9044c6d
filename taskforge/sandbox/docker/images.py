"""Sandbox images: the base image (top-level Dockerfile) and one environment
image per repository and commit.

The environment image is made by running the install in a container with the
repository bind-mounted at /workspace and committing that container: the
dependencies land in the image, the repository is installed editable from
/workspace, and its code never enters an image layer (a copy there would let
an agent recover the removed feature).
"""
from __future__ import annotations

import configparser
import hashlib
import io
import json
import logging
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from taskforge.errors import InfraError, UserError
from taskforge.sandbox import RUNTIME
from taskforge.sandbox.docker.engine import docker_errors

logger = logging.getLogger(__name__)

PROJECT_ROOT = Path(__file__).resolve().parents[3]
HOST_CA = "/etc/ssl/certs/ca-certificates.crt"


DEFAULT_PYTHON = "3.11"
# Debian releases whose python3 is a given version (scripts/make-debian-base.sh TAG SUITE).
DEBIAN_SUITES = {"3.11": "bookworm", "3.13": "trixie", "3.9": "bullseye"}


def base_arg(python: str = DEFAULT_PYTHON) -> str:
    """The image the sandbox base is built FROM, for a Python version:
    $TASKFORGE_BASE_IMAGE_3_12 (per version) or $TASKFORGE_BASE_IMAGE (the default
    version), else a locally built Debian base if this host made one (no registry),
    else python:X.Y-slim from a registry."""
    env = os.environ.get("TASKFORGE_BASE_IMAGE_" + python.replace(".", "_"))
    if env:
        return env
    if python == DEFAULT_PYTHON and os.environ.get("TASKFORGE_BASE_IMAGE"):
        return os.environ["TASKFORGE_BASE_IMAGE"]
    suite = DEBIAN_SUITES.get(python)
    if suite:
        try:
            if image_exists(f"taskforge/debian-python:{suite}"):
                return f"taskforge/debian-python:{suite}"
        except InfraError as exc:            # no engine: the registry name, and the build says why
            logger.debug("no local base image for %s: %s", python, exc.message)
    return f"python:{python}-slim"


def _dockerfile() -> Path:
    for cand in (PROJECT_ROOT / "Dockerfile", RUNTIME / "Dockerfile"):
        if cand.is_file():
            return cand
    raise InfraError("the sandbox Dockerfile is missing from this installation")


def base_image_name(base: str | None = None, python: str = DEFAULT_PYTHON) -> str:
    h = hashlib.sha256()
    h.update(_dockerfile().read_bytes())
    h.update((base or base_arg(python)).encode())
    tag = h.hexdigest()[:12]
    return f"taskforge/base:{tag}" if python == DEFAULT_PYTHON else f"taskforge/base:py{python}-{tag}"


def host_pip_conf() -> str | None:
    """The host's pip index settings as a pip.conf for the build (file:// indexes dropped)."""
    keys: dict[str, str] = {}
    try:
        out = subprocess.run(["pip", "config", "list"], capture_output=True, text=True,
                             timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        out = ""
    for line in out.splitlines():
        m = re.match(r"^(?::env:|global|install)\.([\w-]+)='(.*)'$", line.strip())
        if m:
            keys[m.group(1)] = m.group(2)
    for env, key in (("PIP_INDEX_URL", "index-url"), ("PIP_EXTRA_INDEX_URL", "extra-index-url"),
                     ("PIP_TRUSTED_HOST", "trusted-host")):
        if os.environ.get(env):
            keys[key] = os.environ[env]
    cfg = configparser.ConfigParser()
    cfg["global"] = {}
    for key in ("index-url", "extra-index-url", "trusted-host"):
        if key in keys:
            vals = [v for v in keys[key].split() if not v.startswith("file:")]
            if vals:
                cfg["global"][key] = " ".join(vals)
    if Path(HOST_CA).is_file():
        cfg["global"]["cert"] = "/opt/tf/build/ca-bundle.crt"
    if not cfg["global"]:
        return None
    buf = io.StringIO()
    cfg.write(buf)
    return buf.getvalue()


def image_exists(name: str) -> bool:
    import docker.errors

    from taskforge.sandbox.docker.engine import client

    try:
        client().images.get(name)
        return True
    except docker.errors.ImageNotFound:
        return False


def ensure_base_image(base: str | None = None, log=logger.info, python: str = DEFAULT_PYTHON) -> str:
    """Build the base image unless it exists; returns its name."""
    name = base_image_name(base, python)
    if image_exists(name):
        return name
    base = base or base_arg(python)
    log(f"building sandbox base image {name} from {base}")
    with tempfile.TemporaryDirectory(prefix="tf-ctx-") as ctx:
        ctxp = Path(ctx)
        shutil.copy(_dockerfile(), ctxp / "Dockerfile")
        conf = host_pip_conf()
        if conf:
            (ctxp / "pip.conf").write_text(conf)
        if Path(HOST_CA).is_file():
            shutil.copy(HOST_CA, ctxp / "ca-bundle.crt")
        import docker.errors

        from taskforge.sandbox.docker.engine import client

        try:
            client().images.build(path=ctx, tag=name, buildargs={"BASE": base},
                                  network_mode="host", rm=True, forcerm=True, pull=False)
        except docker.errors.BuildError as exc:
            tail = " | ".join(str(x.get("stream", x.get("error", ""))).strip()
                              for x in list(exc.build_log)[-4:])
            hint = ""
            if "pull access denied" in tail or "not found" in tail or "manifest" in tail:
                suite = DEBIAN_SUITES.get(python)
                hint = (f"; without a registry, build a local base: scripts/make-debian-base.sh "
                        f"taskforge/debian-python:{suite} {suite}" if suite else
                        f"; set TASKFORGE_BASE_IMAGE_{python.replace('.', '_')} to an image with "
                        f"Python {python}")
            raise InfraError(f"building the base image from {base} failed: {tail[:200]}{hint}") from None
        except docker.errors.APIError as exc:
            raise InfraError(f"building the base image from {base} failed: {exc.explanation}") from None
    return name


def env_image_name(repo_name: str, commit: str, base_image: str, script: str = "") -> str:
    slug = re.sub(r"[^a-z0-9_.-]+", "-", repo_name.lower()).strip("-.") or "repo"
    recipe = hashlib.sha256(f"{base_image}\0{script}".encode()).hexdigest()[:8]
    return f"taskforge/env-{slug}:{commit[:12]}-{recipe}"


GENERIC = ("subprocess-exited-with-error", "finished with status", "Failed building", "Failed to build",
           "Could not build wheels", "metadata-generation-failed", "originates from a subprocess",
           "did not run successfully", "see above for output", "exit code:", "note:", "hint:")


def install_error(logs: str) -> str:
    """The line of a failed install that says why (pip buries it among generic ones)."""
    lines = [ln.strip(" |×╰─>") for ln in logs.splitlines() if ln.strip()]
    specific = [ln for ln in lines if re.search(r"\b(error|Error|ERROR)\b", ln)
                and not any(g in ln for g in GENERIC)]
    if specific:
        return specific[0]
    return next((ln for ln in reversed(lines) if "error" in ln.lower()), lines[-1] if lines else "no output")


GENERATED_LABEL = "taskforge.generated"
_BUILD_DIRS = {".git", "__pycache__", ".eggs", "build", "dist", ".tox", ".nox", ".venv",
               "node_modules", ".pytest_cache", ".mypy_cache"}
MAX_GENERATED = 20
MAX_GENERATED_BYTES = 64 * 1024


def generated_by_install(tree: Path, work: Path) -> dict[str, str]:
    """Python files the install wrote into its copy of the repository that the
    repository does not have: a version file from setuptools-scm, hatch-vcs or
    versioneer (`pkg/_version.py`, git-ignored, so absent from any clone). Every
    tree that runs tests needs them; egg-info and build output are not code."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(work):
        dirnames[:] = sorted(d for d in dirnames if d not in _BUILD_DIRS
                             and not d.endswith((".egg-info", ".dist-info")))
        for f in sorted(filenames):
            p = Path(dirpath) / f
            rel = p.relative_to(work).as_posix()
            if not f.endswith(".py") or p.is_symlink() or (tree / rel).exists():
                continue
            try:
                if p.stat().st_size > MAX_GENERATED_BYTES:
                    continue
                out[rel] = p.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if len(out) >= MAX_GENERATED:
                return out
    return out


def generated_files(image: str) -> dict[str, str]:
    """The files `generated_by_install` recorded on an environment image."""
    from taskforge.sandbox.docker.engine import client

    try:
        labels = client().images.get(image).labels or {}
        files = json.loads(labels.get(GENERATED_LABEL) or "{}")
    except Exception:
        return {}
    return {rel: text for rel, text in files.items() if isinstance(text, str)
            and not rel.startswith("/") and ".." not in Path(rel).parts}


def prepare_task_image(req, log=logger.info) -> str:
    """A task's environment image in this host's engine, built from the recipe
    the task records (for a node whose engine never saw generation), under the
    name the task carries. `req`: a sandbox.base.EnvironmentRequest."""
    if image_exists(req.name):
        return req.name
    recipe = req.recipe_or_fail(" and its image is not in this engine")
    base = ensure_base_image(log=log, python=recipe.python)
    with tempfile.TemporaryDirectory(prefix="tf-envtree-") as tmp:
        tree = req.install_tree(Path(tmp) / "workspace")
        ensure_env_image(tree, req.repo, req.commit, base, recipe.script, log=log, name=req.name)
    return req.name


def ensure_env_image(tree: Path, repo_name: str, commit: str, base_image: str,
                     script: str, timeout: float = 1800, log=logger.info,
                     name: str | None = None) -> tuple[str, float]:
    """Build (or reuse) the environment image; returns (name, seconds spent)."""
    name = name or env_image_name(repo_name, commit, base_image, script)
    if image_exists(name):
        return name, 0.0
    import docker.errors

    from taskforge.sandbox.docker.engine import LABEL, client
    from taskforge.sandbox.owner import owner_token

    log(f"building environment image {name}")
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="tf-envbuild-") as tmp:
        work = Path(tmp) / "workspace"
        shutil.copytree(tree, work, ignore=shutil.ignore_patterns(".git"), symlinks=True)
        container = None
        try:
            container = client().containers.create(
                base_image, command=["sh", "-c", script], user="0", working_dir="/workspace",
                network_mode="host", labels={LABEL: "1", "taskforge.role": "env-build",
                        "taskforge.owner": owner_token()},
                volumes={str(work): {"bind": "/workspace", "mode": "rw"}},
                environment={"PIP_NO_CACHE_DIR": "1", "HOME": "/tmp"})
            container.start()
            try:
                status = container.wait(timeout=timeout)
            except Exception:
                raise InfraError(f"installing the repository timed out after {timeout:.0f}s") from None
            logs = container.logs().decode("utf-8", "replace")
            if status.get("StatusCode") != 0:
                err = install_error(logs)
                raise UserError(f"installing the repository failed: {err.strip()[:300]}")
            generated = generated_by_install(tree, work)
            container.commit(repository=name.split(":")[0], tag=name.split(":")[1],
                             conf={"User": "1000:1000", "WorkingDir": "/workspace",
                                   "Cmd": ["sleep", "infinity"],
                                   "Labels": {"taskforge.repo": repo_name,
                                              "taskforge.commit": commit,
                                              GENERATED_LABEL: json.dumps(generated)}})
        except docker.errors.DockerException as exc:
            raise InfraError(f"building the environment image failed: {str(exc)[:200]}") from None
        finally:
            if container is not None:
                try:
                    container.remove(force=True, v=True)
                except docker_errors() as exc:   # already gone; cleanup reaps the rest
                    logger.debug("removing build container: %s", exc)
            # The install wrote egg-info etc. as root into the copy: make it removable.
            subprocess.run(["chmod", "-R", "u+rwX", str(work)], capture_output=True)
    return name, time.monotonic() - t0
