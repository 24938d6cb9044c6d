"""Index the definitions of a repository with libcst.

For every source module: its top-level functions and classes and the methods
of those classes, with the lines of their bodies (coverage of body lines is
what ties a test to a symbol; `def` lines run at import for everyone), the
names each definition references, the module's import bindings and __all__.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from taskforge.errors import UserError


@dataclass
class Symbol:
    qualname: str
    module: str
    path: str
    name: str
    kind: Literal["function", "method", "class", "module", "assignment"]   # module: a whole-module feature
    cls: str | None
    start: int
    end: int
    body_lines: set[int] = field(default_factory=set)
    name_refs: set[str] = field(default_factory=set)
    attr_refs: set[str] = field(default_factory=set)
    signature: str = ""
    methods: list["Symbol"] = field(default_factory=list)
    # Module-level `NAME.attr = value` lines that belong to this definition: they
    # go with it (funcy's `memoize.skip = SkipMemory`).
    attached: list[tuple[int, int]] = field(default_factory=list)

    @property
    def public(self) -> bool:
        return not self.name.startswith("_")

    @property
    def dunder(self) -> bool:
        return self.name.startswith("__") and self.name.endswith("__")


@dataclass
class Binding:
    local: str
    module: str            # absolute module the name comes from
    name: str | None       # None: `import module as local`


@dataclass
class ModuleInfo:
    path: str
    module: str
    is_package: bool
    code: str
    tree: cst.Module | None = None
    symbols: list[Symbol] = field(default_factory=list)      # top level only
    bindings: list[Binding] = field(default_factory=list)
    star_imports: list[str] = field(default_factory=list)
    all_names: list[str | bytes] | None = None      # bytes only from a b"..." literal
    toplevel_name_refs: set[str] = field(default_factory=set)
    toplevel_attr_refs: set[str] = field(default_factory=set)

    def all_symbols(self):
        for s in self.symbols:
            yield s
            yield from s.methods


class _Refs(cst.CSTVisitor):
    def __init__(self) -> None:
        self.names: set[str] = set()
        self.attrs: set[str] = set()
        self._skip: set[int] = set()

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.attrs.add(node.attr.value)
        self._skip.add(id(node.attr))

    def visit_Name(self, node: cst.Name) -> None:
        if id(node) not in self._skip:
            self.names.add(node.value)


def refs_of(node: cst.CSTNode) -> tuple[set[str], set[str]]:
    v = _Refs()
    node.visit(v)
    return v.names, v.attrs


def resolve_relative(module: str, is_package: bool, level: int, target: str | None) -> str:
    if level == 0:
        return target or ""
    parts = module.split(".") if module else []
    base = parts if is_package else parts[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join([*base, *([target] if target else [])])


def dotted(node: cst.BaseExpression | None) -> str | None:
    if node is None:
        return None
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        left = dotted(node.value)
        return f"{left}.{node.attr.value}" if left else None
    return None


def import_bindings(stmt: cst.BaseSmallStatement, module: str, is_package: bool):
    """Bindings and star-imported modules of one import statement."""
    out: list[Binding] = []
    stars: list[str] = []
    if isinstance(stmt, cst.ImportFrom):
        src = resolve_relative(module, is_package, len(stmt.relative), dotted(stmt.module))
        if isinstance(stmt.names, cst.ImportStar):
            stars.append(src)
        else:
            for alias in stmt.names:
                name = dotted(alias.name) or ""
                local = alias.asname.name.value if alias.asname and isinstance(
                    alias.asname.name, cst.Name) else name
                out.append(Binding(local=local, module=src, name=name))
    elif isinstance(stmt, cst.Import):
        for alias in stmt.names:
            full = dotted(alias.name) or ""
            if alias.asname and isinstance(alias.asname.name, cst.Name):
                out.append(Binding(local=alias.asname.name.value, module=full, name=None))
            else:
                out.append(Binding(local=full.split(".")[0], module=full.split(".")[0], name=None))
    return out, stars


def _docstring_stmt(body: cst.BaseSuite) -> cst.BaseStatement | None:
    if isinstance(body, cst.IndentedBlock) and body.body:
        first = body.body[0]
        if isinstance(first, cst.SimpleStatementLine) and len(first.body) == 1 and isinstance(
                first.body[0], cst.Expr) and isinstance(
                first.body[0].value, (cst.SimpleString, cst.ConcatenatedString)):
            return first
    return None


_ELLIPSIS = cst.SimpleStatementLine([cst.Expr(cst.Ellipsis())])

_NodeT = TypeVar("_NodeT", bound=cst.CSTNode)


def interface_of(node: _NodeT) -> _NodeT:
    """The node with every body replaced by its docstring and `...`."""
    if isinstance(node, cst.FunctionDef):
        doc = _docstring_stmt(node.body)
        return node.with_changes(body=cst.IndentedBlock(
            body=[*([doc] if doc else []), _ELLIPSIS]), leading_lines=())
    if isinstance(node, cst.ClassDef):
        keep: list[cst.BaseStatement] = []
        doc = _docstring_stmt(node.body)
        if doc:
            keep.append(doc)
        body = node.body.body if isinstance(node.body, cst.IndentedBlock) else []
        for st in body:
            if st is doc:
                continue
            if isinstance(st, (cst.FunctionDef, cst.ClassDef)):
                keep.append(interface_of(st))
            elif isinstance(st, cst.SimpleStatementLine) and all(
                    isinstance(s, (cst.AnnAssign, cst.Assign)) for s in st.body):
                keep.append(st)
        if not keep or keep == [doc]:
            keep.append(_ELLIPSIS)
        return node.with_changes(body=cst.IndentedBlock(body=keep), leading_lines=())
    return node


def render(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node).strip("\n") + "\n"


def _span(node, pos) -> tuple[int, int]:
    rng = pos[node]
    start = rng.start.line
    for dec in getattr(node, "decorators", ()):
        start = min(start, pos[dec].start.line)
    return start, rng.end.line


def _body_lines(node, pos) -> set[int]:
    lines: set[int] = set()
    body = node.body
    stmts = body.body if isinstance(body, (cst.IndentedBlock, cst.SimpleStatementSuite)) else []
    for st in stmts:
        r = pos[st]
        lines.update(range(r.start.line, r.end.line + 1))
    return lines


def parse(path: Path, rel: str) -> cst.Module:
    try:
        return cst.parse_module(path.read_bytes())
    except cst.ParserSyntaxError as exc:
        raise UserError(f"syntax error in {rel}:{exc.raw_line}: {exc.message}") from None
    except UnicodeDecodeError:
        raise UserError(f"cannot decode {rel}") from None


def _index_simple_line(info: ModuleInfo, st: cst.SimpleStatementLine, bind) -> None:
    """A module-level line that is not `name = ...`: imports, __all__, other code."""
    for small in st.body:
        if isinstance(small, (cst.Import, cst.ImportFrom)):
            b, s = import_bindings(small, info.module, info.is_package)
            info.bindings += b
            info.star_imports += s
            for x in b:
                bind(x.local)
        elif _is_all(small):
            info.all_names = _all_strings(small)
        else:
            for bn in _bound_names(small):
                bind(bn)
            n, a = refs_of(small)
            info.toplevel_name_refs |= n
            info.toplevel_attr_refs |= a


def _index_compound(info: ModuleInfo, st: cst.BaseStatement, bind) -> None:
    """if/try/for/with at module level: imports inside count as bindings too."""
    for small in _small_statements(st):
        if isinstance(small, (cst.Import, cst.ImportFrom)):
            b, s = import_bindings(small, info.module, info.is_package)
            info.bindings += b
            info.star_imports += s
    for bn in _bound_names(st):
        bind(bn)
    n, a = refs_of(st)
    info.toplevel_name_refs |= n
    info.toplevel_attr_refs |= a


def index_module(root: Path, rel: str, module: str) -> ModuleInfo:
    tree = parse(root / rel, rel)
    wrapper = MetadataWrapper(tree, unsafe_skip_copy=True)
    pos = wrapper.resolve(PositionProvider)
    info = ModuleInfo(path=rel, module=module, is_package=rel.endswith("__init__.py"),
                      code=tree.code, tree=tree)
    bound: dict[str, int] = {}          # how often each name is bound at module level
    assigns: list[tuple[int, cst.SimpleStatementLine, str]] = []
    attrs: list[tuple[cst.SimpleStatementLine, str]] = []

    def bind(name: str) -> None:
        bound[name] = bound.get(name, 0) + 1

    for st in tree.body:
        if isinstance(st, cst.FunctionDef):
            info.symbols.append(_function(st, module, rel, pos, cls=None))
            bind(st.name.value)
        elif isinstance(st, cst.ClassDef):
            info.symbols.append(_class(st, module, rel, pos))
            bind(st.name.value)
        elif isinstance(st, cst.SimpleStatementLine):
            owner = _attribute_owner(st)
            if owner is not None:
                attrs.append((st, owner))
                continue
            name = _assigned_name(st)
            if name is not None:
                # `name = expr`: a definition of its own if nothing else binds the name
                # (decided below), so code using it can go with a feature it uses.
                assigns.append((len(info.symbols), st, name))
                bind(name)
                continue
            _index_simple_line(info, st, bind)
        elif _is_main_block(st):
            continue        # runs only as a script, never on import: it holds nothing back
        else:
            _index_compound(info, st, bind)
    for at, st, name in reversed(assigns):
        n, a = refs_of(st)
        if bound.get(name) == 1 and not (name.startswith("__") and name.endswith("__")):
            start, end = _span(st, pos)
            info.symbols.insert(at, Symbol(
                qualname=f"{module}.{name}", module=module, path=rel, name=name,
                kind="assignment", cls=None, start=start, end=end, name_refs=n - {name},
                attr_refs=a, signature=_assignment_interface(st, name)))
        else:
            info.toplevel_name_refs |= n
            info.toplevel_attr_refs |= a
    tops = {x.name: x for x in info.symbols}
    for st, owner in attrs:
        n, a = refs_of(st)
        sym = tops.get(owner) if bound.get(owner) == 1 else None
        if sym is not None:
            sym.name_refs |= n - {owner}
            sym.attr_refs |= a
            sym.attached.append(_span(st, pos))
        else:
            info.toplevel_name_refs |= n
            info.toplevel_attr_refs |= a
    return info


def _is_main_block(st: cst.CSTNode) -> bool:
    """`if __name__ == "__main__":`"""
    if not isinstance(st, cst.If) or st.orelse is not None:
        return False
    t = st.test
    return (isinstance(t, cst.Comparison) and isinstance(t.left, cst.Name)
            and t.left.value == "__name__" and len(t.comparisons) == 1
            and isinstance(t.comparisons[0].operator, cst.Equal)
            and isinstance(t.comparisons[0].comparator, cst.SimpleString)
            and t.comparisons[0].comparator.evaluated_value == "__main__")


def _attribute_owner(st: cst.SimpleStatementLine) -> str | None:
    """NAME of a line that is just `NAME.attr... = value`."""
    if len(st.body) != 1 or not isinstance(st.body[0], cst.Assign) or len(st.body[0].targets) != 1:
        return None
    return attribute_root(st.body[0].targets[0].target)


def attribute_root(target: cst.CSTNode) -> str | None:
    if not isinstance(target, cst.Attribute):
        return None
    while isinstance(target, cst.Attribute):
        target = target.value
    return target.value if isinstance(target, cst.Name) else None


def _assignment_interface(st: cst.SimpleStatementLine, name: str) -> str:
    """A literal value is data the tests may check, so it is shown; computed
    values are the work and are not."""
    from taskforge.analysis.pyparse import literal_eval
    from taskforge.analysis.pyparse import parse as parse_python

    code = render(st).strip()
    try:        # under pyparse's lock: indexing runs beside other parsing threads
        first: Any = parse_python(code).body[0]     # no .value unless an assignment: AttributeError
        value = first.value
        literal_eval(value)
    except (SyntaxError, ValueError, TypeError, AttributeError, IndexError, MemoryError,
            RecursionError):
        return f"{name} = ...\n"
    return code + "\n" if len(code) <= 300 else f"{name} = ...\n"


def _assigned_name(st: cst.SimpleStatementLine) -> str | None:
    """NAME of a line that is just `NAME = value` (or `NAME: T = value`)."""
    if len(st.body) != 1:
        return None
    small = st.body[0]
    if isinstance(small, cst.Assign) and len(small.targets) == 1:
        target = small.targets[0].target
    elif isinstance(small, cst.AnnAssign) and small.value is not None:
        target = small.target
    else:
        return None
    if isinstance(target, cst.Name) and target.value != "__all__":
        return target.value
    return None


# Nodes that bind names, and the field holding their target.
_BINDING_FIELD: dict[type[cst.CSTNode], str] = {
    cst.AssignTarget: "target", cst.AnnAssign: "target", cst.AugAssign: "target",
    cst.Del: "target", cst.For: "target", cst.AsName: "name", cst.NamedExpr: "target"}


def _bound_names(node: cst.CSTNode) -> set[str]:
    """Names a module-level statement (re)binds or deletes, nested blocks included."""
    out: set[str] = set()

    class V(cst.CSTVisitor):
        def on_visit(self, n) -> bool:
            field_ = _BINDING_FIELD.get(type(n))
            if field_ is not None:
                out.update(x.value for x in _target_names(getattr(n, field_)))
            elif isinstance(n, cst.Global):
                out.update(x.name.value for x in n.names)
            elif isinstance(n, (cst.FunctionDef, cst.ClassDef)):
                out.add(n.name.value)
                return False
            elif isinstance(n, cst.ImportAlias):
                out.add((dotted(n.name) or "").split(".")[0])
            return True

    node.visit(V())
    return out


def _target_names(t: cst.CSTNode) -> list[cst.Name]:
    if isinstance(t, cst.Name):
        return [t]
    if isinstance(t, (cst.Tuple, cst.List)):
        return [x for e in t.elements for x in _target_names(e.value)]
    if isinstance(t, cst.StarredElement):
        return _target_names(t.value)
    return []


def _small_statements(node: cst.CSTNode):
    out = []

    class V(cst.CSTVisitor):
        def visit_SimpleStatementLine(self, n):
            out.extend(n.body)

    node.visit(V())
    return out


def _is_all(small) -> bool:
    targets = []
    if isinstance(small, cst.Assign):
        targets = [t.target for t in small.targets]
    elif isinstance(small, (cst.AugAssign, cst.AnnAssign)):
        targets = [small.target]
    return any(isinstance(t, cst.Name) and t.value == "__all__" for t in targets)


def _all_strings(small) -> list[str | bytes]:
    value = small.value
    out: list[str | bytes] = []
    if isinstance(value, (cst.List, cst.Tuple)):
        for el in value.elements:
            if isinstance(el.value, cst.SimpleString):
                out.append(el.value.evaluated_value)
    return out


def _function(node: cst.FunctionDef, module: str, rel: str, pos, cls: str | None) -> Symbol:
    start, end = _span(node, pos)
    names, attrs = refs_of(node)
    qual = f"{module}.{cls}.{node.name.value}" if cls else f"{module}.{node.name.value}"
    return Symbol(qualname=qual, module=module, path=rel, name=node.name.value,
                  kind="method" if cls else "function", cls=cls, start=start, end=end,
                  body_lines=_body_lines(node, pos), name_refs=names - {node.name.value},
                  attr_refs=attrs, signature=render(interface_of(node)))


def _class(node: cst.ClassDef, module: str, rel: str, pos) -> Symbol:
    start, end = _span(node, pos)
    names, attrs = refs_of(node)
    sym = Symbol(qualname=f"{module}.{node.name.value}", module=module, path=rel,
                 name=node.name.value, kind="class", cls=None, start=start, end=end,
                 name_refs=names - {node.name.value}, attr_refs=attrs,
                 signature=render(interface_of(node)))
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else []
    for st in body:
        if isinstance(st, cst.FunctionDef):
            m = _function(st, module, rel, pos, cls=node.name.value)
            sym.methods.append(m)
            sym.body_lines |= m.body_lines
    return sym


@dataclass
class RepoIndex:
    modules: dict[str, ModuleInfo]            # by module name
    by_path: dict[str, ModuleInfo]

    def symbols(self):
        for mod in self.modules.values():
            yield from mod.all_symbols()


def index_repo(root: Path, layout) -> RepoIndex:
    modules: dict[str, ModuleInfo] = {}
    by_path: dict[str, ModuleInfo] = {}
    for rel in layout.source_files:
        mod = layout.module_name(rel)
        if not mod:
            continue
        info = index_module(root, rel, mod)
        modules[mod] = info
        by_path[rel] = info
    return RepoIndex(modules=modules, by_path=by_path)
