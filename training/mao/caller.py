"""Fitting and evaluating the learned caller of Mao's players' calls (``madiao_mao.agents.mao.caller``).

    python -m madiao_mao.training.mao.caller fit --episodes 400 --seed 0 --out mao_caller.json
    python -m madiao_mao.training.mao.caller evaluate --episodes 100 --seed 1 --out results/

``fit`` plays ``--episodes`` one-round episodes of players' calls (``calls="players"``) on the
rules a learned Mao player may train on (``TRAINING_CALL_RULES``: the validity and speech rules
of ``mao_env.rules.TRAINING_RULES``; the held-out rules are never played), half of them with every
seat a Bayesian player, half with a base-rules player in seat 0 (who keeps faulting). At the first
decision of every Bayesian seat in every call window it records, for each reason the window
offers and the posterior does not rule out, the caller's features (``call_candidates``: the
seat's view and posterior only) and, from the env (``window_faults``, Mao Master knowledge used
as the label alone), whether calling it would be a correct call. The first 75% of the episodes fit
a logistic regression (:func:`fit_logistic`); the last 25% choose the threshold
(:func:`choose_threshold`). ``evaluate`` compares a fitted caller with the Bayesian callers on
the rules held out of training (``mao_env.rules.HELD_OUT_RULES``), on the same episodes, at a
table of each kind and policing a base-rules player, with paired 95% intervals.
"""

from __future__ import annotations

import math
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import tyro

from madiao_mao.agents.mao.beliefs import SeatView
from madiao_mao.agents.mao.caller import CALL_FEATURES, CallCandidates, CallerModel, call_candidates
from madiao_mao.agents.mao.players import (
    DEFAULT_CALL_THRESHOLD,
    BaseRulesAgent,
    BayesianRuleAgent,
    RulePosterior,
    table_variants,
)
from madiao_mao.training.cli_args import (
    check_at_least,
    check_output_file,
    check_output_folder,
    parse_subcommands,
    run_reporting_user_errors,
)
from madiao_mao.training.mao.evaluation import (
    calls_episodes,
    calls_markdown,
    evaluate_calls,
    paired_calls_markdown,
    print_report,
)
from mao_env import cards
from mao_env.rules import DISCOVERABLE_RULES, HELD_OUT_RULES, TRAINING_RULES

#: The rules the caller is fitted on: the training rules whose violation draws a call.
TRAINING_CALL_RULES: tuple[int, ...] = tuple(r for r in DISCOVERABLE_RULES if r in TRAINING_RULES)
#: The share of the fit's episodes (the last ones) kept to choose the threshold.
VALIDATION_SHARE = 0.25
#: The thresholds :func:`choose_threshold` tries.
THRESHOLDS = tuple(round(0.5 + 0.01 * i, 2) for i in range(50))
#: L2 penalty of the logistic regression, on standardised features (a mild prior against the few
#: hundred positive rows the small budget gives; not tuned).
L2_PENALTY = 1.0


@dataclass
class CallData:
    """Candidate calls recorded in self-play: one row per (seat's call decision, offered reason
    the posterior does not rule out)."""

    features: np.ndarray
    """``[n, len(CALL_FEATURES)]``."""
    correct: np.ndarray
    """``[n]`` bool: calling it would have been a correct call (the env's truth)."""
    belief: np.ndarray
    """``[n]``: the posterior's belief in the fault (what the Bayesian player calls on)."""
    episode: np.ndarray
    """``[n]``: the episode's index."""

    def subset(self, rows: np.ndarray) -> CallData:
        return CallData(*(getattr(self, name)[rows] for name in CallData.__dataclass_fields__))


def policing(episode: np.ndarray | int) -> np.ndarray | bool:
    """Whether the recorded episode(s) of these indices had a base-rules player in seat 0 (the
    others: every seat a Bayesian player)."""
    return np.asarray(episode) % 2 == 1


class _RecordingBayesAgent(BayesianRuleAgent):
    """The Bayesian player, which also keeps the caller's candidates of its last call decision."""

    def __init__(self, seed: int | None = None, **kwargs: Any) -> None:
        super().__init__(seed, **kwargs)
        self.last_candidates: CallCandidates | None = None

    def decide_from(
        self, posterior: RulePosterior, view: SeatView, mask: np.ndarray, legal: np.ndarray
    ) -> int:
        if mask[cards.NO_CALL]:
            self.last_candidates = call_candidates(
                view, mask, posterior, talking=self.talking, thank_you=self.thank_you
            )
        return super().decide_from(posterior, view, mask, legal)


