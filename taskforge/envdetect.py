"""How to install a repository and its test dependencies, without per-repo config.

Reads the packaging metadata the project already has: PEP 621 optional
dependencies (and setup.cfg extras) under the usual test names, and test
requirement files. The result is a shell script run inside the build container.
"""
from __future__ import annotations

import configparser
import re
import shlex
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

TEST_EXTRAS = ("test", "tests", "testing", "dev")
REQ_FILES = ("requirements.txt", "requirements-test.txt", "requirements_test.txt",
             "requirements-tests.txt", "requirements-testing.txt", "test-requirements.txt",
             "test_requirements.txt", "requirements-dev.txt", "requirements/test.txt",
             "requirements/tests.txt", "requirements/testing.txt", "tests/requirements.txt")


# The editable install's METADATA carries the README as its long description: a
# README with code in it would put removed code into the image. Keep the headers.
STRIP_METADATA = """\
import json, pathlib, site, sys
for sp in site.getsitepackages():
    for dist in pathlib.Path(sp).glob("*.dist-info"):
        url = dist / "direct_url.json"
        try:
            editable = json.loads(url.read_text()).get("dir_info", {}).get("editable")
        except (OSError, ValueError):
            continue
        meta = dist / "METADATA"
        if editable and meta.is_file():
            head = meta.read_text(encoding="utf-8", errors="replace").split("\\n\\n", 1)[0]
            keep = [ln for ln in head.splitlines() if not ln.startswith("Description:")]
            meta.write_text("\\n".join(keep) + "\\n", encoding="utf-8")
            print("taskforge: stripped the long description from", meta)
"""


# pip and setuptools vendor popular libraries (more-itertools, packaging, ...). A
# vendored copy of the repository in the image would hand the agent the removed
# code, so the installer that vendors it goes, when the repository never imports it.
DROP_VENDORING = """\
import pathlib, subprocess, sys, sysconfig
site = pathlib.Path(sysconfig.get_paths()["purelib"])
vendors = {"setuptools": ["setuptools/_vendor", "pkg_resources/_vendor"], "pip": ["pip/_vendor"]}
for dist, dirs in vendors.items():
    if any((site / d / p).exists() or (site / d / (p + ".py")).exists()
           for d in dirs for p in sys.argv[1:]):
        print("taskforge: removing", dist, "which vendors a copy of this repository")
        subprocess.call([sys.executable, "-m", "pip", "uninstall", "-y", "-q", dist])
"""


@dataclass
class InstallPlan:
    installable: bool
    extras: list[str] = field(default_factory=list)
    requirement_files: list[str] = field(default_factory=list)
    tried: list[str] = field(default_factory=list)
    packages: list[str] = field(default_factory=list)      # the repo's top-level packages
    needs_installers: bool = False                         # the repo imports pip/setuptools

    def script(self) -> str:
        """Shell script for the build container (cwd /workspace, network on)."""
        lines = ["set -e", "cd /workspace", "pip --version"]
        for req in self.requirement_files:
            lines.append(f"pip install -r {shlex.quote(req)} || echo 'taskforge: {req} failed'")
        if self.installable:
            target = "." + (f"[{','.join(self.extras)}]" if self.extras else "")
            lines.append(f"pip install -e {shlex.quote(target)}")
        # The repository may pin its own pytest: keep the tooling taskforge reads with.
        lines.append('pip install "pytest-cov>=4.1" "coverage>=7.4"')
        lines.append("python - <<'PY'\n" + STRIP_METADATA + "PY")
        if self.packages and not self.needs_installers:
            lines.append("python - " + " ".join(shlex.quote(p) for p in self.packages)
                         + " <<'PY'\n" + DROP_VENDORING + "PY")
        return "\n".join(lines) + "\n"

    def describe(self) -> str:
        return "; ".join(self.tried) or "nothing found"


def _pyproject_extras(root: Path) -> set[str]:
    path = root / "pyproject.toml"
    if not path.is_file():
        return set()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        return set()
    extras = set((data.get("project") or {}).get("optional-dependencies") or {})
    poetry = ((data.get("tool") or {}).get("poetry") or {})
    extras |= set(poetry.get("extras") or {})
    return extras


def _setup_cfg_extras(root: Path) -> set[str]:
    path = root / "setup.cfg"
    if not path.is_file():
        return set()
    cfg = configparser.ConfigParser(interpolation=None)
    try:
        cfg.read(path, encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError):
        return set()
    if cfg.has_section("options.extras_require"):
        return set(cfg.options("options.extras_require"))
    return set()


def _setup_py_extras(root: Path) -> set[str]:
    path = root / "setup.py"
    if not path.is_file():
        return set()
    text = path.read_text(encoding="utf-8", errors="replace")
    m = re.search(r"extras_require\s*=\s*\{(.*?)\}", text, re.S)
    return set(re.findall(r"['\"]([\w.-]+)['\"]\s*:", m.group(1))) if m else set()


INSTALLER_IMPORT = re.compile(r"^\s*(?:import|from)\s+(?:setuptools|pkg_resources|pip|distutils)\b", re.M)


def detect(root: Path, layout=None) -> InstallPlan:
    installable = any((root / f).is_file() for f in ("pyproject.toml", "setup.py", "setup.cfg"))
    if (root / "pyproject.toml").is_file() and not (root / "setup.py").is_file():
        try:
            data = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError):
            data = {}
        # A pyproject with only tool settings (no build system, no project) is not installable.
        if "build-system" not in data and "project" not in data:
            installable = False
    plan = InstallPlan(installable=installable)
    plan.tried.append("pyproject.toml/setup.py/setup.cfg: "
                      + ("installable" if installable else "none installable"))
    found = _pyproject_extras(root) | _setup_cfg_extras(root) | _setup_py_extras(root)
    plan.extras = [e for e in TEST_EXTRAS if e in found]
    plan.tried.append(f"test extras: {plan.extras or 'none'}")
    plan.requirement_files = [r for r in REQ_FILES if (root / r).is_file()]
    plan.tried.append(f"requirement files: {plan.requirement_files or 'none'}")
    if layout is not None:
        plan.packages = list(layout.packages)
        plan.needs_installers = any(
            INSTALLER_IMPORT.search((root / rel).read_text(encoding="utf-8", errors="replace"))
            for rel in [*layout.source_files, *layout.test_files])
    return plan
