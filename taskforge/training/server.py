"""`taskforge serve`: an HTTP reward server (Starlette on uvicorn), JSON in and out.

    GET  /health         {"status": "ok", ...counters}; 503 when the engine is unreachable
    POST /reward         {"instance_id", "solution", "timeout"?} -> RewardResult
    POST /reward/batch   {"items": [...]} -> {"results": [RewardResult, ...]}
    POST /get_reward     OpenRLHF's remote reward protocol (also /openrlhf)
    GET  /stats          per-task attempts, solves and solve rate (taskforge.training.curriculum)
    /episodes...         an agent's turns in a task's sandbox (taskforge.training.episode_api)
    GET  /tools          the episodes' tools as function-calling schemas (taskforge.training.tools)
    /openenv/...         with `openenv`: OpenEnv's server over the same episodes
                         (taskforge.training.integrations.openenv)

Why it is built this way:
- Grading is blocking (docker, git), so it runs in threads, as many as
  `concurrency` workers; the event loop only parses, admits and answers.
- Admission control: at most `concurrency + max_queue` answers are admitted at
  once (4096 waiting by default, so a rollout burst queues rather than bounces);
  past that a request gets 503 with Retry-After instead of waiting forever.
- The body is read as a stream and refused with 413 once it passes
  `max_body`; what remains is drained (up to a bound) so the client reads the
  answer instead of a reset connection.
- Each answer has a deadline. Past it, it comes back flagged as an
  infrastructure error (reward null); the grading thread finishes on its own
  (verify has the same timeout), and its slot is held until then.
- Bad requests get a 4xx with {"error": "..."}; nothing a client sends, and no
  engine failure, stops the server.
- Every answer sent back with a reward is recorded as an attempt in the solve
  stats store (`stats`, default `curriculum.default_stats_path`), one atomic
  append per answer; ungradable answers and refused OpenRLHF batches are not.
"""
from __future__ import annotations

import asyncio
import json
import logging
import sys
import threading
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from taskforge.errors import InfraError, TaskforgeError, UserError
from taskforge.sandbox import BACKENDS, backend_class, default_backend
from taskforge.sandbox.warm import WarmPool
from taskforge.training import curriculum
from taskforge.training.episodes import NoEpisode
from taskforge.training.rewards import RewardResult, TaskSource, instance_id_of, score_task

log = logging.getLogger("taskforge.serve")
DRAIN_LIMIT = 256 * 1024 * 1024     # past this an oversized body is cut off, not drained


# A rollout burst waits in the queue (a coroutine each, no thread) instead of
# being refused: OpenRLHF's client retries a refusal 5 times, 1 s apart, then
# gives up with a None reward. Each answer's deadline, queue included, stays
# under that client's 180 s total, so an answer is graded or flagged before the
# client stops waiting.
MAX_QUEUE = 4096
ANSWER_TIMEOUT = 170.0


class ServeConfig(BaseModel):
    tasks: str                       # a directory of task directories, or a shard directory
    host: str = "127.0.0.1"
    port: int = 8000
    concurrency: int = Field(2, ge=1)
    max_queue: int = Field(MAX_QUEUE, ge=0)
    max_body: int = Field(8 * 1024 * 1024, ge=1024)
    timeout: float = Field(ANSWER_TIMEOUT, gt=0)
    infra_score: float | None = None   # OpenRLHF: the score for an ungradable answer
    cache: str | None = None           # where shard rows become task directories
    stats: str | None = None           # solve stats store (default: default_stats_path(tasks))
    record_stats: bool = True          # False: record nothing, /stats answers 404
    max_episodes: int = Field(64, ge=0)    # agent episodes open at once (/episodes)
    episode_idle: float = Field(900.0, gt=0)   # an episode unused this long is closed
    warm: int | None = Field(None, ge=0)       # sandboxes started ahead per image (None: concurrency)
    sandbox: str | None = None                 # backend (None: $TASKFORGE_SANDBOX, else docker)
    ray: str | None = None                     # grade on this Ray cluster ("auto" or an address)
    openenv: bool = False                      # mount an OpenEnv server at /openenv (openenv extra)


class RewardRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    instance_id: str = Field(min_length=1, max_length=512)
    solution: str = Field(max_length=64 * 1024 * 1024)
    timeout: float | None = Field(default=None, gt=0)


class BatchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    items: list[RewardRequest] = Field(min_length=1, max_length=4096)


class OpenRLHFRequest(BaseModel):
    model_config = ConfigDict(extra="allow")      # OpenRLHF sends extra keys over time
    query: list[str]
    prompts: list[str] | None = None
    labels: list[str]


class HTTPError(Exception):
    def __init__(self, status: int, message: str, headers: dict | None = None):
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers or {}


class Gate:
    """Bounded admission and concurrency for the blocking grading work."""

    def __init__(self, concurrency: int, max_queue: int):
        self.capacity = concurrency + max_queue
        self.threads = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="tf-grade")
        self.lock = threading.Lock()
        self.admitted = 0            # queued + running, including timed-out ones still running
        self.running = 0
        self.served = 0
        self.infra_errors = 0
        self.timeouts = 0

    def admit(self, n: int) -> bool:
        with self.lock:
            if self.admitted + n > self.capacity:
                return False
            self.admitted += n
            return True

    def _release(self, _future=None) -> None:
        with self.lock:
            self.admitted -= 1

    def _run(self, fn):
        with self.lock:
            self.running += 1
        try:
            return fn()
        finally:
            with self.lock:
                self.running -= 1

    async def run(self, fn, timeout: float):
        """fn() in a grading thread, already admitted; None when the deadline passed."""
        cf = self.threads.submit(self._run, fn)
        cf.add_done_callback(self._release)       # also called when cancelled while queued
        try:
            return await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(cf)), timeout)
        except asyncio.TimeoutError:
            cf.cancel()                           # a no-op once it runs: then it finishes alone
            with self.lock:
                self.timeouts += 1
            return None

    def stats(self) -> dict:
        with self.lock:
            return {"in_flight": self.running, "queued": max(0, self.admitted - self.running),
                    "served": self.served, "infra_errors": self.infra_errors,
                    "timeouts": self.timeouts}


def answer(status: int, body: dict, headers: Mapping[str, str] | None = None):
    from starlette.responses import JSONResponse

    return JSONResponse(body, status_code=status, headers=headers)


async def read_json(request, max_body: int) -> Any:
    """The body as JSON, read as a stream and refused past `max_body` (what
    remains is drained up to a bound, so the client reads the 413)."""
    declared = request.headers.get("content-length")
    if declared is not None and not declared.strip().isdigit():
        raise HTTPError(400, "bad Content-Length header")
    if declared is not None and int(declared) > DRAIN_LIMIT:
        raise HTTPError(413, f"request body over {max_body} bytes", {"Connection": "close"})
    chunks: list[bytes]
    chunks, total, over = [], 0, False
    async for chunk in request.stream():
        total += len(chunk)
        if total > max_body:
            over = True
            chunks = []
            if total > DRAIN_LIMIT:
                break
        elif not over:
            chunks.append(chunk)
    if over:
        raise HTTPError(413, f"request body over {max_body} bytes",
                        {"Connection": "close"} if total > DRAIN_LIMIT else None)
    raw = b"".join(chunks)
    if not raw.strip():
        raise HTTPError(400, "empty request body: expected JSON")
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise HTTPError(400, f"malformed JSON: {str(exc)[:200]}") from None


def parse(model, data):
    if not isinstance(data, dict):
        raise HTTPError(422, "expected a JSON object")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(x) for x in first.get("loc", ()))
        raise HTTPError(422, f"{loc or 'body'}: {first.get('msg')}") from None


def flagged(instance_id: str, message: str) -> RewardResult:
    return RewardResult(instance_id=instance_id, reward=None, infra_error=message,
                        reason=f"infrastructure: {message}")


