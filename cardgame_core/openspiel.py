"""What both games' OpenSpiel games share (``madiao_env.openspiel_game``, ``mao_env.openspiel_game``).

OpenSpiel is optional (the ``openspiel`` extra): importing this module without it raises an
``ImportError`` that names the extra. Nothing here registers a game; each game module registers
its own when the user imports it.

Here: the game parameters as the options object of a game (:func:`parameter_specification`,
:func:`options_from_parameters`); observers whose tensors are the project's observation layouts
(:class:`LayoutObserver`); the returns and rewards bookkeeping of a state
(:class:`CardGameState`); a project agent as an OpenSpiel bot (:class:`AgentBot`).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

try:
    import pyspiel
except ImportError as error:  # the optional dependency
    raise ImportError(
        "the OpenSpiel games need OpenSpiel (the open_spiel package): pip install 'madiao-mao[openspiel]'"
    ) from error

__all__ = [
    "AgentBot",
    "CardGameState",
    "LayoutObserver",
    "checked_player",
    "options_from_parameters",
    "parameter_specification",
    "register",
    "wants_information_state",
]


# ----------------------------------------------------------------------------- parameters
def parameter_specification(options: type, renamed: Mapping[str, str] | None = None) -> dict[str, Any]:
    """OpenSpiel's parameter specification of an options dataclass: each field under its own name
    (or ``renamed[field]``) with its default value, which also gives OpenSpiel the parameter's type."""
    renamed = renamed or {}
    return {renamed.get(field.name, field.name): field.default for field in dataclasses.fields(options)}


def options_from_parameters(
    parameters: Mapping[str, Any], specification: Mapping[str, Any], make_options: Callable[..., Any]
) -> Any:
    """``make_options(**values)``: the game's options object (which checks each value and names a
    bad one) from its parameters, the specification's defaults where one is missing; ``ValueError``
    for a parameter the game does not have."""
    unknown = sorted(set(parameters) - set(specification))
    if unknown:
        raise ValueError(f"unknown game parameter(s) {unknown}; parameters: {sorted(specification)}")
    return make_options(**{**specification, **parameters})


def card_game_type(
    short_name: str,
    long_name: str,
    *,
    utility: Any,
    reward_model: Any,
    players: tuple[int, int],
    information_state: bool,
    parameters: dict[str, Any],
) -> pyspiel.GameType:
    """The ``GameType`` of one of the card games here: sequential, dealt at explicit chance nodes,
    of imperfect information, with observation strings and tensors (information-state ones too
    where ``information_state``); ``players`` is (fewest, most)."""
    return pyspiel.GameType(
        short_name=short_name,
        long_name=long_name,
        dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
        chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
        information=pyspiel.GameType.Information.IMPERFECT_INFORMATION,
        utility=utility,
        reward_model=reward_model,
        max_num_players=players[1],
        min_num_players=players[0],
        provides_information_state_string=information_state,
        provides_information_state_tensor=information_state,
        provides_observation_string=True,
        provides_observation_tensor=True,
        parameter_specification=parameters,
    )


def register(game_type: pyspiel.GameType, game_class: type) -> None:
    """Register a game with OpenSpiel once per process (a reloaded module does not register twice)."""
    if game_type.short_name not in pyspiel.registered_names():
        pyspiel.register_game(game_type, game_class)


# ----------------------------------------------------------------------------- observers
def wants_information_state(iig_obs_type: Any, params: Any, info_state: bool) -> bool:
    """Whether an OpenSpiel observer request (``make_py_observer``'s arguments) asks for the
    information state (True) or the observation (False); ``ValueError`` for what a game does not
    provide: another player's private information, public information only, observer parameters,
    or an information state from a game that has none (``info_state`` False)."""
    if isinstance(iig_obs_type, Mapping):  # OpenSpiel called make_py_observer(params)
        iig_obs_type, params = None, iig_obs_type
    if params:
        raise ValueError(f"observer parameters are not supported; got {dict(params)}")
    if iig_obs_type is None:
        return False
    if iig_obs_type.private_info != pyspiel.PrivateInfoType.SINGLE_PLAYER or not iig_obs_type.public_info:
        raise ValueError(
            "only the acting player's own view is provided (public_info=True, private_info=SINGLE_PLAYER), "
            f"not {iig_obs_type}"
        )
    if iig_obs_type.perfect_recall and not info_state:
        raise ValueError("this game provides no information state (perfect_recall=True); use the observation")
    return bool(iig_obs_type.perfect_recall)


