"""Run many variants of the gold against the hidden tests at the cost of about
one pytest session (issue 25 item 4).

Stand-ins, partial solutions and gold mutants each used to pay a pytest start
and a collection of their own (voluptuous: 118 probe sessions of 0.5 s for 9
candidates). A variant that changes only function bodies is switched in after
one collection, in a child forked per variant (sandbox/runtime/tf_variants.py);
any other variant, or one the sandbox cannot switch faithfully, runs in a
fresh session as before, so every variant's outcome is what a fresh session
would give.

The batch first runs the gold itself in a child. Its time, as a child
measures it (session fixtures set up, the machine's load), sets the mutants'
hang limit (ten times it, at least HANG_FLOOR s, at most the probe limit),
and each test's time in it that test's limit (ten times it, at least
HANG_FLOOR s); a mutant stopped at either is killed, as mutation testers
count a timeout. A stand-in
or partial solution keeps the whole probe limit in its child (one that passes
slowly must be seen passing), and one that runs past it there fails without a
second, fresh session of the same length: the gold passing in a child of the
same batch shows the children run these tests as fresh sessions do. A gold
that fails in a child sends every variant to a fresh session. Before, a
hanging probe (a mutant that never leaves a loop, a stand-in whose
interpreted `continue` does nothing) held its child for the whole probe
limit, 20 s or more, and a stop variant then again in a fresh session:
asteval's on_continue spent 413 s on ten of them.
"""
from __future__ import annotations

import ast
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from taskforge.analysis.pyparse import parse as parse_python
from taskforge.grade.events import fold_reports
from taskforge.grade.testrun import OUT_IN_SANDBOX

WORKSPACE = "/workspace"
BATCH_ENV = "TF_VARIANTS"
logger = logging.getLogger(__name__)
MIN_BATCH = 2          # one variant gains nothing from a batch: a session of its own
HANG_FACTOR = 10       # a variant slower than this many times the gold on the same tests hangs
HANG_FLOOR = 5.0       # ... and never in less than this many seconds (a loaded machine, fixtures)


GOLD = "__gold__"       # the batch's record of the gold's own child (never a variant's name)


@dataclass(frozen=True)
class Variant:
    name: str
    changes: dict[str, str]      # relative path -> the file's text in this variant
    stop: bool = False           # passing every test ends the run (the probe drops the task)


@dataclass(frozen=True)
class Outcome:
    passed: int                  # hidden tests passed (up to the first failure: --maxfail=1)
    ok: bool                     # every hidden test passed, in time
    batched: bool = False
    hung: bool = False           # stopped at the hang limit (counted as failing)


class _Blank(ast.NodeTransformer):
    """Every function and method body emptied but for its docstring (a switched
    function keeps the gold's __doc__); nested code goes with its body."""

    def _blank(self, node):
        first = node.body[0] if node.body else None
        doc = (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
               and isinstance(first.value.value, str))
        node.body = [first, ast.Pass()] if doc else [ast.Pass()]
        return node

    visit_FunctionDef = visit_AsyncFunctionDef = _blank


def _skeleton(source: str) -> str | None:
    try:
        tree = parse_python(source)
    except (SyntaxError, ValueError, RecursionError):
        return None
    return ast.dump(_Blank().visit(tree), include_attributes=False)


def switchable(gold: str, variant: str) -> bool:
    """Whether `variant` differs from `gold` only inside function bodies: its
    module-level and class-level code (decorators, defaults, signatures,
    assignments) is the gold's, which a collected session already ran."""
    return _outline_is(_skeleton(gold), variant)


def _outline_is(skeleton: str | None, variant: str) -> bool:
    return skeleton is not None and skeleton == _skeleton(variant)


def outcome_of(record: dict, tests: Sequence[str], stop: bool = False,
               trusted: bool = False) -> Outcome | None:
    """A batch child's result as an Outcome; None when the variant was not run
    there (not switched, or the child failed): it then gets a fresh session. A
    stop variant (a stand-in, a partial solution) that ran out of time there
    gets one too, unless the gold passed in a child of the same batch
    (`trusted`): such a child runs these tests as a fresh session does, and a
    stop variant has the whole probe limit there, as it would in a fresh
    session. A mutant stopped at the hang limit (`hang` in its record) is
    killed and `hung`."""
    if record.get("timed_out"):
        if stop and not trusted:
            return None
        return Outcome(passed=0, ok=False, batched=True, hung=bool(record.get("hang")))
    reports = record.get("reports")
    if not isinstance(reports, list):
        return None
    outcomes = fold_reports([r for r in reports if isinstance(r, dict)])
    n = sum(1 for t in tests if outcomes.get(t) == "passed")
    return Outcome(passed=n, ok=n == len(tests), batched=True)


