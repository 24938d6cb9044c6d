"""Pydantic models for everything taskforge writes to disk or returns as data."""
from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

SCHEMA_VERSION = 2     # 2: every hidden test graded (unprotected listed), coverage, family

Outcome = Literal["passed", "failed", "error", "skipped", "xfailed", "missing"]



def renamed(data: Any, old_to_new: dict[str, str]) -> Any:
    """Records written before a field was renamed (issue 27: one word per
    concept) still load: an old key is read as its new name."""
    if not isinstance(data, dict) or not any(k in data for k in old_to_new):
        return data
    out = dict(data)
    for old, new in old_to_new.items():
        if old in out:
            value = out.pop(old)
            out.setdefault(new, value)
    return out

class RemovedSymbol(BaseModel):
    """One definition taken out of the repository."""
    qualname: str                      # module.Class.method
    kind: Literal["function", "method", "class", "module", "assignment"]
    path: str                          # file, relative to the repository root
    start_line: int
    end_line: int
    signature: str                     # the interface as source: header + docstring, no body
    public: bool = True
    module: str = ""                   # the module it lived in (dotted)


class FeatureInfo(BaseModel):
    kind: FeatureKind
    name: str                          # the root symbol's qualified name
    symbols: list[RemovedSymbol]
    removal: "Removal" = Field(default_factory=lambda: Removal.DEFINITIONS)
    # BRANCH: the removed arm's lines in the original source, and when it runs
    arm_lines: list[int] = Field(default_factory=list)      # [first, last]
    arm_condition: str = ""
    touched_files: list[str]           # source files changed by the removal
    # `taskforge harden`: the proposed features removed together ([] for one feature)
    parts: list[str] = Field(default_factory=list)


class TaskSizes(BaseModel):
    removed_lines: int
    removed_symbols: int
    hidden_tests: int
    remaining_tests: int
    workspace_files: int


class FeatureKind(StrEnum):
    """What a task removes: one definition, a whole module, or a cluster (several
    public definitions that use one another, removed together)."""
    FUNCTION = "function"
    METHOD = "method"
    CLASS = "class"
    MODULE = "module"
    CLUSTER = "cluster"


class Removal(StrEnum):
    """How a feature leaves the code. DEFINITIONS: its definitions go, with
    every definition that uses them. BODY: one function keeps its signature and
    docstring and its body becomes `raise NotImplementedError`, so its callers
    stay (a helper that the whole package calls through, whose own tests are few,
    is a task without taking the package with it). BRANCH: one arm of an `if`
    inside a function becomes `raise NotImplementedError`; the condition, the
    other arms and every caller stay (the cases of one dispatcher are tasks of
    their own)."""
    DEFINITIONS = "definitions"
    BODY = "body"
    BRANCH = "branch"


class Tier(StrEnum):
    """Difficulty tiers, from the size and shape of what was removed (taskforge.propose.difficulty)."""
    EASY = "easy"
    MEDIUM = "medium"
    HARD = "hard"


TIER_ORDER = [Tier.EASY, Tier.MEDIUM, Tier.HARD]


class Difficulty(BaseModel):
    """What makes a task hard, measured on the removed code; `tier` buckets `score`."""
    removed_lines: int = 0            # code lines removed (no blanks, comments, docstrings)
    statements: int = 0               # statements in the removed bodies (docstrings aside)
    files: int = 0                    # source files the removal changes (re-exports included)
    symbols: int = 0                  # definitions removed
    public_symbols: int = 0
    complexity: int = 0               # cyclomatic complexity summed over removed definitions
    centrality: int = 0               # call-graph edges between removed and kept code
    hidden_tests: int = 0
    # Removed definitions that are one call of code still in the workspace: they
    # ask nothing, so their lines, statements and branches count for no tier.
    wrappers: int = 0
    score: float = 0.0
    tier: Tier = Tier.EASY


class StatementStyle(StrEnum):
    """What the statement's interface shows of the removed code's own words."""
    UPSTREAM = "upstream"        # signatures with the upstream docstrings
    OWN = "own"                  # signatures only, and facts read off the code (what it raises)


