"""Propose features: a symbol with the private helpers only it uses, the code
that uses it (its dependents, so "used by other code" is no reason to drop it)
and the public code that exists only to serve them, which a specific subset of
the passing tests exercises. Whole classes and whole modules are features too.

Everything here is static and cheap: hopeless candidates (used at import time,
covered by no test, covering too much of the suite, too small to be worth a
task) are rejected before any test runs, each with its reason. Each candidate
carries its measured difficulty, and the order spreads picks across tiers,
kinds and modules, so a `--max-tasks` prefix is a sample, not the easy end.
"""
from __future__ import annotations

import ast
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import AbstractSet, NamedTuple

from taskforge.analysis.coverage_map import CoverageMap
from taskforge.analysis.pyparse import parse as parse_python
from taskforge.analysis.symbols import ModuleInfo, RepoIndex, Symbol
from taskforge.analysis.testindex import TestModule, group_ids
from taskforge.models import TIER_ORDER, Difficulty, FeatureKind, Removal, Tier
from taskforge.propose.branches import (
    MAX_COPIED,
    Arm,
    arm_source,
    arm_text,
    arms,
    copied,
    find_function,
    module_windows,
    nested_twins,
    without,
)
from taskforge.propose.difficulty import measure, snippet
from taskforge.propose.recall import wrapped_call
from taskforge.remove.transform import TOP_KINDS, exported_bindings


@dataclass
class Candidate:
    name: str                       # root symbol qualname
    kind: str
    root: Symbol
    symbols: list[Symbol]           # root + private helpers
    hidden: set[str] = field(default_factory=set)          # test ids to hide (P and others)
    hidden_files: set[str] = field(default_factory=set)    # test files hidden whole
    late: bool = False              # risky (dispatched by computed name): tried last
    difficulty: Difficulty = field(default_factory=Difficulty)
    parts: list[str] = field(default_factory=list)          # combined features' names (harden)
    predicted: str = ""             # why its removal is predicted to break the suite: dropped
    deferred: str = ""              # a weaker sign of the same: tried last (runs_at_import)
    removal: Removal = Removal.DEFINITIONS      # BODY: one function's body, callers kept
    arm: Arm | None = None          # BRANCH: the arm of an `if` in `root` that goes

    def removed_spans(self) -> list[LineSpan]:
        """The lines that go, for their age (git blame): a case's arm alone, not
        the function around it, which stays; otherwise the definitions."""
        if self.arm is not None:
            return [LineSpan(self.root.path, self.arm.line, self.arm.end)]
        return [LineSpan(s.path, s.start, s.end) for s in self.symbols]


class LineSpan(NamedTuple):
    path: str
    start: int
    end: int


@dataclass
class Proposal:
    candidates: list[Candidate]
    considered: int
    drops: list[tuple[str, str]]    # (symbol, reason): considered == drops + candidates
    predicted: int = 0              # candidates dropped as predicted to break the suite
    deferred: int = 0               # candidates tried last on a weaker sign of it


PREDICTED = "predicted to break the suite"


def _test_module(rel: str) -> bool:
    """A file pytest collects tests from by default (or a tests.py / test.py)."""
    name = rel.rsplit("/", 1)[-1]
    return name != "conftest.py" and (name.startswith("test") or name.endswith("_test.py"))


def test_helpers(tests: dict[str, TestModule], collected: AbstractSet[str] | None) -> set[str]:
    """The test files the suite imports without collecting tests from them: a
    conftest.py, or a module a collected test file imports (by its dotted name,
    or the tail of it, as rootdir-relative imports name it). A test-named file
    nothing imports and pytest does not run (w3lib's deselected benchmarks) is
    no helper: it breaks nothing."""
    ran = {rel for rel in tests if (rel in collected if collected is not None else _test_module(rel))}
    imported: set[str] = set()
    for rel in ran:
        for b in tests[rel].bindings:
            imported.add(b.module)
            if b.name:
                imported.add(f"{b.module}.{b.name}")
    out = set()
    for rel in tests:
        if rel in ran:
            continue
        if rel.rsplit("/", 1)[-1] == "conftest.py":
            out.add(rel)
            continue
        dotted = rel[:-3].replace("/", ".").removesuffix(".__init__")
        if any(dotted == m or dotted.endswith("." + m) for m in imported if m):
            out.add(rel)
    return out


def helper_names_it(tests: dict[str, TestModule], exported: set[tuple[str, str]],
                    module_names: set[str], removed_names: set[str],
                    collected: AbstractSet[str] | None = None,
                    helper_files: AbstractSet[str] | None = None) -> str:
    """Why removing the feature breaks tests no test id points at, or "": a
    conftest or helper module of the tests (`test_helpers`) names it where it
    runs at import (its top level, or a class's own lines: marshmallow's
    tests/base.py lists every field class and declares schemas with them, and
    conftest imports it). Test files import the helper, so hiding it takes the
    suite with it. `collected`: the files of the baseline's ids (without them,
    files named like test modules count as run); `helper_files`: test_helpers
    already worked out (once per proposal, not once per candidate)."""
    if helper_files is None:
        helper_files = test_helpers(tests, collected)
    helpers = {rel: tests[rel] for rel in helper_files}
    if not helpers:
        return ""
    keys, files = lexical_tests(helpers, exported, module_names, removed_names, class_level_only=True)
    named = sorted(files | {k.split("::")[0] for k in keys})
    if named:
        return f"{PREDICTED}: the test helper {named[0]} names it at import"
    return ""


_HEADER = ("def ", "async def ", "@", "class ")


