"""What the trainer does differently per game, as one table: a ``GameSpec`` per game.

``madiao_mao.training.sb3.train`` and ``madiao_mao.training.sb3.callback`` never branch on the game's name: they look
its spec up (``game_spec(config.game)``) and call what it holds. A spec gives

- ``defaults``: the ``TrainConfig`` fields a game sets differently (a field left at None takes
  its game's value; ``GAME_DEFAULTS`` maps each game to these),
- ``obs_type``: the observation variant a run uses unless told otherwise,
- ``features``: the policy features (``POLICY_FEATURES``) the game's observations support,
- ``make_vector_env``: the batched env of the training games, built from the config,
- ``shape_reward``: what wraps the learner's env to shape its reward (Mao's hand-size reward),
- ``roles`` and ``learner_role``: the roles the learner's returns are logged by
  (``charts/return_<role>``) and how a terminal observation tells the learner's role (without
  it, every game counts for the first role),
- ``evaluate`` and ``describe_result``: the periodic evaluation against the baselines (a point of
  the learning curve) and its one-line summary,
- ``report``: the game's sections of the final report.

Why each default is what it is: one line beside it; the measurements behind them, with the
commands that made them, are in ``docs/results.md``.

Adding a game is adding one spec to ``GAME_SPECS`` (and its agents to ``madiao_mao.agents.registry``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # typing only: madiao_mao.training.config imports this module to fill in its defaults
    from madiao_mao.training.config import TrainConfig

#: The opponent-pool kinds' weights of a run that trains against scripted players only.
_SCRIPTED_ONLY = {"scripted": 1.0, "snapshot": 0.0, "current": 0.0}


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


def _flat_policy() -> tuple[Any, dict[str, Any]]:
    return "MlpPolicy", {}


def _madiao_cards_policy() -> tuple[Any, dict[str, Any]]:
    from madiao_mao.agents.madiao.features import MadiaoCardFeatures, summary_layout

    return "MlpPolicy", {
        "features_extractor_class": MadiaoCardFeatures,
        "features_extractor_kwargs": summary_layout(),
    }


def _mao_rules_policy() -> tuple[Any, dict[str, Any]]:
    # The rule planes also reach the action layer directly, hence a policy class of its own.
    from madiao_mao.agents.mao.features import MaoRulePolicy

    return MaoRulePolicy, {}


def _mao_belief_policy() -> tuple[Any, dict[str, Any]]:
    from madiao_mao.agents.mao.features import MaoBeliefPolicy

    return MaoBeliefPolicy, {}


def _mao_belief_learner_env(venv, vector_env):
    # The learner's seat keeps its posterior over the secret rules; the policy reads it.
    from madiao_mao.agents.mao.players import posterior_options
    from madiao_mao.training.sb3.wrappers import BeliefObservations

    return BeliefObservations(venv, posterior_options(vector_env.options))


POLICY_FEATURES: Mapping[str, PolicyFeatures] = MappingProxyType(
    {
        "flat": PolicyFeatures("flat", (), _flat_policy),
        "cards": PolicyFeatures("cards", ("summary",), _madiao_cards_policy),
        "rules": PolicyFeatures("rules", (), _mao_rules_policy),
        # Mao: attention over the event window beside the rule planes (agents/mao/memory.py);
        # imported when used, like the others (torch is slow to import).
        "memory": PolicyFeatures(
            "memory",
            ("history",),
            lambda: __import__("madiao_mao.agents.mao.memory", fromlist=["_"]).policy_spec(),
        ),
        # Mao: the rule planes and the seat's posterior over the secret rules, a memory of the
        # whole game (agents/mao/belief_inputs.py), computed beside the network.
        "belief": PolicyFeatures("belief", ("history",), _mao_belief_policy, _mao_belief_learner_env),
    }
)


@dataclass(frozen=True)
class GameSpec:
    """The trainer's view of one game (see the module docstring for each field)."""

    name: str
    defaults: Mapping[str, Any]
    obs_type: str
    features: tuple[str, ...]
    make_vector_env: Callable[[TrainConfig, int, int | None], Any]
    shape_reward: Callable[[Any, TrainConfig], Any]
    roles: tuple[str, ...]
    learner_role: Callable[[np.ndarray], str] | None
    evaluate: Callable[[Any, TrainConfig, int, int], dict[str, dict]]
    describe_result: Callable[[str, dict], str]
    report: Callable[[Any, TrainConfig, Path, int, dict[str, Any]], list[str]]


