"""`verify`: grade a candidate solution against a task's hidden tests.

The reward must not depend on the good behaviour of code we do not trust, and
the code under test runs inside the pytest process. So:
  - the solution is applied to a copy of the workspace; every test file and test
    config is restored from the task's own copy, unshipped ones removed, start-up
    hooks, sourceless bytecode and shadowing top-level modules refused;
  - a fresh, hardened sandbox per call (no network, read-only root, no
    capabilities but the supervisor's SETUID/SETGID/DAC_READ_SEARCH, non-root tests, limits, a
    time limit from the task's measured run time), destroyed after;
  - the supervisor runs as another uid: the tests hold no handle to what the
    host reads and cannot outlive the run; their reports are parsed against a
    schema and anything malformed, repeated, late or oversized scores 0;
  - the hidden tests get random names and sit among copies (copies whose
    expected values are changed) that a correct solution fails and a forged
    report cannot tell apart: a passing copy scores 0;
  - a monitor (static scan and an audit hook) reports suspicious acts beside the
    reward; the policy scores the high-confidence ones 0 unless the gold does
    the same.
`Defences` switches each of these off, for the red-team suite's naive grader.
"""
from __future__ import annotations

import filecmp
import os
import random
import shutil
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from itertools import zip_longest
from pathlib import Path
from typing import AbstractSet, Literal, cast

from taskforge.analysis.pyparse import literal_eval
from taskforge.analysis.testindex import test_ref
from taskforge.env.pytestcfg import without_reruns
from taskforge.errors import InfraError, TaskforgeError, UserError
from taskforge.fsutil import copy_tree, rmtree, share_with_sandbox
from taskforge.grade import copies as cp
from taskforge.grade import copy_cross, copy_raises, decide, static
from taskforge.grade.bounds import Bounds, in_workspace, patch_breach, patch_facts, survey
from taskforge.grade.cases import GradingCase, case_of
from taskforge.grade.decide import MAX_MONITOR_FINDINGS  # noqa: F401 - re-exported
from taskforge.grade.defences import Defences
from taskforge.grade.findings import Finding, Policy, Severity, Source, clean, exemptions, finding
from taskforge.grade.findings import FindingKind as K
from taskforge.grade.result import VerifyResult
from taskforge.grade.seals import CAPTURE, SEAL_RULES, SealPlan, id_suffixes, seal_source, swapped_classes, targets
from taskforge.grade.shapes import inexact, kept_shapes
from taskforge.grade.testrun import PytestRunner, RunResult, monitor_env, runner_mount, supervisor_standby
from taskforge.models import Outcome, TestResult
from taskforge.package.store import Task, load_task
from taskforge.package.writer import ApplyError, apply_patch
from taskforge.repo.layout import package_dirs, task_test_roots, unshipped_test_file, walk, walk_all
from taskforge.sandbox import Limits, Mount, SandboxSpec, default_backend, open_sandbox
from taskforge.sandbox.owner import owned_dir
from taskforge.sandbox.warm import Lease, WarmPool

INFRA_RETRIES = 2
DEFAULT_TIMEOUT = 900.0
MAX_TRADED_TWINS = 3                   # twins of each input a planted block trades (copy_raises.traded_copies)
MAX_TWINS_PER_TEST = 24                 # near twins of a raising site's inputs a test (copy_raises.fresh_copies)
MAX_TWINS = 48                          # ... and in all
MAX_VALUED_PER_TEST = 8                 # value twins an accepting test (copy_raises.valued_copies)
MAX_VALUED = 32                         # ... and in all
MAX_WORDED_PER_TEST = 8                 # word twins (grade/vocab.py) a test, beyond those
MAX_WORDED = 32                         # ... and in all
MAX_PLANTED = copy_cross.BUDGET          # copies planted per verify, or one per test that has any where more
BOUNDS = Bounds()
# Bounds as good as none: what the naive grader (and `bounds=False`) walks with.
UNBOUNDED = Bounds(patch_bytes=1 << 62, file_bytes=1 << 62, tree_bytes=1 << 62, extra_files=1 << 62,
                   depth=1 << 30, path_chars=1 << 30)


@dataclass
class Solution:
    kind: Literal["gold", "empty", "patch", "dir"]
    patch: str | None = None       # unified diff text, for kind == "patch"
    path: Path | None = None       # a solution work tree, for kind == "dir"

    def describe(self) -> str:
        return self.kind if self.kind in ("gold", "empty") else f"{self.kind}:{self.path or 'inline'}"

    @classmethod
    def gold(cls) -> "Solution":
        return cls("gold")

    @classmethod
    def empty(cls) -> "Solution":
        return cls("empty")

    @classmethod
    def from_patch(cls, text: str) -> "Solution":
        return cls("patch", patch=text)

    @classmethod
    def from_patch_file(cls, path: str | Path) -> "Solution":
        """A patch file, read up to one byte past the bound on patch text: a larger
        one is refused as such, and is never read whole into memory."""
        with open(path, "rb") as fh:
            data = fh.read(BOUNDS.patch_bytes + 1)
        # surrogateescape: a file that is not UTF-8 (a latin-1 module with its
        # coding line) reaches git apply byte for byte (red team 12: "replace"
        # made its bytes U+FFFD and an honest solution a SyntaxError).
        return cls.from_patch(data.decode("utf-8", errors="surrogateescape"))

    @classmethod
    def from_dir(cls, path: str | Path) -> "Solution":
        p = Path(path)
        if not p.is_dir():
            raise UserError(f"no such solution directory: {path}")
        return cls("dir", path=p)


def clear_path(tree: Path, rel: str) -> Path:
    """`tree/rel`, with every parent a real directory inside the tree: a file or a
    symlink standing where a directory must be is removed first."""
    cur = tree
    for part in Path(rel).parts[:-1]:
        cur = cur / part
        if cur.is_symlink() or (cur.exists() and not cur.is_dir()):
            cur.unlink()
    dst = tree / rel
    dst.parent.mkdir(parents=True, exist_ok=True)
    if not dst.resolve().is_relative_to(tree.resolve()):
        raise UserError(f"{rel} resolves outside the workspace")
    return dst


