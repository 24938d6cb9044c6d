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
import time
from pathlib import Path

from taskforge.rayconn import _ray, connect

# --------------------------------------------------------------------- generate

def _generate_remote():
    ray = _ray()

    @ray.remote(max_retries=3, num_cpus=1)
    def generate_one(repo: str, out: str, opts_json: str) -> dict:
        import time

        from taskforge.errors import TaskforgeError
        from taskforge.orchestrate.corpus import row_of
        from taskforge.orchestrate.pipeline import Options, generate

        opts = Options(**json.loads(opts_json))
        node = ray.get_runtime_context().get_node_id()
        t0 = time.monotonic()
        try:
            report = generate(repo, out, opts, log=lambda s: None)
        except TaskforgeError as exc:
            return row_of(repo, out, time.monotonic() - t0, error=exc.message, node=node).model_dump()
        except Exception as exc:  # noqa: BLE001 - our bug, but this repository's row only
            msg = f"internal error: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            return row_of(repo, out, time.monotonic() - t0, error=msg[:300], node=node).model_dump()
        return row_of(repo, out, time.monotonic() - t0, report.model_dump(mode="json"),
                      node=node).model_dump()

    return generate_one


def generate_corpus(repos: list[str], out: str | Path, opts=None, address: str | None = None,
                    progress=None) -> list[dict]:
    """Generate from every repository on the cluster, each into OUT/<name>/;
    results in input order (`corpus.CorpusRow` as dicts: repo, out, tasks or
    error, seconds, node), and OUT/corpus.json the `corpus.CorpusReport`. One
    repository's failure never costs another its tasks."""
    from dataclasses import asdict

    from taskforge.orchestrate.corpus import CorpusRow, corpus_dirs, row_of, summarize
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
    t0 = time.monotonic()
    for i, ref in enumerate(refs):
        try:
            results.append(ray.get(ref))
        except Exception as exc:  # noqa: BLE001 - a lost task is that repository's error only
            results.append(row_of(repos[i], "", 0.0, error=f"infrastructure: "
                                  f"{str(exc).splitlines()[0][:200]}").model_dump())
        if progress:
            progress(i + 1, len(refs))
    from taskforge.fsutil import atomic_write

    # Cores: the cluster's, since its nodes ran the corpus side by side.
    cores = int(sum(n["Resources"].get("CPU", 0) for n in ray.nodes() if n.get("Alive"))) or 1
    report = summarize([CorpusRow(**r) for r in results], cores, wall_seconds=time.monotonic() - t0)
    atomic_write(out / "corpus.json", json.dumps(report.model_dump(mode="json"), indent=1))
    return results


def _jsonable(v) -> bool:
    try:
        json.dumps(v)
        return True
    except TypeError:
        return False
