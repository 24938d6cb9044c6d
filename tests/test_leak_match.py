"""The leak scan's match rule without an engine: how many windows of a removed
body a text must hold (a pure function, as a table), and the scanner on a long
body copied only in part."""
from __future__ import annotations

import pytest

from taskforge.leaks.scan import K, Needle, Scanner, matches_needed, tokens, windows


@pytest.mark.parametrize("body_windows, need", [
    (1, 1), (2, 2), (3, 3),          # a short body: all of it
    (4, 3), (6, 3),                  # at least MIN_MATCHES
    (7, 4), (10, 5), (23, 12),       # half
    (24, 12), (25, 12), (200, 12), (100_000, 12),   # capped: a fragment of a long body
])
def test_windows_a_copy_must_match(body_windows, need):
    assert matches_needed(body_windows) == need


def _body(n: int) -> list[str]:
    """n distinct, rare tokens: a removed body whose every window is its own."""
    return [f"word_{i:04d}" for i in range(n)]


def _needle(toks: list[str]) -> Needle:
    w = windows(toks, K)
    return Needle(symbol="pkg.mod.feature", names=[frozenset({t.encode()}) for t in toks], windows=w,
                  lines=[" ".join(toks)], size=K, short="feature", file_suffix="pkg/mod.py",
                  starts=frozenset(toks))


@pytest.mark.parametrize("fragment, found", [
    (K + 11, True),      # 12 windows of a 189-window body: found, though far below half
    (K + 10, False),     # 11 windows: a coincidence's worth
    (150, True),         # the rest of the body
])
def test_a_long_body_copied_in_part_is_found(fragment, found):
    body = _body(200)
    scanner = Scanner([_needle(body)])
    text = ("x = 1\n" + " ".join(body[50:50 + fragment]) + "\n").encode()
    assert tokens(text.decode())[-fragment:] == body[50:50 + fragment]
    assert scanner.match_text(text, "workspace/notes.py") is found
    assert bool(scanner.findings) is found
