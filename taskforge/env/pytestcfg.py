"""Read a project's pytest configuration the way pytest would, and turn it into
what taskforge needs: the plugins to install, and the options it can honour.

pytest reads its own config inside the sandbox; taskforge only overrides
`addopts` (with `-o addopts=...`) to drop what would break its runs: coverage
flags (taskforge measures coverage itself), parallelism (`-n`), stop-early flags,
flags of lint-only plugins, and cache-provider flags (the cache is off).
"""
from __future__ import annotations

import configparser
import re
import shlex
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from taskforge.analysis.pyparse import parse as parse_python

# Options that take a value as the next argument (when not given as --opt=value).
VALUE_OPTS = {"-n", "--numprocesses", "--dist", "--maxprocesses", "--cov", "--cov-report",
              "--cov-config", "--cov-fail-under", "--cov-context", "--junitxml", "--junit-xml",
              "--html", "--timeout", "--timeout-method", "--maxfail", "--reruns",
              "--reruns-delay", "--asyncio-mode", "-p", "-k", "-m", "-W", "--tb", "-r",
              "--ignore", "--ignore-glob", "--deselect", "--import-mode", "--rootdir",
              "--basetemp", "--confcutdir", "--log-level", "--log-cli-level", "--color",
              "--capture", "--durations", "--doctest-glob", "--hypothesis-profile",
              "--hypothesis-seed", "-c", "--randomly-seed", "--benchmark-columns",
              "--benchmark-sort", "--benchmark-group-by", "--benchmark-min-rounds",
              "--result-log", "--report-log", "--json-report-file", "--snapshot-update"}
# Flag prefixes dropped from addopts, and why.
DROP_PREFIXES = {
    "--cov": "taskforge measures coverage itself", "--no-cov": "coverage is taskforge's",
    "-n": "no parallel workers in a sandbox run", "--numprocesses": "no parallel workers",
    "--dist": "no parallel workers", "--maxprocesses": "no parallel workers",
    "-x": "every test must run", "--exitfirst": "every test must run",
    "--maxfail": "every test must run", "--sw": "the cache is off", "--stepwise": "the cache is off",
    "--lf": "the cache is off", "--last-failed": "the cache is off", "--ff": "the cache is off",
    "--failed-first": "the cache is off", "--nf": "the cache is off", "--cache-clear": "the cache is off",
    "--junitxml": "no report files", "--junit-xml": "no report files", "--html": "no report files",
    "--self-contained-html": "no report files", "--result-log": "no report files",
    "--report-log": "no report files", "--json-report": "no report files",
    "--flake8": "lint, not tests", "--pycodestyle": "lint, not tests", "--mypy": "lint, not tests",
    "--black": "lint, not tests", "--isort": "lint, not tests", "--pylint": "lint, not tests",
    "--ruff": "lint, not tests", "--pep8": "lint, not tests", "--codestyle": "lint, not tests",
    "--pydocstyle": "lint, not tests", "--benchmark-autosave": "no report files",
    "--looponfail": "interactive", "--pdb": "interactive",
    "--basetemp": "the sandbox decides temp dirs", "--rootdir": "the sandbox decides the root",
    "--reruns": "every test runs once (a graded run refuses rerun reports)",
    "--only-rerun": "every test runs once", "--rerun-except": "every test runs once",
}
LINT_PLUGINS = {"flake8", "pytest_flake8", "pycodestyle", "pytest_pycodestyle", "mypy",
                "pytest_mypy", "black", "pytest_black", "isort", "pytest_isort", "pylint",
                "pytest_pylint", "ruff", "pytest_ruff", "pep8", "pytest_pep8", "codestyle",
                "pytest_codestyle", "pydocstyle", "pytest_pydocstyle"}
