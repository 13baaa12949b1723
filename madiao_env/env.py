"""Madiao (馬弔), the late-Ming four-player trick-taking game, as a PettingZoo AEC environment.

``from madiao_env import madiao_v0``; ``madiao_v0.env(...)`` is the env as PettingZoo's classic
games build theirs (``TerminateIllegalWrapper`` + ``AssertOutOfBoundsWrapper`` +
``OrderEnforcingWrapper``, see "Illegal actions"), ``madiao_v0.raw_env(...)`` the bare one. The
rules are the project's reading in the design doc ``madiao-rules.md``; the game itself runs in the
Numba kernels of ``madiao_env.core`` and this module is glue.

Agents and seats
----------------
``player_0`` .. ``player_3`` are seats 0..3 in play order (the seat after ``s`` is ``(s+1) % 4``).
With banker ``b``: dealer ``b+1``, opposite ``b+2``, shuffler ``b+3``.

Deal procedure (the project's reading)
--------------------------------------
A deck order lists the 40 cards top to bottom. The cut reveals the bottom card ``deck[39]``; its
number picks the seat dealt first: 4/8 dealer, 3/7 banker, 2/6 shuffler, 1/5/9 and the cards
without a digit (0C, HC, 100T, 1000T, 10000T) the banker's opposite; tens 20T..90T count as 2..9.
From the top, a batch of four cards goes to each seat in play order from the first seat, then
single cards round the table until every seat has 8. The 8 cards left are the stock, listed upcard
first: ``stock = [deck[39], deck[38], ..., deck[32]]``; the upcard (the cut card) is seen by all,
and the stock check after the last trick exposes ``stock[1]``. A random deal is a seeded uniform
shuffle dealt this way; the first banker of an episode is a uniform random seat from the seed.

Before the first trick: melds are settled at once (the hand ends, the holder is the next banker);
the four lowest (20T 1M 1S 9C) are paid, then a new random deal with a new random banker (same
hand); then each seat holding five or more cards of one suit is asked, in deal order from the
first seat, to declare a redeal (action 80: same banker, new random deal) or pass (81).

Actions: ``Discrete(82)``
-------------------------
======== =====================================================================
id       meaning
======== =====================================================================
0..39    play card ``id`` face up (lead any card; as a follower: capture, i.e. a
         higher card of the suit led than the best face-up card so far)
40..79   slough card ``id - 40`` face down (any card, as a follower)
80       declare a redeal
81       pass (decline the redeal)
======== =====================================================================

Card ids and names are in ``madiao_env.cards`` (``cards.text_to_action("play 9S")``).

Illegal actions
---------------
``raw_env()``: an action outside the mask raises ``cardgame_core.aec.IllegalActionError`` whose
message names the action as text and lists the legal ones; nothing changes (there is no silent
fix-up). ``env()``, as PettingZoo's classic games: an id in 0..81 that the mask forbids ends the
episode for every agent (all terminated and truncated, as PettingZoo's ``TerminateIllegalWrapper``
does); the offender's reward is ``-ILLEGAL_ACTION_STAKES`` stakes (-8 times ``stake``), the others'
0, and the offender's ``infos`` hold ``"illegal_action": True`` and ``"illegal_action_error"``,
the explanation ``raw_env()`` would raise. Why -8 stakes rather than PettingZoo's -1: rewards here
are stakes, and 8 is the largest single payment of the rules (a slam, the exact-eight meld), so an
illegal action costs about what losing a hand badly costs (a -1 would be cheaper than most lost
hands, and a learner that ignores the mask could learn to end such hands illegally; a hand can
still lose more, so mask the actions). Other penalties: wrap ``raw_env()`` in PettingZoo's
wrappers yourself. An id outside 0..81 is stopped by ``AssertOutOfBoundsWrapper`` (an
``AssertionError``), and something that is not an action id (a bool, a float, an array) raises
``IllegalActionError`` from both.

Observations
------------
``{"observation": Box(int8), "action_mask": Box(0, 1, (82,), int8)}``; the mask is all zeros for
a seat that is not to act. Seats in the observation are *relative*: 0 is the observer, 1 the next
seat to act after it, and so on. Card planes are indexed by card id.

``obs_type="summary"`` (default), 484 entries:

========= ========================== ==================================================================
index     name                       content
========= ========================== ==================================================================
0..39     OBS_HAND                   cards held
40..79    OBS_UPCARD                 the upcard (one-hot)
80..119   OBS_SEEN_FACE_UP           every card played face up this hand (current trick too)
120..159  OBS_OWN_SLOUGHED           cards this seat sloughed face down this hand
160..319  OBS_TRICK_FACE_UP          current trick by relative seat, 4 x 40: the face-up card played
320..323  OBS_TRICK_FACE_DOWN        current trick: relative seats that sloughed face down
324       OBS_TRICK_FACE_DOWN_COUNT  current trick: number of face-down cards
325..328  OBS_TRICK_LEADER           relative seat that led the current trick (all 0: none)
329..451  OBS_TRICK_PLAYS            current trick in play order, 3 x (card one-hot 40, face down 1)
452..455  OBS_TRICKS_WON             tricks won by relative seat (counts 0..8)
456..459  OBS_BANKER                 banker's relative seat (one-hot)
460..463  OBS_FIRST                  relative seat dealt first (one-hot)
464..472  OBS_TRICK_NUMBER           tricks completed, 0..8 (one-hot)
473..475  OBS_PHASE                  redeal offer / play / over (one-hot)
476..479  OBS_BEEN_BANKER            relative seats that have been banker in this match
480..483  OBS_REDEAL_PASSED          relative seats that passed a redeal offer on this deal
========= ========================== ==================================================================

``obs_type="record"``, 968 entries: the summary's entries in the same places, then the
hand's public record by seat (a summary policy's weights carry over, zero for the new entries).

========= =========================== ==================================================================
index     name                        content
========= =========================== ==================================================================
0..39     OBS_HAND                    cards held
40..79    OBS_UPCARD                  the upcard (one-hot)
80..119   OBS_SEEN_FACE_UP            every card played face up this hand (current trick too)
120..159  OBS_OWN_SLOUGHED            cards this seat sloughed face down this hand
160..319  OBS_TRICK_FACE_UP           current trick by relative seat, 4 x 40: the face-up card played
320..323  OBS_TRICK_FACE_DOWN         current trick: relative seats that sloughed face down
324       OBS_TRICK_FACE_DOWN_COUNT   current trick: number of face-down cards
325..328  OBS_TRICK_LEADER            relative seat that led the current trick (all 0: none)
329..451  OBS_TRICK_PLAYS             current trick in play order, 3 x (card one-hot 40, face down 1)
452..455  OBS_TRICKS_WON              tricks won by relative seat (counts 0..8)
456..459  OBS_BANKER                  banker's relative seat (one-hot)
460..463  OBS_FIRST                   relative seat dealt first (one-hot)
464..472  OBS_TRICK_NUMBER            tricks completed, 0..8 (one-hot)
473..475  OBS_PHASE                   redeal offer / play / over (one-hot)
476..479  OBS_BEEN_BANKER             relative seats that have been banker in this match
480..483  OBS_REDEAL_PASSED           relative seats that passed a redeal offer on this deal
484..643  OBS_FACE_UP_BY_SEAT         every card played face up this hand by relative seat, 4 x 40
                                      (current trick too)
644..803  OBS_WON_WITH_BY_SEAT        the winning card of every trick won this hand, by relative seat of
                                      the winner, 4 x 40
804..963  OBS_SLOUGHED_UNDER_BY_SEAT  by relative seat, 4 x 40: for each face-down slough this hand, the
                                      best face-up card of its trick when the seat sloughed (the card it
                                      did not beat)
964..967  OBS_SLOUGHS_BY_SEAT         face-down cards sloughed this hand, by relative seat (0..8)
========= =========================== ==================================================================

(The name column is the ``slice`` constant this module exports, e.g. ``OBS_HAND``; the tables are
generated from the pieces in ``madiao_env.layout``.)

``obs_type="history"``, 1579 entries: a perfect-recall information state of the current deal.

========== =================== ==================================================================
index      name                content
========== =================== ==================================================================
0..39      HIST_HAND_DEALT     the observer's 8 cards as dealt
40..79     HIST_HAND           cards held now
80..119    HIST_UPCARD         the upcard (one-hot)
120..123   HIST_BANKER         banker's relative seat
124..127   HIST_FIRST          relative seat dealt first
128..131   HIST_REDEAL_PASSED  relative seats that passed a redeal offer on this deal
132..135   HIST_BEEN_BANKER    relative seats that have been banker in this match
136..138   HIST_PHASE          redeal offer / play / over
139..1578  HIST_PLAYS          32 play slots in order (slot k = trick k // 4), 45 each: relative
                               seat one-hot (4), card one-hot (40), face down (1). Another seat's
                               face-down card is only "a face-down card": its card one-hot is all
                               zeros; the observer's own sloughs are shown.
========== =================== ==================================================================

Rewards
-------
Zero-sum stakes (times the ``stake`` option), given when a hand is settled, to all four seats.
``episode="hand"`` (default): the episode is one hand that reaches the end of play or ends with a
meld after a decision; payments made earlier in it (the four lowest, face-up discards, a meld at
the reset deal, after which the env deals again so that every episode has a decision) are paid
with the hand's settlement. Every episode starts at hand number 0: a meld at the reset deal ends a
deal, not a hand of the episode (its banker does not count as having been banker in a match).
``episode="match"``: the episode is a whole match (it ends after the hand in which the last seat
that had not been banker has been banker); each hand is rewarded as it is settled.
Infos have the same keys and shapes at every step, so that a generic collector can stack them:
``infos[agent]`` = ``{"hand_number": int, "payoffs": [4 floats], "illegal_action": bool,
"illegal_action_error": str}``: the hand number and the payoffs by seat of the last settlement
of the episode (-1 and zeros before the first; they stay until the next settlement) and the
illegal-action entries (False and "" unless ``env()`` ended the episode on this agent's illegal
action). The settlement itself, with its lines (a list of varying length), is
``env.unwrapped.last_settlement`` (same lifetime; None before the first settlement of the
episode): ``{"hand_number": int, "lines": [...], "payoffs": [4 floats]}``, each line
``{"rule", "payer", "payee", "stakes"}`` (stakes times ``stake``), the payoffs their sum by seat.
Rule names: meld, four_lowest, trick_count, slam, boss_card, hundred_myriad, honours,
two_tricks_hundred_myriad, stock_check, face_up_discard (each rule with its amounts:
``madiao_env.payments``). Lines come in the order they arose (declarations and face-up discards
during the hand, then the end-of-hand lines in the design doc's order); a line between the banker
and the players is one line per payer/payee pair.

Readings of the design doc's open points: a banker holding a meld is paid like anyone else; the
Hundred Myriad holder's exemption applies to melds only (the four lowest are paid by everyone); a
banker under the minimum who holds 100T collects the consolation from each player. The four lowest
keep the hand's number and redeal count (it is the same hand, dealt again).

Options
-------
``env()`` and ``raw_env()`` take the same keyword arguments (``help(madiao_v0.env)`` lists them):
``render_mode`` None | "ansi" (``render()`` returns the table as text) | "human" (prints it), and
the game options: the fields of ``madiao_env.options.MadiaoOptions``, each documented once, under
its field. That object checks them (a bad one raises ``TypeError`` or ``ValueError`` naming it), is
kept as ``env.unwrapped.options``, and is what the batched env and the play-outs build from as well.
``render(seat=k)`` (on ``env()`` too) shows only what seat ``k`` sees: its own hand, the other
hands as card counts, the upcard (and the card under it once the stock check exposed it), other
seats' face-down plays as "(face down)"; ``render()`` shows the full table.

``reset(seed, options)``: options ``{"hands": [[8 names] x 4 by seat], "stock": [8 names, upcard
first], "banker": seat, "first": seat}`` sets the deal exactly ("banker" and "first" optional:
random banker, first seat from the upcard as cut card), or ``{"deck": [40 names top to bottom],
"banker": seat}`` deals a given deck, or ``{"banker": seat}``. Declarations then run as usual.
Any other key raises ``ValueError``, except ``"options"``, which is ignored because PettingZoo's
``api_test`` calls ``reset(options={"options": 1})``.
A reset that raises (bad seed or options) changes nothing, not even the RNG.
``table()`` gives the full true state in plain Python; ``get_state()``/``set_state()`` snapshot
and restore it (RNG included, so a continuation replays exactly). The game's arrays, the snapshot
format and its validation live in ``madiao_env.state`` (a ``MadiaoState`` named tuple; the
snapshot's ``arrays`` are its fields, in order, for one game): ``set_state`` checks every field
(shapes, dtypes, every seat, index and count in range, the cards partitioning the deck and
agreeing with the play history, the options, the PettingZoo bookkeeping) and raises one
``ValueError`` naming the field, leaving the env exactly as it was.

Once the episode is over, each agent is stepped with ``None`` (PettingZoo's dead step) until
``agents`` is empty; stepping after that raises ``RuntimeError`` ("the episode is over; call
reset()"), as stepping before the first ``reset()`` does ("call reset() first").

Its version history is in ``docs/environments.md``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.utils import EzPickle
from pettingzoo import AECEnv

from cardgame_core.aec import CardGameAECEnv, check_action, seed_sequence, wrap_like_pettingzoo_classic
from cardgame_core.jit import compiled_for
from cardgame_core.options_doc import document_options, option_values
from madiao_env import cards, core, layout, payments, state

# The option limits live in madiao_env.options; re-exported as part of the env module's names.
from madiao_env.options import EPISODES as EPISODES
from madiao_env.options import MAX_REDEALS_CAP as MAX_REDEALS_CAP
from madiao_env.options import MAX_STAKE as MAX_STAKE
from madiao_env.options import OBS_TYPES as OBS_TYPES
from madiao_env.options import MadiaoOptions
from madiao_env.render import render_table
from madiao_env.scenario import check_seat, deck_dealing, read_scenario
from madiao_env.scenario import deck_orders as deck_orders  # search imports it from here, as before

# The exported slices of the observation pieces (names, sizes and meaning: madiao_env.layout).
OBS_HAND = layout.SUMMARY_SLICES["OBS_HAND"]
OBS_UPCARD = layout.SUMMARY_SLICES["OBS_UPCARD"]
OBS_SEEN_FACE_UP = layout.SUMMARY_SLICES["OBS_SEEN_FACE_UP"]
OBS_OWN_SLOUGHED = layout.SUMMARY_SLICES["OBS_OWN_SLOUGHED"]
OBS_TRICK_FACE_UP = layout.SUMMARY_SLICES["OBS_TRICK_FACE_UP"]
OBS_TRICK_FACE_DOWN = layout.SUMMARY_SLICES["OBS_TRICK_FACE_DOWN"]
OBS_TRICK_FACE_DOWN_COUNT = layout.SUMMARY_SLICES["OBS_TRICK_FACE_DOWN_COUNT"]
OBS_TRICK_LEADER = layout.SUMMARY_SLICES["OBS_TRICK_LEADER"]
OBS_TRICK_PLAYS = layout.SUMMARY_SLICES["OBS_TRICK_PLAYS"]
OBS_TRICKS_WON = layout.SUMMARY_SLICES["OBS_TRICKS_WON"]
OBS_BANKER = layout.SUMMARY_SLICES["OBS_BANKER"]
OBS_FIRST = layout.SUMMARY_SLICES["OBS_FIRST"]
OBS_TRICK_NUMBER = layout.SUMMARY_SLICES["OBS_TRICK_NUMBER"]
OBS_PHASE = layout.SUMMARY_SLICES["OBS_PHASE"]
OBS_BEEN_BANKER = layout.SUMMARY_SLICES["OBS_BEEN_BANKER"]
OBS_REDEAL_PASSED = layout.SUMMARY_SLICES["OBS_REDEAL_PASSED"]
OBS_FACE_UP_BY_SEAT = layout.RECORD_SLICES["OBS_FACE_UP_BY_SEAT"]
OBS_WON_WITH_BY_SEAT = layout.RECORD_SLICES["OBS_WON_WITH_BY_SEAT"]
OBS_SLOUGHED_UNDER_BY_SEAT = layout.RECORD_SLICES["OBS_SLOUGHED_UNDER_BY_SEAT"]
OBS_SLOUGHS_BY_SEAT = layout.RECORD_SLICES["OBS_SLOUGHS_BY_SEAT"]

HIST_HAND_DEALT = layout.HISTORY_SLICES["HIST_HAND_DEALT"]
HIST_HAND = layout.HISTORY_SLICES["HIST_HAND"]
HIST_UPCARD = layout.HISTORY_SLICES["HIST_UPCARD"]
HIST_BANKER = layout.HISTORY_SLICES["HIST_BANKER"]
HIST_FIRST = layout.HISTORY_SLICES["HIST_FIRST"]
HIST_REDEAL_PASSED = layout.HISTORY_SLICES["HIST_REDEAL_PASSED"]
HIST_BEEN_BANKER = layout.HISTORY_SLICES["HIST_BEEN_BANKER"]
HIST_PHASE = layout.HISTORY_SLICES["HIST_PHASE"]
HIST_PLAYS = layout.HISTORY_SLICES["HIST_PLAYS"]

RENDER_MODES = ("ansi", "human")
PHASE_NAMES = ("redeal", "play", "over")
_N_ACTIONS = cards.N_ACTIONS
_MASK_SHAPE = (1, cards.N_ACTIONS)
# core.vector_step_games compiled for the AEC env's argument types (the same for every env, and
# the same as the vector env's: its own buffers), made by the first step; see
# cardgame_core.jit.compiled_for.
_compiled_step = None


#: ``env()``'s penalty for an illegal action, in stakes (times the ``stake`` option): the largest
#: single payment of the rules (see "Illegal actions" in the module docstring).
ILLEGAL_ACTION_STAKES = payments.MAX_LINE_STAKES
_RENDER_MODE_DOC = (
    'None, "ansi" (render() returns the table as text) or "human" (prints it); render(seat=k) '
    "shows what seat k sees."
)


@document_options(MadiaoOptions, render_mode=_RENDER_MODE_DOC)
def env(
    render_mode: str | None = None,
    obs_type: str = "summary",
    episode: str = "hand",
    stake: float = 1.0,
    max_redeals: int | None = None,
    face_up_discard: bool = False,
) -> AECEnv:
    """The Madiao AEC env as PettingZoo's classic games build ``env()``: an illegal action ends
    the episode (the offender loses ``ILLEGAL_ACTION_STAKES`` times ``stake``; its ``infos`` say
    why), ``render(seat=k)`` works through the wrappers. ``raw_env()`` takes the same arguments
    and raises on an illegal action instead. Documentation: the ``madiao_env.env`` docstring."""
    bare = raw_env(**locals())  # the parameters are raw_env's, in the same order
    return wrap_like_pettingzoo_classic(bare, illegal_reward=-ILLEGAL_ACTION_STAKES * bare.stake)


@document_options(MadiaoOptions, render_mode=_RENDER_MODE_DOC)
class raw_env(CardGameAECEnv, EzPickle):  # noqa: N801 (PettingZoo's name)
    """The bare Madiao AEC env: an illegal action raises ``IllegalActionError`` naming it.
    ``env()`` is this env in PettingZoo's wrappers. Documentation: the ``madiao_env.env`` docstring."""

    metadata: ClassVar[dict[str, Any]] = {
        "name": "madiao_v0",
        "render_modes": list(RENDER_MODES),
        "is_parallelizable": False,
        "render_fps": 1,
    }

    def __init__(
        self,
        render_mode: str | None = None,
        obs_type: str = "summary",
        episode: str = "hand",
        stake: float = 1.0,
        max_redeals: int | None = None,
        face_up_discard: bool = False,
    ) -> None:
        if render_mode is not None and (not isinstance(render_mode, str) or render_mode not in RENDER_MODES):
            raise ValueError(f"render_mode must be None, 'ansi' or 'human', got {render_mode!r}")
        game_options = option_values(MadiaoOptions, locals())
        options = MadiaoOptions(**game_options)
        EzPickle.__init__(self, render_mode=render_mode, **game_options)
        super().__init__()
        self.render_mode = render_mode
        #: The validated rule and observation options (``madiao_env.options``); each is also an
        #: attribute of the env under its own name.
        self.options = options
        for name in game_options:
            setattr(self, name, getattr(options, name))
        self.env_kwargs = {"render_mode": render_mode, **options.as_kwargs()}
        self.possible_agents = list(state.AGENTS)
        self._seat_of = {agent: seat for seat, agent in enumerate(self.possible_agents)}
        self._config = options.config_row()
        size = options.obs_size
        #: The game's arrays (one game), written in place by the kernels.
        self._state = state.new_state(1)
        # Buffers the kernels write: the acting seat's view (refreshed by every step) and a scratch
        # pair for observing any other seat.
        self._obs_shape = (1, size)
        self._obs_row = np.zeros(size, dtype=np.int8)
        self._mask_row = np.zeros(cards.N_ACTIONS, dtype=np.int8)
        self._game = state.GameView(self._state)  # read after every kernel call
        self._actions = np.zeros(1, dtype=np.int64)
        # The vector env's step kernel steps this env too (one compile serves both envs); what it
        # writes besides the observation and mask (rewards, final payoffs, ...) is scratch here:
        # the env reads the settled lines themselves.
        self._step_scratch = (
            np.zeros((1, cards.N_SEATS), dtype=np.int64),  # episode stakes
            np.zeros(1, dtype=np.int64),  # seat to act
            np.zeros((1, cards.N_SEATS), dtype=np.float32),  # rewards
            np.zeros(1, dtype=np.bool_),  # terminated
            np.zeros((1, cards.N_SEATS), dtype=np.float32),  # final payoffs
            np.zeros((1, cards.N_SEATS, size), dtype=np.int8),  # final observations (not written)
        )
        self._seats = np.zeros(1, dtype=np.int64)
        self._obs_seat = -1
        self._rewards_pending_zero = False
        self._rng: np.random.Generator | None = None
        #: The episode's last settlement, kept until the next one (None before the first):
        #: ``{"hand_number", "lines", "payoffs"}`` (see the module docstring).
        self.last_settlement: dict[str, Any] | None = None
        high = max(cards.N_TRICKS, 1)
        observation_space = spaces.Dict(
            {
                "observation": spaces.Box(0, high, (size,), dtype=np.int8),
                "action_mask": spaces.Box(0, 1, (cards.N_ACTIONS,), dtype=np.int8),
            }
        )
        action_space = spaces.Discrete(cards.N_ACTIONS)
        self.observation_spaces = {agent: observation_space for agent in self.possible_agents}
        self.action_spaces = {agent: action_space for agent in self.possible_agents}
        # Per-agent copies so that seeding one agent's space does not seed another's.
        for agent in self.possible_agents[1:]:
            self.observation_spaces[agent] = spaces.Dict(
                {
                    "observation": spaces.Box(0, high, (size,), dtype=np.int8),
                    "action_mask": spaces.Box(0, 1, (cards.N_ACTIONS,), dtype=np.int8),
                }
            )
            self.action_spaces[agent] = spaces.Discrete(cards.N_ACTIONS)

    # ------------------------------------------------------------------ spaces
    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[agent]

    # ------------------------------------------------------------------ reset
    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        # Everything is validated before the RNG or the state is touched: a reset that raises
        # changes nothing.
        new_rng = seed_sequence(seed) if seed is not None or self._rng is None else None
        deck, first, banker, hands_given = read_scenario(options)
        if new_rng is not None:
            self._rng = new_rng
        if banker is None:
            banker = int(self._rng.integers(cards.N_SEATS))
        if hands_given and first < 0:
            first = int(core.first_seat_from_cut(int(deck[39]), banker))  # the upcard as cut card
        if hands_given:
            deck = deck_dealing(hands_given, first)
        rng_seed = self._rng.integers(1, 2**63, dtype=np.uint64)
        obs = np.empty(self._obs_shape, dtype=np.int8)
        masks = np.empty(_MASK_SHAPE, dtype=np.int8)
        core.reset_games(
            self._state,
            self._config,
            np.array([rng_seed], dtype=np.uint64),
            np.array([banker], dtype=np.int64),
            deck.reshape(1, cards.N_CARDS),
            np.array([first], dtype=np.int64),
            obs,
            masks,
        )
        self._reset_bookkeeping(state.settlement_info(-1, [0.0] * cards.N_SEATS))
        self._rewards_pending_zero = False
        self.last_settlement = None
        self._check_overflow()
        self._after_kernel(obs, masks)

    # ------------------------------------------------------------------ step
    def step(self, action: Any) -> None:
        agent = self._require_live_episode()
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        mask = self._mask_row
        # Fast path for a plain legal int; anything else goes through the checked, explaining path.
        if not (action.__class__ is int and 0 <= action < _N_ACTIONS and mask[action]):
            action = check_action(action, mask, cards.action_to_text)
        self._cumulative_rewards[agent] = 0
        self._actions[0] = action
        # Fresh output arrays every step: observations already handed out are never overwritten.
        obs = np.empty(self._obs_shape, dtype=np.int8)
        masks = np.empty(_MASK_SHAPE, dtype=np.int8)
        global _compiled_step
        episode_stakes, to_act, rewards, terminated, final_payoffs, final_obs = self._step_scratch
        arguments = (
            self._state,
            self._config,
            self._actions,
            False,  # no auto-reset: the episode ends here
            episode_stakes,
            obs,
            masks,
            to_act,
            rewards,
            terminated,
            final_payoffs,
            final_obs,
        )
        if _compiled_step is None:
            _compiled_step = compiled_for(core.vector_step_games, *arguments)
        _compiled_step(*arguments)
        self._obs_row = obs[0]
        self._mask_row = masks[0]
        game = self._game
        if game.hands_settled:
            self._check_overflow()
            self._settle()
        elif self._rewards_pending_zero:
            for name in self.rewards:
                self.rewards[name] = 0.0
            self._rewards_pending_zero = False
        to_act = game.to_act
        if to_act >= 0:
            self._obs_seat = to_act
            self.agent_selection = self.possible_agents[to_act]
        else:
            self._obs_seat = 0
            self._end_episode()
        if self.render_mode == "human":
            self.render()

    def _after_kernel(self, obs: np.ndarray, masks: np.ndarray) -> None:
        """Adopt the kernel's output buffers and the seat to act (after reset/set_state)."""
        self._obs_row = obs[0]
        self._mask_row = masks[0]
        to_act = self._game.to_act
        self._obs_seat = to_act if to_act >= 0 else 0
        if to_act < 0:
            self._end_episode()
        else:
            self.agent_selection = self.possible_agents[to_act]

    def _check_overflow(self) -> None:
        if self._game.overflowed:
            raise RuntimeError("Madiao settlement line buffer overflowed (more lines than the kernel holds)")

    def _settle(self) -> None:
        lines, payoffs = self.settlement_lines()
        self._set_step_rewards(payoffs)
        self._rewards_pending_zero = True
        hand_number = self._game.last_settled_hand
        self.last_settlement = {"hand_number": hand_number, "lines": lines, "payoffs": payoffs}
        for name in self.agents:
            self.infos[name] = state.settlement_info(hand_number, payoffs)

    def settlement_lines(self) -> tuple[list[dict], list[float]]:
        """Lines settled by the last step (stakes times ``stake``) and the payoffs by seat."""
        payoffs = [0.0] * cards.N_SEATS
        lines = []
        for _, rule, payer, payee, stakes in self._game.settled_lines():
            amount = payments.stakes_to_rewards(stakes, self.stake)
            lines.append({"rule": core.RULE_NAMES[rule], "payer": payer, "payee": payee, "stakes": amount})
            payoffs[payer] -= amount
            payoffs[payee] += amount
        return lines, payoffs

    def _current_mask(self) -> np.ndarray:
        return self._mask_row

    # ------------------------------------------------------------------ observe
    def observe(self, agent: str) -> dict[str, np.ndarray]:
        seat = self._seat_of[agent]
        if seat == self._obs_seat:
            return {"observation": self._obs_row, "action_mask": self._mask_row}
        self._require_reset()
        self._seats[0] = seat
        obs = np.empty(self._obs_shape, dtype=np.int8)
        masks = np.empty(_MASK_SHAPE, dtype=np.int8)
        core.observe_games(self._state, self._config, self._seats, obs, masks)
        return {"observation": obs[0], "action_mask": masks[0]}

    def describe_action(self, action: int) -> str:
        """The text of an action id (``"play 9S"``), as Mao's env and both vector envs offer."""
        return cards.action_to_text(action)

    # ------------------------------------------------------------------ state
    def table(self) -> dict[str, Any]:
        """The full true state in plain Python (for tests, rendering and tools)."""
        self._require_reset()
        game = self._game
        plays = [
            (seat, cards.CARD_NAMES[card], bool(up), k // 4)
            for k, (seat, card, up) in enumerate(game.plays())
        ]
        n_plays = len(plays)
        in_trick = n_plays % 4
        to_act = game.to_act
        return {
            "hands": [cards.names_of(game.hand(seat)) for seat in range(4)],
            "stock": [cards.CARD_NAMES[c] for c in game.stock()],
            "banker": game.banker,
            "first": game.first,
            "phase": PHASE_NAMES[game.phase],
            "to_act": None if to_act < 0 else to_act,
            "trick_number": game.tricks_completed,
            "tricks_won": game.tricks_won(),
            "current_trick": [p[:3] for p in plays[n_plays - in_trick :]] if in_trick else [],
            "history": plays,
            "hand_number": game.hand_number,
            "redeals": game.redeals,
        }

    def get_state(self) -> dict[str, Any]:
        """A picklable snapshot of the whole env (game arrays, RNG, PettingZoo bookkeeping)."""
        self._require_reset()
        return {
            "version": state.STATE_VERSION,
            "config": self._config.copy(),
            "stake": self.stake,
            "arrays": state.game_arrays(self._state, 0),
            "rng": None if self._rng is None else self._rng.bit_generator.state,
            "agents": list(self.agents),
            "agent_selection": self.agent_selection,
            "rewards": dict(self.rewards),
            "cumulative_rewards": dict(self._cumulative_rewards),
            "terminations": dict(self.terminations),
            "truncations": dict(self.truncations),
            "infos": {name: state.copy_info(info) for name, info in self.infos.items()},
            "last_settlement": state.copy_settlement(self.last_settlement),
            "rewards_pending_zero": self._rewards_pending_zero,
        }

    def set_state(self, snapshot: dict[str, Any]) -> None:
        """Restore a ``get_state()`` snapshot taken from an env with the same rule options.

        The snapshot is validated completely first (``madiao_env.state.validate_snapshot``): a bad
        one raises ``ValueError`` naming the field and leaves this env exactly as it was.
        """
        valid = state.validate_snapshot(snapshot, self._config, self.stake)
        restored = state.MadiaoState(*valid["arrays"])
        to_act = state.GameView(restored).to_act
        seats = np.array([max(to_act, 0)], dtype=np.int64)
        obs = np.empty(self._obs_shape, dtype=np.int8)
        masks = np.empty(_MASK_SHAPE, dtype=np.int8)
        core.observe_games(restored, self._config, seats, obs, masks)
        # Nothing above wrote to the env: from here on only assignments that cannot fail.
        state.write_game(self._state, 0, valid["arrays"])
        if valid["rng"] is None:
            self._rng = None
        elif self._rng is None:
            self._rng = state.rng_from_state(valid["rng"])
        else:  # the state was checked: loading it into the env's own generator cannot fail
            self._rng.bit_generator.state = valid["rng"]
        self.agents = valid["agents"]
        self.agent_selection = valid["agent_selection"]
        self.rewards = valid["rewards"]
        self._cumulative_rewards = valid["cumulative_rewards"]
        self.terminations = valid["terminations"]
        self.truncations = valid["truncations"]
        self.infos = valid["infos"]
        self.last_settlement = valid["last_settlement"]
        self._rewards_pending_zero = valid["rewards_pending_zero"]
        self._seats[0] = seats[0]
        self._obs_row = obs[0]
        self._mask_row = masks[0]
        self._obs_seat = int(seats[0])

    # ------------------------------------------------------------------ render
    def render(self, seat: int | None = None) -> str | None:
        """The table as text (``render_mode`` "ansi" returns it, "human" prints it); ``seat=k``
        shows only what seat ``k`` sees (see the module docstring)."""
        if seat is not None:
            seat = check_seat(seat, "render seat")
        if self.render_mode is None:
            gymnasium.logger.warn("render() called without a render_mode; nothing to render")
            return None

        text = render_table(self.table(), self.last_settlement, seat)
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        pass
