"""Run in the build container after an editable install: strip the long
description from the editable distribution's METADATA. It is the README, and a
README with code in it would put removed code into the image; the headers stay.

    python strip_metadata.py
"""
from __future__ import annotations

import json
import pathlib
import site


def strip(site_dirs: list[str]) -> list[pathlib.Path]:
    """Rewrite the METADATA of every editable distribution in `site_dirs` to
    its headers minus Description; returns the files rewritten."""
    done = []
    for sp in site_dirs:
        for dist in sorted(pathlib.Path(sp).glob("*.dist-info")):
            try:
                url = json.loads((dist / "direct_url.json").read_text())
            except (OSError, ValueError):
                continue
            meta = dist / "METADATA"
            if url.get("dir_info", {}).get("editable") and meta.is_file():
                head = meta.read_text(encoding="utf-8", errors="replace").split("\n\n", 1)[0]
                keep = [ln for ln in head.splitlines() if not ln.startswith("Description:")]
                meta.write_text("\n".join(keep) + "\n", encoding="utf-8")
                done.append(meta)
    return done


if __name__ == "__main__":
    for path in strip(site.getsitepackages()):
        print("taskforge: stripped the long description from", path)