def drop_symlinks(tree: Path, workspace: Path, links: list[str]) -> list[tuple[K, str]]:
    """Remove the solution tree's symlinks `links` (relative paths, from a survey),
    except those the task's workspace has too: a link could make the grader
    write outside its copy."""
    notes = []
    for rel in links:
        p = tree / rel
        orig = workspace / rel
        if orig.is_symlink() and os.readlink(orig) == os.readlink(p):
            continue
        p.unlink()
        notes.append((K.REMOVED_SYMLINK, rel))
    return notes


def restore_protected(task: Task, tree: Path) -> list[tuple[K, str]]:
    """Put back every test file and config from the task's copy; drop the unshipped
    ones that pytest would take for tests (in the task's test roots, any conftest.py)."""
    notes: list[tuple[K, str]] = []
    shipped = set(walk(task.hidden))
    ws = task.workspace
    for rel in sorted(shipped):
        dst = clear_path(tree, rel)
        orig_ws = ws / rel
        if dst.is_file() and orig_ws.is_file() and not filecmp.cmp(dst, orig_ws, shallow=False):
            notes.append((K.RESTORED_FILE, f"{rel} was modified"))
        elif not dst.exists() and orig_ws.is_file():
            notes.append((K.RESTORED_FILE, f"{rel} was deleted"))
        if dst.is_dir() and not dst.is_symlink():
            if rmtree(dst):
                raise OSError(f"{rel}: a directory in its place could not be removed")
        elif dst.is_symlink():
            dst.unlink()
        shutil.copy2(task.hidden / rel, dst)
    roots = task_test_roots(shipped, task.record.test_paths)
    packages = package_dirs(task.workspace)
    for rel in walk_all(tree):
        if rel not in shipped and unshipped_test_file(rel, roots, packages):
            (tree / rel).unlink()
            notes.append((K.REMOVED_UNSHIPPED, rel))
    return notes


def choose_copies(candidates: list[cp.TestCopy], rng: random.Random, limit: int = MAX_PLANTED
                   ) -> list[cp.TestCopy]:
    """Copies for every hidden test that has any: at least `limit` copies, more
    where a task has more such tests (one copy each). Blocks of exchanged values
    (grade/copy_blocks.py) are planted whole, while what is left of the budget
    still gives every other test a copy. Otherwise per test one literal and its
    copies (values matched to the original's profile where the test has them,
    grade/copy_values.py; else one-step copies), two of them when few tests have
    copies, so that a guess between original and copies is right one time in
    three, not two. Where a test has copies at a package-built expectation
    (`built`), one of those groups."""
    crossed: dict[tuple, list[cp.TestCopy]] = {}
    for m in candidates:
        if m.cross:
            crossed.setdefault((m.file, tuple(m.cls), m.func), []).append(m)
    valued = [m for m in candidates if m.valued]
    twins = [m for m in candidates if m.fresh and not m.valued]
    candidates = [m for m in candidates if not m.cross and not m.fresh]
    blocks: dict[str, list[cp.TestCopy]] = {}
    for m in candidates:
        if m.block:
            blocks.setdefault(m.block, []).append(m)
    everyone = {(m.file, tuple(m.cls), m.func) for m in candidates}
    limit = max(limit, len(everyone))
    out: list[cp.TestCopy] = []
    covered: set[tuple] = set()
    names = sorted(blocks)
    rng.shuffle(names)
    # blocks exchanging a raising input first: nothing else protects a test
    # that only expects a raise (grade/copy_raises.py)
    # and of those, one whose traded inputs have twins of a kind (_traded),
    # the fewest of them of a kind not all have (_unmatched)
    traded = [m for m in twins if m.traded]

    def order(b: str) -> tuple[bool, bool, int]:
        where, values = blocks[b][0].file, {t for m in blocks[b] if m.raising for t in m.trades}
        return not blocks[b][0].raising, not _traded(traded, where, values), _unmatched(traded, where, values)
    names.sort(key=order)
    for name in names:
        takes = {(m.file, tuple(m.cls), m.func) for m in blocks[name]}
        if takes & covered:
            continue
        left = len(everyone - covered - takes)       # tests that still need a copy each
        if len(out) + len(blocks[name]) + left <= limit:
            out += blocks[name]
            covered |= takes
    tests: dict[tuple, dict[tuple[str, bool], list[cp.TestCopy]]] = {}
    for m in candidates:
        key = (m.file, tuple(m.cls), m.func)
        if not m.block and key not in covered:      # matched and one-step copies of a literal apart
            tests.setdefault(key, {}).setdefault((m.group, m.matched), []).append(m)
    keys = list(tests)
    rng.shuffle(keys)
    per = 2 if len(keys) < 4 else 1
    single: dict[tuple, list[cp.TestCopy]] = {}
    for n, k in enumerate(keys):
        # two copies where the budget leaves one for every test still to come
        room = limit - len(out) - sum(map(len, single.values())) - (len(keys) - n - 1)
        want = max(1, min(per, room))
        groups = list(tests[k].values())
        values = [g for g in groups if g[0].kind == "value"]
        matched = [g for g in values if g[0].matched]
        # Balanced one-step sets (copy_steps) whole, at the size propose settled
        # for the task before any draw: a size that depended on which sets were
        # refused would name the original.
        sized = [g for g in values if g[0].balanced]
        loose = [g for g in values if not g[0].matched and not g[0].balanced]
        # A package-built expectation's copies first (copies.mark_built): only
        # they catch a solution echoing what its constructor saw; balanced sets
        # there in the usual order (matched values, balanced sets, one-step).
        built = [[g for g in tier if g[0].built] for tier in (matched, sized, loose)]
        pool = next((tier for tier in built if tier), None) \
            or matched or sized or loose or [g for g in groups if g[0].kind != "value"]
        if not pool:
            continue
        group = list(rng.choice(pool))
        rng.shuffle(group)
        single[k] = group if group[0].balanced else group[:want]
    _widen(single, {k: v for k, v in crossed.items() if k in single}, limit - len(out))
    for k in keys:
        out += single.get(k, [])
    out = out[:limit]
    trades: dict[tuple[str, str], set[str]] = {}
    for m in out:
        if m.raising:
            trades.setdefault((m.file, m.block), set()).update(m.trades)
    return out + _twins(twins, trades, rng) + _valued(valued, trades, rng)