def collect_call_data(
    episodes: int,
    seed: int,
    *,
    rules: Sequence[int] = TRAINING_CALL_RULES,
    n_players: int = 4,
    max_steps: int = 3000,
    progress: bool = False,
) -> CallData:
    """Self-play of Bayesian players at ``calls="players"`` tables (``calls_episodes`` of ``rules``;
    odd episodes with a base-rules player in seat 0), recorded as :class:`CallData`."""
    # Imported here: keeps PettingZoo off this module's import path.
    from mao_env.env import raw_env

    env = raw_env(n_players, calls="players", max_steps=max_steps)
    variants = table_variants(env, posterior=True)
    recorders = [_RecordingBayesAgent(seed=seed + s, **variants) for s in range(n_players)]
    base = BaseRulesAgent(seed=seed, **table_variants(env))
    rows: dict[str, list] = {name: [] for name in CallData.__dataclass_fields__}
    plans = calls_episodes(episodes, seed, n_players=n_players, rules=rules)
    iterator = enumerate(plans)
    if progress:
        # Imported here: keeps tqdm off this module's import path.
        from tqdm import tqdm

        iterator = tqdm(iterator, total=len(plans), desc="episodes", unit="episode")
    for index, (env_seed, plan) in iterator:
        lineup: list[BayesianRuleAgent | BaseRulesAgent] = list(recorders)
        if policing(index):
            lineup[0] = base
        for agent in {id(a): a for a in lineup}.values():
            agent.reset()
        env.reset(seed=env_seed, options={"rules": plan})
        decided: set[int] = set()  # seats that made their first decision in the open window
        while True:
            observation, _, terminated, truncated, _ = env.last()
            if terminated or truncated:
                break
            seat = env.current_seat
            agent = lineup[seat]
            in_window = env.in_call_window()
            faults = env.window_faults() if in_window else {}
            if isinstance(agent, _RecordingBayesAgent):
                agent.last_candidates = None
            action = int(agent.act(observation["observation"], observation["action_mask"]))
            if action == cards.END_TURN:
                decided = set()
            if in_window and isinstance(agent, _RecordingBayesAgent) and seat not in decided:
                decided.add(seat)
                reasons, belief, features = agent.last_candidates
                rows["features"].append(features)
                rows["correct"].append(np.array([int(r) in faults for r in reasons], dtype=bool))
                rows["belief"].append(belief)
                rows["episode"].append(np.full(reasons.size, index))
            env.step(action)
    if not rows["features"]:
        return CallData(np.zeros((0, len(CALL_FEATURES))), *(np.zeros(0) for _ in range(3)))
    return CallData(*(np.concatenate(rows[name]) for name in CallData.__dataclass_fields__))


def fit_logistic(
    features: np.ndarray, labels: np.ndarray, *, l2: float = L2_PENALTY, iterations: int = 50
) -> tuple[np.ndarray, float, np.ndarray, np.ndarray]:
    """A logistic regression by Newton's method on standardised features with an L2 penalty
    (not on the bias): (weights, bias, mean, scale). Logistic regression because the decision
    needs a calibrated P(correct), the features are few and the positive rows a few hundred (a
    network would fit noise), and its weights read as how each feature moves the odds.
    A constant feature gets scale 1 (and so weight 0 under the penalty)."""
    x = np.asarray(features, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    if x.ndim != 2 or y.shape != (x.shape[0],) or x.shape[0] == 0:
        raise ValueError(f"features [n, k] and labels [n] with n > 0 expected, got {x.shape} and {y.shape}")
    if y.min() == y.max():
        raise ValueError("the data hold only one label: play more episodes to see correct and bad calls")
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale = np.where(scale > 1e-9, scale, 1.0)
    z = np.column_stack([np.ones(x.shape[0]), (x - mean) / scale])
    theta = np.zeros(z.shape[1])
    penalty = np.full(z.shape[1], l2)
    penalty[0] = 0.0
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-(z @ theta)))
        gradient = z.T @ (p - y) + penalty * theta
        hessian = (z * (p * (1 - p))[:, None]).T @ z + np.diag(penalty) + 1e-9 * np.eye(z.shape[1])
        step = np.linalg.solve(hessian, gradient)
        theta -= step
        if np.max(np.abs(step)) < 1e-8:
            break
    return theta[1:], float(theta[0]), mean, scale


