"""Mao in the trainer: held-out-rule evaluation, play, its commands and scorecard."""
