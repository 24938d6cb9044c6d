"""The fixtures' tasks as a fingerprint: for each bundled fixture, generated with
the default options as a fixed git commit, every task id and a SHA-256 over its
workspace and its hidden tests (paths and bytes), and over its gold patch and
statement.

    python3 scripts/fixture_fingerprint.py --out before.json      # on the old code
    python3 scripts/fixture_fingerprint.py --out after.json       # on the new
    python3 scripts/fixture_fingerprint.py --compare before.json after.json

A refactor that says "behaviour unchanged" (issue 27) shows equal fingerprints.
Run from the checkout being measured: its own `taskforge/` is imported.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

FIXED = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
         "GIT_COMMITTER_EMAIL": "t@t", "GIT_AUTHOR_DATE": "2024-01-01T00:00:00+0000",
         "GIT_COMMITTER_DATE": "2024-01-01T00:00:00+0000", "PATH": "/usr/bin:/bin"}


def as_repo(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache", "*.egg-info"))
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "fixture"]):
        subprocess.run(["git", "-c", "init.defaultBranch=main", *args], cwd=dest, env=FIXED, check=True)
    return dest


def tree_hash(root: Path) -> str:
    h = hashlib.sha256()
    if root.is_dir():
        for p in sorted(root.rglob("*")):
            if p.is_file() and not p.is_symlink():
                h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def fingerprint(name: str, work: Path) -> dict[str, dict[str, str]]:
    from taskforge.orchestrate.pipeline import Options, generate

    repo = as_repo(ROOT / "fixtures" / "repos" / name, work / f"{name}-src")
    out = work / f"{name}-tasks"
    report = generate(str(repo), out, Options())
    got = {}
    for tid in sorted(report.tasks):
        t = out / tid
        got[tid] = {"workspace": tree_hash(t / "workspace"), "hidden": tree_hash(t / "hidden"),
                    "gold": hashlib.sha256((t / "gold.patch").read_bytes()).hexdigest()[:16],
                    "statement": hashlib.sha256((t / "problem_statement.md").read_bytes()).hexdigest()[:16]
                    if (t / "problem_statement.md").is_file() else ""}
    return got


def compare(a: dict, b: dict) -> list[str]:
    out = []
    for fx in sorted(set(a) | set(b)):
        ta, tb = a.get(fx, {}), b.get(fx, {})
        for tid in sorted(set(ta) ^ set(tb)):
            out.append(f"{fx}: task {tid} only in {'the first' if tid in ta else 'the second'}")
        for tid in sorted(set(ta) & set(tb)):
            for k in ta[tid]:
                if ta[tid][k] != tb[tid].get(k):
                    out.append(f"{fx}: {tid}: {k} differs")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="write the fingerprint here (JSON)")
    ap.add_argument("--only", action="append", help="these fixtures only (textkit, geomlib, ledger)")
    ap.add_argument("--compare", nargs=2, metavar=("A", "B"), help="compare two fingerprints")
    args = ap.parse_args()
    if args.compare:
        a, b = (json.loads(Path(p).read_text()) for p in args.compare)
        diffs = compare(a, b)
        print("\n".join(diffs) or f"equal: {sum(len(v) for v in a.values())} tasks")
        return 1 if diffs else 0
    names = args.only or sorted(p.name for p in (ROOT / "fixtures" / "repos").iterdir() if p.is_dir())
    with tempfile.TemporaryDirectory(prefix="tf-fingerprint-") as tmp:
        result = {n: fingerprint(n, Path(tmp)) for n in names}
    text = json.dumps(result, indent=1, sort_keys=True)
    if args.out:
        Path(args.out).write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TASKFORGE_LOG", "warning")
    sys.exit(main())
