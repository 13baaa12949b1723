"""A self-play league: members, the main agent's payoff table, PFSP sampling and ratings.

Engine-neutral (plain Python + numpy + openskill, no SB3 or torch): the SB3 trainer uses it through
``madiao_mao.training.opponents.LeagueOpponents``; another engine only needs to play the members it samples
and ``record`` the main agent's returns.

Members (``MEMBER_KINDS``):

- ``main``: the learning agent (one per league, named ``"main"``); as an opponent it is the live
  policy, i.e. plain self-play.
- ``snapshot``: a frozen copy of the main agent, with the learner step it was taken at and the file
  it was saved to (a path relative to the run folder). Past ``max_snapshots`` the oldest leaves.
- ``anchor``: a scripted agent by its ``madiao_mao.agents.registry`` name (Madiao: random, greedy, heuristic,
  search; Mao: base, bayes). The league itself accepts any name; a trainer that cannot seat an agent
  (the SB3 trainer refuses agents with a memory per game, such as Mao's bayes) says so.
- ``exploiter``: reserved for agents trained to beat the main agent (not trained yet).

Payoff table: for every member, the main agent's results in the games it played against it (the
member taking every other seat): the number of games, the sum of the main agent's returns, and a
score in [0, 1] (a game counts 1 when the main agent's return was > 0, 1/2 when it was 0, else 0).
The win rate that sampling uses is that score with a prior of ``prior_games`` pseudo-games at
``prior_score``: ``x = (score_sum + prior_score * prior_games) / (games + prior_games)``, so an
unplayed member starts at ``prior_score``.

Prioritized fictitious self-play (AlphaStar, Vinyals et al. 2019): member ``i`` is drawn with
probability ``p_i = (1 - floor) * f(x_i) / sum_j f(x_j) + floor / n``, where ``f`` is
``"hard"``: ``f(x) = (1 - x) ** power`` (the opponents the main agent loses to come most often)
or ``"variance"``: ``f(x) = x (1 - x)`` (the opponents it is evenly matched with). The ``floor``
share is spread evenly, so every member keeps at least ``floor / n`` (if every ``f`` is 0, all
members are equally likely).

Ratings: one openskill Plackett-Luce rating per member, updated from the same games (main agent
against the member: a win, a loss or a tie by the sign of its return; self-play games leave the
main agent's rating alone). ``report()`` gives one row per member for TensorBoard and markdown;
``to_dict()``/``from_dict()`` round-trip through JSON exactly (checked on the way in: a ValueError
names the bad field).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

MEMBER_KINDS = ("main", "snapshot", "anchor", "exploiter")
PFSP_WEIGHTINGS = ("hard", "variance")
MAIN = "main"
FORMAT_VERSION = 1

#: openskill's default rating of a new member (Plackett-Luce: mu 25, sigma 25/3).
DEFAULT_MU = 25.0
DEFAULT_SIGMA = 25.0 / 3.0


@dataclass
class Member:
    """One league member and the main agent's record against it."""

    name: str
    kind: str
    agent: str | None = None
    """Anchor: the ``madiao_mao.agents.registry`` name of the scripted agent."""
    path: str | None = None
    """Snapshot (or exploiter): the saved model, relative to the run folder."""
    step: int | None = None
    """Snapshot: the main agent's learner step when it was taken."""
    games: int = 0
    """Games the main agent played against this member."""
    return_sum: float = 0.0
    """Sum of the main agent's returns in those games."""
    score_sum: float = 0.0
    """Wins of the main agent there, ties counting one half."""
    mu: float = DEFAULT_MU
    sigma: float = DEFAULT_SIGMA


def _check_number(value: Any, field: str, *, minimum: float | None = None, positive: bool = False) -> float:
    if (
        isinstance(value, (bool, np.bool_))
        or not isinstance(value, (int, float, np.integer, np.floating))
        or not math.isfinite(value)
    ):
        raise ValueError(f"{field} must be a finite number, got {value!r}")
    if positive and value <= 0:
        raise ValueError(f"{field} must be > 0, got {value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{field} must be >= {minimum}, got {value!r}")
    return float(value)


def _check_int(value: Any, field: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"{field} must be an integer >= 0, got {value!r}")
    return int(value)


