"""How to install a repository and its test dependencies, without per-repo config.

Reads what the project already declares, in the places projects declare it:
PEP 621 and setup.cfg/setup.py extras under the usual test names, Poetry, PDM
and Hatch dev groups, PEP 735 dependency groups, requirement files, tox and nox
test deps, the pytest plugins its config and tests use, and the Python version
it asks for. Test imports still missing after all that are installed by name
inside the build container. Overrides (taskforge.toml, CLI flags) replace any
part. The result is a shell script run in the build container, and the pytest
options every run uses; `tried` says what was looked at, for error messages.
"""
from __future__ import annotations

import ast
import configparser
import json
import re
import shlex
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import NamedTuple, Protocol, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from taskforge.analysis.pyparse import parse as parse_python
from taskforge.sandbox import RUNTIME

TEST_EXTRAS = ("test", "tests", "testing", "dev", "develop", "development", "all")
TEST_GROUPS = ("test", "tests", "testing", "dev", "develop", "development")
REQ_FILES = ("requirements.txt", "requirements-test.txt", "requirements_test.txt",
             "requirements-tests.txt", "requirements-testing.txt", "test-requirements.txt",
             "test_requirements.txt", "requirements-dev.txt", "requirements/test.txt",
             "requirements/tests.txt", "requirements/testing.txt", "requirements/base.txt",
             "tests/requirements.txt", "test/requirements.txt")
# Tools in dev groups that tests never need: skipped (they are slow to install and
# often pin old versions of everything).
NOT_FOR_TESTS = re.compile(
    r"^(mypy|black|flake8|ruff|pre-commit|nox|tox|sphinx|isort|pylint|twine|build|wheel|bump|"
    r"changelog|codecov|pyright|types-|mkdocs|ipython|ipdb|pdbpp|towncrier|pytest$|pip-tools|"
    r"check-manifest|readme-renderer|docutils|furo|myst|jupyter|notebook|setuptools-scm|"
    r"pytest-(flake8|mypy|black|isort|pylint|ruff|pycodestyle|xdist|cov)$|coverage|autopep8|yapf|"
    r"pydocstyle|bandit|safety|commitizen|gitchangelog|zest|releaser|invoke$|doc8|rstcheck|"
    r"pyupgrade|interrogate|vulture|darglint|flit$|hatch$|pdm$|poetry$|uv$)", re.I)
PYTHONS = ("3.11", "3.12", "3.13", "3.10", "3.9", "3.8")    # preference order
DEFAULT_PYTHON = "3.11"


# Scripts run in the build container (taskforge/sandbox/runtime/, each says why).
STRIP_METADATA = (RUNTIME / "strip_metadata.py").read_text(encoding="utf-8")
REPOINT_INSTALL = (RUNTIME / "repoint_install.py").read_text(encoding="utf-8")
DROP_VENDORING = (RUNTIME / "drop_vendoring.py").read_text(encoding="utf-8")
MISSING_IMPORTS = (RUNTIME / "missing_imports.py").read_text(encoding="utf-8")
PROJECT_SHADOWED = (RUNTIME / "project_shadowed.py").read_text(encoding="utf-8")
PATH_INSTALL = (RUNTIME / "path_install.py").read_text(encoding="utf-8")


class RepoConfig(BaseModel):
    """Overrides for what detection would choose (taskforge.toml or CLI flags)."""
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    python: str | None = None
    install: list[str] | None = None        # shell commands replacing the detected install
    pip: list[str] = Field(default_factory=list)          # extra requirements on top
    test_cmd: str | None = Field(default=None, alias="test-cmd")
    env: dict[str, str] = Field(default_factory=dict)     # for the install and the test runs

    def merged(self, other: "RepoConfig") -> "RepoConfig":
        """`other` wins where it says something."""
        data = self.model_dump()
        for k, v in other.model_dump().items():
            if v not in (None, [], {}):
                data[k] = v
        return RepoConfig(**data)


def load_config(path: Path) -> RepoConfig:
    from taskforge.errors import UserError

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise UserError(f"cannot read {path}: {str(exc).splitlines()[0]}") from None
    data = data.get("taskforge", data)
    if isinstance(data.get("install"), str):
        data["install"] = [data["install"]]
    try:
        return RepoConfig.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise UserError(f"{path}: {'.'.join(map(str, err['loc']))}: {err['msg']}") from None


