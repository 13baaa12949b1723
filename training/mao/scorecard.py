"""The Mao part of the scorecard (``madiao_mao.training.scorecard``): the held-out-rule suites, the baselines
and the figures.

The policy sits in one seat of a table of each baseline kind (``base``, ``bayes``, ``oracle``,
the shipped ``model``), one secret rule held out of training active from the start, and plays
until it has taken the suite's turns (``madiao_mao.training.mao.evaluation.rule_discovery_experiment``):
penalty cards per turn (95% t interval over games) and round-win rate (Wilson interval), each
also paired per game with the *reference*, the base-rules player in the same seat of the same
games. In the players'-calls variant (``calls="players"``) the policy fills a table that polices
a base-rules player in seat 0 (``evaluate_calls``): call accuracy and the share of faults called.
Ratings are openskill's, one match per game between the policy and the reference (fewer penalty
cards per turn wins).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import partial
from typing import Any

from madiao_mao.training.cli_args import load_agent
from madiao_mao.training.mao.evaluation import (
    HELD_OUT_RULES,
    CallStats,
    MaoReport,
    MaoSeatStats,
    calls_episodes,
    controlled_games,
    evaluate_calls,
    paired_penalty_difference,
    paired_round_win_difference,
    rule_discovery_experiment,
)
from madiao_mao.training.scorecard_figures import Figure
from madiao_mao.training.stats import mean_ci, openskill_ratings

#: The version of this game's protocol: its suites, baselines, budgets and figures. Any change
#: to what its scorecards measure (a baseline that decides otherwise among them) changes it, so
#: two scorecards of the game compare only when it is equal.
PROTOCOL = "scorecard-2"
BASELINES = ("base", "bayes", "oracle", "model")
#: The shipped agents on the leaderboard, as the specs their scorecards were made with.
LEADERBOARD_POLICIES = ("random", "base", "bayes", "caller", "oracle", "model")
REFERENCE = "base"
#: The seat whose faults the players'-calls table counts (the base player never learns a rule).
FAULT_SOURCE = "base"
#: The table of the players'-calls variant in the figures.
CALLS_TABLE = "players_calls"
HEADLINE = "penalty_cards_per_turn"
SETUP = (
    "Held-out secret rules: the policy in one seat of a table of the baseline, one rule held out "
    "of training active from the start; differences are paired per game with the base-rules "
    "player in the policy's seat."
)
SAMPLE_UNITS = "turns (penalties), rounds (round wins), calls or faults (players' calls)"
#: Measures that are rates, shown without a sign (the others are differences or payoffs).
RATES = frozenset({HEADLINE, "round_win_rate", "call_accuracy", "faults_called", "exploiter_round_win_rate"})
LEADERBOARD_NOTE = (
    f"`{HEADLINE}` of the row's policy in one seat of a table of each baseline kind, 95% CI: a rate, "
    "**lower is better** (protocol: [`scorecard.md`](scorecard.md); every figure of a row: its JSON "
    "in `scorecards/`). Then its mean over the four tables (each the same number of the policy's "
    "turns, on the same games for every row), its round-win rate over the four tables' rounds "
    "(higher is better) and its call accuracy in the players'-calls variant. Rows are sorted by the "
    "mean penalty rate over the tables, a tie by the round-win rate."
)


@dataclass(frozen=True)
class MaoSuite:
    """Games on the rules held out of training, derived from ``seed``."""

    name: str
    seed: int
    replicates: int
    """Games per held-out rule (at each baseline's table)."""
    turns: int
    """Own turns of the policy per game."""
    calls_episodes: int
    """One-round episodes of the players'-calls variant."""
    exploit_deals: int
    """Games per rule the exploitability proxy's exploiter is scored on."""
    checksum: str
    game: str = "mao"

    def games(self) -> dict[str, Any]:
        return {
            "held_out": [list(g) for g in controlled_games(HELD_OUT_RULES, self.replicates, self.seed)],
            "turns": self.turns,
            "calls": [
                [seed, [list(r) for r in rules]]
                for seed, rules in calls_episodes(self.calls_episodes, self.seed)
            ],
            "exploit_deals": self.exploit_deals,
            "baselines": list(BASELINES),
        }

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name, "checksum": self.checksum, "seed": self.seed,
            "rules": list(HELD_OUT_RULES), "replicates": self.replicates, "turns": self.turns,
            "calls_episodes": self.calls_episodes, "exploit_deals": self.exploit_deals,
            "reference": REFERENCE,
        }  # fmt: skip