@dataclass(frozen=True)
class CallTally:
    """What a calling rule would have done on recorded candidates: calls, correct calls, and the
    correct calls available (the rows that were faults)."""

    calls: int
    correct: int
    faults: int

    @property
    def bad(self) -> int:
        return self.calls - self.correct

    @property
    def accuracy(self) -> float:
        return self.correct / self.calls if self.calls else math.nan


def tally(called: np.ndarray, correct: np.ndarray) -> CallTally:
    """The :class:`CallTally` of calling the rows ``called`` (bool) where ``correct`` says which
    calls are right."""
    called, correct = np.asarray(called, dtype=bool), np.asarray(correct, dtype=bool)
    return CallTally(int(called.sum()), int((called & correct).sum()), int(correct.sum()))


def choose_threshold(
    probabilities: np.ndarray, data: CallData, thresholds: Sequence[float] = THRESHOLDS
) -> tuple[float, dict[str, Any]]:
    """The threshold on P(correct) for the validation rows ``data``: of ``thresholds``, the one
    whose calls are at least as accurate as the Bayesian player's there (belief >= 0.8) with no
    more bad calls, and that calls the most faults (the higher threshold on a tie); with none
    such, the highest. Returns it and the validation figures of both rules."""
    bayes = tally(data.belief >= DEFAULT_CALL_THRESHOLD, data.correct)
    best, best_key = max(thresholds), None
    for threshold in thresholds:
        ours = tally(probabilities >= threshold, data.correct)
        accurate = ours.calls == 0 or bayes.calls == 0 or ours.accuracy >= bayes.accuracy
        if accurate and ours.bad <= bayes.bad:
            key = (ours.correct, threshold)
            if best_key is None or key > best_key:
                best, best_key = float(threshold), key
    ours = tally(probabilities >= best, data.correct)
    figures = {
        "validation rows": int(data.correct.size),
        "learned calls": ours.calls, "learned correct": ours.correct,
        "bayes calls": bayes.calls, "bayes correct": bayes.correct, "faults": bayes.faults,
        "met the bayes targets": best_key is not None,
    }  # fmt: skip
    return best, figures


def fit_caller(episodes: int, seed: int, *, progress: bool = False, command: str = "") -> CallerModel:
    """Record ``episodes`` episodes on ``TRAINING_CALL_RULES``, fit on the first 75%, choose the
    threshold on the rest; the model's provenance holds ``command`` and the figures."""
    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 4:
        raise ValueError(f"episodes must be an integer >= 4 (fit and validation episodes), got {episodes!r}")
    data = collect_call_data(episodes, seed, progress=progress)
    n_fit = episodes - max(1, round(episodes * VALIDATION_SHARE))
    fitting = data.subset(data.episode < n_fit)
    validation = data.subset(data.episode >= n_fit)
    weights, bias, mean, scale = fit_logistic(fitting.features, fitting.correct)
    chance = CallerModel(weights, bias, mean, scale, 1.0, {}).probabilities(validation.features)
    threshold, figures = choose_threshold(chance, validation)
    by_setup = {}  # the validation's calls at each table (the target holds for both)
    policed = policing(validation.episode)
    for setup, rows in (("one kind", ~policed), ("policing", policed)):
        ours = tally(rows & (chance >= threshold), validation.correct)
        bayes = tally(rows & (validation.belief >= DEFAULT_CALL_THRESHOLD), validation.correct)
        by_setup[setup] = {"learned": [ours.correct, ours.calls], "bayes": [bayes.correct, bayes.calls]}
    provenance = {
        "command": command,
        "episodes": episodes, "seed": seed, "fit episodes": n_fit,
        "rules": list(TRAINING_CALL_RULES),
        "fit rows": int(fitting.correct.size), "fit correct": int(fitting.correct.sum()),
        **figures,
        "validation (correct, calls) by table": by_setup,
    }  # fmt: skip
    return CallerModel(weights, bias, mean, scale, threshold, provenance)