def _valued(twins: list[cp.TestCopy], blocks: Mapping[tuple[str, str], set[str]], rng: random.Random
            ) -> list[cp.TestCopy]:
    """Value twins (copy_raises.valued_copies), up to MAX_VALUED_PER_TEST a
    test and MAX_VALUED in all, a twin of each input before a second of any;
    word twins (TestCopy.word) beyond them, up to MAX_WORDED_PER_TEST a test
    and MAX_WORDED in all, the words planted least so far first (_drawn); none
    of an input a planted block trades (a twin near one of them would point
    at the original's input)."""
    traded = {(file, value) for (file, _), values in blocks.items() for value in values}
    out: list[cp.TestCopy] = []
    for worded, per_test, most in ((False, MAX_VALUED_PER_TEST, MAX_VALUED), (True, MAX_WORDED_PER_TEST, MAX_WORDED)):
        by_test: dict[tuple, dict[str, list[cp.TestCopy]]] = {}
        for m in sorted(twins, key=lambda m: (m.fresh, m.site)):
            if (m.file, m.fresh) not in traded and bool(m.word) is worded:
                by_test.setdefault((m.file, tuple(m.cls), m.func), {}).setdefault(m.fresh, []).append(m)
        chosen: list[cp.TestCopy] = []
        seen: dict[str, int] = {}
        for k in sorted(by_test):
            groups = [by_test[k][v] for v in sorted(by_test[k])]
            for pool in groups:
                rng.shuffle(pool)
            rng.shuffle(groups)
            chosen += _drawn(groups, per_test, seen)
        rng.shuffle(chosen)
        out += chosen[:most]
    return out


def _drawn(groups: list[list[cp.TestCopy]], want: int, seen: dict[str, int]) -> list[cp.TestCopy]:
    """Up to `want` twins of one test, an input's (a group's) in turn, of
    word twins the word planted least so far (`seen`, updated) first: a
    test's word twins swap in every word of its list before any twice
    (held-out round 25: no planted roman twin held a D or an L, and a parser
    refusing both scored 1)."""
    queues = [list(g) for g in groups]
    out: list[cp.TestCopy] = []
    while len(out) < want and any(queues):
        for q in queues:
            if len(out) >= want:
                break
            if not q:
                continue
            best = min(range(len(q)), key=lambda i: (seen.get(q[i].word, 0), seen.get(_spelling(q[i]), 0))) \
                if q[0].word else 0
            m = q.pop(best)
            if m.word:
                for key in {m.word, _spelling(m)} - {""}:
                    seen[key] = seen.get(key, 0) + 1
            out.append(m)
    return out


def _kinds_in_turn(pool: list[cp.TestCopy]) -> list[cp.TestCopy]:
    """One input's twins with their kinds (copy_raises.TwinKind) in turn,
    the rarer first (moved along a scale, two reshapes away, reshaped,
    renamed): a test plants two or three twins of an input, and drawn at
    random they were mostly renamings, so a roman parser adding up hundreds
    unchecked passed where only a twin moved along the scale ("VX" -> "DM")
    asked (round 27, tk_prefix)."""
    order: list[str] = [k.value for k in reversed(copy_raises.TwinKind)]
    by: dict[str, list[cp.TestCopy]] = {}
    for m in pool:
        by.setdefault(m.twin_kind, []).append(m)
    keys = sorted(by, key=lambda k: order.index(k) if k in order else len(order))
    out: list[cp.TestCopy] = []
    while len(out) < len(pool):
        out += [by[k].pop(0) for k in keys if by[k]]
    return out


def _spelling(m: cp.TestCopy) -> str:
    """Whether a word twin holds its word as the list spells it ("12.345
    GBP") or in the case found in its input ("12.345 gbp"), per input, as a
    key of _drawn's counts ("" for a word without case): drawn by word alone, a test's word twins were all of
    the input's case in 33 of 200 plant seeds, and a parser of lower-case
    codes only scored 1 there."""
    try:
        twin = literal_eval(m.trades[0]) if m.trades else None
    except (ValueError, SyntaxError):
        return ""
    if not isinstance(twin, str) or m.word.upper() == m.word.lower():
        return ""                                   # a symbol: one spelling
    return f"{m.fresh}\0{'as listed' if m.word in twin else 'as found'}"


def _twins(twins: list[cp.TestCopy], blocks: Mapping[tuple[str, str], set[str]], rng: random.Random
           ) -> list[cp.TestCopy]:
    """Near twins of a raising site's inputs (copy_raises.fresh_copies), up
    to MAX_TWINS_PER_TEST a test and MAX_TWINS in all, beyond the budget (each
    is one call). Of the inputs a planted block trades (`blocks`: (file,
    block) -> the inputs' reprs), which stand at its exchanged place, the
    original's and the copies' alike: one twin each, its digits renamed only
    (as an accepted input's are, so it does not show its input was a raising
    one), or none of any where one of them has no such twin; twins of some
    and not others would tell the original's value from its copies'. Round 22
    showed the cost of none: the block's raising input was the only one a
    memorised blacklist's lenient parse let through."""
    traded = {(file, value) for (file, _), values in blocks.items() for value in values}
    out: list[cp.TestCopy] = []                                   # one twin of each input a block trades
    by_test: dict[tuple, dict[tuple[str, bool], list[cp.TestCopy]]] = {}
    for m in sorted(twins, key=lambda m: (m.fresh, m.site)):
        if (m.file, m.fresh) in traded or m.traded:
            continue
        # by input and by the gold's outcome: twins it rejects and twins it accepts alike
        kind = (m.fresh, "failed" in m.expect.values())
        by_test.setdefault((m.file, tuple(m.cls), m.func), {}).setdefault(kind, []).append(m)
    for where, values in sorted(blocks.items()):
        picks = _traded(twins, where[0], values)
        if picks:
            out += picks
            continue
        for value in sorted(values):
            pool = sorted((m for m in twins if m.file == where[0] and m.fresh == value and copy_raises.digit_twin(m)),
                          key=lambda m: m.site)
            if not pool:
                break
            picks.append(rng.choice(pool))
        out += picks if len(picks) == len(values) else []
    for k in sorted(by_test):
        sides: list[list[list[cp.TestCopy]]] = [[], []]      # groups of twins the gold rejects, accepts
        for (_, accepts), pool in sorted(by_test[k].items()):
            rng.shuffle(pool)
            sides[accepts].append(pool)
        for side in sides:
            rng.shuffle(side)
        # a twin of each input and outcome before a second of any, the two outcomes in turn
        groups = [_kinds_in_turn(g) for pair in zip_longest(*sides) for g in pair if g is not None]
        spread = [pool[i] for i in range(max(map(len, groups))) for pool in groups if i < len(pool)]
        out += spread[:MAX_TWINS_PER_TEST]
    return out[:MAX_TWINS]


