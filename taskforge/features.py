"""Propose features: a symbol (with the private helpers only it uses) that a
specific subset of the passing tests exercises.

Everything here is static and cheap: hopeless candidates (used by other code,
covered by no test, covering too much of the suite) are rejected before any
test runs, each with its reason.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from taskforge.coverage_map import CoverageMap
from taskforge.removal import exported_bindings
from taskforge.symbols import ModuleInfo, RepoIndex, Symbol
from taskforge.testindex import TestModule, group_ids
from taskforge.pyparse import parse as parse_python


@dataclass
class Candidate:
    name: str                       # root symbol qualname
    kind: str
    root: Symbol
    symbols: list[Symbol]           # root + private helpers
    hidden: set[str] = field(default_factory=set)          # test ids to hide (P and others)
    hidden_files: set[str] = field(default_factory=set)    # test files hidden whole
    late: bool = False              # risky (dispatched by computed name): tried last


@dataclass
class Proposal:
    candidates: list[Candidate]
    considered: int
    drops: list[tuple[str, str]]    # (symbol, reason)


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
                class_level_names = cls.name_refs - {m.name for m in cls.methods}
                for m in cls.methods:
                    class_level_names -= m.name_refs
                if sym.kind != "method" and sym.name in class_level_names:
                    if not any(cls.qualname == e for e in exclude):
                        users.append(cls.qualname)
                # `IFEXP = IF` or `@IF.setter` in a class body uses method IF at import time.
                if sym.kind == "method" and sym.cls == cls.name and mod.module == sym.module \
                        and sym.name in _class_body_names(mod, cls.name):
                    users.append(f"{cls.qualname} (class body)")
    return sorted(set(users))


_CLASS_BODY: dict[tuple[str, int], dict[str, set[str]]] = {}


def _class_body_names(mod: ModuleInfo, cls_name: str) -> set[str]:
    """Names a class body itself loads (assignments, decorators, defaults), not
    those inside its methods' bodies. One parse per module, for all its classes."""
    key = (mod.path, hash(mod.code))          # by content: a library may index many repos
    if key not in _CLASS_BODY:
        import ast

        try:
            tree = parse_python(mod.code)
        except SyntaxError:
            tree = ast.Module(body=[], type_ignores=[])
        table: dict[str, set[str]] = {}
        for node in tree.body:
            if not isinstance(node, ast.ClassDef):
                continue
            names: set[str] = set()
            for st in node.body:
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
            table[node.name] = names
        _CLASS_BODY[key] = table
    return _CLASS_BODY[key].get(cls_name, set())


def _references(mod: ModuleInfo, names: set[str], attrs: set[str], sym: Symbol) -> bool:
    if sym.kind == "method":
        return sym.name in attrs
    if sym.name in names and (mod.module == sym.module or any(
            b.local == sym.name and b.name for b in mod.bindings) or mod.star_imports):
        return True
    module_aliases = {b.local for b in mod.bindings}
    return sym.name in attrs and bool(module_aliases & names)


def helpers_of(index: RepoIndex, root: Symbol) -> list[Symbol]:
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
            if not _users(index, h, names | {h.qualname}):
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
                  module_names: set[str], removed_names: set[str]) -> tuple[set[str], set[str]]:
    """Tests (as (file, path) keys) and whole files that name removed top-level symbols."""
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
            if bound & d.name_refs or (removed_names & d.attr_refs and aliases & d.name_refs):
                hits.add(rel + "::" + "::".join(d.path))
    return hits, files


def hidden_tests(index, cov: CoverageMap, tests, module_names, by_key, all_ids,
                 feature: list[Symbol], top: list[Symbol], extra_files: set[str] = frozenset()):
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