class CodeAge(BaseModel):
    """When the removed lines last changed (git blame at generation, committer
    dates, ISO days): code older than a model's training cutoff may be recited."""
    newest: str
    median: str
    oldest: str
    lines: int                   # lines blamed


class Contamination(BaseModel):
    """What a user needs to judge whether a model could answer the task from
    memory rather than by working it out."""
    code_age: CodeAge | None = None          # None: no history to read (a shallow clone, one commit)
    statement_style: StatementStyle = StatementStyle.UPSTREAM
    quoted_lines: int | None = None   # statement lines copied from the removed code's docstrings
                                      # (None: a task written before it was counted)
    wrappers: list[str] = Field(default_factory=list)   # removed definitions that only call kept code


class Adequacy(BaseModel):
    """How well the hidden tests constrain the feature, measured on the gold at generation."""
    standins: dict[str, int] = Field(default_factory=dict)    # stand-in -> hidden tests it passed
    standins_passing_all: list[str] = Field(default_factory=list)   # must be empty to be written
    mutants: int = 0                  # simple mutants of the gold tried
    mutants_killed: int = 0           # ... that fail at least one hidden test
    mutation_score: float | None = None
    # Partial solutions (issue 24): the gold with one removed public definition
    # stubbed (`stub-raise:name`, `stub-constant:name`) -> hidden tests it passed.
    partials: dict[str, int] = Field(default_factory=dict)
    partials_passing_all: list[str] = Field(default_factory=list)   # must be empty to be written
    partials_skipped: int = 0         # past adequacy.MAX_PARTIALS: not run
    batched: int = 0                  # probes switched in after one collection (validate/variants)
    hung: int = 0                     # ... of which stopped at the hang limit (variants.hang_limit): failing


class TaskTimings(BaseModel):
    """Seconds spent in the validation runs of this task (bare test time)."""
    remaining_suite: float = 0.0
    hidden_on_stripped: float = 0.0
    adequacy: float = 0.0             # stand-ins and gold mutants against the hidden tests
    rounds: int = 1


class SymbolCoverage(BaseModel):
    """How much of one removed definition the graded hidden tests run (from the
    baseline's per-test coverage): its statements, those a graded test ran, and
    the graded tests that run its body."""
    qualname: str
    statements: int = 0              # statement lines of its body (docstring aside)
    covered: int = 0                 # ... that at least one graded hidden test ran
    tests: int = 0                   # graded hidden tests that run its body
    missed: list[int] = Field(default_factory=list)   # statement lines no graded test runs


