"""Planted files as verify makes them, for the distinguisher in copies_attack.py.

Each test file of the corpus (the fixtures, and test files that installed
packages ship, read where they are) goes through the real pieces: `propose`
(the copies of every test of the file), `choose_copies` (what one verify
plants) and `plant` (the renamed, interleaved file) in a scratch directory.
The attacker then sees only the planted text; the plan says which member of
each group is the original.
"""
from __future__ import annotations

import ast
import random
import shutil
import site
import tempfile
from pathlib import Path

from copies_attack import Context, Corpus, Sample, features, groups

from taskforge.grade import copies as cp
from taskforge.grade.verify import choose_copies

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("numpy", "pandas", "scipy", "networkx", "sympy", "libcst", "jsonschema", "dill",
            "IPython", "pyarrow", "mpmath", "referencing", "multiprocess")
MAX_BYTES = 40_000


def corpus_files(limit_per_package: int = 25) -> list[tuple[Path, str]]:
    """(root, relative path) of test files: the fixtures', then installed packages' tests."""
    out: list[tuple[Path, str]] = []
    for repo in sorted((ROOT / "fixtures" / "repos").iterdir()):
        for p in sorted(repo.rglob("test_*.py")):
            out.append((repo, p.relative_to(repo).as_posix()))
    for sp in site.getsitepackages():
        for pkg in PACKAGES:
            base = Path(sp) / pkg
            if not base.is_dir():
                continue
            found = sorted(p for p in base.rglob("test_*.py") if "tests" in p.parts
                           and 2_000 < p.stat().st_size < MAX_BYTES)
            rng = random.Random(pkg)
            rng.shuffle(found)
            for p in found[:limit_per_package]:
                out.append((base, p.relative_to(base).as_posix()))
    return out


def test_ids(text: str, rel: str) -> list[str]:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    out = []
    for n in tree.body:
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith("test"):
            out.append(f"{rel}::{n.name}")
        elif isinstance(n, ast.ClassDef) and n.name.startswith("Test"):
            out += [f"{rel}::{n.name}::{m.name}" for m in n.body
                    if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and m.name.startswith("test")]
    return out


