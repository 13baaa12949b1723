"""Madiao as an OpenSpiel game: ``import madiao_env.openspiel_game`` registers ``"madiao"``.

Needs OpenSpiel (the ``openspiel`` extra); importing this module registers the game, nothing else
does. Then ``pyspiel.load_game("madiao")`` (or ``"madiao(max_redeals=2)"``) works with
OpenSpiel's algorithms, and :func:`load_game` does the same from Python options.

The rules are the project's: every state holds the arrays of one game (``madiao_env.state``) and
moves through the Numba kernels of ``madiao_env.core``, as the PettingZoo env does; nothing here
knows a rule of Madiao.

Players and actions
-------------------
Four players, seats 0..3 as in the PettingZoo env; the 82 actions are the env's (``play 9S``,
``slough 9S``, ``redeal``, ``pass``: ``madiao_env.cards.action_to_text``), legal where the env's
mask allows them.

Chance
------
Every deal is drawn by chance nodes, card by card: the deck from the top, each card uniform over
those not yet drawn (the 40th is the one left), then the engine deals it through the cut as the
env's ``reset(options={"deck": ...})`` does. Before the first deal a chance node draws the banker
(uniform over the four seats). A deal the rules replace (a redeal declared, a meld at the first
deal, the four lowest) is drawn again the same way; after the four lowest the banker is drawn
again first. Chance actions are card ids (``deal 9S``) and seats (``banker: seat 2``).

How: the engine deals at random inside a kernel call. Each call therefore starts from a fixed
random state (``ENGINE_STREAM``) whose deal stops at a decision; a call that drew
(``core.draws_between``) is followed by the chance nodes, and ``core.deal_games`` puts their deal
in place of the engine's. The engine's deal is never observed.

Observations
------------
The information state is the env's ``obs_type="history"`` layout (1,579 entries: the deal as
dealt, the upcard, every play of the hand, others' face-down cards hidden) plus ``REDEALS``, the
redeals declared in this hand (with ``max_redeals`` they decide whether a redeal is still offered).
Perfect recall within a deal; a deal replaced by a redeal is forgotten, as the env's history
forgets it (the rest of the hand does not depend on it). The observation is the env's
``obs_type="summary"`` layout (484 entries). The tensors' pieces are the layout's
(``madiao_env.layout``: ``HIST_HAND``, ``OBS_TRICK_PLAYS``, ...); the strings list each piece's
nonzero entries. At a chance node (a deal in progress) both are zeros.

Returns
-------
Zero-sum stakes times ``stake``, paid when the hand is settled (the env's ``episode="hand"``: a
match has no bound on its length, which an OpenSpiel game needs). The utility bounds are those of
the engine's line buffer (no hand can pay more), not of any real hand.

Parameters
----------
``stake`` (1.0), ``max_redeals`` (8: OpenSpiel needs a longest game; the env's default is no
limit, and eight redeals in a hand almost never happen), ``face_up_discard`` (False), as the env's
options of those names.

``state.agent_observation(player)`` is the env's ``{"observation", "action_mask"}`` for that seat
(``obs_type="summary"``), what the project's agents take (``cardgame_core.openspiel.AgentBot``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cardgame_core import openspiel as spiel_glue
from cardgame_core.openspiel import pyspiel  # the ImportError that names the extra if missing
from madiao_env import cards, core, layout, payments, state
from madiao_env.options import MadiaoOptions

__all__ = ["ENGINE_STREAM", "MadiaoGame", "MadiaoGameState", "load_game"]

SHORT_NAME = "madiao"
#: The random state each kernel call starts from: its deal (and the deal after one banker draw)
#: holds no meld and no four lowest, so a call that deals at random stops at that deal.
ENGINE_STREAM = np.uint64(0x6D616469616F2121)
#: OpenSpiel's default of ``max_redeals`` (the game must have a longest game).
DEFAULT_MAX_REDEALS = 8
#: The parameters: the env's rule options that make sense for one hand.
_PARAMETERS = {"stake": 1.0, "max_redeals": DEFAULT_MAX_REDEALS, "face_up_discard": False}
_N_SEATS = cards.N_SEATS
_DRAWN_CARDS = cards.N_CARDS - 1  # chance nodes of a deal: the 40th card is the one left
_OFFERS_PER_DEAL = _N_SEATS  # each seat is asked at most once per deal
_PLAYS = 4 * cards.N_TRICKS
# The largest max_redeals whose longest game OpenSpiel can count (in an int32).
_MAX_REDEALS_PARAMETER = (2**31 - 1 - _PLAYS) // _OFFERS_PER_DEAL
#: No hand pays more than its pending lines, at most this many stakes each (the kernel raises
#: beyond the buffer).
_MAX_HAND_STAKES = core.MAX_PENDING * payments.MAX_LINE_STAKES

_GAME_TYPE = spiel_glue.card_game_type(
    SHORT_NAME,
    "Madiao (one hand)",
    utility=pyspiel.GameType.Utility.ZERO_SUM,
    reward_model=pyspiel.GameType.RewardModel.TERMINAL,
    players=(_N_SEATS, _N_SEATS),
    information_state=True,
    parameters=_PARAMETERS,
)

_REDEALS_PIECE = ("REDEALS", (1,))
_INFO_STATE_PIECES = [(piece.name, (piece.size,)) for piece in layout.HISTORY_PIECES] + [_REDEALS_PIECE]
_OBSERVATION_PIECES = [(piece.name, (piece.size,)) for piece in layout.SUMMARY_PIECES]


def _options(stake: float, max_redeals: int, face_up_discard: bool) -> MadiaoOptions:
    """The env's options of one hand with these parameters (``MadiaoOptions`` names a bad one)."""
    options = MadiaoOptions(
        obs_type="history",
        episode="hand",
        stake=stake,
        max_redeals=max_redeals,
        face_up_discard=face_up_discard,
    )
    if options.max_redeals > _MAX_REDEALS_PARAMETER:
        raise ValueError(f"max_redeals must be at most {_MAX_REDEALS_PARAMETER}, got {max_redeals}")
    return options


