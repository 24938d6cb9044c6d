"""Where things are in a repository: source modules, test files, test configs.

No configuration: test files are found by pytest's own naming conventions and
by the usual test directories; source modules are the other Python files under
the import roots (the repo root, or src/ for src layouts).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

SKIP_DIRS = {".git", "__pycache__", ".tox", ".nox", ".venv", "venv", "env", "build", "dist",
             "node_modules", ".eggs", ".mypy_cache", ".pytest_cache", ".ruff_cache",
             ".hypothesis", "htmlcov", ".pytype", ".pyre", "site-packages"}
NON_SOURCE_TOP = {"docs", "doc", "examples", "example", "benchmarks", "bench", "scripts",
                  "tools", "ci", ".github", "tasks", "contrib", "asv_bench", "bin", "demo",
                  "demos", "samples", "sample"}
# Directories of test data: Python files there are inputs, not tests or helpers.
TEST_DATA_DIRS = {"testdata", "test_data", "data", "fixtures", "snapshots", "cassettes", "samples",
                  "resources", "input", "inputs", "expected"}
NON_SOURCE_FILES = {"setup.py", "noxfile.py", "fabfile.py", "conftest.py", "tasks.py",
                    "runtests.py", "run_tests.py"}
TEST_DIRS = {"tests", "test", "testing", "unittests", "unit_tests"}
TEST_CONFIGS = ("pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml", "noxfile.py",
                ".pytest.ini", "pytest.toml", ".pytest.toml")


def is_test_data(rel: str) -> bool:
    """A non-test file under a test-data directory inside the tests: an input the
    tests read (sometimes not even valid Python 3), never imported as code."""
    p = PurePosixPath(rel)
    name = p.name
    if name == "conftest.py" or name.startswith("test_") or name.endswith("_test.py"):
        return False
    parts = p.parts[:-1]
    return any(part in TEST_DIRS for part in parts) and any(part in TEST_DATA_DIRS for part in parts)


def is_test_path(rel: str) -> bool:
    """True for anything pytest would treat as test code or test support."""
    p = PurePosixPath(rel)
    name = p.name
    if name == "conftest.py":
        return True
    if name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py")
                                 or name == "tests.py"):
        return True
    return any(part in TEST_DIRS for part in p.parts[:-1])


def is_protected_path(rel: str) -> bool:
    """Files restored from the task's own copy before grading."""
    p = PurePosixPath(rel)
    if p.name == "conftest.py" or (p.suffix == ".py" and is_test_path(rel)):
        return True
    if len(p.parts) == 1 and p.name in TEST_CONFIGS:
        return True
    return any(part in TEST_DIRS for part in p.parts[:-1])


def task_test_roots(shipped: list[str] | set[str], testpaths: list[str] | tuple[str, ...] = ()) -> set[str]:
    """The directories a task's tests live in: those of its shipped test files
    (configs and conftest.py files aside) and its configured testpaths ("" for
    the repository root). A testpath that names a file counts as its directory."""
    roots = set()
    for rel in shipped:
        p = PurePosixPath(rel)
        if p.suffix == ".py" and p.name != "conftest.py" and is_protected_path(rel) \
                and not (len(p.parts) == 1 and p.name in TEST_CONFIGS):
            roots.add(p.parent.as_posix() if len(p.parts) > 1 else "")
    for t in testpaths:
        t = t.strip().removeprefix("./").strip("/")
        if not t or t.startswith("-") or ".." in PurePosixPath(t).parts:
            continue
        roots.add(PurePosixPath(t).parent.as_posix() if t.endswith(".py") else t)
    return {"" if r == "." else r for r in roots}


def in_test_roots(rel: str, roots: set[str]) -> bool:
    """`rel` lies in one of `roots`: under it, or for the repository root, at
    the top level only (the packages beside root-level tests are not tests)."""
    return any(("/" not in rel) if r == "" else rel.startswith(r + "/") for r in roots)


def unshipped_test_file(rel: str, roots: set[str], packages: set[str] | None = None) -> bool:
    """A file the task did not ship that grading removes: a conftest.py anywhere,
    a root test config, or a test file inside the task's test roots. A module
    named like a test inside the import packages (`invariant_test.py`,
    `pkg/testing/`) is the solution's code, not a test. With `packages` (the
    workspace's own package directories), a test file outside them is removed
    wherever it is (a new `tests/test_x.py` beside root-level tests would be
    collected by a whole-suite run)."""
    p = PurePosixPath(rel)
    if p.name == "conftest.py" or (len(p.parts) == 1 and p.name in TEST_CONFIGS):
        return True
    if not is_protected_path(rel):
        return False
    if in_test_roots(rel, roots):
        return True
    return packages is not None and not any(rel.startswith(d + "/") for d in packages)


