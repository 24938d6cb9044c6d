"""Equality harness for taskforge.remove.transform.strip_tests (issue 27 item 4).

strip_tests cuts test files as text at ast positions; the definition of the edit
is the libcst stripper (strip_module with drop_tests/drop_bindings), which was the
only path for files up to 256 KB. This script asks both for the same (file,
hidden set, dropped imports) requests and compares the bytes: every test file of
fixtures/repos/*/tests, the test files of site-packages and the stdlib's test/.
Requests per file: single tests, whole classes, every test of a class, a random
30%, each with and without random dropped `from` imports.

    python3 bench/bench_strip.py [--max-files N] [--seed S] [--huge]

--huge also runs libcst once on each file over bigfiles.HUGE (about a gigabyte
for the largest) and times numpy's test_multiarray.py.
"""
from __future__ import annotations

import argparse
import ast
import glob
import os
import random
import site
import sys
import sysconfig
import time
import tracemalloc
from pathlib import Path

import libcst as cst

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from taskforge.analysis import bigfiles  # noqa: E402
from taskforge.analysis.pyparse import parse as parse_python  # noqa: E402
from taskforge.analysis.symbols import resolve_relative  # noqa: E402
from taskforge.analysis.testmodel import TestModule, is_test_name  # noqa: E402
from taskforge.remove import transform  # noqa: E402
from taskforge.remove.transform import strip_module, strip_tests  # noqa: E402


def reference(tm, tree, code, hidden, exported):
    """The libcst strip_tests as it was before the text cutter (copied; the tree is
    parsed once per file, as TestModule.tree was)."""
    drop_bindings = {(b.module, b.name) for b in tm.bindings if b.name and (b.module, b.name) in exported}
    is_pkg = tm.rel.endswith("__init__.py")
    new, changed = strip_module(tree, tm.module, is_pkg, drop_bindings=drop_bindings, drop_tests=hidden)
    if not changed:
        return code, False
    if tm.rel.endswith("conftest.py") or tm.rel.endswith("__init__.py"):
        return new.code, True
    left = 0
    for st in new.body:
        if isinstance(st, cst.FunctionDef) and is_test_name(st.name.value):
            left += 1
        elif isinstance(st, cst.ClassDef):
            body = st.body.body if isinstance(st.body, cst.IndentedBlock) else []
            left += sum(1 for s in body if isinstance(s, cst.FunctionDef) and is_test_name(s.name.value))
    return (new.code if left else None), True


def _span(node) -> tuple[int, int]:
    start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])
    return start, node.end_lineno


