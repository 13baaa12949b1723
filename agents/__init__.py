"""The players of both games: scripted, searching and learned agents behind one call shape."""

from cardgame_core.version import __version__

__all__ = ["__version__"]
