"""Run in the build container after the install: hard imports of the test code
that still fail get installed by name (best effort; a failure is only logged).
An import under try/except ImportError, in a function or under an if is optional.

    python missing_imports.py FILES_JSON LOCAL_MODULES_JSON
"""
from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys

ALIAS = {"yaml": "PyYAML", "dateutil": "python-dateutil", "PIL": "Pillow", "bs4": "beautifulsoup4",
         "sklearn": "scikit-learn", "attr": "attrs", "OpenSSL": "pyOpenSSL", "jwt": "PyJWT",
         "dotenv": "python-dotenv", "serial": "pyserial", "git": "GitPython", "Crypto": "pycryptodome",
         "cv2": "opencv-python-headless", "magic": "python-magic", "docx": "python-docx",
         "pkg_resources": "setuptools", "google": None, "typing_extensions": "typing-extensions",
         "_pytest": None, "py": "py", "nose": "pynose", "toml": "toml", "simplejson": "simplejson"}


def guarded(parents: list[ast.AST]) -> bool:
    """Under try/except (ImportError or broader), in a function or under an if."""
    for p in parents:
        if isinstance(p, ast.Try) and any(
                h.type is None or "Import" in ast.unparse(h.type) or "Exception" in ast.unparse(h.type)
                for h in p.handlers):
            return True
        if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef, ast.If)):
            return True
    return False


def wanted(files: list[str], local: set[str]) -> dict[str, str]:
    """Top-level modules the files import unguarded, neither local nor stdlib:
    module -> the first file that imports it."""
    want: dict[str, str] = {}
    for path in files:
        try:
            with open(path, "rb") as fh:
                tree = ast.parse(fh.read())
        except (OSError, SyntaxError, ValueError, RecursionError):
            continue
        stack: list[tuple[ast.AST, list[ast.AST]]] = [(tree, [])]
        while stack:
            node, parents = stack.pop()
            for child in ast.iter_child_nodes(node):
                stack.append((child, [*parents, node]))
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module]
            for n in names:
                top = n.split(".")[0]
                if top in local or top in sys.stdlib_module_names or guarded(parents):
                    continue
                want.setdefault(top, path)
    return want


def install(want: dict[str, str]) -> None:
    for mod, where in sorted(want.items()):
        if importlib.util.find_spec(mod) is not None:
            continue
        dist = ALIAS.get(mod, mod.replace("_", "-"))
        if dist is None:
            continue
        print(f"taskforge: {where} imports {mod}, which is not installed: pip install {dist}")
        subprocess.call([sys.executable, "-m", "pip", "install", "-q", dist])


if __name__ == "__main__":
    install(wanted(json.loads(sys.argv[1]), set(json.loads(sys.argv[2]))))
