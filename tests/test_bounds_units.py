"""The host's bounds without an engine: the limit decisions, the symlink mode
parser, the patch tools under rlimits, the monitor cap, and a removal that a
3,000-deep tree cannot make raise."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import hostkit  # noqa: E402

from taskforge.fsutil import rmtree  # noqa: E402
from taskforge.grade.bounds import (  # noqa: E402
    Bounds,
    Survey,
    entry_breach,
    in_workspace,
    patch_breach,
    patch_facts,
    survey,
)
from taskforge.grade.decide import MAX_MONITOR_FINDINGS, monitor_findings  # noqa: E402
from taskforge.grade.events import MONITOR_KEEP, Monitor, parse_events  # noqa: E402
from taskforge.grade.findings import FindingKind as K  # noqa: E402
from taskforge.grade.findings import Policy, Severity  # noqa: E402
from taskforge.grade.testrun import RunResult  # noqa: E402
from taskforge.package.writer import (  # noqa: E402
    ApplyError,
    ApplyLimits,
    apply_patch,
    header_mode,
    is_link_mode,
    unsafe_diff,
)

# ------------------------------------------------------------ symlink modes

@pytest.mark.parametrize("text,mode,link", [
    (" 120000", 0o120000, True),
    (" 0120000", 0o120000, True),           # the leading zero the old check missed
    (" 000000120000", 0o120000, True),
    ("  +0120000", 0o120000, True),         # strtoul takes blanks and a sign
    (" 120000\r", 0o120000, True),          # CRLF: \r is a space to strtoul
    (" 7120000", 0o7120000, True),          # bits above S_IFMT do not hide the type
    (" -37777657777", 0o120001, True),      # a negative number wraps to a link mode
    (" 100644", 0o100644, False),
    (" 0100755", 0o100755, False),
    (" 160000", 0o160000, False),           # a gitlink, not a symlink
    (" 040000", 0o40000, False),
    ("", None, False),
    (" x120000", None, False),
    (" 99", None, False),                   # no octal digit: git refuses the line
])
def test_header_mode_reads_as_git_does(text, mode, link):
    assert header_mode(text) == mode
    assert is_link_mode(text) is link


LINK_LINES = ["new file mode 120000", "new file mode 0120000", "new file mode +120000",
              "new file mode 7120000", "new mode 0120000", "old mode 120000",
              "deleted file mode 0120000"]


@pytest.mark.parametrize("line", LINK_LINES)
def test_every_spelling_of_a_link_mode_is_refused(line):
    patch = f"diff --git a/x b/x\n{line}\n--- /dev/null\n+++ b/x\n@@ -0,0 +1 @@\n+/tmp\n"
    assert "symbolic link" in (unsafe_diff(patch) or "")
    assert "symbolic link" in (unsafe_diff(patch.replace("\n", "\r\n")) or "")


@pytest.mark.parametrize("header,refused", [
    ('diff --git "a/docs/caf\\303\\251.md" "b/docs/caf\\303\\251.md"', False),   # git's quoting of UTF-8
    ('+++ "b/tab\\there.md"', True),                      # a control character in a name
    ('+++ "b/\\056\\056/x"', True),                       # ".." spelt in octal
    ('+++ "b/x\\\\y"', True),                             # a backslash in the name
    ('+++ "b/\\377.md"', True),                           # not UTF-8
    ('+++ b/plain name.md', False),
])
def test_quoted_names_are_judged_as_git_unquotes_them(header, refused):
    assert (unsafe_diff(header + "\n") is not None) is refused


@pytest.mark.parametrize("hunk,refused", [
    ('@@ -1,2 +1 @@\n-- "a\\b" ../up\n a\n', False),     # deletes a line `-- "a\b" ../up`
    ("@@ -1 +1,2 @@\n a\n++ ../../etc\n", False),          # adds a line `+ ../../etc`
    ("@@ -0,0 +1 @@\n++++ ../x\n", False),
    ("@@ -1 +1 @@\n-a\n+b\n--- a/../x\n+++ b/../x\n", True),   # past the hunk: headers
    ("@@ -1 +1 @@\n-a\n+b\n\\ No newline at end of file\n+++ b/../x\n", True),
])
def test_a_hunk_line_is_content_never_a_header(hunk, refused):
    """Red team 11: a deleted line that reads `-- "x"` is `--- "x"` in the diff,
    which the header check took for a file name (an honest patch refused)."""
    patch = f"diff --git a/f.sql b/f.sql\n--- a/f.sql\n+++ b/f.sql\n{hunk}"
    assert (unsafe_diff(patch) is not None) is refused


@pytest.mark.parametrize("index,refused", [
    ("index 0000000..e69de29 120000", True), ("index 0000000..e69de29 0120000", True),
    ("index abc..def  0120000", True), ("index 0000000..e69de29 100644", False),
    ("index 0000000..e69de29", False)])
def test_the_index_line_mode(index, refused):
    patch = f"diff --git a/x b/x\n{index}\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"
    assert (unsafe_diff(patch) is not None) is refused


@pytest.mark.parametrize("line", ["new file mode 0120000", "new file mode +120000",
                                  "new file mode 7120000"])
def test_git_makes_a_link_of_each_refused_spelling(line, tmp_path):
    """The refusal is needed: git apply itself turns each of these into a symlink."""
    subprocess.run(["git", "apply", "-"], cwd=tmp_path, input=hostkit.symlink_patch(line),
                   text=True, check=True)
    assert (tmp_path / "escape").is_symlink()
    fresh = tmp_path / "ours"
    fresh.mkdir()
    assert "symbolic link" in (apply_patch(fresh, hostkit.symlink_patch(line)) or "")
    assert not (fresh / "escape").exists()


# ------------------------------------------------------------ the patch text

B = Bounds(patch_bytes=10_000, file_bytes=1000, extra_files=10, depth=4, path_chars=40)


def _facts(text):
    return patch_breach(patch_facts(text), B, B.max_entries(0))


@pytest.mark.parametrize("name,text,needle", [
    ("honest", hostkit.text_new_file("a/b.py", "x = 1\n"), None),
    ("text too large", hostkit.text_new_file("a.py", "x" * 12_000 + "\n"), "over"),
    ("too many files", hostkit.many_files_patch(11, per_dir=100), "names 11 files"),
    ("too deep", hostkit.deep_patch(5), "directories deep"),
    ("just deep enough", hostkit.deep_patch(3), None),
    ("path too long", hostkit.text_new_file("p" * 41, "x\n"), "characters"),
    ("binary inflates", hostkit.literal_patch("b.bin", 1001, lambda: iter([bytes(1001)])), "inflates"),
    ("binary small", hostkit.literal_patch("b.bin", 1000, lambda: iter([bytes(1000)])), None),
    ("plain diff headers", "--- a/x\n+++ b/" + "/".join("d" * 5) + "\n@@ -1 +1 @@\n-a\n+b\n", "deep"),
])
def test_patch_breach_table(name, text, needle):
    why = _facts(text)
    assert (why is None) if needle is None else (needle in (why or "")), (name, why)


def test_a_path_the_workspace_has_is_no_breach():
    text = hostkit.text_new_file("a/b/c/d/e.py", "x = 1\n")
    facts = patch_facts(text)
    assert patch_breach(facts, B, 100) is not None
    assert patch_breach(facts, B, 100, known=lambda rel: rel == "a/b/c/d/e.py") is None


def test_patch_facts_count_files_and_binary_sizes():
    text = hostkit.many_files_patch(3) + hostkit.literal_patch("z.bin", 77, lambda: iter([bytes(77)]))
    f = patch_facts(text)
    assert f.files == 4 and f.largest_binary == 77
    assert {"textkit/gen0/m0.py", "z.bin"} <= f.paths


# ------------------------------------------------------------ the tree

@pytest.mark.parametrize("rel,size,entries,tree_bytes,needle", [
    ("a/b.py", 10, 1, 10, None),
    ("a/b/c/d/e", 0, 1, 0, "directories deep"),
    ("x" * 41, 0, 1, 0, "characters"),
    ("big.bin", 1001, 1, 1001, "bytes"),
    ("f", 10, 1, 10 ** 12, "MiB"),
    ("f", 10, 11, 10, "files and directories"),
])
def test_entry_breach_table(rel, size, entries, tree_bytes, needle):
    why = entry_breach(rel, size, Survey(entries=entries, bytes=tree_bytes), B.model_copy(
        update={"tree_bytes": 10 ** 9}), 10)
    assert (why is None) if needle is None else (needle in (why or "")), why


@pytest.fixture(autouse=True)
def _no_deep_leftovers(tmp_path):
    """The chains these tests make are deeper than pytest's own clean-up of old
    temporary directories can remove (it recurses): remove them here."""
    yield
    from taskforge.fsutil import rmtree as remove

    remove(tmp_path)


def deep_chain(root: Path, levels: int) -> Path:
    """A chain of `levels` directories, made by relative steps (its path is longer
    than PATH_MAX), with a file at each level."""
    root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root, os.O_RDONLY)
    try:
        for _ in range(levels):
            os.mkdir("d", dir_fd=fd)
            nxt = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nxt
            os.close(os.open("f", os.O_CREAT | os.O_WRONLY, dir_fd=fd))
    finally:
        os.close(fd)
    return root


def test_survey_stops_at_the_first_breach_and_never_follows_links(tmp_path):
    tree = deep_chain(tmp_path / "t", 3000)
    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    (tree / "link").symlink_to(outside)
    s = survey(tree, Bounds(depth=48), 10_000)
    assert s.breach and "49 directories deep" in s.breach
    assert s.entries < 200                    # it did not walk the 6,000 entries
    small = tmp_path / "small"
    (small / "pkg").mkdir(parents=True)
    (small / "pkg" / "m.py").write_text("x = 1\n")
    (small / "pkg" / "out").symlink_to(outside)
    s = survey(small, Bounds(), 100)
    assert s.breach is None and s.symlinks == ["pkg/out"] and s.entries == 3


def test_survey_spares_what_the_workspace_has(tmp_path):
    ws, tree = tmp_path / "ws", tmp_path / "tree"
    for root in (ws, tree):
        (root / "data").mkdir(parents=True)
        (root / "data" / "big.bin").write_bytes(bytes(2000))
    small = Bounds(file_bytes=1000)
    assert survey(tree, small, 100).breach
    assert survey(tree, small, 100, known=in_workspace(ws)).breach is None
    (tree / "data" / "big.bin").write_bytes(bytes(3000))      # grown by the solution
    assert survey(tree, small, 100, known=in_workspace(ws)).breach


# ------------------------------------------------------------ the patch tools, bounded

def test_a_literal_that_inflates_past_the_file_limit_stops_git(tmp_path):
    """Past the header check (called directly): the file-size rlimit stops git."""
    patch = hostkit.literal_patch("blob.bin", 32 << 20, lambda: (bytes(1 << 20) for _ in range(32)))
    with pytest.raises(ApplyError, match="size limit|memory"):
        apply_patch(tmp_path, patch, ApplyLimits(file_bytes=16 << 20))
    assert not (tmp_path / "blob.bin").exists() or (tmp_path / "blob.bin").stat().st_size <= 16 << 20


def test_a_delta_bomb_is_stopped_by_the_memory_limit(tmp_path):
    """A few KB of delta hunk that rebuilds a 1 KiB file as 1 GiB: unbounded, git
    holds and writes the gigabyte (shown at 64 MiB); bounded, it is refused."""
    task = tmp_path / "task"
    (task / "workspace" / "textkit").mkdir(parents=True)
    (task / "workspace" / "textkit" / "f.py").write_text("x = 1\n" * 170)
    small = hostkit.delta_bomb_patch(task, "textkit/f.py", 64)
    loose = tmp_path / "loose"
    shutil.copytree(task / "workspace", loose)
    assert apply_patch(loose, small) is None
    assert (loose / "textkit" / "f.py").stat().st_size == 64 << 20
    bomb = hostkit.delta_bomb_patch(task, "textkit/f.py", 1024)
    assert len(bomb) < 8192 and patch_breach(patch_facts(bomb), Bounds(), 100) is None
    tight = tmp_path / "tight"
    shutil.copytree(task / "workspace", tight)
    with pytest.raises(ApplyError):
        apply_patch(tight, bomb, ApplyLimits())
    assert (tight / "textkit" / "f.py").stat().st_size < 16 << 20


def test_the_patch_tools_have_a_deadline(tmp_path):
    with pytest.raises(ApplyError, match="took over"):
        apply_patch(tmp_path, hostkit.many_files_patch(20_000), ApplyLimits(seconds=0.2))


# ------------------------------------------------------------ the monitor cap

def _monitor_lines(n: int, sites: int) -> str:
    evs = [{"$report_type": "SessionStart", "pid": 1}]
    evs += [{"$report_type": "Monitor", "kind": "process", "site": f"pkg/x.py:{i % sites}"}
            for i in range(n)]
    return "\n".join(json.dumps(e) for e in evs) + "\n"


def test_the_parser_keeps_each_monitor_site_once_and_counts_the_rest():
    p = parse_events(_monitor_lines(5000, 10))
    assert len(p.monitor) == 10 and p.monitor_dropped == 0
    p = parse_events(_monitor_lines(MONITOR_KEEP + 500, 10 ** 9))
    assert len(p.monitor) == MONITOR_KEEP and p.monitor_dropped == 500
    lenient = parse_events(_monitor_lines(3000, 10), strict=False)
    assert len(lenient.monitor) == 3000        # the naive grader keeps everything


@pytest.mark.parametrize("distinct,dropped,bounds,findings,flood", [
    (5, 0, True, 5, False),
    (MAX_MONITOR_FINDINGS, 0, True, MAX_MONITOR_FINDINGS, False),
    (MAX_MONITOR_FINDINGS + 1, 0, True, MAX_MONITOR_FINDINGS + 1, True),
    (MONITOR_KEEP, 149_000, True, MAX_MONITOR_FINDINGS + 1, True),
    (3000, 0, False, 3000, False),
])
def test_monitor_findings_are_capped(distinct, dropped, bounds, findings, flood):
    run = RunResult(monitor=[Monitor(report_type="Monitor", kind="process", site=f"pkg/x.py:{i}")
                             for i in range(distinct)], monitor_dropped=dropped)
    out = monitor_findings(run.monitor, run.monitor_dropped, frozenset(), Policy.SCORE, bounded=bounds)
    assert len(out) == findings
    floods = [f for f in out if f.kind is K.MONITOR_FLOOD]
    assert bool(floods) is flood
    assert all(f.severity is Severity.FATAL for f in floods)


# ------------------------------------------------------------ removal

def test_rmtree_removes_what_shutil_cannot(tmp_path):
    tree = deep_chain(tmp_path / "t", 3000)
    with pytest.raises(RecursionError):
        shutil.rmtree(tree)                    # Python 3.11's rmtree recurses
    tree = deep_chain(tmp_path / "t2", 3000)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("x")
    (tree / "d" / "link").symlink_to(outside)
    (tree / "locked").mkdir()
    (tree / "locked" / "f").write_text("x")
    os.chmod(tree / "locked", 0o000)
    assert rmtree(tree) == []
    assert not tree.exists() and (outside / "keep").exists()
    assert rmtree(tmp_path / "missing") == []
    (tmp_path / "file").write_text("x")
    assert rmtree(tmp_path / "file") == [] and not (tmp_path / "file").exists()


def test_rmtree_reports_instead_of_raising(tmp_path):
    d = tmp_path / "d"
    (d / "sub").mkdir(parents=True)
    (d / "sub" / "f").write_text("x")
    os.chmod(d / "sub", 0o500)               # root ignores this: skip where it holds
    if os.geteuid() != 0:
        errors = rmtree(d)
        assert errors and d.exists()
        os.chmod(d / "sub", 0o700)
    assert rmtree(d) == [] and not d.exists()
