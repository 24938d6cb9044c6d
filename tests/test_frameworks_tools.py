"""The episode's tool set: function-calling schemas, the editor's text edits
(table tests), and the tools driving a real episode (real engine, real task)."""
from __future__ import annotations

import pytest

from taskforge.training import tools
from taskforge.training.tools import EditorArgs, ToolError, ToolName

pytestmark = pytest.mark.frameworks

TEXT = "alpha\nbeta\ngamma\n"


@pytest.mark.parametrize("view_range, expected", [
    (None, "     1\talpha\n     2\tbeta\n     3\tgamma"),
    ([2, 3], "     2\tbeta\n     3\tgamma"),
    ([2, -1], "     2\tbeta\n     3\tgamma"),
    ([3, 3], "     3\tgamma"),
])
def test_view_text(view_range, expected):
    assert tools.view_text(TEXT, view_range) == expected


@pytest.mark.parametrize("view_range", [[0, 2], [4, 4], [3, 2], [1, 9]])
def test_view_text_refuses_ranges_outside(view_range):
    with pytest.raises(ToolError, match="outside"):
        tools.view_text(TEXT, view_range)


def test_view_text_caps_a_long_file():
    out = tools.view_text("x\n" * (tools.VIEW_LINES + 5))
    assert out.count("\n") == tools.VIEW_LINES and out.endswith("[... 5 more lines: use view_range]")


@pytest.mark.parametrize("old, new, expected", [
    ("beta", "BETA", "alpha\nBETA\ngamma\n"),
    ("beta\n", "", "alpha\ngamma\n"),
    ("a\nb", "a-b", "alpha-beta\ngamma\n"),
])
def test_replace_once(old, new, expected):
    assert tools.replace_once(TEXT, old, new) == expected


@pytest.mark.parametrize("old, message", [
    ("delta", "does not occur"),
    ("a\n", r"occurs 3 times in the file \(lines 1, 2, 3\)"),
    ("", "empty"),
])
def test_replace_once_refuses(old, message):
    with pytest.raises(ToolError, match=message):
        tools.replace_once(TEXT, old, "x")


@pytest.mark.parametrize("text, line, new, expected", [
    (TEXT, 0, "top", "top\nalpha\nbeta\ngamma\n"),
    (TEXT, 1, "one\ntwo\n", "alpha\none\ntwo\nbeta\ngamma\n"),
    (TEXT, 3, "end", "alpha\nbeta\ngamma\nend\n"),
    ("no newline", 1, "next", "no newline\nnext\n"),
    ("", 0, "first", "first\n"),
])
def test_insert_after(text, line, new, expected):
    assert tools.insert_after(text, line, new) == expected


@pytest.mark.parametrize("line", [-1, 4])
def test_insert_after_refuses_lines_outside(line):
    with pytest.raises(ToolError, match="outside"):
        tools.insert_after(TEXT, line, "x")


@pytest.mark.parametrize("name, arguments, message", [
    ("rm", {}, "no tool 'rm'"),
    ("bash", {}, "command: Field required"),
    ("bash", "{not json", "not JSON"),
    ("bash", [1], "must be a JSON object"),
    ("bash", {"command": "ls", "shell": "zsh"}, "shell: Extra inputs"),
    ("str_replace_editor", {"command": "delete", "path": "a"}, "command: Input should be"),
    ("str_replace_editor", {"command": "view", "path": "a", "view_range": [1]}, "view_range"),
])
def test_bad_calls_are_the_models_mistake(name, arguments, message):
    with pytest.raises(ToolError, match=message):
        tools.parse_arguments(name, arguments)


def test_arguments_as_a_json_string_or_nothing():
    assert tools.parse_arguments("bash", '{"command": "ls"}')[1] == tools.BashArgs(command="ls")
    assert tools.parse_arguments("submit", None)[0] is ToolName.SUBMIT
    assert tools.parse_arguments("submit", "")[0] is ToolName.SUBMIT


def test_schemas_match_the_argument_models():
    """Each schema names exactly the fields its pydantic model accepts, with the
    same required ones: the model is told what the dispatcher takes."""
    schemas = {s["function"]["name"]: s["function"] for s in tools.tool_schemas()}
    assert set(schemas) == {t.value for t in ToolName}
    for tool, model in tools.ARGS.items():
        params = schemas[tool.value]["parameters"]
        assert set(params["properties"]) == set(model.model_fields)
        assert set(params.get("required", [])) == {n for n, f in model.model_fields.items() if f.is_required()}
        assert params["additionalProperties"] is False
    enum = schemas["str_replace_editor"]["parameters"]["properties"]["command"]["enum"]
    assert enum == ["view", "create", "str_replace", "insert"]
    tools.tool_schemas()[0]["function"]["name"] = "changed"       # a copy each time
    assert tools.tool_schemas()[0]["function"]["name"] == "bash"


