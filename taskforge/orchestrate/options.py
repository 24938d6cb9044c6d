"""What a `generate` run is asked for (the CLI's flags, the library's keyword)."""
from __future__ import annotations

import os
from dataclasses import dataclass

from taskforge.env.detect import RepoConfig
from taskforge.models import FeatureKind, StatementStyle, Tier
from taskforge.propose.features import MAX_FEATURE_SYMBOLS, MIN_STATEMENTS
from taskforge.validate import adequacy


@dataclass
class Options:
    ref: str | None = None
    max_tasks: int | None = None
    jobs: int = max(1, min(os.cpu_count() or 1, 4))
    timeout: float = 600.0
    max_share: float = 0.4          # past it, a feature is the package's core, not a task
    # Tests red at baseline are data: excluded and named in the report. Only a
    # suite that is mostly red (a broken environment, not a few tests that need
    # a network or a generated file) is refused.
    max_red: float = 0.5
    kinds: tuple[str, ...] = tuple(FeatureKind)
    min_statements: int = MIN_STATEMENTS     # smaller removals (aliases, one-line wrappers) drop
    min_tier: Tier = Tier.EASY               # --difficulty: the lowest tier proposed
    # The hidden tests must fail every do-nothing stand-in and kill this share of
    # simple mutants of the gold; keep_weak writes such tasks anyway, score recorded.
    min_mutation_score: float = adequacy.MIN_MUTATION_SCORE
    keep_weak: bool = False
    check_adequacy: bool = True              # False: no stand-ins, no gold mutants (red team only)
    gold_mutants: int = adequacy.MAX_MUTANTS
    # Probes that change only function bodies share one pytest session, switched in
    # after one collection (validate/variants.py); False: a session each (the bench's before).
    batch_probes: bool = True
    only: tuple[str, ...] = ()               # candidates these name (pipeline.named)
    # Every hidden test must have must-fail copies (a test without one can be
    # forged by a solution that finds it); False keeps such tasks, marked.
    require_copies: bool = True
    config: RepoConfig | None = None        # CLI overrides; taskforge.toml is read too
    # Remote workers on other nodes of the Ray cluster ($RAY_ADDRESS), beside
    # the `jobs` local workers (orchestrate/remote.py); 0: this machine only.
    remote_workers: int = 0
    # Not a memory test (issue 24): keep features whose removed lines mostly
    # changed at or after this Unix time (git blame); None keeps every age.
    since: int | None = None
    statement_style: StatementStyle = StatementStyle.UPSTREAM
    # A feature with its dependents has at most this many definitions (larger
    # vertical slices with a higher one; each is still validated green).
    max_feature_defs: int = MAX_FEATURE_SYMBOLS
    # `taskforge harden`: only these groups of proposed features, each removed
    # as one task (propose.features.combine); () proposes as usual.
    combine: tuple[tuple[str, ...], ...] = ()
    # `taskforge harden`: grow these solved features (each the qualnames of its
    # definitions): proposed features holding one of them and more
    # (propose.features.grown), tried before the `combine` groups.
    around: tuple[tuple[str, ...], ...] = ()
    known: tuple[str, ...] = ()              # harden: features the repository's tasks remove already
    # Candidates predicted to break the suite (a body that runs at import) are
    # dropped before any run; True tries them last instead, so the report says
    # how often the prediction was wrong (report.prediction).
    check_predictions: bool = False
    # Also offer the larger if/elif/else arms of functions as features
    # (Removal.BRANCH, propose/branches.py): tasks from a library whose suite
    # goes through one dispatcher. They come after every whole feature in the
    # order, so a --max-tasks prefix takes those first (bench/corpus_clones.md).
    branches: bool = True
