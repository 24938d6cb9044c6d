"""One tool set for an episode, as function-calling schemas, and its dispatcher.

The de facto SWE set an agent model is trained on: `bash`, a file editor
(`str_replace_editor` with `view`, `create`, `str_replace`, `insert`) and
`submit`. Every integration (HTTP `taskforge serve`, SkyRL-Gym, OpenEnv,
verifiers) hands the model these schemas and runs a call with `call_tool`,
so a policy sees the same tools whichever framework drives it.

The editor goes through the episode's own `read`/`write`/`listing`: every path
is resolved inside the sandbox, never through a host path the agent controls,
so the editor has exactly the isolation of `read`/`write`. The text edits
themselves (`view_text`, `replace_once`, `insert_after`) are pure functions.
Submitting grades the episode's diff (verify in a fresh sandbox); what the
agent printed or claims never counts.
"""
from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from taskforge.errors import UserError
from taskforge.grade.answer import RewardResult
from taskforge.training.episodes import Episode

VIEW_LINES = 2000        # a view without a range shows at most this many lines


class ToolName(StrEnum):
    BASH = "bash"
    EDITOR = "str_replace_editor"
    SUBMIT = "submit"


class EditorCommand(StrEnum):
    VIEW = "view"
    CREATE = "create"
    STR_REPLACE = "str_replace"
    INSERT = "insert"


class ToolError(UserError):
    """A call the model got wrong (bad arguments, text not found): shown to it as
    the tool's output, never raised past the dispatcher."""


class BashArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    command: str = Field(max_length=256 * 1024)
    timeout: float | None = Field(None, gt=0)


class EditorArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    command: EditorCommand
    path: str = Field(min_length=1)
    file_text: str | None = None
    old_str: str | None = None
    new_str: str | None = None
    insert_line: int | None = Field(None, ge=0)
    view_range: list[int] | None = Field(None, min_length=2, max_length=2)


class SubmitArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")


ARGS: dict[ToolName, type[BaseModel]] = {ToolName.BASH: BashArgs, ToolName.EDITOR: EditorArgs,
                                         ToolName.SUBMIT: SubmitArgs}

_SCHEMAS: list[dict[str, Any]] = [
    {"name": ToolName.BASH.value,
     "description": ("Run a bash command in the repository (the working directory, /workspace). "
                     "No network. Output is cut past a limit; a command is killed past its timeout."),
     "parameters": {"type": "object", "properties": {
         "command": {"type": "string", "description": "The bash command to run."},
         "timeout": {"type": "number", "description": "Seconds before the command is killed (optional)."}},
         "required": ["command"], "additionalProperties": False}},
    {"name": ToolName.EDITOR.value,
     "description": ("View, create and edit files of the repository. Paths are relative to /workspace "
                     "(or absolute under it). `view` shows a file with line numbers, or a directory's "
                     "files two levels deep; `create` writes a file (replacing it); `str_replace` "
                     "replaces old_str, which must occur exactly once, with new_str; `insert` puts "
                     "new_str after line insert_line (0: at the top)."),
     "parameters": {"type": "object", "properties": {
         "command": {"type": "string", "enum": [c.value for c in EditorCommand]},
         "path": {"type": "string", "description": "File or directory, relative to /workspace."},
         "file_text": {"type": "string", "description": "create: the file's content."},
         "old_str": {"type": "string", "description": "str_replace: the exact text to replace."},
         "new_str": {"type": "string", "description": "str_replace: the replacement; insert: the text."},
         "insert_line": {"type": "integer", "description": "insert: the line to insert after (0: top)."},
         "view_range": {"type": "array", "items": {"type": "integer"},
                        "description": "view: [first, last] line, 1-based; last -1 for the end."}},
         "required": ["command", "path"], "additionalProperties": False}},
    {"name": ToolName.SUBMIT.value,
     "description": ("Submit the repository as it is now. Its changes are graded against hidden tests; "
                     "the episode ends."),
     "parameters": {"type": "object", "properties": {}, "additionalProperties": False}},
]


