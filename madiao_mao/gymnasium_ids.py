"""The Gymnasium ids of the registered games, registered in one loop over ``madiao_mao.games``.

A game's id is ``madiao_mao/<Name>-v0`` (``madiao_mao/Madiao-v0``, ``madiao_mao/Mao-v0``):
``gymnasium.make`` builds a single-learner env of it and ``gymnasium.make_vec`` the batched one
(``madiao_mao.training.gymnasium_envs``, imported only then). Importing a game's env package
registers every registered game's id, so ``gymnasium.make("madiao_env:madiao_mao/Madiao-v0")``
works as Gymnasium's ``module:id`` form promises; a game registered later gets its id from a
further call of :func:`register_gymnasium_ids`.
"""

from __future__ import annotations

import gymnasium

from madiao_mao.games import game_names

#: The module whose ``make_<game>`` and ``make_<game>_vector`` ``gymnasium.make`` and
#: ``gymnasium.make_vec`` call.
ENTRY_POINTS = "madiao_mao.training.gymnasium_envs"


def gymnasium_id(game: str) -> str:
    """The Gymnasium id of ``game`` (a registered game's name)."""
    return f"madiao_mao/{game.capitalize()}-v0"


def register_gymnasium_ids() -> None:
    """Register the id of every registered game not registered yet (a second call, or a reload of
    an env package, registers nothing twice: Gymnasium would warn)."""
    for game in game_names():
        if gymnasium_id(game) not in gymnasium.registry:
            gymnasium.register(
                gymnasium_id(game),
                entry_point=f"{ENTRY_POINTS}:make_{game}",
                vector_entry_point=f"{ENTRY_POINTS}:make_{game}_vector",
            )
