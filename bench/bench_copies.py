"""How well an attacker tells originals from copies, per copy style.

    PYTHONPATH=. python bench/bench_copies.py [--per-package N] [--verifies V] [--held-out] [--seal]

Fits the distinguisher of tests/copies_attack.py on the planted groups of half
the corpus files and scores it on the other half (and the best single signal),
for CopyStyle.LEGACY (the copies before issue 23) and CopyStyle.MATCHED.
Prints one JSON line per style.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from copies_attack import NAMES, _strict_pick, accuracy, best_single, binomial_upper_p, chance, fit  # noqa: E402
from copies_harness import corpus_files, corpus_of, held_out, planted_samples, split  # noqa: E402

from taskforge.grade.copies import CopyStyle  # noqa: E402


def measure(style: CopyStyle, per_package: int, verifies: int, only_held_out: bool = False,
            seal: bool = False) -> dict:
    files = corpus_files(per_package)
    corpus = corpus_of(files)
    # --held-out: only the files the reader's weights (copy_odds.WEIGHTS) were
    # not fitted on, where the balanced one-step copies are judged fairly.
    train_files, test_files = split(held_out(files) if only_held_out else files)
    t0 = time.monotonic()
    train, st1 = planted_samples(train_files, style, corpus, verifies, seal=seal)
    test, st2 = planted_samples(test_files, style, corpus, verifies, seal=seal)
    w = fit(train)
    acc = accuracy(w, test)
    j, sign = best_single(train)
    wj = [0.0] * len(NAMES)
    wj[j] = sign
    single = sum(_strict_pick(wj, s.feats) == s.truth for s in test) / max(1, len(test))
    hits = sum(1 for s in test if __import__("copies_attack").pick(w, s.feats) == s.truth)
    top = sorted(zip(NAMES, w), key=lambda x: -abs(x[1]))[:6]
    from copies_attack import pick
    kinds: dict[str, list[int]] = {}
    block_kinds: dict[str, list[int]] = {}
    for s in test:
        k = next(n for n, x in zip(NAMES[:4], s.feats[0][:4]) if x) if any(s.feats[0][:4]) else "?"
        kinds.setdefault(k, []).append(int(pick(w, s.feats) == s.truth))
        if s.block:
            block_kinds.setdefault(k, []).append(int(pick(w, s.feats) == s.truth))
    split_by = {}
    for name, part in (("sealed", [s for s in test if s.sealed]),
                       ("not_sealed", [s for s in test if not s.sealed]),
                       ("in_blocks", [s for s in test if s.block]),
                       ("matched", [s for s in test if s.matched and not s.block]),
                       ("one_step", [s for s in test if not s.block and not s.matched])):
        if part:
            right = sum(1 for s in part if pick(w, s.feats) == s.truth)
            split_by[name] = {"groups": len(part), "chance": round(chance(part), 3),
                              "accuracy": round(right / len(part), 3),
                              "p_value": binomial_upper_p(right, [1 / len(s.feats) for s in part])}
    # What the reward depends on: every group of a planted file picked right.
    per_file: dict[str, list] = {}
    for s in test:
        per_file.setdefault(s.source, []).append(s)
    all_right = sum(1 for ss in per_file.values() if all(pick(w, s.feats) == s.truth for s in ss))
    by_chance = sum(math.prod(1 / len(s.feats) for s in ss) for ss in per_file.values())
    split_by["files_all_right"] = {"files": len(per_file), "fitted": all_right,
                                   "by_chance": round(by_chance, 1)}
    btrain = [s for s in train if s.block]
    btest = [s for s in test if s.block]
    if len(btrain) >= 10 and btest:
        wb = fit(btrain)           # an attacker that studies block groups alone
        right = sum(1 for s in btest if pick(wb, s.feats) == s.truth)
        split_by["in_blocks_fitted_on_blocks"] = {
            "groups": len(btest), "chance": round(chance(btest), 3), "accuracy": round(right / len(btest), 3),
            "p_value": binomial_upper_p(right, [1 / len(s.feats) for s in btest])}
    return {"style": style.value, "sealed": seal,
            "tests_sealed": st1.get("sealed_tests", 0) + st2.get("sealed_tests", 0),
            "tests_in_blocks": st1.get("blocked", 0) + st2.get("blocked", 0),
            "tests_matched": st1.get("matched", 0) + st2.get("matched", 0),
            "split": split_by, "groups_train": len(train), "groups_test": len(test),
            "tests": st1["tests"] + st2["tests"], "tests_copied": st1["copied"] + st2["copied"],
            "chance": round(chance(test), 3), "accuracy": round(acc, 3),
            "p_value": binomial_upper_p(hits, [1 / len(s.feats) for s in test]),
            "best_single": NAMES[j], "best_single_accuracy": round(single, 3),
            "top_weights": [(n, round(x, 2)) for n, x in top],
            "by_kind": {k: (len(v), round(sum(v) / len(v), 2)) for k, v in sorted(kinds.items())},
            "in_blocks_by_kind": {k: (len(v), round(sum(v) / len(v), 2)) for k, v in sorted(block_kinds.items())},
            "seconds": round(time.monotonic() - t0, 1)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--per-package", type=int, default=25)
    ap.add_argument("--verifies", type=int, default=1)
    ap.add_argument("--style", choices=[s.value for s in CopyStyle], action="append")
    ap.add_argument("--held-out", action="store_true", help="only files the reader's weights never saw")
    ap.add_argument("--seal", action="store_true", help="seal the planted files as verify does (grade/seals.py)")
    a = ap.parse_args()
    for style in (a.style or [s.value for s in CopyStyle]):
        print(json.dumps(measure(CopyStyle(style), a.per_package, a.verifies, a.held_out, a.seal)), flush=True)


if __name__ == "__main__":
    main()
