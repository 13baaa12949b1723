"""Pretrained policies shipped with the package (a package so that setuptools installs the
``*.zip`` and ``*.npz`` files here as package data), saved without optimizer state by
``madiao_mao.training.sb3.model.export_policy``; ``madiao_mao.agents.registry.make_agent("model", game)``
loads them
(docs/results.md has how each was trained and how strong it is).

- ``madiao_selfplay.zip``: the Madiao policy of a ``madiao-mao train`` league run at the default
  settings, continued to 12M learner steps, then trained 20M learner steps more in a league that
  holds that policy as an anchor (32M in all, shipped in 36fd302), then fitted in three rounds of
  expert iteration to ``model-search``'s decisions (``madiao-mao expert-iteration``, 90,000
  decisions a round, no PPO).
- ``mao_selfplay.zip``: the Mao policy of ``madiao-mao train --game mao`` at the defaults, seed 1
  (warm start from the Bayesian player, then 250,000 PPO steps against base players and itself:
  the pool's snapshot slots play the live policy until the first snapshot, taken at the last
  step); it reads the default 8-event history observation and its seat's
  posterior over the secret rules (``madiao_mao.agents.mao.policy.BeliefPolicyAgent``).
- ``madiao_card_locations.npz``: the Madiao card-location model the search player samples deals
  from with ``search:sampler=learned`` (``madiao_mao.agents.madiao.card_locations``), fitted by
  ``python -m madiao_mao.training.madiao.card_locations fit --players heuristic model --decisions
  200000 --epochs 8 --seed 0`` when ``model`` was the Madiao policy shipped until 2026-11-30.
- ``mao_caller.json``: not a policy but the weights of the learned caller of Mao's players' calls
  (``madiao_mao.agents.mao.caller``, the ``caller`` agent), a logistic regression that loads with
  numpy alone; ``python -m madiao_mao.training.mao.caller fit --episodes 400 --seed 0 --out
  mao_caller.json`` makes it (the command is in the file).
"""