def runs_at_import(cov: CoverageMap, feature: list[Symbol], index: RepoIndex | None = None) -> str:
    """Why removing `feature` would break tests no test id points at, or "": a
    body line of one of its functions ran outside every test (coverage's empty
    context: while the package or a test module was imported, or a test
    collected). Something that runs before any test needs it, so the tests
    its coverage names are not all that fail (marshmallow's `OrderedSet.add`,
    run by every schema class at import: 740 tests red, found by a full run).
    A header line (`def`, a decorator: they run when the function is defined)
    is no sign, so a one-line function's body, on its def line, never is."""
    for s in _expand(feature):
        if s.kind not in ("function", "method"):
            continue                # a class's lines are its methods'; assignments always run
        hit = cov.ran_at_import(s.path, s.body_lines)
        if hit and index is not None and s.module in index.modules:
            lines = index.modules[s.module].code.splitlines()
            hit = {n for n in hit if n <= len(lines) and not lines[n - 1].lstrip().startswith(_HEADER)}
        if hit:
            return f"{PREDICTED}: {s.qualname} ran at import or collection ({s.path}:{min(hit)})"
    return ""


# A feature grows by its dependents and the code only it uses while the tests
# its removal takes stay within the suite budget (--max-share; _Proposer.budget),
# and never past this many definitions: a ceiling on the work of one task, not
# the bound that usually binds (16 was: marshmallow, pydash and the fixtures gain
# 1-3 candidates at 40, and the budget stops the rest first; bench/bench_propose.py).
MAX_FEATURE_SYMBOLS = 40
MAX_FEATURE_FILES = 4
MIN_STATEMENTS = 3          # a body of one or two statements (an alias, a wrapper) is no task