SUITES = {
    "smoke": MaoSuite(
        "smoke", 26_100, 1, 4, 1, 1, "sha256:aa2560d2f382b8f445a6634c572467de40458ed7068368990499c002b9bf25a3"
    ),
    "dev": MaoSuite(
        "dev", 26_101, 1, 25, 6, 1, "sha256:92d85545500f0ee2f3679d49b0cba075016bdbbb562d6d8a6fa91b739e8dcb24"
    ),
    "test": MaoSuite(
        "test",
        26_102,
        4,
        60,
        30,
        2,
        "sha256:9ae95b057091a6f38acc796fa7d4f3292f6331dc4426a1b397f096582eabe1ca",
    ),
}


def check_policy_spec(spec: str) -> None:
    """Build the agent of ``spec`` once, so that a bad one is refused before any game (not the
    oracle, which is built at its table)."""

    if spec != "oracle":
        load_agent(spec, "mao", seed=0)


def pin_table(seed: int, baseline: str):
    """The env the baselines' decisions are pinned on (``madiao_mao.training.scorecard.baseline_pins``),
    dealt from ``seed``: a table of the suites' kind, one held-out rule active from the start (the
    same for every ``baseline``: Mao's players read one observation variant)."""
    # Imported here: keeps PettingZoo off this module's import path.
    from mao_env.env import raw_env

    env = raw_env()
    env.reset(seed=seed, options={"rules": [int(HELD_OUT_RULES[seed % len(HELD_OUT_RULES)])]})
    return env


def play_suite(
    under_test, suite: MaoSuite, cache, baselines: tuple[str, ...] = BASELINES, *, progress: bool = False
):
    """The policy's and the reference's games at the table of each of ``baselines``, then the
    players' calls."""
    played: dict[str, dict[str, MaoSeatStats]] = {"policy": {}, "reference": {}}
    sides = {"policy": (under_test.identity, under_test.spec), "reference": (None, REFERENCE)}  # cache keys
    iterator = baselines
    if progress:
        # Imported here: keeps tqdm off this module's import path.
        from tqdm import tqdm

        iterator = tqdm(baselines, desc="mao tables", unit="table")
    for opponent in iterator:
        for side in ("policy", "reference"):
            play = partial(_play_table, under_test, side, opponent, suite)
            identity, seated = sides[side]
            name = f"{side}-at-{opponent}"
            result = cache.get_or_play(name, play, policy=identity, seats=[seated, opponent])
            played[side][opponent] = MaoSeatStats(**result)
    figures = _figures(played, baselines)
    if suite.calls_episodes and _plays_every_seat(under_test):

        def play_calls() -> dict[str, Any]:
            agent = under_test.for_table("mao", seed=suite.seed)
            results = evaluate_calls(
                {"policy": agent}, episodes=suite.calls_episodes, seed=suite.seed, fault_source=FAULT_SOURCE
            )
            return asdict(results["policy"])

        result = cache.get_or_play(
            "policy-calls", play_calls, policy=under_test.identity, seats=[under_test.spec, FAULT_SOURCE]
        )
        calls = CallStats(**result)
        figures += _calls_figures(calls)
    return figures, _ratings(played, baselines)


def _play_table(under_test, side: str, opponent: str, suite: MaoSuite) -> dict[str, Any]:
    """The held-out games of the policy (``side`` "policy") or the reference in one seat of a
    table of ``opponent``, as ``MaoSeatStats`` fields."""
    agent = under_test.for_table("mao", seed=suite.seed) if side == "policy" else REFERENCE
    report = rule_discovery_experiment(
        {side: agent}, rules=HELD_OUT_RULES, turns=suite.turns, replicates=suite.replicates, seed=suite.seed,
        opponent=opponent,
    )  # fmt: skip
    return asdict(report.stats[side])


def _plays_every_seat(under_test) -> bool:
    """Whether the policy can fill a table: a spec builds one agent per seat; one object can sit in
    several seats only when it decides from its observation alone (no memory of its own game)."""
    return under_test.spec is not None or bool(getattr(under_test.agent, "decides_from_observation", False))


