"""``madiao-mao``: train, evaluate, play, replay, match and bench from one console script.

Every command's options are one dataclass, parsed by tyro (help and defaults from the field
docstrings), checked in one place per command before any work starts; a user error is one line on
stderr and exit status 2. ``madiao_mao.cli.main`` routes a command to its module:

- ``madiao_mao.cli.train``: ``train`` (``TrainConfig``'s fields, each game's settings as a group);
- ``madiao_mao.cli.game_commands``: ``evaluate``, ``play``, ``match`` and ``replay`` (the shared
  options here, each game's own in its commands module);
- ``madiao_mao.cli.commands``: ``agents``, ``exploit``, ``scorecard``, ``expert-iteration``,
  ``serve`` and ``bench``.
"""
