"""The file verl's `custom_reward_function.path` points at.

    custom_reward_function.path=examples/verl_reward.py
    custom_reward_function.name=compute_score              # NaiveRewardManager
    # or, graded concurrently:
    reward_model.reward_manager=batch
    custom_reward_function.name=compute_score_batch
    ++custom_reward_function.reward_kwargs.tasks=/data/taskforge-shards
    ++custom_reward_function.reward_kwargs.workers=8

verl calls compute_score(data_source, solution_str, ground_truth, extra_info,
**reward_kwargs) and gets {"score", "resolved", "infra_error", "f2p_frac"}.
An infrastructure failure raises unless reward_kwargs.infra_score (or
$TASKFORGE_INFRA_SCORE) gives a flagged score to use instead.
"""
from taskforge.rewards import compute_score, compute_score_batch

__all__ = ["compute_score", "compute_score_batch"]
