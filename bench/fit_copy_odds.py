"""Fit the reader's weights (taskforge/grade/copy_odds.py WEIGHTS).

    PYTHONPATH=. python bench/fit_copy_odds.py [--per-package N] [--rounds R]

Plants copies in the default style over the bench corpus (tests/copies_harness.py)
and fits the conditional logit of tests/copies_attack.py on the one-step groups
of each kind of value (numbers, strings, exceptions, other). Round 1 plants
without balancing; each further round plants balanced by the weights so far,
fits what a reader still finds there and adds half of it (balancing changes which tests
keep one-step copies, so the first fit is not the last word). Prints the
weights as the dict to paste, and per round and kind the held-out accuracy of a
half-fitted reader on stderr.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from copies_attack import NAMES, accuracy, chance, fit  # noqa: E402
from copies_harness import corpus_files, corpus_of, for_fitting, planted_samples, split  # noqa: E402

from taskforge.grade import copies as cp  # noqa: E402
from taskforge.grade import copy_odds  # noqa: E402


def one_round(halves, corpus, verifies: int) -> dict[str, dict[str, float]]:
    # The one-step groups as the default style plants them: the tests no
    # exchange block took (mostly the forms blocks had no partner for).
    parts = [[s for s in planted_samples(h, cp.DEFAULT_STYLE, corpus, verifies)[0]
              if not s.block and not s.matched] for h in halves]
    out = {}
    for kind in copy_odds.KINDS:
        mine = [[s for s in part if s.feats[0][NAMES.index(kind)]] for part in parts]
        held = accuracy(fit(mine[0]), mine[1])
        w = fit(mine[0] + mine[1])
        print(json.dumps({"balanced": cp.BALANCED, "kind": kind, "groups": len(mine[0]) + len(mine[1]),
                          "held_out_accuracy": round(held, 3), "chance": round(chance(mine[1]), 3)}),
              file=sys.stderr, flush=True)
        out[kind] = {n: x for n, x in zip(NAMES, w)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--per-package", type=int, default=60)
    ap.add_argument("--verifies", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=1)
    a = ap.parse_args()
    files = corpus_files(a.per_package)
    corpus = corpus_of(files)
    halves = split(for_fitting(files))     # copies_harness.held_out keeps the rest for judging
    total: dict[str, dict[str, float]] = {k: {} for k in copy_odds.KINDS}
    for r in range(a.rounds):
        # Round 1 keeps every proposed set (no weights: every score 0), so the
        # fit is the reader's prior: the proposals are symmetric (copy_steps).
        cp.BALANCED = True
        copy_odds.WEIGHTS = total
        found = one_round(halves, corpus, a.verifies)
        step = 1.0 if r == 0 else 0.5          # damped: a full residual step overshoots
        total = {k: {n: total[k].get(n, 0.0) + step * found[k].get(n, 0.0) for n in NAMES}
                 for k in copy_odds.KINDS}
    print("WEIGHTS: dict[str, dict[str, float]] = {")
    for kind in copy_odds.KINDS:
        print(f'    "{kind}": {{')
        for n in NAMES:
            if abs(total[kind][n]) >= 0.005:
                print(f'        "{n}": {total[kind][n]:.3f},')
        print("    },")
    print("}")


if __name__ == "__main__":
    main()
