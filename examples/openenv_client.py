"""OpenEnv: openenv-core's own client against `taskforge serve --openenv`. Opens an
episode of a task, lists the tools, runs a command, submits (reward 0: nothing done).

    pip install 'taskforge[openenv]'
    taskforge serve --tasks TASKS_DIR --openenv &           # http://127.0.0.1:8000
    python examples/openenv_client.py INSTANCE_ID [http://127.0.0.1:8000]
"""
from __future__ import annotations

import sys

from openenv.core import GenericEnvClient


def main() -> int:
    iid = sys.argv[1]
    base = sys.argv[2] if len(sys.argv) > 2 else "http://127.0.0.1:8000"
    with GenericEnvClient(base_url=f"{base}/openenv").sync() as env:
        first = env.reset(instance_id=iid)
        print(first.observation["problem_statement"][:300])
        tools = env.step({"type": "list_tools"}).observation["tools"]
        print("tools:", [t["name"] for t in tools])
        r = env.step({"type": "call_tool", "tool_name": "bash", "arguments": {"command": "ls"}})
        print(r.observation["result"]["output"])
        r = env.step({"type": "call_tool", "tool_name": "submit", "arguments": {}})
        print("reward", r.reward, "done", r.done)
        return 0 if r.done and r.reward == 0.0 else 1


if __name__ == "__main__":
    sys.exit(main())
