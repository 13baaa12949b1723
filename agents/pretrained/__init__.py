"""Pretrained policies shipped with the package (a package so that setuptools installs the
``*.zip`` files here as package data). ``madiao_selfplay.zip``: the Madiao policy of a
``madiao-mao train`` league run at the default settings, continued to 12M learner steps
(docs/results.md), saved without optimizer state by ``training.train.export_policy``;
``agents.registry.make_agent("model")`` loads it."""