class RewardService:
    """One server's state (task source, admission gate, sandboxes or cluster,
    solve stats, episodes) and its endpoints as methods."""

    def __init__(self, cfg: ServeConfig):
        from pathlib import Path

        from taskforge.training.episodes import EpisodeLimits, Episodes

        self.cfg = cfg
        self.source = TaskSource(cfg.tasks, Path(cfg.cache) if cfg.cache else None)
        self.n_tasks = len(self.source.ids())
        if not self.n_tasks:
            raise UserError(f"no tasks in {cfg.tasks}")
        self.gate = Gate(cfg.concurrency, cfg.max_queue)
        self.backend = cfg.sandbox or default_backend()
        if self.backend not in BACKENDS:
            raise UserError(f"unknown sandbox backend {self.backend!r}: choose from {', '.join(BACKENDS)}")
        # Warm on every backend: on bwrap a warm sandbox has the supervisor parked.
        per_shape = cfg.concurrency if cfg.warm is None else cfg.warm
        self.cluster = None
        if cfg.ray:
            # Grading on actors over the cluster, each with warm sandboxes on its node;
            # task directories must be on a path every node sees.
            from taskforge.training.raygrade import ClusterGrader

            self.cluster = ClusterGrader(address=None if cfg.ray == "auto" else cfg.ray,
                                         backend=cfg.sandbox, warm=per_shape or 1)
        self.warm = (WarmPool(per_shape=per_shape, backend=self.backend)
                     if per_shape and not self.cluster else None)
        self.engine: dict[str, Any] = {"checked": 0.0, "error": None}
        self.store = None
        if cfg.record_stats:
            self.store = curriculum.SolveStats(cfg.stats or curriculum.default_stats_path(cfg.tasks))
        self.episodes = Episodes(EpisodeLimits(idle_seconds=cfg.episode_idle),
                                 max_episodes=max(1, cfg.max_episodes))
        self.ep_threads: ThreadPoolExecutor | None = None

    # -- what the episode routes share (episode_api takes this object) ---------

    answer = staticmethod(answer)
    parse = staticmethod(parse)

    async def read_json(self, request) -> Any:
        return await read_json(request, self.cfg.max_body)

    def check_known(self, ids: list[str]) -> None:
        for iid in ids:
            if iid not in self.source:
                raise HTTPError(404, f"no task {iid!r}")

    def admit(self, n: int) -> None:
        gate = self.gate
        if n > gate.capacity:               # would never fit: retrying cannot help
            raise HTTPError(422, f"{n} answers in one request; this server admits at most "
                                 f"{gate.capacity} at once (--concurrency + --max-queue)")
        if not gate.admit(n):
            raise HTTPError(503, f"server busy: more than {gate.capacity} answers admitted",
                            {"Retry-After": "5"})

    def wrap(self, handler):
        from starlette.requests import ClientDisconnect

        async def endpoint(request):
            try:
                return await handler(request)
            except HTTPError as exc:
                return answer(exc.status, {"error": exc.message}, exc.headers)
            except ClientDisconnect:
                return answer(400, {"error": "client went away"})
            except NoEpisode as exc:
                return answer(404, {"error": exc.message})
            except UserError as exc:
                return answer(400, {"error": exc.message})
            except InfraError as exc:          # the engine, or every episode slot taken
                return answer(503, {"error": exc.message}, {"Retry-After": "5"})
            except Exception as exc:
                log.exception("request failed")
                return answer(500, {"error": f"internal error: {type(exc).__name__}"})
        return endpoint

    # -- grading -----------------------------------------------------------------

    def grade_blocking(self, item: RewardRequest, timeout: float) -> RewardResult:
        t0 = time.monotonic()
        try:
            # Recorded by the endpoint once answered: a timed-out answer is not an attempt.
            return score_task(self.source.get(item.instance_id), item.solution, timeout, t0,
                              stats=False, pool=self.warm, backend=self.backend,
                              cluster=self.cluster or False)
        except TaskforgeError as exc:     # a task that cannot be loaded or rebuilt
            return flagged(item.instance_id, exc.message)
        except Exception as exc:          # a bug must not take the server down
            log.exception("grading %s failed", item.instance_id)
            return flagged(item.instance_id, f"internal error: {type(exc).__name__}: {exc}")

    async def grade(self, item: RewardRequest) -> RewardResult:
        timeout = min(item.timeout or self.cfg.timeout, self.cfg.timeout)
        res = await self.gate.run(lambda: self.grade_blocking(item, timeout), timeout)
        if res is None:
            res = flagged(item.instance_id, f"timed out after {timeout:g}s")
        with self.gate.lock:
            self.gate.served += 1
            self.gate.infra_errors += res.infra_error is not None
        return res

    def record(self, results: list[RewardResult]) -> None:
        if self.store is not None:
            for r in results:       # a small append each; a failure only logs
                curriculum.record(r, self.store)

    async def grade_episode(self, instance_id: str, patch: str) -> RewardResult:
        self.admit(1)
        res = await self.grade(RewardRequest(instance_id=instance_id, solution=patch))
        self.record([res])
        return res

    # -- endpoints ---------------------------------------------------------------

    async def reward_one(self, request):
        item = parse(RewardRequest, await self.read_json(request))
        self.check_known([item.instance_id])
        self.admit(1)
        res = await self.grade(item)
        self.record([res])
        return answer(200, res.model_dump())

    async def reward_batch(self, request):
        batch = parse(BatchRequest, await self.read_json(request))
        self.check_known([i.instance_id for i in batch.items])
        self.admit(len(batch.items))
        results = await asyncio.gather(*(self.grade(i) for i in batch.items))
        self.record(results)
        return answer(200, {"results": [r.model_dump() for r in results]})

    async def openrlhf(self, request):
        cfg = self.cfg
        req = parse(OpenRLHFRequest, await self.read_json(request))
        n = len(req.query)
        if len(req.labels) != n or (req.prompts is not None and len(req.prompts) != n):
            raise HTTPError(422, "query, prompts and labels must have the same length")
        labels = [instance_id_of(label) for label in req.labels]   # an id, or its JSON
        self.check_known(labels)
        self.admit(n)
        items = []
        for q, p, label in zip(req.query, req.prompts or [""] * n, labels):
            sol = q[len(p):] if p and q.startswith(p) else q
            items.append(RewardRequest(instance_id=label, solution=sol))
        results = await asyncio.gather(*(self.grade(i) for i in items))
        bad = [r for r in results if r.infra_error is not None]
        if bad and cfg.infra_score is None:
            # OpenRLHF's client retries on an HTTP error: a retry beats a fake score.
            return answer(503, {"error": f"{len(bad)} of {n} could not be graded: "
                                         f"{bad[0].infra_error}"}, {"Retry-After": "5"})
        self.record(results)             # (not before: a 503 batch is retried, then recorded)
        rewards = [cfg.infra_score if r.infra_error is not None else r.reward for r in results]
        return answer(200, {"rewards": rewards, "scores": rewards,
                            "extra_logs": {"resolved": [float(r.resolved) for r in results],
                                           "infra_error": [float(r.infra_error is not None)
                                                           for r in results]}})

    def ping(self) -> str | None:
        if self.cluster is not None:
            from taskforge.training.raygrade import alive_nodes

            return None if alive_nodes() else "no live node in the Ray cluster"
        return backend_class(self.backend).check()

    async def health(self, request):
        cfg, engine = self.cfg, self.engine
        now = time.monotonic()
        if now - engine["checked"] > 2.0:
            try:
                engine["error"] = await asyncio.wait_for(
                    asyncio.get_running_loop().run_in_executor(None, self.ping), 10)
            except asyncio.TimeoutError:
                engine["error"] = f"the {self.backend} sandbox backend did not answer a check in 10s"
            engine["checked"] = now
        body = {"status": "ok" if engine["error"] is None else "degraded",
                "engine": engine["error"] or "ok", "sandbox": self.backend, "tasks": self.n_tasks,
                "ray": len(self.cluster.actors) if self.cluster is not None else None,
                "concurrency": cfg.concurrency, "max_queue": cfg.max_queue, **self.gate.stats()}
        body["stats"] = str(self.store.path) if self.store is not None else None
        return answer(200 if engine["error"] is None else 503, body)

    async def stats(self, request):
        if self.store is None:
            raise HTTPError(404, "solve stats are off (serve --no-stats)")
        report = await asyncio.get_running_loop().run_in_executor(None, self.store.report)
        return answer(200, report.model_dump())

    async def http_error(self, request, exc: Exception):
        from starlette.exceptions import HTTPException

        assert isinstance(exc, HTTPException)     # the handler of HTTPException only
        return answer(exc.status_code, {"error": exc.detail or "error"}, exc.headers)

    @asynccontextmanager
    async def lifespan(self, app):
        cfg, store = self.cfg, self.store
        print(f"taskforge serve: {self.n_tasks} task(s) from {cfg.tasks} on http://{cfg.host}:{cfg.port}"
              f"; solve stats {store.path if store is not None else 'off'}",
              file=sys.stderr, flush=True)
        yield
        # Answers being graded finish (their containers go with them); queued ones are
        # dropped; open episodes are closed (their sandboxes destroyed).
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, self.episodes.close_all)
        await loop.run_in_executor(None, lambda: self.gate.threads.shutdown(wait=True, cancel_futures=True))
        if self.ep_threads is not None:
            self.ep_threads.shutdown(wait=False, cancel_futures=True)
        if self.warm is not None:
            await loop.run_in_executor(None, self.warm.close)
        if self.cluster is not None:
            await loop.run_in_executor(None, self.cluster.close)
        print(f"taskforge serve: stopped after {self.gate.served} answer(s)", file=sys.stderr, flush=True)


