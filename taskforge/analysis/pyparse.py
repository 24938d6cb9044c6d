"""`parse`: ast.parse, one thread at a time; and small readings of the trees.

CPython 3.11 can fail with "SystemError: AST constructor recursion depth
mismatch" when two threads build ASTs at once, and generation parses in its
parallel workers (leak needles, copy sites, static scans). Every ast.parse in
taskforge goes through this lock.
"""
from __future__ import annotations

import ast
import threading

_LOCK = threading.Lock()


def parse(source: str | bytes, filename: str = "<unknown>") -> ast.Module:
    with _LOCK:
        return ast.parse(source, filename)


def literal_eval(node_or_string):
    """ast.literal_eval, which parses a string: under the same lock."""
    with _LOCK:
        return ast.literal_eval(node_or_string)


def dotted_parts(node: ast.expr) -> list[str] | None:
    """`a.b.C` as ["a", "b", "C"]; None for anything but names and attributes."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id, *reversed(parts)]