# ------------------------------------------------------------ on a real episode
def test_the_tools_drive_an_episode(tasks, tmp_path):
    """Every editor command on the sandbox's files, the isolation of read/write
    (paths outside the workspace refused, a symlink out of it not followed on
    the host), bash's status line, and submit: the gold written with the
    editor earns 1, the untouched tree 0."""
    from taskforge.training.episodes import Episode
    from tests.test_episodes import solved_files

    out, ids = tasks
    task = out / ids[0]
    solved = solved_files(task, tmp_path)
    with Episode(task) as ep:
        call = lambda name, **kw: tools.call_tool(ep, name, kw)
        listing = call("str_replace_editor", command="view", path=".")
        assert not listing.error and "textkit/" in listing.output and ".git" not in listing.output
        rel = next(iter(solved))
        assert rel in listing.output
        view = call("str_replace_editor", command="view", path=rel, view_range=[1, 2])
        assert view.output.startswith("     1\t") and view.output.count("\n") == 1
        assert call("bash", command="false").output.endswith("[exit code 1]")
        # create, str_replace, insert, each read back from the sandbox
        assert not call("str_replace_editor", command="create", path="notes/a.txt", file_text=TEXT).error
        assert ep.read("notes/a.txt") == TEXT
        r = call("str_replace_editor", command="str_replace", path="notes/a.txt", old_str="beta", new_str="BETA")
        assert not r.error and "BETA" in r.output and ep.read("notes/a.txt") == "alpha\nBETA\ngamma\n"
        r = call("str_replace_editor", command="str_replace", path="notes/a.txt", old_str="zeta", new_str="")
        assert r.error and "does not occur" in r.output
        r = call("str_replace_editor", command="insert", path="notes/a.txt", insert_line=0, new_str="top")
        assert not r.error and ep.read("notes/a.txt") == "top\nalpha\nBETA\ngamma\n"
        # isolation: outside paths refused; a symlink to the host's files is resolved in the sandbox
        for bad in ("../escape.txt", "/etc/passwd", "a/../../b"):
            r = call("str_replace_editor", command="create", path=bad, file_text="x")
            assert r.error and "workspace" in r.output, bad
        host_secret = tmp_path / "host-secret.txt"
        host_secret.write_text("HOST-ONLY\n")
        call("bash", command=f"ln -s {host_secret} link.txt")
        r = call("str_replace_editor", command="view", path="link.txt")
        assert r.error and "HOST-ONLY" not in r.output
        call("bash", command="rm -rf notes link.txt")
        assert call("submit").reward == 0.0                          # untouched: 0
        for rel, data in solved.items():
            r = call("str_replace_editor", command="create", path=rel, file_text=data.decode())
            assert not r.error, r.output
        done = call("submit")
        assert done.done and done.reward == 1.0 and done.result is not None, done.output
        assert done.output.startswith("Submitted. Reward 1")


def test_tools_over_http(tasks):
    """GET /tools serves the schemas; POST /episodes/{id}/tool runs a call and a
    submit comes back graded, through the server's grading gate."""
    from starlette.testclient import TestClient

    from taskforge.training.server import ServeConfig, create_app

    out, ids = tasks
    cfg = ServeConfig(tasks=str(out), record_stats=False, warm=0)
    with TestClient(create_app(cfg)) as client:
        assert client.get("/tools").json()["tools"] == tools.tool_schemas()
        ep = client.post("/episodes", json={"instance_id": ids[0]}).json()["episode_id"]
        r = client.post(f"/episodes/{ep}/tool", json={"name": "bash", "arguments": {"command": "echo hi"}})
        assert r.status_code == 200 and r.json()["output"] == "hi\n[exit code 0]"
        r = client.post(f"/episodes/{ep}/tool", json={"name": "nope", "arguments": {}})
        assert r.status_code == 200 and r.json()["error"] and "no tool" in r.json()["output"]
        r = client.post(f"/episodes/{ep}/tool", json={"name": "submit"}).json()
        assert r["done"] and r["reward"] == 0.0 and r["result"]["instance_id"] == ids[0]
        assert client.get("/health").json()["served"] == 1            # graded through the gate
        client.delete(f"/episodes/{ep}")


def test_editor_args_model_rejects_negative_insert_line():
    with pytest.raises(Exception, match="greater than or equal"):
        EditorArgs(command="insert", path="a", insert_line=-1, new_str="x")