def tool_specs() -> list[dict[str, Any]]:
    """name, description, parameters (JSON Schema) for each tool: MCP-style listings."""
    return copy.deepcopy(_SCHEMAS)


def tool_schemas() -> list[dict[str, Any]]:
    """The tools as OpenAI-style function-calling schemas (what chat templates take)."""
    return [{"type": "function", "function": s} for s in tool_specs()]


_CALL = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.S)
CALL_FORMAT = ('Call a tool by writing <tool_call>{"name": ..., "arguments": {...}}</tool_call> '
               "(one block per call).")


def parse_tool_calls(text: str) -> list[tuple[str, Any]]:
    """(name, arguments) of each Hermes/Qwen-style <tool_call> block of a model's
    text, in order: the format chat templates emit when tools are given as text. A
    block that is not a JSON object with a name becomes a call of the tool '' (an
    error the model then reads)."""
    calls: list[tuple[str, Any]] = []
    for body in _CALL.findall(text or ""):
        try:
            obj = json.loads(body)
        except ValueError:
            calls.append(("", body))
            continue
        if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
            calls.append(("", body))
            continue
        calls.append((obj["name"], obj.get("arguments", obj.get("parameters", {}))))
    return calls


def tools_prompt() -> str:
    """The tools as text for a system prompt, for a policy given no native tool schemas."""
    return ("You are working in a Python repository at /workspace. Act only through the tools. "
            + CALL_FORMAT + " Call submit when you are done: the repository's changes are graded "
            "then.\nTools:\n" + "\n".join(json.dumps(s) for s in tool_schemas()))


# ------------------------------------------------------------ pure text edits
def view_text(text: str, view_range: list[int] | None = None, path: str = "") -> str:
    """`cat -n` of the text, or of lines [first, last] (1-based, last -1: the end)."""
    lines = text.splitlines()
    first, last = 1, min(len(lines), VIEW_LINES)
    if view_range is not None:
        first, last = view_range
        if last == -1:
            last = len(lines)
        if first < 1 or first > max(len(lines), 1) or last < first or last > len(lines):
            raise ToolError(f"view_range {view_range} is outside {path or 'the file'} "
                            f"(lines 1 to {len(lines)})")
    body = "\n".join(f"{n:6}\t{lines[n - 1]}" for n in range(first, last + 1))
    if view_range is None and len(lines) > last:
        body += f"\n[... {len(lines) - last} more lines: use view_range]"
    return body


def replace_once(text: str, old: str, new: str, path: str = "") -> str:
    """`old` replaced by `new`; refused unless `old` occurs exactly once."""
    if not old:
        raise ToolError("old_str is empty")
    count = text.count(old)
    if count == 0:
        raise ToolError(f"old_str does not occur in {path or 'the file'} verbatim")
    if count > 1:
        starts = [i for i in range(len(text)) if text.startswith(old, i)]
        lines = sorted({text.count("\n", 0, i) + 1 for i in starts})
        raise ToolError(f"old_str occurs {count} times in {path or 'the file'} (lines "
                        f"{', '.join(map(str, lines))}): include more context to make it unique")
    return text.replace(old, new, 1)


def insert_after(text: str, line: int, new: str, path: str = "") -> str:
    """`new` inserted after line `line` (0: before the first)."""
    lines = text.splitlines(keepends=True)
    if line < 0 or line > len(lines):
        raise ToolError(f"insert_line {line} is outside {path or 'the file'} (0 to {len(lines)})")
    if line and not lines[line - 1].endswith("\n"):
        lines[line - 1] += "\n"
    block = new if new.endswith("\n") else new + "\n"
    return "".join(lines[:line]) + block + "".join(lines[line:])


def snippet(text: str, around: str, path: str) -> str:
    """A few numbered lines around the first occurrence of `around`: what the edit made."""
    lines = text.splitlines()
    at = text.count("\n", 0, max(text.find(around), 0)) + 1
    span = around.count("\n") + 1
    first, last = max(1, at - 3), min(len(lines), at + span + 3)
    if not lines:
        return f"{path} is now empty"
    return f"{path} edited; lines {first}-{last}:\n" + view_text(text, [first, last], path)