def _traded(twins: list[cp.TestCopy], file: str, values: set[str]) -> list[cp.TestCopy]:
    """Twins of a planted block's traded inputs (copy_raises.traded_copies):
    for every input the same kinds of edit, each kind as often, up to
    MAX_TRADED_TWINS an input, in the order they were made; [] where the
    inputs share no kind. Each asks what its input's own test fixes
    (calibration kept only those), so a parser of the shown inputs' forms
    alone fails the lent input's twins ("  xlii " -> "  XLII ", round 25's
    tk_upper). Kinds matched, because the gold keeps deletions of a good
    numeral and doublings of a bad one: unmatched, a reader told the raising
    input by its twins' kinds alone (round 26)."""
    pools = _kind_pools(twins, file, values)
    kinds = [k for k in copy_raises.TradedEdit if pools and all(k in p for p in pools)]
    room = {k: min(len(p[k]) for p in pools) for k in kinds}
    order: list[copy_raises.TradedEdit] = []
    while len(order) < MAX_TRADED_TWINS and any(room.values()):
        for k in kinds:
            if room[k] and len(order) < MAX_TRADED_TWINS:
                order.append(k)
                room[k] -= 1
    out: list[cp.TestCopy] = []
    for pool in pools:
        used: dict[str, int] = {}
        for k in order:
            out.append(pool[k][used.get(k, 0)])
            used[k] = used.get(k, 0) + 1
    return out


def _kind_pools(twins: list[cp.TestCopy], file: str, values: set[str]) -> list[dict[str, list[cp.TestCopy]]]:
    """Each traded input's twins (copy_raises.traded_copies) by kind of edit."""
    pools: list[dict[str, list[cp.TestCopy]]] = []
    for value in sorted(values):
        pool: dict[str, list[cp.TestCopy]] = {}
        for m in twins:
            if m.traded and m.file == file and m.fresh == value:
                pool.setdefault(m.traded, []).append(m)
        pools.append(pool)
    return pools


def _unmatched(twins: list[cp.TestCopy], file: str, values: set[str]) -> int:
    """Twins of a block's traded inputs of a kind some other input lacks:
    _traded cannot plant them, so that input goes ungraded in those forms
    (a lent "12.345 eur" beside "--5" lost its case twins, and a parser of
    lower-case codes only scored 1 in 33 of 200 plant seeds)."""
    pools = _kind_pools(twins, file, values)
    shared = set.intersection(*(set(p) for p in pools)) if pools else set()
    return sum(len(ms) for p in pools for k, ms in p.items() if k not in shared)


def _widen(planted: dict[tuple, list[cp.TestCopy]], crossed: dict[tuple, list[cp.TestCopy]],
           room: int) -> None:
    """Spend what the budget leaves on crosses (grade/copy_cross.py): each step
    puts the test with the fewest members at its cross's next level, in place
    of what it planted, while the copies fit in `room` and the test ids the
    crosses add in copy_cross.ITEMS. Deterministic: the planted set must not
    change between verifies."""
    top = {k: max(map(copy_cross.level_of, ms)) for k, ms in crossed.items()}
    at = {k: 1 for k in crossed}
    used = sum(map(len, planted.values()))
    added = 0
    while True:
        options = []
        for k in sorted(crossed):
            if at[k] >= top[k]:
                continue
            new = copy_cross.level(crossed[k], at[k] + 1)
            more = len(new) - len(planted[k])
            ids = sum(len(m.expect) or 1 for m in new) - sum(len(m.expect) or 1 for m in planted[k])
            if used + more <= room and added + max(ids, 0) <= copy_cross.ITEMS:
                options.append((len(planted[k]), more, k, new, ids))
        if not options:
            return
        _, more, k, new, ids = min(options, key=lambda o: o[:3])
        planted[k] = new
        at[k] += 1
        used += more
        added += max(ids, 0)


def prepare(task: Task, solution: Solution, tree: Path, defences: Defences,
            seconds: float | None = None, capture: bool = False) -> tuple[list[Finding], cp.Plan | None]:
    """The graded tree: the solution applied, then every defence that acts on files.
    Returns the findings so far and the planting plan (None: the solution was
    refused). Whatever the solution's files make these steps raise is the
    solution's doing: reward 0 with a finding, never a masked infrastructure error.
    `seconds`: the task's time limit, which also bounds applying the patch.
    `capture`: generation's capture of built expectations (capture_shapes)."""
    try:
        return _prepare(task, solution, tree, defences, seconds, capture)
    except ApplyError as exc:
        return [finding(K.OVER_LIMIT, Source.GRADER, str(exc), policy=defences.policy)], None
    except (OSError, ValueError, RecursionError, MemoryError, UserError, UnicodeError) as exc:
        msg = exc.message if isinstance(exc, UserError) else f"{type(exc).__name__}: {exc}"
        return [finding(K.UNPROCESSABLE, Source.GRADER, msg[:200], policy=defences.policy)], None


