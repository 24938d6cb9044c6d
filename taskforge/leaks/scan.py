"""Find the removed code itself wherever it could hide.

Needles are the normalised token sequences of every removed body (headers are
excluded: the statement publishes the interface on purpose; names are not
leaks, code is). Any K consecutive body tokens that do not also occur in the
code the workspace keeps form a window; a window found in a file is a leak.
Haystacks: every file of a tree (text, bytecode, zip archives, caches, build
output) and every object of every git repository in it (compressed objects,
dangling ones included), and the environment image's filesystem.
"""
from __future__ import annotations

import ast
import hashlib
import importlib.util
import io
import marshal
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
import zipfile
from array import array
from dataclasses import dataclass
from pathlib import Path

from taskforge.analysis.pyparse import parse as parse_python

K = 12                 # window length, in tokens
MIN_BODY_TOKENS = 10   # shorter bodies are too trivial to recognise
MIN_MATCHES = 3        # distinct windows that must match at least (all, if the body has fewer)
MATCH_CAP = 12         # ... and at most: a long body is found from a fragment of K + 11 tokens
MAX_FILE = 8 * 1024 * 1024
CACHE_DIRS = {".mypy_cache", ".pytest_cache", ".pytype", ".pyre", ".ruff_cache", ".hypothesis",
              "__pycache__", ".tox", ".nox", ".eggs"}
BUILD_MARKERS = (".egg-info", ".dist-info")
COMMON = set(__import__("keyword").kwlist) | {
    "self", "cls", "len", "str", "int", "float", "bool", "list", "dict", "set", "tuple", "range",
    "isinstance", "print", "append", "join", "get", "items", "keys", "values", "value", "key",
    "result", "args", "kwargs", "name", "text", "data", "other", "object", "super", "type"}
TOKEN_RE = re.compile(r"""[A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d+)?|"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'"""
                      r"""|==|!=|<=|>=|\*\*|//|->|:=|[^\sA-Za-z0-9_#]""")
COMMENT_RE = re.compile(r"(?m)(^|\s)#[^\n]*")


def tokens(text: str) -> list[str]:
    """Python-ish tokens with comments dropped; works on prose and markup too."""
    return TOKEN_RE.findall(COMMENT_RE.sub(" ", text))


def windows(toks: list[str], k: int = K) -> set[int]:
    return {hash(tuple(toks[i:i + k])) for i in range(0, max(0, len(toks) - k + 1))}


@dataclass
class Needle:
    symbol: str
    names: list[frozenset]              # prefilter: every identifier of some window occurs
    windows: set[int]
    lines: list[str]                    # the removed body, for snippets
    size: int = K                       # window length used for this needle
    short: str = ""                     # the symbol's own name
    file_suffix: str = ""               # module path, e.g. pkg/mod.py (bytecode check)
    starts: frozenset = frozenset()     # first tokens of the windows: cheap position filter


@dataclass
class Finding:
    kind: str          # code | bytecode | cache | build | git
    path: str
    symbol: str
    snippet: str

    def line(self) -> str:
        return f"{self.kind}: {self.path}: {self.symbol}: {self.snippet[:160]}"


