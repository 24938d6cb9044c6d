"""Rewards for RL trainers: a policy's answer (a unified diff against the task's
workspace, possibly wrapped in prose) graded by `verify`.

- `score` / `score_many`: the core; a `RewardResult` per answer. An
  infrastructure failure comes back with `reward=None` and `infra_error` set,
  never as reward 0. A diff that does not apply, or is unsafe, is the policy's
  fault: reward 0 with the reason.
- `reward` (also `compute_score`) and `compute_score_batch`: verl's custom
  reward signatures (`data_source, solution_str, ground_truth, extra_info`).
- `trl_reward_func`: a reward function for TRL's GRPOTrainer (None = masked).
- `openrlhf_rewards`: OpenRLHF's remote reward protocol (`query/prompts/labels`).

Where tasks come from (first match wins): `extra_info["task_dir"]`; a shard row
in `extra_info` (unsharded on demand into a content-addressed cache, so a Ray
worker needs only the shards); the `tasks` argument or $TASKFORGE_TASKS, which
is a directory of task directories or a shard directory (with manifest.json).
With $TASKFORGE_REWARD_URL set (or `url=`), grading is sent to `taskforge serve`.

Curriculum: with `stats=` (or $TASKFORGE_STATS) every graded attempt is recorded
per task (taskforge.training.curriculum), for `taskforge select` to pick tasks by solve rate.
"""
from __future__ import annotations

import asyncio
import json
import os
import threading
import time
import urllib.error
import urllib.request
import weakref
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

from taskforge.errors import InfraError, TaskforgeError, UserError
from taskforge.grade.answer import RewardResult, extract_diff, grade_task

__all__ = ["RewardResult", "compute_score", "compute_score_batch", "extract_diff", "grade_task",
           "openrlhf_rewards", "reward", "score", "score_many", "score_task", "trl_reward_func",
           "trl_reward_funcs"]

DEFAULT_TIMEOUT = 300.0


def _cache_root() -> Path:
    return Path(os.environ.get("TASKFORGE_CACHE") or Path.home() / ".cache" / "taskforge") / "tasks"


_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


def _lock(key: str) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault(key, threading.Lock())


def materialize(row, cache: Path | None = None) -> Path:
    """A shard row as a task directory in the cache, keyed by the row's content
    digest; built once (atomically, first writer wins) and reused."""
    from taskforge.training import shards

    if isinstance(row, dict):
        row = shards.parse_row(row)
    shards._safe_id(row.instance_id)
    dest = (cache or _cache_root()) / f"{row.instance_id}-{row.row_sha256[:16]}"
    if (dest / "task.json").is_file():
        return dest
    with _lock(str(dest)):
        if not (dest / "task.json").is_file():
            shards.row_to_task(row, dest, replace=False)
    return dest


class TaskSource:
    """Tasks by instance_id from a directory of task directories or a shard directory."""

    def __init__(self, root: str | Path, cache: Path | None = None):
        from taskforge.training import shards

        self.root = Path(root)
        self.cache = cache
        self.built: dict[str, Path] = {}     # instance_id -> its rebuilt task directory
        self.index = None
        if (self.root / "manifest.json").is_file():
            self.index = shards.ShardIndex([self.root])
        elif not self.root.is_dir():
            raise UserError(f"no such task or shard directory: {root}")

    def ids(self) -> list[str]:
        if self.index is not None:
            return self.index.ids()
        return sorted(p.name for p in self.root.iterdir() if (p / "task.json").is_file())

    def __contains__(self, instance_id: str) -> bool:
        if self.index is not None:
            return instance_id in self.index
        return _valid_id(instance_id) and (self.root / instance_id / "task.json").is_file()

    def get(self, instance_id: str) -> Path:
        if instance_id not in self:
            raise UserError(f"no task {instance_id!r} in {self.root}")
        if self.index is None:
            return self.root / instance_id
        hit = self.built.get(instance_id)
        if hit is None or not (hit / "task.json").is_file():
            hit = self.built[instance_id] = materialize(self.index.row(instance_id), self.cache)
        return hit


def _valid_id(instance_id: str) -> bool:
    from taskforge.training.shards import _safe_id

    try:
        _safe_id(instance_id)
        return True
    except UserError:
        return False


_sources: dict[tuple[str, str], TaskSource] = {}
_sources_guard = threading.Lock()


