"""No leaks: a workspace and image with a planted leak of every kind are flagged
by `taskforge audit`, and the tasks generate writes audit clean."""
from __future__ import annotations

import io
import json
import py_compile
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from taskforge.leaks.audit import audit, original_tree
from taskforge.package.store import load_task
from tests.conftest import CLI, FIXTURES, make_git_repo

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]


@pytest.fixture(scope="module")
def task(fixture_repos, base_image, tmp_path_factory):
    """textkit's `to_snake` (a one-statement wrapper, so below the default minimum:
    asked for by name) as a task whose removed body these tests plant back."""
    from taskforge.orchestrate.pipeline import Options, generate

    out = tmp_path_factory.mktemp("snake")
    report = generate(str(fixture_repos["textkit"]), out,
                      Options(jobs=2, max_tasks=1, only=("cases.to_snake",), min_statements=0))
    return out / next(t for t in report.tasks if ".cases.to_snake-" in t)


def original_source(task: Path, tmp: Path) -> Path:
    rec = load_task(task).record
    return original_tree(task / "workspace", [rec.patch, rec.test_patch], tmp / "orig")


def body_of_to_snake(orig: Path) -> str:
    text = (orig / "textkit/cases.py").read_text()
    start = text.index("def to_snake")
    end = text.index("\ndef ", start + 1)
    return text[start:end]


def plant_everything(ws: Path, orig: Path) -> dict[str, str]:
    """Plant one leak of each kind; returns {label: path fragment expected in a finding}."""
    # git first (a stash takes tracked edits with it): the original in a commit reachable
    # only from a tag, a stash and the reflog.
    run = lambda *a: subprocess.run([*GIT, *a], cwd=ws, check=True, capture_output=True)  # noqa: E731
    run("config", "core.logAllRefUpdates", "true")
    shutil.copy(ws / "textkit/cases.py", ws / "cases.keep")
    shutil.copy(orig / "textkit/cases.py", ws / "textkit/cases.py")
    run("add", "textkit/cases.py")
    run("commit", "-q", "-m", "original")
    run("tag", "v-original")
    run("reset", "-q", "--hard", "HEAD~1")
    shutil.copy(orig / "textkit/cases.py", ws / "textkit/cases.py")
    run("stash", "-q")
    (ws / "cases.keep").unlink()
    src = body_of_to_snake(orig)
    pyc = ws / "textkit/__pycache__/cases.cpython-311.pyc"
    pyc.parent.mkdir(parents=True)
    py_compile.compile(str(orig / "textkit/cases.py"), cfile=str(pyc), doraise=True)
    (ws / ".mypy_cache/3.11/textkit").mkdir(parents=True)
    (ws / ".mypy_cache/3.11/textkit/cases.data.json").write_text(json.dumps(
        {".class": "MypyFile", "names": {"to_snake": {"fullname": "textkit.cases.to_snake",
                                                      "type": "def (text: builtins.str) -> str"}}}))
    (ws / ".pytest_cache/v/cache").mkdir(parents=True)
    (ws / ".pytest_cache/v/cache/lastfailed").write_text(json.dumps(
        {"tests/test_cases.py::test_to_snake[parseHTTPResponse-parse_http_response]": True}))
    (ws / "textkit.egg-info").mkdir()
    (ws / "textkit.egg-info/SOURCES.txt").write_text("textkit/cases.py\ntests/test_cases.py\n")
    (ws / "build/lib/textkit").mkdir(parents=True)
    shutil.copy(orig / "textkit/cases.py", ws / "build/lib/textkit/cases.py")
    (ws / "docs").mkdir(exist_ok=True)
    (ws / "docs/internals.md").write_text(f"# How it works\n\n```python\n{src}\n```\n")
    with open(ws / "README.md", "a") as fh:
        fh.write(f"\n## Implementation\n\n```python\n{src}```\n")
    shutil.copy(orig / "textkit/cases.py", ws / "textkit/cases.py.orig")
    return {"bytecode": "__pycache__/cases.cpython-311.pyc", "mypy": ".mypy_cache/",
            "pytest-cache": ".pytest_cache/", "egg-info": "textkit.egg-info",
            "build/lib": "build/lib/textkit/cases.py", "docs": "docs/internals.md",
            "readme": "README.md", "orig": "textkit/cases.py.orig", "git-objects": ".git:",
            "git-history": ".git"}


