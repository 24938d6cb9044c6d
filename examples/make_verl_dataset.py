"""Turn taskforge shards into verl's RL data format, one Parquet file per split:
data_source, prompt (chat messages), ability, reward_model {style,
ground_truth}, extra_info.

    python examples/make_verl_dataset.py SHARD_DIR OUT_DIR

The prompt is built from the columns a policy may see (shards.POLICY_COLUMNS):
the problem statement and the current text of the files the removal touched.
The gold patch and hidden tests never reach it. Single-turn prompts like this
suit small repositories; an agentic set-up hands the policy the whole
workspace (the workspace_tgz column) instead.
"""
from __future__ import annotations

import gzip
import io
import sys
import tarfile
from pathlib import Path

import pandas as pd

from taskforge.shards import policy_view, read_manifest, read_rows

INSTRUCTIONS = ("Answer with a unified diff against the repository root "
                "(paths like a/pkg/mod.py and b/pkg/mod.py) in a ```diff fenced block.")


def workspace_files(tgz: bytes, names: list[str]) -> dict[str, str]:
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(tgz))) as tar:
        out = {}
        for name in names:
            try:
                out[name] = tar.extractfile(name).read().decode("utf-8", "replace")
            except KeyError:
                out[name] = ""          # a whole module removed: the file is gone
        return out


def render_prompt(view: dict) -> str:
    parts = [view["problem_statement"].strip(), ""]
    for name, text in workspace_files(view["workspace_tgz"], view["touched_files"]).items():
        parts += [f"Current `{name}`:", "```python", text.rstrip(), "```", ""]
    parts.append(INSTRUCTIONS)
    return "\n".join(parts)


def main(shard_dir: str, out_dir: str) -> int:
    manifest = read_manifest(shard_dir)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for split in manifest.split_rows:
        files = [Path(shard_dir) / f.path for f in manifest.shards if f.split == split]
        records = []
        for n, row in enumerate(read_rows(files)):
            view = policy_view(row)
            records.append({
                "data_source": "taskforge",
                "prompt": [{"role": "user", "content": render_prompt(view)}],
                "ability": "coding",
                "reward_model": {"style": "rule", "ground_truth": row.instance_id},
                "extra_info": {"split": split, "index": n, "instance_id": row.instance_id,
                               "tasks": str(Path(shard_dir).resolve())},
            })
        if records:
            pd.DataFrame(records).to_parquet(out / f"{split}.parquet", index=False)
            print(f"{out / f'{split}.parquet'}: {len(records)} rows")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