def task_source(root: str | Path | None = None, cache: Path | None = None) -> TaskSource:
    """The TaskSource for `root` (default $TASKFORGE_TASKS), built once per process."""
    root = root or os.environ.get("TASKFORGE_TASKS")
    if not root:
        raise UserError("no task source: pass tasks= or set TASKFORGE_TASKS to a directory of "
                        "tasks or shards")
    key = (str(Path(root).resolve()), str(cache or ""))
    with _sources_guard:
        if key not in _sources:
            _sources[key] = TaskSource(root, cache)
        return _sources[key]


def instance_id_of(ground_truth: Any, extra_info: dict | None = None) -> str:
    """verl's ground_truth (an instance id, its JSON, or a dict) or extra_info's."""
    gt = ground_truth
    if isinstance(gt, str) and gt.lstrip().startswith("{"):
        try:
            gt = json.loads(gt)
        except ValueError:
            pass
    if isinstance(gt, dict):
        gt = gt.get("instance_id")
    if not gt and extra_info:
        gt = extra_info.get("instance_id")
    if not isinstance(gt, str) or not gt:
        raise UserError(f"ground_truth names no task: {str(ground_truth)[:80]!r}")
    return gt


def resolve_task(ground_truth: Any, extra_info: dict | None = None,
                 tasks: str | Path | None = None) -> Path:
    extra = extra_info or {}
    if extra.get("task_dir"):
        return Path(extra["task_dir"])
    if "workspace_tgz" in extra:
        return materialize(extra)
    if extra.get("tasks") and not tasks:
        tasks = extra["tasks"]
    return task_source(tasks).get(instance_id_of(ground_truth, extra))


# ---------------------------------------------------------------- scoring

def score(solution_str: str, ground_truth: Any, extra_info: dict | None = None,
          tasks: str | Path | None = None, timeout: float | None = None,
          url: str | None = None, stats=None) -> RewardResult:
    """Grade one answer. Raises UserError when the task cannot be found (a set-up
    mistake); every other failure is a result. `stats`: where the attempt is
    recorded (see score_task); in remote mode the server records it instead."""
    url = url if url is not None else os.environ.get("TASKFORGE_REWARD_URL")
    env_timeout = os.environ.get("TASKFORGE_REWARD_TIMEOUT")
    timeout = timeout or (float(env_timeout) if env_timeout else None)
    if url:
        return _score_remote(url, instance_id_of(ground_truth, extra_info), solution_str,
                             timeout or DEFAULT_TIMEOUT)
    t0 = time.monotonic()
    task_dir = resolve_task(ground_truth, extra_info, tasks)
    return score_task(task_dir, solution_str, timeout, t0, stats=stats)


def score_task(task_dir: str | Path, solution_str: str, timeout: float | None = None,
               t0: float | None = None, stats=None, pool=None,
               backend: str | None = None, cluster=None) -> RewardResult:
    """Grade one answer for a task directory. `timeout` None: the task's own limit,
    from its measured run time. The attempt is recorded for the curriculum in
    `stats` (a path or a taskforge.training.curriculum.SolveStats; None: $TASKFORGE_STATS
    if set; False: nowhere); an infrastructure error is not an attempt. `pool`: a
    WarmPool to take the sandbox from (default: the process's, if $TASKFORGE_WARM
    is set). `cluster`: a taskforge.training.raygrade.ClusterGrader to grade on (default:
    the process's, if $TASKFORGE_RAY is set)."""
    from taskforge.training import curriculum

    # cluster False: never (serve passes it when it grades here).
    grader = cluster if cluster is not None else process_cluster()
    if grader:
        t0 = t0 if t0 is not None else time.monotonic()
        result = RewardResult.model_validate(grader.reward_many([(task_dir, solution_str)],
                                                                timeout)[0])
        result.seconds = round(time.monotonic() - t0, 3)
    else:
        result = grade_task(task_dir, solution_str, timeout, t0,
                            pool if pool is not None else _process_pool(), backend)
    curriculum.record(result, stats)
    return result


_CLUSTER: list = []


def process_cluster():
    """The process's ClusterGrader when $TASKFORGE_RAY names a cluster ("auto"
    or an address): the reward API then grades on actors spread over it. Set
    explicitly, never inferred from RAY_ADDRESS: a trainer on Ray may still
    want its rewards graded on the node that asks."""
    address = os.environ.get("TASKFORGE_RAY")
    if not address:
        return None
    with _POOL_LOCK:
        if not _CLUSTER:
            from taskforge.sandbox.warm import pool_size_from_env
            from taskforge.training.raygrade import ClusterGrader

            _CLUSTER.append(ClusterGrader(address=None if address == "auto" else address,
                                          warm=pool_size_from_env(1)))
        return _CLUSTER[0]