def _env_kwargs(config: TrainConfig) -> dict[str, Any]:
    return {"obs_type": config.obs_type, **config.env_kwargs}


# ---- Madiao


def _madiao_vector_env(config: TrainConfig, n_envs: int, seed: int | None):
    from madiao_env.vector import MadiaoVectorEnv

    return MadiaoVectorEnv(n_envs, seed=seed, **_env_kwargs(config))


def _madiao_learner_role(observation: np.ndarray) -> str:
    from madiao_env.layout import SUMMARY_SLICES

    # The banker's relative seat is one-hot; relative seat 0 is the learner itself.
    return "banker" if observation[SUMMARY_SLICES["OBS_BANKER"].start] > 0.5 else "player"


def _madiao_evaluate(model, config: TrainConfig, n_deals: int, seed: int) -> dict[str, dict]:
    """Duplicate results of the greedy learned policy against each baseline: stakes/hand overall,
    as banker and as player, with 95% intervals."""
    from madiao_mao.agents.learned import LearnedPolicyAgent
    from madiao_mao.agents.registry import make_agent
    from madiao_mao.training.madiao.evaluation import duplicate_match, make_deals

    learner = LearnedPolicyAgent(model=model, name="learned")
    deals = make_deals(n_deals, seed)
    results: dict[str, dict] = {}
    for name in config.eval_opponents:
        pair = duplicate_match(
            learner,
            make_agent(name, "madiao", seed=seed),
            deals,
            env_kwargs=_env_kwargs(config),
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
    return results


def _madiao_describe_result(name: str, result: dict) -> str:
    return f"vs {name} {result['all']['mean']:+.3f}"


def _madiao_report(learner, config: TrainConfig, run_dir: Path, n_deals: int, state: dict) -> list[str]:
    """A duplicate tournament of the learned policy and the baselines (its ratings plotted), and
    the learning curves of the periodic evaluations."""
    from madiao_mao.agents.registry import make_agent
    from madiao_mao.training.madiao.evaluation import run_tournament, write_report
    from madiao_mao.training.stats import plot_curves

    agents = {
        "learned": learner,
        **{n: make_agent(n, "madiao", seed=config.seed) for n in config.eval_opponents},
    }
    pairings = [(a, b) for a in agents for b in agents if a != b and "learned" in (a, b)]
    report = run_tournament(
        agents, n_deals=n_deals, seed=config.seed + 99, env_kwargs=_env_kwargs(config), pairings=pairings
    )
    write_report(report, run_dir, "final_evaluation")
    sections = [report.markdown()]
    history = state.get("eval", [])
    if history:
        curves, bands = {}, {}
        for name in config.eval_opponents:
            points = [h["results"][name]["all"] for h in history if name in h["results"]]
            xs = [h["timesteps"] for h in history if name in h["results"]]
            curves[f"vs {name}"] = (xs, [p["mean"] for p in points])
            bands[f"vs {name}"] = ([p["low"] for p in points], [p["high"] for p in points])
        plot_curves(
            curves,
            run_dir / "learning_curves.png",
            xlabel="learner steps",
            ylabel="stakes/hand (1 seat vs 3)",
            title="Learned policy vs baselines (duplicate)",
            bands=bands,
        )
        sections.append("Learning curves: `learning_curves.png`; ratings: `final_evaluation_ratings.png`.\n")
    return sections


def _unshaped(venv, config: TrainConfig):
    return venv


# ---- Mao


def _mao_vector_env(config: TrainConfig, n_envs: int, seed: int | None):
    from mao_env import rules as rule_library
    from mao_env.vector import MaoVectorEnv

    # The secret rule a training episode starts with is drawn from this pool (``mao_rule_pool``).
    pools = {"train": rule_library.TRAINING_RULES, "all": tuple(range(rule_library.N_RULES)), "none": ()}
    kwargs = _env_kwargs(config)
    kwargs.setdefault("penalty_card_reward", config.mao_penalty_card_reward)
    return MaoVectorEnv(n_envs, seed=seed, rule_pool=pools[config.mao_rule_pool], **kwargs)


def _mao_hand_size_reward(venv, config: TrainConfig):
    if not config.mao_hand_card_reward:
        return venv
    from madiao_mao.training.sb3.wrappers import HandSizeReward

    from mao_env import cards, core

    hand = slice(core.OFF_HAND, core.OFF_HAND + cards.N_CARD_TYPES)
    return HandSizeReward(venv, config.mao_hand_card_reward, hand)


def _mao_evaluate(model, config: TrainConfig, n_deals: int, seed: int) -> dict[str, dict]:
    """The Mao metrics of the learned policy at a table of each baseline, facing the rules held
    out of its training one at a time (``n_deals`` own turns per rule)."""
    from madiao_mao.agents.learned import policy_agent
    from madiao_mao.training.mao.evaluation import held_out_experiment

    learner = policy_agent(model=model, name="learned")
    results: dict[str, dict] = {}
    for name in config.eval_opponents:
        report = held_out_experiment(
            {"learned": learner}, turns=n_deals, seed=seed, opponent=name, env_kwargs=_env_kwargs(config)
        )
        results[name] = report.stats["learned"].summary()
    return results


def _mao_describe_result(name: str, result: dict) -> str:
    return f"at a {name} table {result.get('penalties_per_turn', float('nan')):.3f} pen/turn"


def _mao_report(learner, config: TrainConfig, run_dir: Path, n_deals: int, state: dict) -> list[str]:
    """The learned policy (beside the base-rules and Bayesian players) on the held-out rules."""
    from madiao_mao.training.mao.evaluation import mao_report

    # n_deals = own turns of each agent per held-out rule, in games of 100 turns.
    turns, replicates = min(n_deals, 100), max(1, round(n_deals / 100))
    return [mao_report({"learned": learner}, config, run_dir, turns=turns, replicates=replicates)]


# ---- the table

GAME_SPECS: Mapping[str, GameSpec] = MappingProxyType(
    {
        "madiao": GameSpec(
            name="madiao",
            defaults=MappingProxyType(
                {
                    # Beats the heuristic player (docs/results.md, Madiao defaults) within the
                    # README main job's 15 minutes on 2 cores; longer runs keep improving.
                    "total_timesteps": 3_250_000,
                    # The strongest scripted player, the one to beat, fills 3 of 4 entries.
                    "scripted_opponents": ("heuristic", "heuristic", "heuristic", "greedy"),
                    # Pool mode: self-play shares did worse than scripted opponents only
                    # (docs/results.md).
                    "opponent_weights": _SCRIPTED_ONLY,
                    # League self-play (AlphaStar/PFSP): as strong against the heuristic as the
                    # heuristic-only pool, and it also plays its own snapshots (docs/results.md).
                    "opponents": "league",
                    # Every scripted player cheap enough for the training table.
                    "league_anchors": ("random", "greedy", "heuristic"),
                    # Minibatch 1024 would use both cores better but loses strength per learner
                    # step, whatever the learning rate (docs/results.md, "Minibatch size and
                    # strength per learner step").
                    "batch_size": 256,
                    "learning_rate": 3e-4,
                    # Every scripted player, weakest to strongest: the curve shows the gap to each.
                    "eval_opponents": ("random", "greedy", "heuristic"),
                    # The unseen/boss card planes helped (docs/results.md).
                    "features": "cards",
                    # A hand is short and only its settlement pays: no discount.
                    "gamma": 1.0,
                    # Keeps play exploratory while the opponents' mix changes.
                    "ent_coef": 0.01,
                    # PPO from a random policy learns Madiao without a teacher.
                    "imitate": "none",
                    # Madiao has no use for Mao's hand-size reward.
                    "mao_hand_card_reward": 0.0,
                    # Duplicate deals per pairing in the final report: 4,000 hands, played in
                    # batches (seconds), so the interval against each baseline is narrow.
                    "final_eval_deals": 1000,
                }
            ),
            obs_type="summary",
            features=("flat", "cards"),
            make_vector_env=_madiao_vector_env,
            shape_reward=_unshaped,
            roles=("banker", "player"),
            learner_role=_madiao_learner_role,
            evaluate=_madiao_evaluate,
            describe_result=_madiao_describe_result,
            report=_madiao_report,
        ),
        "mao": GameSpec(
            name="mao",
            defaults=MappingProxyType(
                {
                    # The warm start does most of it: 1M PPO steps after it did not move the
                    # held-out figures of a belief policy (docs/results.md, Mao: a policy that
                    # reads its posterior); a short PPO run keeps the self-play fine-tuning.
                    "total_timesteps": 250_000,
                    # The base player; bayes can sit too (it takes game-seat row keys) but halves the
                    # table's speed when it fills every seat (docs/results.md, Mao with memory).
                    "scripted_opponents": ("base",),
                    # Mostly the base player, and a share of the policy's own snapshots and live self.
                    "opponent_weights": {"scripted": 0.6, "snapshot": 0.2, "current": 0.2},
                    # The league (base and bayes anchors) was no better on the held-out rules:
                    # the same penalties, fewer rounds won (docs/results.md, Mao league or pool).
                    "opponents": "pool",
                    # The update is a third of a Mao run; the opponents' play is most of the rest.
                    "batch_size": 256,
                    "learning_rate": 3e-4,
                    # An episode is long and a penalty follows the turn that earned it.
                    "gamma": 0.99,
                    # 115 actions and free speech make random talk costly.
                    "ent_coef": 0.005,
                    # The held-out rules are played at a table of the training opponent.
                    "eval_opponents": ("base",),
                    # The seat's posterior over the secret rules beside the rule planes, weighed per
                    # action by shared weights: it plays held-out rules like the Bayesian player
                    # (docs/results.md, Mao: a policy that reads its posterior).
                    "features": "belief",
                    # PPO from scratch learns to draw instead of playing (docs/results.md).
                    "imitate": "bayes",
                    # Without it drawing is a free way to avoid calls (docs/results.md).
                    "mao_hand_card_reward": 0.2,
                    # Own turns per held-out rule: 10 games of 100 turns per rule.
                    "final_eval_deals": 1000,
                }
            ),
            # The secret rules can only be inferred from a history of public events.
            obs_type="history",
            features=("flat", "rules", "memory", "belief"),
            make_vector_env=_mao_vector_env,
            shape_reward=_mao_hand_size_reward,
            roles=("player",),
            learner_role=None,
            evaluate=_mao_evaluate,
            describe_result=_mao_describe_result,
            report=_mao_report,
        ),
    }
)

#: The defaults that differ by game (a ``TrainConfig`` field left at None takes its game's value).
GAME_DEFAULTS: Mapping[str, Mapping[str, Any]] = MappingProxyType(
    {name: spec.defaults for name, spec in GAME_SPECS.items()}
)


def game_spec(game: str) -> GameSpec:
    """The spec of ``game``; an unknown name is a ValueError listing the games."""
    try:
        return GAME_SPECS[game]
    except (KeyError, TypeError):
        raise ValueError(f"game must be one of {', '.join(GAME_SPECS)}, got {game!r}") from None


def features_error(features: str, game: str, obs_type: str) -> str | None:
    """Why ``features`` cannot be used for ``game`` with ``obs_type`` (None if it can)."""
    spec = game_spec(game)
    needs = POLICY_FEATURES[features].obs_types
    if features in spec.features and (not needs or obs_type in needs):
        return None
    owner = next(name for name, other in GAME_SPECS.items() if features in other.features)
    where = f' with obs_type="{needs[0]}"' if needs else ""
    return f'features="{features}" needs game="{owner}"{where}'