class TestCopy(BaseModel):
    """One must-fail copy of a hidden test, validated against the gold."""
    __test__ = False                   # pytest: a record, not a test class
    file: str                          # the test file, relative to the workspace
    cls: list[str] = Field(default_factory=list)   # enclosing classes, outermost first
    func: str                          # the original test's name
    kind: Literal["value", "negation"]
    group: str = ""                    # the literal it changes: copies of one group differ
    site: str                          # what changed, for people: "line 12: 'IV' -> 'IX'"
    source: str                        # the copy's source, NAME_TOKEN as its name
    # The original test rewritten to the copy's shape (a parametrize table
    # written out in place of the module constant it named), NAME_TOKEN as its
    # name; "" when the original stays as it is.
    original: str = ""
    expect: dict[str, str] = Field(default_factory=dict)   # id suffix ("", "[p]") -> outcome
    # Module constants the parametrize table named, written out in the original
    # and every copy: planting drops their definitions once nothing else uses
    # them, or the one table equal to the constant would be the original.
    tables: list[str] = Field(default_factory=list)
    # Copies of one block (grade/copy_blocks.py) exchange their tests' expected
    # values: planted all together or not at all. "": not in a block.
    block: str = ""
    # Values drawn from the original's profile in its module
    # (grade/copy_values.py): as likely as the original, so verify prefers them
    # to one-step copies for a test outside a block.
    matched: bool = False
    # One-step copies balanced as a set (grade/copy_steps.py): the set's size
    # (1 or 2 copies), planted whole or not at all, and only where verify wants
    # that size. 0: not such a set (tasks written before).
    balanced: int = 0
    # A crossed copy (grade/copy_cross.py): several sites of the test changed
    # together, one combination of the cross `cross` names; `axes` gives each
    # site's member (0: the original's value). "": a copy of one site.
    cross: str = ""
    axes: list[int] = Field(default_factory=list)
    # A literal inside a call of a name the test imports from outside the
    # stdlib, on the expected side (`Money("88.85")`): the package's own code
    # sees it as the test builds it. `built`: this copy changes such a literal;
    # `test_built`: its test has one (then only such copies protect it).
    built: bool = False
    test_built: bool = False
    # An input a test expects to raise exchanged with one another test shows
    # accepted (grade/copy_raises.py), in a block of the two copies.
    raising: bool = False
    # The inputs (repr) a copy of a raising block trades: the exchanged input
    # and the one put in its place (copy_raises._block); for a near twin, the
    # input it holds instead of `fresh` (copy_raises.digit_twin reads both).
    trades: list[str] = Field(default_factory=list)
    # A near twin of an input of a raising site, in the raising test's shape
    # (copy_raises.fresh_copies): the input it renames (repr); must pass or
    # must fail as the gold decided. "": not such a copy.
    fresh: str = ""
    # ... of an input a test shows accepted: kept only where the gold accepts
    # it too (its digits renamed, a date may stop being one: "2021-02-28" ->
    # "2021-02-29"; no graded test asks the feature to reject it).
    fresh_accepted: bool = False
    # A value twin (copy_raises.valued_copies): an accepting test's equality on
    # a near twin of its input, `f(x') == f(x')` as stored; verify judges it
    # by the value the gold's run gave (GradingPlan.shapes[valued_key]).
    valued: bool = False
    # ... whose input has a word of a list the feature reads swapped for
    # another of that list (grade/vocab.py: "12.345 eur" -> "12.345 gbp"):
    # the word swapped in ("GBP"); "": no such twin.
    word: str = ""
    # A near twin of an input a raising block trades (copy_raises.traded_copies),
    # of an edit made alike for the raising input and the accepted ones, kept
    # only where the gold decides it as its input (fresh_accepted says which):
    # the edit's kind (copy_raises.TradedEdit), "" for no such twin.
    traded: str = ""
    # How a near twin (copy_raises.fresh_copies) was made (copy_raises.TwinKind):
    # renamed, reshaped, two reshapes away, moved along a scale; "": not one.
    twin_kind: str = ""


class GradingPlan(BaseModel):
    """How verify grades this task, settled at generation by running the gold."""

    @model_validator(mode="before")
    @classmethod
    def _old_names(cls, data: Any) -> Any:
        return renamed(data, {"mutants": "copies", "hidden_with_mutant": "hidden_with_copy"})
    copies: list[TestCopy] = Field(default_factory=list)   # validated against the gold
    rename: bool = True               # hidden tests get random names at every verify
    timeout: float | None = None      # verify's time limit, from the measured run time
    measured_seconds: float = 0.0     # the gold's graded run, bare test time
    allowed: list[list[str]] = Field(default_factory=list)   # [kind, file]: the gold's own acts
    hidden_with_copy: int = 0         # hidden test functions that have at least one copy
    hidden_functions: int = 0         # hidden test functions (doctests not counted)
    unstable_excluded: int = 0        # hidden ids that did not come back under the gold
    uncopied_excluded: int = 0        # schema 1 only: hidden ids left out for having no copy
    # Schema 2 (issue 24): every hidden test that exercises the feature is graded.
    graded: int = 0                   # FAIL_TO_PASS ids
    protected: int = 0                # ... whose test function has must-fail value copies or a seal
    unprotected: list[str] = Field(default_factory=list)   # graded ids with no value copy and no seal
    coverage: list[SymbolCoverage] = Field(default_factory=list)   # per removed definition
    # Seeds the choice of copies planted at verify: the same set every time, so
    # that nothing carried from one verify to the next tells the original (only
    # names and places are drawn afresh). Secret: task.json never enters a sandbox.
    # "" (tasks written before it): the instance id seeds the choice.
    plant_seed: str = ""
    # grade/seals.py: literal expectations of the hidden tests judged on the host.
    # False for tasks written before seals (they grade as they did). `unsealed`:
    # hidden ids whose test functions stay unsealed, because the gold's actual
    # values there are not plain data (the final check found them).
    sealed: bool = False
    unsealed: list[str] = Field(default_factory=list)
    sealed_graded: int = 0            # graded ids whose test function has a sealed site
    seal_rules: int = 1               # grade/seals.SEAL_RULES the final check verified the gold under
    # Graded ids a table seal would protect but for their answers, which another
    # row of their test file shows beside their inputs (grade/seals.py,
    # leaky_tokens): in `unprotected` unless a value copy protects them; a task
    # that gives answers away (a lookup in the test module passes them).
    answers_shown: list[str] = Field(default_factory=list)
    # grade/shapes.py: built expectations (`== Money("88.85")`) judged on the
    # host: shapes.shape_key -> the shape of the value the gold's run built
    shapes: dict[str, str] = Field(default_factory=dict)