def find_config(root: Path, repo_arg: str | None = None) -> tuple[RepoConfig, list[str]]:
    """taskforge.toml in the repository, then `<repo dir>.taskforge.toml` beside a
    local repository (for repos you cannot edit); the later one wins."""
    cfg, used = RepoConfig(), []
    places = [root / "taskforge.toml"]
    if repo_arg and Path(repo_arg).exists():
        local = Path(repo_arg).resolve()
        places.append(local.with_name(local.name + ".taskforge.toml"))
    for place in places:
        if place.is_file():
            cfg = cfg.merged(load_config(place))
            used.append(str(place))
    return cfg, used


@dataclass
class InstallPlan:
    installable: bool
    extras: list[str] = field(default_factory=list)
    requirement_files: list[str] = field(default_factory=list)
    requirements: list[str] = field(default_factory=list)   # groups, tox/nox deps, overrides
    plugins: list[str] = field(default_factory=list)        # pytest plugins config/tests need
    tried: list[str] = field(default_factory=list)
    packages: list[str] = field(default_factory=list)      # the repo's top-level packages
    needs_installers: bool = False                         # the repo imports pip/setuptools
    python: str = DEFAULT_PYTHON
    install: list[str] | None = None                       # overriding install commands
    test_files: list[str] = field(default_factory=list)
    local_modules: list[str] = field(default_factory=list)
    test_options: list[str] = field(default_factory=list)  # every pytest run
    test_paths: list[str] = field(default_factory=list)    # whole-suite runs only
    env: dict[str, str] = field(default_factory=dict)
    version: str = "0.0.0"                                 # for setuptools-scm without git
    pytest_pin: str | None = None        # e.g. "pytest<9": the newest fails to collect the suite
    # When the project cannot be built at all: what it declares it needs (its
    # dependencies and the chosen extras'), and the source roots to put on the path.
    declared: list[str] = field(default_factory=list)
    source_roots: list[str] = field(default_factory=lambda: ["."])
    project_name: str = ""

    def script(self) -> str:
        """Shell script for the build container (cwd /workspace, network on)."""
        q = shlex.quote
        lines = ["set -e", "cd /workspace", "pip --version",
                 f"export SETUPTOOLS_SCM_PRETEND_VERSION={q(self.version)}"]
        lines += [f"export {k}={q(v)}" for k, v in sorted(self.env.items())]
        if self.install is not None:
            lines += self.install
        else:
            for req in self.requirement_files:
                lines.append(f"pip install -r {q(req)} || echo 'taskforge: {req} failed'")
            if self.installable:
                target = "." + (f"[{','.join(self.extras)}]" if self.extras else "")
                fallback = f"pip install {q(target)} || pip install ." if self.extras else "pip install ."
                # A built copy when the editable build fails (an optional C extension's
                # setup.py that retries setup() without it), repointed at the tree.
                lines.append(f"pip install -e {q(target)}" + (" || pip install -e ." if self.extras else "")
                             + " || {\necho 'taskforge: the editable install failed; installing a built copy'\n"
                             + "{ { " + fallback + "; } && python - /workspace <<'PY'\n" + REPOINT_INSTALL
                             + "PY\n} || {\n" + self._path_install() + "}\n}")
        for group, what in ((self.requirements, "requirement"), (self.plugins, "plugin")):
            if group:
                each = " ".join(q(r) for r in group)
                lines.append(f"pip install {each} || for r in {each}; do pip install \"$r\" "
                             f"|| echo \"taskforge: {what} $r failed\"; done")
        if self.test_files:
            lines.append("python - " + q(json.dumps(self.test_files)) + " "
                         + q(json.dumps(self.local_modules)) + " <<'PY'\n" + MISSING_IMPORTS + "PY")
        if self.pytest_pin:
            lines.append(f"pip install {q(self.pytest_pin)}")
        # The repository may pin its own pytest: keep the tooling taskforge reads with.
        lines.append('pip install "pytest-cov>=4.1" "coverage>=7.4"')
        if self.project_name and self.install is None and self.installable:
            # After a path install, a requirement that needs the project brought a
            # released copy of it: the tree comes first on the path, but the copy
            # would hand the agent the removed code (zipp: 8 candidates leaked).
            lines.append("if [ -e /tmp/taskforge-path-install ]; then pip uninstall -y "
                         f"{q(self.project_name)} || true; fi")
        if self.install is None and self.installable and self.packages:
            # A requirement that depends on the project put a released copy over the tree.
            check = ("(cd / && python - " + " ".join(q(p) for p in self.packages)
                     + " <<'PY'\n" + PROJECT_SHADOWED + "PY\n)")
            # Checked again after: tests that run a released copy test nothing of the tree.
            lines.append(check + " || {\necho 'taskforge: installing the tree again over the released "
                         "copy'\npip install --no-deps -e . || { pip install --no-deps --force-reinstall . "
                         "&& python - /workspace <<'PY'\n" + REPOINT_INSTALL + "PY\n}\n" + check
                         + " || { echo 'taskforge: a released copy of the project still shadows the "
                         "tree'; exit 1; }\n}")
        lines.append("python - <<'PY'\n" + STRIP_METADATA + "PY")
        if self.packages and not self.needs_installers:
            lines.append("python - " + " ".join(q(p) for p in self.packages)
                         + " <<'PY'\n" + DROP_VENDORING + "PY")
        return "\n".join(lines) + "\n"

    def _path_install(self) -> str:
        """The last resort when no build works: the declared requirements, then
        the source on the path (runtime/path_install.py)."""
        q = shlex.quote
        out = "echo 'taskforge: the project does not build; its requirements go in and its source on the path'\n"
        if self.declared:
            each = " ".join(q(r) for r in self.declared)
            out += (f"pip install {each} || for r in {each}; do pip install \"$r\" "
                    "|| echo \"taskforge: requirement $r failed\"; done\n")
        out += "touch /tmp/taskforge-path-install\n"
        return (out + "python - /workspace " + " ".join(q(r) for r in self.source_roots)
                + " <<'PY'\n" + PATH_INSTALL + "PY\n")

    def describe(self) -> str:
        return "; ".join(self.tried) or "nothing found"