def _materialise(task: Task, solution: Solution, tree: Path, defences: Defences, b: Bounds,
                 entries: int, seconds: float | None) -> tuple[Finding | None, list[str]]:
    """The solution as a tree at `tree`, within the bounds: copied from its own
    tree, or the workspace with its patch applied. Returns a finding when it is
    refused, and the tree's symlinks."""
    pol = defences.policy
    known = in_workspace(task.workspace)
    if solution.kind == "dir":
        assert solution.path is not None        # from_dir sets it
        before = survey(solution.path, b, entries, skip=frozenset({".git"}), known=known)
        if before.breach:
            return finding(K.OVER_LIMIT, Source.GRADER, f"the solution tree: {before.breach}", policy=pol), []
        copy_tree(solution.path, tree)
    else:
        copy_tree(task.workspace, tree)
    patch = task.record.patch if solution.kind == "gold" else solution.patch
    if solution.kind in ("gold", "patch"):
        why = patch_breach(patch_facts(patch or ""), b, entries,
                           known=lambda rel: os.path.lexists(task.workspace / rel))
        if why:
            return finding(K.OVER_LIMIT, Source.GRADER, why, policy=pol), []
        err = apply_patch(tree, patch or "", b.apply_limits(seconds) if defences.bounds else None)
        if err:
            return finding(K.PATCH_REJECTED, Source.GRADER, err, policy=pol), []
    rmtree(tree / ".git")
    after = survey(tree, b, entries, known=known)
    if after.breach:
        return finding(K.OVER_LIMIT, Source.GRADER, f"the tree the solution makes: {after.breach}",
                       policy=pol), []
    return None, after.symlinks


def _scrub(task: Task, tree: Path, defences: Defences, links: list[str]) -> list[tuple[K, str]]:
    """The file-side defences, each a note of what it changed."""
    notes = drop_symlinks(tree, task.workspace, links)
    if defences.restore_tests:
        notes += restore_protected(task, tree)
    else:
        # Any grader puts the hidden tests in; the naive one stops there.
        for rel in task.record.hidden_test_files:
            shutil.copy2(task.hidden / rel, clear_path(tree, rel))
    if defences.startup_hooks:
        notes += static.remove_startup_hooks(tree, task.workspace)
    if defences.bytecode:
        notes += static.remove_bytecode(tree, task.workspace)
    if defences.shadowing:
        notes += static.shadowing(tree, task.workspace)
    return notes


def _scan(task: Task, tree: Path, defences: Defences, planted: list[cp.TestCopy]) -> list[Finding]:
    """The static scan of the changed files. Where every hidden test has value
    copies planted, an object equal to everything that the tests compare passes
    them and scores 0 there; one they never compare (a sentinel) is no reason
    to. Complement copies do not count: an object equal to everything is truthy,
    so it fails `assert not x` just as the gold's value does. `planted`: the
    copies this verify plants (planted_set)."""
    rec = task.record
    allowed = set(exemptions(rec.grading.allowed))
    scan_bounds = {} if defences.bounds else {"max_file": None, "max_total": None}
    scanned = static.scan_solution(tree, task.workspace, defences.policy, allowed,
                                   skip=set(rec.protected_files), **scan_bounds)
    g = rec.grading
    guarded = {(m.file, tuple(m.cls), m.func) for m in planted
               if not cp.is_complement(m) and not m.fresh} if g.copies else set()
    if g.hidden_functions and len(guarded) >= g.hidden_functions:
        scanned = [f.model_copy(update={"severity": Severity.REVIEW})
                   if f.kind is K.ALWAYS_EQUAL and f.severity is Severity.FATAL else f
                   for f in scanned]
    return scanned


def _prepare(task: Task, solution: Solution, tree: Path, defences: Defences,
             seconds: float | None, capture: bool = False) -> tuple[list[Finding], cp.Plan | None]:
    rec = task.record
    b = BOUNDS if defences.bounds else UNBOUNDED
    entries = b.max_entries(rec.sizes.workspace_files)
    refused, links = _materialise(task, solution, tree, defences, b, entries, seconds)
    if refused is not None:
        return [refused], None
    notes = _scrub(task, tree, defences, links)
    found = [finding(k, Source.STATIC if k is K.BYTECODE_FILE else Source.GRADER, d, policy=defences.policy)
             for k, d in notes]
    chosen = planted_set(rec, defences.built_copies, defences.raise_copies, defences.raise_twins,
                         defences.value_twins and defences.seals and defences.built_seals,
                         defences.word_twins, defences.traded_twins) if defences.copies else []
    if defences.static_scan:
        found += _scan(task, tree, defences, chosen)
    if capture:                 # every stored copy: each one's built expectations are kept
        chosen = [c for c in rec.grading.copies if not cp.format_tell(c.site)]
    plan = cp.plant(tree, rec.FAIL_TO_PASS, chosen,
                     rename=defences.rename and rec.grading.rename, rng=random.SystemRandom())
    if defences.seals and rec.grading.sealed:
        rules = rec.grading.seal_rules if defences.table_seals else min(rec.grading.seal_rules, 4)
        seal_tree(tree, rec.FAIL_TO_PASS, plan, skip=set(rec.grading.unsealed), rules=rules,
                  shapes=rec.grading.shapes if defences.built_seals else None, capture=capture)
    return found, plan


def seal_tree(tree: Path, fail_to_pass: list[str], plan: cp.Plan, skip: AbstractSet[str] = frozenset(),
              rules: int = SEAL_RULES, shapes: Mapping[str, str] | None = None, capture: bool = False) -> None:
    """Seal the planted hidden tests in `tree` (edited in place): every graded
    original, under the name it runs as, and every planted copy; what the host
    keeps goes into `plan.seals`. The test functions of the ids in `skip`, and
    their copies, stay as planted; so does an unreadable file."""
    unsealed = {(r.file, r.cls, r.func) for r in map(test_ref, skip) if r is not None}
    funcs_of = targets(fail_to_pass, {(r.file, r.cls, r.func): new for new, r in plan.originals.items()},
                       unsealed)
    by_original = id_suffixes(fail_to_pass)          # the rows' ids, as this environment's pytest made them
    suffixes: dict[str, set[str]] = {}
    for new, r in plan.originals.items():
        suffixes["::".join([r.file, *r.cls, new])] = by_original.get("::".join([r.file, *r.cls, r.func]), set())
    swaps: dict[str, dict[str, set[str]]] = {}
    valued: dict[str, str] = {}                      # a value twin's head -> its value's key
    for name, m in plan.copies.items():
        if (m.file, tuple(m.cls), m.func) not in unsealed:
            head = "::".join([m.file, *m.cls, name])
            funcs_of.setdefault(m.file, {})[(tuple(m.cls), name)] = head
            if m.valued:
                valued[head] = copy_raises.valued_key(m)
            if swap := swapped_classes(m.site):
                swaps[head] = swap
            suffixes[head] = by_original.get("::".join([m.file, *m.cls, m.func]), set())
    for head, sfx in by_original.items():
        suffixes.setdefault(head, sfx)
    for rel, funcs in sorted(funcs_of.items()):
        path = tree / rel
        try:
            code = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        sealed, got = seal_source(code, funcs, cp.find_def, suffixes, rules, shapes, capture, swaps, valued)
        if sealed != code:
            path.write_text(sealed, encoding="utf-8")
            plan.seals.merge(got)