_POOL: list = []
_POOL_LOCK = threading.Lock()


def _process_pool():
    """In a trainer's own process, sandboxes are warmed only when asked
    ($TASKFORGE_WARM=N): idle containers held between steps are the trainer's
    to budget. `serve` and `verify-batch` warm by default."""
    from taskforge.sandbox import default_backend
    from taskforge.sandbox.warm import WarmPool, pool_size_from_env

    n = pool_size_from_env(0)
    if not n:
        return None
    with _POOL_LOCK:
        if not _POOL:
            _POOL.append(WarmPool(per_shape=n, backend=default_backend()))
        return _POOL[0]


def _score_remote(url: str, instance_id: str, solution: str, timeout: float) -> RewardResult:
    body = json.dumps({"instance_id": instance_id, "solution": solution, "timeout": timeout}).encode()
    req = urllib.request.Request(url.rstrip("/") + "/reward", data=body, method="POST",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout + 60) as resp:
            return RewardResult.model_validate_json(resp.read())
    except urllib.error.HTTPError as exc:
        detail = exc.read()[:300].decode(errors="replace")
        if exc.code == 404:
            raise UserError(f"reward server has no task {instance_id!r}") from None
        if 400 <= exc.code < 500 and exc.code not in (408, 429):
            raise UserError(f"reward server refused the request ({exc.code}): {detail}") from None
        msg = f"reward server answered {exc.code}: {detail}"
    except (urllib.error.URLError, OSError, ValueError) as exc:
        msg = f"reward server unreachable: {exc}"
    return RewardResult(instance_id=instance_id, reward=None, infra_error=msg,
                        reason=f"infrastructure: {msg}")


def default_workers() -> int:
    return int(os.environ.get("TASKFORGE_REWARD_WORKERS") or max(1, min(os.cpu_count() or 1, 4)))


def score_many(items: list[dict], workers: int | None = None, tasks: str | Path | None = None,
               timeout: float | None = None, url: str | None = None,
               stats=None) -> list[RewardResult]:
    """Grade many answers concurrently, results in input order. Each item is a
    dict with `solution_str`, `ground_truth` and optionally `extra_info`.
    `stats`: where attempts are recorded, as for score_task."""
    def one(item: dict) -> RewardResult:
        try:
            return score(item.get("solution_str") or "", item.get("ground_truth"),
                         item.get("extra_info"), tasks=tasks, timeout=timeout, url=url,
                         stats=stats)
        except Exception as exc:  # noqa: BLE001 - one bad item never costs the batch
            msg = exc.message if isinstance(exc, TaskforgeError) else f"{type(exc).__name__}: {exc}"
            return RewardResult(instance_id=str((item.get("extra_info") or {}).get("instance_id", "")),
                                reward=None, infra_error=msg[:300], reason=f"not graded: {msg[:300]}")

    if not items:
        return []
    url = url if url is not None else os.environ.get("TASKFORGE_REWARD_URL")
    grader = None if url else process_cluster()
    if grader is not None:
        return _score_many_on(grader, items, tasks, timeout, stats)
    with ThreadPoolExecutor(max_workers=max(1, min(workers or default_workers(), len(items)))) as threads:
        return list(threads.map(one, items))


def _score_many_on(grader, items: list[dict], tasks, timeout, stats) -> list[RewardResult]:
    """The batch in one go over the cluster's actors (all of them busy at once,
    not a thread per item here)."""
    from taskforge.training import curriculum

    env_timeout = os.environ.get("TASKFORGE_REWARD_TIMEOUT")
    timeout = timeout or (float(env_timeout) if env_timeout else None)
    out: list[RewardResult | None] = [None] * len(items)
    batch: list[tuple[int, Path]] = []
    for i, item in enumerate(items):
        try:
            batch.append((i, resolve_task(item.get("ground_truth"), item.get("extra_info"), tasks)))
        except TaskforgeError as exc:
            out[i] = RewardResult(instance_id=str((item.get("extra_info") or {}).get("instance_id", "")),
                                  reward=None, infra_error=exc.message[:300],
                                  reason=f"not graded: {exc.message[:300]}")
    graded = grader.reward_many([(d, items[i].get("solution_str") or "") for i, d in batch], timeout)
    for (i, _), row in zip(batch, graded):
        res = RewardResult.model_validate(row)
        curriculum.record(res, stats)
        out[i] = res
    return [r for r in out if r is not None]


