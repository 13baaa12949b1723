"""Self-play training with sb3-contrib MaskablePPO (a CleanRL-style straight script).

    python -m training.train            # or: madiao-mao train [--total-timesteps N ...]

One learner policy plays a random seat of every game (so both Madiao roles, banker and player),
against opponents drawn from a pool of scripted agents, frozen snapshots of itself and its live
self; it is rewarded with its own seat's payoff (see ``cardgame_core.adapters.LearnerVecEnv``).
With ``imitate`` set (Mao's default), a fresh policy first copies a scripted teacher playing the
learner's seat (``training.imitation``); PPO then goes on from there.
Everything a run writes lives in its own folder ``runs_dir/game__exp_name__seed__unixtime`` (made
exclusively: a second run started in the same second gets a ``_2`` suffix): ``config.json``,
TensorBoard events (tags ``charts/``, ``losses/``, ``eval/``), ``progress.csv`` (the same names as
the TensorBoard tags), ``eval.json`` (the learning curve: by default about ten evaluations per
run), atomic checkpoints (``checkpoint.zip`` + ``state.json``, the first at step 0), snapshots, and
at the end ``final_model.zip`` and the evaluation report.

With ``opponents="league"`` (``madiao-mao train --league``; opt-in), one member of a league (the
live policy, its snapshots, scripted anchors) plays all the opponent seats of a game, drawn by
prioritized fictitious self-play from the learner's payoff table (``training.league``; see
``TrainConfig.opponents``), and ``league.json`` is saved beside every checkpoint (a resumed
league run needs it and its snapshot files).

PPO collects whole rollouts (``n_envs * n_steps`` learner steps), so a run ends at its budget
rounded up to a whole rollout; the progress bar ends there and the summary gives the true count.
An interrupted run continues from its last checkpoint with ``train(resume=run_dir)``
(``madiao-mao train --resume RUN_DIR``), appending to its logs; a folder whose ``config.json``,
``state.json`` or ``checkpoint.zip`` is missing or damaged is refused with an error naming the
file, before anything in it changes. Ctrl-C saves a checkpoint of what the policy has learned and
prints the command that resumes the run.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import shlex
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from cardgame_core.files import atomic_write_json
from training.league import PFSP_WEIGHTINGS
from training.logging_utils import atomic_save_model

GAMES = ("madiao", "mao")
#: The league saved beside every checkpoint of a league run.
LEAGUE_FILE = "league.json"
FEATURES = ("flat", "cards", "rules")
LR_SCHEDULES = ("constant", "linear")
OPPONENT_MODES = ("pool", "league")
MAO_RULE_POOLS = ("train", "all", "none")

#: The defaults that differ by game (a field left at None takes its game's value).
#: Madiao: the learner trains against the strongest scripted player, the one it has to beat (the
#: registry's "heuristic" fills 3 of 4 pool entries, greedy the fourth). Measured at 500k steps
#: (learned vs heuristic, 1,000 duplicate deals, stakes/hand, 95% CI about +-0.05): a 30%
#: self-play share -0.12 vs scripted only -0.10; minibatch 512 instead of 2048 -0.02 (four times
#: the gradient steps for the same compute); the "cards" features +0.03. Final policies (2,500
#: deals): 2M steps, minibatch 512, constant rate +0.16; 2.5M, linear decay +0.13; 4M, minibatch
#: 256, linear decay (these defaults) +0.19, in about 11 minutes of training at ~6,000 steps/s.
#: Mao: PPO from a random policy learns to draw instead of playing (no call, no win) and ended
#: worse than the base-rules player on the held-out rules; the warm start from the Bayesian player
#: and the +0.2 per card shed fix that. Held-out penalty cards/turn (80 games, seed 0; base 0.146):
#: warm start alone 0.105 (24 games), + 400k PPO steps 0.088, + 1M (these defaults) 0.081 with a
#: round-win rate of 0.20 (base 0.24); without the hand-size reward 0.046 but winning 2% of rounds.
GAME_DEFAULTS: dict[str, dict[str, Any]] = {
    "madiao": {
        "total_timesteps": 4_000_000,
        "scripted_opponents": ("heuristic", "heuristic", "heuristic", "greedy"),
        "opponent_weights": {"scripted": 1.0, "snapshot": 0.0, "current": 0.0},
        "eval_opponents": ("random", "greedy", "heuristic"),
        "features": "cards",
        "gamma": 1.0,
        "ent_coef": 0.01,
        "imitate": "none",
        "mao_hand_card_reward": 0.0,
        "final_eval_deals": 200,
    },
    "mao": {
        "total_timesteps": 1_000_000,
        "scripted_opponents": ("base",),
        "opponent_weights": {"scripted": 0.6, "snapshot": 0.2, "current": 0.2},
        "gamma": 0.99,
        "ent_coef": 0.005,
        "eval_opponents": ("base",),
        "features": "rules",
        "imitate": "bayes",
        "mao_hand_card_reward": 0.2,
        "final_eval_deals": 1000,
    },
}


@dataclass
class TrainConfig:
    """Every knob of a training run; the defaults are the README's main job (Madiao: 11-13
    minutes on 2 cores, after which the policy beats the strongest scripted player)."""

    game: str = "madiao"
    """Which game to train on: "madiao" or "mao"."""
    exp_name: str = "selfplay"
    """Experiment name, part of the run name."""
    seed: int = 1
    """Seed of the env, the policy, the seat draws and the evaluation deals."""
    total_timesteps: int | None = None
    """Learner decisions to train on (opponent moves are not counted); None: the game's default
    (``GAME_DEFAULTS``: 4,000,000 for Madiao, 1,000,000 for Mao)."""
    n_envs: int = 256
    """Games stepped together by the batched env (many games amortise every per-call cost)."""
    n_steps: int = 32
    """Learner decisions per game per PPO rollout (rollout size = n_envs * n_steps)."""
    batch_size: int = 256
    """PPO minibatch size (small minibatches: more gradient steps for the same compute)."""
    n_epochs: int = 4
    """PPO epochs over each rollout."""
    learning_rate: float = 3e-4
    """Adam learning rate (at the start of the run, see ``lr_schedule``)."""
    lr_schedule: str = "linear"
    """"constant", or "linear": decays to 0 at ``total_timesteps`` (steadier final policy)."""
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
    ``agents.mao_features.MaoRulePolicy``); None: the game's default ("cards" for
    Madiao, "rules" for Mao)."""
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
    training games (``training.opponents.HandSizeReward``): without it, drawing instead of playing
    is a free way to avoid calls. None: the game's default (0.2 for Mao; Madiao has no use for
    it)."""
    imitate: str | None = None
    """Warm start (``training.imitation``): a scripted agent (name as in ``agents.registry``) plays
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
    library rule but ``training.mao_evaluation.HELD_OUT_RULES``, which the final report then uses
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
    opponents: str = "pool"
    """How the opponents of a training game are chosen (CLI ``--league`` for "league").

    "pool" (default): every opponent seat of every game draws its own agent from the weighted pool
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
    """League mode: the scripted members, by ``agents.registry`` name (Madiao: random, greedy,
    heuristic, search; Mao: base; agents with a memory per game such as Mao's bayes cannot sit in
    the SB3 trainer's opponents); None: the distinct names of ``scripted_opponents``."""
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
    """Final evaluation report: Madiao, duplicate deals per pairing (default 200); Mao, own turns of
    each agent per held-out rule, in games of 100 turns (default 1,000: 10 games per rule, 80 in
    all, so the paired interval of learned minus base is a few hundredths wide)."""
    runs_dir: str = "runs"
    """Folder holding one sub-folder per run."""
    torch_threads: int = 1
    """torch CPU threads (1 leaves the second core to the game env and opponents)."""
    progress_bar: bool = True
    """Show a tqdm progress bar."""
    verbose: bool = True
    """Print steps-per-second and evaluation lines."""

    def __post_init__(self) -> None:
        if self.game not in GAMES:
            raise ValueError(f"game must be one of {', '.join(GAMES)}, got {self.game!r}")
        for name, value in GAME_DEFAULTS[self.game].items():
            if getattr(self, name) is None:
                setattr(self, name, dict(value) if isinstance(value, dict) else value)
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
        if self.eval_every is not None and (
            isinstance(self.eval_every, bool) or not isinstance(self.eval_every, int) or self.eval_every < 0
        ):
            raise ValueError(f"eval_every must be an integer >= 0 or None, got {self.eval_every!r}")
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
            self.obs_type = "summary" if self.game == "madiao" else "history"
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
        if self.features == "rules" and self.game != "mao":
            raise ValueError('features="rules" needs game="mao"')
        if self.features == "cards" and (self.game, self.obs_type) != ("madiao", "summary"):
            raise ValueError('features="cards" needs game="madiao" with obs_type="summary"')

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
            from agents.registry import agent_names

            names = agent_names(self.game)
            for name in self.league_anchors:
                if name not in names:
                    raise ValueError(
                        f"league_anchors: {name!r} is not a {self.game} agent ({', '.join(names)})"
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


def make_vector_env(config: TrainConfig, n_envs: int, seed: int | None):
    kwargs = {"obs_type": config.obs_type, **config.env_kwargs}
    if config.game == "madiao":
        from madiao_env.vector import MadiaoVectorEnv

        return MadiaoVectorEnv(n_envs, seed=seed, **kwargs)
    from mao_env import rules as rule_library
    from mao_env.vector import MaoVectorEnv

    pools = {"train": rule_library.TRAINING_RULES, "all": tuple(range(rule_library.N_RULES)), "none": ()}
    kwargs.setdefault("penalty_card_reward", config.mao_penalty_card_reward)
    return MaoVectorEnv(n_envs, seed=seed, rule_pool=pools[config.mao_rule_pool], **kwargs)


def learning_rate_schedule(config: TrainConfig):
    """The learning rate for SB3: a constant, or a function of the remaining progress (1 -> 0)."""
    if config.lr_schedule == "constant":
        return config.learning_rate
    start = config.learning_rate
    # The last rollout may overshoot the budget, where SB3's progress goes slightly below 0.
    return lambda progress_remaining: start * max(progress_remaining, 0.0)


def policy_kwargs(config: TrainConfig) -> dict[str, Any]:
    """The MaskablePPO ``MlpPolicy`` options of a config (network sizes, features extractor)."""
    kwargs: dict[str, Any] = {"net_arch": list(config.net_arch)}
    if config.features == "cards":
        from agents.madiao_features import MadiaoCardFeatures, summary_layout

        kwargs["features_extractor_class"] = MadiaoCardFeatures
        kwargs["features_extractor_kwargs"] = summary_layout()
    return kwargs


def policy_class(config: TrainConfig):
    """The MaskablePPO policy: the MLP policy, or for Mao's "rules" features the policy whose
    action layer also reads the per-card rule planes (``agents.mao_features.MaoRulePolicy``)."""
    if config.features == "rules":
        from agents.mao_features import MaoRulePolicy

        return MaoRulePolicy
    return "MlpPolicy"


def evaluate_against_baselines(model, config: TrainConfig, n_deals: int, seed: int) -> dict[str, dict]:
    """Duplicate results of the greedy learned policy against each baseline (Madiao), or the Mao
    metrics of the learned policy at a table of each baseline, facing the rules held out of its
    training one at a time (``n_deals`` own turns per rule)."""
    from agents.learned import LearnedPolicyAgent
    from agents.registry import make_agent

    learner = LearnedPolicyAgent(model=model, name="learned")
    results: dict[str, dict] = {}
    env_kwargs = {"obs_type": config.obs_type, **config.env_kwargs}
    if config.game == "madiao":
        from training.evaluation import duplicate_match, make_deals

        deals = make_deals(n_deals, seed)
        for name in config.eval_opponents:
            pair = duplicate_match(
                learner,
                make_agent(name, "madiao", seed=seed),
                deals,
                env_kwargs=env_kwargs,
                agent_name="learned",
                opponent_name=name,
            )
            results[name] = {
                "hands": pair.n_hands,
                **{
                    key: {"mean": ci.mean, "low": ci.low, "high": ci.high}
                    for key, ci in (
                        ("all", pair.overall()),
                        ("banker", pair.as_banker()),
                        ("player", pair.as_player()),
                    )
                },
            }
    else:
        from training.mao_evaluation import held_out_experiment

        for name in config.eval_opponents:
            report = held_out_experiment(
                {"learned": learner}, turns=n_deals, seed=seed, opponent=name, env_kwargs=env_kwargs
            )
            results[name] = report.stats["learned"].summary()
    return results


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


def make_run_dir(config: TrainConfig, clock: Callable[[], float] | None = None) -> Path:
    """Create a new run's folder ``runs_dir/game__exp_name__seed__unixtime`` and return it.

    The folder is made with an exclusive ``mkdir``: a second run with the same name in the same
    second (``clock``, default ``time.time``) gets ``..._2`` (then ``_3``...) instead of a
    traceback or a folder shared by two runs."""
    runs_dir = Path(config.runs_dir)
    runs_dir.mkdir(parents=True, exist_ok=True)
    now = (clock or time.time)()
    base_name = f"{config.game}__{config.exp_name}__{config.seed}__{int(now)}"
    for attempt in itertools.count(1):
        run_dir = runs_dir / (base_name if attempt == 1 else f"{base_name}_{attempt}")
        try:
            run_dir.mkdir()
        except FileExistsError:
            continue
        return run_dir
    raise AssertionError("unreachable")


def _read_run_json(path: Path) -> Any:
    """A run folder's JSON file; a damaged one is a ValueError that names it."""
    try:
        return json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path} is damaged (not valid JSON: {error})") from None


#: The fields of ``state.json`` a resumed run reads, with their JSON types.
STATE_FIELDS: dict[str, type] = {
    "num_timesteps": int,
    "snapshots": list,
    "eval": list,
    "resumes": list,
    "imitation": dict,
    "last_speed": dict,
    "final_speed": dict,
}


def load_run(run_dir: str | Path) -> tuple[TrainConfig, dict[str, Any]]:
    """The saved config and state of the run in ``run_dir``, checked before anything is written:
    a missing ``config.json``, ``state.json`` or ``checkpoint.zip`` is a FileNotFoundError, a
    damaged ``config.json`` or ``state.json`` a ValueError, each naming the file."""
    run_dir = Path(run_dir)
    config_path, state_path = run_dir / "config.json", run_dir / "state.json"
    if not config_path.is_file():
        raise FileNotFoundError(f"{run_dir} is not a run folder (no config.json)")
    data = _read_run_json(config_path)
    if not isinstance(data, dict):
        raise ValueError(f"{config_path} is damaged: expected an object of config fields, got {data!r:.60}")
    try:
        config = TrainConfig.from_json(data)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{config_path} is damaged: {error}") from None
    missing = [path.name for path in (run_dir / "checkpoint.zip", state_path) if not path.is_file()]
    if missing:
        # Starting again from step 0 here would overwrite the run's snapshots and logs.
        raise FileNotFoundError(
            f"cannot resume {run_dir}: {' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} "
            "missing, so there is no checkpoint to continue from (start a new run instead)"
        )
    state = _read_run_json(state_path)
    if not isinstance(state, dict):
        raise ValueError(f"{state_path} is damaged: expected an object, got {state!r:.60}")
    for name, kind in STATE_FIELDS.items():
        value = state.get(name, kind())
        if not isinstance(value, kind) or (kind is int and (isinstance(value, bool) or value < 0)):
            raise ValueError(
                f"{state_path} is damaged: {name} should be a {kind.__name__}, got {value!r:.60}"
            )
    if not all(isinstance(path, str) for path in state.get("snapshots", [])):
        raise ValueError(f"{state_path} is damaged: snapshots should be a list of file names")
    if not all(
        isinstance(point, dict)
        and isinstance(point.get("timesteps"), int)
        and isinstance(point.get("results"), dict)
        for point in state.get("eval", [])
    ):
        raise ValueError(f"{state_path} is damaged: eval should be a list of {{timesteps, results}} points")
    return config, state


def train(
    config: TrainConfig | None = None,
    resume: str | Path | None = None,
    *,
    total_timesteps: int | None = None,
    quiet: bool = False,
) -> Path:
    """Run a training run from ``config``, or continue the one in folder ``resume`` (its own saved
    config is used; ``total_timesteps`` may raise its budget); returns the run folder.

    ``quiet`` turns the progress bar off for this call (a run's verbose setting then prints a
    line per rollout instead); a resumed run always says where it resumed. A run folder that
    cannot be resumed (a file missing or damaged) is refused before anything in it is changed.
    Ctrl-C (KeyboardInterrupt) during training saves a checkpoint of what was learned, prints how
    to resume, and is raised again."""
    import torch
    from sb3_contrib import MaskablePPO

    from agents.base import Agent
    from agents.learned import LearnedPolicyAgent
    from agents.registry import make_agent
    from cardgame_core.adapters import LearnerVecEnv
    from training.logging_utils import make_logger
    from training.opponents import HandSizeReward, LeagueOpponents, OpponentPool, TimedVectorEnv
    from training.training_callback import TrainingCallback

    # ---- run folder, config and resume state (a resumed run's files are checked first)
    league = None
    if resume is not None:
        run_dir = Path(resume)
        config, state = load_run(run_dir)
        if config.opponents == "league":
            league = load_league(run_dir)
        if total_timesteps is not None:
            config.total_timesteps = total_timesteps
            config.__post_init__()  # the new budget is checked like any other
        saved_config = config.to_json()
        # Display settings belong to this call, not to the run: they are not saved.
        config = dataclasses.replace(config, progress_bar=not quiet)
    else:
        if config is None:
            raise ValueError("give a TrainConfig for a new run, or resume=RUN_DIR")
        saved_config = config.to_json()
        if quiet:
            config = dataclasses.replace(config, progress_bar=False)
        run_dir = None
        state = {}
    torch.set_num_threads(config.torch_threads)
    say = print if config.verbose else (lambda *a, **k: None)

    # ---- env, opponent pool (or league)
    if config.opponents == "league":
        league = league or new_league(config)
        scripted_names = tuple(league.members[name].agent for name in league.names("anchor"))
        what = "league anchor"
    else:
        scripted_names = config.scripted_opponents
        what = "scripted opponent"
    scripted = []
    for number, name in enumerate(scripted_names):
        try:
            scripted.append(make_agent(name, config.game, seed=config.seed + number))
        except ValueError as error:
            # e.g. Madiao's search player, which needs a whole env of its own per game.
            raise ValueError(f"{what} {name!r} cannot sit in the training pool: {error}") from None
    for name, agent in zip(scripted_names, scripted, strict=True):
        if type(agent).reset_rows is not Agent.reset_rows:
            # The pool hands an opponent a different subset of games (and seats) at every call, so
            # an agent that remembers each batch row's game would mix games up.
            raise ValueError(
                f"{what} {name!r} keeps a memory per game and cannot sit in the training "
                "pool; choose memoryless agents (Mao: base; the Bayesian player can be the teacher, "
                "imitate='bayes')"
            )
    if league is not None:
        pool = LeagueOpponents(
            league,
            dict(zip(league.names("anchor"), scripted, strict=True)),
            max_snapshots=config.max_snapshots,
        )
        for name in league.names("snapshot"):
            path = run_dir / league.members[name].path
            try:
                agent = snapshot_agent(path, config.seed)
            except Exception as error:  # a damaged zip fails in zipfile, torch or pickle, each its own way
                raise ValueError(
                    f"{path}, snapshot {name!r} of {LEAGUE_FILE}, is damaged "
                    f"({type(error).__name__}: {error})"
                ) from None
            pool.bind_snapshot(name, agent)
    else:
        pool = OpponentPool(scripted, weights=config.opponent_weights, max_snapshots=config.max_snapshots)
        for path in state.get("snapshots", []):
            if Path(path).is_file():
                pool.add_snapshot(snapshot_agent(Path(path), config.seed))
    # A resumed run continues with a fresh deal stream (a new seed per resume).
    vector_env = TimedVectorEnv(
        make_vector_env(config, config.n_envs, seed=config.seed + 1000 * len(state.get("resumes", [])))
    )
    # The learner seat rotates per finished game, so it plays every seat (both Madiao roles).
    if league is not None:
        # One member per game, drawn by PFSP, plays every opponent seat of it.
        venv = LearnerVecEnv(
            vector_env,
            pool.slots,
            learner_seat="rotate",
            seed=config.seed,
            opponent_draw="per_game",
            opponent_sampler=pool.sample,
        )
        pool.attach(venv)
    else:
        venv = LearnerVecEnv(vector_env, pool.slots, learner_seat="rotate", seed=config.seed)
    if config.game == "mao" and config.mao_hand_card_reward:
        from mao_env import cards, core

        hand = slice(core.OFF_HAND, core.OFF_HAND + cards.N_CARD_TYPES)
        venv = HandSizeReward(venv, config.mao_hand_card_reward, hand)

    # ---- model (fresh or from the checkpoint)
    if resume is not None:
        checkpoint = run_dir / "checkpoint.zip"
        try:
            model = MaskablePPO.load(str(checkpoint), env=venv, device="cpu")
        except Exception as error:  # a damaged zip fails in zipfile, torch or pickle, each its own way
            venv.close()
            raise ValueError(
                f"{checkpoint} is damaged or does not fit this run ({type(error).__name__}: {error})"
            ) from None
        print(
            f"resumed {run_dir} at step {model.num_timesteps} (budget {config.total_timesteps} learner steps)"
        )
    else:
        model = MaskablePPO(
            policy_class(config),
            venv,
            learning_rate=learning_rate_schedule(config),
            n_steps=config.n_steps,
            batch_size=config.batch_size,
            n_epochs=config.n_epochs,
            gamma=config.gamma,
            gae_lambda=config.gae_lambda,
            clip_range=config.clip_range,
            ent_coef=config.ent_coef,
            vf_coef=config.vf_coef,
            policy_kwargs=policy_kwargs(config),
            seed=config.seed,
            device="cpu",
            verbose=0,
        )
        # The folder is made only now that the run can start: a bad option leaves no empty folder.
        run_dir = make_run_dir(config)
        checkpoint = run_dir / "checkpoint.zip"
    atomic_write_json(run_dir / "config.json", saved_config)

    def save_checkpoint(model) -> None:
        atomic_save_model(model, checkpoint)
        if league is not None:
            # Before state.json, which a resume trusts: the league is never older than it says.
            atomic_write_json(run_dir / LEAGUE_FILE, league.to_dict())
        state["num_timesteps"] = int(model.num_timesteps)
        atomic_write_json(run_dir / "state.json", state)

    if resume is None:
        # A checkpoint from the first moment: a run stopped at any point can be resumed.
        save_checkpoint(model)
    model.set_logger(make_logger(run_dir, resume_step=model.num_timesteps if resume is not None else None))
    callback = None
    try:
        if config.imitate != "none" and "imitation" not in state and model.num_timesteps == 0:
            state["imitation"] = warm_start(model, venv, config, say)
            for key, value in state["imitation"].items():
                model.logger.record(f"imitation/{key}", value)
            model.logger.dump(0)
            save_checkpoint(model)
        # Opponent copies of the policy sample their moves from generators seeded by the run's
        # seed, so that a run is reproducible when they play.
        pool.set_current(
            LearnedPolicyAgent(model=model, deterministic=False, name="current", seed=config.seed)
        )
        state.setdefault("snapshots", [])
        state.setdefault("eval", [])
        state.setdefault("resumes", [])
        if resume is not None:
            state["resumes"].append(int(model.num_timesteps))

        # ---- learn
        start = model.num_timesteps
        callback = TrainingCallback(
            config,
            run_dir,
            state,
            vector_env,
            pool,
            save_checkpoint=save_checkpoint,
            evaluate=evaluate_against_baselines,
            snapshot_agent=snapshot_agent,
            say=say,
        )
        if config.total_timesteps > start:
            end = steps_at_end(config, start)
            if end != config.total_timesteps:
                say(
                    f"training to step {end}: the budget of {config.total_timesteps} learner steps "
                    f"rounded up to whole rollouts of {rollout_size(config)} (n_envs * n_steps)"
                )
            model.learn(config.total_timesteps - start, callback=callback, reset_num_timesteps=False)
            speed = callback.speed()
            say(
                f"trained {model.num_timesteps - start} learner steps in {speed['seconds']:.1f} s "
                f"({speed['sps']:,.0f} learner steps/s, env + learner + opponents): game env "
                f"{100 * speed['env_time_fraction']:.0f}%, opponent policies "
                f"{100 * speed['opponent_time_fraction']:.0f}%, PPO updates "
                f"{100 * speed['update_time_fraction']:.0f}% of the time"
            )
            state["final_speed"] = speed
        save_checkpoint(model)
        atomic_save_model(model, run_dir / "final_model.zip")
        atomic_write_json(run_dir / "eval.json", state["eval"])
        atomic_write_json(run_dir / "state.json", state)
    except KeyboardInterrupt:
        if callback is not None:
            callback.close_bar()
            if callback.collecting:
                # The steps of an unfinished rollout were never learned from: not counted.
                model.num_timesteps = callback.learned_steps
            save_checkpoint(model)
        # (Interrupted in the warm start, the step-0 checkpoint of the fresh policy stands.)
        print(
            f"interrupted at step {model.num_timesteps}; resume with: "
            f"madiao-mao train --resume {shlex.quote(str(run_dir))}",
            file=sys.stderr,
        )
        raise
    finally:
        venv.close()
        model.logger.close()
    return run_dir


def new_league(config: TrainConfig):
    """A fresh league for ``config``: the main agent and the ``league_anchors``."""
    from training.league import League

    league = League(
        weighting=config.pfsp_weighting,
        power=config.pfsp_power,
        floor=config.pfsp_floor,
        max_snapshots=config.max_snapshots,
    )
    for name in config.league_anchors:
        league.add_anchor(name)
    return league


def load_league(run_dir: Path):
    """The league saved with a run's checkpoint (``league.json``) with its snapshot files; a
    missing file is a FileNotFoundError, damaged data a ValueError, each naming the file."""
    from training.league import League

    path = run_dir / LEAGUE_FILE
    if not path.is_file():
        raise FileNotFoundError(f"cannot resume the league run {run_dir}: {LEAGUE_FILE} is missing")
    try:
        league = League.from_dict(_read_run_json(path))
    except ValueError as error:
        message = str(error)
        raise ValueError(message if str(path) in message else f"{path} is damaged: {message}") from None
    for name in league.names("snapshot"):
        snapshot = run_dir / league.members[name].path
        if not snapshot.is_file():
            raise FileNotFoundError(f"{path}: the file of snapshot {name!r} is missing ({snapshot})")
    return league


def league_report(run_dir: Path) -> str:
    """The report's league section: the payoff table saved with the run, and its history from
    ``progress.csv`` plotted as ``league_payoffs.png`` and ``league_ratings.png`` (empty text
    for a run without a league)."""
    from training.league import League

    path = Path(run_dir) / LEAGUE_FILE
    if not path.is_file():
        return ""
    league = League.from_dict(_read_run_json(path))
    plots = plot_league_history(Path(run_dir))
    return (
        "## League\n\nThe main agent's results in its training games against each member (one "
        "member plays all the other seats of a game), the member's PFSP draw probability at the end "
        "and its openskill rating.\n\n"
        + league.markdown()
        + (f"\nOver training: {', '.join(f'`{name}`' for name in plots)}.\n" if plots else "")
    )


def plot_league_history(run_dir: Path) -> list[str]:
    """Plot the ``league/payoff/`` and ``league/rating/`` columns of a run's ``progress.csv``
    against the learner step; returns the names of the PNG files written."""
    import csv

    from training.logging_utils import STEP_COLUMN
    from training.stats import plot_curves

    progress = run_dir / "progress.csv"
    if not progress.is_file():
        return []
    with progress.open(newline="") as file:
        rows = list(csv.DictReader(file))
    written = []
    for kind, ylabel, name in (
        ("payoff", "learner's mean return vs member", "league_payoffs.png"),
        ("rating", "member's openskill mu", "league_ratings.png"),
    ):
        prefix = f"league/{kind}/"
        curves = {}
        for column in rows[0] if rows else {}:
            if not column.startswith(prefix):
                continue
            points = [
                (float(row[STEP_COLUMN]), float(row[column]))
                for row in rows
                if row[column] and row[STEP_COLUMN]
            ]
            if points:
                curves[column[len(prefix) :]] = ([x for x, _ in points], [y for _, y in points])
        if curves:
            plot_curves(
                curves, run_dir / name, xlabel="learner steps", ylabel=ylabel, title=f"League {kind}s"
            )
            written.append(name)
    return written


def snapshot_agent(path: Path, seed: int):
    """A frozen snapshot of the learner as a sampling opponent, seeded by the run's seed and the
    snapshot's step (``snapshot_000250112.zip``)."""
    from agents.learned import LearnedPolicyAgent

    steps = int(path.stem.rsplit("_", 1)[-1])
    return LearnedPolicyAgent(path, deterministic=False, name=path.stem, seed=seed * 1_000_003 + steps)


def warm_start(model, venv, config: TrainConfig, say=print) -> dict[str, float]:
    """Fit a fresh ``model``'s policy and value head to ``config.imitate`` playing the learner's
    seat of ``venv`` (``training.imitation``); returns what was measured (for the log)."""
    from agents.registry import make_agent
    from training.imitation import collect_teacher_decisions, fit_policy

    teacher = make_agent(config.imitate, config.game, seed=config.seed + 500)
    say(f"warm start: {config.imitate} plays {config.imitation_decisions:,} learner decisions")
    data = collect_teacher_decisions(venv, teacher, config.imitation_decisions, config.gamma)
    started = time.perf_counter()
    history = fit_policy(
        model.policy,
        data,
        epochs=config.imitation_epochs,
        batch_size=config.batch_size,
        learning_rate=config.learning_rate,
        vf_coef=config.vf_coef,
        seed=config.seed,
    )
    fit_seconds = time.perf_counter() - started
    last = history[-1]
    teacher_return = float(np.mean(data.episode_returns)) if data.episode_returns.size else float("nan")
    say(
        f"warm start: {data.actions.size:,} decisions in {data.seconds:.0f} s, fitted in "
        f"{fit_seconds:.0f} s; the policy picks the teacher's move in {100 * last['accuracy']:.1f}% "
        f"of them (teacher's mean game return {teacher_return:+.3f})"
    )
    return {
        "decisions": int(data.actions.size),
        "collect_seconds": data.seconds,
        "fit_seconds": fit_seconds,
        "teacher_return": teacher_return,
        **last,
    }


def export_policy(model_path: str | Path, destination: str | Path) -> Path:
    """Save an inference-only copy of a trained model (the optimizer's moment estimates, two
    thirds of a checkpoint, are dropped; it still loads with ``MaskablePPO.load``). This is how
    ``agents/pretrained/madiao_selfplay.zip`` is made from a run's ``final_model.zip``."""
    import torch
    from sb3_contrib import MaskablePPO

    model = MaskablePPO.load(str(model_path), device="cpu")
    # A fresh optimizer holds no moment estimates (its rate is the schedule's starting rate).
    model.policy.optimizer = torch.optim.Adam(model.policy.parameters(), lr=model.lr_schedule(1.0))
    destination = Path(destination)
    destination.parent.mkdir(parents=True, exist_ok=True)
    atomic_save_model(model, destination)
    return destination


def final_report(run_dir: Path, *, n_deals: int | None = None, verbose: bool = True) -> str:
    """The end-of-training evaluation: a tournament of the final model and the baselines,
    learning curves and ratings as PNGs, and a markdown report written to ``run_dir``."""
    from agents.learned import LearnedPolicyAgent
    from agents.registry import make_agent
    from cardgame_core.files import atomic_write_text
    from training.stats import plot_curves

    config = TrainConfig.from_json(json.loads((run_dir / "config.json").read_text()))
    n_deals = n_deals or config.final_eval_deals
    learner = LearnedPolicyAgent(run_dir / "final_model.zip", name="learned")
    env_kwargs = {"obs_type": config.obs_type, **config.env_kwargs}
    sections = [f"# Training report: {run_dir.name}\n"]
    state = json.loads((run_dir / "state.json").read_text())
    if "final_speed" in state:
        speed = state["final_speed"]
        sections.append(
            f"Throughput: {speed['sps']:,.0f} learner steps/s; "
            f"game env {100 * speed['env_time_fraction']:.0f}%, "
            f"opponent policies {100 * speed['opponent_time_fraction']:.0f}% and PPO updates "
            f"{100 * speed.get('update_time_fraction', float('nan')):.0f}% of training time "
            f"({speed.get('seconds', float('nan')):.0f} s).\n"
        )
    league_section = league_report(run_dir)
    if league_section:
        sections.append(league_section)
    if config.game == "madiao":
        from training.evaluation import run_tournament, write_report

        agents = {
            "learned": learner,
            **{n: make_agent(n, "madiao", seed=config.seed) for n in config.eval_opponents},
        }
        pairings = [(a, b) for a in agents for b in agents if a != b and "learned" in (a, b)]
        report = run_tournament(
            agents, n_deals=n_deals, seed=config.seed + 99, env_kwargs=env_kwargs, pairings=pairings
        )
        write_report(report, run_dir, "final_evaluation")
        sections.append(report.markdown())
        history = state.get("eval", [])
        if history:
            curves, bands = {}, {}
            for name in config.eval_opponents:
                xs = [h["timesteps"] for h in history if name in h["results"]]
                ys = [h["results"][name]["all"]["mean"] for h in history if name in h["results"]]
                lows = [h["results"][name]["all"]["low"] for h in history if name in h["results"]]
                highs = [h["results"][name]["all"]["high"] for h in history if name in h["results"]]
                curves[f"vs {name}"] = (xs, ys)
                bands[f"vs {name}"] = (lows, highs)
            plot_curves(
                curves,
                run_dir / "learning_curves.png",
                xlabel="learner steps",
                ylabel="stakes/hand (1 seat vs 3)",
                title="Learned policy vs baselines (duplicate)",
                bands=bands,
            )
            sections.append(
                "Learning curves: `learning_curves.png`; ratings: `final_evaluation_ratings.png`.\n"
            )
    else:
        from training.mao_evaluation import mao_report

        # Mao: n_deals = own turns of each agent per held-out rule, in games of 100 turns.
        sections.append(
            mao_report(
                {"learned": learner},
                config,
                run_dir,
                turns=min(n_deals, 100),
                replicates=max(1, round(n_deals / 100)),
            )
        )
    text = "\n".join(sections)
    atomic_write_text(run_dir / "report.md", text)
    if verbose:
        print(text)
    return text


def main(argv: list[str] | None = None) -> None:
    """``python -m training.train`` = ``madiao-mao train`` with the same flags."""
    from training.cli import main as cli_main

    cli_main(["train", *(argv or [])])


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