def create_app(cfg: ServeConfig):
    """The Starlette app: the service's endpoints as routes, and the episode routes."""
    from starlette.applications import Starlette
    from starlette.exceptions import HTTPException
    from starlette.routing import Route

    from taskforge.training.episode_api import episode_routes

    svc = RewardService(cfg)
    ep_routes, svc.ep_threads = episode_routes(svc.episodes, svc.source, svc)
    if cfg.max_episodes == 0:
        ep_routes = [r for r in ep_routes if r.path == "/tools"]     # the schemas stay
    routes = [Route("/health", svc.health, methods=["GET"]),
              Route("/stats", svc.wrap(svc.stats), methods=["GET"]),
              Route("/reward", svc.wrap(svc.reward_one), methods=["POST"]),
              Route("/reward/batch", svc.wrap(svc.reward_batch), methods=["POST"]),
              Route("/get_reward", svc.wrap(svc.openrlhf), methods=["POST"]),
              Route("/openrlhf", svc.wrap(svc.openrlhf), methods=["POST"]), *ep_routes]
    if cfg.openenv and cfg.max_episodes:
        routes.append(openenv_mount(svc))
    app = Starlette(routes=routes, exception_handlers={HTTPException: svc.http_error},
                    lifespan=svc.lifespan)
    app.state.gate, app.state.source, app.state.config = svc.gate, svc.source, cfg
    app.state.stats = svc.store
    return app


def openenv_mount(svc: RewardService):
    """OpenEnv's app at /openenv over the service's episodes; a submission is
    graded through the service's admission gate like any answer."""
    from starlette.routing import Mount

    from taskforge.training.integrations.openenv import create_openenv_app

    async def grader(ep):
        patch = await asyncio.get_running_loop().run_in_executor(svc.ep_threads, ep.diff)
        try:
            return await svc.grade_episode(ep.task.record.instance_id, patch)
        except HTTPError as exc:           # the gate is full: not the policy's fault
            return flagged(ep.task.record.instance_id, exc.message)

    app = create_openenv_app(svc.source, svc.episodes, grader, max_sessions=svc.episodes.max_episodes)
    return Mount("/openenv", app=app)


def serve(cfg: ServeConfig, log_level: str = "warning") -> None:
    import uvicorn

    app = create_app(cfg)
    logging.basicConfig(level=log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
    uvicorn.run(app, host=cfg.host, port=cfg.port, log_level=log_level, access_log=False,
                timeout_keep_alive=5, limit_concurrency=max(64, 4 * (cfg.concurrency + cfg.max_queue)),
                timeout_graceful_shutdown=int(cfg.timeout) + 30)
