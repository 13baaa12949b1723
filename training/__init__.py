"""Training, evaluation and the ``madiao-mao`` command line."""

from cardgame_core.version import __version__

__all__ = ["__version__"]