class MadiaoGame(pyspiel.Game):
    """One hand of Madiao for four players (see the module docstring)."""

    def __init__(self, params: dict[str, Any] | None = None) -> None:
        options = spiel_glue.options_from_parameters(params or {}, _PARAMETERS, _options)
        info = pyspiel.GameInfo(
            num_distinct_actions=cards.N_ACTIONS,
            max_chance_outcomes=cards.N_CARDS,
            num_players=_N_SEATS,
            min_utility=-_MAX_HAND_STAKES * options.stake,
            max_utility=_MAX_HAND_STAKES * options.stake,
            utility_sum=0.0,
            # Redeal offers on every deal before the cap is reached, then the 32 plays.
            max_game_length=_OFFERS_PER_DEAL * options.max_redeals + _PLAYS,
        )
        parameters = {name: getattr(options, name) for name in _PARAMETERS}
        super().__init__(_GAME_TYPE, info, parameters)
        #: The validated rule options (``episode="hand"``).
        self.options = options
        # The kernels' config rows: the rules, with the history or the summary observation.
        self.history_config = options.config_row()
        self.summary_config = MadiaoOptions(**{**options.as_kwargs(), "obs_type": "summary"}).config_row()
        # Scratch outputs of the kernels, shared by the game's states (a state copies what it keeps).
        self.history_buffer = np.empty((1, layout.HISTORY_SIZE), dtype=np.int8)
        self.summary_buffer = np.empty((1, layout.SUMMARY_SIZE), dtype=np.int8)
        self.mask_buffer = np.empty((1, cards.N_ACTIONS), dtype=np.int8)

    def new_initial_state(self) -> MadiaoGameState:
        return MadiaoGameState(self)

    def make_py_observer(self, iig_obs_type: Any = None, params: Any = None) -> spiel_glue.LayoutObserver:
        if spiel_glue.wants_information_state(iig_obs_type, params, info_state=True):
            return spiel_glue.LayoutObserver(_INFO_STATE_PIECES, _write_info_state)
        return spiel_glue.LayoutObserver(_OBSERVATION_PIECES, _write_observation)