# ------------------------------------------------------------ dispatch
class ToolOutcome(BaseModel):
    """What one call gave: the text the model reads, and for submit the grade."""
    tool: str
    output: str
    error: bool = False
    done: bool = False
    reward: float | None = None
    result: RewardResult | None = None


def parse_arguments(name: str, arguments: Any) -> tuple[ToolName, BaseModel]:
    """The call's tool and validated arguments (a dict, or a JSON string of one)."""
    try:
        tool = ToolName(name)
    except ValueError:
        raise ToolError(f"no tool {name!r}: the tools are {', '.join(t.value for t in ToolName)}") from None
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError as exc:
            raise ToolError(f"{name}: arguments are not JSON: {exc}") from None
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise ToolError(f"{name}: arguments must be a JSON object")
    try:
        return tool, ARGS[tool].model_validate(arguments)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(x) for x in first.get("loc", ()))
        raise ToolError(f"{name}: {loc or 'arguments'}: {first.get('msg')}") from None


def grade_episode(ep: Episode, timeout: float | None = None) -> RewardResult:
    """The episode's diff graded by verify in a fresh sandbox (no curriculum record)."""
    from taskforge.grade.answer import grade_task

    return grade_task(ep.task.dir, ep.diff(), timeout)


def call_tool(ep: Episode, name: str, arguments: Any = None,
              submit: Callable[[Episode], RewardResult] | None = None) -> ToolOutcome:
    """Run one tool call in the episode. A mistake of the model's (unknown tool,
    bad arguments, a path outside the workspace, text not found) comes back as an
    error outcome it can read; an infrastructure failure raises. `submit` grades
    (default `grade_episode`; the server passes its admission-gated grader)."""
    try:
        tool, args = parse_arguments(name, arguments)
        if tool is ToolName.SUBMIT:
            res = (submit or grade_episode)(ep)
            return ToolOutcome(tool=tool.value, output=_graded(res), done=True, reward=res.reward,
                               result=res)
        if tool is ToolName.BASH:
            assert isinstance(args, BashArgs)
            r = ep.run(args.command, args.timeout)
            status = ("timed out" if r.timed_out else f"exit code {r.exit_code}")
            return ToolOutcome(tool=tool.value, output=f"{r.output.rstrip()}\n[{status}]".lstrip("\n"),
                               error=r.timed_out or r.exit_code != 0)
        assert isinstance(args, EditorArgs)
        return ToolOutcome(tool=tool.value, output=edit(ep, args))
    except UserError as exc:
        return ToolOutcome(tool=str(name), output=f"Error: {exc.message}", error=True)


def edit(ep: Episode, a: EditorArgs) -> str:
    """One editor command on the episode's files (read and written in the sandbox)."""
    if a.command is EditorCommand.VIEW:
        entries = ep.listing(a.path)
        if entries is not None:
            if a.view_range is not None:
                raise ToolError(f"{a.path} is a directory: view_range is for files")
            return f"Files in {a.path}, two levels deep:\n" + "\n".join(entries)
        return view_text(ep.read(a.path), a.view_range, a.path)
    if a.command is EditorCommand.CREATE:
        if a.file_text is None:
            raise ToolError("create needs file_text")
        ep.write(a.path, a.file_text)
        return f"{a.path} written ({len(a.file_text.splitlines())} lines)"
    if a.command is EditorCommand.STR_REPLACE:
        if a.old_str is None:
            raise ToolError("str_replace needs old_str")
        new = a.new_str or ""
        text = replace_once(ep.read(a.path), a.old_str, new, a.path)
        ep.write(a.path, text)
        return snippet(text, new or a.old_str[:0], a.path)
    if a.insert_line is None or a.new_str is None:
        raise ToolError("insert needs insert_line and new_str")
    text = insert_after(ep.read(a.path), a.insert_line, a.new_str, a.path)
    ep.write(a.path, text)
    return snippet(text, a.new_str, a.path)


def _graded(res: RewardResult) -> str:
    if res.reward is None:
        return f"Submitted; it could not be graded (infrastructure): {res.infra_error}"
    return f"Submitted. Reward {res.reward:g}: {res.reason}"
