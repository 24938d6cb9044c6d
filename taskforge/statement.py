"""The problem statement: a template, no LLM. It names what was removed and the
interface the hidden tests use (signatures and docstrings), never the code."""
from __future__ import annotations

from taskforge.symbols import Symbol

KIND_WORD = {"function": "function", "method": "method", "class": "class", "module": "module"}


def problem_statement(repo_name: str, root: Symbol, symbols: list[Symbol],
                      exports: list[str], touched: list[str], hidden_count: int) -> str:
    what = KIND_WORD[root.kind]
    display = f"{root.cls}.{root.name}" if root.kind == "method" else root.name
    rest = (" The rest of the repository is intact and its test suite passes. Implement it "
            "so that it behaves as described below; "
            f"{hidden_count} hidden test{'s' if hidden_count != 1 else ''} will check its behaviour.")
    if root.kind == "module":
        lines = [f"# Implement the module `{root.module}`", "",
                 f"The module `{root.module}` (`{root.path}`) has been removed from "
                 f"`{repo_name}`, with every definition in it." + rest]
    else:
        lines = [f"# Implement the {what} `{display}` in `{root.module}`", "",
                 f"The {what} `{root.qualname}` has been removed from `{root.path}` of "
                 f"`{repo_name}`." + rest]
    lines.append("")
    lines.append("## Interface")
    lines.append("")
    if root.kind == "method":
        lines.append(f"In class `{root.cls}` (in `{root.path}`):")
        lines.append("")
    lines += ["```python", root.signature.rstrip(), "```", ""]
    helpers = [s for s in symbols if s is not root and not s.public]
    if helpers and root.kind != "module":
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
