"""Environment detection without per-repo configuration, and its overrides.

The first tests read real project files written to disk (no engine needed);
the last ones run generate for real on repositories that only work when
detection (or an override) does its job."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from taskforge.env.detect import RepoConfig, choose_python, detect, find_config, split_test_cmd
from taskforge.env.pytestcfg import read as read_pytest_config
from taskforge.errors import UserError
from taskforge.repo.layout import scan
from tests.conftest import make_git_repo
from tests.test_bad_input import assert_one_line_error, run_cli


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


PKG = {"pkg/__init__.py": "def f():\n    return 1\n",
       "tests/test_f.py": "from pkg import f\n\ndef test_f():\n    assert f() == 1\n"}


def test_poetry_groups_and_python(tmp_path):
    root = write(tmp_path, {**PKG, "pyproject.toml": """
[build-system]
requires = ["poetry-core"]
build-backend = "poetry.core.masonry.api"
[tool.poetry]
name = "pkg"
version = "1.0"
[tool.poetry.dependencies]
python = "^3.12"
[tool.poetry.group.test.dependencies]
hypothesis = "^6.0"
freezegun = {version = "1.2.2", extras = ["x"]}
local = {path = "../local"}
[tool.poetry.group.docs.dependencies]
sphinx = "*"
[tool.poetry.dev-dependencies]
mypy = "*"
pytz = "*"
"""})
    plan = detect(root, scan(root))
    assert plan.requirements == ["hypothesis>=6.0", "freezegun[x]==1.2.2", "pytz"]
    assert plan.python == "3.12"            # ^3.12 excludes the default 3.11
    assert "poetry group test" in plan.describe()


def test_pdm_hatch_and_dependency_groups(tmp_path):
    root = write(tmp_path, {**PKG, "pyproject.toml": """
