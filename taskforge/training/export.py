"""Shards -> a trainer's own dataset shape (verl, TRL, OpenRLHF).

Each trainer reads a chat `prompt` column and hands every other column it was
given to the reward, its logs or both, so an export carries the prompt, the
`instance_id` the reward needs, and nothing that grades: the gold patch,
hidden tests and test patch never travel in a training dataset (TRL prints whole
rows in its warnings). Splits and their repositories come from the shard
manifest, so they stay keyed on stable repository names.

The prompt is single-turn: the statement plus the current text of the files the
removal touched. Prompt lengths are measured (with a tokenizer when given one,
else about 4 characters a token) against the trainer's prompt limit, since a
prompt past it is truncated or dropped by the trainer without a word.
"""
from __future__ import annotations

import gzip
import io
import os
import shutil
import statistics
import tarfile
import tempfile
from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel

from taskforge.errors import UserError
from taskforge.fsutil import atomic_write, readable
from taskforge.training.shards import policy_view, read_manifest, read_rows

INSTRUCTIONS = ("Answer with a unified diff against the repository root "
                "(paths like a/pkg/mod.py and b/pkg/mod.py) in a ```diff fenced block.")
DATA_SOURCE = "taskforge"


class Trainer(StrEnum):
    VERL = "verl"
    TRL = "trl"
    OPENRLHF = "openrlhf"


# The prompt limits the trainers apply when nobody sets one: verl's
# data.max_prompt_length, OpenRLHF's --data.max_len (prompt and response share
# it); TRL 1.16 cuts nothing, so there it is a typical model context.
DEFAULT_PROMPT_LIMIT = {Trainer.VERL: 512, Trainer.TRL: 4096, Trainer.OPENRLHF: 2048}
LIMIT_SETTING = {Trainer.VERL: "data.max_prompt_length",
                 Trainer.TRL: "the model's context length",
                 Trainer.OPENRLHF: "--data.max_len (prompt and response together)"}


class PromptLengths(BaseModel):
    counted_with: str                  # a tokenizer path, or "chars/4"
    limit: int
    min: int
    median: float
    p95: int
    max: int
    over_limit: int


class ExportSplit(BaseModel):
    split: str
    path: str                          # relative to the export directory
    rows: int
    prompt_tokens: PromptLengths | None = None


class ExportReport(BaseModel):
    trainer: Trainer
    out: str
    columns: list[str]
    splits: list[ExportSplit]
    shards_seed: int
    note: str = ""


def workspace_files(tgz: bytes, names: list[str]) -> dict[str, str]:
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(tgz))) as tar:
        out = {}
        for name in names:
            try:
                member = tar.extractfile(name)
                out[name] = member.read().decode("utf-8", "replace") if member else ""
            except KeyError:
                out[name] = ""          # a whole module removed: the file is gone
        return out


def render_prompt(view: dict) -> str:
    """The statement, the touched files as they are now, and the answer format."""
    parts = [view["problem_statement"].strip(), ""]
    for name, text in workspace_files(view["workspace_tgz"], view["touched_files"]).items():
        parts += [f"Current `{name}`:", "```python", text.rstrip(), "```", ""]
    parts.append(INSTRUCTIONS)
    return "\n".join(parts)


def record_for(trainer: Trainer, view: dict, split: str, index: int) -> dict:
    prompt = [{"role": "user", "content": render_prompt(view)}]
    iid = view["instance_id"]
    if trainer is Trainer.VERL:
        return {"data_source": DATA_SOURCE, "prompt": prompt, "ability": "coding",
                "reward_model": {"style": "rule", "ground_truth": iid},
                "extra_info": {"split": split, "index": index, "instance_id": iid},
                "instance_id": iid}
    return {"prompt": prompt, "instance_id": iid}        # TRL, OpenRLHF: label_key instance_id