def build_leaky_image(base_image_name: str, orig: Path, docker_engine) -> str:
    """The env image plus a non-editable copy of the package and a vendored copy."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        t.add(orig / "textkit", arcname="textkit")
        t.add(orig / "textkit/cases.py", arcname="otherpkg/_vendor/textkit_cases.py")
    c = docker_engine.containers.create(base_image_name, command=["true"], user="0",
                                        labels={"taskforge": "1"})
    try:
        assert c.put_archive("/opt/tf/venv/lib/python3.11/site-packages", buf.getvalue())
        tag = "taskforge/test-leaky:latest"
        c.commit(repository="taskforge/test-leaky", tag="latest")
        return tag
    finally:
        c.remove(force=True)


def test_audit_flags_every_planted_leak(task, tmp_path, docker_engine):
    orig = original_source(task, tmp_path)
    leaky = tmp_path / "leaky"
    shutil.copytree(task, leaky, symlinks=True)
    expect = plant_everything(leaky / "workspace", orig)
    rec = json.loads((leaky / "task.json").read_text())
    rec["image_name"] = build_leaky_image(rec["image_name"], orig, docker_engine)
    (leaky / "task.json").write_text(json.dumps(rec))

    res = subprocess.run([*CLI, "audit", str(leaky), "--json"], capture_output=True, text=True)
    assert res.returncode == 1, res.stdout + res.stderr
    findings = json.loads(res.stdout)["findings"]
    paths = [f["path"] for f in findings]
    for label, fragment in expect.items():
        assert any(fragment in p for p in paths), (label, paths)
    kinds = {f["kind"] for f in findings}
    assert {"code", "bytecode", "cache", "build", "git"} <= kinds
    git_msgs = " ".join(f["snippet"] for f in findings if f["kind"] == "git")
    assert "commits in history" in git_msgs and "refs/tags/v-original" in git_msgs
    assert "refs/stash" in git_msgs
    image_paths = [p for p in paths if p.startswith("image:/")]
    assert any("site-packages/textkit/cases.py" in p for p in image_paths), image_paths
    assert any("otherpkg/_vendor/textkit_cases.py" in p for p in image_paths), image_paths


def test_names_alone_are_not_leaks(task, tmp_path):
    ws_copy = tmp_path / "t"
    shutil.copytree(task, ws_copy, symlinks=True)
    with open(ws_copy / "workspace/README.md", "a") as fh:
        fh.write("\nUse `to_snake(text: str) -> str` to convert text to snake_case.\n")
    rep = audit(ws_copy, image=False)
    assert rep.findings == [], [f.line() for f in rep.findings]


def test_generated_tasks_audit_clean_even_from_a_leaky_repo(tmp_path, base_image):
    """Leaks committed to the source repository never reach a task."""
    from taskforge.orchestrate.pipeline import Options, generate

    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "textkit", src)
    cases = (src / "textkit/cases.py").read_text()
    body = cases[cases.index("def to_snake"):cases.index("\ndef ", cases.index("def to_snake") + 1)]
    (src / "docs").mkdir()
    (src / "docs/internals.md").write_text(f"# Internals\n\n```python\n{body}```\n")
    with open(src / "README.md", "a") as fh:
        fh.write(f"\n```python\n{body}```\n")
    (src / "build/lib/textkit").mkdir(parents=True)
    shutil.copy(src / "textkit/cases.py", src / "build/lib/textkit/cases.py")
    shutil.copy(src / "textkit/cases.py", src / "textkit/cases.py.orig")
    (src / "textkit.egg-info").mkdir()
    (src / "textkit.egg-info/SOURCES.txt").write_text("textkit/cases.py\n")
    repo = make_git_repo(src, tmp_path / "repo")
    subprocess.run([*GIT, "add", "-f", "-A"], cwd=repo, check=True)
    subprocess.run([*GIT, "commit", "-q", "--allow-empty", "-m", "more"], cwd=repo, check=True)
    subprocess.run([*GIT, "tag", "v1"], cwd=repo, check=True)
    out = tmp_path / "out"
    report = generate(str(repo), out, Options(jobs=2, kinds=("function",), min_statements=0,
                                                only=("cases.to_snake", "cases.to_kebab", "numerals.to_roman")))
    assert any(".cases.to_snake-" in t for t in report.tasks), report.model_dump_json(indent=1)
    for tid in report.tasks:
        rep = audit(out / tid)
        assert rep.findings == [], (tid, [f.line() for f in rep.findings])
        assert rep.seconds < 5
    snake = next(t for t in report.tasks if ".cases.to_snake-" in t)
    ws = out / snake / "workspace"
    assert "join(word.lower() for word in split_words(text))" not in (ws / "README.md").read_text()
    assert not (ws / "build").exists() and not (ws / "textkit/cases.py.orig").exists()


def test_bytecode_of_another_python_is_never_unmarshalled():
    """The sandbox may run another Python (3.13 for a project that asks for it):
    marshal data of another version can crash the host interpreter, so such a
    .pyc is read as text, and only this Python's own bytecode as code objects."""
    import importlib.util
    import marshal

    from taskforge.leaks.scan import load_pyc

    code = compile("def restore_feature():\n    return 42\n", "pkg/mod.py", "exec")
    ours = importlib.util.MAGIC_NUMBER + b"\0" * 12 + marshal.dumps(code)
    assert load_pyc(ours).co_consts[0].co_name == "restore_feature"
    foreign = bytes([ours[0] ^ 0x55, ours[1]]) + ours[2:]
    assert load_pyc(foreign) is None


def test_any_bytecode_file_in_a_workspace_is_reported(task, tmp_path):
    """A .pyc of the original module, compiled elsewhere (its code objects name
    another path), planted in a task copy: reported whatever it holds."""
    import py_compile

    orig = original_source(task, tmp_path)
    copy = tmp_path / "t"
    shutil.copytree(task, copy, symlinks=True)
    elsewhere = tmp_path / "elsewhere" / "mod.py"
    elsewhere.parent.mkdir()
    shutil.copy(orig / "textkit" / "cases.py", elsewhere)
    target = copy / "workspace" / "textkit" / "__pycache__" / "cases.cpython-311.pyc"
    target.parent.mkdir(parents=True, exist_ok=True)
    py_compile.compile(str(elsewhere), cfile=str(target), doraise=True)
    rep = audit(copy, image=False)
    assert any(f.kind == "bytecode" and "cases.cpython-311.pyc" in f.path for f in rep.findings), \
        [f.line() for f in rep.findings]
