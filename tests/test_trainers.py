"""The trainers' own packages, driven the way the README tells a user to:
verl's reward manager on a real DataProto, composed from the README's command
line with verl's own config; a real TRL GRPOTrainer step with taskforge's
reward on a tiny local model. CPU only (torch 2.13 CPU build); `pip install -e
'.[trainers]'` installs them (verl without its GPU dependencies)."""
from __future__ import annotations

import asyncio
import re
import shlex
from pathlib import Path

import pytest

from tests.conftest import CLI, ROOT

pytestmark = pytest.mark.trainers


def byte_tokenizer(path: Path) -> Path:
    """A byte-level tokenizer built here (no hub): any text encodes and decodes back
    exactly, so a response decodes to the answer it was made from."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    tk = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(alphabet)}, merges=[]))
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tk.decoder = decoders.ByteLevel()
    fast = PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="<|pad|>", eos_token="<|eos|>",
                                   additional_special_tokens=["<|user|>", "<|assistant|>"])
    fast.chat_template = ("{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}"
                          "{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}")
    fast.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory):
    return byte_tokenizer(tmp_path_factory.mktemp("tokenizer"))


def readme_command(marker: str) -> list[str]:
    """The shell words of the first ```bash block after `marker` in README.md."""
    text = (ROOT / "README.md").read_text()
    block = text[text.index(marker):].split("```bash\n", 1)[1].split("```", 1)[0]
    return shlex.split(block.replace("\\\n", " "), comments=True)


def gold_answer(task: Path) -> str:
    return "Here it is.\n\n```diff\n" + (task / "gold.patch").read_text() + "```\n"


def test_verl_reward_manager_grades_through_the_readme_config(tasks, shard_dir, tokenizer_dir):
    """verl 0.9 reads `reward.custom_reward_function.*`; the README's keys used to be
    the old top-level ones, which this release ignores. Compose the README's
    command line with verl's own config, load the reward manager verl would, and
    grade DataProto samples: gold 1, nothing 0."""
    import numpy as np
    import torch
    import verl
    from hydra import compose, initialize_config_dir
    from transformers import AutoTokenizer
    from verl import DataProto
    from verl.trainer.ppo.reward import load_reward_manager

    out, ids = tasks
    words = readme_command("**verl** (0.9.x")
    assert words[:3] == ["taskforge", "export", "shards/"]
    main = words.index("verl.trainer.main_ppo")
    overrides = [w.replace("$PWD/shards", str(shard_dir)).replace("examples/", f"{ROOT}/examples/")
                 for w in words[main + 1:] if re.match(r"^(\+\+)?(reward|data)\.", w)]
    assert any(o.startswith("reward.custom_reward_function.name=") for o in overrides)
    config_dir = Path(verl.__file__).parent / "trainer" / "config"
    with initialize_config_dir(config_dir=str(config_dir), version_base=None):
        cfg = compose(config_name="ppo_trainer", overrides=overrides)
    tok = AutoTokenizer.from_pretrained(tokenizer_dir)

    def sample(answer: str, iid: str) -> DataProto:
        prompt = tok("<|user|>fix it<|assistant|>")["input_ids"]
        resp = tok(answer)["input_ids"] or [tok.pad_token_id]
        n = len(resp) if answer else 0
        return DataProto.from_dict(
            tensors={"prompts": torch.tensor([prompt]), "responses": torch.tensor([resp]),
                     "attention_mask": torch.tensor([[1] * len(prompt) + [1] * n
                                                     + [0] * (len(resp) - n)])},
            non_tensors={"data_source": np.array(["taskforge"], dtype=object),
                         "reward_model": np.array([{"ground_truth": iid}], dtype=object),
                         "extra_info": np.array([{"instance_id": iid}], dtype=object)})

    async def grade():
        manager = load_reward_manager(cfg, tok)        # inside the loop, as verl's worker does
        batch = [sample(gold_answer(out / ids[0]), ids[0]), sample("", ids[0]),
                 sample(gold_answer(out / ids[1]), ids[1]), sample("no idea", ids[1])]
        return await asyncio.gather(*(manager.run_single(d) for d in batch))

    results = asyncio.run(grade())
    assert [r["reward_score"] for r in results] == [1.0, 0.0, 1.0, 0.0]
    extra = results[0]["reward_extra_info"]
    assert extra["resolved"] == 1.0 and extra["infra_error"] == 0.0 and extra["f2p_frac"] == 1.0


def test_trl_grpo_step_with_taskforge_reward(shard_dir, tokenizer_dir, tmp_path):
    """A real GRPOTrainer step on CPU: a tiny random Qwen2, the `taskforge export
    --to trl` dataset, `trl_reward_func` as the reward. TRL hands every dataset
    column to the reward function: only the prompt and the id may be there."""
    import subprocess

    import datasets
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM
    from trl import GRPOConfig, GRPOTrainer

    from taskforge.training.rewards import trl_reward_funcs

    data = tmp_path / "trl"
    res = subprocess.run([*CLI, "export", str(shard_dir), "--to", "trl", "--out", str(data)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    dataset = datasets.load_dataset("parquet", data_files=str(data / "train.parquet"),
                                    split="train", cache_dir=str(tmp_path / "hf"))
    tok = AutoTokenizer.from_pretrained(tokenizer_dir)
    model = Qwen2ForCausalLM(Qwen2Config(
        vocab_size=len(tok), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=32768,
        pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id))
    reward, *metrics = trl_reward_funcs(tasks=str(shard_dir), workers=2)
    seen: list[set[str]] = []
    graded: list[int] = []

    def taskforge_reward(prompts=None, completions=None, **kwargs):
        seen.append(set(kwargs))
        graded.append(len(completions))
        return reward(prompts=prompts, completions=completions, **kwargs)

    # The README's set-up: the reward trains, the metrics (weight 0) are only logged.
    args = GRPOConfig(output_dir=str(tmp_path / "run"), per_device_train_batch_size=2,
                      num_generations=2, max_completion_length=8, max_steps=1, logging_steps=1,
                      use_cpu=True, report_to=[], save_strategy="no", bf16=False, seed=0,
                      reward_weights=[1.0, 0.0, 0.0, 0.0])
    trainer = GRPOTrainer(model=model, args=args, train_dataset=dataset, processing_class=tok,
                          reward_funcs=[taskforge_reward, *metrics])
    trainer.train()
    assert seen and all("instance_id" in s for s in seen)
    assert not any(s & {"patch", "test_patch", "hidden_tgz", "FAIL_TO_PASS"} for s in seen), seen
    logged = {k: v for h in trainer.state.log_history for k, v in h.items() if "reward" in k}
    assert logged.get("rewards/taskforge_reward/mean") == 0.0, logged
    for name in ("taskforge_resolved", "taskforge_f2p_frac", "taskforge_infra_error"):
        assert logged.get(f"rewards/{name}/mean") == 0.0, (name, logged)


def test_openrlhf_client_burst_gets_every_reward(tasks, tmp_path):
    """OpenRLHF 0.11's own client (SingleTurnAgentExecutor) retries a refused
    request 5 times, 1 s apart, and gives up after 180 s: a burst of 100 answers
    against the old default queue (64) came back with 32 None rewards. Now the burst
    queues and every answer is graded within the client's limits: gold 1, wrong 0."""
    import time

    from openrlhf.utils.agent import SingleTurnAgentExecutor

    from tests.test_reward import gold_answer as gold
    from tests.test_server import server

    out, ids = tasks
    prompt = "<|user|>fix it<|assistant|>"
    answers = []
    for i in range(100):                # distinct texts: no two answers are the same request
        iid = ids[i % len(ids)]
        good = i % 2 == 0
        answers.append((iid, good, prompt + f"Attempt {i}.\n" + (gold(out / iid) if good else
                                                                   "I could not do it.")))
    with server(out, tmp_path) as base:
        executor = SingleTurnAgentExecutor(remote_rm_url=base + "/get_reward")

        async def burst():
            return await asyncio.gather(*(executor._fetch_rewards_via_http([q], [prompt], [iid])
                                          for iid, _, q in answers), return_exceptions=True)

        t0 = time.monotonic()
        replies = asyncio.run(burst())
        seconds = time.monotonic() - t0
    failed = [r for r in replies if isinstance(r, BaseException)]
    assert not failed, (len(failed), failed[:1])
    rewards = [r[0]["rewards"][0] for r in replies]
    assert None not in rewards
    assert rewards == [1.0 if good else 0.0 for _, good, _ in answers], rewards
    assert seconds < 180, seconds
    # The README's command line names flags this OpenRLHF release has.
    import openrlhf

    words = readme_command("**OpenRLHF** (0.11")
    main = words.index("openrlhf.cli.train_ppo_ray")
    flags = [w for w in words[main + 1:] if w.startswith("--")]
    parser_src = (Path(openrlhf.__file__).parent / "cli" / "train_ppo_ray.py").read_text()
    assert {"--reward.remote_url", "--data.label_key", "--data.prompt_dataset"} <= set(flags)
    assert [f for f in flags if f'"{f}"' not in parser_src] == []