def planted_samples(files: list[tuple[Path, str]], style: cp.CopyStyle, corpus: Corpus,
                    verifies: int = 1, seed: str = "bench", seal: bool = False) -> tuple[list[Sample], dict]:
    """Groups of the original and its planted copies, one feature matrix each,
    over `verifies` plantings of every file; and counts (tests, tests copied).
    `seal`: then sealed as verify seals (grade/seals.py)."""
    samples: list[Sample] = []
    stats = {"files": 0, "tests": 0, "copied": 0, "groups": 0}
    scratch = Path(tempfile.mkdtemp(prefix="tf-copies-"))
    try:
        for rel, text, ids, others in _readable(files, corpus):
            if not ids:
                continue
            work = scratch / "src"
            (work / rel).parent.mkdir(parents=True, exist_ok=True)
            (work / rel).write_text(text, encoding="utf-8")
            # The grader's reader has the prior the attacker has (its tree's
            # other test files are the machine's, here the corpus).
            proposed = cp.propose(work, ids, f"{seed}:{rel}", style=style, corpus=others)
            stats["files"] += 1
            stats["tests"] += len(ids)
            stats["copied"] += len({(tuple(m.cls), m.func) for m in proposed})
            stats["blocked"] = stats.get("blocked", 0) + len({(tuple(m.cls), m.func) for m in proposed
                                                              if m.block})
            stats["matched"] = stats.get("matched", 0) + len({(tuple(m.cls), m.func) for m in proposed
                                                              if m.matched})
            for v in range(verifies):
                rng = random.Random(f"{seed}:{rel}:{v}")
                chosen = _without_twins(choose_copies(proposed, rng))
                if not chosen:
                    continue
                (work / rel).write_text(text, encoding="utf-8")
                plan = cp.plant(work, ids, chosen, rng=rng)
                if seal:
                    from taskforge.grade.verify import seal_tree
                    seal_tree(work, ids, plan)
                    stats["sealed_tests"] = stats.get("sealed_tests", 0) + len(
                        {h for h in plan.seals.sealed_heads() if h.rpartition("::")[2] in plan.originals})
                planted = (work / rel).read_text(encoding="utf-8")
                samples += _samples(planted, plan, others, rel)
            stats["groups"] = len(samples)
            shutil.rmtree(work, ignore_errors=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return samples, stats


def _readable(files: list[tuple[Path, str]], corpus: Corpus):
    """(path, text, test ids, the corpus less this file) of each readable file:
    the grader's reader has the prior the attacker has, the machine's other
    test files."""
    for root, rel in files:
        try:
            text = (root / rel).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        own = Corpus()
        own.add(text)
        yield rel, text, test_ids(text, rel), corpus.minus(own)


def _samples(planted: str, plan: cp.Plan, corpus: Corpus, rel: str) -> list[Sample]:
    out = []
    try:
        found = groups(planted)
    except SyntaxError:
        return out
    for g in found:
        names = [m.name for m in g.members]
        orig = [i for i, n in enumerate(names) if n in plan.originals]
        copies = [n for n in names if n in plan.copies]
        # Only real groups: one original and its copies, nothing else.
        if len(orig) != 1 or len(copies) != len(names) - 1:
            continue
        ctx = Context.of(planted, g)
        ref = plan.originals[names[orig[0]]]
        head = "::".join([ref.file, *ref.cls, names[orig[0]]])
        out.append(Sample(features(g, ctx, corpus), orig[0], rel,
                          block=all(plan.copies[n].block for n in copies),
                          matched=all(plan.copies[n].matched for n in copies),
                          balanced=all(plan.copies[n].balanced for n in copies),
                          sealed=head in plan.seals.sealed_heads()))
    return out


def corpus_of(files: list[tuple[Path, str]]) -> Corpus:
    """The attacker's prior: literals and character pairs of the corpus files."""
    c = Corpus()
    for root, rel in files:
        try:
            c.add((root / rel).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            continue
    return c


def split(files: list[tuple[Path, str]]) -> tuple[list, list]:
    """Files by a stable hash into a half to fit on and a half to score on."""
    a, b = [], []
    for f in files:
        (a if hash_of(f[1]) % 2 == 0 else b).append(f)
    return a, b


def hash_of(s: str) -> int:
    import hashlib

    return int(hashlib.sha256(s.encode()).hexdigest()[:8], 16)



def for_fitting(files: list[tuple[Path, str]]) -> list:
    """The files the reader's weights (copy_odds.WEIGHTS) are fitted on: three in four."""
    return [f for f in files if hash_of("fit:" + f[1]) % 4 != 0]


def held_out(files: list[tuple[Path, str]]) -> list:
    """The files no fitting of copy_odds.WEIGHTS has seen: balancing is judged on these."""
    return [f for f in files if hash_of("fit:" + f[1]) % 4 == 0]


def _without_twins(chosen: list) -> list:
    """The copies a forger must tell from their originals. Near twins of a
    raising input (copy_raises.fresh_copies) call the callee bare: a reader
    sees them for what they are, and they stand against a memorised
    blacklist, not against a forger (who fails them by raising there)."""
    return [m for m in chosen if not m.fresh]


def task_wins(files: list[tuple[Path, str]], corpus: Corpus, w: list[float], crossed: bool,
              tests_per_task: int = 2, seed: str = "tasks") -> list[tuple[int, int, int, str]]:
    """Whole tasks as a forger meets them: each file's tests, `tests_per_task`
    at a time, are one task's hidden tests; its copies proposed (with as many
    sites per test as calibration asks for), crossed or not
    (grade/copy_cross.py), chosen and planted as verify does, every combination
    assumed to pass calibration. The forger (weights `w`) reads every group;
    for a cross it reads each site on the group of that site's copies beside
    the original (the cross's slice through the original, which tells it more
    than the cross does), and must be right at every site. Returns per task
    (forger right on every group, groups read, tests with copies, the task)."""
    from copies_attack import pick

    from taskforge.grade import copy_cross
    out = []
    scratch = Path(tempfile.mkdtemp(prefix="tf-cross-"))
    try:
        for rel, text, ids, others in _readable(files, corpus):
            for t in range(0, len(ids) - tests_per_task + 1, tests_per_task):
                task_ids = ids[t:t + tests_per_task]
                work = scratch / "src"
                (work / rel).parent.mkdir(parents=True, exist_ok=True)
                (work / rel).write_text(text, encoding="utf-8")
                tseed = f"{seed}:{rel}:{t}"
                per = max(2, min(copy_cross.MAX_AXES, 24 // len(task_ids)))
                proposed = cp.propose(work, task_ids, tseed, sites_per_test=per, corpus=others)
                if crossed:
                    refs = [r for r in map(cp.test_ref, task_ids) if r is not None]
                    proposed = proposed + copy_cross.crosses(
                        work, proposed, tseed, {copy_cross.key_of_ref(r): 1 for r in refs})
                chosen = _without_twins(choose_copies(proposed, random.Random(tseed)))
                if not chosen:
                    continue
                by_test: dict[tuple, list] = {}
                for m in chosen:
                    by_test.setdefault(copy_cross.key_of(m), []).append(m)
                right = True
                read = 0
                guess = random.Random(tseed + ":guess")
                for ms in by_test.values():
                    if ms[0].cross:
                        n = len(ms[0].axes)
                        slices = [[m for m in ms if sum(1 for a in m.axes if a) == 1 and m.axes[i]]
                                  for i in range(n)]
                    else:
                        slices = [ms]
                    for sl in slices:
                        (work / rel).write_text(text, encoding="utf-8")
                        plan = cp.plant(work, task_ids, sl, rng=random.Random(tseed + str(read)))
                        samples = _samples((work / rel).read_text(encoding="utf-8"), plan, others, rel)
                        read += 1
                        if len(samples) == 1:
                            right = right and pick(w, samples[0].feats) == samples[0].truth
                        else:           # not found as one group: a guess among its members
                            right = right and guess.random() < 1 / (len(sl) + 1)
                out.append((int(right), read, len(by_test), tseed))
                shutil.rmtree(work, ignore_errors=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return out