class EnvironmentRecipe(BaseModel):
    """How the environment named by `image_name` was made, so that a node with
    another engine, or none (the bwrap backend), can make it again."""
    python: str                        # the base's Python, X.Y
    script: str                        # the install script, run with the project at /workspace


class TaskRecord(BaseModel):
    """task.json: SWE-bench fields plus taskforge's own."""
    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    instance_id: str
    repo: str                          # stable name: host/owner/name, or the directory name
    base_commit: str                   # the workspace's single commit; patches apply here
    source_commit: str                 # the upstream commit the task was cut from
    environment_setup_commit: str
    version: str = "0"
    created_at: str                    # the source commit's date: stable across runs
    patch: str                         # gold patch: restores the removed code
    test_patch: str                    # restores the hidden tests
    problem_statement: str
    FAIL_TO_PASS: list[str]
    PASS_TO_PASS: list[str]
    image_name: str                    # the environment's name (a Docker tag, a rootfs directory)
    environment: EnvironmentRecipe | None = None
    feature: FeatureInfo
    hidden_test_files: list[str]       # test files that differ from the workspace's
    protected_files: list[str]         # test files and configs restored before grading
    test_command: list[str]            # the grading command, for people (see test_options)
    test_options: list[str] = Field(default_factory=list)   # pytest options of every run
    test_paths: list[str] = Field(default_factory=list)     # whole-suite runs only
    test_env: dict[str, str] = Field(default_factory=dict)
    flaky_excluded: int = 0
    sizes: TaskSizes
    timings: TaskTimings
    taskforge_version: str
    grading: GradingPlan = Field(default_factory=GradingPlan)
    difficulty: Difficulty = Field(default_factory=Difficulty)
    adequacy: Adequacy = Field(default_factory=Adequacy)
    contamination: Contamination = Field(default_factory=Contamination)
    # Tasks of one repository that share most hidden tests form a family (the
    # smallest instance_id in it; a task alone is its own): a split or a sampler
    # keeps a family together. "" for tasks written before schema 2.
    family: str = ""


class TestResult(BaseModel):
    nodeid: str
    outcome: Outcome
    duration: float = 0.0


class Stage(StrEnum):
    """The funnel, in pipeline order. A drop names the first stage its candidate
    did not pass; a stage's count is how many candidates passed it."""
    CONSIDERED = "symbols considered"
    CANDIDATES = "candidates"
    TRIED = "tried"                            # validated (not past the --max-tasks prefix)
    REMOVED = "removed cleanly"
    HIDDEN_FAIL = "hidden tests fail"          # on the stripped source
    REMAINING_GREEN = "remaining suite green"
    COPIES = "must-fail copies"                # graded hidden tests have copies the gold fails
    SPECIFIED = "specified"                    # exact strings stated
    CONSTRAINED = "tests constrain it"         # stand-ins fail, gold mutants killed
    LEAK_FREE = "leak-free"
    GOLD = "gold passes"                       # the packaged task grades gold 1, empty 0
    TASKS = "tasks"


