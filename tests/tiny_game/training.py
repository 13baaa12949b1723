"""High card in the trainer: its ``GameSpec`` (defaults, batched env, evaluation, report, its part
of the exploitability proxy and the envs Gymnasium's id would build)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from madiao_mao.training.config import ConfigError
from madiao_mao.training.exploit import ExploitGame, ExploitSettings, ci_dict, format_ci
from madiao_mao.training.game_spec import SCRIPTED_ONLY, GameSpec, env_kwargs, unshaped
from madiao_mao.training.stats import MeanCI, markdown_table, mean_ci
from tests.tiny_game.env import N_SEATS, TinyVectorEnv, raw_env


def play_games(agent, opponent, n_games: int, seed: int) -> np.ndarray:
    """``agent``'s payoff in each of ``n_games`` games (seat ``game % 3``), ``opponent`` in the
    other seats; the same seed deals the same cards."""
    games = TinyVectorEnv(n_games, seed=seed)
    step = games.reset()
    seats = np.arange(n_games) % N_SEATS
    for _ in range(N_SEATS):  # every seat acts once: the games end together
        ours = step.to_act == seats
        actions = np.where(
            ours,
            agent.act_batch(step.observation, step.action_mask & ours[:, None]),
            opponent.act_batch(step.observation, step.action_mask & ~ours[:, None]),
        )
        step = games.step(actions)
    assert step.terminated.all()
    return step.final_payoffs[np.arange(n_games), seats].astype(np.float64)


def _ci(values: np.ndarray) -> MeanCI:
    return mean_ci(values)


def _vector_env(config, n_envs: int, seed: int | None) -> TinyVectorEnv:
    return TinyVectorEnv(n_envs, seed=seed, **env_kwargs(config))


def _evaluate(model, config, n_deals: int, seed: int) -> dict[str, dict]:
    from madiao_mao.agents.learned import policy_agent
    from madiao_mao.agents.registry import make_agent

    learner = policy_agent(model=model, name="learned")
    results = {}
    for name in config.eval_opponents:
        ci = _ci(play_games(learner, make_agent(name, "tiny", seed=seed), n_deals, seed))
        results[name] = {"games": n_deals, "mean": ci.mean, "low": ci.low, "high": ci.high}
    return results


@dataclass(frozen=True)
class TinySettings:
    """High card's own training setting (the game's option on the command line: ``--tiny.FIELD``)."""

    report_seed_offset: int = 99
    """The final report's games are dealt from the run's seed plus this (apart from the training
    games' seeds)."""

    def check(self) -> None:
        if isinstance(self.report_seed_offset, bool) or not isinstance(self.report_seed_offset, int):
            raise ConfigError(
                "report_seed_offset",
                f"report_seed_offset must be an integer, got {self.report_seed_offset!r}",
            )


def _report(learner, config, run_dir: Path, n_deals: int, state: dict) -> list[str]:
    from madiao_mao.agents.registry import make_agent

    rows = []
    seed = config.seed + config.game_settings.report_seed_offset
    for name in config.eval_opponents:
        ci = _ci(play_games(learner, make_agent(name, "tiny", seed=config.seed), n_deals, seed))
        rows.append([name, n_deals, str(ci)])
    table = markdown_table(["opponent (2 seats)", "games", "stakes/game [95% CI]"], rows)
    return [f"## High card: the learned policy in one seat\n\n{table}\n"]


def _exploit_evaluate(exploiter, settings: ExploitSettings) -> dict[str, Any]:
    from madiao_mao.training.cli_args import load_agent

    target = load_agent(settings.target, "tiny", seed=settings.seed)
    ours = play_games(exploiter, target, settings.n_deals, settings.seed + 7)
    itself = play_games(target, target, settings.n_deals, settings.seed + 7)
    return {
        "games": settings.n_deals,
        "exploiter": ci_dict(_ci(ours)),
        "target_self_play": ci_dict(_ci(itself)),
        "gain": ci_dict(_ci(ours - itself)),
    }


def _exploit_markdown(report: dict[str, Any]) -> str:
    e = report["evaluation"]
    labels = {"exploiter": "exploiter vs target", "target_self_play": "target vs itself", "gain": "gain"}
    rows = [[label, format_ci(e[key])] for key, label in labels.items()]
    return (
        f"{e['games']:,} games, the same cards for both.\n\n"
        + markdown_table(["", "stakes/game"], rows)
        + "\n"
    )


EXPLOIT = ExploitGame(default_deals=300, evaluate=_exploit_evaluate, markdown=_exploit_markdown)


def _table_envs() -> tuple[Any, type]:
    return raw_env, TinyVectorEnv


GAME_SPEC = GameSpec(
    name="tiny",
    defaults=MappingProxyType(
        {
            "total_timesteps": 20_000,
            "scripted_opponents": ("threshold",),
            "opponent_weights": SCRIPTED_ONLY,
            "opponents": "pool",
            "n_envs": 256,
            "n_steps": 32,
            "batch_size": 256,
            "learning_rate": 1e-3,
            "eval_opponents": ("random", "threshold"),
            "features": "flat",
            "gamma": 1.0,
            "ent_coef": 0.01,
            "imitate": "none",
            "final_eval_deals": 300,
        }
    ),
    obs_type="default",
    policy_features=MappingProxyType({}),
    make_vector_env=_vector_env,
    shape_reward=unshaped,
    roles=("player",),
    learner_role=None,
    evaluate=_evaluate,
    describe_result=lambda name, result: f"vs {name} {result['mean']:+.3f}",
    report=_report,
    table_envs=_table_envs,
    exploit=EXPLOIT,
    settings=TinySettings,
)
