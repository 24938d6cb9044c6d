"""`audit`: prove a task does not leak what was removed.

Looks for the removed code itself (see leaks.py) in every file of the
workspace, in its git objects, and in the environment image's filesystem.
"""
from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from taskforge.errors import InfraError, UserError
from taskforge.fsutil import copy_tree
from taskforge.leaks.scan import Finding, ImageIndex, Scanner, image_fs_cache, kept_windows, needles_for
from taskforge.package.store import load_task
from taskforge.package.writer import apply_patch, scrub


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "taskforge" / "image-fs"


@dataclass
class AuditReport:
    task: str
    findings: list[Finding] = field(default_factory=list)
    needles: int = 0
    seconds: float = 0.0
    image_scanned: bool = False

    def as_dict(self) -> dict:
        return {"task": self.task, "clean": not self.findings, "needles": self.needles,
                "image_scanned": self.image_scanned, "seconds": round(self.seconds, 3),
                "findings": [f.__dict__ for f in self.findings]}


def original_tree(workspace: Path, patches: list[str], dest: Path) -> Path:
    """The workspace with the gold and test patches applied: the code as it was."""
    copy_tree(workspace, dest)
    for patch in patches:
        err = apply_patch(dest, patch)
        if err:
            raise UserError(f"corrupt task: its patch does not apply ({err[:100]})")
    return dest


def scanner_for(record, original: Path, workspace: Path) -> Scanner:
    symbols = record.feature.symbols
    return Scanner(needles_for(original, symbols, kept_windows(workspace)), symbols,
                   record.FAIL_TO_PASS)


def audit_workspace(record, workspace: Path, image: bool = True) -> AuditReport:
    t0 = time.monotonic()
    rep = AuditReport(task=record.instance_id)
    with tempfile.TemporaryDirectory(prefix="tf-audit-") as tmp:
        orig = original_tree(workspace, [record.patch, record.test_patch], Path(tmp) / "orig")
        scanner = scanner_for(record, orig, workspace)
        rep.needles = len(scanner.needles)
        scanner.scan_tree(workspace)
        if image:
            try:
                fs = image_fs_cache(record.image_name, cache_root())
            except InfraError:
                raise
            except Exception as exc:  # docker raises several types for a missing image
                raise InfraError(f"cannot read image {record.image_name}: {str(exc)[:150]}") from None
            scanner.scan_indexed(fs, ImageIndex.load(fs))
            rep.image_scanned = True
    rep.findings = scanner.findings
    rep.seconds = time.monotonic() - t0
    return rep


def audit(task_dir: str | Path, image: bool = True) -> AuditReport:
    task = load_task(task_dir)
    return audit_workspace(task.record, task.workspace, image=image)


def scrub_text_leaks(workspace: Path, findings: list[Finding], body_lines: dict[str, list[str]]) -> int:
    """Drop lines that carry removed code from non-Python text files (docs, READMEs)."""
    removed = 0
    for f in findings:
        if f.kind != "code" or ":" in f.path or f.path.endswith(".py"):
            continue
        p = workspace / f.path
        if not p.is_file():
            continue
        body = {ln.strip() for ln in body_lines.get(f.symbol, []) if len(ln.strip()) > 6}
        lines = p.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
        keep = [ln for ln in lines if ln.strip() not in body]
        if len(keep) != len(lines):
            p.write_text("".join(keep), encoding="utf-8")
            removed += len(lines) - len(keep)
    return removed


class LeakError(Exception):
    """The removed code is still reachable from the task: the candidate is dropped."""


def leak_checker(src: Path, symbols, f2p: list[str], image_hits: dict[str, str]):
    """For generate: scan a task's workspace before it is committed, scrub removed
    code out of text files, and raise LeakError if any leak remains. The image was
    is read once per generate (pipeline.ImageScan); `image_hits` is its answer."""
    def check(ws: Path) -> None:
        for s in symbols:
            if s.qualname in image_hits:
                raise LeakError(f"the environment image holds a copy: {image_hits[s.qualname]}")
        needles = needles_for(src, symbols, kept_windows(ws))

        def scan() -> list[Finding]:
            sc = Scanner(needles, symbols, f2p)
            sc.scan_tree(ws)
            return sc.findings

        findings = scan()
        if findings:
            scrub_text_leaks(ws, findings, {n.symbol: n.lines for n in needles})
            scrub(ws)
            findings = scan()
        if findings:
            raise LeakError(findings[0].line())

    return check
