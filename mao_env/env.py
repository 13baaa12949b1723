"""Mao — PettingZoo AEC environment ``mao_v0`` (the environment is the Mao Master).

``from mao_env import mao_v0``; ``mao_v0.env(...)`` is the env as PettingZoo's classic games
build theirs (``TerminateIllegalWrapper`` + ``AssertOutOfBoundsWrapper`` +
``OrderEnforcingWrapper``, see "Illegal actions"), ``mao_v0.raw_env(...)`` the bare one.

Mao is a shedding game whose subject is rules nobody explains: players learn them from penalty
calls, and every round's winner adds a secret rule. ``docs/mao-rules.md`` gives the rules in
full; ``mao_env.rules`` holds the secret-rule library.

Cards: 52 suited types plus one joker type (53 types; a deck has 54 cards, two of them jokers);
one deck per three players, rounded up. The joker is the nine of diamonds for every purpose.

Agents ``player_0 .. player_{n-1}`` (3–8; 2 allowed). One agent acts at a time; a turn is a few
sub-actions, each one AEC step: ``PLAY(card type)`` or ``DRAW``, then any ``SAY(phrase)``, then
``END_TURN``, when the Mao Master judges the turn and announces the calls (with
``calls="players"`` a call window opens instead: see "Players' calls" below). With a pending
seven chain, ``DRAW`` takes the chain's penalty cards (the turn then goes on, or ends with
``seven_turn_ends=True``). The round winner then chooses a rule (its own decision phase): it may
propose any library rule; one already in force is refused, to the proposer alone (the rule joins
its "known" block; no event, nothing changes for the other seats), and it proposes again.

Action space: ``Discrete(57 + 16 + 19 + 45)`` (see ``mao_env.cards``)::

    0..52    play card type (AC..KC, AD..KD, AH..KH, AS..KS, JK)     53  draw
    54..69   say phrase (nice-day, penalty-card, thank-you, card-name, badger, last-card, mao,
             clubs, diamonds, hearts, spades, rabbit, hedgehog, fox, chairman, pass)
    70       end turn
    71..89   (call window) call reason r: failure to say phrase r (0..15), bad card (16),
             talking (17), Mao in vain (18)
    90       (call window) no more calls             91  (call window) point of order
    92..136  add library rule

Action mask (``int8``, all zeros off turn): ``mask="physical"`` (default) is what a person can do:
play a held card or draw at the start of a turn; say each phrase at most once, or end the turn,
afterwards (after "Mao" only the end of the turn; after ``max_sub_actions - 1`` sub-actions only
the end of the turn); propose any library rule the seat does not know to be in force (not its own,
not one refused to it: the mask says nothing of the other seats' rules); in a call window, call any
reason not yet called in it, pass or say "point of order". ``mask="rules"`` is what the full rule
set allows (it leaks the secret rules: for curricula, debugging and the oracle agent; in a call
window only the correct calls; at a rule choice only the rules not in force).

Observation ``{"observation": float32[obs_dim], "action_mask": int8[n_actions]}``; index table
(``K = n_events``, ``R = 45`` library rules, ``E = 132`` features per event, ``E + R`` with
``reasons="revealed"``; generated from the named pieces of :mod:`mao_env.layout`, where agents
read them by name: ``obs[SLICES["hand"]]``, ``event_row[EVENT_SLICES["card"]]``)::

    0..52        own hand: cards held of each type
    53..105      top card of the pile (one-hot)
    106..109     the valid suit: the suit named with a Jack, else the top card's (one-hot)
    110          1 if a suit was named
    111          direction: 1 = increasing seat numbers
    112          pending seven chain: cards the acting seat takes unless it plays a seven
    113..116     phase: turn start, speaking, choosing a rule, call window (one-hot)
    117..169     this turn (own turn, or the one judged in a call window): the card played (one-hot)
    170          ... 1 if drew a card
    171          ... seven-chain cards taken
    172..187     ... phrases said
    188..195     (call window) relative seat whose turn is judged (one-hot)
    196..203     hand sizes by relative seat (0 = self), zero beyond n_players
    204          stack size
    205          pile size
    206          rounds finished
    207          active rules
    208..252     rules this player knows are in force: its own, and those refused to it (multi-hot)
    253..        the last K public events, most recent first, E (+R) features each:
      +0         1 if the slot holds an event
      +1..8      relative seat of the actor (one-hot)
      +9..14     kind: play, bad card (taken back), draw, new rule introduced, call, point of order
      +15..67    card played (valid or bad), none for draws (drawn cards are private)
      +68..83    phrases said
      +84..102   call reasons: failure to say phrase p, bad card, talking, Mao in vain (0: reasons="hidden")
      +103..121  (players' calls) reasons called wrongly (bad calls)
      +122       number of calls
      +123       penalty cards for calls
      +124       seven-chain cards taken
      +125       cards a rule made the next seat take
      +126       1 if this turn won the round (Mao)
      +127       relative seat that took those cards
      +128..131  suit named with a Jack (one-hot)
      +132..     (reasons="revealed") the library rules behind the calls (multi-hot)

Nothing of other hands and nothing of secret rules a player did not author or have refused is
observed (default ``reasons="calls"``: a validity rule shows as "bad card", a speech rule as
"failure to say 'P'").

Rewards (per step, every seat): ``win_reward`` (default 1.0) to the round winner, and
``penalty_card_reward`` (default -0.1) per penalty card received (calls, the seven chain, a wrong
"Mao"'s three cards, a forgotten "Mao"'s ``forgotten_mao_cards``, bad calls; cards a dynamics
rule makes a seat take are not penalties).

Infos have the same keys and shapes at every step, so that a generic collector can stack them:
``infos[agent]`` = ``{"n_calls": int, "call_cards": int, "round_blocked": bool, "illegal_action":
bool, "illegal_action_error": str}``: the number of calls the last step made, the cards this agent
takes for them, whether the last step blocked the round (nothing was left to take and no seat could
play: the round ended with no winner and no new rule, ``docs/mao-rules.md``), and the
illegal-action entries (False and "" unless ``env()`` ended the episode on this
agent's illegal action).

Calls: after every step ``env.unwrapped.last_calls`` lists the calls of that step (a list of
varying length, so not in ``infos``): ``{"player"`` (who takes the cards), ``"caller"`` (``None``
for the Mao Master), ``"bad_call"``, ``"call"``, ``"cards"}`` plus, unless ``reasons="hidden"``, ``"code"``
(0 bad card, 1 failure to say, 2 talking, 3 Mao in vain, 4 bad call), ``"reason"`` and ``"phrase"``
(for a bad call ``"called"``: the reason called), and with ``reasons="revealed"`` the library
``"rule"`` behind it (-1 for a base rule).

Players' calls (``calls="players"``; default ``"master"``; ``docs/mao-rules.md`` has the full
reading): after ``END_TURN`` nobody is penalised yet; a call window opens on the turn. Every other
seat, in seat order from the one after the mover (whatever the direction), acts in turn: any number
of ``CALL(reason)`` (each reason at most once per window) then ``NO_CALL``; or ``POINT_OF_ORDER``,
which settles the turn at once (the seats after it lose their chance). A correct call (the fault
happened) gives the mover the Mao Master's penalty for it; a wrong one gives the caller the card(s)
it meant to give ("Bad call"; three for the two "Mao" reasons); a fault nobody calls is unpunished,
and an uncalled bad card stays on the pile and acts as a good one. The verdict is public at once,
the cards move when the turn is settled (the last ``NO_CALL`` or the point of order): rewards come
then. The turn wins the round if "Mao" was said, the card stayed, the hand is empty and no correct
call was made. In a window every seat observes the phase "call window", the mover and its turn
(card, draw, phrases); each call is a public event (kind "call": caller, reason, cards, bad call or
not), a point of order too, and the settled turn's event lists the reasons that stood and the bad
calls. ``env.window_faults()`` (Mao Master knowledge, for evaluation) gives the faults of the turn
under judgement.

Episodes: ``num_rounds`` rounds — termination — or ``max_steps`` sub-actions — truncation for
all agents. Once every agent has stepped out of an ended episode, ``step`` raises
``RuntimeError`` ("the episode is over: call reset()").

Options: ``env()`` and ``raw_env()`` take the same keyword arguments (``help(mao_v0.env)`` lists
them): ``render_mode`` (None, "ansi", "human": the table and every call as the Mao Master says
it) and the game options, ``n_players`` also positional: the fields of
:class:`mao_env.options.MaoOptions`, each documented once, under its field. That object checks them
(``TypeError``/``ValueError`` naming a bad one), is kept as ``env.options``, builds the kernels'
config row, and is what the batched env builds from too.

Illegal actions: ``raw_env()`` raises ``cardgame_core.aec.IllegalActionError`` for an action
outside the mask, naming it as text and listing the legal ones; nothing changes. ``env()``, as
PettingZoo's classic games: an id the mask forbids ends the episode for every agent (all
terminated and truncated, PettingZoo's ``TerminateIllegalWrapper``); the offender's reward is
``ILLEGAL_ACTION_REWARD`` (-1), the others' 0, and the offender's ``infos`` hold
``"illegal_action": True`` and ``"illegal_action_error"``, the explanation ``raw_env()`` would
raise. Why -1, PettingZoo's value: with the default rewards it is a round's win lost, or ten
penalty cards, more than a player who follows the base rules takes in a round; a learner that
ignores the mask and takes more could still prefer ending the episode illegally, so mask the
actions. Other penalties: wrap ``raw_env()`` in PettingZoo's wrappers yourself. An id outside
the action space is stopped by ``AssertOutOfBoundsWrapper`` (an ``AssertionError``), and
something that is not an action id (a bool, a float, an array) raises ``IllegalActionError``.

Scenario API: ``reset(options={...})`` with ``hands`` ({seat: ["9D", ...]}), ``pile`` (bottom to
top), ``stack`` (next card drawn first), ``rules`` ([rule id] or [(rule id, author)]),
``fixed_rules``, ``current`` (seat to act), ``direction`` (1 or -1), ``pending_seven`` (at most
the cards in play), ``named_suit`` ("hearts"). Cards not
placed are dealt as usual (five per unlisted seat, one pile card, the rest shuffled into the stack).
Every option is checked before the random stream or the game is touched: a ``reset`` that raises
changes nothing.
``get_state()``/``set_state()`` clone and restore everything, the random stream included; the
snapshot format and its validation are :mod:`mao_env.state`'s. ``set_state`` takes a snapshot of
an env with the same game options (the observation options ``mask``, ``reasons``, ``n_events``,
``obs_type`` may differ), checks it completely first (every index, count and card, the options,
the bookkeeping) and raises ``ValueError`` naming the field of a bad one, leaving the env as it was.

Per-seat view: ``env.unwrapped.seat_view(seat)`` returns, as text in any render mode, what one seat
may know: its hand, the top card, the suit to follow, the direction, the seven chain, the other
seats' hand sizes, the rounds, the number of active secret rules, the ones this seat authored and
the ones refused to it (with their descriptions), its own turn so far, and the last public events
with the Mao Master's calls (as the ``reasons`` mode lets the table hear them; ``"revealed"``
names the rules behind calls, for everyone). ``render(seat=k)`` (on ``env()`` too) returns it with
``render_mode="ansi"`` (prints it with ``"human"``); ``render()`` without a seat is the Mao
Master's view with every hand.
Text helpers: ``env.action_from_text("play 9D" | "draw" | "say last-card" | "end" |
"call bad-card" | "call failure last-card" | "no call" | "point of order" | "rule 12")``,
``env.describe_action(id)``; ``allowed_actions(env.get_state()["arrays"])`` is the rules mask.

Its version history is in ``docs/environments.md``.
"""