def _toml(root: Path) -> dict:
    path = root / "pyproject.toml"
    if not path.is_file():
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        return {}


def _cfg(root: Path, name: str) -> configparser.ConfigParser | None:
    path = root / name
    if not path.is_file():
        return None
    cfg = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        cfg.read(path, encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError):
        return None
    return cfg


def _declared(data: dict, extras: list[str]) -> list[str]:
    """pyproject.toml's static `dependencies` and those of `extras`, each once
    (what a path install needs when the project cannot be built)."""
    project = data.get("project") or {}
    optional = project.get("optional-dependencies") or {}
    reqs = [*(project.get("dependencies") or []), *(r for e in extras for r in optional.get(e) or [])]
    return list(dict.fromkeys(r for r in reqs if isinstance(r, str) and r.strip()))


def _extras(data: dict, root: Path) -> set[str]:
    extras = set((data.get("project") or {}).get("optional-dependencies") or {})
    extras |= set(((data.get("tool") or {}).get("poetry") or {}).get("extras") or {})
    cfg = _cfg(root, "setup.cfg")
    if cfg is not None and cfg.has_section("options.extras_require"):
        extras |= set(cfg.options("options.extras_require"))
    if (root / "setup.py").is_file():
        text = (root / "setup.py").read_text(encoding="utf-8", errors="replace")
        m = re.search(r"extras_require\s*=\s*\{(.*?)\}", text, re.S)
        if m:
            extras |= set(re.findall(r"['\"]([\w.-]+)['\"]\s*:", m.group(1)))
    return extras