def _task_seal_plans(root: Path, graded: list[str], skip: AbstractSet[str], **kw) -> Iterator[SealPlan]:
    """What seal_source keeps of each of the task's own test files under
    `root` (read only), the test functions of the ids in `skip` left out."""
    unsealed = {(r.file, r.cls, r.func) for r in map(test_ref, skip) if r is not None}
    suffixes = id_suffixes(graded)
    for rel, funcs in sorted(targets(graded, skip=unsealed).items()):
        try:
            code = (root / rel).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        yield seal_source(code, funcs, cp.find_def, suffixes, **kw)[1]


def has_built(root: Path, graded: list[str], skip: AbstractSet[str] = frozenset()) -> bool:
    """Whether a graded test function (read from `root`) has a built
    expectation to capture (grade/shapes.py): else the capture run is skipped."""
    return any(v.startswith(CAPTURE) for got in _task_seal_plans(root, graded, skip, capture=True)
               for v in got.expected.values())


def sealed_ids(root: Path, graded: list[str], skip: AbstractSet[str] = frozenset(),
               shapes: Mapping[str, str] | None = None) -> set[str]:
    """Graded ids whose test function seal_tree seals with a value (not only
    a direction), read from the task's own test files under `root`; the test
    functions of the ids in `skip` (grading.unsealed) left out, and the rows of
    a table no value seal reaches (SealPlan.bare)."""
    heads: set[str] = set()
    bare: set[str] = set()
    for got in _task_seal_plans(root, graded, skip, shapes=shapes):
        heads |= got.sealed_heads()
        bare |= {h + sfx for h, b in got.bare.items() for sfx in b}
    return {nid for nid in graded if nid.partition("[")[0] in heads and nid not in bare}


def shown_ids(root: Path, graded: list[str], skip: AbstractSet[str] = frozenset(),
              shapes: Mapping[str, str] | None = None) -> set[str]:
    """Graded ids a seal would protect but for their answers, which another
    row of their planted file shows beside their inputs (seals.leaky_tokens):
    a lookup in the test module, or in the workspace's copy of it, passes
    them (held-out round 18). Counted unprotected, and listed apart
    (grading.answers_shown), since they say the task gives answers away."""
    heads: set[str] = set()
    bare: set[str] = set()
    for got in _task_seal_plans(root, graded, skip, shapes=shapes):
        heads |= got.sealed_heads(shown=True) - got.sealed_heads()
        bare |= {h + sfx for h, b in got.bare.items() for sfx in b}
    return {nid for nid in graded if nid.partition("[")[0] in heads and nid not in bare}


def planted_set(rec, built_first: bool = True, raising: bool = True, twins: bool = True,
                valued: bool = True, words: bool = True, traded: bool = True) -> list[cp.TestCopy]:
    """The copies every verify of this task plants: chosen once per task (seeded by
    the grading plan's secret), never drawn afresh.

    Why: the original is in every verify, so were the copies drawn anew each
    time, whatever a solution carries from one verify to the next would single it
    out as "the one seen before". What it could carry, per backend:
      - docker and bwrap alike: the host page cache of the shared read-only image
        or runner mount (time a page read, evict with posix_fadvise(DONTNEED)),
        and timing or load the next verify can observe (CPU, disk, memory pressure);
      - docker: nothing on disk (a fresh container, /tmp and the workspace copy
        go with it); bwrap: the same, a fresh tmpfs and workspace copy per verify.
    Through any of them a solution can at most learn earlier verifies' planted
    files. Those are now the same set each time, with fresh random names and a
    fresh uniform place for the original among its copies: every member was
    "seen before", and names and places carry nothing about which is the original.
    (Learning across verifies by an agent's trainer is not a channel: it is
    rewarded only for passing the tests the copies leave indistinguishable.)"""
    seed = rec.grading.plant_seed or rec.instance_id
    kept = [c for c in rec.grading.copies if not cp.format_tell(c.site)]
    if not built_first:         # the red team's defence off: a draw that missed them
        kept = [c for c in kept if not c.built]
    if not raising:             # ... and without the exchanged raising inputs
        kept = [c for c in kept if not c.raising]
    if not twins:               # ... and without near twins of them (round 19's blacklists)
        kept = [c for c in kept if not c.fresh]
    if not words:               # ... and without words swapped (round 24's lg_nocur)
        kept = [c for c in kept if not c.word]
    if not traded:              # ... and without twins of a block's inputs (round 25's tk_upper)
        kept = [c for c in kept if not c.traded]
    # Value twins only where the host keeps the gold's value for them (a
    # shape seal; unsealed, `X == X` asks nothing); off: round 23's lookups.
    if any(c.valued for c in kept):
        unsealed = {(r.file, r.cls, r.func) for r in map(test_ref, rec.grading.unsealed) if r is not None}
        kept = [c for c in kept if not c.valued or (
            valued and rec.grading.sealed and copy_raises.valued_key(c) in rec.grading.shapes
            and (c.file, tuple(c.cls), c.func) not in unsealed)]
    return choose_copies(kept, random.Random(f"plant:{seed}"))


