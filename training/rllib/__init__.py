"""Ray RLlib as the scale-out engine of the trainer (``madiao-mao train --engine rllib``).

- ``config``: the run's ``TrainConfig`` as an RLlib ``PPOConfig`` (new API stack);
- ``env``: the batched Numba games as one gymnasium vector env (the learner's seat, opponents inside);
- ``runner``: ``CardGameEnvRunner``, the ``SingleAgentEnvRunner`` subclass that steps it and holds
  the opponents (scripted, the live policy, snapshots, the league's members);
- ``bulk_episodes``: the runner's episodes built from whole arrays at the end of a sampling call;
- ``module``: the PPO RLModule with action masking, and its export (a ``torch.export`` program);
- ``learner``: the PPO learner (in the driver, or ``--num-learners`` data-parallel actors);
- ``run``: the training loop and the run-folder contract (checkpoints, resume, league, report);
- ``options``: ``EngineOptions``, where and how wide a run samples (the ``--address``/
  ``--num-env-runners``/``--envs-per-runner``/``--num-learners``/``--cpus-per-learner`` flags);
- ``cli``: whether ``train`` runs on RLlib, and ``evaluate --engine ray``.

Importing this package does not import Ray (only ``config``, ``env``, ``runner``,
``bulk_episodes``, ``module`` and ``learner`` do).
See ``docs/scaling-out.md``.
"""
