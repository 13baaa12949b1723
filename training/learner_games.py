"""The learner's side of a batched card game: one learner seat per game, the other seats played by
opponents inside. The one implementation behind both learner adapters of the batched envs, the SB3
``VecEnv`` (:class:`madiao_mao.training.sb3.adapter.LearnerVecEnv`) and the Gymnasium ``VectorEnv``
(:class:`madiao_mao.training.gymnasium_envs.LearnerVectorEnv`); it needs neither stable-baselines3 nor torch.

The learner gets ITS OWN seat's reward, accumulated over everything that happened since its
previous decision, terminal rewards included when the game ended on another seat's move
(PettingZoo issue 1147; ``tests/common/test_adapters.py`` checks this case explicitly). Opponents
use the batched call shape ``(observations[M, obs_dim], masks[M, n_actions]) -> actions[M]``,
handed fresh copies of the rows of the games where they are to act (theirs to keep).

Opponents with a memory per game (Mao's Bayesian player keeps a posterior per game seat) get the
rows of a call from different games at every call, so a batch index cannot be their key. An
opponent whose ``act_batch`` takes ``rows`` (:func:`takes_row_keys`) is handed, with every call,
the key of each row's game seat (``game * n_players + seat``); when a game ends, every opponent
with a ``reset_rows`` of its own (:func:`keeps_game_memory`) forgets that game's keys before the
next game's first move. An opponent that keeps a memory per game but takes no keys is refused.

The bookkeeping of every batched step (crediting the learner's rewards, finishing games, finding
the games where an opponent is to act) is one compiled pass over the games, so the learner view
costs little beside the batched env itself (``python -m madiao_mao.benchmarks --only batched``).
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from cardgame_core.adapters import check_learner_seat, opponent_call
from cardgame_core.jit import compiled_for, njit
from cardgame_core.vector import NO_ACTION, VectorCardEnv, VectorStep
from madiao_mao.agents.base import Agent

BatchOpponent = Callable[[np.ndarray, np.ndarray], np.ndarray]

OPPONENT_DRAWS = ("per_seat", "per_game")

#: ``ended[g]`` codes of one batched step: the learner's episode ended (its results are recorded),
#: or a second episode ended in the same learner step, before the learner moved in it.
LEARNER_EPISODE_ENDED = 1
EPISODE_WITHOUT_LEARNER_ENDED = 2


def keeps_game_memory(agent: Any) -> bool:
    """Whether ``agent`` remembers each ``act_batch`` row's game: it has a ``reset_rows`` of its
    own (the base ``Agent.reset_rows`` is a no-op)."""
    reset_rows = getattr(type(agent), "reset_rows", None)
    return callable(reset_rows) and reset_rows is not Agent.reset_rows


def refuse_memory_without_keys(agent: Any, label: str) -> None:
    """A ValueError naming ``label`` if ``agent`` keeps a memory per game but cannot be handed the
    game-seat key of each row (a table hands it rows of different games at every call)."""
    if keeps_game_memory(agent) and not takes_row_keys(agent):
        raise ValueError(
            f"{label} keeps a memory per game but its act_batch takes no rows= keys: it would mix the "
            "games of a table up"
        )


def takes_row_keys(agent: Any) -> bool:
    """Whether ``agent.act_batch`` accepts ``rows=`` (one game-seat key per observation)."""
    return _act_batch_takes_rows(type(agent))


@functools.cache
def _act_batch_takes_rows(agent_class: type) -> bool:
    # Per class, once: the opponent table asks at every call.
    act_batch = getattr(agent_class, "act_batch", None)
    if not callable(act_batch):
        return False
    try:
        return "rows" in inspect.signature(act_batch).parameters
    except (TypeError, ValueError):  # a builtin without a signature
        return False


def _batch_call(agent: Any) -> BatchOpponent:
    """An agent object (with ``act_batch``) or a plain callable, as ``f(observations, masks) -> actions``."""
    return opponent_call(agent, "act_batch", "observations, masks")


class StepArrays(NamedTuple):
    """The arrays of a batched step that :func:`_credit_learners` reads (``VectorStep``'s fields).

    The kernel takes this module's own named tuple rather than the step object itself: Numba's
    disk cache records every argument type it compiled for, and a batched env's own step class
    (a test's, a user's) would be imported again by every process that loads that cache."""

    rewards: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    to_act: np.ndarray
    final_observation: np.ndarray
    final_payoffs: np.ndarray


class LearnerBooks(NamedTuple):
    """Per game, the learner view's running accounts, which :func:`_credit_learners` updates in
    place (``[N]`` arrays of :class:`LearnerGames`)."""

    #: int64: the learner's seat in each game.
    seat: np.ndarray
    #: bool: the learner's episode ended in this learner step (``step_dones``).
    dones: np.ndarray
    #: float64: the learner seat's reward of this learner step (``step_rewards``).
    rewards: np.ndarray
    #: float64: the learner's return so far in the game's current episode.
    episode_return: np.ndarray
    #: int64: the learner's decisions so far in the game's current episode.
    episode_length: np.ndarray
    #: float64: rewards of a new game that arrived before the learner's first decision in it.
    pending_reward: np.ndarray


class EndedRows(NamedTuple):
    """What one batched step records of the games that ended in it (``[N]`` rows but ``games``,
    a list of game numbers, and ``observation``/``payoffs``, one row per game)."""

    #: int8: how each game that ended did (``LEARNER_EPISODE_ENDED``, ``EPISODE_WITHOUT_LEARNER_ENDED``).
    kind: np.ndarray
    #: int64: the games that ended, ascending (the first ``n_ended`` entries).
    games: np.ndarray
    #: bool: the learner's episode was cut short rather than ended by the rules.
    truncated: np.ndarray
    #: ``[N, obs_dim]``: the learner seat's last observation.
    observation: np.ndarray
    #: float64: the learner's return of the episode.
    episode_return: np.ndarray
    #: int64: the learner's decisions in the episode.
    length: np.ndarray
    #: int64: the learner's seat in the episode.
    seat: np.ndarray
    #: ``[N, n_players]`` float64: the episode's payoffs of every seat.
    payoffs: np.ndarray


@njit
def _credit_learners(
    moved: np.ndarray,
    step: StepArrays,
    rotate: bool,
    books: LearnerBooks,
    ended: EndedRows,
    opponent_games: np.ndarray,
):
    """One batched step's bookkeeping of the learner view for the games it ``moved`` (ascending
    game numbers): credit the learner seat's reward (to this learner step, or, in a game that
    already ended in it, to the learner's first decision of the new game), record the learner's
    episode of a game that ended (``ended.kind`` and the other ``ended`` rows) and move a rotating
    learner seat on. Writes the games that ended to ``ended.games`` and those where an opponent is
    to act to ``opponent_games`` (ascending); returns (games ended, of which without the learner,
    opponents to act). Named tuples keep the call readable by name: a swapped pair of arrays is a
    wrong field name, not a silently compiled kernel.

    A game the step did not move was waiting for its learner and still is, with no reward and
    nothing ended, so it needs no look (every sum here starts at +0.0: adding its 0.0 would
    change no bit)."""
    n_players = step.rewards.shape[1]
    n_ended = 0
    n_without_learner = 0
    n_opponents = 0
    for game in moved:
        seat = books.seat[game]
        reward = np.float64(step.rewards[game, seat])
        if books.dones[game]:
            books.pending_reward[game] += reward
        else:
            books.rewards[game] += reward
            books.episode_return[game] += reward
        if step.terminated[game] or step.truncated[game]:
            ended.games[n_ended] = game
            n_ended += 1
            if books.dones[game]:
                ended.kind[game] = EPISODE_WITHOUT_LEARNER_ENDED
                n_without_learner += 1
                books.pending_reward[game] = 0.0
            else:
                ended.kind[game] = LEARNER_EPISODE_ENDED
                books.dones[game] = True
                ended.truncated[game] = step.truncated[game] and not step.terminated[game]
                ended.observation[game, :] = step.final_observation[game, seat, :]
                ended.episode_return[game] = books.episode_return[game]
                ended.length[game] = books.episode_length[game]
                ended.seat[game] = seat
                for other in range(n_players):
                    ended.payoffs[game, other] = step.final_payoffs[game, other]
            books.episode_return[game] = 0.0
            books.episode_length[game] = 0
            if rotate:
                books.seat[game] = (seat + 1) % n_players
        if step.to_act[game] != books.seat[game]:
            opponent_games[n_opponents] = game
            n_opponents += 1
    return n_ended, n_without_learner, n_opponents


def _rows(step: VectorStep, games: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Fresh copies of the observations and masks of ``games`` (an opponent may keep what it is
    handed; ``np.take`` gathers rows in half the time of fancy indexing)."""
    return np.take(step.observation, games, axis=0), np.take(step.action_mask, games, axis=0)