# ---------------------------------------------------------------- verl

def _infra_score(kwargs: dict) -> float | None:
    v = kwargs.get("infra_score")
    if v is None:
        v = os.environ.get("TASKFORGE_INFRA_SCORE")
    return None if v in (None, "") else float(v)


def _verl_dict(r: RewardResult, infra_score: float | None) -> dict:
    if r.infra_error is not None:
        if infra_score is None:
            raise InfraError(f"{r.instance_id}: {r.infra_error} (set infra_score or "
                             f"TASKFORGE_INFRA_SCORE to score such samples with a flag instead)")
        score_ = infra_score
    else:
        assert r.reward is not None         # None exactly when infra_error is set
        score_ = float(r.reward)
    return {"score": score_, "resolved": float(r.resolved),
            "infra_error": float(r.infra_error is not None),
            "f2p_frac": r.f2p_passed / r.f2p_total if r.f2p_total else 0.0}


def reward(data_source: str, solution_str: str, ground_truth: Any, extra_info: dict | None = None,
           **kwargs) -> dict:
    """verl's custom reward function. Returns {"score", "resolved", "infra_error",
    "f2p_frac"} (all numbers, so verl can log them as metrics).

    verl cannot mask a sample, so an infrastructure failure raises InfraError
    unless `infra_score` (a verl reward_kwargs entry) or $TASKFORGE_INFRA_SCORE
    gives the score to use, which then comes flagged with infra_error=1.
    Other kwargs: tasks, timeout, url, stats (where attempts are recorded).
    """
    r = score(solution_str, ground_truth, extra_info, tasks=kwargs.get("tasks"),
              timeout=kwargs.get("timeout"), url=kwargs.get("url"), stats=kwargs.get("stats"))
    return _verl_dict(r, _infra_score(kwargs))


compute_score = reward

_SLOTS: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore]" = \
    weakref.WeakKeyDictionary()


async def compute_score_async(data_source: str, solution_str: str, ground_truth: Any,
                              extra_info: dict | None = None, **kwargs) -> dict:
    """verl >= 0.9's reward loop awaits a coroutine reward function: the answers of
    a batch are graded at once (up to `workers` per event loop, default the CPU
    count) in threads, while the loop goes on serving the rest. Same result and
    kwargs as `reward`."""
    loop = asyncio.get_running_loop()
    slots = _SLOTS.get(loop)
    if slots is None:
        slots = _SLOTS[loop] = asyncio.Semaphore(int(kwargs.get("workers") or os.cpu_count() or 2))
    async with slots:
        return await asyncio.to_thread(reward, data_source, solution_str, ground_truth,
                                       extra_info, **kwargs)


def compute_score_batch(data_sources: list, solution_strs: list, ground_truths: list,
                        extra_infos: list | None = None, **kwargs) -> list[dict]:
    """verl's BatchRewardManager signature: graded concurrently (`workers`)."""
    # verl hands numpy object arrays: no truth value, so no `extra_infos or [...]`.
    extra_infos = [None] * len(solution_strs) if extra_infos is None else list(extra_infos)
    items = [{"solution_str": s, "ground_truth": g, "extra_info": e}
             for s, g, e in zip(solution_strs, ground_truths, extra_infos)]
    results = score_many(items, workers=kwargs.get("workers"), tasks=kwargs.get("tasks"),
                         timeout=kwargs.get("timeout"), url=kwargs.get("url"),
                         stats=kwargs.get("stats"))
    infra = _infra_score(kwargs)
    return [_verl_dict(r, infra) for r in results]


# ---------------------------------------------------------------- TRL

def _completion_text(c: Any) -> str:
    """TRL completions are strings, or chat messages for conversational data."""
    if isinstance(c, str):
        return c
    if isinstance(c, dict):
        return str(c.get("content") or "")
    if isinstance(c, (list, tuple)):
        texts = [m.get("content") or "" for m in c if isinstance(m, dict)
                 and m.get("role", "assistant") == "assistant"]
        return "\n".join(str(t) for t in texts)
    return str(c or "")


