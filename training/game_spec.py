"""What the trainer does differently per game: a ``GameSpec`` per game, held by the game's training
module (``GAME_SPEC``, found through ``madiao_mao.games``).

``madiao_mao.training.sb3.train`` and ``madiao_mao.training.sb3.callback`` never branch on the game's
name: they look its spec up (``game_spec(config.game)``) and call what it holds. A spec gives

- ``defaults``: the ``TrainConfig`` fields a game sets differently (a field left at None takes
  its game's value; ``GAME_DEFAULTS`` maps each game to these),
- ``obs_type``: the observation variant a run uses unless told otherwise (``obs_types``: every
  variant the game's env offers, checked with the config; empty: the env checks it when built),
  ``table_obs_type``: the variant a table of given agents is played at (None: always the
  default), where a saved policy decides what the run reads (an exploiter's target, the starting
  policy of expert iteration),
- ``policy_features``: the policy features (``PolicyFeatures``) of the game's own, besides the
  observation itself (``flat``, which every game has); ``POLICY_FEATURES`` holds every game's,
- ``make_vector_env``: the batched env of the training games, built from the config
  (``vector_env_kwargs``: its buffers are handed out without copies),
- ``shape_reward``: what wraps the learner's env to shape its reward (Mao's hand-size reward),
- ``roles`` and ``learner_role``: the roles the learner's returns are logged by
  (``charts/return_<role>``) and how a terminal observation tells the learner's role (without
  it, every game counts for the first role),
- ``evaluate`` and ``describe_result``: the periodic evaluation against the baselines (a point of
  the learning curve) and its one-line summary,
- ``report``: the game's sections of the final report,
- ``table_envs``: the bare AEC env class and the batched env class (Gymnasium's ids build them),
- ``settings``: the dataclass of the game's own training settings (``GameSettings``; None: the
  game has none), a ``TrainConfig``'s ``game_settings``, and ``old_config_names``: the flat
  ``TrainConfig`` field names saved run folders hold them under,

and what the game offers beyond training, None where it has no such part:

- ``exploit``: its part of the exploitability proxy (``madiao_mao.training.exploit.ExploitGame``),
- ``expert_iteration``: its expert (``madiao_mao.training.expert_iteration.ExpertIterationGame``),
- ``commands``: the module of its ``evaluate``, ``play``, ``match`` and ``replay`` commands
  (``GameCommands``), imported when called,
- ``scorecard``: the module of its scorecard suites (``madiao_mao.training.scorecard``), imported
  when called,
- ``evaluate_on_ray``: ``madiao-mao evaluate --engine ray`` for the game.

A game's training module holds its spec as ``GAME_SPEC`` (``TrainingModule``, the training layer's
contract, checked by ``madiao_mao.games``).

Why each default is what it is: one line beside it, in the game's spec; the measurements behind
them, with the commands that made them, are in ``docs/results.md``.

Adding a game is adding one ``madiao_mao.games.Game`` whose training module holds its spec.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

import numpy as np

from madiao_mao.games import game_names, get_game
from madiao_mao.training.cli_args import load_agent

if TYPE_CHECKING:  # typing only: these modules import this one (the config fills in its defaults from it)
    from madiao_mao.training.config import TrainConfig
    from madiao_mao.training.expert_iteration import ExpertIterationGame
    from madiao_mao.training.exploit import ExploitGame

Part = TypeVar("Part")

#: The opponent-pool kinds' weights of a run that trains against scripted players only.
SCRIPTED_ONLY = {"scripted": 1.0, "snapshot": 0.0, "current": 0.0}


@dataclass(frozen=True)
class PolicyFeatures:
    """What the policy's MLPs read: the observation itself, or extra planes built from it."""

    name: str
    #: The observation variants these features can be built from (empty: any).
    obs_types: tuple[str, ...]
    #: The MaskablePPO policy and its extra options (``features_extractor_*``) for these features.
    policy: Callable[[], tuple[Any, dict[str, Any]]]
    #: What wraps the learner's env when the policy reads more than the table's observation
    #: (``wrap(venv, vector_env) -> venv``); None: the observation as it is.
    learner_env: Callable[[Any, Any], Any] | None = None
    #: The policy class a privileged critic trains for these features when ``policy`` is not the
    #: MLP policy (a ``madiao_mao.training.sb3.privileged.PrivilegedCriticPolicy`` subclass); None:
    #: only the MLP policy has one.
    privileged_policy: Callable[[], type] | None = None