def _store_actions(pool_index: int, games: np.ndarray, chosen: Any, actions: np.ndarray) -> None:
    """Opponent ``pool_index``'s actions ``chosen`` for ``games``, checked, into ``actions``."""
    chosen = np.asarray(chosen)
    if chosen.shape != (games.size,):
        raise ValueError(
            f"opponent {pool_index} returned actions of shape {chosen.shape} for {games.size} games"
        )
    actions[games] = chosen


class LearnerGames:
    """One learner seat per game of a batched card game, the other seats played by opponents.

    Args:
        vector_env: the batched game env (its games auto-reset).
        opponents: one batched opponent, or a pool (sequence) of them; with a pool every opponent
            seat of every game draws one uniformly at the start of each game. A batched opponent
            has ``act_batch(observations, masks) -> actions`` or is such a callable.
        learner_seat: a fixed seat, or ``"rotate"`` (default): game ``i`` starts with seat
            ``i % n_players`` and moves on one seat per finished game, so the learner plays every
            role equally often.
        seed: seeds the vector env's first reset and the opponent draws.
        opponent_draw: ``"per_seat"`` (default): every opponent seat of a new game draws its own
            pool entry; ``"per_game"``: one entry is drawn per new game and plays all its opponent
            seats (a league: the game's learner return is then a result against exactly that
            entry, recorded as ``ended_opponent`` when the game ends).
        opponent_sampler: ``sampler(rng, n) -> n pool indices``, how entries are drawn (called with
            this object's seeded generator; ``n`` is the number of draws, in game order, seat
            order within a game); default uniform. The draws must be independent and in order:
            ``n`` draws in one call are what ``n`` calls of one would give, because the games
            that end in the same step draw in one call.

    A learner step (:meth:`play_learner_step`) applies one learner action per game, then steps the
    opponents until every game waits for its learner again. Per game it leaves ``step_rewards``
    (the learner seat's reward since its previous decision), ``step_dones`` (its episode ended:
    the game now holds a new one) and, for those games, the ``ended_*`` rows: the learner's last
    observation, whether the episode was cut short, its return, length and seat, the episode's
    payoffs and (``per_game``) the opponent entry. ``current`` is the batched step after which
    every game waits for its learner (observation and mask of the learner's decision). Rewards
    that arrive in a new game before the learner's first decision there are paid with that
    decision's step; episodes that end before the learner ever moved in them are counted in
    ``episodes_without_learner`` and their rewards dropped.
    """

    def __init__(
        self,
        vector_env: VectorCardEnv,
        opponents: Any | Sequence[Any],
        *,
        learner_seat: int | str = "rotate",
        seed: int | None = None,
        opponent_draw: str = "per_seat",
        opponent_sampler: Callable[[np.random.Generator, int], Any] | None = None,
    ) -> None:
        self.vector_env = vector_env
        self.n_players = int(vector_env.n_players)
        check_learner_seat(learner_seat, self.n_players)
        if opponent_draw not in OPPONENT_DRAWS:
            raise ValueError(
                f"opponent_draw must be one of {', '.join(OPPONENT_DRAWS)}, got {opponent_draw!r}"
            )
        if opponent_sampler is not None and not callable(opponent_sampler):
            raise TypeError(f"opponent_sampler must be callable as sampler(rng, n), got {opponent_sampler!r}")
        self.opponent_draw = opponent_draw
        self._opponent_sampler = opponent_sampler
        if isinstance(opponents, (list, tuple)):
            if not opponents:
                raise ValueError("the opponent pool is empty")
            entries = list(opponents)
        else:
            entries = [opponents]
        for number, entry in enumerate(entries):
            refuse_memory_without_keys(entry, f"opponent {number} ({entry!r:.60})")
        self._entries = entries
        self._pool = [_batch_call(o) for o in entries]
        #: Pool entries handed the game-seat key of every row, and those told when games end.
        self._keyed = [takes_row_keys(o) for o in entries]
        self._remembering = [o for o in entries if keeps_game_memory(o)]
        # A pool of one drawn uniformly always draws entry 0, and numpy's generator draws nothing
        # for it: those draws can be left out without changing any later draw.
        self._draws_matter = len(self._pool) > 1 or opponent_sampler is not None
        n_envs = int(vector_env.n_envs)
        self.learner_seat_option = learner_seat
        self._first_seed = seed
        self.rng = np.random.default_rng(seed)
        self._games = np.arange(n_envs)
        if learner_seat == "rotate":
            self.learner_seat = self._games % self.n_players
        else:
            self.learner_seat = np.full(n_envs, int(learner_seat), dtype=np.int64)
        self.opponent_index = self._draw_opponents(n_envs)
        self._pending_reward = np.zeros(n_envs, dtype=np.float64)
        self._episode_return = np.zeros(n_envs, dtype=np.float64)
        self._episode_length = np.zeros(n_envs, dtype=np.int64)
        #: Episodes that ended before the learner's first decision (their rewards are dropped).
        self.episodes_without_learner = 0
        # What one learner step leaves (see the class docstring), overwritten by the next.
        # (A batched env that does not say its observation dtype is taken to give float32.)
        obs_dim = int(vector_env.obs_dim)
        obs_dtype = np.dtype(getattr(vector_env, "observation_dtype", np.float32))
        self.step_rewards = np.zeros(n_envs, dtype=np.float64)
        self.step_dones = np.zeros(n_envs, dtype=bool)
        self.ended_truncated = np.zeros(n_envs, dtype=bool)
        self.ended_observation = np.zeros((n_envs, obs_dim), dtype=obs_dtype)
        self.ended_return = np.zeros(n_envs, dtype=np.float64)
        self.ended_length = np.zeros(n_envs, dtype=np.int64)
        self.ended_seat = np.zeros(n_envs, dtype=np.int64)
        self.ended_payoffs = np.zeros((n_envs, self.n_players), dtype=np.float64)
        self.ended_opponent = np.full(n_envs, -1, dtype=np.int64)
        self.current: VectorStep | None = None
        # Scratch of the opponent loop: how each ended game ended, the games that ended, and two
        # lists of games (those a batched step moved, those where an opponent is to act next),
        # swapped at every step.
        self._ended_kind = np.zeros(n_envs, dtype=np.int8)
        self._ended_games = np.zeros(n_envs, dtype=np.int64)
        self._game_lists = (np.zeros(n_envs, dtype=np.int64), np.zeros(n_envs, dtype=np.int64))
        self._opponent_actions = np.full(n_envs, NO_ACTION, dtype=np.int64)
        self._credit: Callable | None = None
        # The kernel's named views of the arrays above, made once: every array is updated in
        # place and never replaced, so the same tuples serve every step.
        self._books = LearnerBooks(
            seat=self.learner_seat,
            dones=self.step_dones,
            rewards=self.step_rewards,
            episode_return=self._episode_return,
            episode_length=self._episode_length,
            pending_reward=self._pending_reward,
        )
        self._ended = EndedRows(
            kind=self._ended_kind,
            games=self._ended_games,
            truncated=self.ended_truncated,
            observation=self.ended_observation,
            episode_return=self.ended_return,
            length=self.ended_length,
            seat=self.ended_seat,
            payoffs=self.ended_payoffs,
        )

    # -- the learner's calls -------------------------------------------------------------------
    def start_games(self, seed: int | None) -> None:
        """Deal every game (``seed`` restarts the batched env's random stream) and let the
        opponents move up to the learner's first decision; rewards the learner's seat received
        meanwhile are paid with that decision's step."""
        step = self.vector_env.reset(seed=seed)
        self._forget_games(self._games)  # every game is a new one
        self._pending_reward[:] = 0
        self._episode_return[:] = 0
        self._episode_length[:] = 0
        self.step_rewards[:] = 0
        self.step_dones[:] = False
        self._advance(step, self._games)
        self._pending_reward += self.step_rewards
        self._episode_return -= self.step_rewards

    def restart(self, seed: int | None) -> None:
        """Start over as a new object built with ``seed`` would (``None``: the random streams
        continue): learner seats back to their first ones, opponent entries drawn anew, every
        pool entry with a ``seed`` method reseeded (entry ``i`` with ``seed + 1 + i``, so that a
        seed fixes the whole play), every game dealt afresh (:meth:`start_games`)."""
        if seed is not None:
            self.rng = np.random.default_rng(seed)
            for index, entry in enumerate(self._entries):
                if callable(getattr(entry, "seed", None)):
                    entry.seed(int(seed) + 1 + index)
        if self.learner_seat_option == "rotate":
            self.learner_seat[:] = self._games % self.n_players
        self.opponent_index[:] = self._draw_opponents(self.learner_seat.size)
        self.start_games(seed)

    def play_learner_step(self, actions: np.ndarray) -> None:
        """Apply one learner action per game (``NO_ACTION`` leaves a game untouched), then let the
        opponents move until every game waits for its learner. An action the batched env refuses
        raises its error before anything changed."""
        step = self.vector_env.step(actions)
        self.step_rewards[:] = self._pending_reward
        self._episode_return += self.step_rewards
        self._pending_reward[:] = 0
        self.step_dones[:] = False
        self._episode_length += 1
        acting = np.asarray(actions) >= 0
        self._advance(step, self._games if acting.all() else np.flatnonzero(acting))

    # -- the opponent loop ---------------------------------------------------------------------
    def _advance(self, step: VectorStep, moved: np.ndarray) -> None:
        """Credit the learner's rewards and finish ended games, then step the opponents until
        every game waits for its learner (``current``); ``moved``: the games ``step`` moved."""
        rotate = self.learner_seat_option == "rotate"
        books, ended = self._books, self._ended
        lists = 0
        while True:
            opponent_games = self._game_lists[lists]
            step_arrays = StepArrays(
                rewards=step.rewards,
                terminated=step.terminated,
                truncated=step.truncated,
                to_act=step.to_act,
                final_observation=step.final_observation,
                final_payoffs=step.final_payoffs,
            )
            arguments = (moved, step_arrays, rotate, books, ended, opponent_games)
            if self._credit is None:
                # A VectorCardEnv hands out the same buffers (or copies of them) at every step, so
                # its argument types never change: the entry point compiled for them skips Numba's
                # type dispatch. Any other batched env goes through the dispatch, which checks.
                stable = isinstance(self.vector_env, VectorCardEnv)
                self._credit = compiled_for(_credit_learners, *arguments) if stable else _credit_learners
            n_ended, n_without_learner, n_opponents = self._credit(*arguments)
            if n_ended:
                self.episodes_without_learner += n_without_learner
                self._finish_games(self._ended_games[:n_ended])
            if n_opponents == 0:
                break
            moved = opponent_games[:n_opponents]
            step = self.vector_env.step(self._opponents_act(step, moved))
            lists = 1 - lists  # the next list must not overwrite ``moved`` while it is read
        self.current = step

    def _finish_games(self, ended: np.ndarray) -> None:
        """The opponents of games that ended: recorded (``per_game``), drawn anew, and told to
        forget the old games before anyone moves in the new ones."""
        if self.opponent_draw == "per_game":
            learners = ended[self._ended_kind[ended] == LEARNER_EPISODE_ENDED]
            self.ended_opponent[learners] = self.opponent_index[learners, 0]
        if self._opponent_sampler is not None:
            # One call for every ended game: a sampler's draws are independent, in order, so
            # they are those of one call per game in game order (a league's PFSP draws take one
            # uniform each), and a seeded run's draws stay the same.
            self.opponent_index[ended] = self._draw_opponents(ended.size)
        elif self._draws_matter:
            # One draw per game in game order: numpy's bounded integers drawn in one call take
            # the generator's output in another grouping than one call per game.
            for game in ended:
                self.opponent_index[game] = self._draw_opponents(1)[0]
        self._forget_games(ended)

    def row_keys(self, games: np.ndarray, seats: np.ndarray) -> np.ndarray:
        """The key of a game seat handed to opponents with a memory per game."""
        return np.asarray(games, dtype=np.int64) * self.n_players + np.asarray(seats, dtype=np.int64)

    def _forget_games(self, games: np.ndarray) -> None:
        """Opponents with a memory per game forget every seat of ``games`` (new games start)."""
        if not self._remembering:
            return
        games = np.asarray(games, dtype=np.int64)
        keys = self.row_keys(np.repeat(games, self.n_players), np.tile(np.arange(self.n_players), games.size))
        for opponent in self._remembering:
            opponent.reset_rows(keys)

    def _draw_opponents(self, n_games: int) -> np.ndarray:
        """``[n_games, n_players]`` pool indices for new games (see ``opponent_draw``)."""
        if self._opponent_sampler is None and self.opponent_draw == "per_seat":
            return self.rng.integers(len(self._pool), size=(n_games, self.n_players))
        n_draws = n_games if self.opponent_draw == "per_game" else n_games * self.n_players
        if self._opponent_sampler is None:
            drawn = self.rng.integers(len(self._pool), size=n_draws)
        else:
            drawn = np.asarray(self._opponent_sampler(self.rng, n_draws))
            if (
                drawn.shape != (n_draws,)
                or not np.issubdtype(drawn.dtype, np.integer)
                or ((drawn < 0) | (drawn >= len(self._pool))).any()
            ):
                raise ValueError(
                    f"opponent_sampler returned {drawn!r:.80} for {n_draws} draws; it must return "
                    f"{n_draws} pool indices in 0..{len(self._pool) - 1}"
                )
        if self.opponent_draw == "per_game":
            return np.repeat(drawn.astype(np.int64)[:, None], self.n_players, axis=1)
        return drawn.astype(np.int64).reshape(n_games, self.n_players)

    def _opponents_act(self, step: VectorStep, games: np.ndarray) -> np.ndarray:
        """The batched step's actions: each opponent's in ``games`` (ascending: where an opponent
        is to act), -1 (wait) in the games waiting for their learner."""
        actions = self._opponent_actions
        actions.fill(NO_ACTION)
        if len(self._pool) == 1:
            self._call_opponent(0, games, *_rows(step, games), step, actions)
            return actions
        entries = self.opponent_index[games, step.to_act[games]]
        for joint in self._joint_groups(self._same_agent_groups(np.unique(entries))):
            # One call per agent, its entries' rows in entry order: an agent draws its random
            # numbers row by row, so the actions are those of one call per entry, in fewer calls.
            rows = [np.concatenate([games[entries == pool_index] for pool_index in group]) for group in joint]
            if len(joint) == 1:
                self._call_opponent(joint[0][0], rows[0], *_rows(step, rows[0]), step, actions)
            else:
                self._call_jointly([group[0] for group in joint], rows, step, actions)
        return actions

    def _agent_of(self, pool_index: int) -> Any:
        """The agent that decides for pool entry ``pool_index`` (what a forwarding slot holds)."""
        entry = self._entries[pool_index]
        return getattr(entry, "agent", entry)

    def _joint_groups(self, groups: list[list[int]]) -> list[list[list[int]]]:
        """``groups`` (``_same_agent_groups``') gathered into sets whose agents decide in one
        call of their class's ``act_jointly``: agents of one class with the same ``joint_key``
        (not None), agents that take no row keys (a league's policy snapshots and its live policy);
        every other group alone. In the order of each set's first group."""
        sets: dict[Any, list[list[int]]] = {}
        for group in groups:
            agent = self._agent_of(group[0])
            joint_key = getattr(agent, "joint_key", None)
            joins = callable(joint_key) and callable(getattr(agent, "act_jointly", None))
            key = joint_key() if joins and not takes_row_keys(agent) else None
            sets.setdefault(id(group) if key is None else (type(agent), key), []).append(group)
        return list(sets.values())

    def _call_jointly(
        self, pool_indices: list[int], games: list[np.ndarray], step: VectorStep, actions: np.ndarray
    ) -> None:
        """The actions of the agents of ``pool_indices`` (one ``joint_key``) in their ``games``,
        from one ``act_jointly`` call; an entry that times its calls (``record_call``, the pool's
        slots) is charged the call's time in proportion to its rows."""
        agents = [self._agent_of(pool_index) for pool_index in pool_indices]
        observations, masks = zip(*(_rows(step, rows) for rows in games), strict=True)
        started = time.perf_counter()
        chosen = type(agents[0]).act_jointly(agents, list(observations), list(masks))
        elapsed = time.perf_counter() - started
        n_rows = sum(rows.size for rows in games)
        for pool_index, rows, agent_actions in zip(pool_indices, games, chosen, strict=True):
            _store_actions(pool_index, rows, agent_actions, actions)
            record_call = getattr(self._entries[pool_index], "record_call", None)
            if callable(record_call):
                record_call(elapsed * rows.size / max(n_rows, 1), rows.size)

    def _same_agent_groups(self, pool_indices: np.ndarray) -> list[list[int]]:
        """``pool_indices`` grouped by the agent that decides for them, each group in ascending
        order and the groups by their first index. Entries that forward to an agent (``agent``,
        as the opponent pool's slots do) share it: the pool's scripted slots one player, the live
        policy's slots the live policy. Which agent a slot holds changes as snapshots come."""
        groups: dict[int, list[int]] = {}
        for pool_index in pool_indices.tolist():
            groups.setdefault(id(self._agent_of(pool_index)), []).append(pool_index)
        return list(groups.values())

    def _call_opponent(
        self,
        pool_index: int,
        games: np.ndarray,
        observations: np.ndarray,
        masks: np.ndarray,
        step: VectorStep,
        actions: np.ndarray,
    ) -> None:
        if self._keyed[pool_index]:
            keys = self.row_keys(games, step.to_act[games])
            chosen = self._pool[pool_index](observations, masks, rows=keys)
        else:
            chosen = self._pool[pool_index](observations, masks)
        _store_actions(pool_index, games, chosen, actions)


class TimedVectorEnv:
    """Forwards to a batched env and adds up the seconds spent in its ``reset``/``step``."""

    def __init__(self, vector_env) -> None:
        self.vector_env = vector_env
        self.seconds = 0.0

    def __getattr__(self, name: str):
        return getattr(self.vector_env, name)

    def reset(self, seed: int | None = None):
        started = time.perf_counter()
        try:
            return self.vector_env.reset(seed=seed)
        finally:
            self.seconds += time.perf_counter() - started

    def step(self, actions: np.ndarray):
        started = time.perf_counter()
        try:
            return self.vector_env.step(actions)
        finally:
            self.seconds += time.perf_counter() - started