def package_dirs(workspace: Path) -> set[str]:
    """The workspace's own import package directories (top level or under src/)."""
    out = set()
    for base in (workspace, workspace / "src"):
        try:
            entries = list(base.iterdir())
        except OSError:
            continue
        for d in entries:
            if d.is_dir() and not d.is_symlink() and (d / "__init__.py").is_file() \
                    and d.name not in TEST_DIRS:
                out.add(d.relative_to(workspace).as_posix())
    return out


@dataclass
class RepoLayout:
    root: Path
    source_files: list[str] = field(default_factory=list)   # relative posix paths
    test_files: list[str] = field(default_factory=list)
    protected_files: list[str] = field(default_factory=list)
    import_roots: list[str] = field(default_factory=list)   # "" or "src"
    packages: list[str] = field(default_factory=list)       # top-level package/module names
    # tests.py / test.py collected only because nothing else would be (see
    # fallback_test_modules): runs name them in python_files.
    fallback_tests: list[str] = field(default_factory=list)

    def module_name(self, rel: str) -> str | None:
        """Dotted module name of a source file, or None outside the import roots."""
        p = PurePosixPath(rel)
        for root in sorted(self.import_roots, key=len, reverse=True):
            if root and not rel.startswith(root + "/"):
                continue
            sub = PurePosixPath(rel[len(root) + 1:] if root else rel)
            parts = list(sub.with_suffix("").parts)
            if parts and parts[-1] == "__init__":
                parts.pop()
            return ".".join(parts) if parts else None
        return p.stem

    def source_roots(self) -> list[str]:
        """Repo-relative paths of the top-level packages and modules (for coverage)."""
        out = []
        for name in self.packages:
            for root in self.import_roots:
                base = f"{root}/{name}" if root else name
                if (self.root / base).is_dir() or (self.root / f"{base}.py").is_file():
                    out.append(base if (self.root / base).is_dir() else f"{base}.py")
                    break
        return out