[project]
name = "pkg"
version = "1"
requires-python = ">=3.9"
[project.optional-dependencies]
testing = ["attrs"]
docs = ["furo"]
[dependency-groups]
lint = ["ruff"]
base = ["six"]
test = ["toolz", {include-group = "base"}]
[tool.pdm.dev-dependencies]
test = ["pytest-mock>=3", "-e file:///${PROJECT_ROOT}/sub"]
[tool.hatch.envs.default]
dependencies = ["coverage[toml]", "cachetools"]
"""})
    plan = detect(root, scan(root))
    assert plan.extras == ["testing"]
    assert plan.requirements == ["pytest-mock>=3", "cachetools", "toolz", "six"]
    assert plan.python == "3.11"
    assert "pip install -e '.[testing]'" in plan.script()


def test_tox_nox_requirement_files_and_setup_py(tmp_path):
    root = write(tmp_path, {**PKG, "setup.py": "from setuptools import setup\nsetup(name='pkg', "
                            "python_requires='>=3.8', tests_require=['mock'], "
                            "extras_require={'dev': ['x']})\n",
                            "tox.ini": "[testenv]\ndeps =\n    -rreqs/ci.txt\n    py38: old\n"
                            "    {[base]deps}\n    responses\nextras = dev\n",
                            "reqs/ci.txt": "idna\n",
                            "requirements-dev.txt": "six\n",
                            "noxfile.py": "import nox\n@nox.session\ndef tests(session):\n"
                            "    session.install('-r', 'reqs/ci.txt')\n"
                            "    session.install('pytest', 'toml', '.')\n"})
    plan = detect(root, scan(root))
    assert plan.extras == ["dev"]
    assert plan.requirement_files == ["requirements-dev.txt", "reqs/ci.txt"]
    assert plan.requirements == ["mock", "old", "responses", "toml"]


def test_pytest_config_drops_what_cannot_run_and_finds_plugins(tmp_path):
    root = write(tmp_path, {**PKG, "setup.cfg": "[tool:pytest]\naddopts = -ra --cov=pkg "
                            "--cov-report term -n auto -x --timeout 30 --flake8 -p pytest_mock\n"
                            "asyncio_mode = auto\nrequired_plugins = pytest-flake8 pytest-env>=1\n",
                            "tests/test_more.py": "import pytest\n\n@pytest.fixture\ndef benchmark():\n"
                            "    return 1\n\n@pytest.mark.asyncio\nasync def test_a(mocker, benchmark):\n"
                            "    pass\n"})
    cfg = read_pytest_config(root)
    assert cfg.source == "setup.cfg"
    assert cfg.kept_addopts == ["-ra", "--timeout", "30", "-p", "pytest_mock"]
    assert {"pytest-timeout", "pytest-mock", "pytest-asyncio", "pytest-env>=1"} <= cfg.plugins
    assert not any("flake8" in p for p in cfg.plugins)
    assert cfg.override_args() == ["-o", "addopts=-ra --timeout 30 -p pytest_mock",
                                   "-o", "required_plugins="]
    plan = detect(root, scan(root))
    # mocker comes from pytest-mock; benchmark is the repo's own fixture, not pytest-benchmark
    assert "pytest-mock" in plan.plugins and "pytest-benchmark" not in plan.plugins


@pytest.mark.parametrize("spec,want", [(None, "3.11"), (">=3.8", "3.11"), (">=3.12", "3.12"),
                                       ("<3.10,>=3.8", "3.9"), (">=3.7,<4", "3.11"),
                                       ("~=3.13.0", "3.13"), ("nonsense", "3.11")])
def test_choose_python(spec, want):
    assert choose_python(spec)[0] == want


@pytest.mark.parametrize("present,data,want", [
    (set(), {}, False),
    ({"setup.py"}, {}, True),
    ({"pyproject.toml"}, {"tool": {"black": {}}}, False),          # tool settings only
    ({"pyproject.toml", "setup.cfg"}, {"tool": {}}, True),
    ({"pyproject.toml"}, {"build-system": {}}, True),
    ({"pyproject.toml"}, {"project": {"name": "p"}}, True),
    ({"pyproject.toml", "setup.py"}, {}, True),
])
def test_installable(present, data, want):
    from taskforge.env.detect import _installable

    assert _installable(present, data) is want


@pytest.mark.parametrize("declared,tox,want", [
    ({"all", "docs"}, [], []),
    ({"dev", "test", "all"}, ["all", "dev"], ["test", "dev", "all"]),   # tox may ask for "all"
    ({"foo", "tests"}, ["foo", "foo", "bar"], ["tests", "foo", "foo"]),
])
def test_test_extras(declared, tox, want):
    from taskforge.env.detect import _test_extras

    assert _test_extras(declared, tox) == want


@pytest.mark.parametrize("line,want", [
    ("  responses ", "responses"), ("py38: old", "old"), ("py3{8,9}: x", None), ("{[base]deps}", None),
    ("# note", None), ("-cconstraints.txt", None), ("-e .", None), (".[test]", None), ("", None),
    ("-rreqs/ci.txt", "-rreqs/ci.txt"),
])
def test_tox_dep(line, want):
    from taskforge.env.detect import _tox_dep

    assert _tox_dep(line) == want


@pytest.mark.parametrize("args,want", [
    (["pytest", "toml", ".", "./x", "a/b", "-e", "q"], (["pytest", "toml", "q"], [])),
    (["-r", "reqs.txt", "a"], (["a"], ["reqs.txt"])),
    (["a", "-r"], (["a"], [])),
])
def test_nox_install_args(args, want):
    from taskforge.env.detect import _install_args

    assert _install_args(args) == want


def test_overrides_from_files_and_flags(tmp_path):
    repo = write(tmp_path / "lib", {**PKG, "taskforge.toml": 'python = "3.12"\npip = ["a"]\n'
                                    'test-cmd = "pytest tests -q -m \'not slow\'"\n'})
    (tmp_path / "lib.taskforge.toml").write_text('[taskforge]\npython = "3.13"\n'
                                                 'install = "pip install -e ."\n')
    cfg, used = find_config(repo, str(repo))
    assert cfg.python == "3.13" and cfg.pip == ["a"] and cfg.install == ["pip install -e ."]
    assert len(used) == 2
    cfg = cfg.merged(RepoConfig(python="3.10"))
    plan = detect(repo, scan(repo), cfg)
    assert plan.python == "3.10"
    assert plan.test_paths == ["tests"] and plan.test_options[-3:] == ["-q", "-m", "not slow"]
    assert plan.script().count("pip install -e .") == 1 and "'a'" not in plan.script() \
        and "pip install a" in plan.script()


def test_bad_overrides_are_one_line_errors(tmp_path):
    with pytest.raises(UserError, match="must run pytest"):
        split_test_cmd("make test", tmp_path)
    bad = write(tmp_path / "r", {"taskforge.toml": "pythn = 1\n"})
    with pytest.raises(UserError, match="pythn"):
        find_config(bad)
    res = run_cli("generate", str(tmp_path / "r"), "--out", str(tmp_path / "o"), "--python", "three")
    assert_one_line_error(res, "--python", code=2)


@pytest.mark.parametrize("files, source, want", [
    # pytest 9's native table: real TOML types.
    ({"pyproject.toml": '[tool.pytest]\naddopts = ["--numprocesses=auto", "-ra"]\n'
                        'testpaths = ["tests"]\nxfail_strict = true\n'},
     "pyproject.toml", {"addopts": "--numprocesses=auto -ra", "testpaths": "tests",
                        "xfail_strict": "true"}),
    # The INI bridge still wins where it is there.
    ({"pyproject.toml": '[tool.pytest.ini_options]\naddopts = "-q"\n'},
     "pyproject.toml", {"addopts": "-q"}),
    # pytest.toml comes before everything, even pytest.ini.
    ({"pytest.toml": '[pytest]\naddopts = ["-x"]\n', "pytest.ini": "[pytest]\naddopts = -q\n"},
     "pytest.toml", {"addopts": "-x"}),
    ({"pyproject.toml": "[tool.black]\nline-length = 99\n"}, None, {}),
])
def test_the_pytest_config_is_found_as_pytest_9_finds_it(tmp_path, files, source, want):
    root = write(tmp_path, files)
    cfg = read_pytest_config(root)
    assert (cfg.source, cfg.ini) == (source, want)


def test_native_addopts_are_handled_like_ini_ones(tmp_path):
    root = write(tmp_path, {"pyproject.toml": '[tool.pytest]\naddopts = ["--numprocesses=auto"]\n'})
    cfg = read_pytest_config(root)
    assert cfg.kept_addopts == [] and cfg.dropped and "addopts=" in " ".join(cfg.override_args())


@pytest.mark.parametrize("cmd, options, paths", [
    ("pytest tests --deselect tests/test_f.py::test_f", ["--deselect", "tests/test_f.py::test_f"],
     ["tests"]),
    ("pytest --ignore tests/slow tests", ["--ignore", "tests/slow"], ["tests"]),
    ("pytest --deselect=tests/test_f.py::test_f tests", ["--deselect=tests/test_f.py::test_f"],
     ["tests"]),
    ("python -m pytest -k 'not slow' tests/test_f.py -x", ["-k", "not slow", "-x"],
     ["tests/test_f.py"]),
])
def test_a_flag_keeps_its_value_in_a_test_command(tmp_path, cmd, options, paths):
    root = write(tmp_path, {**PKG, "tests/slow/test_s.py": "def test_s():\n    pass\n"})
    assert split_test_cmd(cmd, root) == (options, paths)


@pytest.mark.parametrize("files, python_files, want", [
    (["jsonpointer.py", "tests.py", "setup.py"], [], ["tests.py"]),
    (["pkg/__init__.py", "pkg/test.py"], [], ["pkg/test.py"]),
    (["pkg/__init__.py", "tests/test_a.py", "tests.py"], [], []),   # pytest collects the rest
    (["a.py", "tests.py"], ["check_*.py"], []),                     # the config says what to collect
    (["a.py", "docs/tests.py"], [], []),
    (["pkg/__init__.py", "pkg/tests/__init__.py", "pkg/tests/testparse.py", "pkg/tests/helpers.py"], [],
     ["pkg/tests/testparse.py"]),                                   # unittest's test*.py, in a test dir
    (["pkg/__init__.py", "pkg/testing.py"], [], []),                # a package module, not a test
    (["pkg/tests/testparse.py", "pkg/tests/test_more.py"], [], []),  # pytest's defaults find one
])
def test_tests_py_is_collected_only_when_nothing_else_would_be(files, python_files, want):
    from taskforge.repo.layout import fallback_test_modules

    assert fallback_test_modules(files, python_files) == want


def test_a_tests_py_project_runs_its_tests_by_name(tmp_path):
    root = write(tmp_path, {"pyproject.toml": PYPROJECT_MIN, "jp.py": "def f():\n    return 1\n",
                            "tests.py": "from jp import f\n\ndef test_f():\n    assert f() == 1\n"})
    layout = scan(root)
    assert "tests.py" in layout.test_files and "tests.py" in layout.protected_files
    plan = detect(root, layout)
    assert plan.test_options[-2:] == ["-o", "python_files=test_*.py *_test.py tests.py"]


PYPROJECT_MIN = """[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"
[project]
name = "jp"
version = "1.0"
"""


# -- for real ---------------------------------------------------------------------

NEEDS_DETECTION = {
    "pyproject.toml": """[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"
[project]
name = "shapes"
version = "0.1.0"
requires-python = ">=3.8"
[dependency-groups]
test = ["six"]
[tool.pytest.ini_options]
addopts = "-ra --cov=shapes -n 2 --strict-markers"
testpaths = ["tests/unit"]
""",
    "shapes/__init__.py": "from shapes.ops import area, perimeter, scale, label\n",
    "shapes/ops.py": '''def area(w, h):
    """Area of a w x h rectangle."""
    product = w * h
    return product if product >= 0 else -product


def perimeter(w, h):
    """Perimeter of a w x h rectangle."""
    total = 2 * (abs(w) + abs(h))
    return total


def scale(w, h, k):
    """The rectangle scaled by k."""
    nw, nh = w * k, h * k
    return (nw, nh)


def label(w, h):
    """A text label for the rectangle."""
    shape = "square" if w == h else "rectangle"
    return f"{shape} {w}x{h}"
''',
    # six is imported inside the tests (so only the dependency group can provide it)
    "tests/unit/test_area.py": "from shapes import area\n\n"
    + "".join(f"def test_area_{i}():\n    import six\n    assert six.PY3 and area({i}, 2) == {2 * i}\n\n"
              for i in range(4)),
    "tests/unit/test_perimeter.py": "from shapes import perimeter\n\n"
    + "".join(f"def test_perimeter_{i}(mocker):\n    spy = mocker.Mock(return_value={i})\n"
              f"    assert perimeter(spy(), 1) == {2 * (i + 1)}\n\n" for i in range(4)),
    "tests/unit/test_scale.py": "from shapes import scale\n\n"
    + "".join(f"def test_scale_{i}():\n    assert scale(1, 2, {i}) == ({i}, {2 * i})\n\n"
              for i in range(4)),
    "tests/unit/test_label.py": "from shapes import label\n\n"
    + "".join(f"def test_label_{i}():\n    assert label({i}, {i}).startswith('square')\n\n"
              for i in range(4)),
    "tests/slow/test_broken.py": "def test_broken():\n    assert False\n",
}


def generate_cli(repo: Path, out: Path, *extra: str) -> dict:
    res = subprocess.run([sys.executable, "-m", "taskforge", "generate", str(repo), "--out",
                          str(out), "--json", "-q", "--max-tasks", "2",
                          "--min-statements", "0", *extra],      # its functions are one-liners
                         capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-2000:]
    return json.loads(res.stdout)


def test_generate_needs_group_plugin_and_config_detection(tmp_path, base_image):
    """six only in a PEP 735 group, mocker from pytest-mock (declared nowhere),
    addopts asking for xdist and coverage: all handled with no configuration."""
    src = write(tmp_path / "shapes-src", {k: v for k, v in NEEDS_DETECTION.items()
                                          if "/slow/" not in k})
    repo = make_git_repo(src, tmp_path / "shapes")
    report = generate_cli(repo, tmp_path / "out")
    assert report["baseline_passing"] == 16
    assert len(report["tasks"]) == 2
    rec = json.loads((tmp_path / "out" / report["tasks"][0] / "task.json").read_text())
    assert "-n" not in rec["test_options"] and "--strict-markers" in " ".join(rec["test_options"])
    from taskforge.grade.verify import Solution, verify

    assert verify(tmp_path / "out" / report["tasks"][0], Solution.gold()).reward == 1.0


def test_generate_with_test_cmd_override(tmp_path, base_image):
    """With no testpaths, a red test directory is red at baseline: data, not a
    refusal (the test is excluded and named); the test command override (a
    LIB.taskforge.toml beside the repo) leaves it out altogether."""
    files = dict(NEEDS_DETECTION)
    files["pyproject.toml"] = files["pyproject.toml"].replace('testpaths = ["tests/unit"]\n', "")
    src = write(tmp_path / "shapes-src", files)
    repo = make_git_repo(src, tmp_path / "shapes")
    red = generate_cli(repo, tmp_path / "red")
    assert red["baseline_failing_ids"] == ["tests/slow/test_broken.py::test_broken"], red
    assert red["baseline_failing"] == 1 and red["tasks"]
    for tid in red["tasks"]:
        rec = json.loads((tmp_path / "red" / tid / "task.json").read_text())
        assert "tests/slow/test_broken.py::test_broken" not in rec["PASS_TO_PASS"] + rec["FAIL_TO_PASS"]
    (tmp_path / "shapes.taskforge.toml").write_text('test-cmd = "pytest tests/unit"\n')
    report = generate_cli(repo, tmp_path / "out")
    assert report["baseline_tests"] == 16 and len(report["tasks"]) == 2
    rec = json.loads((tmp_path / "out" / report["tasks"][0] / "task.json").read_text())
    assert rec["test_paths"] == ["tests/unit"]


def test_install_failure_says_what_was_tried(tmp_path, base_image):
    repo = make_git_repo(write(tmp_path / "boom-src", {
        "setup.py": "raise SystemExit('this package cannot be built here')\n",
        "boom/__init__.py": "def f():\n    return 1\n",
        "tests/test_boom.py": "from boom import f\n\ndef test_f():\n    assert f() == 1\n"}),
        tmp_path / "boom")
    res = run_cli("generate", str(repo), "--out", str(tmp_path / "out"),
                  "--install", "echo 'cannot build this here' >&2; exit 3")
    assert_one_line_error(res, "installing the repository failed", "tried:", "python 3.11", code=2)
    assert not (tmp_path / "out").exists()


def test_a_project_that_does_not_build_runs_from_its_source(tmp_path, base_image):
    """jaraco's projects build with a backend that downloads their license text
    (no network here: "installing the repository failed"). When no build works,
    the declared requirements are installed and the source put first on the path."""
    repo = make_git_repo(write(tmp_path / "nobuild-src", {
        "pyproject.toml": '[build-system]\nrequires = ["taskforge-no-such-backend>=1"]\n'
                          'build-backend = "nosuch.build"\n\n[project]\nname = "nobuild"\n'
                          'version = "1.0"\ndependencies = ["six"]\n\n'
                          '[project.optional-dependencies]\ntest = ["pytest", "pytest-mock"]\n',
        "src/nobuild/__init__.py": "import six\n\n" + VERSIONED_OPS,
        "tests/test_ops.py": clamp_tests("nobuild") + "\n\ndef test_mocker(mocker):\n"
                             "    assert mocker.Mock(return_value=3)() == 3\n"}),
        tmp_path / "nobuild")
    res = run_cli("generate", str(repo), "--out", str(tmp_path / "out"), "--max-tasks", "1", "--json")
    report = json.loads(res.stdout)        # exit 1 when no task came out of 7 tests
    assert report["baseline_passing"] == 7 and report["baseline_failing"] == 0, report


VERSIONED_OPS = '''def clamp(x, lo, hi):
    """x limited to [lo, hi]."""
    if x < lo:
        return lo
    return hi if x > hi else x


def spread(xs):
    """Largest minus smallest."""
    lo, hi = min(xs), max(xs)
    return hi - lo
'''
def clamp_tests(package: str) -> str:
    """A test module for VERSIONED_OPS imported from `package`: 6 tests."""
    return (f"from {package} import clamp, spread\n\n\n"
            + "".join(f"def test_clamp_{i}():\n    assert clamp({i}, 1, 3) == "
                      f"{min(max(i, 1), 3)}\n\n\n" for i in range(5))
            + "def test_spread():\n    assert spread([4, 1, 9]) == 8\n")


VERSION_BUILDS = {
    "setuptools-scm": '''[build-system]
requires = ["setuptools>=64", "setuptools-scm>=8"]
build-backend = "setuptools.build_meta"

[project]
name = "verlib"
dynamic = ["version"]

[tool.setuptools_scm]
version_file = "src/verlib/_version.py"
''',
    "hatch-vcs": '''[build-system]
requires = ["hatchling", "hatch-vcs"]
build-backend = "hatchling.build"

[project]
name = "verlib"
dynamic = ["version"]

[tool.hatch.version]
source = "vcs"

[tool.hatch.build.hooks.vcs]
version-file = "src/verlib/_version.py"

[tool.hatch.build.targets.wheel]
packages = ["src/verlib"]
''',
}


@pytest.mark.parametrize("backend", sorted(VERSION_BUILDS))
def test_a_version_file_written_at_build_time_reaches_every_tree(tmp_path, base_image, backend):
    """A clone has no `_version.py` (git-ignored; the build writes it from git):
    `import verlib` failed at baseline. The file the install generates is put in
    every tree that runs tests, the task workspace included (where it stays
    ignored, so `git status` is clean)."""
    src = write(tmp_path / "verlib-src", {
        "pyproject.toml": VERSION_BUILDS[backend],
        ".gitignore": "src/verlib/_version.py\n",
        "src/verlib/__init__.py": "from verlib._version import __version__\n"
                                  "from verlib.ops import clamp, spread\n",
        "src/verlib/ops.py": VERSIONED_OPS,
        "tests/test_ops.py": "import verlib\n" + clamp_tests("verlib")
                             + "\n\ndef test_version():\n    assert verlib.__version__\n",
    })
    (src / "src/verlib/_version.py").write_text("__version__ = '9.9'\n")  # a dev's stale copy
    repo = make_git_repo(src, tmp_path / "verlib")
    assert "_version.py" not in subprocess.run(["git", "ls-files"], cwd=repo, text=True,
                                               capture_output=True).stdout
    report = generate_cli(repo, tmp_path / "out")
    assert report["baseline_passing"] == 7 and report["tasks"], report
    ws = tmp_path / "out" / report["tasks"][0] / "workspace"
    assert (ws / "src/verlib/_version.py").is_file()
    assert subprocess.run(["git", "status", "--porcelain"], cwd=ws, text=True,
                          capture_output=True).stdout == ""
    from taskforge.grade.verify import Solution, verify

    assert verify(tmp_path / "out" / report["tasks"][0], Solution.gold()).reward == 1.0


def test_test_data_in_a_submodule_is_fetched(tmp_path, base_image):
    """tomlkit keeps its test cases in a git submodule (tests/toml-test), empty in a
    plain clone: the suite found no cases or failed. The clone fetches submodules."""
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}

    def git(cwd, *args):
        subprocess.run(["git", "-c", "init.defaultBranch=main", "-c", "protocol.file.allow=always",
                        *args], cwd=cwd, env=env, check=True, capture_output=True)

    data = write(tmp_path / "cases", {f"case{i}.txt": f"{i} {min(max(i, 1), 3)}\n" for i in range(6)})
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "cases"]):
        git(data, *args)
    src = write(tmp_path / "clampy-src", {
        "pyproject.toml": '[project]\nname = "clampy"\nversion = "1.0"\n',
        "clampy/__init__.py": "from clampy.ops import clamp, spread\n",
        "clampy/ops.py": VERSIONED_OPS,
        "tests/test_cases.py": "from pathlib import Path\n\nimport pytest\n\nfrom clampy import clamp, spread\n\n"
                               "CASES = sorted((Path(__file__).parent / 'data').glob('*.txt'))\n\n\n"
                               "def test_cases_are_there():\n    assert len(CASES) == 6\n\n\n"
                               "@pytest.mark.parametrize('case', CASES, ids=lambda p: p.stem)\n"
                               "def test_clamp(case):\n    x, want = map(int, case.read_text().split())\n"
                               "    assert clamp(x, 1, 3) == want\n\n\n"
                               "def test_spread():\n    assert spread([4, 1, 9]) == 8\n",
    })
    repo = make_git_repo(src, tmp_path / "clampy")
    git(repo, "submodule", "add", "-q", str(data), "tests/data")
    git(repo, "commit", "-q", "-m", "test data")
    report = generate_cli(repo, tmp_path / "out")
    assert report["baseline_passing"] == 8, report
    assert report["tasks"], report
    ws = tmp_path / "out" / report["tasks"][0] / "workspace"
    assert len(list((ws / "tests/data").glob("*.txt"))) == 6
    assert subprocess.run(["git", "status", "--porcelain"], cwd=ws, text=True,
                          capture_output=True).stdout == ""


def test_test_files_in_newer_syntax_are_left_to_pytest(tmp_path, base_image):
    """cattrs: PEP 695 test files its conftest ignores below 3.12. The syntax gate
    compiled every test file with the host's Python and refused the repository."""
    src = write(tmp_path / "newsyn-src", {
        "pyproject.toml": '[project]\nname = "newsyn"\nversion = "1.0"\n',
        "newsyn/__init__.py": "from newsyn.ops import clamp, spread\n",
        "newsyn/ops.py": VERSIONED_OPS,
        "tests/conftest.py": "import sys\n\ncollect_ignore = [] if sys.version_info >= (3, 12) "
                             "else ['test_generic.py']\n",
        "tests/test_generic.py": "from newsyn import clamp\n\n\ndef ident[T](x: T) -> T:\n"
                                 "    return x\n\n\ndef test_generic():\n"
                                 "    assert ident(clamp(5, 1, 3)) == 3\n",
        "tests/test_ops.py": clamp_tests("newsyn"),
    })
    repo = make_git_repo(src, tmp_path / "newsyn")
    report = generate_cli(repo, tmp_path / "out")
    assert report["baseline_passing"] == 6 and report["tasks"], report


def test_a_testpaths_entry_naming_a_file_is_the_suite(tmp_path, base_image):
    """python-slugify: `testpaths = ["test.py"]`; no name pattern matches `test.py`,
    so discovery found "no tests". pytest collects what testpaths names; so do we,
    and the file is protected like any test file."""
    src = write(tmp_path / "clampmod-src", {
        "pyproject.toml": '[project]\nname = "clampmod"\nversion = "1.0"\n\n'
                          '[tool.pytest.ini_options]\ntestpaths = ["test.py"]\n',
        "clampmod.py": VERSIONED_OPS,
        "test.py": clamp_tests("clampmod"),
    })
    repo = make_git_repo(src, tmp_path / "clampmod")
    report = generate_cli(repo, tmp_path / "out")
    assert report["baseline_passing"] == 6 and report["tasks"], report
    rec = json.loads((tmp_path / "out" / report["tasks"][0] / "task.json").read_text())
    assert "test.py" in rec["protected_files"], rec["protected_files"]


SPEEDY_SETUP = '''"""An optional C accelerator, built when a compiler is there."""
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class BuildFailed(Exception):
    pass


class optional_build_ext(build_ext):
    def run(self):
        try:
            super().run()
        except Exception as exc:
            raise BuildFailed() from exc

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as exc:
            raise BuildFailed() from exc


def run_setup(with_speedups):
    ext = [Extension("speedy._speedups", ["src/speedy/_speedups.c"])] if with_speedups else []
    setup(cmdclass={"build_ext": optional_build_ext}, ext_modules=ext)


try:
    run_setup(True)
except BuildFailed:
    print("speedy: the C speedups could not be built; the pure-Python code is used")
    run_setup(False)
'''
SPEEDY_C = '''#include <Python.h>

static PyObject *clamp(PyObject *self, PyObject *args) {
    long x, lo, hi;
    if (!PyArg_ParseTuple(args, "lll", &x, &lo, &hi)) return NULL;
    return PyLong_FromLong(x < lo ? lo : (x > hi ? hi : x));
}

static PyMethodDef methods[] = {{"clamp", clamp, METH_VARARGS, NULL}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_speedups", NULL, -1, methods};
PyMODINIT_FUNC PyInit__speedups(void) { return PyModule_Create(&module); }
'''


def test_a_c_extension_without_a_compiler_falls_back_to_the_tree(tmp_path, base_image):
    """markupsafe: no compiler in the base image, so its setup.py catches the failed
    C build and calls setup() again, which `pip install -e .` cannot survive. The
    built copy (`pip install .` works) is repointed at the tree: no copy of the code
    stays in site-packages, the tests run the workspace's pure-Python code."""
    src = write(tmp_path / "speedy-src", {
        "pyproject.toml": '[build-system]\nrequires = ["setuptools>=64"]\n'
                          'build-backend = "setuptools.build_meta"\n\n'
                          '[project]\nname = "speedy"\nversion = "1.0"\n\n'
                          '[tool.setuptools.packages.find]\nwhere = ["src"]\n',
        "setup.py": SPEEDY_SETUP,
        "src/speedy/_speedups.c": SPEEDY_C,
        "src/speedy/__init__.py": "from speedy.ops import clamp, spread\n\ntry:\n"
                                  "    from speedy._speedups import clamp\nexcept ImportError:\n    pass\n",
        "src/speedy/ops.py": VERSIONED_OPS,
        "tests/test_ops.py": clamp_tests("speedy")
                             + "\n\ndef test_metadata():\n    from importlib.metadata import version\n\n"
                               "    assert version('speedy') == '1.0'\n",
    })
    repo = make_git_repo(src, tmp_path / "speedy")
    report = generate_cli(repo, tmp_path / "out")
    assert report["baseline_passing"] == 7 and report["tasks"], report
    task = tmp_path / "out" / report["tasks"][0]
    rec = json.loads((task / "task.json").read_text())
    import docker

    listing = docker.from_env().containers.run(
        rec["image_name"], ["sh", "-c", "python -c 'import speedy' 2>&1 | tail -1; "
                            "find / -path /proc -prune -o -path '*speedy*' -name '*.py' -print; "
                            "cat $(python -c 'import site; print(site.getsitepackages()[0])')/*.pth"],
        remove=True, network_mode="none", user="0").decode()
    # No copy of the code anywhere in the image: it imports from the workspace only.
    assert "No module named 'speedy'" in listing and "ops.py" not in listing, listing
    assert "/workspace/src" in listing.splitlines(), listing
    from taskforge.grade.verify import Solution, verify

    assert verify(task, Solution.gold()).reward == 1.0
    assert verify(task, Solution.empty()).reward == 0.0


WORDY = ("def words(text):\n    n = 0\n    for part in text.split():\n"
         "        if part:\n            n += 1\n    return n\n\n\n"
         "def title(text):\n    out = []\n    for w in text.split(' '):\n"
         "        out.append(w[:1].upper() + w[1:])\n    return ' '.join(out)\n\n\n"
         "def initials(text):\n    out = ''\n    for w in text.split():\n"
         "        out += w[0].upper()\n    return out\n")
WORDY_TESTS = "from wordy import initials, title, words\n\n\n" + "".join(
    f"def test_words_{i}():\n    assert words('{'ab ' * (i + 1)}') == {i + 1}\n\n"
    f"def test_title_{i}():\n    assert title('a{i} b') == 'A{i} B'\n\n"
    f"def test_initials_{i}():\n    assert initials('x{i} yy z') == 'XYZ'\n\n" for i in range(4))


def test_generate_on_a_pytest_9_project_with_tests_py_and_locales(tmp_path, base_image):
    """Three things real clones do (bidict, jsonpointer, natsort): pytest 9's
    native [tool.pytest] with an xdist flag, tests in a tests.py pytest does not
    collect by default, tests that switch to de_DE/en_US locales; and one
    test red at baseline, which is excluded, not a refusal."""
    files = {
        "pyproject.toml": PYPROJECT_MIN.replace('"jp"', '"wordy"')
        + '[tool.pytest]\naddopts = ["--numprocesses=auto", "-ra"]\n',
        "wordy.py": WORDY,
        "tests.py": "import locale\n\n" + WORDY_TESTS
        + "def test_locales():\n    for name in ('en_US.UTF-8', 'de_DE.UTF-8'):\n"
          "        locale.setlocale(locale.LC_ALL, name)\n    locale.setlocale(locale.LC_ALL, 'C')\n\n"
          "def test_needs_the_network():\n    import socket\n"
          "    socket.create_connection(('192.0.2.1', 80), 0.5)\n",
    }
    repo = make_git_repo(write(tmp_path / "wordy-src", files), tmp_path / "wordy")
    report = generate_cli(repo, tmp_path / "out")
    assert report["baseline_failing_ids"] == ["tests.py::test_needs_the_network"], report
    assert report["baseline_passing"] == 13 and report["tasks"], report
    task = tmp_path / "out" / report["tasks"][0]
    rec = json.loads((task / "task.json").read_text())
    assert "python_files=test_*.py *_test.py tests.py" in rec["test_options"]
    from taskforge.grade.verify import Solution, verify

    assert verify(task, Solution.gold()).reward == 1.0
    assert verify(task, Solution.empty()).reward == 0.0


@pytest.mark.parametrize("errors, files, want", [
    ({"tests/test_a.py": "E   pytest.PytestRemovedIn9Warning: Marks applied to fixtures"}, {}, "pytest<9"),
    ({"tests/test_a.py": "E   ImportError: no module named x"}, {}, None),
    # The project asks for pytest 9 itself: a pin below it would break what it declares.
    ({"t.py": "E   pytest.PytestRemovedIn9Warning: x"},
     {"pyproject.toml": '[project.optional-dependencies]\ntest = ["pytest>=9.0"]\n'}, None),
    ({"t.py": "E   pytest.PytestRemovedIn9Warning: x"},
     {"requirements-test.txt": "pytest>=7\n"}, "pytest<9"),
])
def test_a_pytest_pin_only_for_pytest_s_own_removals(tmp_path, errors, files, want):
    from taskforge.env.detect import pytest_pin

    assert pytest_pin(errors, write(tmp_path, files), "9.0.3") == want


@pytest.mark.parametrize("log, version, want", [
    # A removal (no warning class named): below the running major.
    ("Failed: Marks cannot be applied to fixtures.\n"
     "See docs: https://docs.pytest.org/en/stable/deprecations.html#applying-a-mark", "9.1.1", "pytest<9"),
    ("Failed: x\nSee docs: https://docs.pytest.org/en/stable/deprecations.html", "", None),
    ("E   ModuleNotFoundError: No module named 'six'", "9.1.1", None),
    ("pytest.PytestRemovedIn10Warning: y", "9.1.1", "pytest<9"),
    # A conftest hook with a py.path argument pytest 9 removed (docopt).
    ("PluginValidationError: Plugin '/w/conftest.py' for hook 'pytest_collect_file'\n"
     "hookimpl definition: pytest_collect_file(path, parent)\nArgument(s) {'path'} are declared "
     "in the hookimpl but can not be found in the hookspec", "9.0.3", "pytest<9"),
    ("Argument(s) {'path'} are declared in the hookimpl but can not be found in the hookspec",
     "8.4.0", None),
    ("Argument(s) {'colour'} are declared in the hookimpl but can not be found in the hookspec",
     "9.0.3", None),
])
def test_a_pytest_removal_pins_below_the_running_major(tmp_path, log, version, want):
    from taskforge.env.detect import pytest_pin

    assert pytest_pin({"": log}, tmp_path, version) == want


def test_generate_pins_pytest_when_the_newest_does_not_collect(tmp_path, base_image):
    """A mark on a fixture is a collection error under pytest 9
    (PytestRemovedIn9Warning): the environment is built again with pytest<9,
    said in the report, and the tasks grade under it."""
    files = {
        "pyproject.toml": PYPROJECT_MIN.replace('"jp"', '"wordy"'),
        "wordy.py": WORDY,
        "tests/conftest.py": "import pytest\n\n\n@pytest.fixture\n@pytest.mark.slow\ndef sep():\n"
                             "    return ' '\n",
        "tests/test_wordy.py": WORDY_TESTS,
    }
    repo = make_git_repo(write(tmp_path / "pinned-src", files), tmp_path / "pinned")
    report = generate_cli(repo, tmp_path / "out")
    assert report["pytest_pin"] == "pytest<9" and report["tasks"], report
    task = tmp_path / "out" / report["tasks"][0]
    from taskforge.grade.verify import Solution, verify

    assert verify(task, Solution.gold()).reward == 1.0


def _old_wheel(path: Path, name: str, version: str, module: str) -> Path:
    """A released copy of `name` as a wheel file (what a requirement pulls from the index)."""
    import zipfile

    info = f"{name}-{version}.dist-info"
    files = {f"{name}.py": module,
             f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    files[f"{info}/RECORD"] = "".join(f"{f},,\n" for f in files) + f"{info}/RECORD,,\n"
    whl = path / f"{name}-{version}-py3-none-any.whl"
    whl.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(whl, "w") as z:
        for f, text in files.items():
            z.writestr(f, text)
    return whl


def test_a_requirement_that_pulls_a_released_copy_of_the_project_is_undone(tmp_path, base_image):
    """filelock's tests want virtualenv, which wants filelock: pip put the
    released filelock over the editable install, and the suite ran (and failed
    on) the release. Here a test group's requirement is an older `wordy` without
    `initials`: the build installs the tree again over it, so the baseline is
    green and the task grades on the tree."""
    src = write(tmp_path / "wordy-src", {
        "pyproject.toml": PYPROJECT_MIN.replace('"jp"', '"wordy"') + "[dependency-groups]\n"
        'test = ["wordy @ file:///workspace/wheels/wordy-0.1-py3-none-any.whl"]\n',
        "wordy.py": WORDY,
        "tests/test_wordy.py": WORDY_TESTS,
    })
    _old_wheel(src / "wheels", "wordy", "0.1", "def words(text):\n    return len(text.split())\n")
    repo = make_git_repo(src, tmp_path / "wordy")
    report = generate_cli(repo, tmp_path / "out")
    assert report["baseline_passing"] == 12 and report["baseline_failing"] == 0, report
    from taskforge.grade.verify import Solution, verify

    assert verify(tmp_path / "out" / report["tasks"][0], Solution.gold()).reward == 1.0


@pytest.mark.parametrize("data,extras,want", [
    ({"project": {"dependencies": ["six", "attrs>=20"], "optional-dependencies": {
        "test": ["pytest", "six"], "doc": ["sphinx"]}}}, ["test"], ["six", "attrs>=20", "pytest"]),
    ({"project": {"dynamic": ["dependencies"]}}, ["test"], []),
    ({}, [], []),
])
def test_what_a_path_install_installs(data, extras, want):
    from taskforge.env.detect import _declared

    assert _declared(data, extras) == want
