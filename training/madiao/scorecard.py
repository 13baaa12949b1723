"""The Madiao part of the scorecard (``madiao_mao.training.scorecard``): the deal suites, the baselines and
the figures.

The policy sits in one seat of every duplicate deal of the suite, rotated through the four seats,
against three copies of each baseline (``madiao_mao.training.madiao.evaluation.duplicate_match``): stakes
per hand overall, as banker and as player, with 95% intervals over deal blocks. Each figure is
paired with the *reference*, the role-aware heuristic in the policy's seat on the same deals
against the same baseline (``difference_from_heuristic``: the policy minus the heuristic, per
deal). The search baseline plays a fixed small budget (``SEARCH_BUDGET``) on the suite's first
``search_deals`` deals only: it is the slow part. Ratings are openskill's, one match per deal
block, from the policy's and the reference's games.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import partial
from typing import Any

from madiao_mao.agents.registry import reads_env
from madiao_mao.training.cli_args import load_agent
from madiao_mao.training.madiao.evaluation import (
    Deal,
    PairResult,
    duplicate_match,
    make_deals,
    paired_by_deal,
    table_obs_type,
)
from madiao_mao.training.madiao.matches import make_env
from madiao_mao.training.scorecard_figures import Figure
from madiao_mao.training.stats import openskill_ratings

#: The version of this game's protocol: its suites, baselines, budgets and figures. Any change
#: to what its scorecards measure (a baseline that decides otherwise among them) changes it, so
#: two scorecards of the game compare only when it is equal.
PROTOCOL = "scorecard-4"
#: The search baseline's budget, part of the protocol (about heuristic strength, at several
#: hundred decisions per CPU-second: docs/results.md, the search player per budget).
SEARCH_BUDGET = "samples=8"
BASELINES = ("random", "greedy", "heuristic", f"search:{SEARCH_BUDGET}", "model")
#: The shipped agents on the leaderboard, as the specs their scorecards were made with.
LEADERBOARD_POLICIES = (
    "random", "greedy", "heuristic", "search", "search:samples=8", "model", "model-search",
)  # fmt: skip
#: The agent every figure is paired with.
REFERENCE = "heuristic"
HEADLINE = "stakes_per_hand"
SETUP = (
    "Duplicate deals: the policy in one seat (rotated through all four), three copies of the "
    "baseline in the others; stakes per hand, intervals over deal blocks; differences are paired "
    "per deal with the heuristic in the policy's seat."
)
SAMPLE_UNITS = "hands"
#: Measures that are rates, shown without a sign (Madiao's are all payoffs or differences).
RATES: frozenset[str] = frozenset()
LEADERBOARD_NOTE = (
    f"`{HEADLINE}` of the row's policy against three copies of each baseline, 95% CI (protocol: "
    "[`scorecard.md`](scorecard.md); every figure of a row: its JSON in `scorecards/`). Rows are sorted "
    f"by the figure against the `{REFERENCE}`, the reference, which every row measures on the same "
    "suite hands. Not by the mean over the columns: the random column would weigh most in it, and how "
    "much a policy takes from a random player is not its strength (`greedy` would come second). Nor by "
    "each scorecard's own openskill rating, which is fitted to different games in every row. A "
    "head-to-head figure of a table that goes against this order (a policy scoring significantly "
    "below 0 against one ranked under it, or above 0 against one ranked over it) is listed under the "
    "table: one seat against three copies of the other is not a symmetric match in a four-seat game, "
    "so two policies can each beat the other."
)
ROLES = (("", None), ("_as_banker", "banker"), ("_as_player", "player"))


@dataclass(frozen=True)
class MadiaoSuite:
    """A fixed set of duplicate deals, derived from ``seed`` (``make_deals``)."""

    name: str
    seed: int
    n_deals: int
    search_deals: int
    """The search baseline plays the first this many deals (the other baselines all of them)."""
    exploit_deals: int
    """Deals the exploitability proxy's exploiter is scored on."""
    checksum: str
    """``madiao_mao.training.scorecard.suite_checksum`` of ``games()``, recorded when the suite was made."""
    game: str = "madiao"

    def deals(self) -> list[Deal]:
        return make_deals(self.n_deals, self.seed)

    def deals_against(self, baseline: str) -> int:
        return self.search_deals if baseline.startswith("search") else self.n_deals

    def games(self) -> dict[str, Any]:
        """Everything the suite plays, as the checksum covers it."""
        return {
            "deals": [[list(deal.deck), deal.banker, deal.env_seed] for deal in self.deals()],
            "search_deals": self.search_deals,
            "exploit_deals": self.exploit_deals,
            "baselines": list(BASELINES),
        }

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name, "checksum": self.checksum, "seed": self.seed, "deals": self.n_deals,
            "search_deals": self.search_deals, "exploit_deals": self.exploit_deals,
            "search_budget": SEARCH_BUDGET, "reference": REFERENCE,
        }  # fmt: skip


