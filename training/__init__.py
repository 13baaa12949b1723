"""Training and evaluation: the trainer, its two engines, and what the commands of ``madiao_mao.cli`` run."""

from cardgame_core.version import __version__

__all__ = ["__version__"]
