"""The typed config of a training run (``TrainConfig``) and the step arithmetic the trainer and
its callback share (rollout size, where a run ends, the evaluation interval).

Every field has a docstring, which is also its help text in ``madiao-mao train --help`` (the
command line is generated from this dataclass by tyro; the ``Annotated`` marks below only shape
how a field is shown there). A field left at None takes its game's value from the game's spec
(``madiao_mao.training.game_spec.GAME_DEFAULTS``, with a one-line reason per default there). A bad value is a
``ConfigError`` (a ValueError) naming the field, raised when the config is made: the Python API,
the command line and a config file (``TrainConfig.from_file``) all reach this one check.
Whether this machine has the GPU a config's ``device`` names is asked when a run starts
(``resolve_device``), so that a saved config reads anywhere.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import tyro

from madiao_mao.agents.registry import MODEL_PREFIX, agent_names
from madiao_mao.games import default_game, game_names
from madiao_mao.training.game_spec import GAME_SPECS, POLICY_FEATURES, GameSpec, features_error, game_spec
from madiao_mao.training.league import PFSP_WEIGHTINGS

LR_SCHEDULES = ("constant", "linear")
#: The devices a config may name besides "cuda:N" (``TrainConfig.device``).
DEVICES = ("auto", "cpu", "cuda")
OPPONENT_MODES = ("pool", "league")
#: The most torch threads a config picks by itself (measured up to 2 here: docs/results.md,
#: "Learner throughput on one machine"; 256-row minibatches gain little from more).
MAX_AUTO_THREADS = 4


class ConfigError(ValueError):
    """A bad ``TrainConfig`` value; ``field`` names the field (the command line names its flag)."""

    def __init__(self, field: str | None, message: str) -> None:
        super().__init__(message)
        self.field = field


def _shown(value: Any) -> str:
    if isinstance(value, (tuple, list)):
        return " ".join(str(item) for item in value)
    if isinstance(value, Mapping):
        return " ".join(f"{key} {item}" for key, item in value.items())
    return str(value)


def _game_default_hint(name: str) -> Any:
    """The help's default of a field whose default is its game's: each game's value, read from
    ``madiao_mao.training.game_spec.GAME_SPECS`` when the help is printed ("derived": the
    docstring says how)."""

    def hint(_default: str) -> str:
        values = []
        for game, spec in GAME_SPECS.items():
            value = spec.defaults.get(name, getattr(spec, name, None))
            values.append(f"{game}: {_shown(value) if value is not None else 'derived'}")
        return f"(default by game: {'; '.join(values)})"

    return hint


def _flag(*, choices: tuple[str, ...] = (), by_game: str | None = None, default: str | None = None) -> Any:
    """How a field is shown as a flag: the values it takes (the config checks them), or its
    default when that is the game's (``by_game``: the field's name) or computed (``default``)."""
    hint = _game_default_hint(by_game) if by_game else f"(default: {default})" if default else None
    return tyro.conf.arg(metavar="{" + ",".join(choices) + "}" if choices else None, help_behavior_hint=hint)


def _json_object() -> Any:
    """How the command line reads a dict-valued field: one JSON object (``'{"variant": 1}'``)."""

    def parse(texts: list[str]) -> dict[str, Any]:
        value = json.loads(texts[0])
        if not isinstance(value, dict):
            raise ValueError(f"expected a JSON object, got {texts[0]!r}")
        return value

    return tyro.constructors.PrimitiveConstructorSpec(
        nargs=1,
        metavar="JSON",
        instance_from_str=parse,
        is_instance=lambda value: isinstance(value, dict),
        str_from_instance=lambda value: [json.dumps(value)],
    )


def auto_torch_threads() -> int:
    """torch threads of a config that does not set them: the cores this process may run on (its
    CPU affinity, not the machine's count), at most ``MAX_AUTO_THREADS``."""
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        usable = os.cpu_count() or 1
    return max(1, min(usable, MAX_AUTO_THREADS))


@dataclass
class TrainConfig:
    """Every knob of a training run; None takes the game's default (its spec's ``defaults``),
    and the default game's defaults are the README's main job."""

    game: Annotated[str, _flag(choices=game_names())] = default_game()
    """Which game to train on (a game of the registry, ``madiao_mao.games``)."""
    exp_name: str = "selfplay"
    """Experiment name, part of the run name."""
    seed: int = 1
    """Seed of the env, the policy, the seat draws and the evaluation deals."""
    total_timesteps: Annotated[int | None, _flag(by_game="total_timesteps")] = None
    """Learner decisions to train on (opponent moves are not counted); None: the game's default."""
    n_envs: Annotated[int | None, _flag(by_game="n_envs")] = None
    """Games stepped together by the batched env (many games amortise every per-call cost: each
    round of opponent moves is one call per policy, whatever its rows); None: the game's default."""
    n_steps: Annotated[int | None, _flag(by_game="n_steps")] = None
    """Learner decisions per game per PPO rollout (rollout size = n_envs * n_steps); None: the
    game's default."""
    batch_size: Annotated[int | None, _flag(by_game="batch_size")] = None
    """PPO minibatch size; None: the game's default (larger minibatches keep both cores busier in
    the update but lose strength per learner step, docs/results.md)."""
    n_epochs: int = 4
    """PPO epochs over each rollout."""
    learning_rate: Annotated[float | None, _flag(by_game="learning_rate")] = None
    """Adam learning rate at the start of the run (see ``lr_schedule``); None: the game's default."""
    lr_schedule: Annotated[str, _flag(choices=LR_SCHEDULES)] = "linear"
    """"constant", or "linear" (steadier final policy): decays by rollout over the run's real length
    (the budget rounded up to whole rollouts), each update at its rollout's starting rate, so the
    last update still learns (``madiao_mao.training.sb3.model.learning_rate_schedule``)."""
    gamma: Annotated[float | None, _flag(by_game="gamma")] = None
    """Discount; None: the game's default (undiscounted where only the end of a short episode pays,
    below 1 where a penalty follows the turn that earned it)."""
    gae_lambda: float = 0.95
    """GAE lambda."""
    clip_range: float = 0.2
    """PPO clip range."""
    ent_coef: Annotated[float | None, _flag(by_game="ent_coef")] = None
    """Entropy bonus (keeps play exploratory against a changing pool); None: the game's default
    (smaller where many actions and free speech make random talk costly)."""
    vf_coef: float = 0.5
    """Value-loss weight."""
    net_arch: tuple[int, ...] = (256, 256)
    """Hidden layer sizes of the policy and value MLPs."""
    features: Annotated[str | None, _flag(choices=tuple(POLICY_FEATURES), by_game="features")] = None
    """What the MLPs read: "flat" (the observation) or one of the feature sets the game's spec
    offers for its observation type (``GameSpec.policy_features``, each naming its policy class);
    None: the game's default."""
    obs_type: Annotated[str, _flag(by_game="obs_type")] = ""
    """Observation variant; "" picks the game's default (``GameSpec.obs_type``: a game whose hidden
    state shows only through its public events defaults to a history of them)."""
    env_kwargs: Annotated[dict[str, Any], _json_object()] = field(default_factory=dict)
    """Extra options for the game env (rule variants), as keyword arguments of its vector env; on
    the command line one JSON object."""
    game_settings: tyro.conf.Suppress[Any] = None
    """The game's own settings: an instance of its spec's ``settings`` dataclass (a mapping of its
    fields in a config file; None: that dataclass's defaults; None for a game without settings).
    On the command line each game's are flags of their own group (``--GAME.FIELD``)."""
    imitate: Annotated[str | None, _flag(by_game="imitate")] = None
    """Warm start (``madiao_mao.training.sb3.imitation``): a scripted agent (name as in
    ``madiao_mao.agents.registry``) plays
    the learner's seat of the training env for ``imitation_decisions`` decisions and the fresh
    policy is fitted to its moves (and its value head to the returns) before PPO starts; "none":
    PPO from a random policy. None: the game's default (a game where PPO from scratch settles on
    a degenerate strategy names a teacher)."""
    imitation_decisions: int = 200_000
    """Teacher decisions recorded for the warm start (not counted in ``total_timesteps``)."""
    imitation_epochs: int = 4
    """Passes over the teacher's decisions when fitting the policy."""
    init_model: str | None = None
    """Start from the weights of this saved MaskablePPO model (a ``.zip``; a fresh optimizer)
    instead of a fresh network: fine-tuning, e.g. the shipped policy in the league. Its
    observation size, actions, ``features`` and ``net_arch`` must be this config's, and such a
    policy gets no warm start (``imitate``). SB3 engine only; expert iteration
    (``madiao_mao.training.expert_iteration``) trains each iteration's policy this way. None: a
    fresh network."""
    privileged_critic: bool = False
    """Train with what the table hides, play with what the seat sees: the critic reads the seat's
    observation and the game's hidden state (every hand: the batched env's
    ``privileged_observation``), the actor only the seat's observation (PerfectDou; a critic of
    history and state, Baisero & Amato 2022). The model saved for play (``final_model.zip``) is
    the actor alone. For features that the MLP policy reads without an env wrapper of its own
    ("flat", and a game's features of that kind; ``madiao_mao.training.sb3.privileged``) and for
    those whose policy has a privileged variant (``PolicyFeatures.privileged_policy``)."""
    oracle_guiding_steps: int = 0
    """The actor also reads the hidden state (what ``privileged_critic`` gives the critic),
    weighted by a factor that fades linearly from 1 at step 0 to 0 at this many learner steps
    (Suphx's oracle guiding); at most ``total_timesteps``, so that the final actor reads the
    seat's observation alone. With or without ``privileged_critic``; the same features as it.
    0: no oracle."""
    scripted_opponents: Annotated[tuple[str, ...] | None, _flag(by_game="scripted_opponents")] = None
    """Scripted agents in the opponent pool (names as in ``madiao_mao.agents.registry``; a name listed twice
    fills twice the scripted slots); None: the game's default."""
    opponent_weights: Annotated[dict[str, float] | None, _flag(by_game="opponent_weights")] = None
    """Probability weights of the opponent kinds per opponent seat ("scripted", "snapshot",
    "current"; kinds without agents skipped); None: the game's default."""
    snapshot_every: int = 250_000
    """Learner steps between frozen snapshots added to the pool (kept on disk as well)."""
    max_snapshots: int = 5
    """Snapshots kept in the pool (the oldest is replaced)."""
    opponents: Annotated[str | None, _flag(choices=OPPONENT_MODES, by_game="opponents")] = None
    """How the opponents of a training game are chosen; None: the game's default.

    "pool": every opponent seat of every game draws its own agent from the weighted pool
    of ``scripted_opponents``, snapshots and the live policy (``opponent_weights``).

    "league" (``madiao_mao.training.league``, AlphaStar-style): one member of a league plays ALL the opponent
    seats of a game, so the learner's return in it is a result against exactly that member. The
    members are the main agent (the live policy: self-play), frozen snapshots of it (one joins every
    ``snapshot_every`` steps, the oldest leaves past ``max_snapshots``) and the scripted
    ``league_anchors``. Each new game draws its member by prioritized fictitious self-play from the
    main agent's payoff table, which every finished training game updates (``pfsp_weighting``,
    ``pfsp_power``, ``pfsp_floor``); openskill ratings follow the same games. The league is saved
    beside every checkpoint (``league.json``) and restored on resume; TensorBoard gets
    ``league/payoff/<member>`` (the learner's mean return against it so far),
    ``league/rating/<member>`` (openskill mu) and ``league/probability/<member>`` (its PFSP draw
    probability), and the final report prints the payoff table and plots the payoffs and ratings
    over training. ``scripted_opponents`` and ``opponent_weights`` are not used.
    Roles: as in the pool mode, the learner's seat rotates through every seat game by game, so it
    holds each seat's role equally often. The other seats are copies of the one member drawn for
    the game, so the learner has no teammate of its own: in a game with partnerships its partners
    are copies of the same member as its opponents (the live policy or a snapshot of it when the
    member is the main agent or a snapshot, a scripted player when it is an anchor). Only the
    learner's seat is trained.
    """
    league_anchors: Annotated[tuple[str, ...] | None, _flag(by_game="league_anchors")] = None
    """League mode: the fixed members, by ``madiao_mao.agents.registry`` name or ``model:PATH`` (a frozen
    policy: a model from another run, or an exploiter of this one trained by ``madiao-mao
    exploit``, which then stays in the league so the main agent keeps answering it); None: the
    game's default (which may leave out a scripted player too slow for a training table, one that
    plays hundreds of decisions per CPU-second where the table needs thousands), or else the
    distinct names of ``scripted_opponents``."""
    pfsp_weighting: Annotated[str, _flag(choices=PFSP_WEIGHTINGS)] = "hard"
    """League mode: the PFSP weighting of a member the learner scores ``x`` against (x in [0, 1]:
    the share of games its return was > 0, ties counting half, with a prior of one game at 0.5):
    "hard", ``(1 - x) ** pfsp_power`` (most often the members it loses to), or "variance",
    ``x (1 - x)`` (the members it is evenly matched with)."""
    pfsp_power: float = 2.0
    """League mode: the exponent of the "hard" weighting."""
    pfsp_floor: float = 0.05
    """League mode: the share of draws spread evenly over the members, so that each keeps at least
    ``pfsp_floor / members`` of the games."""
    checkpoint_every: int = 250_000
    """Learner steps between atomic checkpoints (model + optimizer + run state)."""
    eval_every: Annotated[int | None, _flag(default="a tenth of the budget, at least one rollout")] = None
    """Learner steps between evaluations against the baselines, the points of the learning curve
    (0: none during training, only the final report); None: a tenth of the budget, at least one
    rollout, so that even a short run draws a curve (``evaluation_interval``). Evaluations happen
    between rollouts, and once more at the end of the run."""
    eval_deals: int = 25
    """Size of each periodic evaluation per baseline, in the game's own unit of evaluation (a
    duplicate deal, the learner's own turns per held-out rule, ...)."""
    eval_opponents: Annotated[tuple[str, ...] | None, _flag(by_game="eval_opponents")] = None
    """Baselines the learner is evaluated against (or the players at its table, in a game that
    evaluates a whole table); None: the game's default."""
    final_eval_deals: Annotated[int | None, _flag(by_game="final_eval_deals")] = None
    """Final evaluation report's size per pairing, in the game's own unit of evaluation (a
    duplicate deal, each agent's own turns per held-out rule, ...); None: the game's default."""
    runs_dir: str = "runs"
    """Folder holding one sub-folder per run."""
    torch_threads: Annotated[int | None, _flag(default=f"the usable cores, at most {MAX_AUTO_THREADS}")] = (
        None
    )
    """torch CPU threads; None: the cores this process may use, at most ``MAX_AUTO_THREADS`` (the
    update and the rollout take turns, so the update can have every core; more threads than
    cores, or a machine busy with other work, make torch's threads wait on each other, then set
    1)."""
    env_threads: int = 1
    """Numba threads stepping the training games (the batched env's ``threads``, at most
    ``NUMBA_NUM_THREADS``, which a run resumed on a smaller machine may need to set); 1: the
    calling thread. More pays only where stepping the games is a
    large share of a run: in training the update holds every core and the games take a few
    percent, and two env threads measured slower than one."""
    env_workers: int = 1
    """Processes stepping the training games: the games split into this many shards of as many
    games each (it must divide ``n_envs``), the first stepped by the trainer and each other by a
    worker process of its own, side by side
    (``madiao_mao.training.env_workers``), so that the opponents' decisions and a belief policy's
    posteriors, Python that one process runs on one core, use every core. 1: the trainer steps
    every game. In league mode the trainer records every shard's games and each worker draws its
    opponents by the trainer's league standings. The workers play the live policy on the CPU
    whatever ``device`` the trainer learns on. Where processes fork (Linux, macOS). A run with
    workers is reproducible for its number of workers; its games are dealt from a seed per shard,
    so its figures are not those of a run without."""
    device: Annotated[str, _flag(choices=(*DEVICES, "cuda:N"))] = "auto"
    """Where the policy trains (a torch device): "auto" (a CUDA GPU when torch sees one, else the
    CPU), "cpu", "cuda" or "cuda:N" (GPU N; refused when torch sees no such device). Saved as
    asked; ``state.json`` and the report name the device a run used, and a resumed run resolves
    the saved request again on its machine (a GPU it lacks: the CPU). Saved models and snapshots
    load on the CPU wherever they are played."""
    progress_bar: Annotated[bool, tyro.conf.arg(name="progress")] = True
    """Show a tqdm progress bar (on the command line ``--progress`` / ``--no-progress``; a display
    setting of the call: a resumed run shows one unless told not to)."""
    verbose: bool = True
    """Print steps-per-second and evaluation lines."""

    def __post_init__(self) -> None:
        try:
            spec = game_spec(self.game)
        except ValueError as error:
            raise ConfigError("game", str(error)) from None
        for name, value in spec.defaults.items():
            if getattr(self, name) is None:
                # A copy: a run's dict must not be the table's (a config can be edited).
                setattr(self, name, dict(value) if isinstance(value, Mapping) else value)
        if self.torch_threads is None:
            self.torch_threads = auto_torch_threads()
        if not self.obs_type:
            self.obs_type = spec.obs_type
        self.game_settings = _game_settings(spec, self.game_settings)
        self.check()

    @property
    def trains_on_hidden_state(self) -> bool:
        """Whether the learner is handed the hidden state beside its observation (a privileged
        critic, oracle guiding or both): its training env appends the privileged vector and its
        model saved for play is the actor alone."""
        return bool(self.privileged_critic or self.oracle_guiding_steps)

    def _check_env_workers(self) -> None:
        """What a run with more than one env worker needs (``env_workers``' doc)."""
        # Imported here: the config module is read by every command, most of which never fork.
        from madiao_mao.training.env_workers import fork_available

        if self.n_envs % self.env_workers:
            raise ConfigError(
                "env_workers",
                f"env_workers ({self.env_workers}) must divide n_envs ({self.n_envs}): every shard "
                "has as many games",
            )
        if not fork_available():
            raise ConfigError(
                "env_workers", "env_workers > 1 needs processes that fork, which this platform lacks"
            )

    def check(self) -> None:
        """Every field's value, checked: the one validation of a config, however it was made (this
        dataclass, ``from_json``/``from_file`` or the command line). A bad value is a ConfigError
        naming the field."""
        for name in (
            "total_timesteps",
            "n_envs",
            "n_steps",
            "batch_size",
            "n_epochs",
            "eval_deals",
            "final_eval_deals",
            "checkpoint_every",
            "snapshot_every",
            "max_snapshots",
            "torch_threads",
            "env_threads",
            "env_workers",
            "imitation_decisions",
            "imitation_epochs",
        ):
            value = getattr(self, name)
            if not _is_int(value) or value < 1:
                raise ConfigError(name, f"{name} must be a positive integer, got {value!r}")
        # Imported here: the config module is read by every command, most of which never load Numba.
        import numba

        if self.env_threads > numba.config.NUMBA_NUM_THREADS:
            raise ConfigError(
                "env_threads",
                f"env_threads is {self.env_threads}, more than the {numba.config.NUMBA_NUM_THREADS} "
                f"threads Numba has here (set NUMBA_NUM_THREADS={self.env_threads} or use fewer)",
            )
        if self.env_workers > 1:
            self._check_env_workers()
        if not _is_int(self.seed) or self.seed < 0:
            # numpy refuses negative seeds.
            raise ConfigError("seed", f"seed must be an integer >= 0, got {self.seed!r}")
        if not isinstance(self.exp_name, str) or not re.fullmatch(r"[A-Za-z0-9_.-]+", self.exp_name):
            # It becomes part of a folder name: a separator would put the run somewhere else.
            raise ConfigError(
                "exp_name",
                "exp_name must be letters, digits, '_', '.' or '-' (it names the run's folder), "
                f"got {self.exp_name!r}",
            )
        if self.eval_every is not None and (not _is_int(self.eval_every) or self.eval_every < 0):
            raise ConfigError(
                "eval_every", f"eval_every must be an integer >= 0 or None, got {self.eval_every!r}"
            )
        for name in ("learning_rate", "gamma", "gae_lambda", "clip_range", "ent_coef", "vf_coef"):
            self._check_number(name)
        if not 0 < self.learning_rate < 1:
            raise ConfigError("learning_rate", f"learning_rate must be in (0, 1), got {self.learning_rate!r}")
        if self.lr_schedule not in LR_SCHEDULES:
            raise ConfigError(
                "lr_schedule",
                f"lr_schedule must be one of {', '.join(LR_SCHEDULES)}, got {self.lr_schedule!r}",
            )
        for name in ("gamma", "gae_lambda"):
            if not 0 <= getattr(self, name) <= 1:
                raise ConfigError(name, f"{name} must be in [0, 1], got {getattr(self, name)!r}")
        if self.clip_range <= 0:
            raise ConfigError("clip_range", f"clip_range must be > 0, got {self.clip_range!r}")
        if isinstance(self.net_arch, str) or not isinstance(self.net_arch, (tuple, list)):
            raise ConfigError("net_arch", f"net_arch must be layer sizes, got {self.net_arch!r}")
        if not self.net_arch or not all(_is_int(size) and size > 0 for size in self.net_arch):
            raise ConfigError(
                "net_arch", f"net_arch must be one or more positive sizes, got {self.net_arch!r}"
            )
        self.net_arch = tuple(self.net_arch)
        for name in ("scripted_opponents", "eval_opponents"):
            names = getattr(self, name)
            if isinstance(names, str) or not isinstance(names, (tuple, list)) or not names:
                raise ConfigError(name, f"{name} must be one or more agent names, got {names!r}")
            setattr(self, name, tuple(names))
        if not isinstance(self.env_kwargs, Mapping) or not all(
            isinstance(key, str) for key in self.env_kwargs
        ):
            raise ConfigError(
                "env_kwargs", f"env_kwargs must map option names to values, got {self.env_kwargs!r}"
            )
        self._check_league_options()
        if self.features not in POLICY_FEATURES:  # every registered game's, read now
            raise ConfigError(
                "features", f"features must be one of {', '.join(POLICY_FEATURES)}, got {self.features!r}"
            )
        if self.game_settings is not None:
            try:
                self.game_settings.check()
            except ConfigError as error:
                raise ConfigError(f"{self.game}.{error.field}", str(error)) from None
        if self.init_model is not None and (
            not isinstance(self.init_model, str) or not os.path.isfile(self.init_model)
        ):
            raise ConfigError("init_model", f"init_model: no saved model at {self.init_model!r}")
        if not isinstance(self.imitate, str):
            raise ConfigError("imitate", f"imitate must be an agent name or 'none', got {self.imitate!r}")
        if self.imitate != "none":
            # The agent registry reads every game's agents module: only when a config names an agent.
            from madiao_mao.agents.registry import agent_names

            if self.imitate not in agent_names(self.game):
                raise ConfigError(
                    "imitate",
                    f"imitate must be 'none' or a {self.game} agent ({', '.join(agent_names(self.game))}), "
                    f"got {self.imitate!r}",
                )
        offered = game_spec(self.game).obs_types
        if offered and self.obs_type not in offered:
            raise ConfigError(
                "obs_type",
                f"obs_type must be one of {', '.join(map(repr, offered))} for {self.game}, "
                f"got {self.obs_type!r}",
            )
        mismatch = features_error(self.features, self.game, self.obs_type)
        if mismatch:
            raise ConfigError("features", mismatch)
        self._check_privileged_options()
        check_device_name(self.device)

    def _check_privileged_options(self) -> None:
        if not isinstance(self.privileged_critic, bool):
            raise ConfigError(
                "privileged_critic",
                f"privileged_critic must be true or false, got {self.privileged_critic!r}",
            )
        steps = self.oracle_guiding_steps
        if not _is_int(steps) or steps < 0:
            raise ConfigError(
                "oracle_guiding_steps", f"oracle_guiding_steps must be an integer >= 0, got {steps!r}"
            )
        if steps > self.total_timesteps:
            raise ConfigError(
                "oracle_guiding_steps",
                f"oracle_guiding_steps ({steps}) must be at most total_timesteps ({self.total_timesteps}): "
                "the actor saved for play must read the seat's observation alone",
            )
        if self.trains_on_hidden_state:
            option = "privileged_critic" if self.privileged_critic else "oracle_guiding_steps"
            features = POLICY_FEATURES[self.features]
            policy, _ = features.policy()
            plain_mlp = features.learner_env is None and policy == "MlpPolicy"
            if not plain_mlp and features.privileged_policy is None:
                variants = [f'"{name}"' for name, other in POLICY_FEATURES.items() if other.privileged_policy]
                with_critic = ", ".join(variants)
                raise ConfigError(
                    option,
                    f'{option} works with the MLP policy\'s features ("flat", Madiao\'s "cards") '
                    f'and with {with_critic}, not with features="{self.features}"',
                )
            if self.init_model is not None:
                raise ConfigError(option, f"{option} trains a fresh network: init_model cannot be used")

    def _check_number(self, name: str) -> None:
        check_finite_number(name, getattr(self, name))

    def _check_league_options(self) -> None:
        if self.opponents not in OPPONENT_MODES:
            raise ConfigError(
                "opponents", f"opponents must be one of {', '.join(OPPONENT_MODES)}, got {self.opponents!r}"
            )
        if self.league_anchors is None and self.opponents == "league":
            self.league_anchors = tuple(dict.fromkeys(self.scripted_opponents))
        if self.league_anchors is not None:
            if isinstance(self.league_anchors, str) or not isinstance(self.league_anchors, (tuple, list)):
                raise ConfigError(
                    "league_anchors",
                    f"league_anchors must be a tuple of agent names, got {self.league_anchors!r}",
                )
            self.league_anchors = tuple(self.league_anchors)
            if not self.league_anchors:
                raise ConfigError("league_anchors", "league_anchors must name at least one scripted agent")

            names = agent_names(self.game)
            for name in self.league_anchors:
                if not isinstance(name, str):
                    raise ConfigError("league_anchors", f"league_anchors: {name!r} is not an agent name")
                if name.startswith(MODEL_PREFIX):
                    # A frozen policy, e.g. an exploiter from `madiao-mao exploit`: loaded when the
                    # run builds its opponents; a missing file is refused here, before any work.
                    if not os.path.isfile(name[len(MODEL_PREFIX) :]):
                        raise ConfigError(
                            "league_anchors", f"league_anchors: no saved model at {name[len(MODEL_PREFIX) :]}"
                        )
                elif name not in names:
                    raise ConfigError(
                        "league_anchors",
                        f"league_anchors: {name!r} is not a {self.game} agent "
                        f"({', '.join(names)} or model:PATH)",
                    )
            if len(set(self.league_anchors)) != len(self.league_anchors):
                raise ConfigError(
                    "league_anchors", f"league_anchors names an agent twice: {self.league_anchors!r}"
                )
        if self.pfsp_weighting not in PFSP_WEIGHTINGS:
            raise ConfigError(
                "pfsp_weighting",
                f"pfsp_weighting must be one of {', '.join(PFSP_WEIGHTINGS)}, got {self.pfsp_weighting!r}",
            )
        for name in ("pfsp_power", "pfsp_floor"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value):
                raise ConfigError(name, f"{name} must be a number, got {value!r}")
        if self.pfsp_power <= 0:
            raise ConfigError("pfsp_power", f"pfsp_power must be > 0, got {self.pfsp_power!r}")
        if not 0 <= self.pfsp_floor <= 1:
            raise ConfigError("pfsp_floor", f"pfsp_floor must be in [0, 1], got {self.pfsp_floor!r}")

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TrainConfig:
        data = _nest_flat_game_settings(data)
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown config fields: {', '.join(sorted(unknown))}")
        return cls(**data)

    @classmethod
    def from_file(cls, path: str | Path) -> TrainConfig:
        """The config saved in a JSON file (a run folder's ``config.json``, or one written by hand
        with any of the fields; the others keep their defaults); an unreadable file or a bad value
        is a ValueError naming the file."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise FileNotFoundError(f"no config file at {path}") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise ValueError(f"cannot read the config file {path}: {error}") from None
        if not isinstance(data, dict):
            raise ValueError(f"{path} is not a config: expected an object of config fields, got {data!r:.60}")
        try:
            return cls.from_json(data)
        except ConfigError as error:
            raise ConfigError(error.field, f"{path}: {error}") from None
        except (TypeError, ValueError) as error:
            raise ValueError(f"{path}: {error}") from None


def _game_settings(spec: GameSpec, given: Any) -> Any:
    """The game's settings object from what a config was given: None (the defaults), a mapping of
    its fields (a config file) or the object itself."""
    if spec.settings is None:
        if given not in (None, {}):
            raise ConfigError(
                "game_settings", f"game {spec.name!r} has no settings of its own, got {given!r}"
            )
        return None
    if given is None:
        return spec.settings()
    if isinstance(given, Mapping):
        known = {f.name for f in dataclasses.fields(spec.settings)}
        unknown = sorted(set(given) - known)
        if unknown:
            raise ConfigError("game_settings", f"{spec.name} has no settings {', '.join(unknown)}")
        return spec.settings(**given)
    if not isinstance(given, spec.settings):
        raise ConfigError(
            "game_settings", f"game_settings must be a {spec.settings.__name__}, got {type(given).__name__}"
        )
    return given


def _nest_flat_game_settings(data: dict[str, Any]) -> dict[str, Any]:
    """A saved config with its game's settings as flat fields (how older run folders saved them)
    as one ``game_settings`` mapping, so that every run folder's saved config keeps resuming.
    Another game's flat fields, which such a config saved unused, go."""
    old_names = {
        name: (game, field)
        for game, spec in GAME_SPECS.items()
        for name, field in spec.old_config_names.items()
    }
    if not set(data) & set(old_names):
        return data
    nested = {key: value for key, value in data.items() if key not in old_names}
    settings = dict(nested.get("game_settings") or {})
    for name, (game, field_name) in old_names.items():
        if name in data and game == data.get("game", default_game()):
            settings.setdefault(field_name, data[name])
    nested["game_settings"] = settings or None
    return nested


def check_finite_number(name: str, value: Any) -> None:
    """A ConfigError naming ``name`` unless ``value`` is a finite number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(name, f"{name} must be a finite number, got {value!r}")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_device_name(request: Any) -> None:
    """A ConfigError naming ``device`` unless ``request`` is a ``TrainConfig.device`` value."""
    if not isinstance(request, str) or not (request in DEVICES or re.fullmatch(r"cuda:[0-9]+", request)):
        raise ConfigError("device", f"device must be one of {', '.join(DEVICES)} or cuda:N, got {request!r}")


def resolve_device(request: str, *, resuming: bool = False) -> str:
    """The torch device a training call of ``TrainConfig.device`` ``request`` uses on this machine:
    "auto" is "cuda" when torch sees a CUDA device and "cpu" otherwise; "cuda"/"cuda:N" need
    that device, else a ConfigError naming ``device`` (a new run is refused before anything is
    made). ``resuming``: a run goes on where it can, so a GPU that this machine lacks is the CPU
    (a checkpoint loads on any device). Checked here and not in ``TrainConfig.check``: a saved
    config stays readable (a report, ``--config FILE --device cpu``, RLlib's env runners) on a
    machine without the GPU it names."""
    check_device_name(request)
    if request == "cpu":
        return "cpu"  # without importing torch
    # Imported here: keeps torch off this module's import path.
    import torch

    visible = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if request == "auto":
        return "cuda" if visible else "cpu"
    index = int(request.partition(":")[2] or 0)
    if index < visible:
        return request
    if resuming:
        return "cpu"
    seen = f"torch sees {visible} CUDA device(s)" if visible else "no CUDA device is visible to torch"
    raise ConfigError("device", f"device {request} cannot be used: {seen} (use cpu or auto)")


def rollout_size(config: TrainConfig) -> int:
    """Learner steps per PPO rollout: SB3 collects whole rollouts, so a run's step count is its
    starting count plus a whole number of these."""
    return config.n_envs * config.n_steps


def steps_at_end(config: TrainConfig, start: int) -> int:
    """The learner step count a run starting at ``start`` ends at: its budget rounded up to whole
    rollouts (PPO finishes the rollout it started), or ``start`` if the budget is already met."""
    remaining = max(config.total_timesteps - start, 0)
    rollout = rollout_size(config)
    return start + -(-remaining // rollout) * rollout


def evaluation_interval(config: TrainConfig) -> int:
    """Learner steps between evaluations: ``eval_every``, or by default a tenth of the budget and
    at least one rollout (evaluations happen between rollouts), so a short run has ~10 points."""
    if config.eval_every is not None:
        return config.eval_every
    return max(rollout_size(config), config.total_timesteps // 10)
