"""Ray RLlib as the scale-out engine of the trainer (``madiao-mao train --engine rllib``).

- ``config``: the run's ``TrainConfig`` as an RLlib ``PPOConfig`` (new API stack);
- ``env``: the batched Numba games as one gymnasium vector env (the learner's seat, opponents inside);
- ``runner``: ``CardGameEnvRunner``, the ``SingleAgentEnvRunner`` subclass that steps it and holds
  the opponents (scripted, the live policy, snapshots, the league's members);
- ``module``: the PPO RLModule with action masking, and its TorchScript export;
- ``run``: the training loop and the run-folder contract (checkpoints, resume, league, report);
- ``cli``: the ``--engine``/``--address``/``--num-env-runners``/``--envs-per-runner`` options.

Importing this package does not import Ray (only ``config``, ``env``, ``runner`` and ``module`` do).
See ``docs/scaling-out.md``.
"""