def trl_reward_func(tasks: str | Path | None = None, workers: int | None = None,
                    id_column: str = "instance_id", timeout: float | None = None,
                    url: str | None = None, asynchronous: bool = False) -> Callable:
    """A reward function for TRL's GRPOTrainer(reward_funcs=[...]). The dataset
    needs an `id_column` column; TRL passes it as a keyword list. An
    infrastructure failure gives None, which TRL leaves out of the reward.
    `asynchronous=True` gives a coroutine function: TRL (>= 1.x) awaits async
    reward functions together, so grading overlaps the other reward functions."""
    taskforge_reward = trl_reward_funcs(tasks, workers, id_column, timeout, url)[0]
    if not asynchronous:
        return taskforge_reward

    async def taskforge_reward_async(prompts=None, completions=None, **kwargs):
        return await asyncio.to_thread(taskforge_reward, prompts, completions, **kwargs)

    taskforge_reward_async.__name__ = "taskforge_reward"     # TRL logs rewards by this name
    return taskforge_reward_async


def trl_reward_funcs(tasks: str | Path | None = None, workers: int | None = None,
                     id_column: str = "instance_id", timeout: float | None = None,
                     url: str | None = None) -> list[Callable]:
    """[reward, resolved, f2p_frac, infra_error] for TRL's metric hooks: pass them
    all as `reward_funcs` with `GRPOConfig(reward_weights=[1, 0, 0, 0])`, and TRL
    logs each as `rewards/<name>/mean` while only the first trains. Each answer is
    graded once: the metrics read the gradings of the reward's call (a batch's
    answers, dropped at the next batch), grading only what they do not find."""
    cache: dict[tuple[str, str], RewardResult] = {}
    lock = threading.Lock()

    def gradings(completions, kwargs) -> list[RewardResult]:
        ids = kwargs.get(id_column)
        if ids is None:
            raise UserError(f"the dataset has no {id_column!r} column for taskforge_reward")
        keys = [(str(i), _completion_text(c)) for c, i in zip(completions or [], ids)]
        with lock:
            missing = [k for k in dict.fromkeys(keys) if k not in cache]
        if missing:
            got = score_many([{"solution_str": t, "ground_truth": i} for i, t in missing],
                             workers, tasks, timeout, url)
            with lock:
                cache.update(zip(missing, got))
        with lock:
            return [cache[k] for k in keys]

    def taskforge_reward(prompts=None, completions=None, **kwargs):
        with lock:
            cache.clear()                  # a new batch: the last one's gradings go
        return [r.reward for r in gradings(completions, kwargs)]

    def metric(name: str, value):
        def fn(prompts=None, completions=None, **kwargs):
            return [None if r.infra_error is not None else value(r)
                    for r in gradings(completions, kwargs)]
        fn.__name__ = name
        return fn

    def taskforge_infra_error(prompts=None, completions=None, **kwargs):
        return [float(r.infra_error is not None) for r in gradings(completions, kwargs)]

    return [taskforge_reward,
            metric("taskforge_resolved", lambda r: float(r.resolved)),
            metric("taskforge_f2p_frac", lambda r: r.f2p_passed / r.f2p_total if r.f2p_total else 0.0),
            taskforge_infra_error]


# ---------------------------------------------------------------- OpenRLHF

def openrlhf_rewards(payload: dict, tasks: str | Path | None = None, workers: int | None = None,
                     timeout: float | None = None, infra_score: float | None = None,
                     url: str | None = None) -> dict:
    """OpenRLHF's remote reward protocol: {"query": [prompt+response, ...],
    "prompts": [...], "labels": [instance id, ...]} -> {"rewards", "scores",
    "extra_logs"}. The response is the query with its prompt prefix removed.
    Without `infra_score`, an infrastructure failure raises InfraError (the
    server answers 503, which OpenRLHF's client retries)."""
    queries = payload.get("query") or []
    prompts = payload.get("prompts") or [""] * len(queries)
    labels = payload.get("labels")
    if labels is None or len(labels) != len(queries) or len(prompts) != len(queries):
        raise UserError("query, prompts and labels must be lists of the same length")
    items = []
    for q, p, label in zip(queries, prompts, labels):
        q, p = str(q or ""), str(p or "")
        items.append({"solution_str": q[len(p):] if p and q.startswith(p) else q,
                      "ground_truth": label})
    results = score_many(items, workers, tasks, timeout, url)
    infra = [r for r in results if r.infra_error is not None]
    if infra and infra_score is None:
        raise InfraError(f"{len(infra)} of {len(results)} could not be graded: "
                         f"{infra[0].infra_error}")
    rewards = [infra_score if r.infra_error is not None else r.reward for r in results]
    return {"rewards": rewards, "scores": rewards,
            "extra_logs": {"resolved": [float(r.resolved) for r in results],
                           "infra_error": [float(r.infra_error is not None) for r in results]}}
