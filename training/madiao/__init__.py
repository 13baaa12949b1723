"""Madiao in the trainer: duplicate evaluation, batched games, its commands and scorecard."""