def _body_source(tree: ast.Module, src_lines: list[str], qualname_tail: list[str]):
    """Source lines of the body of the def or class at qualname_tail (docstring out)."""
    nodes = tree.body
    node = None
    for part in qualname_tail:
        node = next((n for n in nodes if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                        ast.ClassDef)) and n.name == part), None)
        if node is None:
            return None
        nodes = node.body
    assert node is not None         # qualname_tail, from str.split, is never empty
    body = list(node.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    if not body:
        return None
    if isinstance(node, ast.ClassDef):   # the class's code: method bodies and statements
        out: list[str] = []
        for st in body:
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
                sub = _body_source(ast.Module(body=[st], type_ignores=[]), src_lines, [st.name])
                out += sub or []
            else:
                out += src_lines[st.lineno - 1: st.end_lineno]
        return out
    return src_lines[body[0].lineno - 1: node.end_lineno]


def needles_for(original_root: Path, symbols, kept_code_windows: set[int]) -> list[Needle]:
    """Needles for removed symbols, from the original files (gold applied)."""
    out = []
    parsed: dict[str, tuple[ast.Module, list[str]]] = {}
    for sym in symbols:
        if sym.kind in ("module", "assignment"):
            continue
        if sym.path not in parsed:
            src = (original_root / sym.path).read_text(encoding="utf-8", errors="replace")
            parsed[sym.path] = (parse_python(src), src.splitlines())
        tree, lines = parsed[sym.path]
        module = _module_of(sym)
        tail = sym.qualname[len(module) + 1:].split(".") if sym.qualname.startswith(module + ".") \
            else sym.qualname.split(".")[-1:]
        body = _body_source(tree, lines, tail)
        if not body:
            continue
        toks = tokens("\n".join(body))
        if len(toks) < MIN_BODY_TOKENS:
            continue
        size = min(K, len(toks))
        w = windows(toks, size) - kept_code_windows
        if not w:
            continue
        idents = set()
        starts = set()
        for i in range(0, max(1, len(toks) - size + 1)):
            win = tuple(toks[i:i + size])
            if hash(win) in w:
                starts.add(win[0])
                words = {t for t in win if re.match(r"[A-Za-z_]\w*$", t)}
                rare = {t for t in words if t not in COMMON and len(t) > 3}
                if rare:        # a window of only common words cannot prefilter anything
                    idents.add(frozenset(x.encode() for x in rare))
        if not idents:
            idents = {frozenset(t.encode() for t in toks if re.match(r"[A-Za-z_]\w*$", t))}
        suffix = module.replace(".", "/") + ".py"
        out.append(Needle(symbol=sym.qualname, names=sorted(idents, key=len, reverse=True)[:64],
                          windows=w, lines=body, size=size, short=tail[-1],
                          file_suffix=suffix, starts=frozenset(starts)))
    return out


def _module_of(sym) -> str:
    parts = sym.qualname.split(".")
    return ".".join(parts[:-2] if sym.kind == "method" else parts[:-1])


def kept_windows(tree: Path) -> set[int]:
    """Windows of the code a workspace keeps (its package and test modules, as
    layout sees them: never build output, caches or patch leftovers). Code that
    stays in the package can never count as a leak."""
    from taskforge.repo.layout import scan

    layout = scan(tree)
    out: set[int] = set()
    for rel in [*layout.source_files, *layout.test_files]:
        try:
            data = (tree / rel).read_bytes()
        except OSError:
            continue
        out |= _file_windows(hashlib.sha1(data).digest(), data)
    return out


_WINDOW_CACHE: dict[bytes, frozenset] = {}


def _file_windows(digest: bytes, data: bytes) -> frozenset:
    """All windows of one file's code, cached by content: most files are the same
    in every task of a repository."""
    hit = _WINDOW_CACHE.get(digest)
    if hit is None:
        toks = tokens(data.decode("utf-8", errors="replace"))
        acc: set[int] = set()
        for k in range(MIN_BODY_TOKENS, K + 1):
            acc |= windows(toks, k)
        hit = frozenset(acc)
        if len(_WINDOW_CACHE) > 20000:
            _WINDOW_CACHE.clear()
        _WINDOW_CACHE[digest] = hit
    return hit


def matches_needed(body_windows: int) -> int:
    """How many of a removed body's windows a text must hold to count as its copy.
    A shared idiom or two is a coincidence; a copy matches window after window:
    half the body's windows, at least MIN_MATCHES (all, for a shorter body), but
    never more than MATCH_CAP, so that a long body copied in part is still found."""
    return min(body_windows, max(MIN_MATCHES, min((body_windows + 1) // 2, MATCH_CAP)))


class Scanner:
    """Findings for the needles of some removed symbols, over trees and git objects.
    `removed` (RemovedSymbol-like) and `test_ids` feed the tool-cache check."""

    def __init__(self, needles: list[Needle], removed=(), test_ids=()):
        self.needles = needles
        self.symbols = [(n.short, n.file_suffix) for n in needles]   # bytecode check
        names = {s.qualname for s in removed} | {s.qualname.rsplit(".", 1)[-1] for s in removed}
        self.names = {n.encode() for n in names if len(n) >= 3}
        self.test_names = {t.split("::")[-1].split("[")[0].encode() for t in test_ids}
        self.findings: list[Finding] = []

    # -- text -------------------------------------------------------------
    def match_text(self, data: bytes, where: str) -> bool:
        hits = [n for n in self.needles
                if any(all(x in data for x in group) for group in n.names)]
        if not hits:
            return False
        toks = tokens(data.decode("utf-8", errors="replace"))
        found = False
        per_size: dict[int, set[int]] = {}
        for n in hits:
            size = n.size
            if size not in per_size:
                firsts = set().union(*(m.starts for m in hits if m.size == size))
                per_size[size] = {hash(tuple(toks[i:i + size])) for i, t in enumerate(toks)
                                  if t in firsts}
            need = matches_needed(len(n.windows))
            matched = n.windows & per_size[size]
            if len(matched) >= need:
                first = next(i for i in range(len(toks)) if hash(tuple(toks[i:i + size])) in matched)
                self.findings.append(Finding("code", where, n.symbol,
                                             " ".join(toks[first:first + size])))
                found = True
        return found

    # -- bytecode -----------------------------------------------------------
    def match_pyc(self, data: bytes, where: str) -> None:
        code = load_pyc(data)
        if code is None:       # another Python's bytecode: its names are plain strings in it
            self.match_text(data, where)
            return
        stack = [code]
        while stack:
            c = stack.pop()
            fname = getattr(c, "co_filename", "")
            for short, suffix in self.symbols:
                if c.co_name == short and fname.endswith(suffix):
                    self.findings.append(Finding("bytecode", where, short,
                                                 f"compiled code of {short} from {fname}"))
                    return
            stack += [k for k in getattr(c, "co_consts", ()) if hasattr(k, "co_code")]

    def scan_bytes(self, data: bytes, where: str, name: str) -> None:
        if name.endswith((".pyc", ".pyo")):
            return self.match_pyc(data, where)
        if name.endswith((".whl", ".zip", ".egg", ".tar.gz", ".tgz")) or data[:4] == b"PK\x03\x04":
            members = _archive_members(data, name)
            if members is not None:
                for member, blob in members:
                    self.scan_bytes(blob, f"{where}!{member}", member)
                return
        self.match_text(data, where)

    # -- an indexed image -------------------------------------------------
    def scan_indexed(self, root: Path, index: "ImageIndex", label: str = "image:/") -> None:
        """Like scan_tree over an image's files, but only files whose identifiers
        could hold some needle's window are read (see ImageIndex)."""
        todo: set[int] = set(index.archives)
        for n in self.needles:
            # Copies in an image are installed or vendored modules: they define the
            # symbol by name, and hold every identifier of some matching window.
            named = index.files_with({n.short.encode()})
            if not named:
                continue
            for group in n.names:
                todo |= named & index.files_with(group)
        for short, _suffix in self.symbols:      # match_pyc checks the source path
            todo |= index.code_objects.get(short, set())
        opened: dict[str, dict[str, bytes]] = {}
        for i in sorted(todo):
            rel = index.files[i]
            if "!" in rel:                      # one member of an indexed archive
                arc, member = rel.split("!", 1)
                if arc not in opened:
                    try:
                        opened[arc] = dict(_archive_members((root / arc).read_bytes(), arc) or [])
                    except OSError:
                        opened[arc] = {}
                if member in opened[arc]:
                    self.match_text(opened[arc][member], f"{label}{rel}")
                continue
            try:
                data = (root / rel).read_bytes()
            except OSError:
                continue
            self.scan_bytes(data, f"{label}{rel}", rel.rsplit("/", 1)[-1])

    # -- trees --------------------------------------------------------------
    def scan_tree(self, root: Path, label: str = "") -> None:
        for p in sorted(root.rglob("*")):
            rel = p.relative_to(root).as_posix()
            where = f"{label}{rel}"
            if p.is_symlink():
                continue
            if p.is_dir():
                if p.name == ".git":
                    self.scan_git(p, where)
                elif p.name.endswith(BUILD_MARKERS) and not label:
                    self.findings.append(Finding("build", where, "-", "build metadata directory"))
                continue
            parts = set(p.relative_to(root).parts)
            if ".git" in parts:
                continue
            try:
                if p.stat().st_size > MAX_FILE:
                    continue
                data = p.read_bytes()
            except OSError:
                continue
            if not label and parts & CACHE_DIRS and not p.name.endswith((".pyc", ".pyo")):
                named = [x for x in self.names | self.test_names if x and x in data]
                if named:
                    self.findings.append(Finding("cache", where, named[0].decode(),
                                                 "tool cache names removed code or hidden tests"))
                    continue
            before = len(self.findings)
            if not label and p.name.endswith((".pyc", ".pyo")):
                # A task's workspace is scrubbed of bytecode: any that is there was
                # planted or left behind, and decompiled bytecode is how a model
                # recovered removed code. Whatever it holds, it is reported.
                self.findings.append(Finding("bytecode", where, "-", "bytecode file in the workspace"))
                continue
            self.scan_bytes(data, where, p.name)
            if len(self.findings) == before and p.name.endswith((".orig", ".rej")):
                self.findings.append(Finding("build", where, "-", "patch leftover"))

    def scan_git(self, gitdir: Path, where: str) -> None:
        """Every object (reachable or not) and the refs of a git directory."""
        env = {"GIT_DIR": str(gitdir), "PATH": "/usr/bin:/bin:/usr/local/bin"}
        run = lambda *a: subprocess.run(["git", *a], env=env, capture_output=True)  # noqa: E731
        commits = run("rev-list", "--all", "--reflog").stdout.split()
        if len(set(commits)) > 1:
            self.findings.append(Finding("git", where, "-", f"{len(set(commits))} commits in history"))
        refs = run("for-each-ref", "--format=%(refname)").stdout.decode().split()
        extra = [r for r in refs if not r.startswith("refs/heads/")]
        if extra:
            self.findings.append(Finding("git", where, "-", f"extra refs: {', '.join(extra[:5])}"))
        out = run("cat-file", "--batch-all-objects", "--batch", "--unordered").stdout
        pos = 0
        while pos < len(out):
            nl = out.find(b"\n", pos)
            if nl < 0:
                break
            header = out[pos:nl].split()
            if len(header) < 3:
                break
            size = int(header[2])
            body = out[nl + 1: nl + 1 + size]
            pos = nl + 1 + size + 1
            if header[1] == b"blob":
                self.match_text(body, f"{where}:{header[0].decode()[:12]}")


def load_pyc(data: bytes):
    """The code object of a .pyc written by this very Python, else None. marshal
    data of another version can crash the interpreter, so it is never loaded
    (the sandbox's Python may differ from the host's)."""
    if data[:4] != importlib.util.MAGIC_NUMBER:
        return None
    try:
        return marshal.loads(data[16:])
    except Exception:
        return None


IDENT_RE = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
INDEX_VERSION = 6


class ImageIndex:
    """Which files of an exported image hold which identifiers, built once per
    image id and kept beside the export. A window can only match a file that has
    all its identifiers, so a scan reads a handful of files instead of thousands.
    Bytecode is indexed by (code name, source file suffix); archives are always read."""

    def __init__(self, files: list[str], postings: dict[bytes, bytes],
                 code_objects: dict[str, set[int]], archives: list[int]):
        self.files, self.postings = files, postings
        self.code_objects, self.archives = code_objects, archives

    def files_with(self, group) -> set[int]:
        """Files holding every identifier of `group` (postings are packed uint32 arrays)."""
        packed = sorted((self.postings.get(x, b"") for x in group), key=len)
        if not packed or not packed[0]:
            return set()
        out = set(array("I", packed[0]))
        for p in packed[1:]:
            out &= set(array("I", p))
            if not out:
                break
        return out

    @classmethod
    def build(cls, root: Path) -> "ImageIndex":
        files: list[str] = []
        postings: dict[bytes, set[int]] = {}
        code: dict[str, set[int]] = {}
        archives: list[int] = []
        for p in sorted(root.rglob("*")):
            if not p.is_file() or p.is_symlink() or p.name.startswith(".tf-"):
                continue
            rel = p.relative_to(root).as_posix()
            try:
                data = p.read_bytes()
            except OSError:
                continue
            i = len(files)
            files.append(rel)
            if p.name.endswith((".pyc", ".pyo")):
                top = load_pyc(data)
                if top is None:         # another Python's bytecode: index it as text
                    for ident in set(IDENT_RE.findall(data)):
                        postings.setdefault(ident, set()).add(i)
                    continue
                stack = [top]
                while stack:
                    c = stack.pop()
                    if not hasattr(c, "co_code"):
                        continue
                    code.setdefault(c.co_name, set()).add(i)
                    stack += [k for k in c.co_consts if hasattr(k, "co_code")]
                continue
            if data[:4] == b"PK\x03\x04" or p.name.endswith((".whl", ".zip", ".egg", ".tar.gz",
                                                                ".tgz")):
                # Indexed by its members' identifiers (and code names), so it is only
                # opened when it could hold a copy; one that cannot be read is always read.
                members = _archive_members(data, p.name)
                if members is None or any(m.endswith((".pyc", ".pyo")) for m, _ in members):
                    archives.append(i)
                    continue
                files.pop()
                for name, blob in members:       # each member is an entry: ARCHIVE!MEMBER
                    j = len(files)
                    files.append(f"{rel}!{name}")
                    for ident in set(IDENT_RE.findall(blob)):
                        postings.setdefault(ident, set()).add(j)
                continue
            for ident in set(IDENT_RE.findall(data)):
                postings.setdefault(ident, set()).add(i)
        return cls(files, {k: array("I", sorted(v)).tobytes() for k, v in postings.items()},
                   code, archives)

    @classmethod
    def load(cls, root: Path) -> "ImageIndex":
        import pickle

        path = root / ".tf-index.pickle"
        try:
            with open(path, "rb") as fh:
                version, state = pickle.load(fh)
            if version == INDEX_VERSION:
                return cls(*state)
        except (OSError, EOFError, ValueError, TypeError, pickle.UnpicklingError):
            pass
        idx = cls.build(root)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        with open(tmp, "wb") as fh:
            pickle.dump((INDEX_VERSION, (idx.files, idx.postings, idx.code_objects, idx.archives)),
                        fh, protocol=pickle.HIGHEST_PROTOCOL)
        tmp.replace(path)
        return idx


def _archive_members(data: bytes, name: str):
    """[(member name, bytes)] of a zip or tarball, or None if it cannot be read."""
    try:
        if data[:4] == b"PK\x03\x04" or name.endswith((".whl", ".zip", ".egg")):
            with zipfile.ZipFile(io.BytesIO(data)) as z:
                return [(m.filename, z.read(m)) for m in z.infolist()[:5000]
                        if m.file_size <= MAX_FILE and not m.is_dir()]
        import tarfile

        with tarfile.open(fileobj=io.BytesIO(data)) as t:
            out = []
            for m in t.getmembers()[:5000]:
                f = t.extractfile(m) if m.isfile() and m.size <= MAX_FILE else None
                if f is not None:
                    out.append((m.name, f.read()))
            return out
    except Exception:
        return None


def image_fs_cache(image: str, cache_root: Path) -> Path:
    """The environment's Python-relevant files, exported once per environment id
    from the store generation built it in."""
    import tarfile

    from taskforge.sandbox import generation_store

    store = generation_store()
    dest = cache_root / store.environment_id(image).replace(":", "_")
    if (dest / ".complete").exists():
        return dest
    cache_root.mkdir(parents=True, exist_ok=True)
    for stale in cache_root.glob(dest.name + ".partial*"):   # a dead exporter's leftovers
        if time.time() - stale.stat().st_mtime > 3600:
            shutil.rmtree(stale, ignore_errors=True)
    tmp = Path(tempfile.mkdtemp(prefix=dest.name + ".partial-", dir=cache_root))
    skip = ("proc/", "sys/", "dev/", "usr/share/", "usr/lib/x86_64-linux-gnu/", "usr/lib/aarch64",
            "usr/bin/", "usr/sbin/", "bin/", "sbin/", "lib/", "lib64/", "etc/", "var/lib/",
            "usr/include/", "boot/", "usr/lib/gcc", "usr/libexec/")
    with store.export(image) as reader, tarfile.open(fileobj=reader, mode="r|") as t:
        for m in t:
            name = m.name.lstrip("./")
            if not m.isfile() or m.size > MAX_FILE or name.startswith(skip):
                continue
            if re.search(r"/python3\.\d+/(?!site-packages|dist-packages)", "/" + name) and \
                    "site-packages" not in name and "dist-packages" not in name:
                continue          # the interpreter's own stdlib
            f = t.extractfile(m)
            if f is None:
                continue
            out = tmp / name
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(f.read())
    (tmp / ".complete").write_text("")
    try:
        tmp.rename(dest)
    except OSError:          # another process finished the same export first
        shutil.rmtree(tmp, ignore_errors=True)
        if not (dest / ".complete").exists():
            raise
    return dest
