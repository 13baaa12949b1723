"""The typed config of a training run (``TrainConfig``) and the step arithmetic the trainer and
its callback share (rollout size, where a run ends, the evaluation interval).

Every field has a docstring; a field left at None takes its game's value from the game's spec
(``training.games.GAME_DEFAULTS``, with a one-line reason per default there). A bad value is a
ValueError naming the field, raised when the config is made.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from training.games import GAME_SPECS, POLICY_FEATURES, features_error, game_spec
from training.league import PFSP_WEIGHTINGS

GAMES = tuple(GAME_SPECS)
LR_SCHEDULES = ("constant", "linear")
OPPONENT_MODES = ("pool", "league")
MAO_RULE_POOLS = ("train", "all", "none")
FEATURES = tuple(POLICY_FEATURES)
#: The most torch threads a config picks by itself (measured up to 2 here: docs/results.md,
#: "Learner throughput on one machine"; 256-row minibatches gain little from more).
MAX_AUTO_THREADS = 4


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
    """Every knob of a training run; the defaults are the README's main job (Madiao: league
    self-play, about 16 minutes of training on 2 cores, after which the policy beats the strongest
    scripted player)."""

    game: str = "madiao"
    """Which game to train on: "madiao" or "mao"."""
    exp_name: str = "selfplay"
    """Experiment name, part of the run name."""
    seed: int = 1
    """Seed of the env, the policy, the seat draws and the evaluation deals."""
    total_timesteps: int | None = None
    """Learner decisions to train on (opponent moves are not counted); None: the game's default
    (``training.games.GAME_DEFAULTS``: 3,250,000 for Madiao, 250,000 for Mao)."""
    n_envs: int = 256
    """Games stepped together by the batched env (many games amortise every per-call cost)."""
    n_steps: int = 32
    """Learner decisions per game per PPO rollout (rollout size = n_envs * n_steps)."""
    batch_size: int | None = None
    """PPO minibatch size; None: the game's default (256 for both games: larger minibatches keep
    both cores busier in the update but lose strength per learner step, docs/results.md)."""
    n_epochs: int = 4
    """PPO epochs over each rollout."""
    learning_rate: float | None = None
    """Adam learning rate at the start of the run (see ``lr_schedule``); None: the game's default
    (3e-4 for both games)."""
    lr_schedule: str = "linear"
    """"constant", or "linear" (steadier final policy): decays by rollout over the run's real length
    (the budget rounded up to whole rollouts), each update at its rollout's starting rate, so the
    last update still learns (``training.sb3.model.learning_rate_schedule``)."""
    gamma: float | None = None
    """Discount; None: the game's default (Madiao 1, since a hand is short and only its settlement
    pays; Mao 0.99, since an episode is long and a penalty follows the turn that earned it)."""
    gae_lambda: float = 0.95
    """GAE lambda."""
    clip_range: float = 0.2
    """PPO clip range."""
    ent_coef: float | None = None
    """Entropy bonus (keeps play exploratory against a changing pool); None: the game's default
    (Madiao 0.01; Mao 0.005, where 115 actions and free speech make random talk costly)."""
    vf_coef: float = 0.5
    """Value-loss weight."""
    net_arch: tuple[int, ...] = (256, 256)
    """Hidden layer sizes of the policy and value MLPs."""
    features: str | None = None
    """What the MLPs read: "flat" (the observation); Madiao summary observations only, "cards"
    (plus unseen/boss card planes, ``agents.madiao_features``); Mao only, "rules" (plus base-rule
    and recent-call card planes, which also reach the action layer directly: the policy
    ``agents.mao_features.MaoRulePolicy``), "memory" (attention over a longer event window,
    ``agents.mao_memory``) or "belief" (the rule planes and the seat's posterior over the secret
    rules, a memory of the whole game: ``agents.mao_belief_inputs``, the policy
    ``agents.mao_features.MaoBeliefPolicy``); None: the game's default ("cards" for Madiao,
    "belief" for Mao)."""
    obs_type: str = ""
    """Observation variant; "" picks the game's default ("summary" for Madiao, "history" for Mao:
    Mao's secret rules can only be inferred from a history of public events)."""
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    """Extra options for the game env (rule variants)."""
    mao_penalty_card_reward: float = -1.0
    """Mao: the learner's reward per penalty card in training games (the env's default is -0.1 next
    to +1 for a round won; a heavier weight teaches a policy to avoid calls, which is what the
    held-out evaluation measures)."""
    mao_hand_card_reward: float | None = None
    """Mao: the learner's reward per card its hand shrinks by (minus per card it grows by) in
    training games (``training.sb3.wrappers.HandSizeReward``): without it, drawing instead of playing
    is a free way to avoid calls. None: the game's default (0.2 for Mao; Madiao has no use for
    it)."""
    imitate: str | None = None
    """Warm start (``training.sb3.imitation``): a scripted agent (name as in ``agents.registry``) plays
    the learner's seat of the training env for ``imitation_decisions`` decisions and the fresh
    policy is fitted to its moves (and its value head to the returns) before PPO starts; "none":
    PPO from a random policy. None: the game's default ("none" for Madiao; "bayes", the Bayesian
    rule-inference player, for Mao, where PPO from scratch learns to draw instead of playing)."""
    imitation_decisions: int = 200_000
    """Teacher decisions recorded for the warm start (not counted in ``total_timesteps``)."""
    imitation_epochs: int = 4
    """Passes over the teacher's decisions when fitting the policy."""
    mao_rule_pool: str = "train"
    """Mao: the secret rule every training episode starts with, drawn per episode: "train" (any
    library rule but ``mao_env.rules.HELD_OUT_RULES``, which the final report then uses
    to test the policy on rules it never met), "all" (any library rule) or "none" (no secret rule
    at the start; rules then come only from round winners)."""
    scripted_opponents: tuple[str, ...] | None = None
    """Scripted agents in the opponent pool (names as in ``agents.registry``; a name listed twice
    fills twice the scripted slots); None: the game's default."""
    opponent_weights: dict[str, float] | None = None
    """Probability weights of the opponent kinds per opponent seat ("scripted", "snapshot",
    "current"; kinds without agents skipped); None: the game's default."""
    snapshot_every: int = 250_000
    """Learner steps between frozen snapshots added to the pool (kept on disk as well)."""
    max_snapshots: int = 5
    """Snapshots kept in the pool (the oldest is replaced)."""
    opponents: str | None = None
    """How the opponents of a training game are chosen (CLI ``--opponents``); None: the game's
    default ("league" for Madiao, "pool" for Mao).

    "pool": every opponent seat of every game draws its own agent from the weighted pool
    of ``scripted_opponents``, snapshots and the live policy (``opponent_weights``).

    "league" (``training.league``, AlphaStar-style): one member of a league plays ALL the opponent
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
    Roles: as in the pool mode, the learner's seat rotates through every seat game by game, so in
    Madiao it is the banker in a quarter of its games and one of the three players in the rest.
    The other three seats are copies of the one member drawn for the game, so the learner has no
    teammate of its own: as banker it faces three copies of the member, and as a player its two
    partners are copies of the same member that holds the bank (the live policy or a snapshot of
    it when the member is the main agent or a snapshot, a scripted player when it is an anchor).
    Only the learner's seat is trained.
    """
    league_anchors: tuple[str, ...] | None = None
    """League mode: the fixed members, by ``agents.registry`` name or ``model:PATH`` (a frozen
    policy: a model from another run, or an exploiter of this one trained by ``madiao-mao
    exploit``, which then stays in the league so the main agent keeps answering it); None: the
    game's default
    (Madiao: random, greedy, heuristic; the search player plays about 220 decisions per CPU-second
    where a training table needs thousands, docs/results.md), or else the distinct names of
    ``scripted_opponents``."""
    pfsp_weighting: str = "hard"
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
    eval_every: int | None = None
    """Learner steps between evaluations against the baselines, the points of the learning curve
    (0: none during training, only the final report); None: a tenth of the budget, at least one
    rollout, so that even a short run draws a curve (``evaluation_interval``). Evaluations happen
    between rollouts, and once more at the end of the run."""
    eval_deals: int = 25
    """Duplicate deals per baseline in periodic evaluations (4 hands each); Mao: own turns of the
    learner per held-out rule."""
    eval_opponents: tuple[str, ...] | None = None
    """Baselines the learner is evaluated against (Mao: the players at its table); None: the
    game's default."""
    final_eval_deals: int | None = None
    """Final evaluation report: Madiao, duplicate deals per pairing (default 1,000); Mao, own turns of
    each agent per held-out rule, in games of 100 turns (default 1,000: 10 games per rule, 80 in
    all, so the paired interval of learned minus base is a few hundredths wide)."""
    runs_dir: str = "runs"
    """Folder holding one sub-folder per run."""
    torch_threads: int | None = None
    """torch CPU threads; None: the cores this process may use, at most ``MAX_AUTO_THREADS`` (the
    update and the rollout take turns, so the update can have every core; more threads than
    cores, or a machine busy with other work, make torch's threads wait on each other, then set
    1)."""
    progress_bar: bool = True
    """Show a tqdm progress bar."""
    verbose: bool = True
    """Print steps-per-second and evaluation lines."""

    def __post_init__(self) -> None:
        spec = game_spec(self.game)
        for name, value in spec.defaults.items():
            if getattr(self, name) is None:
                # A copy: a run's dict must not be the table's (a config can be edited).
                setattr(self, name, dict(value) if isinstance(value, Mapping) else value)
        if self.torch_threads is None:
            self.torch_threads = auto_torch_threads()
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
            "torch_threads",
            "imitation_decisions",
            "imitation_epochs",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if not isinstance(self.exp_name, str) or not re.fullmatch(r"[A-Za-z0-9_.-]+", self.exp_name):
            # It becomes part of a folder name: a separator would put the run somewhere else.
            raise ValueError(
                "exp_name must be letters, digits, '_', '.' or '-' (it names the run's folder), "
                f"got {self.exp_name!r}"
            )
        if self.eval_every is not None and (
            isinstance(self.eval_every, bool) or not isinstance(self.eval_every, int) or self.eval_every < 0
        ):
            raise ValueError(f"eval_every must be an integer >= 0 or None, got {self.eval_every!r}")
        if isinstance(self.learning_rate, bool) or not isinstance(self.learning_rate, (int, float)):
            raise ValueError(f"learning_rate must be a number, got {self.learning_rate!r}")
        if not 0 < self.learning_rate < 1:
            raise ValueError(f"learning_rate must be in (0, 1), got {self.learning_rate!r}")
        if self.lr_schedule not in LR_SCHEDULES:
            raise ValueError(
                f"lr_schedule must be one of {', '.join(LR_SCHEDULES)}, got {self.lr_schedule!r}"
            )
        if not 0 <= self.gamma <= 1 or not 0 <= self.gae_lambda <= 1:
            raise ValueError("gamma and gae_lambda must be in [0, 1]")
        self.net_arch = tuple(int(x) for x in self.net_arch)
        self.scripted_opponents = tuple(self.scripted_opponents)
        self.eval_opponents = tuple(self.eval_opponents)
        self._check_league_options()
        if not self.obs_type:
            self.obs_type = spec.obs_type
        if self.features not in FEATURES:
            raise ValueError(f"features must be one of {', '.join(FEATURES)}, got {self.features!r}")
        if isinstance(self.mao_penalty_card_reward, bool) or not isinstance(
            self.mao_penalty_card_reward, (int, float)
        ):
            raise ValueError(
                f"mao_penalty_card_reward must be a number, got {self.mao_penalty_card_reward!r}"
            )
        if isinstance(self.mao_hand_card_reward, bool) or not isinstance(
            self.mao_hand_card_reward, (int, float)
        ):
            raise ValueError(f"mao_hand_card_reward must be a number, got {self.mao_hand_card_reward!r}")
        if self.mao_rule_pool not in MAO_RULE_POOLS:
            raise ValueError(
                f"mao_rule_pool must be one of {', '.join(MAO_RULE_POOLS)}, got {self.mao_rule_pool!r}"
            )
        if not isinstance(self.imitate, str):
            raise ValueError(f"imitate must be an agent name or 'none', got {self.imitate!r}")
        if self.imitate != "none":
            from agents.registry import agent_names

            if self.imitate not in agent_names(self.game):
                raise ValueError(
                    f"imitate must be 'none' or a {self.game} agent ({', '.join(agent_names(self.game))}), "
                    f"got {self.imitate!r}"
                )
        mismatch = features_error(self.features, self.game, self.obs_type)
        if mismatch:
            raise ValueError(mismatch)

    def _check_league_options(self) -> None:
        if self.opponents not in OPPONENT_MODES:
            raise ValueError(f"opponents must be one of {', '.join(OPPONENT_MODES)}, got {self.opponents!r}")
        if self.league_anchors is None and self.opponents == "league":
            self.league_anchors = tuple(dict.fromkeys(self.scripted_opponents))
        if self.league_anchors is not None:
            if isinstance(self.league_anchors, str) or not isinstance(self.league_anchors, (tuple, list)):
                raise ValueError(
                    f"league_anchors must be a tuple of agent names, got {self.league_anchors!r}"
                )
            self.league_anchors = tuple(self.league_anchors)
            if not self.league_anchors:
                raise ValueError("league_anchors must name at least one scripted agent")
            from agents.registry import MODEL_PREFIX, agent_names

            names = agent_names(self.game)
            for name in self.league_anchors:
                if not isinstance(name, str):
                    raise ValueError(f"league_anchors: {name!r} is not an agent name")
                if name.startswith(MODEL_PREFIX):
                    # A frozen policy, e.g. an exploiter from `madiao-mao exploit`: loaded when the
                    # run builds its opponents; a missing file is refused here, before any work.
                    if not os.path.isfile(name[len(MODEL_PREFIX) :]):
                        raise ValueError(f"league_anchors: no saved model at {name[len(MODEL_PREFIX) :]}")
                elif name not in names:
                    raise ValueError(
                        f"league_anchors: {name!r} is not a {self.game} agent "
                        f"({', '.join(names)} or model:PATH)"
                    )
            if len(set(self.league_anchors)) != len(self.league_anchors):
                raise ValueError(f"league_anchors names an agent twice: {self.league_anchors!r}")
        if self.pfsp_weighting not in PFSP_WEIGHTINGS:
            raise ValueError(
                f"pfsp_weighting must be one of {', '.join(PFSP_WEIGHTINGS)}, got {self.pfsp_weighting!r}"
            )
        for name in ("pfsp_power", "pfsp_floor"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value):
                raise ValueError(f"{name} must be a number, got {value!r}")
        if self.pfsp_power <= 0:
            raise ValueError(f"pfsp_power must be > 0, got {self.pfsp_power!r}")
        if not 0 <= self.pfsp_floor <= 1:
            raise ValueError(f"pfsp_floor must be in [0, 1], got {self.pfsp_floor!r}")

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TrainConfig:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown config fields: {', '.join(sorted(unknown))}")
        return cls(**data)


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


def train_config_from_args(args: Any) -> TrainConfig:
    """The ``TrainConfig`` of ``madiao-mao train``'s parsed options (both engines)."""
    return TrainConfig(
        game=args.game,
        total_timesteps=args.total_timesteps or TrainConfig.total_timesteps,
        n_envs=args.n_envs,
        n_steps=args.n_steps,
        batch_size=None if args.batch_size is None else min(args.batch_size, args.n_envs * args.n_steps),
        learning_rate=args.learning_rate,
        seed=args.seed,
        exp_name=args.exp_name,
        runs_dir=args.runs_dir,
        eval_every=args.eval_every,
        eval_deals=args.eval_deals,
        final_eval_deals=args.final_eval_deals,
        checkpoint_every=args.checkpoint_every,
        snapshot_every=args.snapshot_every,
        mao_rule_pool=args.mao_rule_pool,
        mao_penalty_card_reward=args.mao_penalty_card_reward,
        mao_hand_card_reward=args.mao_hand_card_reward,
        imitate=args.imitate,
        imitation_decisions=args.imitation_decisions,
        opponents=args.opponents,
        league_anchors=args.league_anchors,
        features=args.features,
        progress_bar=not args.no_progress,
    )
