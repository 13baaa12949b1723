"""Mao's spec for the trainer (``madiao_mao.training.game_spec.GameSpec``): its defaults, with one
line on why each is what it is (the measurements behind them, with the commands that made them,
are in ``docs/results.md``), its batched env, its policy features, its evaluation on the held-out rules
and its sections of the final report."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Annotated, Any

import tyro

from madiao_mao.agents.learned import policy_agent
from madiao_mao.training.config import ConfigError, check_finite_number
from madiao_mao.training.game_spec import (
    GameSpec,
    PolicyFeatures,
    env_kwargs,
    module_when_called,
    table_envs_when_called,
    vector_env_kwargs,
)
from madiao_mao.training.mao.exploit import EXPLOIT
from mao_env.layout import OBS_TYPES

if TYPE_CHECKING:  # typing only: the config imports the games' specs to fill in its defaults
    from madiao_mao.training.config import TrainConfig


def _rules_policy() -> tuple[Any, dict[str, Any]]:
    # The rule planes also reach the action layer directly, hence a policy class of its own.
    from madiao_mao.agents.mao.features import MaoRulePolicy

    return MaoRulePolicy, {}


def _belief_policy() -> tuple[Any, dict[str, Any]]:
    # Imported here: keeps torch and stable-baselines3 off this module's import path.
    from madiao_mao.agents.mao.features import MaoBeliefPolicy

    return MaoBeliefPolicy, {}


def _privileged_belief_policy() -> type:
    # Imported here: keeps torch and stable-baselines3 off this module's import path.
    from madiao_mao.training.mao.privileged import PrivilegedBeliefPolicy

    return PrivilegedBeliefPolicy


def _belief_learner_env(venv, vector_env):
    # The learner's seat keeps its posterior over the secret rules; the policy reads it.
    from madiao_mao.agents.mao.players import posterior_options
    from madiao_mao.training.mao.wrappers import BeliefObservations

    return BeliefObservations(venv, posterior_options(vector_env.options))


#: Mao's own policy features (besides the observation itself).
POLICY_FEATURES = MappingProxyType(
    {
        "rules": PolicyFeatures("rules", (), _rules_policy),
        # Attention over the event window beside the rule planes (agents/mao/memory.py); imported
        # when used, like the others (torch is slow to import).
        "memory": PolicyFeatures(
            "memory",
            ("history",),
            lambda: __import__("madiao_mao.agents.mao.memory", fromlist=["_"]).policy_spec(),
        ),
        # The rule planes and the seat's posterior over the secret rules, a memory of the whole
        # game (agents/mao/belief_inputs.py), computed beside the network.
        "belief": PolicyFeatures(
            "belief", ("history",), _belief_policy, _belief_learner_env, _privileged_belief_policy
        ),
    }
)


#: The secret-rule pools a training episode's first rule is drawn from (``MaoTrainSettings.rule_pool``).
RULE_POOLS = ("train", "all", "none")


@dataclass(frozen=True)
class MaoTrainSettings:
    """Mao's own training settings (``TrainConfig.game_settings`` of a Mao run; on the command line
    ``--mao.FIELD``)."""

    penalty_card_reward: Annotated[float, tyro.conf.arg(aliases=("--mao-penalty-card-reward",))] = -1.0
    """The learner's reward per penalty card in training games (the env's default is -0.1 next
    to +1 for a round won; a heavier weight teaches a policy to avoid calls, which is what the
    held-out evaluation measures)."""
    hand_card_reward: Annotated[float, tyro.conf.arg(aliases=("--mao-hand-card-reward",))] = 0.2
    """The learner's reward per card its hand shrinks by (minus per card it grows by) in training
    games (``madiao_mao.training.mao.wrappers.HandSizeReward``): without it, drawing instead of
    playing is a free way to avoid calls (docs/results.md); 0: none."""
    rule_pool: Annotated[
        str, tyro.conf.arg(aliases=("--mao-rule-pool",), metavar="{" + ",".join(RULE_POOLS) + "}")
    ] = "train"
    """The secret rule every training episode starts with, drawn per episode: "train" (any
    library rule but ``mao_env.rules.HELD_OUT_RULES``, which the final report then uses to test
    the policy on rules it never met), "all" (any library rule) or "none" (no secret rule at the
    start; rules then come only from round winners)."""

    def check(self) -> None:
        for name in ("penalty_card_reward", "hand_card_reward"):
            check_finite_number(name, getattr(self, name))
        if self.rule_pool not in RULE_POOLS:
            raise ConfigError(
                "rule_pool", f"rule_pool must be one of {', '.join(RULE_POOLS)}, got {self.rule_pool!r}"
            )


def _vector_env(config: TrainConfig, n_envs: int, seed: int | None):
    # Imported here: keeps Numba and PettingZoo off this module's import path.
    from mao_env import rules as rule_library
    from mao_env.vector import MaoVectorEnv

    settings: MaoTrainSettings = config.game_settings
    pools = {"train": rule_library.TRAINING_RULES, "all": tuple(range(rule_library.N_RULES)), "none": ()}
    kwargs = vector_env_kwargs(config)
    kwargs.setdefault("penalty_card_reward", settings.penalty_card_reward)
    return MaoVectorEnv(n_envs, seed=seed, rule_pool=pools[settings.rule_pool], **kwargs)


def _hand_size_reward(venv, config: TrainConfig):
    reward = config.game_settings.hand_card_reward
    if not reward:
        return venv
    # Imported here: keeps Gymnasium off this module's import path.
    from madiao_mao.training.mao.wrappers import HandSizeReward
    from mao_env import cards, core

    hand = slice(core.OFF_HAND, core.OFF_HAND + cards.N_CARD_TYPES)
    return HandSizeReward(venv, reward, hand)


def _evaluate(model, config: TrainConfig, n_deals: int, seed: int) -> dict[str, dict]:
    """The Mao metrics of the learned policy at a table of each baseline, facing the rules held
    out of its training one at a time (``n_deals`` own turns per rule)."""
    # Imported here: madiao_mao.training.mao.evaluation imports this module (a cycle at the top).
    from madiao_mao.training.mao.evaluation import held_out_experiment

    learner = policy_agent(model=model, name="learned")
    results: dict[str, dict] = {}
    for name in config.eval_opponents:
        report = held_out_experiment(
            {"learned": learner}, turns=n_deals, seed=seed, opponent=name, env_kwargs=env_kwargs(config)
        )
        results[name] = report.stats["learned"].summary()
    return results


def _describe_result(name: str, result: dict) -> str:
    return f"at a {name} table {result.get('penalties_per_turn', float('nan')):.3f} pen/turn"


def _report(learner, config: TrainConfig, run_dir: Path, n_deals: int, state: dict) -> list[str]:
    """The learned policy (beside the base-rules and Bayesian players) on the held-out rules."""
    # Imported here: madiao_mao.training.mao.evaluation imports this module (a cycle at the top).
    from madiao_mao.training.mao.evaluation import mao_report

    # n_deals = own turns of each agent per held-out rule, in games of 100 turns.
    turns, replicates = min(n_deals, 100), max(1, round(n_deals / 100))
    return [mao_report({"learned": learner}, config, run_dir, turns=turns, replicates=replicates)]


GAME_SPEC = GameSpec(
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
            # Mostly the base player, and the live policy. The snapshot slots hold the live policy
            # until the first snapshot, which at the default budget and snapshot_every comes at
            # the last step: snapshots every 50,000 steps made no difference on the held-out
            # rules (docs/results.md, Mao: the opponent pool's snapshots); longer runs get them.
            "opponent_weights": {"scripted": 0.6, "snapshot": 0.2, "current": 0.2},
            # The league (base and bayes anchors) was no better on the held-out rules:
            # the same penalties, fewer rounds won (docs/results.md, Mao league or pool).
            "opponents": "pool",
            # 256 games of 32 learner decisions per rollout, the shape every Mao figure was
            # measured at (Madiao's 1,024 x 8 was not tried on Mao's strength).
            "n_envs": 256,
            "n_steps": 32,
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
            # Own turns per held-out rule: 10 games of 100 turns per rule.
            "final_eval_deals": 1000,
        }
    ),
    # The secret rules can only be inferred from a history of public events.
    obs_type="history",
    obs_types=OBS_TYPES,
    policy_features=POLICY_FEATURES,
    make_vector_env=_vector_env,
    shape_reward=_hand_size_reward,
    roles=("player",),
    learner_role=None,
    evaluate=_evaluate,
    describe_result=_describe_result,
    report=_report,
    table_envs=table_envs_when_called("mao_env.env:raw_env", "mao_env.vector:MaoVectorEnv"),
    exploit=EXPLOIT,
    commands=module_when_called("madiao_mao.training.mao.commands"),
    settings=MaoTrainSettings,
    old_config_names=MappingProxyType(
        {
            "mao_penalty_card_reward": "penalty_card_reward",
            "mao_hand_card_reward": "hand_card_reward",
            "mao_rule_pool": "rule_pool",
        }
    ),
    scorecard=module_when_called("madiao_mao.training.mao.scorecard"),
)