# Flag prefix -> the distribution that provides it.
FLAG_PLUGINS = {"--timeout": "pytest-timeout", "--asyncio-mode": "pytest-asyncio",
                "--benchmark": "pytest-benchmark", "--reruns": "pytest-rerunfailures",
                "--doctest-rst": "pytest-doctestplus", "--doctest-plus": "pytest-doctestplus",
                "--remote-data": "pytest-remotedata", "--hypothesis": "hypothesis",
                "--randomly": "pytest-randomly", "--mpl": "pytest-mpl", "--snapshot": "syrupy",
                "--doctest-ufunc": "pytest-doctestplus", "--ds": "pytest-django",
                "--env": "pytest-env", "--forked": "pytest-forked", "--mock": "pytest-mock",
                "--freezer": "pytest-freezer", "--subtests": "pytest-subtests"}
# ini key -> distribution.
INI_PLUGINS = {"asyncio_mode": "pytest-asyncio", "asyncio_default_fixture_loop_scope":
               "pytest-asyncio", "timeout": "pytest-timeout", "timeout_method": "pytest-timeout",
               "env": "pytest-env", "mock_use_standalone_module": "pytest-mock",
               "doctest_plus": "pytest-doctestplus", "doctest_rst": "pytest-doctestplus",
               "mpl-results-path": "pytest-mpl", "DJANGO_SETTINGS_MODULE": "pytest-django",
               "trio_mode": "pytest-trio", "anyio_mode": "anyio", "rerun_except": "pytest-rerunfailures"}
# Plugin module (pytest_plugins / -p) -> distribution.
MODULE_PLUGINS = {"pytest_asyncio": "pytest-asyncio", "pytest_mock": "pytest-mock",
                  "pytest_timeout": "pytest-timeout", "pytest_benchmark": "pytest-benchmark",
                  "pytest_httpserver": "pytest-httpserver", "pytest_localserver": "pytest-localserver",
                  "anyio": "anyio", "trio": "trio", "pytest_trio": "pytest-trio",
                  "pytest_subtests": "pytest-subtests", "hypothesis": "hypothesis",
                  "xdist": "pytest-xdist", "pytest_lazyfixture": "pytest-lazy-fixture",
                  "pytest_cases": "pytest-cases", "syrupy": "syrupy", "freezegun": "freezegun",
                  "pytest_freezer": "pytest-freezer", "time_machine": "time-machine",
                  "pytest_doctestplus": "pytest-doctestplus", "pytester": None}
# Fixtures that plugins provide -> distribution (used only when the repo defines no such fixture).
FIXTURE_PLUGINS = {"mocker": "pytest-mock", "class_mocker": "pytest-mock",
                   "module_mocker": "pytest-mock", "benchmark": "pytest-benchmark",
                   "httpserver": "pytest-httpserver", "freezer": "pytest-freezer",
                   "time_machine": "time-machine", "requests_mock": "requests-mock",
                   "subtests": "pytest-subtests", "snapshot": "syrupy",
                   "event_loop": "pytest-asyncio", "datadir": "pytest-datadir",
                   "shared_datadir": "pytest-datadir", "lazy_fixture": "pytest-lazy-fixture",
                   "aiohttp_client": "pytest-aiohttp", "respx_mock": "respx",
                   "fs": "pyfakefs", "caplog": None, "capsys": None}
MARK_PLUGINS = {"asyncio": "pytest-asyncio", "timeout": "pytest-timeout",
                "benchmark": "pytest-benchmark", "flaky": "pytest-rerunfailures",
                "trio": "pytest-trio", "anyio": "anyio", "freeze_time": "pytest-freezer",
                "httpserver": "pytest-httpserver", "lazy_fixture": "pytest-lazy-fixture"}


@dataclass
class PytestConfig:
    source: str | None = None               # which file held it
    ini: dict[str, str] = field(default_factory=dict)
    addopts: list[str] = field(default_factory=list)
    kept_addopts: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)      # "flag (why)"
    plugins: set[str] = field(default_factory=set)        # distributions to install
    testpaths: list[str] = field(default_factory=list)
    python_files: list[str] = field(default_factory=list)

    def override_args(self) -> list[str]:
        """Arguments for every run: addopts without what taskforge cannot honour."""
        out: list[str] = []
        if self.dropped:
            out += ["-o", "addopts=" + shlex.join(self.kept_addopts)]
        if "required_plugins" in self.ini:
            out += ["-o", "required_plugins="]     # lint plugins it names are not loaded
        return out


