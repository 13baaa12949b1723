"""Mao as an OpenSpiel game: ``import mao_env.openspiel_game`` registers ``"mao"``.

Needs OpenSpiel (the ``openspiel`` extra); importing this module registers the game, nothing else
does. Then ``pyspiel.load_game("mao")`` (or ``"mao(players=3,max_steps=500)"``) works with
OpenSpiel's algorithms, and :func:`load_game` does the same from Python options.

The rules are the project's: every state holds the arrays of one game (``mao_env.state``) and
moves through the Numba kernels of ``mao_env.core`` exactly as the PettingZoo env does (the same
kernel calls); nothing here knows a rule of Mao.

Players and actions
-------------------
``players`` seats (the env's ``n_players``, default 4, 2..8); the 137 actions are the env's
sub-actions (``play 9D``, ``draw``, ``say last-card``, ``end``, calls, ``rule 12``:
``mao_env.cards.action_to_text``), legal where the env's mask allows them.

Chance
------
Mao's randomness is the engine's random stream: it shuffles the deck for the deal, reshuffles the
pile into a new stock whenever the stock runs out (inside a single draw: a penalty of several
cards can straddle a reshuffle) and draws sampled rules. No card can be drawn by a chance node
at the moment it leaves the stock, because only the engine knows when that is; so chance draws
the stream's 64-bit state at the start, one byte per chance node (8 nodes of 256 equally likely
outcomes), and the engine starts the game from it as the env's ``reset`` does from the state it
draws. Drawing all of a game's randomness at the start and keeping it hidden is the same game as
drawing it when needed (a shuffled deck dealt at the start, with the reshuffles included).

Observations
------------
The observation is the env's (``obs_type``, ``n_events``, ``reasons``, as set): the table state
and the last ``n_events`` public events (``mao_env.layout``); the tensor's pieces are the layout's
(``hand``, ``top``, ..., and ``events`` shaped ``[n_events, features]``), the string lists each
piece's nonzero entries. There is no information state: a game runs to thousands of sub-actions
and the project has no perfect-recall view of it, only the window of recent events (OpenSpiel's
RL algorithms use the observation when a game has no information state). At a chance node the
observation is zeros.

Returns
-------
General-sum rewards during the game, as the env's: ``win_reward`` to a round's winner,
``penalty_card_reward`` per penalty card received. The game ends when ``num_rounds`` rounds are
won or after ``max_steps`` sub-actions (the env's truncation; OpenSpiel has no truncation, so that
state is terminal too). The utility bounds hold for any game (no seat takes more penalty cards in
a step than there are cards) and are far from what a game pays.

Parameters
----------
The env's options under their names (``mao_env.options.MaoOptions``), ``players`` for
``n_players``.

``state.agent_observation(player)`` is the env's ``{"observation", "action_mask"}`` for that seat,
what the project's agents take (``cardgame_core.openspiel.AgentBot``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from cardgame_core import openspiel as spiel_glue
from cardgame_core.openspiel import pyspiel  # the ImportError that names the extra if missing
from mao_env import cards, core, layout, state
from mao_env import rules as rule_library
from mao_env.options import MaoOptions

__all__ = ["MaoGame", "MaoGameState", "load_game"]

SHORT_NAME = "mao"
#: Chance nodes at the start: the bytes of the engine's 64-bit random state, most significant first.
SEED_BYTES = 8
_BYTE_VALUES = 256
_RENAMED = {"n_players": "players"}  # OpenSpiel's name for the number of players
_PARAMETERS = spiel_glue.parameter_specification(MaoOptions, _RENAMED)
_N_ACTIONS = cards.n_actions(rule_library.N_RULES)
_CARD_NAMES = np.array(cards.CARD_NAMES)

_GAME_TYPE = spiel_glue.card_game_type(
    SHORT_NAME,
    "Mao (the environment as Mao Master)",
    utility=pyspiel.GameType.Utility.GENERAL_SUM,
    reward_model=pyspiel.GameType.RewardModel.REWARDS,
    players=(2, cards.MAX_PLAYERS),
    information_state=False,
    parameters=_PARAMETERS,
)


def _options(players: int, **options: Any) -> MaoOptions:
    return MaoOptions(n_players=players, **options)


def _utility_bounds(options: MaoOptions) -> tuple[float, float]:
    """Bounds on any seat's return: at most ``num_rounds`` wins, and in each step at most every
    card of the game received as penalty cards."""
    wins = options.win_reward * options.num_rounds
    penalties = options.penalty_card_reward * options.max_steps * options.n_decks * cards.CARDS_PER_DECK
    low, high = min(0.0, wins) + min(0.0, penalties), max(0.0, wins) + max(0.0, penalties)
    return low, (high if high > low else low + 1.0)  # OpenSpiel needs min < max, even when all pays 0


class MaoGame(pyspiel.Game):
    """Mao with the environment as Mao Master (see the module docstring)."""

    def __init__(self, params: dict[str, Any] | None = None) -> None:
        options = spiel_glue.options_from_parameters(params or {}, _PARAMETERS, _options)
        min_utility, max_utility = _utility_bounds(options)
        info = pyspiel.GameInfo(
            num_distinct_actions=_N_ACTIONS,
            max_chance_outcomes=_BYTE_VALUES,
            num_players=options.n_players,
            min_utility=min_utility,
            max_utility=max_utility,
            utility_sum=None,
            max_game_length=options.max_steps,
        )
        parameters = {_RENAMED.get(name, name): value for name, value in dataclasses.asdict(options).items()}
        super().__init__(_GAME_TYPE, info, parameters)
        #: The validated options (``mao_env.options.MaoOptions``).
        self.options = options
        self.rewards_buffer = np.zeros(options.n_players, dtype=np.float64)
        self._pieces = [(piece.name, (piece.size,)) for piece in layout.STATE_PIECES]
        if options.n_events:
            width = layout.event_width(options.reasons == "revealed")
            self._pieces.append(("events", (options.n_events, width)))

    def new_initial_state(self) -> MaoGameState:
        return MaoGameState(self)

    def make_py_observer(self, iig_obs_type: Any = None, params: Any = None) -> spiel_glue.LayoutObserver:
        spiel_glue.wants_information_state(iig_obs_type, params, info_state=False)
        return spiel_glue.LayoutObserver(self._pieces, _write_observation)


class MaoGameState(spiel_glue.CardGameState):
    """A Mao game: the game's arrays, the random state being drawn, returns (see the module docstring)."""

    def __init__(self, game: MaoGame) -> None:
        super().__init__(game)
        self._arrays: state.MaoState | None = None  # made when the random state is drawn
        self._mask = np.zeros(_N_ACTIONS, dtype=np.int8)
        self._seed_bytes: list[int] = []
        self._over = False

    # -- OpenSpiel's state interface -----------------------------------------------------------------
    def current_player(self) -> int:
        if self._arrays is None:
            return pyspiel.PlayerId.CHANCE
        if self._over:
            return pyspiel.PlayerId.TERMINAL
        return state.GameView(self._arrays).current_seat

    def is_terminal(self) -> bool:
        return self._over

    def _legal_actions(self, player: int) -> list[int]:
        return np.flatnonzero(self._mask).tolist()

    def chance_outcomes(self) -> list[tuple[int, float]]:
        return [(value, 1.0 / _BYTE_VALUES) for value in range(_BYTE_VALUES)]

    def _apply_action(self, action: int) -> None:
        if self._arrays is None:
            self._apply_seed_byte(int(action))
            return
        if not 0 <= action < _N_ACTIONS or not self._mask[action]:
            legal = ", ".join(
                cards.action_to_text(a, rule_library.N_RULES) for a in np.flatnonzero(self._mask)
            )
            raise ValueError(f"action {action} is not legal now; legal actions: {legal}")
        self._start_transition()
        game = self.get_game()
        options = game.options
        flags = core.step_game(
            self._arrays, rule_library.LIBRARY, 0, action, options.by_rules, options.max_steps, self._mask
        )
        if flags & core.STEP_REWARDS:
            core.step_rewards(
                self._arrays, 0, options.win_reward, options.penalty_card_reward, game.rewards_buffer
            )
            self._credit(game.rewards_buffer)
        self._over = bool(flags & (core.STEP_DONE | core.STEP_TRUNCATED))

    def _action_to_string(self, player: int, action: int) -> str:
        if player == pyspiel.PlayerId.CHANCE:
            return f"random state byte {len(self._seed_bytes)}: {action}"
        return cards.action_to_text(action, rule_library.N_RULES)

    def __str__(self) -> str:
        if self._arrays is None:
            return f"drawing the random state: {self._seed_bytes}"
        view = state.GameView(self._arrays)
        hands = " | ".join(
            " ".join(np.repeat(_CARD_NAMES, self._arrays.hands[0, seat]).tolist())
            for seat in range(view.n_players)
        )
        top = cards.CARD_NAMES[view.top_card()]
        return (
            f"step {view.steps} round {view.rounds_finished} seat {view.current_seat} "
            f"phase {view.phase} top {top} stack {view.stack_size}\n"
            f"hands {hands}\nreturns {self._returns}"
        )

    # -- the project's view of a seat ---------------------------------------------------------------
    def agent_observation(self, player: int) -> dict[str, np.ndarray]:
        """The PettingZoo env's observation of ``player``: what the project's agents take."""
        options = self.get_game().options
        player = spiel_glue.checked_player(player, options.n_players)
        observation = np.zeros(options.obs_dim, dtype=np.float32)
        mask = np.zeros(_N_ACTIONS, dtype=np.int8)
        if self._arrays is not None:
            _observe(self, options, player, observation)
            if player == self.current_player():
                mask[:] = self._mask
        return {"observation": observation, "action_mask": mask}

    def snapshot_arrays(self) -> dict[str, np.ndarray]:
        """Copies of the game's arrays as the env's snapshot holds them (``get_state()["arrays"]``):
        ``env.set_state({**env.get_state(), "arrays": state.snapshot_arrays()})`` continues this game
        in a PettingZoo env with the same options."""
        if self._arrays is None:
            raise ValueError("the game has not started: its random state is still being drawn")
        return {key: array.copy() for key, array in zip(state.STATE_KEYS, self._arrays, strict=True)}

    # -- the engine ---------------------------------------------------------------------------------
    def _apply_seed_byte(self, value: int) -> None:
        if not 0 <= value < _BYTE_VALUES:
            raise ValueError(f"chance outcome {value} is not a byte 0..255 (the random state is drawn)")
        self._seed_bytes.append(value)
        if len(self._seed_bytes) < SEED_BYTES:
            return
        seed = int.from_bytes(bytes(self._seed_bytes), "big")
        options = self.get_game().options
        arrays = state.new_state(1)
        # What the env's reset does with the random state it draws.
        options.write_config(arrays.scalars)
        state.GameView(arrays).clear_rule_queue()
        core.reset_game(arrays, 0, np.uint64(seed))
        core.action_mask(arrays, rule_library.LIBRARY, 0, options.by_rules, self._mask)
        self._arrays = arrays


def _observe(spiel_state: MaoGameState, options: MaoOptions, player: int, out: np.ndarray) -> None:
    core.observe(
        spiel_state._arrays, rule_library.LIBRARY, 0, player, options.n_events, options.reasons_code, out
    )


def _write_observation(spiel_state: MaoGameState, player: int, tensor: np.ndarray) -> None:
    if spiel_state._arrays is None:
        tensor[:] = 0
        return
    _observe(spiel_state, spiel_state.get_game().options, player, tensor)


def load_game(**options: Any) -> MaoGame:
    """``pyspiel.load_game("mao", options)``: the game with these parameters (see the module docstring)."""
    return pyspiel.load_game(SHORT_NAME, options)


spiel_glue.register(_GAME_TYPE, MaoGame)
