"""The fast learner engine (``madiao-mao train --engine fast``): the SB3 engine's model, run folder,
opponents and callback, trained by the project's own batched PPO loop (``madiao_mao.training.fast.ppo``,
``madiao_mao.training.fast.train``)."""