def _figures(played: dict[str, dict[str, MaoSeatStats]], baselines: tuple[str, ...]):
    figures = []
    for opponent in baselines:
        ours, reference = played["policy"][opponent], played["reference"][opponent]
        report = MaoReport({"policy": ours, REFERENCE: reference}, "", "")
        figures += [
            Figure.from_ci(opponent, HEADLINE, mean_ci(ours.game_penalty_rates()), ours.turns),
            Figure.proportion(opponent, "round_win_rate", ours.rounds_won, ours.rounds_played),
            Figure.from_ci(
                opponent, f"penalty_difference_from_{REFERENCE}",
                paired_penalty_difference(report, "policy", REFERENCE), ours.turns,
            ),
            Figure.from_ci(
                opponent, f"round_win_difference_from_{REFERENCE}",
                paired_round_win_difference(report, "policy", REFERENCE), ours.rounds_played,
            ),
        ]  # fmt: skip
    return figures


def _calls_figures(calls: CallStats):
    return [
        Figure.proportion(CALLS_TABLE, "call_accuracy", calls.correct_calls, calls.calls),
        Figure.proportion(CALLS_TABLE, "faults_called", calls.faults_called, calls.faults),
    ]


def _ratings(
    played: dict[str, dict[str, MaoSeatStats]], baselines: tuple[str, ...]
) -> dict[str, dict[str, float]]:
    matches = []
    for opponent in baselines:
        ours = played["policy"][opponent].game_penalty_rates()
        theirs = played["reference"][opponent].game_penalty_rates()
        matches += [("policy", REFERENCE, float(b - a)) for a, b in zip(ours, theirs, strict=True)]
    ratings = openskill_ratings(matches, ["policy", REFERENCE])
    return {
        name: {"mu": mu, "sigma": sigma, "ordinal": ordinal} for name, (mu, sigma, ordinal) in ratings.items()
    }


def exploit_figures(evaluation: dict[str, Any]) -> list[dict[str, Any]]:
    """The exploitability proxy's figures (``madiao_mao.training.mao.exploit.evaluate_mao``'s evaluation)."""
    exploiter, difference = evaluation["exploiter"], evaluation["penalty_difference"]
    rate = exploiter["round_win_rate"]
    return [
        asdict(Figure("exploiter", "exploiter_round_win_rate", rate["mean"], rate["low"], rate["high"],
                      exploiter["rounds"], exploiter["rounds"])),
        asdict(Figure("exploiter", "exploiter_penalty_difference", difference["mean"], difference["low"],
                      difference["high"], evaluation["turns"], difference["blocks"])),
    ]  # fmt: skip


def leaderboard_table(
    records: list[dict[str, Any]],
) -> tuple[list[str], list[tuple[dict[str, Any], list[str]]]]:
    """The leaderboard's columns and rows: the penalty rate at each table, its mean over the tables
    (the rank, lower first; a tie goes to the higher round-win rate), the round-win rate over all
    the tables' rounds and the call accuracy."""

    def figures(record: dict[str, Any], measure: str) -> dict[str, Figure]:
        return {f["table"]: Figure(**f) for f in record["figures"] if f["measure"] == measure}

    def mean_penalty_rate(record: dict[str, Any]) -> float:
        rates = figures(record, HEADLINE)
        return sum(rates[table].mean for table in BASELINES) / len(BASELINES)

    def round_wins(record: dict[str, Any]) -> tuple[int, int]:
        rates = figures(record, "round_win_rate").values()
        return sum(round(f.mean * f.n) for f in rates if f.n), sum(f.n for f in rates)

    def round_win_rate(record: dict[str, Any]) -> float:
        won, rounds = round_wins(record)
        return won / rounds if rounds else 0.0

    # Rounded: two policies with the same penalty cards in all tie, whatever the float sums' order.
    ranked = sorted(records, key=lambda r: (round(mean_penalty_rate(r), 9), -round_win_rate(r), r["policy"]))
    rows = []
    for record in ranked:
        rates, calls = figures(record, HEADLINE), figures(record, "call_accuracy")
        won, rounds = round_wins(record)
        accuracy = calls.get(CALLS_TABLE)
        rows.append(
            (
                record,
                [
                    *(rates[table].text(signed=False) for table in BASELINES),
                    f"{mean_penalty_rate(record):.3f}",
                    f"{won / rounds:.3f} ({won}/{rounds})" if rounds else "n/a",
                    f"{accuracy.text(signed=False)} (n={accuracy.n})"
                    if accuracy and accuracy.n
                    else "no calls",
                ],
            )
        )
    header = [
        *(f"penalty/turn vs {table}" for table in BASELINES),
        "penalty/turn, mean of the tables",
        "round-win rate",
        "call accuracy",
    ]
    return header, rows


def leaderboard_remarks(records: list[dict[str, Any]]) -> list[str]:
    """Sentences under a suite's table: none for Mao (its rows are ranked by a rate each row
    measures on its own, which no head-to-head figure can contradict)."""
    return []