def _poetry_req(name: str, spec) -> str | None:
    """A Poetry dependency as a PEP 508 requirement (path/git ones are skipped)."""
    if name.lower() == "python":
        return None
    extras = ""
    if isinstance(spec, dict):
        if any(k in spec for k in ("path", "git", "url", "file")):
            return None
        extras = f"[{','.join(spec['extras'])}]" if spec.get("extras") else ""
        spec = spec.get("version", "*")
    if isinstance(spec, list):
        return name
    spec = str(spec).strip()
    if spec in ("", "*"):
        return name + extras
    out = []
    for part in spec.split(","):
        part = part.strip()
        if part.startswith("^") or (part.startswith("~") and not part.startswith("~=")):
            out.append(">=" + part.lstrip("^~"))
        elif re.match(r"^\d", part):
            out.append("==" + part)
        else:
            out.append(part)
    return f"{name}{extras}{','.join(out)}"


Found = list[tuple[list[str], str]]          # (requirements, where they were declared)


def _poetry_groups(tool: dict) -> Found:
    poetry = tool.get("poetry") or {}
    found: Found = []
    for g, body in (poetry.get("group") or {}).items():
        if g in TEST_GROUPS and isinstance(body, dict):
            got = [r for n, sp in (body.get("dependencies") or {}).items()
                   if (r := _poetry_req(n, sp))]
            if got:
                found.append((got, f"poetry group {g}"))
    if poetry.get("dev-dependencies"):
        found.append(([r for n, sp in poetry["dev-dependencies"].items() if (r := _poetry_req(n, sp))],
                      "poetry dev-dependencies"))
    return found


def _pdm_groups(tool: dict) -> Found:
    pdm = (tool.get("pdm") or {}).get("dev-dependencies") or {}
    return [([r for r in items if isinstance(r, str) and not r.startswith("-")],
             f"pdm dev-dependencies {g}")
            for g, items in pdm.items() if g in TEST_GROUPS and isinstance(items, list)]


def _hatch_envs(tool: dict) -> Found:
    hatch = ((tool.get("hatch") or {}).get("envs")) or {}
    found: Found = []
    for env in ("default", "test", "tests", "testing", "dev", "hatch-test"):
        body = hatch.get(env) or {}
        for key in ("dependencies", "extra-dependencies"):
            items = [r for r in body.get(key) or [] if isinstance(r, str) and "{" not in r]
            if items:
                found.append((items, f"hatch env {env} {key}"))
    return found


def _dependency_groups(data: dict) -> Found:
    """PEP 735 groups, with include-group followed (once each)."""
    groups = data.get("dependency-groups") or {}

    def group(name: str, seen: set[str]) -> list[str]:
        out = []
        for item in groups.get(name) or []:
            if isinstance(item, str):
                out.append(item)
            elif isinstance(item, dict) and item.get("include-group") not in seen:
                inc = item["include-group"]
                out += group(inc, seen | {inc})
        return out
    return [(group(g, {g}), f"dependency-groups {g}") for g in TEST_GROUPS if g in groups]


def _tests_require(root: Path) -> Found:
    found: Found = []
    cfg = _cfg(root, "setup.cfg")
    if cfg is not None and cfg.has_option("options", "tests_require"):
        found.append(([r.strip() for r in cfg.get("options", "tests_require").splitlines() if r.strip()],
                      "setup.cfg tests_require"))
    if (root / "setup.py").is_file():
        text = (root / "setup.py").read_text(encoding="utf-8", errors="replace")
        m = re.search(r"tests_require\s*=\s*\[(.*?)\]", text, re.S)
        if m:
            found.append((re.findall(r"['\"]([^'\"]+)['\"]", m.group(1)), "setup.py tests_require"))
    return found


def _groups(data: dict, root: Path) -> tuple[list[str], list[str]]:
    """Test requirements declared outside extras: (requirements, where from), in
    the order Poetry, PDM, Hatch, PEP 735 groups, tests_require."""
    tool = data.get("tool") or {}
    reqs: list[str] = []
    where: list[str] = []
    for got, source in (_poetry_groups(tool) + _pdm_groups(tool) + _hatch_envs(tool)
                        + _dependency_groups(data) + _tests_require(root)):
        reqs += got
        where.append(source)
    return reqs, where


class ToxNox(NamedTuple):
    """What tox.ini's [testenv] and noxfile.py's session.install calls install."""
    requirements: list[str]
    requirement_files: list[str]
    extras: list[str]
    where: list[str]