def _ini_sections(path: Path, sections: tuple[str, ...]) -> dict[str, str] | None:
    cfg = configparser.ConfigParser(interpolation=None)
    try:
        cfg.read(path, encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError):
        return None
    for sec in sections:
        if cfg.has_section(sec):
            return dict(cfg.items(sec))
    return None


def ini_values(table: dict) -> dict[str, str]:
    """A TOML table of pytest settings as INI-style strings: lists of arguments
    joined as a shell would split them, other lists one item a line, booleans
    as pytest's ini parser spells them. (pytest 9's native `[tool.pytest]` and
    `pytest.toml` hold real TOML types; `[tool.pytest.ini_options]` mostly strings.)"""
    out = {}
    for k, v in table.items():
        if isinstance(v, dict):
            continue                     # a sub-table (ini_options itself), not a setting
        if isinstance(v, list):
            out[k] = shlex.join(map(str, v)) if k == "addopts" else "\n".join(map(str, v))
        elif isinstance(v, bool):
            out[k] = "true" if v else "false"
        else:
            out[k] = str(v)
    return out


def _toml(path: Path) -> dict | None:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError):
        return None


def _toml_ini(path: Path) -> dict[str, str] | None:
    """pyproject.toml: `[tool.pytest.ini_options]`, else pytest 9's native `[tool.pytest]`."""
    data = _toml(path)
    pytest_table = ((data or {}).get("tool") or {}).get("pytest")
    if not isinstance(pytest_table, dict):
        return None
    opts = pytest_table.get("ini_options")
    if isinstance(opts, dict):
        return ini_values(opts)
    native = {k: v for k, v in pytest_table.items() if k != "ini_options"}
    return ini_values(native) if native else None


def find_ini(root: Path) -> tuple[str | None, dict[str, str]]:
    """pytest's own order (9.0): pytest.toml, .pytest.toml, pytest.ini, .pytest.ini,
    pyproject.toml, tox.ini, setup.cfg; the first one found wins, even empty."""
    for name in ("pytest.toml", ".pytest.toml"):
        if (root / name).is_file():
            table = ((_toml(root / name) or {}).get("pytest"))
            return name, ini_values(table) if isinstance(table, dict) else {}
    for name in ("pytest.ini", ".pytest.ini"):
        if (root / name).is_file():
            got = _ini_sections(root / name, ("pytest",))
            return name, got or {}
    if (root / "pyproject.toml").is_file():
        got = _toml_ini(root / "pyproject.toml")
        if got is not None:
            return "pyproject.toml", got
    if (root / "tox.ini").is_file():
        got = _ini_sections(root / "tox.ini", ("pytest",))
        if got is not None:
            return "tox.ini", got
    if (root / "setup.cfg").is_file():
        got = _ini_sections(root / "setup.cfg", ("tool:pytest",))
        if got is not None:
            return "setup.cfg", got
    return None, {}


def split_addopts(args: list[str]) -> tuple[list[str], list[str], set[str]]:
    """(kept, dropped with reasons, plugin distributions the kept flags need)."""
    kept: list[str] = []
    dropped: list[str] = []
    plugins: set[str] = set()
    i = 0
    while i < len(args):
        a = args[i]
        name = a.split("=", 1)[0]
        takes_value = name in VALUE_OPTS and "=" not in a and not (
            name in ("-n", "-p", "-k", "-m", "-W", "-r", "-c") and len(a) > 2)
        group = [a] + ([args[i + 1]] if takes_value and i + 1 < len(args) else [])
        i += len(group)
        key = name if name.startswith("--") else name[:2]
        reason = DROP_PREFIXES.get(key) or (DROP_PREFIXES["--cov"] if key.startswith("--cov") else None)
        if name == "-p" or name.startswith("-p"):
            mod = group[-1][2:] if len(group) == 1 else group[-1]
            mod = mod.strip()
            if mod.startswith("no:"):
                kept += group
                continue
            if mod in LINT_PLUGINS or mod == "xdist":
                dropped.append(f"{' '.join(group)} (lint or parallel plugin)")
                continue
            dist = MODULE_PLUGINS.get(mod, mod.replace("_", "-") if mod.startswith("pytest_") else None)
            if dist:
                plugins.add(dist)
            kept += group
            continue
        if reason:
            dropped.append(f"{' '.join(group)} ({reason})")
            continue
        for pre, dist in FLAG_PLUGINS.items():
            if name.startswith(pre):
                plugins.add(dist)
        kept += group
    return kept, dropped, plugins