def evaluate_caller(model: str | Path | None, episodes: int, seed: int) -> str:
    """The learned caller (``model``: a caller file, default the shipped one) against the
    Bayesian callers on ``HELD_OUT_RULES``, at a table of each kind and policing a base-rules
    player in seat 0: ``calls_markdown`` tables and the paired differences, as markdown. Each kind
    gets the same agent seeds, so the games part only where the calls do."""
    spec = "caller" if model is None else f"caller:{model}"
    sections = []
    for fault_source, setup in (
        (None, "Every seat the same kind"),
        ("base", "Seat 0 a base-rules player (the faults counted are its own), the other seats the kind"),
    ):
        results = {}
        for name, kind in (("bayes", "bayes"), ("caller", spec)):
            results |= evaluate_calls(
                {name: kind}, episodes=episodes, seed=seed, fault_source=fault_source, rules=HELD_OUT_RULES
            )
        text = calls_markdown(
            results,
            f"{setup}; 4 players, {episodes} one-round episodes (seed {seed}), each starting with 2 of "
            f"the rules held out of training ({', '.join(map(str, HELD_OUT_RULES))}) authored by "
            "random seats.",
        )
        sections.append(text + "\n" + paired_calls_markdown(results, [("caller", "bayes")]))
    return "\n".join(sections)


@dataclass
class FitOptions:
    """Record self-play on the training rules and fit a caller."""

    out: Annotated[str, tyro.conf.arg(metavar="FILE")]
    """The caller file to write (.json)."""
    episodes: int = 400
    """One-round episodes to record (>= 4)."""
    seed: int = 0
    """Seed of the episodes."""

    def check(self) -> None:
        check_at_least("--episodes", self.episodes, 1)
        check_at_least("--seed", self.seed, 0)
        check_output_file(self.out, "--out")
        if not self.out.endswith(".json"):
            raise ValueError(f"--out: a caller file ends in .json, got {self.out!r}")
        if self.episodes < 4:
            raise ValueError(f"--episodes: at least 4 (fit and validation episodes), got {self.episodes}")


@dataclass
class EvaluateOptions:
    """A caller against the Bayesian callers on held-out rules."""

    model: Annotated[str | None, tyro.conf.arg(metavar="FILE")] = None
    """A caller file (default: the shipped one)."""
    episodes: int = 100
    """One-round episodes per table."""
    seed: int = 1
    """Seed of the episodes."""
    out: Annotated[str | None, tyro.conf.arg(metavar="FOLDER")] = None
    """Folder for the markdown report (mao_caller.md)."""

    def check(self) -> None:
        check_at_least("--episodes", self.episodes, 1)
        check_at_least("--seed", self.seed, 0)
        check_output_folder(self.out, "--out")
        if self.model is not None:
            CallerModel.load(self.model)  # a bad file is named before any game is played


def main(argv: Sequence[str] | None = None) -> int:
    """Fit the learned Mao caller on the training rules, or evaluate one on the held-out rules.
    A bad argument ends it before any game, with one line on stderr and status 2."""

    prog = "python -m madiao_mao.training.mao.caller"
    argv = sys.argv[1:] if argv is None else list(argv)
    command = f"{prog} {shlex.join(argv)}"

    def body() -> int:
        options = parse_subcommands({"fit": FitOptions, "evaluate": EvaluateOptions}, argv, prog=prog)
        options.check()
        return _fit(options, command) if isinstance(options, FitOptions) else _evaluate(options)

    return run_reporting_user_errors(prog, body)


def _fit(options: FitOptions, command: str) -> int:
    model = fit_caller(options.episodes, options.seed, progress=True, command=command)
    model.save(options.out)
    figures = model.provenance
    print(
        f"fitted on {figures['fit rows']} candidate calls ({figures['fit correct']} correct) of "
        f"{figures['fit episodes']} episodes; on the other {options.episodes - figures['fit episodes']} "
        f"at threshold {model.threshold:.2f}: {figures['learned correct']}/{figures['learned calls']} "
        f"calls correct, the Bayesian rule {figures['bayes correct']}/{figures['bayes calls']}, of "
        f"{figures['faults']} faults; wrote {options.out}"
    )
    return 0


def _evaluate(options: EvaluateOptions) -> int:
    print_report(evaluate_caller(options.model, options.episodes, options.seed), options.out, "mao_caller.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
