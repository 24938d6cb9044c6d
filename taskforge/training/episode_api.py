"""The episode endpoints of `taskforge serve`: an agent's turns over HTTP.

    POST   /episodes                 {"instance_id"} -> {"episode_id", "problem_statement"}
    POST   /episodes/{id}/run        {"command", "timeout"?} -> CommandResult
    POST   /episodes/{id}/read       {"path"} -> {"content"}
    POST   /episodes/{id}/write      {"path", "content"} -> {}
    GET    /episodes/{id}/diff       -> {"diff"}
    POST   /episodes/{id}/submit     -> RewardResult (verify in a fresh sandbox)
    DELETE /episodes/{id}            -> {}
    GET    /tools                    -> {"tools": [function-calling schemas]} (taskforge.training.tools)
    POST   /episodes/{id}/tool       {"name", "arguments"} -> ToolOutcome (submit: graded, done)

Each turn blocks on the engine, so it runs in a thread of its own (one per
open episode at most); submissions go through the grading gate like any answer.
"""
from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

from pydantic import BaseModel, ConfigDict

from taskforge.training.episodes import Episodes
from taskforge.training.tools import BashArgs, ToolName, call_tool, tool_schemas


class StartRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    instance_id: str


class ReadRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str


class ToolRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    arguments: dict | str | None = None


class WriteRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str
    content: str


def episode_routes(episodes: Episodes, source, server) -> tuple[list, ThreadPoolExecutor]:
    """(Starlette routes, their threads); `server` has the server's read_json,
    parse, answer, check_known, wrap and grade_episode (a coroutine grading a patch)."""
    from starlette.routing import Route

    threads = ThreadPoolExecutor(max_workers=max(2, episodes.max_episodes),
                                 thread_name_prefix="tf-episode")
    h = server

    async def blocking(fn, *args):
        return await asyncio.get_running_loop().run_in_executor(threads, fn, *args)

    async def start(request):
        req = h.parse(StartRequest, await h.read_json(request))
        h.check_known([req.instance_id])
        task_dir = await blocking(source.get, req.instance_id)
        ep = await blocking(episodes.start, task_dir)
        return h.answer(201, {"episode_id": ep.id, "instance_id": req.instance_id,
                              "problem_statement": ep.task.record.problem_statement})

    async def run(request):
        ep = episodes.get(request.path_params["episode_id"])
        req = h.parse(BashArgs, await h.read_json(request))
        res = await blocking(ep.run, req.command, req.timeout)
        return h.answer(200, res.model_dump())

    async def read(request):
        ep = episodes.get(request.path_params["episode_id"])
        req = h.parse(ReadRequest, await h.read_json(request))
        return h.answer(200, {"content": await blocking(ep.read, req.path)})

    async def write(request):
        ep = episodes.get(request.path_params["episode_id"])
        req = h.parse(WriteRequest, await h.read_json(request))
        await blocking(ep.write, req.path, req.content)
        return h.answer(200, {})

    async def diff(request):
        ep = episodes.get(request.path_params["episode_id"])
        return h.answer(200, {"diff": await blocking(ep.diff)})

    async def submit(request):
        ep = episodes.get(request.path_params["episode_id"])
        patch = await blocking(ep.diff)
        res = await h.grade_episode(ep.task.record.instance_id, patch)
        return h.answer(200, res.model_dump())

    async def tools(request):
        return h.answer(200, {"tools": tool_schemas()})

    async def tool(request):
        ep = episodes.get(request.path_params["episode_id"])
        req = h.parse(ToolRequest, await h.read_json(request))
        if req.name == ToolName.SUBMIT:
            # Through the grading gate like any answer; the rest of the tool path is shared.
            patch = await blocking(ep.diff)
            graded = await h.grade_episode(ep.task.record.instance_id, patch)
            out = await blocking(call_tool, ep, req.name, req.arguments, lambda _ep: graded)
        else:
            out = await blocking(call_tool, ep, req.name, req.arguments)
        return h.answer(200, out.model_dump(mode="json"))

    async def close(request):
        await blocking(episodes.close, request.path_params["episode_id"])
        return h.answer(200, {})

    p = "/episodes/{episode_id}"
    return [Route("/episodes", h.wrap(start), methods=["POST"]),
            Route(p + "/run", h.wrap(run), methods=["POST"]),
            Route(p + "/read", h.wrap(read), methods=["POST"]),
            Route(p + "/write", h.wrap(write), methods=["POST"]),
            Route(p + "/diff", h.wrap(diff), methods=["GET"]),
            Route(p + "/submit", h.wrap(submit), methods=["POST"]),
            Route(p + "/tool", h.wrap(tool), methods=["POST"]),
            Route("/tools", h.wrap(tools), methods=["GET"]),
            Route(p, h.wrap(close), methods=["DELETE"])], threads
