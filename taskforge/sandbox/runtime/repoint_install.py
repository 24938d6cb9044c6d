"""Turn a built copy of the repository into an editable install (environment build).

Runs in the build container when `pip install -e .` failed but `pip install .`
worked. markupsafe is the case seen: with no compiler its setup.py catches the
failed C build and calls setup() a second time, which the editable build cannot
survive ("Cannot update time stamp of directory ... .egg-info"); the plain build
can. A copy in site-packages would shadow the workspace (tests would run the
installed code, not the agent's) and hand the agent the removed code, so its
files go and a .pth puts the tree on sys.path instead: an editable install made
by hand. Compiled modules go with the copy; the project's pure-Python fallback
is what runs. The dist-info stays (importlib.metadata still finds the project)
and is marked editable, so the long description is stripped like any other.

Usage: python repoint_install.py [WORKSPACE]
"""
from __future__ import annotations

import csv
import json
import sys
import sysconfig
from pathlib import Path, PurePosixPath


def source_root(workspace: Path, top: str) -> Path | None:
    """Where the tree holds the top-level package or module `top` (src/ or flat)."""
    name = top.split(".")[0]
    for root in (workspace / "src", workspace):
        if (root / name).is_dir() or (root / f"{name}.py").is_file():
            return root
    return None


def repoint(site: Path, workspace: Path) -> list[str]:
    """Repoint every non-editable install of `workspace` in `site`; returns what changed."""
    done = []
    for dist in sorted(site.glob("*.dist-info")):
        try:
            url = json.loads((dist / "direct_url.json").read_text())
        except (OSError, ValueError):
            continue
        if url.get("url") != workspace.as_uri() or url.get("dir_info", {}).get("editable"):
            continue
        with open(dist / "RECORD", newline="") as fh:
            rows = list(csv.reader(fh))
        keep, roots, tops = [], set(), set()
        for row in rows:
            parts = PurePosixPath(row[0]).parts
            if not parts or parts[0] == ".." or parts[0].endswith(".dist-info"):
                keep.append(row)       # scripts in bin/, the metadata itself
                continue
            path = site / row[0]
            if path.is_file() or path.is_symlink():
                path.unlink()
            tops.add(parts[0])
            root = source_root(workspace, parts[0]) if parts[0] != "__pycache__" else None
            if root is not None:
                roots.add(root)
        for top in tops:               # empty package directories left behind
            d = site / top
            if d.is_dir():
                for sub in sorted(d.rglob("*"), key=lambda p: len(p.parts), reverse=True):
                    if sub.is_dir() and not any(sub.iterdir()):
                        sub.rmdir()
                if not any(d.iterdir()):
                    d.rmdir()
        pth = site / f"__taskforge_{dist.name.split('-')[0]}.pth"
        pth.write_text("".join(f"{r}\n" for r in sorted(map(str, roots or {workspace}))))
        keep.append([pth.name, "", ""])
        with open(dist / "RECORD", "w", newline="") as fh:
            csv.writer(fh).writerows(keep)
        url["dir_info"] = {**url.get("dir_info", {}), "editable": True}
        (dist / "direct_url.json").write_text(json.dumps(url))
        done.append(f"{dist.name}: {len(rows) - len(keep) + 1} installed files removed, "
                    f"{pth.name} -> {', '.join(sorted(map(str, roots or {workspace})))}")
    return done


def main(argv: list[str]) -> int:
    workspace = Path(argv[1] if len(argv) > 1 else "/workspace")
    sites = dict.fromkeys(Path(sysconfig.get_paths()[k]) for k in ("purelib", "platlib"))
    changed = [line for site in sites for line in repoint(site, workspace)]
    for line in changed:
        print("taskforge: built copy repointed at the tree:", line)
    if not changed:
        print("taskforge: no built copy of", workspace, "to repoint", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