def _flat_policy() -> tuple[Any, dict[str, Any]]:
    return "MlpPolicy", {}


#: What every game's policy can read: the observation itself.
FLAT = PolicyFeatures("flat", (), _flat_policy)


@dataclass(frozen=True)
class GameSpec:
    """The trainer's view of one game (see the module docstring for each field)."""

    name: str
    defaults: Mapping[str, Any]
    obs_type: str
    policy_features: Mapping[str, PolicyFeatures]
    make_vector_env: Callable[[TrainConfig, int, int | None], Any]
    shape_reward: Callable[[Any, TrainConfig], Any]
    roles: tuple[str, ...]
    learner_role: Callable[[np.ndarray], str] | None
    evaluate: Callable[[Any, TrainConfig, int, int], dict[str, dict]]
    describe_result: Callable[[str, dict], str]
    report: Callable[[Any, TrainConfig, Path, int, dict[str, Any]], list[str]]
    table_envs: Callable[[], tuple[Any, type]]
    exploit: ExploitGame | None = None
    expert_iteration: ExpertIterationGame | None = None
    commands: Callable[[], ModuleType] | None = None
    scorecard: Callable[[], ModuleType] | None = None
    evaluate_on_ray: Callable[[Any], int] | None = None
    settings: type[GameSettings] | None = None
    old_config_names: Mapping[str, str] = field(default_factory=dict)
    table_obs_type: Callable[[Sequence[Any]], str] | None = None
    obs_types: tuple[str, ...] = ()

    @property
    def features(self) -> tuple[str, ...]:
        """The names of every policy feature the game's observations support."""
        return (FLAT.name, *self.policy_features)


class GameSettings(Protocol):
    """A game's own training settings: a dataclass whose every field has a default and a docstring
    (its help on the command line, under the game's name)."""

    def check(self) -> None:
        """Every field's value checked: a ``madiao_mao.training.config.ConfigError`` naming the
        field (its name in this dataclass)."""


@runtime_checkable
class TrainingModule(Protocol):
    """The training layer's contract: what a game's training module (its registry entry's
    ``training``) defines."""

    GAME_SPEC: GameSpec


def games_with(part: Callable[[GameSpec], Any]) -> tuple[str, ...]:
    """The registered games whose spec has the optional part ``part`` reads (``exploit``,
    ``expert_iteration``, ``commands``, ``scorecard``, ``evaluate_on_ray``)."""
    return tuple(name for name, spec in GAME_SPECS.items() if part(spec) is not None)


def game_part(game: str, part: Callable[[GameSpec], Part | None]) -> Part:
    """The optional part of ``game``'s spec that ``part`` reads; a game without it (or no game of
    that name) is a ValueError listing the games that have it."""
    found = part(GAME_SPECS[game]) if game in game_names() else None
    if found is None:
        raise ValueError(f"game must be one of {', '.join(games_with(part))}, got {game!r}")
    return found


def env_kwargs(config: TrainConfig) -> dict[str, Any]:
    """The options of the env a run plays: its observation variant and ``env_kwargs``."""
    return {"obs_type": config.obs_type, **config.env_kwargs}


def vector_env_kwargs(config: TrainConfig) -> dict[str, Any]:
    """The options of a run's batched env: ``env_kwargs``, its ``threads`` (``env_threads``), and
    ``copy=False``: the learner's loop (``madiao_mao.training.learner_games``) reads each step before
    taking the next and copies what it keeps, so fresh copies of every buffer, every seat's final
    observation included, would only add a copy a step several times the cost of the step itself
    (benchmarks/README.md, "The training games without copies")."""
    return {**env_kwargs(config), "threads": config.env_threads, "copy": False}


