"""Put the repository's source on the path when it cannot be built (environment build).

Runs in the build container when neither `pip install -e .` nor `pip install .`
worked: a build backend that reaches the network for more than packages
(jaraco's projects build with `coherent.licensed`, which downloads the license
text), or one this machine cannot run. The project's declared requirements were
installed by the script; this writes a .pth that puts the source roots first on
sys.path (ahead of site-packages: a released copy a requirement pulled in must
not shadow the tree). There is no dist-info, so `importlib.metadata` does not
know the project; tests that ask it fail at baseline and are left out there.

Usage: python path_install.py WORKSPACE [ROOT ...]   (ROOT relative; "." the top)
"""
from __future__ import annotations

import sys
import sysconfig
from pathlib import Path


def main(argv: list[str]) -> int:
    workspace = Path(argv[1] if len(argv) > 1 else "/workspace")
    roots = [str((workspace / r).resolve()) for r in (argv[2:] or ["."]) if (workspace / r).is_dir()]
    if not roots:
        print("taskforge: no source root to put on the path")
        return 1
    site = Path(sysconfig.get_paths()["purelib"])
    line = "import sys; sys.path[:0] = [p for p in %r if p not in sys.path]\n" % (roots,)
    (site / "taskforge-source-path.pth").write_text(line, encoding="utf-8")
    print(f"taskforge: {', '.join(roots)} on the path ({site}/taskforge-source-path.pth)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