def _tox_dep(line: str) -> str | None:
    """One tox `deps` line as a requirement or `-r<file>`, or None when pip cannot
    take it here (comments, constraints, editables, the project itself, tox
    substitutions). A factor prefix (`py38: old`) is dropped: every env's deps count."""
    line = re.sub(r"^[\w.,!-]+:\s+", "", line.strip())
    if not line or "{" in line or line.startswith(("#", "-c", "-e", ".")):
        return None
    return line


def _tox(root: Path) -> ToxNox:
    """tox.ini [testenv] deps and extras; a `-r` file only when it exists."""
    cfg = _cfg(root, "tox.ini")
    if cfg is None or not cfg.has_section("testenv"):
        return ToxNox([], [], [], [])
    reqs: list[str] = []
    files: list[str] = []
    for line in cfg.get("testenv", "deps", fallback="").splitlines():
        dep = _tox_dep(line)
        if dep is None:
            continue
        if dep.startswith("-r"):
            if (root / dep[2:].strip()).is_file():
                files.append(dep[2:].strip())
            continue
        reqs.append(dep)
    extras = [e.strip() for e in re.split(r"[\s,]+", cfg.get("testenv", "extras", fallback=""))
              if e.strip() and "{" not in e]
    return ToxNox(reqs, files, extras, ["tox.ini [testenv]"])


def _install_calls(tree: ast.Module) -> Iterator[list[str]]:
    """The string arguments of each `<x>.install(...)` call (nox's session.install)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "install":
            yield [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]


def _install_args(args: list[str]) -> tuple[list[str], list[str]]:
    """session.install arguments -> (requirements, `-r` files). Flags, paths and
    the project itself (`.`) are not requirements."""
    reqs: list[str] = []
    files: list[str] = []
    rest = iter(args)
    for a in rest:
        if a == "-r" and (f := next(rest, None)) is not None:
            files.append(f)
        elif not a.startswith(("-", ".")) and "/" not in a:
            reqs.append(a)
    return reqs, files


def _nox(root: Path) -> ToxNox:
    """noxfile.py session.install requirements; a `-r` file only when it exists.
    An unparsable noxfile declares nothing."""
    nox = root / "noxfile.py"
    if not nox.is_file():
        return ToxNox([], [], [], [])
    try:
        tree = parse_python(nox.read_bytes())
    except (SyntaxError, ValueError):
        return ToxNox([], [], [], [])
    reqs: list[str] = []
    files: list[str] = []
    for args in _install_calls(tree):
        got, named = _install_args(args)
        reqs += got
        files += [f for f in named if (root / f).is_file()]
    return ToxNox(reqs, files, [], ["noxfile.py session.install"] if reqs else [])


def _tox_nox(root: Path) -> ToxNox:
    """tox.ini then noxfile.py, joined (nox declares no extras)."""
    tox, nox = _tox(root), _nox(root)
    return ToxNox(tox.requirements + nox.requirements, tox.requirement_files + nox.requirement_files,
                  tox.extras, tox.where + nox.where)


def _requires_python(data: dict, root: Path) -> str | None:
    spec = (data.get("project") or {}).get("requires-python")
    if not spec:
        py = (((data.get("tool") or {}).get("poetry") or {}).get("dependencies") or {}).get("python")
        if isinstance(py, str):
            # None only for the name "python"
            spec = cast(str, _poetry_req("x", py))[1:] if py.strip() not in ("*", "") else None
    cfg = _cfg(root, "setup.cfg")
    if not spec and cfg is not None:
        spec = cfg.get("options", "python_requires", fallback=None)
    if not spec and (root / "setup.py").is_file():
        m = re.search(r"python_requires\s*=\s*['\"]([^'\"]+)['\"]",
                      (root / "setup.py").read_text(encoding="utf-8", errors="replace"))
        spec = m.group(1) if m else None
    return spec


def choose_python(spec: str | None) -> tuple[str, str]:
    """(X.Y, why): the preferred Python that the project's requires-python admits."""
    if not spec:
        return DEFAULT_PYTHON, "no requires-python: default"
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        sset = SpecifierSet(spec)
    except InvalidSpecifier:
        return DEFAULT_PYTHON, f"unreadable requires-python {spec!r}: default"
    for v in PYTHONS:
        if sset.contains(v + ".0", prereleases=True) or sset.contains(v + ".99", prereleases=True):
            return v, f"requires-python {spec}"
    return DEFAULT_PYTHON, f"requires-python {spec} admits no known Python: default"


