"""Families of near-duplicate tasks: tasks of one repository that share most
of their hidden tests (a medium task inside a hard one, two clusters around one
function).

They are marked, not deduplicated: each is a valid task of its own size (a
curriculum wants the medium and the hard one), but a train/test split must
keep a family on one side, or the test split grades what training saw, and a
sampler may take one per family. Splits are by repository
(`training/shards.assign_split`), which a family never crosses; the `family`
column lets a finer split or a sampler keep it whole too.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping

NEAR = 0.5          # Jaccard of hidden test ids at or past which two tasks are one family


def related(a: frozenset[str] | set[str], b: frozenset[str] | set[str]) -> bool:
    """Most tests shared (Jaccard >= NEAR), or one set inside the other."""
    if not a or not b:
        return False
    shared = len(a & b)
    return shared == min(len(a), len(b)) or shared / len(a | b) >= NEAR


def families(tests: Mapping[str, Iterable[str]], repo_of: Mapping[str, str] | None = None
             ) -> dict[str, str]:
    """{task id: family id}: connected components of `related` among the tasks of
    each repository (a chain of near-duplicates is one family). A family's id is
    its smallest task id, so it is the same whichever run lists the tasks."""
    ids = sorted(tests)
    sets = {t: frozenset(tests[t]) for t in ids}
    parent = {t: t for t in ids}

    def root(t: str) -> str:
        while parent[t] != t:
            parent[t] = parent[parent[t]]
            t = parent[t]
        return t

    for i, a in enumerate(ids):
        for b in ids[i + 1:]:
            if repo_of is not None and repo_of.get(a) != repo_of.get(b):
                continue
            if related(sets[a], sets[b]):
                ra, rb = root(a), root(b)
                if ra != rb:
                    parent[max(ra, rb)] = min(ra, rb)
    return {t: root(t) for t in ids}