def read(root: Path) -> PytestConfig:
    source, ini = find_ini(root)
    cfg = PytestConfig(source=source, ini=ini)
    try:
        cfg.addopts = shlex.split(ini.get("addopts", ""), comments=False)
    except ValueError:
        cfg.addopts = ini.get("addopts", "").split()
    cfg.kept_addopts, cfg.dropped, cfg.plugins = split_addopts(cfg.addopts)
    for key, dist in INI_PLUGINS.items():
        if key in ini:
            cfg.plugins.add(dist)
    for req in re.split(r"[\s,]+", ini.get("required_plugins", "")):
        name = re.split(r"[<>=!~ ]", req, maxsplit=1)[0].strip()
        if name and name.replace("-", "_") not in LINT_PLUGINS and not any(
                lint in name for lint in ("flake8", "mypy", "pylint", "black", "isort", "ruff",
                                          "codestyle")):
            cfg.plugins.add(req.strip())
    cfg.testpaths = ini.get("testpaths", "").split()
    cfg.python_files = ini.get("python_files", "").split()
    return cfg




def plugins_from_tests(root: Path, test_files: list[str], defined_fixtures: set[str]) -> dict[str, str]:
    """Distributions the tests use without declaring: conftest `pytest_plugins`,
    plugin fixtures they request, plugin marks. {distribution: evidence}.
    Only explicit evidence counts: an `async def` test alone may well be run by
    the project's own conftest, and an unasked-for plugin can break a suite."""
    import ast

    found: dict[str, str] = {}
    for rel in test_files:
        try:
            tree = parse_python((root / rel).read_bytes())
        except (SyntaxError, ValueError, OSError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id == "pytest_plugins" for t in node.targets):
                vals = node.value.elts if isinstance(node.value, (ast.List, ast.Tuple)) else [node.value]
                for v in vals:
                    if isinstance(v, ast.Constant) and isinstance(v.value, str):
                        mod = v.value.split(".")[0]
                        dist = MODULE_PLUGINS.get(mod)
                        if dist:
                            found.setdefault(dist, f"{rel}: pytest_plugins {v.value}")
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if node.name.startswith("test") or any(
                        _decorator_name(d).endswith("fixture") for d in node.decorator_list):
                    for arg in node.args.args:
                        dist = FIXTURE_PLUGINS.get(arg.arg)
                        if dist and arg.arg not in defined_fixtures:
                            found.setdefault(dist, f"{rel}: fixture {arg.arg}")
                for d in node.decorator_list:
                    name = _decorator_name(d)
                    if name.startswith("pytest.mark."):
                        dist = MARK_PLUGINS.get(name.split(".")[2])
                        if dist:
                            found.setdefault(dist, f"{rel}: @{name}")
    return found


def _decorator_name(d) -> str:
    import ast

    if isinstance(d, ast.Call):
        d = d.func
    parts = []
    while isinstance(d, ast.Attribute):
        parts.append(d.attr)
        d = d.value
    if isinstance(d, ast.Name):
        parts.append(d.id)
    return ".".join(reversed(parts))

RERUN_OPTS = ("--reruns", "--reruns-delay", "--only-rerun", "--rerun-except")


def without_reruns(options: list[str]) -> list[str]:
    """Test options with pytest-rerunfailures' flags (and their values) left out."""
    out, skip = [], False
    for o in options:
        if skip:
            skip = False
        elif o in RERUN_OPTS:
            skip = True
        elif not o.startswith(tuple(f"{r}=" for r in RERUN_OPTS)):
            out.append(o)
    return out