STAGE_ORDER = list(Stage)


class DropReason(BaseModel):
    candidate: str
    stage: Stage
    reason: str


class FunnelStage(BaseModel):
    name: Stage
    count: int


class ResumeInfo(BaseModel):
    """What this run took over from an interrupted one instead of redoing."""
    baseline: bool = False
    tasks: int = 0
    rejections: int = 0


class Prediction(BaseModel):
    """Candidates predicted to break the suite before any run (a test helper that
    names them at import: dropped; a body that ran at import: tried last), and
    how the prediction fared where the rest of the suite was run."""
    rejected: int = 0            # dropped on the prediction, no run spent
    deferred: int = 0            # tried last on a weaker sign (a body that ran at import)
    checked: int = 0             # predicted, tried anyway (--check-predictions), rest-of-suite run reached
    confirmed: int = 0           # of those, the rest of the suite was red or did not collect
    missed: int = 0              # not predicted, yet the rest of the suite was red or did not collect


class CopyCoverage(BaseModel):
    """Over the tasks written: how many hidden test functions have must-fail copies."""
    tasks_with_copies: int = 0
    hidden_functions: int = 0
    hidden_with_copy: int = 0
    copies: int = 0                   # copies over the tasks
    graded: int = 0                   # FAIL_TO_PASS ids over the tasks
    protected: int = 0                # ... with must-fail value copies or a seal
    unprotected: int = 0              # ... with neither: graded, a forger's easier target
    crossed: int = 0                  # hidden test functions with crossed copies (grade/copy_cross.py)

    @model_validator(mode="before")
    @classmethod
    def _old_names(cls, data: Any) -> Any:
        return renamed(data, {"tasks_with_mutants": "tasks_with_copies", "pool_size": "copies",
                              "hidden_with_mutant": "hidden_with_copy"})


class GenerateReport(BaseModel):
    """report.json: what generate did, with the reason for every drop."""
    repo: str
    source_commit: str
    image_name: str
    baseline_tests: int
    baseline_passing: int
    baseline_failing: int
    flaky_excluded: int
    funnel: list[FunnelStage]
    # Red at baseline, both runs alike: excluded from every task (the first 200).
    baseline_failing_ids: list[str] = Field(default_factory=list)
    flaky_ids: list[str] = Field(default_factory=list)
    # A pytest older than the newest, when the newest did not collect the suite.
    pytest_pin: str | None = None
    # Test files that did not collect at baseline (a module that breaks pytest's
    # collection of another): left out of every run with --ignore.
    uncollected_files: list[str] = Field(default_factory=list)
    # Tests the baseline timed out in (a hang): left out of every run with --deselect.
    hung_tests: list[str] = Field(default_factory=list)
    drops: list[DropReason]
    tasks: list[str]
    timings: dict[str, float] = Field(default_factory=dict)
    jobs: int = 1
    remote_workers: int = 0          # remote workers on other nodes that joined
    remote_runs: int = 0             # test runs they made
    remote_workers_lost: int = 0     # lost mid-run: their candidates settled again
    resumed: ResumeInfo = Field(default_factory=ResumeInfo)
    prediction: Prediction = Field(default_factory=Prediction)
    copies: CopyCoverage = Field(default_factory=CopyCoverage)
    # Over the tasks written: how many per tier and per kind, and their sizes.
    difficulty: dict[str, int] = Field(default_factory=dict)
    kinds: dict[str, int] = Field(default_factory=dict)
    large_tasks: int = 0              # 40+ removed lines or 2+ files
    families: dict[str, list[str]] = Field(default_factory=dict)   # family -> its tasks (2+ only)

    @model_validator(mode="before")
    @classmethod
    def _old_names(cls, data: Any) -> Any:
        return renamed(data, {"mutants": "copies", "helpers": "remote_workers",
                              "helpers_lost": "remote_workers_lost"})