def walk_all(root: Path) -> list[str]:
    """Every regular file under `root` but .git's, as sorted relative posix paths.
    Grading walks this way: a solution can hide files in any directory, the ones
    `walk` skips as build output included."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames:
            p = Path(dirpath) / name
            if p.is_file() and not p.is_symlink():
                out.append(p.relative_to(root).as_posix())
    return sorted(out)


def walk(root: Path) -> list[str]:
    out = []
    stack = [root]
    while stack:
        d = stack.pop()
        for entry in sorted(d.iterdir()):
            if entry.is_symlink():
                continue
            if entry.is_dir():
                if entry.name in SKIP_DIRS or entry.name.endswith(".egg-info"):
                    continue
                stack.append(entry)
            elif entry.is_file():
                out.append(entry.relative_to(root).as_posix())
    return sorted(out)


def configured_test_files(root: Path, files: list[str]) -> set[str]:
    """Python files pytest collects because its config says so, whatever their
    names: a `testpaths` entry that is a file (python-slugify's `test.py`), and
    files matching `python_files` patterns."""
    from fnmatch import fnmatch

    from taskforge.env.pytestcfg import read

    try:
        cfg = read(root)
    except Exception:              # a broken config is reported where it is used
        return set()
    py = [f for f in files if f.endswith(".py")]
    out = {f for f in py if f in {t.strip("./").rstrip("/") for t in cfg.testpaths}}
    patterns = [p for p in cfg.python_files if p not in ("test_*.py", "*_test.py")]
    if patterns:
        roots = [t.strip("./").rstrip("/") for t in cfg.testpaths if (root / t).is_dir()]
        out |= {f for f in py if any(fnmatch(f.rsplit("/", 1)[-1], p) for p in patterns)
                and (not roots or any(f.startswith(r + "/") for r in roots))}
    return out


DEFAULT_TEST_PATTERNS = ("test_*.py", "*_test.py")
FALLBACK_TEST_MODULES = ("tests.py", "test.py")


def fallback_test_modules(files: list[str], python_files: list[str]) -> list[str]:
    """Modules named tests.py or test.py (jsonpointer's tests.py), and modules
    inside a test directory that unittest's discovery pattern `test*.py` finds
    (pytimeparse's tests/testtimeparse.py, a nose-era suite), when pytest's
    default patterns collect nothing and the config names no patterns of its
    own: the project's tests are there, and a run must ask for them by name.
    Outside a test directory only the two names count: a `testing.py` of the
    package is its code, not its tests."""
    from fnmatch import fnmatch

    if python_files:
        return []
    py = [f for f in files if f.endswith(".py") and not is_test_data(f)]
    if any(fnmatch(f.rsplit("/", 1)[-1], pat) for f in py for pat in DEFAULT_TEST_PATTERNS):
        return []

    def found(f: str) -> bool:
        name, parts = f.rsplit("/", 1)[-1], f.split("/")[:-1]
        return name in FALLBACK_TEST_MODULES or (
            fnmatch(name, "test*.py") and any(part in TEST_DIRS for part in parts))

    return sorted(f for f in py if found(f) and f.split("/")[0] not in NON_SOURCE_TOP - {"tests"})


def declared_packages(pyproject: dict) -> list[str] | None:
    """The top-level packages and modules a pyproject says the distribution
    holds (setuptools `packages` / `py-modules` / `packages.find.include`
    patterns, Hatch's wheel `packages`, Poetry's `packages`), as fnmatch
    patterns of a top-level name; None when it does not say. A directory of
    test helpers beside the package (emoji's utils/testutils.py) is then no
    source: its functions are not the library's features."""
    tool = pyproject.get("tool", {}) if isinstance(pyproject, dict) else {}
    out: list[str] = []
    st = tool.get("setuptools", {})
    if isinstance(st, dict):
        pk = st.get("packages")
        if isinstance(pk, list):
            out += [str(x) for x in pk]
        elif isinstance(pk, dict) and isinstance(pk.get("find"), dict):
            inc = pk["find"].get("include")
            if isinstance(inc, list) and inc:
                out += [str(x) for x in inc]
        mods = st.get("py-modules")
        if isinstance(mods, list):
            out += [str(x) for x in mods]
    wheel = tool.get("hatch", {}).get("build", {}).get("targets", {}).get("wheel", {}) \
        if isinstance(tool.get("hatch"), dict) else {}
    if isinstance(wheel, dict) and isinstance(wheel.get("packages"), list):
        out += [str(x).rstrip("/").rsplit("/", 1)[-1] for x in wheel["packages"]]
    poetry = tool.get("poetry", {})
    if isinstance(poetry, dict) and isinstance(poetry.get("packages"), list):
        out += [str(x["include"]) for x in poetry["packages"]
                if isinstance(x, dict) and isinstance(x.get("include"), str)]
    tops = sorted({o.split(".")[0].split("/")[0] for o in out if o and o.split(".")[0]})
    return tops or None


def _declared(root: Path) -> list[str] | None:
    import tomllib

    try:
        return declared_packages(tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8")))
    except (OSError, ValueError, AttributeError):
        return None


def scan(root: Path) -> RepoLayout:
    files = walk(root)
    layout = RepoLayout(root=root)
    layout.import_roots = ["src"] if (root / "src").is_dir() and any(
        f.startswith("src/") and f.endswith(".py") for f in files) else [""]
    if layout.import_roots == ["src"] and any(
            f.endswith("__init__.py") and "/" in f and not f.startswith(("src/", "tests/"))
            and not is_test_path(f) and f.split("/")[0] not in NON_SOURCE_TOP for f in files):
        layout.import_roots.append("")
    named = configured_test_files(root, files)
    from taskforge.env.pytestcfg import read

    try:
        python_files = read(root).python_files
    except Exception:              # a broken config is reported where it is used
        python_files = []
    layout.fallback_tests = fallback_test_modules(files, python_files)
    named |= set(layout.fallback_tests)
    for f in files:
        if is_protected_path(f) or f in named:
            layout.protected_files.append(f)
        if not f.endswith(".py"):
            continue
        if is_test_path(f) or f in named:
            if not is_test_data(f):
                layout.test_files.append(f)
            continue
        top = f.split("/")[0]
        if top in NON_SOURCE_TOP or (("/" not in f) and f in NON_SOURCE_FILES):
            continue
        if layout.import_roots == ["src"] and not f.startswith("src/"):
            continue
        layout.source_files.append(f)
    declared = _declared(root)
    if declared:
        import fnmatch

        def top_of(f: str) -> str:
            mod = layout.module_name(f)
            return mod.split(".")[0] if mod else ""

        kept = [f for f in layout.source_files
                if any(fnmatch.fnmatchcase(top_of(f), pat) for pat in declared)]
        if kept:                       # a declaration that matches nothing is not trusted
            layout.source_files = kept
    pkgs = set()
    for f in layout.source_files:
        mod = layout.module_name(f)
        if mod:
            pkgs.add(mod.split(".")[0])
    layout.packages = sorted(pkgs)
    return layout