SUITES = {
    # A check that an install works; too small to report.
    "smoke": MadiaoSuite(
        "smoke", 26_000, 8, 2, 8, "sha256:cb3b5b168e13e1acd6c2a8488cc77dac720d22439403ccdae9388420919618f1"
    ),
    "dev": MadiaoSuite(
        "dev", 26_001, 300, 60, 300, "sha256:ac4e4cbac6142026262d2481706c0932adbe508404d014a7e57505b76896af20"
    ),
    # 5,000 deals: the heuristic's and the shipped model's per-deal scores against the heuristic
    # have a standard deviation of about 0.83 stakes, so a 95% half-width of 0.025 needs about
    # 4,300 deals (docs/scorecard.md): two policies 0.05 apart are then told apart.
    "test": MadiaoSuite(
        "test",
        26_002,
        5000,
        400,
        1000,
        "sha256:6b07b91d77da32456c430c81e33b7791d695293e908ee88f1495b0211cbcb035",
    ),
}


def check_policy_spec(spec: str) -> None:
    """Build the agent of ``spec`` once, so that a bad one is refused before any game (the search
    players, which read the env they play in, on an env of their own)."""

    if reads_env(spec, "madiao"):
        load_agent(spec, "madiao", seed=0, env=make_env())
    else:
        load_agent(spec, "madiao", seed=0)


def pin_table(seed: int, baseline: str):
    """The env the baselines' decisions are pinned on (``madiao_mao.training.scorecard.baseline_pins``),
    dealt from ``seed``: the suites' env, at the observation variant ``baseline`` reads (a record
    policy: the record)."""

    env = make_env(obs_type=_table_needed(baseline))
    env.reset(seed=seed)
    return env


def play_suite(
    under_test, suite: MadiaoSuite, cache, baselines: tuple[str, ...] = BASELINES, *, progress: bool = False
):
    """The policy's and the reference's games against each of ``baselines``; the figures and
    ratings. A baseline's games are the same whichever others are played (its seed is its place
    in ``BASELINES``)."""

    deals = suite.deals()
    # Each pairing plays at the variant its two players read (a record policy on either side: the
    # record, whose leading entries the others read); the env is read only by the players that
    # need the game they play in (search).
    tables = {"summary": make_env()}
    side_reads = {
        "policy": table_obs_type([under_test.make("madiao", seed=suite.seed, env=tables["summary"])]),
        "reference": _table_needed(REFERENCE),
    }
    played: dict[str, dict[str, PairResult]] = {"policy": {}, "reference": {}}
    sides = {"policy": (under_test.identity, under_test.spec), "reference": (None, REFERENCE)}  # cache keys
    iterator = [(index, baseline) for index, baseline in enumerate(BASELINES) if baseline in baselines]
    if progress:
        # Imported here: keeps tqdm off this module's import path.
        from tqdm import tqdm

        iterator = tqdm(iterator, desc="madiao baselines", unit="baseline")
    for index, baseline in iterator:
        subset = deals[: suite.deals_against(baseline)]
        baseline_reads = _table_needed(baseline)
        for side in ("policy", "reference"):
            obs_type = "record" if "record" in (side_reads[side], baseline_reads) else "summary"
            if obs_type not in tables:
                tables[obs_type] = make_env(obs_type=obs_type)
            env = tables[obs_type]
            play = partial(_play_pairing, under_test, side, baseline, suite.seed, index, subset, env)
            name = f"{side}-vs-{baseline.replace(':', '-').replace('=', '')}"
            identity, seated = sides[side]
            result = cache.get_or_play(name, play, policy=identity, seats=[seated, baseline])
            played[side][baseline] = PairResult(**result)
    for env in tables.values():
        env.close()
    return _figures(played, baselines), _ratings(played, baselines)


def _table_needed(spec: str) -> str:
    """The observation variant the table of the player of ``spec`` must be: what a player that
    decides from its observation reads (``table_obs_type``); a player that reads the env it plays
    in (search) plays at either."""
    if reads_env(spec, "madiao"):
        return "summary"
    return table_obs_type([load_agent(spec, "madiao", seed=0)])


