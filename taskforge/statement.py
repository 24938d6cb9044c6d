"""The problem statement: a template, no LLM. It names what was removed and the
interface the hidden tests use (signatures and docstrings), never the code."""
from __future__ import annotations

from taskforge.symbols import Symbol

KIND_WORD = {"function": "function", "method": "method", "class": "class"}


def problem_statement(repo_name: str, root: Symbol, symbols: list[Symbol],
                      exports: list[str], touched: list[str], hidden_count: int) -> str:
    what = KIND_WORD[root.kind]
    display = f"{root.cls}.{root.name}" if root.kind == "method" else root.name
    lines = [f"# Implement the {what} `{display}` in `{root.module}`", ""]
    lines.append(f"The {what} `{root.qualname}` has been removed from `{root.path}` of "
                 f"`{repo_name}`. The rest of the repository is intact and its test suite "
                 f"passes. Implement it so that it behaves as described below; "
                 f"{hidden_count} hidden test{'s' if hidden_count != 1 else ''} "
                 f"will check its behaviour.")
    lines.append("")
    lines.append("## Interface")
    lines.append("")
    if root.kind == "method":
        lines.append(f"In class `{root.cls}` (in `{root.path}`):")
        lines.append("")
    lines += ["```python", root.signature.rstrip(), "```", ""]
    helpers = [s for s in symbols if s is not root]
    if helpers:
        lines.append("Private helpers that only this feature used were removed with it; "
                     "you may write your own:")
        lines.append("")
        for h in helpers:
            lines.append(f"- `{h.qualname}`")
        lines.append("")
    if exports:
        lines.append("It must also be importable as:")
        lines.append("")
        for e in exports:
            lines.append(f"- `{e}`")
        lines.append("")
    if len(touched) > 1:
        lines.append("Files changed by the removal: " + ", ".join(f"`{t}`" for t in touched) + ".")
        lines.append("")
    lines.append("Do not modify the existing tests or test configuration: they are restored "
                 "before grading.")
    return "\n".join(lines) + "\n"
