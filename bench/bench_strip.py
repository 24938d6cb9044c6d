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
        same = total = 0
        for hidden, exported in requests(tm, rng):
            total += 1
            same += reference(tm, tree, code, hidden, exported) == strip_tests(tm, code, hidden, exported)
        print(f"huge {path}: {len(code)} bytes, libcst parse {t_parse:.1f}s peak {peak / 2**20:.0f} MiB,"
              f" identical {same}/{total}")
        del tree


def time_multiarray() -> None:
    for sp in site.getsitepackages():
        for sub in ("numpy/_core/tests/test_multiarray.py", "numpy/core/tests/test_multiarray.py"):
            path = os.path.join(sp, sub)
            if not os.path.exists(path):
                continue
            code = Path(path).read_text()
            tm = bigfiles.index_test_module(code.encode(), rel_of(path))
            hidden = {d.path for d in tm.defs[::7]}
            transform._parsed.cache_clear()
            tracemalloc.start()
            t0 = time.perf_counter()
            new = strip_tests(tm, code, hidden, set())
            t_new = time.perf_counter() - t0
            peak_new = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            tracemalloc.start()
            t0 = time.perf_counter()
            old = reference(tm, cst.parse_module(code), code, hidden, set())
            t_old = time.perf_counter() - t0
            peak_old = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            print(f"{sub} ({len(code)} bytes, {len(hidden)} hidden): libcst {t_old:.2f}s"
                  f" peak {peak_old / 2**20:.0f} MiB; text cuts {t_new:.3f}s peak"
                  f" {peak_new / 2**20:.0f} MiB; identical: {new == old}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-files", type=int, default=0)
    ap.add_argument("--seed", type=int, default=27)
    ap.add_argument("--huge", action="store_true")
    args = ap.parse_args()
    sys.setrecursionlimit(10000)
    files = test_files()
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