from __future__ import annotations

import functools
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from gymnasium.utils import EzPickle
from pettingzoo import AECEnv

from cardgame_core.aec import (
    CardGameAECEnv,
    IllegalActionError,
    check_action,
    seed_sequence,
    wrap_like_pettingzoo_classic,
)
from cardgame_core.jit import compiled_for
from cardgame_core.options_doc import document_options, option_values
from mao_env import cards, core
from mao_env import render as rendering
from mao_env import rules as rule_library
from mao_env import state as snapshots
from mao_env.options import (  # noqa: F401 (the option tables are re-exported from here, as before)
    MASKS,
    MAX_COUNT_OPTION,
    OBS_TYPES,
    REASONS,
    ROUND_STYLES,
    RULE_CHOICES,
    SEVEN_PHRASES,
    MaoOptions,
    parse_fixed_rules,
    parse_rules,
)
from mao_env.options import check_int as _check_int
from mao_env.render import (  # noqa: F401 (describe_call is imported from here, as before)
    CALL_REASONS,
    call_text,
    describe_call,
)
from mao_env.scenario import parse_scenario, place_scenario
from mao_env.state import STATE_KEYS

# The kernels of the step path compiled for the AEC env's argument types (the same for every env:
# its own buffers, a game index, an action and its option values as Python scalars), made at
# their first use: a call skips Numba's type dispatch of the state tuple (cardgame_core.jit).
_step_game = None
_step_rewards = None
_observe = None