def old_line_ranges(tm, code: str, hidden: set[tuple[str, ...]],
                drop_bindings: set[tuple[str, str]]) -> tuple[str | None, bool] | None:
    """bigfiles.strip_tests before the text cutter (copied): line ranges from ast
    positions, for files over HUGE; None sent the file to libcst."""
    tree = parse_python(code)
    lines = code.splitlines(keepends=True)
    starts = [st.lineno for st in ast.walk(tree) if isinstance(st, ast.stmt)]
    if len(starts) != len(set(starts)):
        return None                       # `a; b` on one line: leave it to libcst
    cut: list[tuple[int, int, str]] = []  # (first line, last line, replacement)
    is_pkg = tm.rel.endswith("__init__.py")
    tests_left = 0
    for st in tree.body:
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if (st.name,) in hidden:
                cut.append((*_span(st), ""))
            elif is_test_name(st.name):
                tests_left += 1
        elif isinstance(st, ast.ClassDef):
            if (st.name,) in hidden:
                cut.append((*_span(st), ""))
                continue
            drop = {p[1] for p in hidden if len(p) == 2 and p[0] == st.name}
            methods = [m for m in st.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
            had = sum(1 for m in methods if is_test_name(m.name))
            gone = [m for m in methods if m.name in drop]
            left = had - sum(1 for m in gone if is_test_name(m.name))
            if had and not left and gone:
                cut.append((*_span(st), ""))
                continue
            tests_left += left
            emptied = bool(gone) and len(gone) == len(st.body)
            for i, m in enumerate(gone):
                pad = " " * m.col_offset + "pass\n" if emptied and i == 0 else ""
                cut.append((*_span(m), pad))
        elif isinstance(st, ast.ImportFrom) and drop_bindings:
            src = resolve_relative(tm.module, is_pkg, st.level, st.module)
            keep = [a for a in st.names if (src, a.name) not in drop_bindings]
            if len(keep) != len(st.names):
                indent = " " * st.col_offset
                text = "" if not keep else indent + ast.unparse(
                    ast.ImportFrom(module=st.module, names=keep, level=st.level)) + "\n"
                assert st.end_lineno is not None    # set on every parsed statement
                cut.append((st.lineno, st.end_lineno, text))
    if not cut:
        return code, False
    # Ranges are distinct statements, so they never overlap: apply from the bottom
    # so earlier line numbers stay right.
    for first, last, text in sorted(cut, reverse=True):
        lines[first - 1:last] = [text] if text else []
    new = "".join(lines)
    if tm.rel.endswith(("conftest.py", "__init__.py")):
        return new, True
    return (new if tests_left else None), True


def requests(tm: TestModule, rng: random.Random):
    """(hidden, exported) pairs for one file."""
    paths = [d.path for d in tm.defs]
    classes = sorted({p[0] for p in paths if len(p) == 2} | {p for (p,) in
                                                           [q for q in paths if len(q) == 1]})
    named = sorted({(b.module, b.name) for b in tm.bindings if b.name})
    hiddens = []
    if paths:
        hiddens.append({rng.choice(paths)})
        hiddens.append(set(rng.sample(paths, max(1, int(len(paths) * 0.3)))))
    if classes:
        c = rng.choice(classes)
        hiddens.append({(c,)})
        hiddens.append({p for p in paths if len(p) == 2 and p[0] == c})
    hiddens.append(set())
    out = []
    for h in hiddens:
        out.append((h, set()))
        if named:
            out.append((h, {b for b in named if rng.random() < 0.3} or {rng.choice(named)}))
    return out


def test_files() -> list[str]:
    root = Path(__file__).resolve().parents[1]
    files = sorted(glob.glob(str(root / "fixtures/repos/*/tests/**/*.py"), recursive=True))
    for sp in site.getsitepackages():
        files += sorted(p for p in glob.glob(os.path.join(sp, "**/tests/**/*.py"), recursive=True))
    files += sorted(glob.glob(os.path.join(sysconfig.get_paths()["stdlib"], "test", "**", "*.py"),
                              recursive=True))
    return files


def rel_of(path: str) -> str:
    parts = Path(path).parts
    i = max((k for k, p in enumerate(parts) if p in ("tests", "test")), default=len(parts) - 1)
    return "/".join(parts[i:])


def compare(path: str, rng: random.Random, stats: dict, huge: bool) -> None:
    try:
        data = Path(path).read_bytes()
        code = data.decode("utf-8")
        ast.parse(code)
    except (UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
        stats["skipped"] += 1
        return
    big = len(code) > bigfiles.HUGE
    if big and not huge:
        stats["skipped_huge"] += 1
        return
    tm = bigfiles.index_test_module(data, rel_of(path))
    try:
        t0 = time.perf_counter()
        tree = cst.parse_module(code)
        stats["t_parse_cst"] += time.perf_counter() - t0
    except Exception:               # libcst 1.0 misses some 3.11 syntax
        stats["skipped_cst"] += 1
        return
    stats["files"] += 1
    for hidden, exported in requests(tm, rng):
        t0 = time.perf_counter()
        want = reference(tm, tree, code, hidden, exported)
        t1 = time.perf_counter()
        got = strip_tests(tm, code, hidden, exported)
        t2 = time.perf_counter()
        stats["t_ref"] += t1 - t0
        stats["t_new"] += t2 - t1
        stats["pairs"] += 1
        try:
            drop = {(b.module, b.name) for b in tm.bindings if b.name and (b.module, b.name) in exported}
            transform._cut_tests(tm, code, hidden, drop)
        except transform._Unsupported:
            stats["libcst_fallback"] += 1
        if got == want:
            stats["identical"] += 1
        else:
            stats["differing"] += 1
            stats["diff_files"].add(path)
            if big:
                stats["differing_huge"] += 1


def code_only(text: str | None) -> list[str] | None:
    if text is None:
        return None
    return [ln for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("#")]


def huge_report(paths: list[str]) -> None:
    """Huge files: new output vs libcst on the whole file, timings, memory."""
    for path in paths:
        code = Path(path).read_text()
        tm = bigfiles.index_test_module(code.encode(), rel_of(path))
        rng = random.Random(1)
        tracemalloc.start()
        t0 = time.perf_counter()
        tree = cst.parse_module(code)
        t_parse = time.perf_counter() - t0
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        same = same_old = same_old_code = old_libcst = total = 0
        for hidden, exported in requests(tm, rng):
            total += 1
            new = strip_tests(tm, code, hidden, exported)
            same += reference(tm, tree, code, hidden, exported) == new
            drop = {(b.module, b.name) for b in tm.bindings if b.name and (b.module, b.name) in exported}
            old = old_line_ranges(tm, code, hidden, drop)
            same_old += old == new
            old_libcst += old is None
            same_old_code += old is not None and code_only(old[0]) == code_only(new[0])
        print(f"huge {path}: {len(code)} bytes, libcst parse {t_parse:.1f}s peak {peak / 2**20:.0f} MiB;"
              f" new == libcst {same}/{total}; new == old line ranges {same_old}/{total},"
              f" same but for blank and comment lines {same_old_code}/{total},"
              f" old sent to libcst ({'a; b' if old_libcst else ''}) {old_libcst}/{total}")
        del tree


_ONE_RUN = """
import resource, sys, time
sys.path.insert(0, {root!r}); sys.path.insert(0, {bench!r})
from pathlib import Path
import libcst as cst
import bench_strip as b
code = Path({path!r}).read_text()
tm = b.bigfiles.index_test_module(code.encode(), b.rel_of({path!r}))
hidden = {{d.path for d in tm.defs[::7]}}
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter()
if {mode!r} == "new":
    out = b.strip_tests(tm, code, hidden, set())
else:
    out = b.reference(tm, cst.parse_module(code), code, hidden, set())
t = time.perf_counter() - t0
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(len(hidden), round(t, 3), (rss - base) // 1024, hash(out))
"""


def time_multiarray() -> None:
    """Old (libcst) and new on numpy's test_multiarray.py, each in a fresh process
    (time, and growth of the peak resident set: libcst's parser allocates outside
    Python's heap)."""
    import subprocess

    bench = str(Path(__file__).resolve().parent)
    for sp in site.getsitepackages():
        for sub in ("numpy/_core/tests/test_multiarray.py", "numpy/core/tests/test_multiarray.py"):
            path = os.path.join(sp, sub)
            if not os.path.exists(path):
                continue
            res = {}
            for mode in ("old", "new"):
                script = _ONE_RUN.format(root=str(Path(bench).parent), bench=bench, path=path, mode=mode)
                out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                                     check=True, env={**os.environ, "PYTHONHASHSEED": "0"})
                res[mode] = out.stdout.split()
            print(f"{sub} ({os.path.getsize(path)} bytes, {res['new'][0]} hidden): libcst {res['old'][1]}s"
                  f" +{res['old'][2]} MiB peak RSS; text cuts {res['new'][1]}s +{res['new'][2]} MiB;"
                  f" identical: {res['old'][3] == res['new'][3]}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-files", type=int, default=0)
    ap.add_argument("--seed", type=int, default=27)
    ap.add_argument("--huge", action="store_true")
    ap.add_argument("--huge-only", action="store_true", help="only the huge-file report and timing")
    args = ap.parse_args()
    sys.setrecursionlimit(10000)
    files = test_files()
    if args.huge_only:
        huge_report([f for f in files if os.path.getsize(f) > bigfiles.HUGE])
        time_multiarray()
        return
    rng = random.Random(args.seed)
    if args.max_files and len(files) > args.max_files:
        files = sorted(rng.sample(files, args.max_files))
    stats: dict = {k: 0 for k in ("files", "pairs", "identical", "differing", "differing_huge",
                                  "libcst_fallback", "skipped", "skipped_cst", "skipped_huge",
                                  "t_ref", "t_new", "t_parse_cst")}
    stats["diff_files"] = set()
    huge = []
    t0 = time.perf_counter()
    for path in files:
        if os.path.getsize(path) > bigfiles.HUGE:
            huge.append(path)
        compare(path, rng, stats, args.huge)
    diffs = stats.pop("diff_files")
    print(f"candidates {len(files)}, {time.perf_counter() - t0:.0f}s")
    for k, v in stats.items():
        print(f"  {k}: {v:.2f}" if isinstance(v, float) else f"  {k}: {v}")
    for d in sorted(diffs):
        print("  DIFF", d)
    if args.huge:
        print(f"huge files (> {bigfiles.HUGE} bytes): {len(huge)}")
        huge_report(huge)
        time_multiarray()


if __name__ == "__main__":
    main()
