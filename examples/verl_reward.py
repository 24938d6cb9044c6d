"""The file verl's reward config points at (verl 0.9.x, the reward loop):

    reward.custom_reward_function.path=examples/verl_reward.py
    reward.custom_reward_function.name=compute_score_async
    ++reward.custom_reward_function.reward_kwargs.tasks=/data/taskforge-shards
    ++reward.custom_reward_function.reward_kwargs.workers=8

verl's reward loop awaits compute_score_async(data_source, solution_str,
ground_truth, extra_info, **reward_kwargs), many at once, and gets {"score",
"resolved", "infra_error", "f2p_frac"}. `compute_score` is the same, one answer
per call; `compute_score_batch` fits verl's legacy BatchRewardManager. An
infrastructure failure raises unless reward_kwargs.infra_score (or
$TASKFORGE_INFRA_SCORE) gives a flagged score to use instead.
"""
from taskforge.training.rewards import compute_score, compute_score_async, compute_score_batch

__all__ = ["compute_score", "compute_score_async", "compute_score_batch"]