__all__ = ["IllegalActionError", "allowed_actions", "env", "raw_env"]

_EVENT_KINDS = ("play", "bad card", "draw", "new rule", "call", "point of order")


def allowed_actions(state: dict[str, np.ndarray], game: int = 0) -> np.ndarray:
    """Which actions the full active rule set allows the acting seat now (int8 mask), from a
    state as returned by ``get_state()`` — the ``mask="rules"`` mask and the oracle's choices.
    The arrays are checked first (:func:`mao_env.state.check_state_arrays`: ``ValueError``
    naming a bad field); an ended game allows nothing."""
    arrays = snapshots.check_state_arrays(state, game)
    out = np.zeros(cards.n_actions(rule_library.N_RULES), dtype=np.int8)
    core.action_mask(arrays, rule_library.LIBRARY, int(game), True, out)
    return out


#: ``env()``'s reward for an illegal action (see "Illegal actions" in the module docstring).
ILLEGAL_ACTION_REWARD = -1.0
_RENDER_MODE_DOC = (
    'None, "ansi" (render() returns the table as text) or "human" (prints it, with every call); '
    "render(seat=k) shows what seat k may know."
)


@document_options(MaoOptions, render_mode=_RENDER_MODE_DOC)
def env(
    n_players: int = 4,
    *,
    num_rounds: int = 1,
    max_steps: int = 3000,
    mask: str = "physical",
    reasons: str = "calls",
    rule_choice: str = "agent",
    rounds: str = "plain",
    seven_turn_ends: bool = False,
    seven_phrase: str = "penalty card",
    talking: bool = True,
    calls: str = "master",
    forgotten_mao_cards: int = 3,
    max_sub_actions: int = 18,
    n_events: int = 8,
    obs_type: str = "history",
    win_reward: float = 1.0,
    penalty_card_reward: float = -0.1,
    render_mode: str | None = None,
) -> AECEnv:
    """The Mao AEC env as PettingZoo's classic games build ``env()``: an illegal action ends the
    episode (the offender gets ``ILLEGAL_ACTION_REWARD``; its ``infos`` say why), ``render(seat=k)``
    works through the wrappers. ``raw_env()`` takes the same arguments and raises on an illegal
    action instead. Documentation: the ``mao_env.env`` docstring."""
    bare = raw_env(**locals())  # the parameters are raw_env's, in the same order
    return wrap_like_pettingzoo_classic(bare, illegal_reward=ILLEGAL_ACTION_REWARD)