def _pkg_version(root: Path) -> str:
    info = root / "PKG-INFO"
    if info.is_file():
        m = re.search(r"^Version:\s*(\S+)", info.read_text(encoding="utf-8", errors="replace"), re.M)
        if m:
            return m.group(1)
    return "0.0.0"


INSTALLER_IMPORT = re.compile(r"^\s*(?:import|from)\s+(?:setuptools|pkg_resources|pip|distutils)\b", re.M)


def split_test_cmd(cmd: str, root: Path) -> tuple[list[str], list[str]]:
    """`pytest ARGS` (or `python -m pytest ARGS`) -> (options, paths)."""
    from taskforge.errors import UserError

    try:
        argv = shlex.split(cmd)
    except ValueError as exc:
        raise UserError(f"cannot parse the test command {cmd!r}: {exc}") from None
    if argv[:3] in (["python", "-m", "pytest"], ["python3", "-m", "pytest"]):
        argv = argv[3:]
    elif argv[:1] in (["pytest"], ["py.test"]):
        argv = argv[1:]
    else:
        raise UserError(f"the test command must run pytest (pytest ... or python -m pytest ...): {cmd!r}")
    return split_args(argv, root)


def split_args(argv: list[str], root: Path) -> tuple[list[str], list[str]]:
    """pytest arguments -> (options, paths). A flag that takes a value keeps it
    (`--deselect tests/x.py::t`, `--ignore tests/slow`): a value that names a
    file is not a test path."""
    from taskforge.env.pytestcfg import VALUE_OPTS

    options: list[str] = []
    paths: list[str] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a.startswith("-"):
            takes_value = a in VALUE_OPTS and "=" not in a
            options += argv[i:i + 2] if takes_value else [a]
            i += 2 if takes_value else 1
            continue
        target = a.split("::")[0]
        (paths if target and (root / target).exists() else options).append(a)
        i += 1
    return options, paths


BUILD_FILES = ("pyproject.toml", "setup.py", "setup.cfg")


class Layout(Protocol):
    """The scanned files detection reads (taskforge.repo.layout.RepoLayout, which
    this lower layer cannot import)."""
    packages: list[str]
    source_files: list[str]
    test_files: list[str]
    fallback_tests: list[str]


def _installable(present: set[str], data: dict) -> bool:
    """Whether `pip install .` has something to build, from the build files
    present and pyproject.toml's tables: a pyproject.toml with only tool settings
    (no build system, no project) makes no package; setup.cfg alone still does."""
    if "pyproject.toml" in present and "setup.py" not in present \
            and "build-system" not in data and "project" not in data:
        return "setup.cfg" in present
    return bool(present)


def _test_extras(declared: set[str], tox_extras: list[str]) -> list[str]:
    """The declared extras to install: the usual test names in TEST_EXTRAS' order
    ("all" pulls in everything, often unbuildable), then those tox installs."""
    chosen = [e for e in TEST_EXTRAS if e in declared and e != "all"]
    return chosen + [e for e in tox_extras if e in declared and e not in chosen]


def _test_requirements(declared: list[str], pip: list[str]) -> list[str]:
    """Declared requirements the tests need (not the linters, docs and release
    tools dev groups carry), then the override's extra ones; each once."""
    return list(dict.fromkeys([r for r in declared if not NOT_FOR_TESTS.match(r.strip())] + pip))


def _python_for(spec: str | None, override: str | None) -> tuple[str, str]:
    """(X.Y, why): the override when given, else what requires-python admits."""
    python, why = choose_python(spec)
    return (override, "override") if override else (python, why)


def _fallback_options(fallback: list[str]) -> list[str]:
    """pytest options that also collect the test modules named unlike pytest's
    defaults (`tests.py`) the layout found the suite in."""
    names = sorted({f.rsplit("/", 1)[-1] for f in fallback})
    return ["-o", "python_files=" + " ".join(["test_*.py", "*_test.py", *names])]


