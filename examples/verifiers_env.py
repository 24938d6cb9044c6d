"""verifiers 0.4: taskforge's Env through verifiers' own loader and rollout code, with
a model behind any OpenAI-compatible endpoint (vLLM, a hosted API).

    pip install 'taskforge[verifiers]'
    OPENAI_API_KEY=... python examples/verifiers_env.py TASKS_DIR agent|single_turn \\
        --model gpt-5-mini --base-url https://api.openai.com/v1

The same environment from verifiers' CLI (discovery imports `taskforge_verifiers`):
    vf-eval taskforge_verifiers --env.taskset.tasks TASKS_DIR --env.taskset.mode agent \\
        --env.agent.harness.id null --env.agent.runtime.type subprocess -m MODEL ...
"""
from __future__ import annotations

import argparse
import asyncio
import sys

import verifiers.v1 as vf

from taskforge.integrations.verifiers import load_environment


async def run(env, ctx):
    async with env.serving():
        for task in env.taskset:
            episode = await env.run_slot(env.slots(task)[0], ctx)
            for trace in episode.traces:
                print(task.data.instance_id, trace.rewards, "ok" if episode.ok else episode.errors)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("tasks")
    ap.add_argument("mode", choices=["agent", "single_turn"])
    ap.add_argument("--model", required=True)
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--api-key-var", default="OPENAI_API_KEY")
    ap.add_argument("-n", type=int, default=1, help="tasks to run")
    args = ap.parse_args()
    env = load_environment(args.tasks, args.mode)
    env.taskset = env.taskset.take(args.n)
    ctx = vf.ModelContext(model=args.model, client=vf.EvalClientConfig(base_url=args.base_url,
                                                                      api_key_var=args.api_key_var))
    asyncio.run(run(env, ctx))
    return 0


if __name__ == "__main__":
    sys.exit(main())