def verify(task_dir: str | Path, solution: Solution, timeout: float | None = None,
           limits: Limits | None = None, defences: Defences | None = None,
           pool: WarmPool | None = None, backend: str | None = None,
           record: Callable[[GradingCase], None] | None = None,
           hidden_only: bool = False, shapes_out: dict[str, str] | None = None) -> VerifyResult:
    """Grade `solution`; infrastructure failures come back with `error` set, reward None.
    With a `pool`, the sandbox is a warm one started ahead (never used before).
    `backend`: the sandbox backend (default $TASKFORGE_SANDBOX, else docker).
    `record`: called with the graded run as data (grade/cases.py), to replay.
    `hidden_only`: run the files of the hidden tests, not the suite (the final
    check's empty solution: what it asks is whether they fail; the rest count
    as missing, so read `f2p_failures`, not the reward).
    `shapes_out`: generation only (capture_shapes): every stored copy planted
    beside the hidden tests, each built expectation reporting its shape, and
    the shapes to keep put here; read nothing else of the result."""
    task = load_task(task_dir)
    rec = task.record
    d = defences or Defences()
    timeout = timeout or rec.grading.timeout or DEFAULT_TIMEOUT
    t0 = time.monotonic()
    result = VerifyResult(instance_id=rec.instance_id, solution=solution.describe(), reward=None,
                          resolved=False, f2p_passed=0, f2p_total=len(rec.FAIL_TO_PASS),
                          p2p_passed=0, p2p_total=len(rec.PASS_TO_PASS), p2p_regressions=[],
                          f2p_failures=[], tests=[])
    spec = SandboxSpec(image=rec.image_name, mounts=[runner_mount()],
                       limits=limits or Limits(), supervisor=d.isolation,
                       standby=supervisor_standby() if d.isolation else None,
                       labels={"taskforge.role": "verify", "taskforge.task": rec.instance_id[:60]})
    lease = None
    if pool is not None:
        try:
            lease = pool.take(spec)
        except InfraError:
            lease = None                     # the cold path below says what is wrong
    # Not TemporaryDirectory: its cleanup is shutil.rmtree, which a deep enough
    # tree made by the solution turns into a RecursionError after the run.
    tmp = owned_dir("tf-verify-")
    try:
        tree = lease.workspace if lease else tmp / "workspace"
        try:
            found, plan = prepare(task, solution, tree, d, timeout, capture=shapes_out is not None)
            if plan is None:
                return _finish(result, t0, 0.0, found)
            share_with_sandbox(tree)
            run, error = _run_hidden(rec, d, spec, tree, timeout, lease,
                                     backend or (pool.backend if pool else None), record is not None,
                                     hidden_only or shapes_out is not None)
            if run is not None and d.bounds:
                found += left_behind(tree, d.policy)
        finally:
            if lease is not None:
                assert pool is not None         # a lease only comes from the pool
                pool.give_back(lease, spec)
        if run is None:
            result.error = error or "sandbox failed"
            return _finish(result, t0, None, found)
        if shapes_out is not None:
            kept = kept_shapes(capture_reports(plan, run.seals), remade_classes(rec.feature.symbols))
            # a value twin's float the gold got by its own arithmetic: another
            # correct one may round the last place otherwise
            shapes_out.update({k: v for k, v in kept.items()
                               if not (k.startswith(copy_raises.VALUED_KEY) and inexact(v))})
        graded = grade(result, rec, run, t0, plan, found, d)
        if record is not None and run.raw is not None:
            case = case_of(rec, d, found, plan, run.raw, graded)
            case.backend = backend or (pool.backend if pool else None) or default_backend()
            record(case)
        return graded
    finally:
        rmtree(tmp)          # never raises; what it could not remove is logged


def capture_shapes(task_dir: str | Path, backend: str | None = None) -> dict[str, str]:
    """The shapes of the built expectations of a task's hidden tests and
    their stored copies, as the gold's run builds them (grade/shapes.py),
    for GradingPlan.shapes. Raises InfraError when the run did not happen."""
    out: dict[str, str] = {}
    got = verify(task_dir, Solution.gold(), defences=Defences(policy=Policy.FLAG, bounds=False),
                 backend=backend, shapes_out=out)
    if got.error:
        raise InfraError(f"the capture run did not run: {got.error}")
    return out


# What a removal can take out of a class that remakes how its objects hold
# their state: an honest class of the solution's may hold it differently.
_STATE_METHODS = frozenset({"__init__", "__new__", "__post_init__", "__setattr__", "__setstate__",
                            "__attrs_post_init__", "__init_subclass__"})


def remade_classes(symbols) -> list[str]:
    """Qualified names of the classes a removal takes out or remakes."""
    out = []
    for s in symbols:
        if s.kind == "class":
            out.append(s.qualname)
        elif s.kind == "method" and s.qualname.rpartition(".")[2] in _STATE_METHODS:
            out.append(s.qualname.rpartition(".")[0])
    return out


def capture_reports(plan: cp.Plan, records: Mapping[str, list[tuple[str, str | None]]]
                    ) -> Iterator[tuple[str, str | None, bool]]:
    """(key, report, from an original test) of every capture seal reported."""
    for nid, got in records.items():
        name = nid.partition("[")[0].rpartition("::")[2]
        for tok, value in got:
            src = plan.seals.expected.get(tok, "")
            if src.startswith(CAPTURE):
                key = src[len(CAPTURE):]
                # a value twin's X == X: its two values alike (the gold's is reproducible)
                yield key, value, name in plan.originals or key.startswith(copy_raises.VALUED_KEY)


POST_RUN = BOUNDS.model_copy(update={"file_bytes": 1 << 62, "tree_bytes": 1 << 62})
POST_RUN_ENTRIES = 200_000


def left_behind(tree: Path, policy: Policy) -> list[Finding]:
    """A directory chain deeper than any solution needs, made by the run (at
    import time, say): aimed at the host's cleanup, not at the tests. Sizes and
    counts are the tests' business here; the walk gives up past POST_RUN_ENTRIES."""
    try:
        s = survey(tree, POST_RUN, POST_RUN_ENTRIES)
    except OSError as exc:
        return [finding(K.UNPROCESSABLE, Source.GRADER, f"the tree after the run: {exc}", policy=policy)]
    if s.breach and s.entries <= POST_RUN_ENTRIES:
        return [finding(K.OVER_LIMIT, Source.GRADER, f"the run left {s.breach}", policy=policy)]
    return []