def module_when_called(name: str) -> Callable[[], ModuleType]:
    """A spec part (``commands``, ``scorecard``) that imports the module ``name`` when called: such
    modules import the game's evaluation, which reading the spec must not."""
    return partial(importlib.import_module, name)


def table_envs_when_called(raw_env: str, vector_env: str) -> Callable[[], tuple[Any, type]]:
    """``table_envs`` for the bare AEC env class and the batched env class named
    ``"module:attribute"``, imported when an env is made."""

    def table_envs() -> tuple[Any, type]:
        return _attribute(raw_env), _attribute(vector_env)

    return table_envs


def _attribute(path: str) -> Any:
    module, name = path.split(":")
    return getattr(importlib.import_module(module), name)


def unshaped(venv, config: TrainConfig):
    """``shape_reward`` of a game that shapes nothing."""
    return venv


class _ByGame(Mapping[str, Any]):
    """A value per registered game, read from the registry when asked (a game registered later is
    in it): ``value_of(game)`` for every name ``madiao_mao.games`` lists."""

    def __init__(self, value_of: Callable[[str], Any]) -> None:
        self._value_of = value_of

    def __getitem__(self, game: str) -> Any:
        if game not in game_names():
            raise KeyError(game)
        return self._value_of(game)

    def __iter__(self) -> Iterator[str]:
        return iter(game_names())

    def __len__(self) -> int:
        return len(game_names())


class _PolicyFeatures(Mapping[str, PolicyFeatures]):
    """``flat`` and every game's own policy features, by name."""

    def _table(self) -> dict[str, PolicyFeatures]:
        table = {"flat": FLAT}
        for spec in GAME_SPECS.values():
            table.update(spec.policy_features)
        return table

    def __getitem__(self, name: str) -> PolicyFeatures:
        return self._table()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._table())

    def __len__(self) -> int:
        return len(self._table())


#: Every registered game's ``GameSpec`` by name.
GAME_SPECS: Mapping[str, GameSpec] = _ByGame(lambda game: get_game(game).layer("training").GAME_SPEC)
#: The defaults that differ by game (a ``TrainConfig`` field left at None takes its game's value).
GAME_DEFAULTS: Mapping[str, Mapping[str, Any]] = _ByGame(lambda game: GAME_SPECS[game].defaults)
#: Every policy feature a run can ask for (``TrainConfig.features``), of whichever game.
POLICY_FEATURES: Mapping[str, PolicyFeatures] = _PolicyFeatures()


def game_spec(game: str) -> GameSpec:
    """The spec of ``game``; an unknown name is a ValueError listing the games."""
    try:
        return GAME_SPECS[game]
    except (KeyError, TypeError):
        raise ValueError(f"game must be one of {', '.join(GAME_SPECS)}, got {game!r}") from None


def policy_table(game: str, policy: str) -> dict[str, str]:
    """The ``TrainConfig`` fields of a run whose subject is the saved player ``policy`` (an agent
    spec: an exploiter's target, expert iteration's starting policy): the observation variant it
    plays at, where the game's ``table_obs_type`` says (none otherwise: the game's default)."""
    choose = game_spec(game).table_obs_type
    if choose is None:
        return {}
    return {"obs_type": choose([load_agent(policy, game)])}


def features_error(features: str, game: str, obs_type: str) -> str | None:
    """Why ``features`` cannot be used for ``game`` with ``obs_type`` (None if it can)."""
    spec = game_spec(game)
    needs = POLICY_FEATURES[features].obs_types
    if features in spec.features and (not needs or obs_type in needs):
        return None
    owner = next(name for name, other in GAME_SPECS.items() if features in other.features)
    where = " with obs_type=" + " or ".join(f'"{obs_type}"' for obs_type in needs) if needs else ""
    return f'features="{features}" needs game="{owner}"{where}'