def _check_name(value: Any, field: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{field} must be a non-empty string, got {value!r}")
    return value


class League:
    """Members, the main agent's payoff table against each, PFSP sampling and ratings (see the
    module doc). A new league holds the main agent only; add anchors and snapshots to it."""

    def __init__(
        self,
        *,
        weighting: str = "hard",
        power: float = 2.0,
        floor: float = 0.05,
        prior_games: float = 1.0,
        prior_score: float = 0.5,
        max_snapshots: int | None = None,
    ) -> None:
        if weighting not in PFSP_WEIGHTINGS:
            raise ValueError(f"weighting must be one of {', '.join(PFSP_WEIGHTINGS)}, got {weighting!r}")
        self.weighting = weighting
        self.power = _check_number(power, "power", positive=True)
        self.floor = _check_number(floor, "floor", minimum=0.0)
        if self.floor > 1:
            raise ValueError(f"floor must be in [0, 1], got {floor!r}")
        self.prior_games = _check_number(prior_games, "prior_games", positive=True)
        self.prior_score = _check_number(prior_score, "prior_score", minimum=0.0)
        if self.prior_score > 1:
            raise ValueError(f"prior_score must be in [0, 1], got {prior_score!r}")
        if max_snapshots is not None and (
            isinstance(max_snapshots, bool) or not isinstance(max_snapshots, int) or max_snapshots < 1
        ):
            raise ValueError(f"max_snapshots must be a positive integer or None, got {max_snapshots!r}")
        self.max_snapshots = max_snapshots
        self.members: dict[str, Member] = {MAIN: Member(MAIN, "main")}
        self._model = None

    # -- members ----------------------------------------------------------------------------
    def names(self, kind: str | None = None) -> list[str]:
        """Member names in the order they joined (of one kind, if given)."""
        return [name for name, member in self.members.items() if kind is None or member.kind == kind]

    def add_anchor(self, agent: str, name: str | None = None) -> Member:
        """A scripted agent by registry name (the member is named after it unless ``name``)."""
        _check_name(agent, "agent")
        return self._add(Member(name or agent, "anchor", agent=agent))

    def add_snapshot(self, name: str, path: str, step: int) -> tuple[Member, Member | None]:
        """A frozen copy of the main agent taken at learner step ``step`` and saved to ``path``;
        returns it and the snapshot that left to make room (``max_snapshots``), if any."""
        _check_name(path, "path")
        member = self._add(Member(name, "snapshot", path=path, step=_check_int(step, "step")))
        removed = None
        snapshots = self.names("snapshot")
        if self.max_snapshots is not None and len(snapshots) > self.max_snapshots:
            removed = self.members.pop(snapshots[0])
        return member, removed

    def add_exploiter(self, name: str, path: str | None = None, step: int | None = None) -> Member:
        """Reserved: an agent trained to beat the main agent."""
        if step is not None:
            _check_int(step, "step")
        return self._add(Member(name, "exploiter", path=path, step=step))

    def remove(self, name: str) -> Member:
        if name == MAIN:
            raise ValueError("the main agent cannot leave the league")
        return self.members.pop(self._member(name).name)

    def _add(self, member: Member) -> Member:
        _check_name(member.name, "name")
        if member.name in self.members:
            raise ValueError(f"the league already has a member named {member.name!r}")
        self.members[member.name] = member
        return member

    def _member(self, name: str) -> Member:
        try:
            return self.members[name]
        except (KeyError, TypeError):
            raise ValueError(f"no league member named {name!r}; members: {', '.join(self.members)}") from None

    # -- payoffs and sampling ---------------------------------------------------------------
    def win_rate(self, name: str) -> float:
        """The main agent's score against ``name`` with the prior (see the module doc)."""
        member = self._member(name)
        return (member.score_sum + self.prior_score * self.prior_games) / (member.games + self.prior_games)

    def pfsp_weight(self, win_rate: float) -> float:
        """``f(x)`` of the configured weighting, before normalisation and the floor."""
        if self.weighting == "hard":
            return (1.0 - win_rate) ** self.power
        return win_rate * (1.0 - win_rate)

    def probabilities(self) -> dict[str, float]:
        """The probability of drawing each member (PFSP weights with the floor, summing to 1)."""
        names = list(self.members)
        raw = np.array([self.pfsp_weight(self.win_rate(name)) for name in names], dtype=np.float64)
        uniform = np.full(len(names), 1.0 / len(names))
        total = raw.sum()
        probabilities = uniform if total <= 0 else (1.0 - self.floor) * raw / total + self.floor * uniform
        return dict(zip(names, probabilities.tolist(), strict=True))

    def sample(self, rng: np.random.Generator, n: int) -> list[str]:
        """``n`` member names drawn independently by ``probabilities()`` with ``rng``."""
        _check_int(n, "n")
        probabilities = self.probabilities()
        names = list(probabilities)
        cumulative = np.cumsum(list(probabilities.values()))
        # searchsorted on the cumulative sum: one uniform per draw (rounding cannot step past the
        # last member).
        picks = np.minimum(
            np.searchsorted(cumulative, rng.random(n) * cumulative[-1], side="right"), len(names) - 1
        )
        return [names[i] for i in picks]

    def record(self, name: str, returns: Iterable[float]) -> None:
        """The main agent's returns in games against ``name`` that have finished: payoffs and
        ratings are updated game by game. Checked first: nothing changes on a bad value."""
        member = self._member(name)
        values = [_check_number(value, "returns[]") for value in returns]
        for value in values:
            # One assignment per game: an interrupt between two games leaves a consistent table.
            member.games, member.return_sum, member.score_sum = (
                member.games + 1,
                member.return_sum + value,
                member.score_sum + (1.0 if value > 0 else (0.5 if value == 0 else 0.0)),
            )
            if name != MAIN:
                self._rate(self.members[MAIN], member, value)

    #: A member's fields that its games change (``record``): its standing.
    STANDING_FIELDS = ("games", "return_sum", "score_sum", "mu", "sigma")

    def standings(self) -> tuple[tuple[Any, ...], ...]:
        """Every member's name and standing (``STANDING_FIELDS``), in member order: what a copy
        of this league that draws opponents but records no game of its own (an env worker's,
        ``madiao_mao.training.env_workers``) takes with ``set_standings`` to draw as this one."""
        return tuple(
            (name, *(getattr(member, field) for field in self.STANDING_FIELDS))
            for name, member in self.members.items()
        )

    def set_standings(self, standings: Iterable[tuple[Any, ...]]) -> None:
        """Every member's standing from another copy's ``standings()``; the members must be the
        same, in the same order (a ValueError otherwise, and nothing changes)."""
        standings = tuple(standings)
        names = [row[0] for row in standings]
        if names != list(self.members):
            raise ValueError(f"the standings are of members {names}, this league has {list(self.members)}")
        for name, *values in standings:
            member = self.members[name]
            for field, value in zip(self.STANDING_FIELDS, values, strict=True):
                setattr(member, field, value)

    def _rate(self, main: Member, other: Member, main_return: float) -> None:
        if self._model is None:
            # openskill is the train extra's: the CLI imports this module (PFSP options) without it.
            from openskill.models import PlackettLuce

            self._model = PlackettLuce()
        model = self._model
        ranks = [0, 0] if main_return == 0 else ([0, 1] if main_return > 0 else [1, 0])
        (main_rating,), (other_rating,) = model.rate(
            [[model.rating(mu=main.mu, sigma=main.sigma)], [model.rating(mu=other.mu, sigma=other.sigma)]],
            ranks=ranks,
        )
        main.mu, main.sigma = float(main_rating.mu), float(main_rating.sigma)
        other.mu, other.sigma = float(other_rating.mu), float(other_rating.sigma)

    # -- reports ----------------------------------------------------------------------------
    def report(self) -> list[dict[str, Any]]:
        """One row per member: kind, games, the main agent's mean return and score against it,
        the PFSP win rate and draw probability, and the member's rating (mu, sigma, ordinal =
        mu - 3 sigma). Mean return and score are NaN for an unplayed member."""
        probabilities = self.probabilities()
        rows = []
        for name, member in self.members.items():
            played = member.games > 0
            rows.append(
                {
                    "member": name,
                    "kind": member.kind,
                    "step": member.step,
                    "games": member.games,
                    "mean_return": member.return_sum / member.games if played else math.nan,
                    "score": member.score_sum / member.games if played else math.nan,
                    "win_rate": self.win_rate(name),
                    "probability": probabilities[name],
                    "mu": member.mu,
                    "sigma": member.sigma,
                    "ordinal": member.mu - 3.0 * member.sigma,
                }
            )
        return rows

    def markdown(self) -> str:
        """The payoff table as a markdown table (the main agent's results against each member)."""
        header = [
            "member",
            "kind",
            "games",
            "main's mean return",
            "main's score",
            "PFSP p",
            "rating mu",
            "sigma",
        ]
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        for row in self.report():
            cells = [
                row["member"] + (f" (step {row['step']})" if row["step"] is not None else ""),
                row["kind"],
                str(row["games"]),
                "n/a" if math.isnan(row["mean_return"]) else f"{row['mean_return']:+.3f}",
                "n/a" if math.isnan(row["score"]) else f"{row['score']:.3f}",
                f"{row['probability']:.3f}",
                f"{row['mu']:.2f}",
                f"{row['sigma']:.2f}",
            ]
            lines.append("| " + " | ".join(cells) + " |")
        return "\n".join(lines) + "\n"

    # -- persistence ------------------------------------------------------------------------
    def settings(self) -> dict[str, Any]:
        return {
            "weighting": self.weighting,
            "power": self.power,
            "floor": self.floor,
            "prior_games": self.prior_games,
            "prior_score": self.prior_score,
            "max_snapshots": self.max_snapshots,
        }

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data: settings and members with their payoffs and ratings."""
        return {
            "version": FORMAT_VERSION,
            "settings": self.settings(),
            "members": [asdict(member) for member in self.members.values()],
        }

    @classmethod
    def from_dict(cls, data: Any) -> League:
        """The league saved by ``to_dict``; bad data is a ValueError naming the field."""
        if not isinstance(data, dict):
            raise ValueError(f"league data must be an object, got {type(data).__name__}")
        if data.get("version") != FORMAT_VERSION:
            raise ValueError(f"league version must be {FORMAT_VERSION}, got {data.get('version')!r}")
        unknown = set(data) - {"version", "settings", "members"}
        if unknown:
            raise ValueError(f"unknown league fields: {', '.join(sorted(unknown))}")
        settings = data.get("settings")
        if not isinstance(settings, dict):
            raise ValueError(f"league settings must be an object, got {settings!r:.60}")
        known_settings = set(cls().settings())
        if set(settings) != known_settings:
            raise ValueError(
                f"league settings must have exactly the fields {', '.join(sorted(known_settings))}, "
                f"got {', '.join(sorted(settings))}"
            )
        try:
            league = cls(**settings)
        except ValueError as error:
            raise ValueError(f"league settings: {error}") from None
        members = data.get("members")
        if not isinstance(members, list) or not members:
            raise ValueError("league members must be a non-empty list")
        league.members = {}
        fields = set(Member.__dataclass_fields__)
        for index, entry in enumerate(members):
            where = f"members[{index}]"
            if not isinstance(entry, dict):
                raise ValueError(f"{where} must be an object, got {entry!r:.60}")
            if set(entry) != fields:
                raise ValueError(f"{where} must have exactly the fields {', '.join(sorted(fields))}")
            member = Member(**entry)
            league._check_member(member, where)
            if member.name in league.members:
                raise ValueError(f"{where}.name {member.name!r} appears twice")
            league.members[member.name] = member
        if league.names("main") != [MAIN]:
            raise ValueError(f"league members must hold exactly one main agent named {MAIN!r}")
        if league.max_snapshots is not None and len(league.names("snapshot")) > league.max_snapshots:
            raise ValueError(f"members holds more snapshots than max_snapshots ({league.max_snapshots})")
        return league

    @staticmethod
    def _check_member(member: Member, where: str) -> None:
        _check_name(member.name, f"{where}.name")
        if member.kind not in MEMBER_KINDS:
            raise ValueError(f"{where}.kind must be one of {', '.join(MEMBER_KINDS)}, got {member.kind!r}")
        if member.kind == "main" and member.name != MAIN:
            raise ValueError(f"{where}: the main agent must be named {MAIN!r}, got {member.name!r}")
        if member.kind == "anchor":
            _check_name(member.agent, f"{where}.agent")
        elif member.agent is not None:
            raise ValueError(f"{where}.agent is only for anchors, got {member.agent!r}")
        if member.kind == "snapshot":
            _check_name(member.path, f"{where}.path")
            _check_int(member.step, f"{where}.step")
        else:
            if member.path is not None and member.kind != "exploiter":
                raise ValueError(f"{where}.path is only for snapshots and exploiters, got {member.path!r}")
            if member.step is not None:
                _check_int(member.step, f"{where}.step")
        _check_int(member.games, f"{where}.games")
        member.return_sum = _check_number(member.return_sum, f"{where}.return_sum")
        member.score_sum = _check_number(member.score_sum, f"{where}.score_sum", minimum=0.0)
        if member.score_sum > member.games:
            raise ValueError(f"{where}.score_sum ({member.score_sum}) exceeds its games ({member.games})")
        member.mu = _check_number(member.mu, f"{where}.mu")
        member.sigma = _check_number(member.sigma, f"{where}.sigma", positive=True)