def _run_hidden(rec, d: Defences, spec: SandboxSpec, tree: Path, timeout: float,
                lease: Lease | None, backend: str | None, keep_raw: bool = False,
                hidden_only: bool = False) -> tuple[RunResult | None, str | None]:
    """The graded run: in the leased sandbox if there is one, else (and on an
    infrastructure failure) in a fresh one with `tree` mounted."""
    cold = spec.model_copy(update={"mounts": [Mount(host=str(tree), container="/workspace"),
                                              *spec.mounts]})
    last_error = None
    for attempt in range(1 + INFRA_RETRIES):
        try:
            if lease is not None and attempt == 0:
                # Destroyed by the pool, off this path (the supervisor has already
                # killed everything the tests started).
                return _pytest(lease.sandbox, rec, d, timeout, keep_raw, hidden_only), None
            with open_sandbox(cold, backend) as sb:
                return _pytest(sb, rec, d, timeout, keep_raw, hidden_only), None
        except InfraError as exc:
            if lease is not None:
                lease.sandbox.close()        # nothing of it may still touch `tree`
            last_error = exc.message
            if not exc.retry or "not found" in exc.message or "no root filesystem" in exc.message:
                break
            time.sleep(1 + attempt)
    return None, last_error


def _pytest(sb, rec, d: Defences, timeout: float, keep_raw: bool = False,
            hidden_only: bool = False) -> RunResult:
    # The monitor knows test code by the files the task ships (never by name).
    shipped = [f for f in rec.protected_files if f.endswith(".py")]
    env = {**rec.test_env, **monitor_env(shipped, rec.hidden_test_files)}
    # Every test runs once: a `rerun` report starts a test over, which only a
    # forger needs in a graded run (events.py refuses it in strict mode).
    options = without_reruns(rec.test_options)
    extra = ["-p", "no:rerunfailures"] if d.isolation else []
    # One line a failure, whatever the project's addopts say: nothing on the
    # host reads a failing test's traceback (a collection error's first line
    # only), and a graded run fails by design at every must-fail copy the
    # solution gets right; the long form, source and locals read and
    # formatted, cost about 50 ms each (ledger's 81 failing copies: 3.5 s
    # of a 3.5 s run, 1.0 s in one line each).
    extra += ["--tb=line"]
    if hidden_only:
        extra += sorted({t.split("::")[0] for t in rec.FAIL_TO_PASS})
    return PytestRunner(sb, None, options, rec.test_paths, env,
                        naive=not d.isolation, bound_workspace=d.bounds
                        ).run(["--continue-on-collection-errors", *extra], timeout=timeout, keep_raw=keep_raw)


def grade(result: VerifyResult, rec, run: RunResult, t0: float, plan: cp.Plan,
          found: list[Finding], d: Defences) -> VerifyResult:
    """The result of a graded run: the pure core decides (`decide.judge`), this
    fills in the record."""
    j = decide.judge(decide.TaskFacts.of(rec), run, plan, found, d)
    result.exit_code = run.exit_code
    result.timed_out = run.timed_out
    result.test_seconds = round(run.test_seconds, 3)
    # pydantic checks each outcome against Outcome
    result.tests = [TestResult(nodeid=t, outcome=cast(Outcome, j.outcomes.get(t, "missing")),
                               duration=round(run.durations.get(t, 0.0), 4))
                    for t in rec.FAIL_TO_PASS + rec.PASS_TO_PASS]
    result.f2p_failures, result.p2p_regressions = j.f2p_failures, j.p2p_regressions
    result.f2p_passed = len(rec.FAIL_TO_PASS) - len(j.f2p_failures)
    result.p2p_passed = len(rec.PASS_TO_PASS) - len(j.p2p_regressions)
    result.collection_errors = [clean(f"{k or '<session>'}: {v}", 400)
                                for k, v in sorted(run.collect_errors.items())][:50]
    result.copies_planted, result.copies_matched = j.copies_planted, j.copies_matched
    return _finish(result, t0, j.reward, j.findings)


def _finish(result: VerifyResult, t0: float, reward: float | None,
            found: list[Finding]) -> VerifyResult:
    result.reward = reward
    result.resolved = reward == 1.0
    result.findings = found
    result.tampering = [f.text() for f in found]
    result.wall_seconds = round(time.monotonic() - t0, 3)
    return result


def verify_many(pairs: list[tuple[str | Path, Solution]], workers: int = 2,
                timeout: float | None = None, defences: Defences | None = None,
                pool: WarmPool | None = None, warm: int | None = None,
                backend: str | None = None) -> list[VerifyResult]:
    """Verify many (task, solution) pairs concurrently, results in input order.
    One bad item never costs another its result: anything it raises becomes its
    own error (reward None), and the rest are graded. Sandboxes come warm from
    `pool`, or from a pool of this call keeping `warm` ready per task image
    (default $TASKFORGE_WARM, else one per worker; 0: every sandbox cold). A
    warm bubblewrap sandbox has the supervisor already started (parked)."""
    from concurrent.futures import ThreadPoolExecutor

    from taskforge.sandbox import default_backend
    from taskforge.sandbox.warm import pool_size_from_env

    backend = backend or (pool.backend if pool else default_backend())
    per_shape = pool_size_from_env(workers) if warm is None else warm
    own = (WarmPool(per_shape=per_shape, backend=backend)
           if pool is None and per_shape > 0 else None)
    use = pool or own

    def one(pair):
        try:
            return verify(pair[0], pair[1], timeout=timeout, defences=defences, pool=use,
                          backend=backend)
        except Exception as exc:  # noqa: BLE001 - per-item isolation is the point
            msg = exc.message if isinstance(exc, TaskforgeError) else \
                f"internal error: {type(exc).__name__}: {str(exc)[:200]}"
            return VerifyResult(instance_id=str(pair[0]), solution=pair[1].describe(), reward=None,
                                resolved=False, f2p_passed=0, f2p_total=0, p2p_passed=0,
                                p2p_total=0, p2p_regressions=[], f2p_failures=[], tests=[],
                                error=msg)

    try:
        with ThreadPoolExecutor(max_workers=max(1, workers)) as ex:
            return list(ex.map(one, pairs))
    finally:
        if own is not None:
            own.close()