def propose(index: RepoIndex, cov: CoverageMap, passing: set[str], all_ids: set[str],
            tests: dict[str, TestModule], max_share: float = 0.25,
            hopeless=lambda sym: None, late=lambda sym: False) -> Proposal:
    """`hopeless(symbol)` gives a reason a symbol cannot go that references do not
    show, or None; `late(symbol)` puts a risky candidate at the end of the order
    (dynamic.hopeless_check makes both)."""
    drops: list[tuple[str, str]] = []
    cands: list[Candidate] = []
    considered = 0
    cap = max(1, int(max_share * len(passing)))
    module_names = set(index.modules)
    by_key = group_ids(all_ids)
    for sym in index.symbols():
        if sym.dunder or not sym.public:
            continue
        if sym.kind == "method" and sym.cls and sym.cls.startswith("_"):
            continue
        considered += 1
        if not cov.measured(sym.path):
            drops.append((sym.qualname, "module never imported by the tests"))
            continue
        why = hopeless(sym)
        if why:
            drops.append((sym.qualname, why))
            continue
        helpers = helpers_of(index, sym)
        feature = [sym, *helpers]
        names = {s.qualname for s in feature}
        users = _users(index, sym, names)
        if users:
            drops.append((sym.qualname, f"used by other code: {', '.join(users[:3])}"))
            continue
        top = [s for s in feature if s.kind in ("function", "class")]
        hidden, files = hidden_tests(index, cov, tests, module_names, by_key, all_ids, feature, top)
        n_pass = len(hidden & passing)
        if n_pass == 0:
            drops.append((sym.qualname, "no passing test exercises it"))
            continue
        if n_pass > cap:
            drops.append((sym.qualname, f"too central: {n_pass} of {len(passing)} passing tests "
                                        f"depend on it (cap {cap})"))
            continue
        cands.append(Candidate(name=sym.qualname, kind=sym.kind, root=sym, symbols=feature,
                               hidden=hidden, hidden_files=files, late=late(sym)))
    for mod in index.modules.values():
        cand, reason = _module_candidate(index, mod, cov, tests, module_names, by_key, all_ids,
                                         hopeless)
        if cand is None and reason is None:
            continue
        considered += 1
        n_pass = len(cand.hidden & passing) if cand else 0
        if reason is None and n_pass == 0:
            reason = "no passing test exercises it"
        if reason is None and n_pass > cap:
            reason = (f"too central: {n_pass} of {len(passing)} passing tests depend on it "
                      f"(cap {cap})")
        if reason:
            drops.append((mod.module, reason))
        else:
            cands.append(cand)
    return Proposal(candidates=order(cands), considered=considered, drops=drops)


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


def _module_candidate(index: RepoIndex, mod: ModuleInfo, cov: CoverageMap, tests, module_names,
                      by_key, all_ids, hopeless=lambda sym: None):
    """A whole module as a feature: (candidate, None), (None, drop reason) or (None, None)."""
    if mod.is_package:
        return None, None
    tops = [s for s in mod.symbols if s.kind in ("function", "class")]
    if sum(1 for s in tops if s.public) < 2:
        return None, None          # a one-symbol module is that symbol's candidate
    if not cov.measured(mod.path):
        return None, "module never imported by the tests"
    names = {s.name for s in tops}
    for other in index.modules.values():
        if other is mod:
            continue
        for b in other.bindings:
            if b.name is None and b.module == mod.module:
                return None, f"imported as a module by {other.module}"
            if b.name and f"{b.module}.{b.name}" == mod.module:
                return None, f"imported as a module by {other.module}"
            if b.name and b.module == mod.module and b.name not in names:
                return None, f"{other.module} imports {b.name} from it"
    exclude = {s.qualname for s in tops}
    for s in tops:
        users = _users(index, s, exclude)
        if users:
            return None, f"used by other code: {', '.join(users[:3])}"
        why = hopeless(s)
        if why:
            return None, why
    module_refs = {rel for rel, tm in tests.items() if any(
        b.module == mod.module or (b.name and f"{b.module}.{b.name}" == mod.module)
        for b in tm.bindings)}     # a test file importing the module itself cannot stay
    hidden, files = hidden_tests(index, cov, tests, module_names, by_key, all_ids, tops, tops,
                                 extra_files=module_refs)
    root = module_symbol(mod, tops)
    return Candidate(name=mod.module, kind="module", root=root, symbols=tops, hidden=hidden,
                     hidden_files=files), None


def order(cands: list[Candidate]) -> list[Candidate]:
    """Functions first, then methods, then classes; modules interleaved for variety;
    risky candidates (Candidate.late) last."""
    rank = {"function": 0, "method": 1, "class": 2, "module": 3}
    risky = [c for c in cands if c.late]
    cands = [c for c in cands if not c.late]
    groups: dict[tuple[int, str], list[Candidate]] = {}
    for c in sorted(cands, key=lambda c: (rank[c.kind], c.root.path, c.root.start)):
        groups.setdefault((rank[c.kind], c.root.path), []).append(c)
    out: list[Candidate] = []
    for r in sorted({k[0] for k in groups}):
        lists = [v for k, v in sorted(groups.items()) if k[0] == r]
        i = 0
        while any(i < len(v) for v in lists):
            out += [v[i] for v in lists if i < len(v)]
            i += 1
    return out + sorted(risky, key=lambda c: (c.root.path, c.root.start))
