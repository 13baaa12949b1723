"""Mao's benchmark subjects (``madiao_mao.benchmarks.subjects``)."""

from __future__ import annotations

from madiao_mao.benchmarks.subjects import GameSubjects, Goals

SUBJECTS = GameSubjects(
    aec_env="mao_env.mao_v0:env",
    vector_env="mao_env.vector:MaoVectorEnv",
    gymnasium_id="mao_env:GYMNASIUM_ID",
    goals=Goals(
        aec_share=0.60,
        batched_steps=1e6,
        large_batch_share=1.0,
        gymnasium_share=0.90,
        cold_start_seconds=20,
        warm_start_seconds=2,
        # Issue 32: "Mao >= 10x the SB3 engine's" learner steps/s.
        fast_training_over_sb3=10.0,
    ),
)