def _local_modules(layout: Layout) -> list[str]:
    """Names the tests may import that are the repo's own, so never installed as
    missing: each file's module stem and top-level directory, and each package."""
    files = layout.test_files + layout.source_files
    mods = {PurePosixPath(f).stem for f in files} | {PurePosixPath(f).parts[0] for f in files}
    return sorted(mods | set(layout.packages))


def _imports_installers(root: Path, files: list[str]) -> bool:
    """Whether any file imports pip/setuptools/distutils, which must then stay
    installed (the vendored copies are not dropped)."""
    return any(INSTALLER_IMPORT.search((root / rel).read_text(encoding="utf-8", errors="replace"))
               for rel in files)


def _add_declared(plan: InstallPlan, root: Path, data: dict, pip: list[str]) -> None:
    """The extras, requirement files and requirements the project declares for its tests."""
    found = _extras(data, root)
    reqs, where = _groups(data, root)
    tox = _tox_nox(root)
    plan.extras = _test_extras(found, tox.extras)
    plan.declared = _declared(data, plan.extras)
    name = (data.get("project") or {}).get("name")
    plan.project_name = name if isinstance(name, str) and re.fullmatch(r"[A-Za-z0-9._-]+", name) else ""
    plan.tried.append(f"test extras: {plan.extras or 'none'}")
    files = [r for r in REQ_FILES if (root / r).is_file()]
    plan.requirement_files = list(dict.fromkeys(files + tox.requirement_files))
    plan.tried.append(f"requirement files: {plan.requirement_files or 'none'}")
    plan.requirements = _test_requirements(reqs + tox.requirements, pip)
    plan.tried.append(f"dev groups, tox, nox: {', '.join(where + tox.where) or 'none'}")


def _add_pytest_config(plan: InstallPlan, root: Path) -> dict[str, None]:
    """The options every run needs to honour the project's pytest config; returns
    the plugins that config names, as an ordered set the tests' plugins join."""
    from taskforge.env import pytestcfg

    pcfg = pytestcfg.read(root)
    plan.test_options = pcfg.override_args()
    plugins = dict.fromkeys(sorted(pcfg.plugins))
    plan.tried.append(f"pytest config: {pcfg.source or 'none'}"
                      + (f", dropped {'; '.join(pcfg.dropped)}" if pcfg.dropped else ""))
    return plugins


def _add_python(plan: InstallPlan, root: Path, data: dict, override: str | None) -> None:
    """The Python version to build with."""
    plan.python, why = _python_for(_requires_python(data, root), override)
    plan.tried.append(f"python {plan.python} ({why})")


def _add_layout(plan: InstallPlan, root: Path, layout: Layout, plugins: dict[str, None]) -> None:
    """What only the scanned files show: the packages, whether they need the
    installers, the test modules and local names, and the plugins tests use."""
    plan.packages = list(layout.packages)
    plan.source_roots = _source_roots(root, layout.packages)
    plan.needs_installers = _imports_installers(root, [*layout.source_files, *layout.test_files])
    plan.test_files = list(layout.test_files)
    if layout.fallback_tests:
        plan.test_options += _fallback_options(layout.fallback_tests)
        plan.tried.append("test modules pytest would not collect by default: "
                          f"{', '.join(layout.fallback_tests)}")
    plan.local_modules = _local_modules(layout)
    _add_test_plugins(plan, root, layout.test_files, plugins)


def _source_roots(root: Path, packages: list[str]) -> list[str]:
    """The directories the top-level packages live in (`src`, or the top: "."),
    for a path install."""
    roots = []
    for top in packages:
        name = top.split(".")[0]
        for d in ("src", "."):
            if (root / d / name).is_dir() or (root / d / f"{name}.py").is_file():
                roots.append(d)
                break
    return list(dict.fromkeys(roots)) or ["."]


def _add_test_plugins(plan: InstallPlan, root: Path, test_files: list[str],
                      plugins: dict[str, None]) -> None:
    """Joins to `plugins` those the tests use without declaring them (the repo's
    own fixtures do not count as a plugin's)."""
    from taskforge.env import pytestcfg

    fixtures = _defined_fixtures(root, test_files)
    for dist, ev in pytestcfg.plugins_from_tests(root, test_files, fixtures).items():
        plugins.setdefault(dist, None)
        plan.tried.append(f"plugin {dist} ({ev})")


