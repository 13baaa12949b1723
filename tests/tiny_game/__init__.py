"""High card, a tiny three-seat card game registered in tests as a third game (issue 22).

It proves that a game is one ``madiao_mao.games.Game`` entry: its env, agents and trainer modules
live here and nothing generic names it. The rules (``tests.tiny_game.env``): six cards, one dealt
to each seat; everyone antes 1; seats 0, 1 and 2 act once each, in turn: fold (lose the ante),
play (stake 1 more) or raise (stake 2 more); the highest card still in takes every stake, and if
everyone folds the antes go back. Its web module (``tests.tiny_game.web``) serves it in the web
app and its benchmarks module (``tests.tiny_game.benchmarks``) names its envs to the benchmarks.
"""

from __future__ import annotations

from madiao_mao.games import Game

GAME = Game(
    name="tiny",
    title="High card (test game)",
    env="tests.tiny_game.env",
    agents="tests.tiny_game.agents",
    training="tests.tiny_game.training",
    web="tests.tiny_game.web",
    benchmarks="tests.tiny_game.benchmarks",
)
