"""Run in the build container: pip and setuptools vendor popular libraries
(more-itertools, packaging, ...). A vendored copy of the repository in the image
would hand the agent the removed code, so an installer that vendors one of the
top-level names given as arguments is uninstalled (the repository never imports it).

    python drop_vendoring.py NAME [NAME ...]
"""
from __future__ import annotations

import pathlib
import subprocess
import sys
import sysconfig

VENDORS = {"setuptools": ["setuptools/_vendor", "pkg_resources/_vendor"], "pip": ["pip/_vendor"]}


def vendoring(site: pathlib.Path, names: list[str]) -> list[str]:
    """The installers in `site` that vendor a module or package named in `names`."""
    return [dist for dist, dirs in VENDORS.items()
            if any((site / d / p).exists() or (site / d / (p + ".py")).exists()
                   for d in dirs for p in names)]


if __name__ == "__main__":
    for dist in vendoring(pathlib.Path(sysconfig.get_paths()["purelib"]), sys.argv[1:]):
        print("taskforge: removing", dist, "which vendors a copy of this repository")
        subprocess.call([sys.executable, "-m", "pip", "uninstall", "-y", "-q", dist])
