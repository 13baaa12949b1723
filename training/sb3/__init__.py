"""The SB3 engine of the trainer (``madiao-mao train``, the default ``--engine sb3``).

- ``train``: the training run, top to bottom (open the run, opponents, env, model, warm start,
  learn, finish) and its final report;
- ``model``: the MaskablePPO model of a config (policy, optimizer, learning-rate schedule) and
  ``export_policy``, the inference-only copy of a trained one;
- ``adapter``: ``LearnerVecEnv``, the learner's seat of the batched games as an SB3 ``VecEnv``;
- ``wrappers``: the learner env's wrappers the game specs add (Mao's hand-size reward and belief
  inputs);
- ``callback``: what a run shows and saves between rollouts;
- ``imitation``: the warm start (a scripted teacher's moves cloned before PPO).

The run folder it writes is ``madiao_mao.training.run_folder``'s, the same as the RLlib engine's
(``madiao_mao.training.rllib``).
"""