def _apply_overrides(plan: InstallPlan, root: Path, cfg: RepoConfig) -> None:
    """The install commands, test command and environment the config gives
    (the python and pip overrides are applied where they are decided)."""
    if cfg.install is not None:
        plan.install = list(cfg.install)
        plan.tried.append("install: override")
    if cfg.test_cmd:
        opts, paths = split_test_cmd(cfg.test_cmd, root)
        plan.test_options += opts
        plan.test_paths = paths
        plan.tried.append(f"test command: override {cfg.test_cmd!r}")
    plan.env = dict(cfg.env)


def detect(root: Path, layout=None, config: RepoConfig | None = None) -> InstallPlan:
    """The install plan for `root`, step by step in the order `tried` reports:
    build files, declared test dependencies, pytest config, Python version; then
    what the scanned `layout` shows, when given; `config` overrides last."""
    cfg = config or RepoConfig()
    data = _toml(root)
    installable = _installable({f for f in BUILD_FILES if (root / f).is_file()}, data)
    plan = InstallPlan(installable=installable, version=_pkg_version(root))
    plan.tried.append("pyproject.toml/setup.py/setup.cfg: "
                      + ("installable" if installable else "none installable"))
    _add_declared(plan, root, data, cfg.pip)
    plugins = _add_pytest_config(plan, root)
    _add_python(plan, root, data, cfg.python)
    if layout is not None:
        _add_layout(plan, root, layout, plugins)
    plan.plugins = [p for p in plugins if p]
    _apply_overrides(plan, root, cfg)
    return plan


_REMOVED_IN = re.compile(r"PytestRemovedIn(\d+)Warning")
# pytest's own removals end with a pointer to its deprecation page.
_PYTEST_REMOVAL = re.compile(r"docs\.pytest\.org/en/\w+/deprecations\.html")
# A conftest hook that still takes a py.path argument pytest 9 took away
# (`pytest_collect_file(path, parent)`): pluggy refuses it before collection.
_LEGACY_HOOK_ARG = re.compile(r"Argument\(s\) \{'(?:path|fspath|startdir)'\} are declared in the "
                              r"hookimpl but can not be found in the hookspec")
_WANTS_PYTEST = re.compile(r"""["'\s,\[]pytest\s*(?:>=|==|~=|>)\s*(\d+)""")


def pytest_pin(collect_errors: dict[str, str], root: Path, pytest_version: str = "") -> str | None:
    """A pytest the suite can run when the newest cannot collect it, or None.

    The signs that pytest's own version is to blame: a PytestRemovedIn<N>Warning
    (an error by default in pytest N, or by the project's `filterwarnings =
    error`): pytest<N, or below the running major when that is lower; a removal
    error pointing at pytest's deprecation page (python-dateutil under pytest 9),
    or a hook taking a py.path argument pytest 9 removed (docopt's conftest):
    below the running major (`pytest_version`, as the environment reports it).
    None when nothing points at pytest, or the project's files ask for that
    version or newer (a pin below it would break what the project declares)."""
    text = "\n".join(collect_errors.values())
    running = int(pytest_version.split(".")[0]) if pytest_version[:1].isdigit() else None
    majors = [int(m) for m in _REMOVED_IN.findall(text)]
    if running is not None and (majors or _PYTEST_REMOVAL.search(text)
                                or (running >= 9 and _LEGACY_HOOK_ARG.search(text))):
        majors.append(running)
    if not majors:
        return None
    major = min(majors)
    for name in ("pyproject.toml", "setup.cfg", "setup.py", "tox.ini", *REQ_FILES):
        try:
            declared = (root / name).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if any(int(m) >= major for m in _WANTS_PYTEST.findall(declared)):
            return None
    return f"pytest<{major}"


def _defined_fixtures(root: Path, files: list[str]) -> set[str]:
    names: set[str] = set()
    for rel in files:
        text = (root / rel).read_text(encoding="utf-8", errors="replace")
        if "fixture" not in text:
            continue
        names |= set(re.findall(r"@pytest\.fixture[^\n]*\n(?:\s*@[^\n]*\n)*\s*(?:async\s+)?def\s+(\w+)", text))
    return names
