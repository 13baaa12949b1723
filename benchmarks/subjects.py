"""What the benchmarks measure of each game: the protocol of a game's benchmarks module.

The suites loop over the registry of games (``madiao_mao.games``) and never name one. A game's
benchmarks module is the one its registry entry names in ``benchmarks`` (for a built-in game,
``madiao_mao.benchmarks.<game>``); it defines one name, ``SUBJECTS``, a :class:`GameSubjects`:

============== ========================================================== =====================
field          what it is                                                  used by the suites
============== ========================================================== =====================
aec_env        ``"module:callable"``: the game's wrapped PettingZoo AEC    aec, memory, startup
               env constructor (``env()``, no argument needed)
vector_env     ``"module:Class"``: the game's batched env,                 batched, memory,
               ``Class(n_envs, seed=0, copy=False)`` with ``reset()`` and  startup
               ``step(actions)`` returning a step with ``action_mask``,
               ``observation``, ``rewards``, ``terminated``, ``truncated``,
               ``to_act``, ``final_observation``; attributes ``obs_dim``
               and ``observation_dtype``
gymnasium_id   ``"module:NAME"`` (optional): the Gymnasium id of the       batched (learner
               learner's ``VectorEnv`` (``gymnasium.make_vec(id,           rows)
               num_envs=, opponents=, learner_seat=0)``); importing
               ``module`` registers it. None: no learner-view rows
rollouts       ``"module:callable"`` (optional): the game's rows of the    rollout
               rollout suite, a list of ``timing.Workload``
goals          :class:`Goals`: the game's performance targets (all         the targets table
               optional)
============== ========================================================== =====================

Every reference is a ``"module:name"`` string resolved when a suite runs (``load``), so that
listing the subjects imports no env and the startup suite can time a cold import in a child
process; a reference that does not import becomes a row saying "not available".

A new game is benchmarked by writing that one module, for example::

    from madiao_mao.benchmarks.subjects import GameSubjects

    SUBJECTS = GameSubjects(aec_env="tiny_env.aec:env", vector_env="tiny_env.vector:TinyVectorEnv")
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from madiao_mao.benchmarks.goals import Target
from madiao_mao.games import games


@dataclass(frozen=True)
class Goals:
    """A game's performance targets, checked on the results of one run (None: no such target)."""

    #: The wrapped AEC env's random-play steps/s as a share of the empty wrapped env's (≥).
    aec_share: float | None = None
    #: The vector env's env-steps/s at N=1024, observations and masks included (≥).
    batched_steps: float | None = None
    #: ... and as a multiple of Pgx leduc_holdem at batch 1024 in the same run (≥), if measured.
    batched_share_of_pgx: float | None = None
    #: The vector env's env-steps/s at N=4096 as a share of its rate at N=1024, the two timed in
    #: turns in one run (≥): a larger batch should not step each game slower.
    large_batch_share: float | None = None
    #: The Gymnasium ``VectorEnv``'s env-steps/s as a share of the raw API's, learner seat, N=1024.
    gymnasium_share: float | None = None
    #: Import + first AEC step + first vector step, in a fresh process, seconds (≤).
    cold_start_seconds: float | None = None
    warm_start_seconds: float | None = None
    #: A short training run of the game's default config (``learner.training_run_rows``): the
    #: fast engine's learner steps/s as a multiple of the SB3 engine's, the two in turns (≥).
    fast_training_over_sb3: float | None = None
    #: Targets of the game's own rows (its rollout suite rows, for example), listed after the
    #: shared ones of the same kind.
    more: tuple[Target, ...] = ()


@dataclass(frozen=True)
class GameSubjects:
    """What the suites measure of one game (see the module docstring's table)."""

    aec_env: str
    vector_env: str
    gymnasium_id: str | None = None
    rollouts: str | None = None
    goals: Goals = field(default_factory=Goals)

    def __post_init__(self) -> None:
        for name in ("aec_env", "vector_env", "gymnasium_id", "rollouts"):
            reference = getattr(self, name)
            if reference is None and name in ("gymnasium_id", "rollouts"):
                continue
            module, _, attribute = (reference or "").partition(":")
            if not (module and attribute):
                raise ValueError(f"GameSubjects.{name} must be 'module:name', got {reference!r}")


def load(reference: str) -> Any:
    """The object a ``"module:name"`` reference names (ImportError or AttributeError if absent)."""
    module, _, attribute = reference.partition(":")
    return getattr(importlib.import_module(module), attribute)


def game_subjects() -> Iterator[tuple[str, GameSubjects]]:
    """(game name, its subjects) for every registered game, in the registry's order."""
    for name, game in games().items():
        subjects = game.layer("benchmarks").SUBJECTS
        if not isinstance(subjects, GameSubjects):
            kind = type(subjects).__name__
            raise TypeError(f"{game.benchmarks}.SUBJECTS must be a GameSubjects, got {kind}")
        yield name, subjects


@runtime_checkable
class BenchmarksModule(Protocol):
    """The benchmarks layer's contract: what a game's benchmarks module (its registry entry's
    ``benchmarks``) defines."""

    SUBJECTS: GameSubjects
