"""Madiao's spec for the trainer (``madiao_mao.training.game_spec.GameSpec``): its defaults, with one
line on why each is what it is (the measurements behind them, with the commands that made them,
are in ``docs/results.md``), its batched env, its policy features, its duplicate evaluation and its
sections of the final report."""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np

from madiao_env.layout import OBS_TYPES, SUMMARY_SLICES
from madiao_mao.agents.learned import LearnedPolicyAgent
from madiao_mao.agents.registry import make_agent
from madiao_mao.training import game_spec
from madiao_mao.training.madiao.expert_iteration import EXPERT_ITERATION
from madiao_mao.training.madiao.exploit import EXPLOIT
from madiao_mao.training.stats import plot_curves

if TYPE_CHECKING:  # typing only: the config imports the games' specs to fill in its defaults
    from madiao_mao.training.config import TrainConfig


def _cards_policy() -> tuple[Any, dict[str, Any]]:
    # Imported here: keeps torch and stable-baselines3 off this module's import path.
    from madiao_mao.agents.madiao.features import MadiaoCardFeatures, summary_layout

    return "MlpPolicy", {
        "features_extractor_class": MadiaoCardFeatures,
        "features_extractor_kwargs": summary_layout(),
    }


#: Madiao's own policy features (besides the observation itself).
POLICY_FEATURES = MappingProxyType(
    {"cards": game_spec.PolicyFeatures("cards", ("summary", "record"), _cards_policy)}
)


def _vector_env(config: TrainConfig, n_envs: int, seed: int | None):
    # Imported here: keeps Numba and PettingZoo off this module's import path.
    from madiao_env.vector import MadiaoVectorEnv

    return MadiaoVectorEnv(n_envs, seed=seed, **game_spec.vector_env_kwargs(config))


def _learner_role(observation: np.ndarray) -> str:

    # The banker's relative seat is one-hot; relative seat 0 is the learner itself.
    return "banker" if observation[SUMMARY_SLICES["OBS_BANKER"].start] > 0.5 else "player"


def _evaluate(model, config: TrainConfig, n_deals: int, seed: int) -> dict[str, dict]:
    """Duplicate results of the greedy learned policy against each baseline: stakes/hand overall,
    as banker and as player, with 95% intervals."""
    # Imported here: madiao_mao.training.madiao.evaluation imports this module (a cycle at the top).
    from madiao_mao.training.madiao.evaluation import duplicate_match, make_deals

    learner = LearnedPolicyAgent(model=model, name="learned")
    deals = make_deals(n_deals, seed)
    results: dict[str, dict] = {}
    for name in config.eval_opponents:
        pair = duplicate_match(
            learner,
            make_agent(name, "madiao", seed=seed),
            deals,
            env_kwargs=game_spec.env_kwargs(config),
            agent_name="learned",
            opponent_name=name,
        )
        results[name] = pair.figures()
    return results


def _describe_result(name: str, result: dict) -> str:
    return f"vs {name} {result['all']['mean']:+.3f}"


def _report(learner, config: TrainConfig, run_dir: Path, n_deals: int, state: dict) -> list[str]:
    """A duplicate tournament of the learned policy and the baselines (its ratings plotted), and
    the learning curves of the periodic evaluations."""
    # Imported here: madiao_mao.training.madiao.evaluation imports this module (a cycle at the top).
    from madiao_mao.training.madiao.evaluation import run_tournament, write_report

    agents = {
        "learned": learner,
        **{n: make_agent(n, "madiao", seed=config.seed) for n in config.eval_opponents},
    }
    pairings = [(a, b) for a in agents for b in agents if a != b and "learned" in (a, b)]
    report = run_tournament(
        agents,
        n_deals=n_deals,
        seed=config.seed + 99,
        env_kwargs=game_spec.env_kwargs(config),
        pairings=pairings,
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


def _evaluate_on_ray(args: Any) -> int:
    # Imported here: madiao_mao.training.madiao.distributed_evaluation imports this module (import cycle).
    from madiao_mao.training.madiao.distributed_evaluation import evaluate_command

    return evaluate_command(args)


def _table_obs_type(agents) -> str:
    # Imported here: madiao_mao.training.madiao.evaluation imports this module (a cycle at the top).
    from madiao_mao.training.madiao.evaluation import table_obs_type

    return table_obs_type(agents)


GAME_SPEC = game_spec.GameSpec(
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
            "opponent_weights": game_spec.SCRIPTED_ONLY,
            # League self-play (AlphaStar/PFSP): as strong against the heuristic as the
            # heuristic-only pool, and it also plays its own snapshots (docs/results.md).
            "opponents": "league",
            # Every scripted player cheap enough for the training table.
            "league_anchors": ("random", "greedy", "heuristic"),
            # 1,024 games of 8 learner decisions per rollout (8,192, as 256 x 32): each round of
            # opponent moves asks every league policy once, so four times the games per call
            # collect a rollout in about half the time, as strong per learner step
            # (docs/results.md, "Madiao: more games, shorter rollouts").
            "n_envs": 1024,
            "n_steps": 8,
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
            # Duplicate deals per pairing in the final report: 4,000 hands, played in
            # batches (seconds), so the interval against each baseline is narrow.
            "final_eval_deals": 1000,
        }
    ),
    # The summary and each seat's public record of the hand: from scratch it beat the summary
    # head to head in both seeds measured, in fewer seconds than the summary's twice budget.
    obs_type="record",
    obs_types=OBS_TYPES,
    table_obs_type=_table_obs_type,
    policy_features=POLICY_FEATURES,
    make_vector_env=_vector_env,
    shape_reward=game_spec.unshaped,
    roles=("banker", "player"),
    learner_role=_learner_role,
    evaluate=_evaluate,
    describe_result=_describe_result,
    report=_report,
    table_envs=game_spec.table_envs_when_called(
        "madiao_env.env:raw_env", "madiao_env.vector:MadiaoVectorEnv"
    ),
    exploit=EXPLOIT,
    expert_iteration=EXPERT_ITERATION,
    commands=game_spec.module_when_called("madiao_mao.training.madiao.commands"),
    scorecard=game_spec.module_when_called("madiao_mao.training.madiao.scorecard"),
    evaluate_on_ray=_evaluate_on_ray,
)
