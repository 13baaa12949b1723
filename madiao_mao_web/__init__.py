"""``madiao-mao serve``: a local web app to play every registered game against the agents and to
replay recorded games (``app``: the FastAPI routes; ``games``: live games, the seat's view and
the protocol of a game's web module, ``madiao_mao_web.<game>``; ``replays``: recorded games step
by step; ``page``: the page, with every game's forms and script; ``store``: live games bounded
in number and age; ``security``: who may send requests, what bodies are read, the headers of
every response; ``static/``: the page's template, script and stylesheet). Needs the ``web``
extra.
"""

from cardgame_core.version import __version__

__all__ = ["__version__"]
