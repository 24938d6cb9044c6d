"""How much of the graded tests sealing covers, on generated tasks.

    PYTHONPATH=. python bench/bench_seals.py TASK_DIR_OR_OUT_DIR [...] [--json]

For each task (a directory with task.json and hidden/), the hidden test files
as the task ships them are read as verify's seal step reads them
(grade/verify.sealed_ids; the task's grading.unsealed left out): how many FAIL_TO_PASS ids have a sealed site,
how many have a must-fail value copy, and how many have neither (a forger's
target) before and after seals, and how many a seal would protect but for
their answers, which another row of their test file shows (`shown`:
grade/seals.leaky_tokens), and the near twins of raising inputs the task
keeps (`twins`: grade/copy_raises.fresh_copies; `twins_must_raise`: those the
gold rejects) and the graded tests that have any. No sandbox runs; the
figures are the source's.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from taskforge.grade.copies import test_ref  # noqa: E402
from taskforge.grade.verify import sealed_ids, shown_ids  # noqa: E402


def tasks_under(paths: list[str]) -> list[Path]:
    out = []
    for p in map(Path, paths):
        out += [p] if (p / "task.json").is_file() else sorted(t.parent for t in p.glob("*/task.json"))
    return out


def measure(task: Path) -> dict:
    rec = json.loads((task / "task.json").read_text())
    graded = rec["FAIL_TO_PASS"]
    copied = {(m["file"], tuple(m.get("cls", [])), m["func"]) for m in rec.get("grading", {}).get("copies", [])
              if m.get("kind") == "value" and not m.get("fresh")}      # a twin protects nothing from a forger
    has_copy = {t for t in graded if (r := test_ref(t)) is not None and (r.file, r.cls, r.func) in copied}
    skip = set(rec.get("grading", {}).get("unsealed", []))
    literal = sealed_ids(task / "hidden", graded, skip)
    # built expectations the task keeps a shape of (grade/shapes.py) seal more
    sealed = sealed_ids(task / "hidden", graded, skip, rec.get("grading", {}).get("shapes") or None)
    shown = shown_ids(task / "hidden", graded, skip, rec.get("grading", {}).get("shapes") or None) - sealed
    twins = [m for m in rec.get("grading", {}).get("copies", []) if m.get("fresh")]
    twinned = {(m["file"], tuple(m.get("cls", [])), m["func"]) for m in twins}
    return {"twins": len(twins), "twins_must_raise": sum("failed" not in m.get("expect", {}).values() for m in twins),
            "twinned": sum(1 for t in graded if (r := test_ref(t)) is not None and (r.file, r.cls, r.func) in twinned),
            "task": task.name, "graded": len(graded), "sealed": len(sealed), "by_shape": len(sealed - literal),
            "shown": len(shown),
            "shapes": len(rec.get("grading", {}).get("shapes") or {}), "copied": len(has_copy),
            "unprotected_before": len(set(graded) - has_copy),
            "unprotected_after": len(set(graded) - has_copy - sealed)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    rows = [measure(t) for t in tasks_under(a.paths)]
    total = {k: sum(r[k] for r in rows) for k in ("graded", "sealed", "by_shape", "shown", "shapes", "copied",
                                                  "unprotected_before", "unprotected_after", "twins",
                                                  "twins_must_raise", "twinned")}
    if a.json:
        print(json.dumps({"tasks": rows, "total": total}))
        return
    for r in rows:
        print(f"{r['task'][:60]:60} graded {r['graded']:4} sealed {r['sealed']:4} (by shape {r['by_shape']:3}) "
              f"shown {r['shown']:4} copied {r['copied']:4} twins {r['twins']:3} ({r['twinned']} tests) "
              f"unprotected {r['unprotected_before']:4} -> {r['unprotected_after']:4}")
    print(f"{len(rows)} tasks: {total}")


if __name__ == "__main__":
    main()