def feature_files(max_symbols: int) -> int:
    """The files a feature may span: MAX_FEATURE_FILES, or a quarter of a raised
    definitions limit (`--max-feature-defs 48` allows 12 files)."""
    return max(MAX_FEATURE_FILES, max_symbols // 4)


class Users:
    """Who references each symbol, computed once per symbol: features grow by
    following these edges many times over."""

    def __init__(self, index: RepoIndex):
        self.index = index
        self._cache: dict[str, list[str]] = {}
        self.by_qual = {s.qualname: s for s in index.symbols()}
        self.by_name: dict[str, list[Symbol]] = {}
        for mod in index.modules.values():
            for s in mod.symbols:
                self.by_name.setdefault(s.name, []).append(s)

    def of(self, sym: Symbol) -> list[str]:
        if sym.qualname not in self._cache:
            self._cache[sym.qualname] = _users(self.index, sym, {sym.qualname})
        return self._cache[sym.qualname]

    def outside(self, sym: Symbol, names: set[str]) -> list[str]:
        """Users of `sym` not inside the feature `names` (a class covers its methods)."""
        out = []
        for u in self.of(sym):
            base = u.split(" (")[0]
            if u.endswith("(module level)") or not covered(base, names):
                out.append(u)
        return out


def covered(qualname: str, names: set[str]) -> bool:
    return qualname in names or any(qualname.startswith(n + ".") for n in names)


class _Blocked(Exception):
    """A feature that cannot grow: its reason is the candidate's drop reason."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def _too_many(limit: int) -> _Blocked:
    return _Blocked(f"used by other code: removing its dependents too takes more than {limit} definitions")


def _dependent(users: Users, u: str, hopeless) -> Symbol:
    """The definition behind the use `u` that must go with the feature (a
    special method's whole class), or _Blocked when it cannot."""
    if u.endswith("(module level)"):
        raise _Blocked(f"used by other code: {u}")
    dep = users.by_qual.get(u.split(" (")[0])
    if dep is None:
        raise _Blocked(f"used by other code: {u}")
    if dep.dunder and dep.kind == "method":
        # A special method cannot go alone (every use of the class calls it):
        # its class goes whole.
        dep = users.by_qual.get(f"{dep.module}.{dep.cls}")
        if dep is None or not dep.public:
            raise _Blocked(f"used by other code: {u} (a special method)")
    why = hopeless(dep)
    if why:
        raise _Blocked(f"used by {dep.qualname}, which cannot go: {why}")
    return dep


def _dependents(users: Users, feature: list[Symbol], names: set[str], whole: str | None, hopeless,
                limit: int) -> list[Symbol]:
    """Every definition outside the feature that uses something in it."""
    new: list[Symbol] = []
    for s in list(feature):
        for u in users.outside(s, names):
            if whole is not None and u == f"{whole} (module level)":
                continue
            dep = _dependent(users, u, hopeless)
            if dep not in new:
                new.append(dep)
                if len(feature) + len(new) > limit:      # a `get` with 3000 users
                    raise _too_many(limit)
    return new


def grow(index: RepoIndex, users: Users, root: Symbol, hopeless=lambda sym: None,
         seeds: list[Symbol] | None = None, whole: str | None = None,
         max_symbols: int = MAX_FEATURE_SYMBOLS, max_files: int = MAX_FEATURE_FILES,
         budget: Callable[[list[Symbol]], str] | None = None
         ) -> tuple[list[Symbol] | None, str]:
    """The feature of `root`: root, its private helpers, then every definition that
    uses something in the feature (its dependents), then the public code that only
    the feature uses. (None, reason) when a user cannot go: module-level code, a
    special method, a feature past `max_symbols`, or one past the suite `budget`
    (a reason once the tests its removal takes are too many: checked after each
    round of dependents, so a slice stops growing where the suite would go red).
    `seeds` start it from several definitions (a whole module, `whole`, whose
    own top level goes too)."""
    feature: list[Symbol] = []
    names: set[str] = set()
    limit = max_symbols + len(seeds or ())

    def add(sym: Symbol) -> None:
        for x in [sym, *helpers_of(index, sym, users)]:
            if not covered(x.qualname, names):
                feature.append(x)
                names.add(x.qualname)
        # A class taken whole takes its methods: they are not listed twice.
        feature[:] = [f for f in feature if not (
            f.kind == "method" and f"{f.module}.{f.cls}" in names)]

    for seed in seeds or [root]:
        add(seed)
    try:
        while new := _dependents(users, feature, names, whole, hopeless, limit):
            for dep in new:
                add(dep)
            if len(feature) > limit:
                raise _too_many(limit)
            why = budget(feature) if budget is not None else ""
            if why:
                raise _Blocked(why)
    except _Blocked as blocked:
        return None, blocked.reason
    # Downwards: public functions and classes that exist only to serve the feature.
    while True:
        refs = set().union(*(f.name_refs for f in _expand(feature)))
        extra = [c for n in sorted(refs) for c in users.by_name.get(n, ())
                 if c.public and not c.dunder and c.kind != "assignment"
                 and not covered(c.qualname, names)
                 and users.of(c) and not users.outside(c, names) and not hopeless(c)]
        if not extra or len(feature) + len(extra) > limit:
            break
        for c in extra:
            add(c)
    if len({f.path for f in feature}) > max_files:
        return None, f"used by other code in more than {max_files} files"
    return feature, ""


def entry_point(users: Users, feature: list[Symbol], root: Symbol) -> Symbol:
    """The definition a feature is named after: one nothing else in it uses, the largest."""
    # Module-level `NAME = value` lines that use the code are never its entry point.
    names = {f.qualname for f in feature if f.kind != "assignment"}
    tops = [f for f in feature if f.public and f.kind != "assignment" and not any(
        covered(u.split(" (")[0], names) for u in users.of(f))]
    if root in tops or not tops:
        return root
    return max(tops, key=lambda f: (f.end - f.start, f.qualname))


def feature_kind(root: Symbol, feature: list[Symbol]) -> FeatureKind:
    public = [f for f in feature if f.public and f.kind != "assignment"]
    return FeatureKind.CLUSTER if len(public) > 1 else FeatureKind(root.kind)


def thin_wrappers(index: RepoIndex, feature: list[Symbol],
                  whole_module: str | None = None) -> dict[str, str]:
    """Removed top-level functions and methods (not inside a removed class or
    module) whose body is one call of kept code: qualname -> the callee."""
    names = {f.name for f in feature}
    out = {}
    for f in feature:
        if f.module == whole_module or f.kind not in ("function", "method"):
            continue
        callee = wrapped_call(snippet(index.modules[f.module].code, f.start, f.end), names)
        if callee:
            out[f.qualname] = callee
    return out


def difficulty_of(index: RepoIndex, feature: list[Symbol], whole_module: str | None = None,
                  kept: set[str] | None = None) -> Difficulty:
    """Measured on the removed source itself (methods of a removed class count once).
    A thin wrapper (`thin_wrappers`) counts for nothing but `wrappers`: its
    lines, file and public name ask nothing, and they made tiers look hard."""
    # A module-level `NAME = value` that went with the feature adds its lines, not
    # a file or a public definition: a one-line alias elsewhere is no second file.
    names = {f.name for f in feature}
    wrappers = thin_wrappers(index, feature, whole_module)
    work = [f for f in feature if f.qualname not in wrappers]
    pieces, paths = [], {f.path for f in work if f.kind != "assignment"}
    if whole_module is not None:
        mod = index.modules[whole_module]
        pieces.append(mod.code)
        paths.add(mod.path)
    pieces += [snippet(index.modules[f.module].code, f.start, f.end) for f in work
               if f.module != whole_module]
    refs = set().union(*(f.name_refs for f in _expand(feature))) if feature else set()
    if kept is None:
        kept = {s.name for m in index.modules.values() for s in m.symbols}
    kept = kept - names
    d = measure(pieces, files=len(paths), symbols=len(feature),
                public=sum(1 for f in work if f.public and f.kind != "assignment"),
                fan_out=len(refs & kept))
    d.wrappers = len(wrappers)
    return d


def _users(index: RepoIndex, sym: Symbol, exclude: set[str]) -> list[str]:
    """Code outside `exclude` that references `sym` (lexically, conservatively)."""
    users = []
    for mod in index.modules.values():
        for other in mod.all_symbols():
            if other.qualname in exclude or any(other.qualname.startswith(e + ".") for e in exclude):
                continue
            if other.kind == "class":
                continue  # its methods are checked one by one; class-level code below
            if _references(mod, other.name_refs, other.attr_refs, sym):
                users.append(other.qualname)
        if _references(mod, mod.toplevel_name_refs, mod.toplevel_attr_refs, sym):
            users.append(f"{mod.module} (module level)")
        for cls in mod.symbols:
            if cls.kind == "class" and cls.qualname not in exclude:
                # What the class body itself reads at import (a name its methods
                # use too included), by name or as `module.name`.
                if sym.kind != "method" and (_class_body_uses_name(mod, cls.name, sym)
                                             or _class_body_uses_attr(mod, cls.name, sym)):
                    if not any(cls.qualname == e for e in exclude):
                        users.append(cls.qualname)
                # `IFEXP = IF` or `@IF.setter` in a class body uses method IF at import time.
                if sym.kind == "method" and sym.cls == cls.name and mod.module == sym.module \
                        and sym.name in _class_body_names(mod, cls.name):
                    users.append(f"{cls.qualname} (class body)")
    return sorted(set(users))


_CLASS_BODY: dict[tuple[str, int], dict[str, tuple[set[str], set[tuple[str, str]]]]] = {}


def _class_body_uses_name(mod: ModuleInfo, cls_name: str, sym: Symbol) -> bool:
    """A class body that reads the name of `sym` at import, where that name is
    `sym` (its own module, imported by name, or a star import)."""
    return sym.name in _class_body_names(mod, cls_name) and (
        mod.module == sym.module or bool(mod.star_imports)
        or any(b.local == sym.name and b.name for b in mod.bindings))


def _class_body_uses_attr(mod: ModuleInfo, cls_name: str, sym: Symbol) -> bool:
    """A class body that reads `alias.<sym>` at import time, where the alias is an
    import of sym's module or a package above it (marshmallow's
    `DESERIALIZATION_FUNCS = {"iso": utils.from_iso_date}`, `bool:
    ma_fields.Boolean`; not `dataclasses.field` for a `field` of the project):
    the class cannot stay without it."""
    attrs = _class_body(mod, cls_name)[1]
    def of_module(b) -> bool:
        target = b.module if b.name is None else f"{b.module}.{b.name}"
        return target == sym.module or sym.module.startswith(target + ".")
    aliases = {b.local for b in mod.bindings if of_module(b)}
    return any(attr == sym.name and base in aliases for base, attr in attrs)


def _class_body_names(mod: ModuleInfo, cls_name: str) -> set[str]:
    """Names a class body itself loads at import (`_class_body`'s first half)."""
    return _class_body(mod, cls_name)[0]


def _class_body(mod: ModuleInfo, cls_name: str) -> tuple[set[str], set[tuple[str, str]]]:
    """Names a class body itself loads (assignments, decorators, defaults), not
    those inside its methods' bodies; its `name.attr` reads are kept beside them
    (`_class_body_uses_attr`). One parse per module, for all its classes."""
    key = (mod.path, hash(mod.code))          # by content: a library may index many repos
    if key not in _CLASS_BODY:
        import ast

        try:
            tree = parse_python(mod.code)
        except SyntaxError:
            tree = ast.Module(body=[], type_ignores=[])
        table: dict[str, tuple[set[str], set[tuple[str, str]]]] = {}
        for node in tree.body:
            if not isinstance(node, ast.ClassDef):
                continue
            names: set[str] = set()
            attrs: set[tuple[str, str]] = set()
            for st in node.body:
                parts: list[ast.AST | None]
                if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    parts = [*st.decorator_list, *st.args.defaults, *st.args.kw_defaults]
                elif isinstance(st, ast.ClassDef):
                    parts = [*st.decorator_list, *st.bases]
                else:
                    parts = [st]
                for part in parts:
                    if part is not None:
                        names |= {n.id for n in ast.walk(part) if isinstance(n, ast.Name)
                                  and isinstance(n.ctx, ast.Load)}
                        attrs |= {(n.value.id, n.attr) for n in ast.walk(part)
                                  if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)}
            table[node.name] = (names, attrs)
        _CLASS_BODY[key] = table
    return _CLASS_BODY[key].get(cls_name, (set(), set()))


def _references(mod: ModuleInfo, names: set[str], attrs: set[str], sym: Symbol) -> bool:
    if sym.kind == "method":
        return sym.name in attrs
    if sym.name in names and (mod.module == sym.module or any(
            b.local == sym.name and b.name for b in mod.bindings) or mod.star_imports):
        return True
    module_aliases = {b.local for b in mod.bindings}
    return sym.name in attrs and bool(module_aliases & names)


def helpers_of(index: RepoIndex, root: Symbol, users: "Users | None" = None) -> list[Symbol]:
    """Private helpers (same module, or same class for methods) used only by the feature."""
    mod = index.modules[root.module]
    if root.kind == "class":
        pool = [s for s in mod.symbols if s.kind == "function"]
    elif root.kind == "method":
        cls = next(s for s in mod.symbols if s.kind == "class" and s.name == root.cls)
        pool = [m for m in cls.methods] + [s for s in mod.symbols if s.kind == "function"]
    else:
        pool = [s for s in mod.symbols if s.kind == "function"]
    pool = [s for s in pool if s.name.startswith("_") and not s.dunder and s is not root]
    feature = [root]
    changed = True
    while changed:
        changed = False
        names = {f.qualname for f in feature}
        for h in pool:
            if h.qualname in names:
                continue
            used_by_feature = any(_uses(f, h) for f in _expand(feature))
            if not used_by_feature:
                continue
            outside = (users.outside(h, names | {h.qualname}) if users is not None
                       else _users(index, h, names | {h.qualname}))
            if not outside:
                feature.append(h)
                changed = True
    return feature[1:]


def _expand(symbols):
    for s in symbols:
        yield s
        yield from s.methods


def _uses(user: Symbol, h: Symbol) -> bool:
    return h.name in (user.attr_refs if h.kind == "method" else user.name_refs)


def lexical_tests(tests: dict[str, TestModule], exported: set[tuple[str, str]],
                  module_names: set[str], removed_names: set[str], class_level_only: bool = False
                  ) -> tuple[set[str], set[str]]:
    """Tests (as (file, path) keys) and whole files that name removed top-level
    symbols; `class_level_only`: of the definitions, only classes' own lines."""
    hits: set[str] = set()
    files: set[str] = set()
    for rel, tm in tests.items():
        bound = {b.local for b in tm.bindings if b.name and (b.module, b.name) in exported}
        aliases = {b.local for b in tm.bindings if (b.name is None and b.module.split(".")[0] in
                   {m.split(".")[0] for m in module_names}) or
                   (b.name and f"{b.module}.{b.name}" in module_names)}
        if not bound and not aliases:
            continue
        if bound & tm.toplevel_name_refs or (removed_names & tm.toplevel_attr_refs
                                             and aliases & tm.toplevel_name_refs):
            files.add(rel)
            continue
        for d in tm.defs:
            if class_level_only and not d.class_level:
                continue
            if bound & d.name_refs or (removed_names & d.attr_refs and aliases & d.name_refs):
                hits.add(rel + "::" + "::".join(d.path))
    return hits, files


def hidden_tests(index, cov: CoverageMap, tests, module_names, by_key, all_ids,
                 feature: list[Symbol], top: list[Symbol], extra_files: AbstractSet[str] = frozenset()):
    """Tests that depend on a feature: by coverage of its body lines, and by naming it."""
    hidden: set[str] = set()
    for s in feature:
        hidden |= cov.tests_for(s.path, s.body_lines)
    exported = exported_bindings(index, top) if top else set()
    keys, files = lexical_tests(tests, exported, module_names, {s.name for s in top})
    files = files | set(extra_files)
    for k in [*keys, *files]:
        hidden |= by_key.get(k, set())
    return hidden & all_ids, files


def too_small(d: Difficulty, min_statements: int, min_tier: Tier) -> str | None:
    """Why a feature of difficulty `d` is below what was asked, or None."""
    if d.statements < min_statements:
        return f"too small: {d.statements} statement(s) of code removed (minimum {min_statements})"
    if TIER_ORDER.index(d.tier) < TIER_ORDER.index(min_tier):
        return f"below the difficulty asked: {d.tier.value} (minimum {min_tier.value})"
    return None


def exercised(n_pass: int, n_passing: int, cap: int) -> str | None:
    """Why a feature that `n_pass` of the `n_passing` passing tests depend on
    cannot be a task (none, or more than `cap`), or None."""
    if n_pass == 0:
        return "no passing test exercises it"
    if n_pass > cap:
        return f"too central: {n_pass} of {n_passing} passing tests depend on it (cap {cap})"
    return None


# grow()'s reasons a definition cannot go that its body alone can: its users
# (other code, module level included, or too much of the suite with them). A body
# that runs at import is caught apart (runs_at_import: it would fail every test).
_USERS_REASONS = ("used by", "too central with its dependents")


def hollowable(sym: Symbol, why: str) -> bool:
    """Whether a definition that cannot go for `why` is offered as Removal.BODY:
    a function or method whose users are the reason."""
    return sym.kind in ("function", "method") and why.startswith(_USERS_REASONS)


def proposable(sym: Symbol) -> bool:
    """A definition a feature is proposed from: public, not special, not a
    module-level NAME = value (that only goes with what it uses), not a method
    of a private class."""
    if sym.dunder or not sym.public or sym.kind == "assignment":
        return False
    return not (sym.kind == "method" and sym.cls and sym.cls.startswith("_"))


def private_body(sym: Symbol) -> bool:
    """A private function or method (`_name`, not special) whose body, not its
    definition, is offered (Removal.BODY): the name stays where the package's
    dispatch and the tests reach it, so no interface is invented; a public
    definition is proposed whole first (proposable)."""
    return sym.kind in ("function", "method") and not sym.public and not sym.dunder


@dataclass
class _Proposer:
    """propose()'s shared state, so that each definition's way to a candidate
    or a drop is one method."""
    index: RepoIndex
    cov: CoverageMap
    passing: set[str]
    all_ids: set[str]
    tests: dict[str, TestModule]
    hopeless: Callable
    late: Callable
    min_statements: int
    min_tier: Tier
    max_symbols: int
    cap: int
    users: Users = field(init=False)
    module_names: set[str] = field(init=False)
    by_key: dict = field(init=False)
    kept: set[str] = field(init=False)
    helper_files: set[str] = field(init=False)   # test files the suite imports but collects nothing from
    seen: dict[frozenset[str], str] = field(default_factory=dict)
    _asts: dict[str, ast.Module | None] = field(default_factory=dict)     # branches(): a module parsed once
    _windows: dict[str, set] = field(default_factory=dict)  # branches(): each module's token windows
    _covering: dict[tuple[str, str], frozenset[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.users = Users(self.index)
        self.module_names = set(self.index.modules)
        self.by_key = group_ids(self.all_ids)
        self.kept = {s.name for m in self.index.modules.values() for s in m.symbols}
        self.helper_files = test_helpers(self.tests, {i.split("::")[0] for i in self.all_ids})

    def budget(self, feature: list[Symbol]) -> str:
        """Why `feature` with its dependents so far takes too much of the suite
        (the passing tests its body lines' coverage names, past the cap), or ""."""
        tests: set[str] = set()
        for s in feature:
            key = (s.path, s.qualname)
            if key not in self._covering:
                self._covering[key] = frozenset(self.cov.tests_for(s.path, s.body_lines) & self.passing)
            tests |= self._covering[key]
        if len(tests) > self.cap:
            return (f"too central with its dependents: removing them takes {len(tests)} of "
                    f"{len(self.passing)} passing tests (cap {self.cap})")
        return ""

    def helpers_name(self, top: list[Symbol]) -> str:
        """helper_names_it for a feature's top-level definitions."""
        if not top:
            return ""
        return helper_names_it(self.tests, exported_bindings(self.index, top), self.module_names,
                               {s.name for s in top}, helper_files=self.helper_files)

    def symbol(self, sym: Symbol) -> Candidate | str:
        """The candidate grown from `sym`, or why there is none."""
        if not self.cov.measured(sym.path):
            return "module never imported by the tests"
        why = self.hopeless(sym)
        if why:
            return why
        feature, why = grow(self.index, self.users, sym, self.hopeless, max_symbols=self.max_symbols,
                            max_files=feature_files(self.max_symbols), budget=self.budget)
        if feature is None:
            return self.body(sym, why) if hollowable(sym, why) else why
        key = frozenset(f.qualname for f in feature)
        if key in self.seen:
            return f"same feature as {self.seen[key]}"
        diff = difficulty_of(self.index, feature, kept=self.kept)
        why = too_small(diff, self.min_statements, self.min_tier)
        if why:                 # (an @overload stub must not claim the key of its function)
            return why
        self.seen[key] = sym.qualname
        root = entry_point(self.users, feature, sym)
        feature = [root, *[f for f in feature if f is not root]]
        top = [s for s in feature if s.kind in TOP_KINDS]
        hidden, files = hidden_tests(self.index, self.cov, self.tests, self.module_names, self.by_key,
                                     self.all_ids, feature, top)
        why = exercised(len(hidden & self.passing), len(self.passing), self.cap)
        if why:
            return why
        kind = feature_kind(root, feature)
        # Two clusters may share an entry point: the name (and so the task id) says which.
        name = root.qualname if kind != FeatureKind.CLUSTER else (
            root.qualname + "+" + hashlib.sha256("\0".join(sorted(key)).encode()).hexdigest()[:6])
        return Candidate(name=name, kind=kind, root=root, symbols=feature, hidden=hidden, hidden_files=files,
                         late=any(self.late(f) for f in feature), difficulty=diff,
                         predicted=self.helpers_name(top),
                         deferred=runs_at_import(self.cov, feature, self.index))

    def body(self, sym: Symbol, why: str) -> Candidate | str:
        """The Removal.BODY candidate of a function whose definition cannot go
        (`why`: its users cannot go with it, or would take too much of the suite):
        its callers stay, so the tests it takes are the ones that run its body."""
        key = frozenset({"body:" + sym.qualname})
        diff = difficulty_of(self.index, [sym], kept=self.kept | {sym.name})
        small = too_small(diff, self.min_statements, self.min_tier)
        if small:
            return f"{why}; its body alone is {small}"
        hidden = self.cov.tests_for(sym.path, sym.body_lines) & self.all_ids
        central = exercised(len(hidden & self.passing), len(self.passing), self.cap)
        if central:
            return f"{why}; its body alone: {central}"
        self.seen[key] = sym.qualname
        return Candidate(name=sym.qualname, kind=sym.kind, root=sym, symbols=[sym], hidden=hidden,
                         late=self.late(sym), difficulty=diff, removal=Removal.BODY,
                         # its callers stay: one that runs at import fails every test
                         predicted=runs_at_import(self.cov, [sym], self.index))

    def module_windows(self) -> dict[str, set]:
        """Each package module's token windows (branches.module_windows), worked
        out once."""
        if not self._windows:
            self._windows = {name: module_windows(m.code) for name, m in self.index.modules.items()}
        return self._windows

    def branches(self, sym: Symbol) -> list[tuple[str, Candidate | str]]:
        """The Removal.BRANCH candidates of function `sym` (propose.branches.arms),
        each named `qualname@line` with its arm's first line, or why an arm is none.
        The tests it takes are the ones that run the arm: the function, its
        condition and every other path stay."""
        if not self.cov.measured(sym.path):
            return []
        mod = self.index.modules[sym.module]
        if sym.module not in self._asts:
            try:
                self._asts[sym.module] = parse_python(mod.code)
            except SyntaxError:
                self._asts[sym.module] = None
        tree = self._asts[sym.module]
        fn = find_function(tree, sym.cls if sym.kind == "method" else None, sym.name, sym.start) \
            if tree is not None else None
        if fn is None:
            return []
        runs = self.cov.tests_for(sym.path, sym.body_lines) & self.passing
        out: list[tuple[str, Candidate | str]] = []
        for arm in arms(fn, mod.code, min_statements=1):
            name = f"{sym.qualname}@{arm.line}"
            diff = measure([arm_source(mod.code, arm)], files=1, symbols=1, public=0, fan_out=0)
            why = too_small(diff, self.min_statements, self.min_tier)
            if why:
                out.append((name, why))
                continue
            hidden = self.cov.tests_for(sym.path, arm.lines) & self.all_ids
            taken = hidden & self.passing
            why = exercised(len(taken), len(self.passing), self.cap) or (
                "every passing test that runs the function takes this arm (its body is the feature)"
                if taken >= runs else "")
            at_import = self.cov.ran_at_import(sym.path, arm.lines)
            if not why and at_import:
                why = f"{PREDICTED}: {name} ran at import or collection ({sym.path}:{min(at_import)})"
            if not why:
                others = [w for m, w in self.module_windows().items() if m != sym.module]
                share = copied(arm_text(mod.code, arm), [*others, module_windows(without(mod.code, arm))])
                if share > MAX_COPIED:
                    why = f"its code stands elsewhere in the package ({share:.0%} of it)"
            if why:
                out.append((name, why))
                continue
            out.append((name, Candidate(name=name, kind=sym.kind, root=sym, symbols=[sym], hidden=hidden,
                                        late=self.late(sym), difficulty=diff, removal=Removal.BRANCH,
                                        arm=arm)))
        cases = [(i, c, c.arm) for i, (_, c) in enumerate(out) if isinstance(c, Candidate) and c.arm is not None]
        for k, j in nested_twins([(a, c.hidden) for _, c, a in cases]).items():
            i, inner, _ = cases[k]
            out[i] = (inner.name, f"the same hidden tests as the case around it, {cases[j][1].name}")
        return out

    def module(self, mod) -> Candidate | str | None:
        """The whole-module candidate of `mod`, why there is none, or None when
        the module is no candidate at all."""
        cand, reason = _module_candidate(self.index, mod, self.cov, self.tests, self.module_names,
                                         self.by_key, self.all_ids, self.hopeless, self.users,
                                         max_symbols=self.max_symbols, budget=self.budget)
        if cand is None:
            return reason
        if reason is None:
            reason = exercised(len(cand.hidden & self.passing), len(self.passing), self.cap)
        if reason is None:
            cand.difficulty = difficulty_of(self.index, cand.symbols, whole_module=mod.module)
            reason = too_small(cand.difficulty, self.min_statements, self.min_tier)
        if reason is None:
            # Its own top level calls its functions at import, and goes with it:
            # no sign from those (runs_at_import is for definitions taken alone).
            cand.predicted = self.helpers_name([s for s in cand.symbols if s.kind in TOP_KINDS])
        return reason or cand


def propose(index: RepoIndex, cov: CoverageMap, passing: set[str], all_ids: set[str],
            tests: dict[str, TestModule], max_share: float = 0.4,
            hopeless=lambda sym: None, late=lambda sym: False,
            min_statements: int = MIN_STATEMENTS, min_tier: Tier = Tier.EASY,
            max_symbols: int = MAX_FEATURE_SYMBOLS, check_predictions: bool = False,
            branches: bool = False) -> Proposal:
    """`hopeless(symbol)` gives a reason a symbol cannot go that references do not
    show, or None; `late(symbol)` puts a risky candidate at the end of the order
    (dynamic.hopeless_check makes both). Every symbol considered ends as one
    candidate or one drop. `max_symbols` bounds a feature with its dependents
    (`--max-feature-defs`: larger vertical slices, each still validated).
    A candidate predicted to break the suite (`helper_names_it`) is dropped
    before any run, or with `check_predictions` tried last, so that a run
    measures how often the prediction is wrong; one with a weaker sign of it
    (`runs_at_import`: right 6 times of 8 on marshmallow, where test modules
    also run code at collection) is tried last. `branches` also offers each
    function's larger if/elif/else arms (Removal.BRANCH, `_Proposer.branches`),
    ordered after every other candidate (order)."""
    p = _Proposer(index, cov, passing, all_ids, tests, hopeless, late, min_statements, min_tier,
                  max_symbols, cap=max(1, int(max_share * len(passing))))
    drops: list[tuple[str, str]] = []
    cands: list[Candidate] = []
    considered = 0
    for sym in index.symbols():
        if proposable(sym):
            got = p.symbol(sym)
        elif private_body(sym):
            # simpleeval's features are its `_eval_<node>` methods: the
            # definition stays (the dispatch names it), the body is the task.
            got = p.body(sym, "private: its definition stays")
        else:
            continue
        considered += 1
        if isinstance(got, str):
            drops.append((sym.qualname, got))
        else:
            cands.append(got)
    if branches:
        for sym in index.symbols():
            if sym.kind not in ("function", "method"):
                continue
            for name, got_arm in p.branches(sym):
                considered += 1
                if isinstance(got_arm, str):
                    drops.append((name, got_arm))
                else:
                    cands.append(got_arm)
    for mod in index.modules.values():
        got_mod = p.module(mod)
        if got_mod is None:
            continue
        considered += 1
        if isinstance(got_mod, str):
            drops.append((mod.module, got_mod))
        else:
            cands.append(got_mod)
    predicted = [c for c in cands if c.predicted]
    for c in cands:
        if c.deferred or (check_predictions and c.predicted):
            c.late = True
    if not check_predictions:
        drops += [(c.name, c.predicted) for c in predicted]
        cands = [c for c in cands if not c.predicted]
    return Proposal(candidates=order(cands), considered=considered, drops=drops,
                    predicted=0 if check_predictions else len(predicted),
                    deferred=sum(1 for c in cands if c.deferred and not c.predicted))


def combine(index: RepoIndex, cov: CoverageMap, tests: dict[str, TestModule], passing: set[str],
            all_ids: set[str], parts: list[Candidate], cap: int) -> tuple[Candidate | None, str]:
    """Several proposed features removed as one task (`taskforge harden`): the
    union of their definitions (a class taken whole takes its methods) and every
    test that depends on any of them. Each part is already closed under its
    dependents, so the union is too. (None, reason) when it cannot be a task: a
    whole module among the parts (its file goes, not its definitions), or too
    many of the suite's tests hidden at once."""
    if len(parts) < 2:
        return None, "fewer than two features to combine"
    if any(p.kind == FeatureKind.MODULE for p in parts):
        return None, "a whole module is not combined"
    if any(p.removal is not Removal.DEFINITIONS for p in parts):
        return None, "a function's body or branch alone is not combined (its definition stays)"
    feature: list[Symbol] = []
    names: set[str] = set()
    for p in parts:
        for sym in p.symbols:
            if not covered(sym.qualname, names):
                feature.append(sym)
                names.add(sym.qualname)
    feature = [f for f in feature if not (f.kind == "method" and f"{f.module}.{f.cls}" in names)]
    # The first part's entry point names the task, unless another part took its class whole.
    root = next((f for f in feature if f is parts[0].root), feature[0])
    feature = [root, *[f for f in feature if f is not root]]
    top = [f for f in feature if f.kind in TOP_KINDS]
    hidden, files = hidden_tests(index, cov, tests, set(index.modules), group_ids(all_ids), all_ids,
                                 feature, top)
    n_pass = len(hidden & passing)
    if n_pass > cap:
        return None, f"too central together: {n_pass} of {len(passing)} passing tests (cap {cap})"
    kept = {s.name for m in index.modules.values() for s in m.symbols}
    names_ = sorted(p.name for p in parts)
    return Candidate(name="+".join(names_), kind=FeatureKind.CLUSTER,
                     root=root, symbols=feature, hidden=hidden, hidden_files=files,
                     late=any(p.late for p in parts), parts=names_,
                     difficulty=difficulty_of(index, feature, kept=kept)), ""


def combined(proposed: list[Candidate], groups: list[tuple[str, ...]], make
             ) -> tuple[list[Candidate], list[tuple[str, str]]]:
    """The candidates of `groups` (names of proposed features), made by `make(parts)`
    (`combine` with the run's facts bound): (candidates in the groups' order,
    (group, reason) for each that cannot be one). A name no longer proposed (the
    repository moved on, or the feature grew past the limit) drops its group."""
    by_name = {c.name: c for c in proposed}
    out: list[Candidate] = []
    drops: list[tuple[str, str]] = []
    seen: set[str] = set()
    for g in groups:
        label = "+".join(sorted(g))
        missing = [n for n in g if n not in by_name]
        if missing:
            drops.append((label, f"not proposed at this commit: {', '.join(missing)}"))
            continue
        if label in seen:
            drops.append((label, "the same group twice"))
            continue
        seen.add(label)
        cand, why = make([by_name[n] for n in g])
        if cand is None:
            drops.append((label, why))
        else:
            out.append(cand)
    return out, drops


def grown(proposed: list[Candidate], solved: list[tuple[str, ...]], known: AbstractSet[str] = frozenset()
          ) -> tuple[list[Candidate], list[tuple[str, str]]]:
    """Proposed features that hold all of a solved one and more (`taskforge
    harden`'s growth): the code below a solved feature that its removal can
    take with it (a helper it calls and that helper's other users, the class or
    module around it). A model that solved the part must now also rebuild what
    it stood on. Ordered round-robin over `solved` (qualnames of each solved
    feature's definitions), each one's containers largest first (files, then
    removed lines, then name), so that a run asked for N tasks grows N solved
    features where it can. `known`: names of the repository's tasks already
    made (solved or not), never made again. (kept, (name, reason) for the
    rest)."""
    per: list[list[Candidate]] = []
    same = [set(part) for part in solved]
    for inner in same:
        mine = []
        for c in proposed:
            names = {x.qualname for x in c.symbols}
            if (inner and all(covered(q, names) for q in inner)
                    and not all(covered(x, inner) for x in names)
                    and names not in same and c.name not in known):   # a task as it was
                mine.append(c)
        mine.sort(key=lambda c: (-c.difficulty.files, -c.difficulty.removed_lines, c.name))
        per.append(mine)
    out: list[Candidate] = []
    seen: set[str] = set()
    for i in range(max(map(len, per), default=0)):
        for mine in per:
            if i < len(mine) and mine[i].name not in seen:
                seen.add(mine[i].name)
                out.append(mine[i])
    return out, [(c.name, "already a task" if c.name in known else "holds no solved feature")
                 for c in proposed if c.name not in seen]


def module_symbol(mod: ModuleInfo, tops: list[Symbol]) -> Symbol:
    """A stand-in Symbol for a whole module: its interface is every top-level one."""
    doc = ""
    if mod.tree is not None and mod.tree.body:
        first = mod.tree.body[0]
        import libcst as cst

        if (isinstance(first, cst.SimpleStatementLine) and isinstance(first.body[0], cst.Expr)
                and isinstance(first.body[0].value, (cst.SimpleString, cst.ConcatenatedString))):
            doc = mod.tree.code_for_node(first).strip() + "\n\n"
    sig = doc + "\n\n".join(s.signature.rstrip() for s in tops) + "\n"
    return Symbol(qualname=mod.module, module=mod.module, path=mod.path,
                  name=mod.module.rsplit(".", 1)[-1], kind="module", cls=None, start=1,
                  end=mod.code.count("\n") + 1, signature=sig)


def _imported_whole(index: RepoIndex, mod: ModuleInfo) -> str | None:
    """Why other code keeps needing the module itself (imports it as a module,
    or a name it does not define from it), or None."""
    names = {s.name for s in mod.symbols}
    for other in index.modules.values():
        if other is mod:
            continue
        for b in other.bindings:
            if b.name is None and b.module == mod.module:
                return f"imported as a module by {other.module}"
            if b.name and f"{b.module}.{b.name}" == mod.module:
                return f"imported as a module by {other.module}"
            if b.name and b.module == mod.module and b.name not in names:
                return f"{other.module} imports {b.name} from it"
    return None


def _module_candidate(index: RepoIndex, mod: ModuleInfo, cov: CoverageMap, tests, module_names,
                      by_key, all_ids, hopeless=lambda sym: None, users: Users | None = None,
                      max_symbols: int = MAX_FEATURE_SYMBOLS,
                      budget: Callable[[list[Symbol]], str] | None = None):
    """A whole module as a feature: (candidate, None), (None, drop reason) or (None, None)."""
    if mod.is_package:
        return None, None
    tops = [s for s in mod.symbols if s.kind in ("function", "class")]
    if sum(1 for s in tops if s.public) < 2:
        return None, None          # a one-symbol module is that symbol's candidate
    if not cov.measured(mod.path):
        return None, "module never imported by the tests"
    why = _imported_whole(index, mod)
    if why:
        return None, why
    for s in tops:
        why = hopeless(s)
        if why:
            return None, why
    # Code elsewhere that uses the module's definitions goes with it (a multi-file feature).
    feature, why = grow(index, users or Users(index), tops[0], hopeless,
                        seeds=[*tops, *(s for s in mod.symbols if s.kind == "assignment")],
                        whole=mod.module, max_symbols=max_symbols,
                        max_files=feature_files(max_symbols), budget=budget)
    if feature is None:
        return None, why
    module_refs = {rel for rel, tm in tests.items() if any(
        b.module == mod.module or (b.name and f"{b.module}.{b.name}" == mod.module)
        for b in tm.bindings)}     # a test file importing the module itself cannot stay
    top = [s for s in feature if s.kind in TOP_KINDS]
    hidden, files = hidden_tests(index, cov, tests, module_names, by_key, all_ids, feature, top,
                                 extra_files=module_refs)
    root = module_symbol(mod, tops)
    return Candidate(name=mod.module, kind="module", root=root, symbols=feature, hidden=hidden,
                     hidden_files=files), None


# Picks cycle through tiers in this pattern (hard first, and half of the picks:
# they are what a strong policy still fails), so any prefix mixes sizes.
TIER_PATTERN = [Tier.HARD, Tier.MEDIUM, Tier.HARD, Tier.EASY, Tier.HARD, Tier.MEDIUM]


def order(cands: list[Candidate]) -> list[Candidate]:
    """Spread over tiers (TIER_PATTERN), and within a tier round-robin over
    (kind, module) so no one module or kind fills the prefix; larger first within
    a group. The cases of functions (Removal.BRANCH) come after the public
    features, and the bodies of private functions after both, so that
    --max-tasks takes the public interface's features first; risky
    candidates (Candidate.late) go last. Deterministic."""
    risky = sorted((c for c in cands if c.late), key=lambda c: (c.root.path, c.root.start, c.name))
    rest = [c for c in cands if not c.late]

    def rank(c: Candidate) -> int:
        return 1 if c.removal is Removal.BRANCH else 2 * (c.removal is Removal.BODY and not c.root.public)

    return [c for r in range(3) for c in _spread([c for c in rest if rank(c) == r])] + risky


def _spread(cands: list[Candidate]) -> list[Candidate]:
    """order()'s tier pattern and round-robin over (kind, module)."""
    by_tier: dict[Tier, list[Candidate]] = {}
    for t in TIER_ORDER:
        groups: dict[tuple[str, str], list[Candidate]] = {}
        for c in cands:
            if c.difficulty.tier == t:
                groups.setdefault((str(c.kind), c.root.path), []).append(c)
        lists = [sorted(v, key=lambda c: (-c.difficulty.score, c.root.start, c.name))
                 for _, v in sorted(groups.items())]
        out: list[Candidate] = []
        i = 0
        while any(i < len(v) for v in lists):
            out += [v[i] for v in lists if i < len(v)]
            i += 1
        by_tier[t] = out
    merged: list[Candidate] = []
    pos = {t: 0 for t in TIER_ORDER}
    while any(pos[t] < len(by_tier[t]) for t in TIER_ORDER):
        for t in TIER_PATTERN:
            if pos[t] < len(by_tier[t]):
                merged.append(by_tier[t][pos[t]])
                pos[t] += 1
    return merged