class LayoutObserver:
    """An OpenSpiel observer (the interface of ``open_spiel.python.observation``: ``tensor``,
    ``dict``, ``set_from``, ``string_from``) whose tensor is one of the project's observation layouts.

    ``pieces`` are the layout's named pieces in order, ``(name, shape)``; ``dict[name]`` is the
    piece's view of the flat float32 ``tensor``. ``write(state, player, tensor)`` fills the tensor
    with ``player``'s view of ``state``. The string lists, piece by piece, the nonzero entries
    (``name=i,j:v``: index ``i`` is 1, index ``j`` holds ``v``), so two views have the same string
    exactly when they have the same tensor.
    """

    def __init__(
        self,
        pieces: Sequence[tuple[str, tuple[int, ...]]],
        write: Callable[[Any, int, np.ndarray], None],
    ) -> None:
        self.tensor = np.zeros(sum(math.prod(shape) for _, shape in pieces), dtype=np.float32)
        self.dict: dict[str, np.ndarray] = {}
        self._names = [name for name, _ in pieces]
        self._starts = np.cumsum([0] + [math.prod(shape) for _, shape in pieces])
        for name, start, stop in zip(self._names, self._starts[:-1], self._starts[1:], strict=True):
            self.dict[name] = self.tensor[start:stop].reshape(dict(pieces)[name])
        self._write = write

    def set_from(self, state: Any, player: int) -> None:
        self._write(state, player, self.tensor)

    def string_from(self, state: Any, player: int) -> str:
        self.set_from(state, player)
        nonzero = np.flatnonzero(self.tensor)
        pieces = np.searchsorted(self._starts, nonzero, side="right") - 1
        offsets = (nonzero - self._starts[pieces]).tolist()
        values = self.tensor[nonzero].tolist()
        # nonzero is sorted, so each piece's entries are one run of it
        runs = np.flatnonzero(np.diff(pieces, prepend=-1, append=-1)).tolist()
        parts = []
        for begin, end in itertools.pairwise(runs):
            entries = [
                str(offsets[k]) if values[k] == 1 else f"{offsets[k]}:{values[k]:g}"
                for k in range(begin, end)
            ]
            parts.append(f"{self._names[int(pieces[begin])]}={','.join(entries)}")
        return " ".join(parts)


# ----------------------------------------------------------------------------- returns and rewards
def checked_player(player: Any, n_players: int) -> int:
    """``player`` as a seat number, or a ``ValueError`` naming it (the kernels index with it unchecked)."""
    if isinstance(player, bool) or not isinstance(player, (int, np.integer)) or not 0 <= player < n_players:
        raise ValueError(f"player must be a seat 0..{n_players - 1}, got {player!r}")
    return int(player)


class CardGameState(pyspiel.State):
    """Returns and rewards of a game whose engine pays during the game, as OpenSpiel reads them.

    ``returns()`` is everything paid so far; ``rewards()`` what was paid since the last player
    decision: the action and the chance outcomes that followed it (a deal drawn by chance nodes
    after a player's redeal belongs to that action), which is what OpenSpiel's random simulation
    test and ``rl_environment`` add up at each decision. A subclass credits payments with
    :meth:`_credit` and calls :meth:`_start_transition` before applying a player's action.
    """

    def __init__(self, game: pyspiel.Game) -> None:
        super().__init__(game)
        self._returns = [0.0] * game.num_players()
        self._rewards = [0.0] * game.num_players()

    def returns(self) -> list[float]:
        return list(self._returns)

    def rewards(self) -> list[float]:
        return list(self._rewards)

    def _start_transition(self) -> None:
        for seat in range(len(self._rewards)):
            self._rewards[seat] = 0.0

    def _credit(self, amounts: Sequence[float]) -> None:
        for seat, amount in enumerate(amounts):
            self._returns[seat] += float(amount)
            self._rewards[seat] += float(amount)


# ----------------------------------------------------------------------------- bots
class AgentBot(pyspiel.Bot):
    """A project agent (``madiao_mao.agents.registry.make_agent``) playing one seat as an OpenSpiel bot.

    At each decision it gets the seat's observation and mask as the PettingZoo env gives them
    (``state.agent_observation(player)``, which both games' states provide) and returns
    ``agent.act(observation, mask)``; ``restart`` forgets the agent's per-game memory.
    """

    def __init__(self, agent: Any, player_id: int) -> None:
        pyspiel.Bot.__init__(self)
        self._agent = agent
        self._player_id = int(player_id)

    def player_id(self) -> int:
        return self._player_id

    def restart(self) -> None:
        self._agent.reset()

    def restart_at(self, state: pyspiel.State) -> None:
        self._agent.reset()

    def provides_policy(self) -> bool:
        return False

    def step(self, state: pyspiel.State) -> int:
        view = state.agent_observation(self._player_id)
        return int(self._agent.act(view["observation"], view["action_mask"]))