@document_options(MaoOptions, render_mode=_RENDER_MODE_DOC)
class raw_env(CardGameAECEnv, EzPickle):  # noqa: N801 (PettingZoo naming)
    """The bare Mao AEC env, the environment as Mao Master: an illegal action raises
    ``IllegalActionError`` naming it. ``env()`` is this env in PettingZoo's wrappers.
    Documentation: the ``mao_env.env`` docstring."""

    metadata: ClassVar[dict] = {
        "name": "mao_v0",
        "render_modes": ["ansi", "human"],
        "is_parallelizable": False,
    }

    def __init__(
        self,
        n_players: int = 4,
        *,
        num_rounds: int = 1,
        max_steps: int = 3000,
        mask: str = "physical",
        reasons: str = "calls",
        rule_choice: str = "agent",
        rounds: str = "plain",
        seven_turn_ends: bool = False,
        seven_phrase: str = "penalty card",
        talking: bool = True,
        calls: str = "master",
        forgotten_mao_cards: int = 3,
        max_sub_actions: int = 18,
        n_events: int = 8,
        obs_type: str = "history",
        win_reward: float = 1.0,
        penalty_card_reward: float = -0.1,
        render_mode: str | None = None,
    ) -> None:
        game_options = option_values(MaoOptions, locals())
        EzPickle.__init__(self, render_mode=render_mode, **game_options)
        super().__init__()
        #: The validated options (:class:`mao_env.options.MaoOptions`); each is also an attribute
        #: of the env under its own name (``mask`` as ``mask_mode``), as the env has always had them.
        self.options = MaoOptions(**game_options)
        options = self.options
        for name in game_options:
            setattr(self, "mask_mode" if name == "mask" else name, getattr(options, name))
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode must be None or one of {self.metadata['render_modes']}, got {render_mode!r}"
            )
        self.render_mode = render_mode
        self.n_decks = options.n_decks
        self.possible_agents = options.possible_agents
        self.n_actions = cards.n_actions(rule_library.N_RULES)
        # Counts (cards, rounds, calls) never exceed the cards in play or the rounds played.
        self._observation_high = float(
            max(self.n_decks * cards.CARDS_PER_DECK, self.num_rounds, core.MAX_CALLS)
        )
        self.obs_dim = options.obs_dim
        #: The game's arrays (``mao_env.state.MaoState``, one game), written in place by the kernels.
        self._state = snapshots.new_state(1)
        self._game = snapshots.GameView(self._state)
        self._spec = self.snapshot_target()
        self._mask = np.zeros(self.n_actions, dtype=np.int8)
        self._no_mask = np.zeros(self.n_actions, dtype=np.int8)
        self._rng = seed_sequence(None)
        self.last_calls: list[dict[str, Any]] = []
        self._announcements: list[str] = []
        self._narrated = 0  # public events already told by render
        self._has_reset = False
        # Step-path helpers: the seat of each agent, reward buffers, and whether the current
        # rewards / infos already hold what a quiet step (no penalty, no call) would write.
        self._by_rules = options.by_rules
        self._reasons_code = options.reasons_code
        self._seat_of = {agent: seat for seat, agent in enumerate(self.possible_agents)}
        self._step_rewards = np.zeros(self.n_players, dtype=np.float64)
        self._zero_rewards = np.zeros(self.n_players, dtype=np.float64)
        self._rewards_zero = False
        self._infos_quiet = False

    # -- spaces -----------------------------------------------------------------------------------
    @functools.cache  # noqa: B019 (one space per agent, as PettingZoo envs do)
    def observation_space(self, agent: str) -> spaces.Dict:
        return spaces.Dict(
            {
                "observation": spaces.Box(0.0, self._observation_high, (self.obs_dim,), np.float32),
                "action_mask": spaces.Box(0, 1, (self.n_actions,), np.int8),
            }
        )

    @functools.cache  # noqa: B019
    def action_space(self, agent: str) -> spaces.Discrete:
        return spaces.Discrete(self.n_actions)

    # -- reset / step -----------------------------------------------------------------------------
    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        # Everything is checked before the random stream or the game is touched: a reset that
        # raises leaves the env exactly as it was.
        scenario = parse_scenario(options, self.options) if options is not None else None
        if seed is not None or not self._has_reset:
            self._rng = seed_sequence(seed)
        game_seed = int(self._rng.integers(0, 2**63 - 1))
        self.write_options(self._state.scalars)
        self._game.clear_rule_queue()
        # As uint64, the type the vector env's kernels pass: one compile of reset_game serves both.
        core.reset_game(self._state, 0, np.uint64(game_seed))
        if scenario is not None:
            place_scenario(self._state, scenario, self.n_players, self._rng)
        self._reset_bookkeeping(snapshots.calls_info(0, 0))
        self._rewards_zero = True
        self._infos_quiet = False
        self.last_calls = []
        self._announcements = []
        self._narrated = self._game.n_events
        self._has_reset = True
        self._after_step()

    def write_options(self, scalars: np.ndarray) -> None:
        """Clear the ``scalars`` rows (``[B, N_SCALARS]``) and write this env's options into them
        (:meth:`mao_env.options.MaoOptions.write_config`)."""
        self.options.write_config(scalars)

    def step(self, action: Any) -> None:
        try:
            agent = self.agent_selection
        except AttributeError:
            self._require_reset()
        if agent not in self.terminations:  # every agent has stepped out of the ended episode
            raise RuntimeError(f"the episode is over: call reset() before step() (agent {agent!r} is done)")
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        mask = self._mask
        # The common case (a plain int inside the mask) is checked inline; anything else goes
        # through check_action, which raises the explaining error.
        if not (type(action) is int and 0 <= action < self.n_actions and mask[action]):
            action = check_action(action, mask, self.describe_action)
        self._cumulative_rewards[agent] = 0.0
        global _step_game, _step_rewards
        state = self._state
        # One kernel call applies the action and writes the next mask; its flags say which of
        # rewards, calls and the episode's end need any Python work at all in this step.
        arguments = (state, rule_library.LIBRARY, 0, action, self._by_rules, self.max_steps, mask)
        if _step_game is None:
            _step_game = compiled_for(core.step_game, *arguments)
        flags = _step_game(*arguments)
        # A blocked round is rare and changes no flag of its own: one scalar read tells.
        blocked = bool(self._game.round_blocked)
        if flags & core.STEP_CALLS or blocked:
            self.last_calls = []
            if flags & core.STEP_CALLS:
                self._record_calls(self._seat_of[agent])
            n_calls = len(self.last_calls)
            for name in self.agents:
                taken = sum(call["cards"] for call in self.last_calls if call["player"] == name)
                self.infos[name] = snapshots.calls_info(n_calls, taken, blocked)
            self._infos_quiet = False
        elif not self._infos_quiet:
            self.last_calls = []
            for name in self.agents:
                self.infos[name] = snapshots.calls_info(0, 0)
            self._infos_quiet = True
        if self.render_mode is not None:
            self._narrate_new_events()
        if flags & core.STEP_REWARDS:
            arguments = (state, 0, self.win_reward, self.penalty_card_reward, self._step_rewards)
            if _step_rewards is None:
                _step_rewards = compiled_for(core.step_rewards, *arguments)
            _step_rewards(*arguments)
            self._set_step_rewards(self._step_rewards)
            self._rewards_zero = False
        elif not self._rewards_zero:
            self._set_step_rewards(self._zero_rewards)
            self._rewards_zero = True
        self.agent_selection = self.possible_agents[self._game.current_seat]
        if flags & core.STEP_DONE:
            self._end_episode(truncated=False)
        elif flags & core.STEP_TRUNCATED:
            self._end_episode(truncated=True)
        if self.render_mode == "human":
            self.render()

    def _after_step(self) -> None:
        game = self._game
        self.agent_selection = self.possible_agents[game.current_seat]
        if game.done:
            self._end_episode(truncated=False)
        elif game.steps >= self.max_steps:
            self._end_episode(truncated=True)
        if game.done or game.steps >= self.max_steps:
            self._mask = self._no_mask.copy()
            return
        core.action_mask(self._state, rule_library.LIBRARY, 0, self._by_rules, self._mask)

    def _record_calls(self, seat: int) -> None:
        """Copy the calls of the last step into ``last_calls`` (as the reasons mode lets the table
        hear them): who takes the cards, who called (``None``: the Mao Master), the verdict."""
        agents = self.possible_agents
        for code, phrase, n_cards, rule, player, caller in self._game.calls():
            bad_call = code == core.CALL_BAD_CALL
            call: dict[str, Any] = {
                "player": agents[player],
                "caller": agents[caller] if caller >= 0 else None,
                "bad_call": bad_call,
                "call": call_text(code, phrase, self.reasons, rule),
                "cards": n_cards,
            }
            if self.reasons != "hidden":
                call["code"] = code
                call["reason"] = CALL_REASONS[code]
                call["phrase"] = cards.PHRASE_KEYS[phrase] if phrase >= 0 and not bad_call else None
                if bad_call:
                    call["called"] = cards.call_reason_key(phrase)
            if self.reasons == "revealed":
                call["rule"] = rule
            self.last_calls.append(call)

    def _narrate_new_events(self) -> None:
        """Queue the table talk of every public event since the last call, for ``render``."""
        self._announcements += rendering.narrate(self, self._narrated, self.last_calls)
        self._narrated = self._game.n_events

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        seat = self._seat_of.get(agent)
        if seat is None:
            raise ValueError(f"unknown agent {agent!r}; agents: {', '.join(self.possible_agents)}")
        self._require_reset()
        observation = np.empty(self.obs_dim, dtype=np.float32)
        global _observe
        state, n_events, reasons = self._state, self.n_events, self._reasons_code
        arguments = (state, rule_library.LIBRARY, 0, seat, n_events, reasons, observation)
        if _observe is None:
            _observe = compiled_for(core.observe, *arguments)
        _observe(*arguments)
        mask = self._mask.copy() if agent == self.agent_selection else np.zeros(self.n_actions, np.int8)
        return {"observation": observation, "action_mask": mask}

    def _current_mask(self) -> np.ndarray:
        return self._mask

    def describe_action(self, action: int) -> str:
        return cards.action_to_text(action, rule_library.N_RULES)

    def action_from_text(self, text: str) -> int:
        """The action id of ``"play 9D"``, ``"draw"``, ``"say last-card"``, ``"end"``, ``"rule 12"``."""
        return cards.text_to_action(text, rule_library.N_RULES)

    def allowed_actions(self) -> np.ndarray:
        """What the full rule set allows the acting seat now (see :func:`allowed_actions`)."""
        return allowed_actions(self.get_state()["arrays"])

    # -- inspection -------------------------------------------------------------------------------
    @property
    def game_view(self) -> snapshots.GameView:
        """Named reads of the game's arrays (a live :class:`mao_env.state.GameView`): the table
        state by name, for tools and displays. Read only: its setters place hand-set tables and
        bypass this env's bookkeeping."""
        return self._game

    @property
    def current_seat(self) -> int:
        return self._game.current_seat

    def hand(self, seat: int) -> list[str]:
        """The short names of the cards ``seat`` holds (one entry per copy)."""
        counts = self._state.hands[0, seat]
        return [cards.CARD_NAMES[c] for c in range(cards.N_CARD_TYPES) for _ in range(int(counts[c]))]

    def top_card(self) -> str:
        return cards.CARD_NAMES[self._game.top_card()]

    def active_rules(self) -> list[tuple[int, int]]:
        """(rule id, author seat) of every active secret rule — Mao Master knowledge."""
        return self._game.active_rules()

    def refused_rules(self, seat: int) -> list[int]:
        """The rules the Mao Master refused when ``seat`` proposed them (each already in force),
        this episode: what the seat knows of the rules besides its own."""
        seat = _check_int("seat", seat, 0, self.n_players - 1)
        refused = self._game.refused_rules(seat)
        return [rule for rule in range(rule_library.N_RULES) if (refused >> rule) & 1]

    def in_call_window(self) -> bool:
        """Whether the seats are calling on the last turn (``calls="players"``)."""
        return self._game.phase == core.PH_CALL

    def window_faults(self) -> dict[int, int]:
        """In a call window: the faults of the turn under judgement, as the Mao Master would call
        them (call reason -> penalty cards), called or not — Mao Master knowledge (evaluation,
        tests). Empty outside a window."""
        if not self.in_call_window():
            return {}
        return {reason: cards_ for reason, cards_ in enumerate(self._game.fault_cards()) if cards_}

    @property
    def round_won_by(self) -> int:
        """The seat that won a round in the last step, -1 if none."""
        return self._game.round_won_by

    def public_events(self) -> list[dict[str, Any]]:
        """The public event records still in the buffer, oldest first: who, kind, card, phrases,
        calls (reason bits as observed in the current reasons mode) and cards."""
        kinds = _EVENT_KINDS
        records = []
        for _, e in self._game.recent_events():
            record = {
                "seat": e.seat,
                "kind": kinds[e.kind],
                "card": cards.CARD_NAMES[e.card] if e.card >= 0 else None,
                "phrases": [cards.PHRASE_KEYS[p] for p in range(cards.N_PHRASES) if (e.phrases >> p) & 1],
                "n_calls": e.n_calls,
                "penalty_cards": e.penalty_cards,
                "chain_cards": e.chain_cards,
                "forced_draw": e.forced_draw,
                "forced_seat": e.forced_seat,
                "named_suit": cards.SUIT_NAMES[e.named_suit] if e.named_suit >= 0 else None,
                "won": bool(e.won),
            }
            if self.reasons != "hidden":
                record["call_bits"] = e.calls
                record["bad_call_bits"] = e.bad_calls
            if self.reasons == "revealed":
                record["rules"] = [r for r in range(rule_library.N_RULES) if (e.rule_bits >> r) & 1]
            records.append(record)
        return records

    # -- clone and restore --------------------------------------------------------------------------
    def snapshot_target(self) -> snapshots.SnapshotTarget:
        """What a snapshot must agree with to be set into this env (see :mod:`mao_env.state`)."""
        return self.options.snapshot_target()

    def get_state(self) -> dict[str, Any]:
        """Everything needed to continue identically (picklable; the format is
        :mod:`mao_env.state`'s): arrays, rewards, flags, RNG, and the options of the game."""
        self._require_reset()
        return {
            "version": snapshots.SNAPSHOT_VERSION,
            "options": self.options.game_options(),
            "arrays": {key: array.copy() for key, array in zip(STATE_KEYS, self._state, strict=True)},
            "agents": list(self.agents),
            "rewards": dict(self.rewards),
            "cumulative_rewards": dict(self._cumulative_rewards),
            "terminations": dict(self.terminations),
            "truncations": dict(self.truncations),
            "infos": {agent: dict(info) for agent, info in self.infos.items()},
            "reset_rng": self._rng.bit_generator.state,
            "last_calls": list(self.last_calls),
        }

    def set_state(self, state: dict[str, Any]) -> None:
        """Restore a state from :meth:`get_state` of an env with the same game options (the
        observation options may differ). The snapshot is checked completely first
        (:func:`mao_env.state.validate_snapshot`): a bad one raises ``ValueError`` naming the
        field and leaves this env exactly as it was."""
        snapshot = snapshots.validate_snapshot(state, self._spec, caller="set_state")
        for source, target in zip(snapshot.arrays, self._state, strict=True):
            target[...] = source
        self.agents = snapshot.agents
        self.rewards = snapshot.rewards
        self._cumulative_rewards = snapshot.cumulative_rewards
        self.terminations = snapshot.terminations
        self.truncations = snapshot.truncations
        self.infos = snapshot.infos
        self._rng = snapshot.reset_rng
        self.last_calls = snapshot.last_calls
        self._announcements = []
        self._narrated = self._game.n_events
        self._has_reset = True
        self._rewards_zero = False
        self._infos_quiet = False
        self.agent_selection = self.possible_agents[self.current_seat]
        if self.agents and self.agent_selection not in self.agents:
            # The acting seat already stepped out of the ended episode: the others step out next.
            self.agent_selection = self.agents[0]
        if self._game.done or self._game.steps >= self.max_steps:
            self._mask = self._no_mask.copy()
        else:
            core.action_mask(self._state, rule_library.LIBRARY, 0, self._by_rules, self._mask)

    # -- render ------------------------------------------------------------------------------------
    def render(self, seat: int | None = None) -> str | None:
        """The table as text (``render_mode="ansi"``: returned; ``"human"``: printed; ``None``:
        nothing). Without ``seat``: the Mao Master's view, every hand shown, with the table talk
        since the last render. With ``seat``: what that seat may know (:meth:`seat_view`)."""
        if seat is not None:
            text = self.seat_view(seat)
        elif self.render_mode is None:
            return None
        else:
            text = rendering.master_view(self, self._announcements)
            self._announcements = []
        if self.render_mode == "human":
            print(text)
            return None
        return text if self.render_mode == "ansi" else None

    def seat_view(self, seat: int, n_recent: int = 8) -> str:
        """The table as seat ``seat`` sees it, as text (works in every render mode): its own hand,
        the top card, the suit to follow, the direction, the seven chain, every other seat's hand
        size, the rounds, how many secret rules are active, the ones this seat authored and those
        refused to it, its own turn so far, and the last ``n_recent`` public events with the Mao
        Master's calls (as the ``reasons`` mode lets the table hear them). Nothing of other hands,
        nothing of rules it neither authored nor had refused (with ``reasons="revealed"`` the calls
        name their rules, for everyone)."""
        return rendering.seat_view(self, seat, n_recent)

    def close(self) -> None:
        pass
