"""Batched env-steps/s of every registered game's vector env, observations and masks included.

The loop a self-play trainer runs: read the masks, pick one random legal action per game (a Numba
kernel, counted in the time, like Pgx's jitted random policy), step all games (auto-reset on).
The env is built with ``copy=False`` so the figure is the env's own cost, not numpy copies.
A game's rows at N=1024 and N=4096 take turns while they are timed (``COMPARED_BATCH_SIZES``),
its ``threads=1`` rows at those sizes likewise: their ratio is a target.

The learner's view of the same games, as a Gymnasium ``VectorEnv`` beside the raw API: seat 0 of
every game is the learner, the other seats are played by a batched opponent handed its rows'
observations and masks. "raw API, learner seat" is that loop written by hand on the batched env,
the least a learner needs of it: step the learner, then the opponents until every game waits for
seat 0 again, summing seat 0's rewards and noting the games whose episode ended, with seat 0's
last observation of it. "Gymnasium VectorEnv" is ``madiao_mao.training.gymnasium_envs.LearnerVectorEnv`` as
``gymnasium.make_vec`` builds it (``copy=True``, infos, episode bookkeeping), the learner's
action read from ``info["action_mask"]``. Both count every seat's moves (env-steps/s) with the
same random policy for every seat; their ratio is the cost of the Gymnasium view, so the two take
turns of a quarter second (``timing.measure_all``) while they are timed. A learner step
waits for the slowest game's opponents, so both do fewer moves per batched call than the
all-seats rows above.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

import numpy as np

from cardgame_core.vector import PARALLEL_MIN_GAMES
from madiao_mao.benchmarks.kernels import random_legal_actions
from madiao_mao.benchmarks.subjects import GameSubjects, game_subjects, load
from madiao_mao.benchmarks.timing import Result, Workload, measure, unavailable, warm_up

BATCH_SIZES = (1, 64, 1024, 4096)
#: Batch sizes of the learner-view rows (those of ``BATCH_SIZES`` also in this list).
LEARNER_BATCH_SIZES = (64, 1024)
#: The batch sizes whose rows of one game are timed in turns (``timing.measure_all``): a larger
#: batch should step each game no slower, and the ratio of these two rows is the target that says
#: so; measured one after the other, the load's drift between them would be part of it.
COMPARED_BATCH_SIZES = (1024, 4096)


def vector_system(game: str, n_envs: int) -> str:
    """The row name of ``game``'s vector env at ``n_envs`` games."""
    return f"{game} vector N={n_envs}"


def serial_vector_system(game: str, n_envs: int) -> str:
    """The row name of ``game``'s vector env at ``n_envs`` games stepped on one thread."""
    return f"{game} vector N={n_envs}, serial (threads=1)"


def takes_threads(env_class) -> bool:
    """Whether a vector env class takes the ``threads`` option (a game's own may not)."""
    return "threads" in inspect.signature(env_class).parameters


def batch_size_group(game: str, serial: bool = False) -> str:
    """The group of ``game``'s vector rows at ``COMPARED_BATCH_SIZES`` (its threaded rows, or its
    ``threads=1`` rows), timed in turns."""
    return f"{game} vector N={' vs '.join(map(str, COMPARED_BATCH_SIZES))}{', serial' if serial else ''}"


def vector_step_body(env_class, n_envs: int, **options) -> Callable[[], int]:
    """A body making one batched step of ``n_envs`` games (random legal actions); returns N.
    ``options``: more keyword arguments of the env (``threads``)."""
    env = env_class(n_envs, seed=0, copy=False, **options)
    step = env.reset()
    actions = np.empty(n_envs, dtype=np.int64)
    calls = 0

    def one_call() -> int:
        nonlocal step, calls
        random_legal_actions(step.action_mask, calls, actions)
        step = env.step(actions)
        calls += 1
        return n_envs

    return one_call


def _obs_and_masks(calls_per_second: float) -> str:
    return "obs + masks"