class Batch:
    """One pytest session on the worker that runs `variants` forked after collection."""

    counter = 0

    def __init__(self, worker, tests: Sequence[str], timeout: float, args: Sequence[str],
                 hang: bool = True):
        self.worker, self.tests, self.timeout, self.args = worker, list(tests), timeout, list(args)
        self.hang = hang             # the gold's child first, its time sets the mutants' limit
        self.test_seconds = 0.0
        self.unswitched: dict[str, str] = {}     # probe -> why the batch did not run it

    def run(self, variants: Sequence[Variant]) -> dict[str, Outcome]:
        remote = getattr(self.worker, "batch", None)
        if remote is not None:          # a worker on another node (orchestrate/remote.py)
            out, seconds, unswitched = remote(self.tests, self.timeout, self.args, list(variants))
            self.test_seconds += seconds
            self.unswitched.update(unswitched)
            return out
        Batch.counter += 1
        name = f"variants-{Batch.counter}"
        spec_host, results_host = self.worker.out / f"{name}.json", self.worker.out / f"{name}.out.json"
        spec = {"results": f"{OUT_IN_SANDBOX}/{name}.out.json", "timeout": self.timeout,
                "hang": {"factor": HANG_FACTOR, "floor": HANG_FLOOR} if self.hang else None,
                "tests": self.tests,
                "variants": [{"name": v.name, "stop": v.stop,
                              "files": {f"{WORKSPACE}/{rel}": text for rel, text in v.changes.items()}}
                             for v in variants]}
        spec_host.write_text(json.dumps(spec), encoding="utf-8")
        for v in variants:                   # the batch writes them while a child runs
            self.worker.dirty.update(v.changes)
        try:
            spec_host.chmod(0o644)
            r = self.worker.runner.run(self.tests, timeout=self.timeout * (len(variants) + 2),
                                       extra_args=self.args,
                                       env={BATCH_ENV: f"{OUT_IN_SANDBOX}/{name}.json"})
            self.test_seconds += r.test_seconds
            try:
                raw = json.loads(results_host.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                raw = {}
        finally:
            self.worker.reset()              # the gold again, whatever the batch left
            spec_host.unlink(missing_ok=True)
            results_host.unlink(missing_ok=True)
        out = {}
        gold = raw.get(GOLD) if isinstance(raw, dict) else None
        trusted = isinstance(gold, dict) and gold.get("ok") is True      # the gold passed in a child
        for v in variants:
            rec = raw.get(v.name) if isinstance(raw, dict) else None
            o = outcome_of(rec, self.tests, v.stop, trusted=trusted) if isinstance(rec, dict) else None
            if o is not None:
                out[v.name] = o
            else:
                why = (rec or {}).get("unswitched") or (rec or {}).get("error") or "not run"
                self.unswitched[v.name] = str(why)[:200]
                logger.debug("probe %s not switched: %s", v.name, why)
        return out


def run_variants(variants: Sequence[Variant], gold: Callable[[str], str],
                 batch: Callable[[Sequence[Variant]], dict[str, Outcome]] | None,
                 single: Callable[[dict[str, str]], Outcome]) -> list[tuple[Variant, Outcome]]:
    """Each variant's outcome, in order, up to the first `stop` variant that
    passes every test. Switchable variants go to `batch` together (when there
    are at least MIN_BATCH), the rest, and any the batch did not run, each to
    `single`, a fresh session."""
    skeletons: dict[str, str | None] = {}

    def same_outline(rel: str, text: str) -> bool:
        if rel not in skeletons:
            skeletons[rel] = _skeleton(gold(rel))
        return _outline_is(skeletons[rel], text)

    together = [v for v in variants if all(same_outline(rel, text) for rel, text in v.changes.items())]
    got = batch(together) if batch is not None and len(together) >= MIN_BATCH else {}
    out = []
    for v in variants:
        o = got.get(v.name)
        if o is None:
            o = single(v.changes)
        out.append((v, o))
        if v.stop and o.ok:
            break
    return out
