"""Ray as the executor: generation over a corpus and grading spread over a cluster.

Optional (`pip install taskforge[ray]`); local worker threads stay the default.
Every trainer taskforge serves already runs on Ray, so this joins the cluster
they have (`ray start`, `RAY_ADDRESS`) rather than bringing its own.

- Generation: one Ray task per repository, running `pipeline.generate` into
  OUT/<name>/ on the shared output path. A task that dies with its node is
  retried elsewhere; generate's own journal (OUT/<name>/.state) makes the
  retry resume, so the task set is the one an uninterrupted run writes.
- Grading: actors (one per node by default; one lost with its node is replaced
  wherever Ray can place it, its unfinished items sent again) each grade with
  the node's own sandbox backend,
  warm sandboxes on Docker. An environment missing on a node is realised
  there from the task's recipe: a root filesystem for bwrap (no engine at
  all), an image in the node's own engine for Docker. A call that still fails
  is an infrastructure error (reward None), never a wrong answer.
"""
from __future__ import annotations

import json
from pathlib import Path

from taskforge.rayconn import _ray, connect

# --------------------------------------------------------------------- generate

def _generate_remote():
    ray = _ray()

    @ray.remote(max_retries=3, num_cpus=1)
    def generate_one(repo: str, out: str, opts_json: str) -> dict:
        from taskforge.errors import TaskforgeError
        from taskforge.orchestrate.pipeline import Options, generate

        opts = Options(**json.loads(opts_json))
        try:
            report = generate(repo, out, opts, log=lambda s: None)
        except TaskforgeError as exc:
            return {"repo": repo, "out": out, "error": exc.message, "node": ray.get_runtime_context().get_node_id()}
        return {"repo": repo, "out": out, "tasks": sorted(report.tasks),
                "node": ray.get_runtime_context().get_node_id()}

    return generate_one


def corpus_dirs(repos: list[str], out: Path) -> list[tuple[str, Path]]:
    """(repository, OUT/<stable name>) for each; a name seen twice gets -2, -3..."""
    from taskforge.repo.source import stable_name

    seen: dict[str, int] = {}
    dirs = []
    for repo in repos:
        name = stable_name(repo).replace("/", "__")
        seen[name] = seen.get(name, 0) + 1
        dirs.append((repo, out / (name if seen[name] == 1 else f"{name}-{seen[name]}")))
    return dirs


def generate_corpus(repos: list[str], out: str | Path, opts=None, address: str | None = None,
                    progress=None) -> list[dict]:
    """Generate from every repository on the cluster, each into OUT/<name>/;
    results in input order ({repo, out, tasks} or {repo, out, error}). One
    repository's failure never costs another its tasks."""
    from dataclasses import asdict

    from taskforge.orchestrate.pipeline import Options

    connect(address)
    ray = _ray()
    opts = opts or Options()
    opts_json = json.dumps({k: v for k, v in asdict(opts).items() if _jsonable(v)})
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    fn = _generate_remote()
    refs = [fn.remote(repo, str(dest), opts_json) for repo, dest in corpus_dirs(repos, out)]
    results = []
    for i, ref in enumerate(refs):
        try:
            results.append(ray.get(ref))
        except Exception as exc:  # noqa: BLE001 - a lost task is that repository's error only
            results.append({"repo": repos[i], "error": f"infrastructure: {str(exc).splitlines()[0][:200]}"})
        if progress:
            progress(i + 1, len(refs))
    from taskforge.fsutil import atomic_write

    atomic_write(out / "corpus.json", json.dumps(results, indent=1, sort_keys=True))
    return results


def _jsonable(v) -> bool:
    try:
        json.dumps(v)
        return True
    except TypeError:
        return False