class CountingRandomOpponent:
    """A batched opponent of random legal actions (the benchmark's Numba policy) that counts the
    moves it makes."""

    def __init__(self) -> None:
        self.moves = 0
        self._calls = 0

    def __call__(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        actions = np.empty(masks.shape[0], dtype=np.int64)
        random_legal_actions(masks, 1_000_003 + self._calls, actions)
        self._calls += 1
        self.moves += masks.shape[0]
        return actions


def raw_learner_body(env_class, n_envs: int) -> Callable[[], int]:
    """One learner step on the raw batched API, by hand (seat 0 learns, see the module
    docstring); returns the moves of every seat."""
    env = env_class(n_envs, seed=0, copy=False)
    opponent = CountingRandomOpponent()
    learner_reward = np.zeros(n_envs)
    ended = np.zeros(n_envs, dtype=bool)
    last_observation = np.zeros((n_envs, env.obs_dim), dtype=env.observation_dtype)
    actions = np.empty(n_envs, dtype=np.int64)
    waiting = np.empty(n_envs, dtype=np.int64)

    def until_learner(step):
        while True:
            learner_reward[:] += step.rewards[:, 0]
            now_ended = np.flatnonzero(step.terminated | step.truncated)
            if now_ended.size:
                ended[now_ended] = True
                last_observation[now_ended] = step.final_observation[now_ended, 0]
            acting = np.flatnonzero(step.to_act != 0)
            if acting.size == 0:
                return step
            waiting.fill(-1)
            waiting[acting] = opponent(step.observation[acting], step.action_mask[acting])
            step = env.step(waiting)

    step = until_learner(env.reset())
    calls = 0

    def one_call() -> int:
        nonlocal step, calls
        random_legal_actions(step.action_mask, calls, actions)
        learner_reward[:] = 0.0
        ended[:] = False
        opponent.moves = 0
        step = until_learner(env.step(actions))
        calls += 1
        return n_envs + opponent.moves

    return one_call


def gymnasium_learner_body(gymnasium_id: str, n_envs: int) -> Callable[[], int]:
    """One ``step`` of a game's Gymnasium ``VectorEnv`` (``gymnasium_id``: its subjects'
    reference; seat 0 learns, see the module docstring); returns the moves of every seat."""
    # Imported here: keeps Gymnasium off this module's import path.
    import gymnasium

    env_id = load(gymnasium_id)  # importing its module registers the id
    opponent = CountingRandomOpponent()
    env = gymnasium.make_vec(env_id, num_envs=n_envs, opponents=opponent, learner_seat=0)
    _, info = env.reset(seed=0)
    actions = np.empty(n_envs, dtype=np.int64)
    calls = 0

    def one_call() -> int:
        nonlocal info, calls
        random_legal_actions(info["action_mask"].view(np.bool_), calls, actions)
        opponent.moves = 0
        _, _, _, _, info = env.step(actions)
        calls += 1
        return n_envs + opponent.moves

    return one_call


def workloads(
    batch_sizes: tuple[int, ...] = BATCH_SIZES, games: tuple[str, ...] | None = None
) -> list[Workload]:
    """One batched step per body call, for each game (``games``: those of the registry named
    there; None: all) and each N (every N is its own compiled shape of work, so each is warmed up)."""
    found = []
    for game, subjects in _chosen(games):
        try:
            env_class, missing = load(subjects.vector_env), ""
        except (ImportError, AttributeError) as error:
            env_class, missing = None, unavailable(error)
        for n_envs in batch_sizes:
            # A game whose env cannot load still has its rows, saying why there is no figure.
            body = None if env_class is None else vector_step_body(env_class, n_envs)
            system = vector_system(game, n_envs)
            compared = n_envs in COMPARED_BATCH_SIZES
            group = batch_size_group(game) if compared else ""
            found.append(
                Workload("batched", system, "env-steps/s", body, _obs_and_masks, missing=missing, group=group)
            )
            # Beside a batch that steps on Numba's threads, the same batch on one thread.
            if env_class is not None and n_envs >= PARALLEL_MIN_GAMES and takes_threads(env_class):
                serial = vector_step_body(env_class, n_envs, threads=1)
                system = serial_vector_system(game, n_envs)
                group = batch_size_group(game, serial=True) if compared else ""
                found.append(Workload("batched", system, "env-steps/s", serial, _obs_and_masks, group=group))
        if env_class is None or subjects.gymnasium_id is None:
            continue
        for n_envs in (n for n in batch_sizes if n in LEARNER_BATCH_SIZES):
            for api, body in (
                ("raw", raw_learner_body(env_class, n_envs)),
                ("gymnasium", gymnasium_learner_body(subjects.gymnasium_id, n_envs)),
            ):
                found.append(
                    Workload(
                        "batched",
                        learner_system(game, api, n_envs),
                        "env-steps/s",
                        body,
                        _learner_steps,
                        group=f"{game} learner N={n_envs}",
                    )
                )
    return found


def _chosen(games: tuple[str, ...] | None) -> list[tuple[str, GameSubjects]]:
    return [(game, subjects) for game, subjects in game_subjects() if games is None or game in games]


def learner_system(game: str, api: str, n_envs: int) -> str:
    """The row name of a learner-view measurement (``api``: ``"raw"`` or ``"gymnasium"``)."""
    what = "raw API, learner seat" if api == "raw" else "Gymnasium VectorEnv"
    return f"{game} {what} N={n_envs}"


def _learner_steps(calls_per_second: float) -> str:
    return f"{calls_per_second:,.0f} learner steps/s; every seat's moves counted"


def run(
    seconds: float, batch_sizes: tuple[int, ...] = BATCH_SIZES, games: tuple[str, ...] | None = None
) -> list[Result]:
    """Warm up, then measure every workload of this suite."""
    suite = workloads(batch_sizes, games)
    warm_up(suite)
    return [measure(workload, seconds) for workload in suite]