class MadiaoGameState(spiel_glue.CardGameState):
    """A Madiao hand: the game's arrays, the deal being drawn, returns (see the module docstring)."""

    def __init__(self, game: MadiaoGame) -> None:
        super().__init__(game)
        self._arrays: state.MadiaoState | None = None  # made by the first deal
        self._mask = np.zeros(cards.N_ACTIONS, dtype=np.int8)
        # The deal being drawn: None when none is; else the cards so far, top of the deck first.
        self._deck: list[int] | None = []
        self._draw_banker = True  # the next chance node draws the banker
        self._banker = -1  # the banker drawn for the deal being drawn (-1: none, keep the banker)

    # -- OpenSpiel's state interface -----------------------------------------------------------------
    def current_player(self) -> int:
        if self._deck is not None:
            return pyspiel.PlayerId.CHANCE
        to_act = state.GameView(self._arrays).to_act
        return pyspiel.PlayerId.TERMINAL if to_act < 0 else to_act

    def is_terminal(self) -> bool:
        return self._deck is None and state.GameView(self._arrays).to_act < 0

    def _legal_actions(self, player: int) -> list[int]:
        return np.flatnonzero(self._mask).tolist()

    def chance_outcomes(self) -> list[tuple[int, float]]:
        if self._draw_banker:
            return [(seat, 1.0 / _N_SEATS) for seat in range(_N_SEATS)]
        left = _cards_left(self._deck)
        return [(card, 1.0 / len(left)) for card in left]

    def _apply_action(self, action: int) -> None:
        if self._deck is not None:
            self._apply_chance(int(action))
            return
        if not 0 <= action < cards.N_ACTIONS or not self._mask[action]:
            legal = ", ".join(cards.action_to_text(a) for a in np.flatnonzero(self._mask))
            raise ValueError(f"action {action} is not legal now; legal actions: {legal}")
        self._start_transition()
        game = self.get_game()
        state.GameView(self._arrays).random_state = ENGINE_STREAM
        actions = np.array([action], dtype=np.int64)
        core.step_games(self._arrays, game.summary_config, actions, game.summary_buffer, game.mask_buffer)
        self._after_engine(game)

    def _action_to_string(self, player: int, action: int) -> str:
        if player == pyspiel.PlayerId.CHANCE:
            if self._deck is not None and self._draw_banker:
                return f"banker: seat {action}"
            return f"deal {cards.card_name(action)}"
        return cards.action_to_text(action)

    def __str__(self) -> str:
        if self._deck is not None:
            banker = "to draw" if self._draw_banker else self._banker
            return f"dealing (banker {banker}): {' '.join(cards.CARD_NAMES[card] for card in self._deck)}"
        view = state.GameView(self._arrays)
        hands = " | ".join(" ".join(cards.names_of(view.hand(seat))) for seat in range(_N_SEATS))
        plays = " ".join(
            f"{seat}:{cards.CARD_NAMES[card]}{'' if up else '(down)'}" for seat, card, up in view.plays()
        )
        return (
            f"banker {view.banker} first {view.first} to act {view.to_act} "
            f"upcard {cards.CARD_NAMES[view.stock()[0]]} redeals {view.redeals}\n"
            f"hands {hands}\nplays {plays}\nreturns {self._returns}"
        )

    # -- views of a seat ----------------------------------------------------------------------------
    def agent_observation(self, player: int) -> dict[str, np.ndarray]:
        """The PettingZoo env's observation of ``player`` (``obs_type="summary"``): what agents take."""
        view = self._kernel_view(player, history=False)
        observation = np.zeros(layout.SUMMARY_SIZE, dtype=np.int8)
        mask = np.zeros(cards.N_ACTIONS, dtype=np.int8)
        if view is not None:
            observation[:] = view
            if player == self.current_player():
                mask[:] = self._mask
        return {"observation": observation, "action_mask": mask}

    def _kernel_view(self, player: int, history: bool) -> np.ndarray | None:
        """``player``'s observation as the env encodes it (``obs_type`` "history" or "summary"),
        None while a deal is drawn; a buffer of the game's, overwritten by the next view."""
        seats = np.array([spiel_glue.checked_player(player, _N_SEATS)], dtype=np.int64)
        if self._deck is not None:
            return None
        game = self.get_game()
        config, buffer = (
            (game.history_config, game.history_buffer)
            if history
            else (game.summary_config, game.summary_buffer)
        )
        core.observe_games(self._arrays, config, seats, buffer, game.mask_buffer)
        return buffer[0]

    @property
    def redeals(self) -> int:
        """Redeals declared in this hand."""
        return 0 if self._arrays is None else state.GameView(self._arrays).redeals

    # -- the engine ---------------------------------------------------------------------------------
    def _apply_chance(self, outcome: int) -> None:
        if self._draw_banker:
            if not 0 <= outcome < _N_SEATS:
                raise ValueError(f"chance outcome {outcome} is not a seat 0..3 (the banker is drawn)")
            self._banker, self._draw_banker = outcome, False
            return
        if not 0 <= outcome < cards.N_CARDS or outcome in self._deck:
            raise ValueError(f"chance outcome {outcome} is not a card left to deal")
        self._deck.append(outcome)
        if len(self._deck) < _DRAWN_CARDS:
            return
        deck = np.array([self._deck + _cards_left(self._deck)], dtype=np.int8)
        bankers = np.array([self._banker], dtype=np.int64)
        game = self.get_game()
        if self._arrays is None:
            self._arrays = state.new_state(1)
            seeds = np.array([ENGINE_STREAM], dtype=np.uint64)
            firsts = np.array([-1], dtype=np.int64)  # the cut card picks the seat dealt first
            core.reset_games(
                self._arrays, game.summary_config, seeds, bankers, deck, firsts, game.summary_buffer,
                game.mask_buffer,
            )  # fmt: skip
        else:
            state.GameView(self._arrays).random_state = ENGINE_STREAM
            core.deal_games(
                self._arrays, game.summary_config, bankers, deck, game.summary_buffer, game.mask_buffer
            )
        self._after_engine(game)

    def _after_engine(self, game: MadiaoGame) -> None:
        """After a kernel call: pay what it settled, keep the mask, and start drawing a deal if the
        engine dealt one (or a banker and a deal) at random."""
        view = state.GameView(self._arrays)
        if view.overflowed:
            raise RuntimeError("Madiao settlement line buffer overflowed (more lines than the kernel holds)")
        payoffs = [0.0] * _N_SEATS
        for _, _, payer, payee, stakes in view.settled_lines():
            amount = payments.stakes_to_rewards(stakes, game.options.stake)
            payoffs[payer] -= amount
            payoffs[payee] += amount
        self._credit(payoffs)
        self._mask = game.mask_buffer[0].copy()
        draws = core.draws_between(ENGINE_STREAM, np.uint64(view.random_state), core.DEAL_DRAWS + 1)
        if draws == 0:
            self._deck = None
        elif draws in (core.DEAL_DRAWS, core.DEAL_DRAWS + 1):
            self._deck, self._banker, self._draw_banker = [], -1, draws == core.DEAL_DRAWS + 1
        else:
            raise RuntimeError(f"the Madiao engine drew {draws} random numbers in one call (a deal at most)")


def _cards_left(deck: list[int]) -> list[int]:
    return sorted(set(range(cards.N_CARDS)) - set(deck))


# ----------------------------------------------------------------------------- observers
def _write_observation(spiel_state: MadiaoGameState, player: int, tensor: np.ndarray) -> None:
    view = spiel_state._kernel_view(player, history=False)
    tensor[:] = 0 if view is None else view


def _write_info_state(spiel_state: MadiaoGameState, player: int, tensor: np.ndarray) -> None:
    view = spiel_state._kernel_view(player, history=True)
    if view is None:
        tensor[:] = 0
        return
    tensor[: layout.HISTORY_SIZE] = view
    tensor[layout.HISTORY_SIZE] = spiel_state.redeals


def load_game(**options: Any) -> MadiaoGame:
    """``pyspiel.load_game("madiao", options)``: the game with these parameters (see the module docstring)."""
    return pyspiel.load_game(SHORT_NAME, options)


spiel_glue.register(_GAME_TYPE, MadiaoGame)
