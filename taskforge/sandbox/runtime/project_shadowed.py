"""Run in the build container after every install: exit 1 when a top-level
package of the repository (given as arguments) is not imported from the tree.

A test requirement can depend on the project itself (filelock's tests want
virtualenv, which wants filelock): pip then replaces the editable install with
a released copy, and the tests would run that copy, not the tree (filelock: "No
module named 'filelock._soft_rw'", a module newer than the release). The build
script installs the tree again, without dependencies, when this exits 1.
Run from / so that the current directory does not stand in for the install.

    python project_shadowed.py NAME [NAME ...]
"""
from __future__ import annotations

import importlib.util
import sys

WORKSPACE = "/workspace/"


def shadowed(names: list[str]) -> list[str]:
    """The names that resolve to a copy outside the tree (absent ones are not)."""
    out = []
    for name in names:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is None:
            continue
        places = list(spec.submodule_search_locations or []) or [spec.origin or ""]
        if not any(p.startswith(WORKSPACE) for p in places):
            out.append(f"{name} ({places[0]})")
    return out


if __name__ == "__main__":
    bad = shadowed(sys.argv[1:])
    for line in bad:
        print("taskforge: a released copy shadows the tree:", line)
    raise SystemExit(1 if bad else 0)