def _lengths(prompts: list[list[dict]], tokenizer, name: str, limit: int) -> PromptLengths:
    if tokenizer is not None:
        counts = [len(tokenizer.apply_chat_template(p, tokenize=True, add_generation_prompt=True))
                  if getattr(tokenizer, "chat_template", None)
                  else len(tokenizer("\n".join(m["content"] for m in p))["input_ids"])
                  for p in prompts]
    else:
        counts = [sum(len(m["content"]) for m in p) // 4 + 1 for p in prompts]
    counts.sort()
    return PromptLengths(counted_with=name, limit=limit, min=counts[0],
                         median=statistics.median(counts),
                         p95=counts[min(len(counts) - 1, int(0.95 * len(counts)))],
                         max=counts[-1], over_limit=sum(c > limit for c in counts))


def _load_tokenizer(path: str | None):
    if not path:
        return None
    try:
        from transformers import AutoTokenizer
    except ImportError:
        raise UserError("--tokenizer needs the transformers package") from None
    try:
        return AutoTokenizer.from_pretrained(path)
    except Exception as exc:
        raise UserError(f"cannot load tokenizer {path}: {str(exc).splitlines()[0][:200]}") from None


USAGE = {
    Trainer.VERL: "python -m verl.trainer.main_ppo data.train_files={train} "
                  "data.max_prompt_length={limit} reward.custom_reward_function.path="
                  "examples/verl_reward.py reward.custom_reward_function.name=compute_score_async "
                  "++reward.custom_reward_function.reward_kwargs.tasks=SHARDS",
    Trainer.TRL: "datasets.load_dataset('parquet', data_files='{train}') with "
                 "GRPOTrainer(reward_funcs=[taskforge.training.rewards.trl_reward_func(tasks='SHARDS')])",
    Trainer.OPENRLHF: "--data.prompt_dataset {train} --data.input_key prompt "
                      "--data.label_key instance_id --data.apply_chat_template "
                      "--reward.remote_url http://HOST:8000/get_reward",
}


def export(shard_dir: str | Path, out: str | Path, trainer: Trainer | str,
           tokenizer: str | None = None, max_prompt_length: int | None = None,
           log=None) -> ExportReport:
    """Write `out/<split>.parquet` per split, a dataset card (README.md) and
    export.json, atomically (a temporary directory renamed into place)."""
    try:
        trainer = Trainer(trainer)
    except ValueError:
        raise UserError(f"unknown trainer {trainer!r} ({', '.join(t.value for t in Trainer)})") from None
    import pandas as pd

    manifest = read_manifest(shard_dir)
    limit = max_prompt_length or DEFAULT_PROMPT_LIMIT[trainer]
    tok = _load_tokenizer(tokenizer)
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UserError(f"output directory is not empty: {out}")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{out.name}-", dir=out.parent))
    try:
        splits: list[ExportSplit] = []
        columns: list[str] = []
        for split in manifest.split_rows:
            files = [Path(shard_dir) / f.path for f in manifest.shards if f.split == split]
            records = [record_for(trainer, policy_view(row), split, n)
                       for n, row in enumerate(read_rows(files))]
            if not records:
                continue
            columns = list(records[0])
            buf = io.BytesIO()
            pd.DataFrame(records).to_parquet(buf, index=False)
            atomic_write(tmp / f"{split}.parquet", buf.getvalue())
            lengths = _lengths([r["prompt"] for r in records], tok, tokenizer or "chars/4", limit)
            splits.append(ExportSplit(split=split, path=f"{split}.parquet", rows=len(records),
                                      prompt_tokens=lengths))
            if log:
                log(f"{split}.parquet: {len(records)} rows; prompt tokens median "
                    f"{lengths.median:.0f}, max {lengths.max}, {lengths.over_limit} over {limit}")
        if not splits:
            raise UserError(f"no rows in {shard_dir}")
        over = sum(s.prompt_tokens.over_limit for s in splits if s.prompt_tokens)
        note = (f"{over} prompt(s) exceed the prompt limit of {limit} tokens: raise "
                f"{LIMIT_SETTING[trainer]} or they are cut") if over else ""
        report = ExportReport(trainer=trainer, out=str(out), columns=columns, splits=splits,
                              shards_seed=manifest.seed, note=note)
        atomic_write(tmp / "export.json", report.model_dump_json(indent=2) + "\n")
        atomic_write(tmp / "README.md", dataset_card(report, manifest, limit))
        readable(tmp)
        if out.exists():
            out.rmdir()
        os.replace(tmp, out)
        return report
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def dataset_card(report: ExportReport, manifest, limit: int) -> str:
    train = Path(report.out) / next((s.path for s in report.splits if s.split == "train"),
                                    report.splits[0].path)
    lines = [f"# taskforge tasks for {report.trainer.value}", "",
             "Feature-reimplementation tasks cut from real repositories by taskforge "
             f"{manifest.taskforge_version}. Each row is one task: the policy sees `prompt`; "
             "the reward grades the answer (a unified diff) against hidden tests by "
             "`instance_id`. No grading material (gold patch, hidden tests) is in this "
             "dataset.", "",
             "| split | rows | prompt tokens (median / p95 / max) | over the limit |",
             "|---|---|---|---|"]
    for s in report.splits:
        p = s.prompt_tokens
        assert p is not None                # export() measures every split it writes
        lines.append(f"| {s.split} | {s.rows} | {p.median:.0f} / {p.p95} / {p.max} | "
                     f"{p.over_limit} of {s.rows} (limit {limit}) |")
    lines += ["", f"Columns: {', '.join(f'`{c}`' for c in report.columns)}.",
              f"Splits are by repository (seed {manifest.seed}); repositories: "
              + ", ".join(f"`{r}` ({s})" for r, s in sorted(manifest.repos.items())) + ".", "",
              "Use:", "", "```", USAGE[report.trainer].format(train=train, limit=limit), "```", ""]
    if report.note:
        lines += [f"**Note:** {report.note}.", ""]
    lines += ["Prompt tokens counted with " + (report.splits[0].prompt_tokens.counted_with
                                               if report.splits[0].prompt_tokens else "-") + ".", ""]
    return "\n".join(lines)

