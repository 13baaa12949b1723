"""High card's benchmark subjects (``madiao_mao.benchmarks.subjects``): its AEC and batched envs."""

from madiao_mao.benchmarks.subjects import GameSubjects

SUBJECTS = GameSubjects(aec_env="tests.tiny_game.env:raw_env", vector_env="tests.tiny_game.env:TinyVectorEnv")