def _play_pairing(
    under_test, side: str, baseline: str, seed: int, index: int, deals: list[Deal], env
) -> dict[str, Any]:
    """The duplicate games of the policy (``side`` "policy") or the reference in one seat against
    ``baseline`` (the ``index``-th) in three, as ``PairResult`` fields. Seeds come from the
    suite's: the policy's is the same in every pairing, each baseline's its own."""

    if side == "policy":
        agent = under_test.make("madiao", seed=seed, env=env)
    else:
        agent = load_agent(REFERENCE, "madiao", seed=seed, env=env)
    opponent = load_agent(baseline, "madiao", seed=seed + 1 + index, env=env)
    return asdict(duplicate_match(agent, opponent, deals, agent_name=side, opponent_name=baseline, env=env))


def _figures(played: dict[str, dict[str, PairResult]], baselines: tuple[str, ...]):
    figures = []
    for baseline in baselines:
        pair, reference = played["policy"][baseline], played["reference"][baseline]
        for suffix, role in ROLES:
            hands = sum(1 for banker in pair.banker if role is None or banker == (role == "banker"))
            ci = {None: pair.overall, "banker": pair.as_banker, "player": pair.as_player}[role]()
            figures.append(Figure.from_ci(baseline, f"stakes_per_hand{suffix}", ci, hands))
            difference = paired_by_deal(pair, reference, role)
            figures.append(
                Figure.from_ci(baseline, f"difference_from_{REFERENCE}{suffix}", difference, hands)
            )
    return figures


def _ratings(
    played: dict[str, dict[str, PairResult]], baselines: tuple[str, ...]
) -> dict[str, dict[str, float]]:
    matches = [("policy", b, float(s)) for b in baselines for s in played["policy"][b].block_scores()]
    matches += [
        (REFERENCE, b, float(s))
        for b in baselines
        if b != REFERENCE
        for s in played["reference"][b].block_scores()
    ]
    ratings = openskill_ratings(matches, ["policy", *dict.fromkeys([*baselines, REFERENCE])])
    return {
        name: {"mu": mu, "sigma": sigma, "ordinal": ordinal} for name, (mu, sigma, ordinal) in ratings.items()
    }


def exploit_figures(evaluation: dict[str, Any]) -> list[dict[str, Any]]:
    """The exploitability proxy's figures (the evaluation of
    ``madiao_mao.training.madiao.exploit.evaluate_madiao``)."""
    hands = evaluation["hands"]
    figures = []
    for key, measure in (
        ("stakes_per_hand", "exploiter_stakes_per_hand"),
        ("gain", "exploiter_gain"),
        ("gain_as_banker", "exploiter_gain_as_banker"),
        ("gain_as_player", "exploiter_gain_as_player"),
    ):
        ci = evaluation[key]
        figures.append(
            asdict(Figure("exploiter", measure, ci["mean"], ci["low"], ci["high"], hands, ci["blocks"]))
        )
    return figures


def leaderboard_table(
    records: list[dict[str, Any]],
) -> tuple[list[str], list[tuple[dict[str, Any], list[str]]]]:
    """The leaderboard's columns (the headline against each baseline) and its rows, ranked by the
    headline against the reference (``LEADERBOARD_NOTE`` says why), each with its cells."""

    def headline(record: dict[str, Any]) -> dict[str, Figure]:
        return {f["table"]: Figure(**f) for f in record["figures"] if f["measure"] == HEADLINE}

    ranked = sorted(records, key=lambda record: (-headline(record)[REFERENCE].mean, record["policy"]))
    rows = [(record, [headline(record)[b].text() for b in BASELINES]) for record in ranked]
    return [f"vs {baseline}" for baseline in BASELINES], rows


def leaderboard_remarks(records: list[dict[str, Any]]) -> list[str]:
    """One sentence per head-to-head figure of the table that goes against its order
    (``LEADERBOARD_NOTE``): a row's policy significantly below 0 against a row ranked under it, or
    above 0 against one ranked over it. Not the figure against the row's own spec (the search
    against copies of itself, each seeded otherwise)."""
    _, ranked = leaderboard_table(records)
    rank = {record["policy"]: place for place, (record, _) in enumerate(ranked)}
    remarks = []
    for record, _ in ranked:
        for figure in (Figure(**f) for f in record["figures"]):
            if figure.measure != HEADLINE or figure.table not in rank or figure.table == record["policy"]:
                continue
            ranked_over = rank[record["policy"]] < rank[figure.table]
            if (figure.high < 0) if ranked_over else (figure.low > 0):
                remarks.append(
                    f"Against the order: `{record['policy']}` scores {figure.text()} against "
                    f"`{figure.table}`, which is ranked {'under' if ranked_over else 'over'} it."
                )
    return remarks
