"""The scorecard: one protocol for reporting a policy's strength, on fixed suites shipped with the package.

    madiao-mao scorecard model --game madiao --suite dev --out scorecards/model
    python -m madiao_mao.training.scorecard leaderboard          # docs/leaderboard.md from docs/scorecards/

    from madiao_mao.training.scorecard import score
    card = score(my_policy, suite="dev")   # Madiao; an Agent, an agent spec or a callable
    card.to_json()

A *suite* (``madiao_mao.training.madiao.scorecard.SUITES``, ``madiao_mao.training.mao.scorecard.SUITES``)
fixes every
game played: it is derived from the suite's own seed, and the checksum of what it derives is
recorded beside it, so a scorecard names exactly the games behind its figures (a suite whose
games no longer hash to its checksum is refused). The baselines, their seeds and the search
player's budget are part of the game's protocol (its scorecard module's ``PROTOCOL``, a version per
game: a change to one game's baselines leaves the other's scorecards comparable); nothing random
comes from anywhere else.

The record (:class:`Scorecard`, schema in docs/scorecard.md) holds every figure with its 95%
interval and its sample size. Everything but ``timing`` is a function of the policy, the suite
and the package: two runs write byte-equal JSON apart from ``timing``, which also names the
machine and the numerical libraries' versions (figures that involve the search have moved between
two machines: docs/scorecard.md). With a folder (``out``),
each pairing's games are kept in ``out/cache`` as they finish, so an interrupted run resumes; the
reference's games, the same for every policy, can be kept in a folder every scorecard shares
(``references``; the command's ``--reference-cache``). The game-specific parts (suites,
pairings, figures, the leaderboard's ranking and policies) live in each game's scorecard module
(its training spec's ``scorecard``: ``madiao_mao.training.madiao.scorecard``,
``madiao_mao.training.mao.scorecard``); this module holds the protocol, the record and the command.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import multiprocessing
import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Annotated, Any, Literal, NamedTuple

import numpy as np
import tyro

from cardgame_core.files import atomic_write_text
from cardgame_core.runtime import library_versions, machine_description
from cardgame_core.version import distribution_version
from madiao_mao.agents.base import Agent, act_as_batch_of_one
from madiao_mao.agents.data_files import recording_reads
from madiao_mao.agents.registry import MODEL_PREFIX, agent_names, game_agents, parse_game_agent
from madiao_mao.games import default_game, get_game
from madiao_mao.training.cli_args import (
    check_output_folder,
    load_agent,
    parse_dataclass,
    run_reporting_user_errors,
)
from madiao_mao.training.exploit import ExploitSettings, check_target, exploit
from madiao_mao.training.game_spec import game_spec, games_with
from madiao_mao.training.scorecard_figures import Figure
from madiao_mao.training.stats import markdown_table

#: The file names written in a scorecard folder.
JSON_NAME, MARKDOWN_NAME, PLOT_NAME = "scorecard.json", "scorecard.md", "scorecard.png"
#: Where the shipped agents' scorecards and the leaderboard built from them live.
SCORECARDS_DIR = Path(__file__).resolve().parent.parent / "docs" / "scorecards"
LEADERBOARD = Path(__file__).resolve().parent.parent / "docs" / "leaderboard.md"
#: Each baseline's behaviour under its game's protocol: the hash of its decisions on fixed
#: positions (``baseline_pins``), checked by ``tests/common/test_scorecard_integrity.py``.
PINS = Path(__file__).resolve().parent / "scorecard_pins.json"
#: The pinned positions: every decision of every seat, the baseline in all of them, of the games
#: each game's scorecard module deals from these seeds (``pin_table``), the first
#: ``PIN_DECISIONS`` of each game.
PIN_SEEDS, PIN_DECISIONS = (0, 1, 2), 150


def scorecard_games() -> tuple[str, ...]:
    """The registered games with a scorecard (``GameSpec.scorecard``)."""
    return games_with(lambda spec: spec.scorecard)


def game_module(game: str) -> ModuleType:
    """The module with ``game``'s suites, pairings, figures and leaderboard policies (its training
    spec's ``scorecard``)."""
    if game not in scorecard_games():
        raise ValueError(f"unknown game {game!r}; games are {', '.join(scorecard_games())}")
    return game_spec(game).scorecard()


def protocol(game: str) -> str:
    """The version of ``game``'s scorecard protocol (its scorecard module's ``PROTOCOL``)."""
    return game_module(game).PROTOCOL


def suite_checksum(payload: Any) -> str:
    """The sha256 of a suite's derived games as canonical JSON (what the checksum proves)."""
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def check_suite(suite: Any) -> None:
    """Refuse a suite whose derived games do not hash to its recorded checksum."""
    derived = suite_checksum(suite.games())
    if derived != suite.checksum:
        raise ValueError(
            f"suite {suite.name!r} derives games with checksum {derived}, not its recorded "
            f"{suite.checksum}: the games behind its figures changed"
        )


# ---- the record


@dataclass
class Scorecard:
    """Everything a scorecard reports (``to_json`` is the file ``madiao-mao scorecard`` writes)."""

    protocol: str
    game: str
    policy: str
    """The policy's label: its agent spec, or the name of an ``Agent`` or a callable."""
    suite: dict[str, Any]
    """The suite's name, checksum and parameters."""
    package_version: str
    baselines: list[str]
    figures: list[Figure]
    ratings: dict[str, dict[str, float]]
    """openskill Plackett-Luce ratings (mu, sigma, ordinal = mu - 3 sigma) of the policy (key
    ``policy``) and the agents it was compared with, from the suite's games."""
    exploit: dict[str, Any] | None = None
    """The exploitability proxy's budget and figures when asked (``exploit_steps``), else None."""
    timing: dict[str, Any] = field(default_factory=dict)
    """Seconds per pairing and in all, which pairings came from the cache, and the machine and
    library versions it ran on: the only part that changes between two runs."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1, sort_keys=True, allow_nan=False) + "\n"

    def figure(self, table: str, measure: str) -> Figure:
        for figure in self.figures:
            if figure.table == table and figure.measure == measure:
                return figure
        raise KeyError(f"no figure {measure!r} against {table!r}")

    def markdown(self) -> str:
        return scorecard_markdown(self.to_dict())


def without_timing(record: dict[str, Any]) -> dict[str, Any]:
    """A scorecard's dict without its timing fields (what two runs agree on byte for byte)."""
    return {key: value for key, value in record.items() if key != "timing"}


# ---- the policy under test


class CallablePolicy(Agent):
    """A plain function as an agent: ``fn(observation, mask) -> action`` or, with ``batched``,
    ``fn(observations, masks) -> actions``. A function on (observation, mask) decides from them
    alone, so its games are played in batches."""

    decides_from_observation = True

    def __init__(self, function: Callable[..., Any], *, batched: bool = False, name: str | None = None):
        if not callable(function):
            raise ValueError(f"a policy must be an Agent, an agent spec or a callable, got {function!r}")
        self.function = function
        self.batched = batched
        self.name = name or getattr(function, "__name__", type(function).__name__)

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        if self.batched:
            return act_as_batch_of_one(self, observation, action_mask)
        return int(self.function(observation, action_mask))

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        if not self.batched:
            return super().act_batch(observations, masks)
        masks = np.asarray(masks)
        actions = np.asarray(self.function(np.asarray(observations), masks), dtype=np.int64).reshape(-1)
        if actions.shape[0] != masks.shape[0]:
            raise ValueError(
                f"the batched policy {self.name!r} returned {actions.shape[0]} actions for "
                f"{masks.shape[0]} rows"
            )
        return np.where(masks.any(axis=1), actions, -1)


@dataclass
class PolicyUnderTest:
    """The policy a scorecard measures, made afresh (or reseeded) for every pairing, so that a
    pairing's games do not depend on which pairings ran before it in the same process (a resumed
    run plays the same games)."""

    label: str
    spec: str | None
    """The agent spec when the policy was named by one (the registry builds it, with the env it
    plays in when it needs one)."""
    agent: Agent | None
    identity: str | None
    """What the cache keys this policy's pairings by (None: not cached; a policy given as an
    object has no identity a later run could check)."""

    def make(self, game: str, *, seed: int, env=None) -> Agent:
        if self.spec is not None:
            return load_agent(self.spec, game, seed=seed, env=env)
        assert self.agent is not None
        self.agent.seed(seed)
        self.agent.reset()
        return self.agent

    def for_table(self, game: str, *, seed: int) -> Agent | str:
        """The spec when there is one (Mao's experiments build agents that need their table's env
        from specs), else the object, reseeded."""
        return self.spec if self.spec is not None else self.make(game, seed=seed)


def resolve_policy(
    policy: Agent | str | Callable[..., Any], game: str, *, batched: bool = False
) -> PolicyUnderTest:
    """The policy under test from an ``Agent``, an agent spec (``madiao_mao.agents.registry``: a name,
    ``model:PATH``, ``search:OPTIONS``), ``module:callable`` (a function or an ``Agent`` found by
    import), or a callable on (observation, mask), one decision or a batch (``batched``).
    A spec is built once here, so a bad one is refused before any game."""

    if isinstance(policy, Agent):
        return PolicyUnderTest(policy.name, None, policy, None)
    if isinstance(policy, str):
        if not policy:
            raise ValueError("the policy spec is empty")
        base = policy.split(":", 1)[0]
        if policy in agent_names(game) or policy.startswith(MODEL_PREFIX) or parse_game_agent(policy, game):
            game_module(game).check_policy_spec(policy)
            return PolicyUnderTest(policy, policy, None, policy)
        if ":" in policy and base not in agent_names(game):
            found = _import_policy(policy)
            agent = found if isinstance(found, Agent) else CallablePolicy(found, batched=batched, name=policy)
            return PolicyUnderTest(policy, None, agent, f"{policy}|{_module_hash(policy)}|batched={batched}")
        raise ValueError(
            f"unknown {game} policy {policy!r}; give an agent ({', '.join(agent_names(game))}), "
            f"{MODEL_PREFIX}PATH"
            + "".join(f", {spec.name}:OPTIONS" for spec in game_agents(game).values() if spec.takes_options)
            + " or module:callable"
        )
    agent = CallablePolicy(policy, batched=batched)
    return PolicyUnderTest(agent.name, None, agent, None)


def _import_policy(spec: str) -> Any:
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"policy {spec!r}: write module:callable")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ValueError(f"policy {spec!r}: cannot import {module_name}: {error}") from None
    found: Any = module
    for part in attribute.split("."):
        if not hasattr(found, part):
            raise ValueError(f"policy {spec!r}: {module_name} has no {attribute}")
        found = getattr(found, part)
    if not (isinstance(found, Agent) or callable(found)) or isinstance(found, type):
        raise ValueError(f"policy {spec!r} is neither an Agent nor a function on (observation, mask)")
    return found


def _module_hash(spec: str) -> str:
    module = importlib.import_module(spec.partition(":")[0])
    source = getattr(module, "__file__", None)
    return hashlib.sha256(Path(source).read_bytes()).hexdigest() if source else "builtin"


# ---- the cache of finished pairings


def playing_packages() -> tuple[str, ...]:
    """The packages whose code plays a scorecard's games (their source is in ``code_fingerprint``):
    the shared env code, the env package of each game with a scorecard, the agents and the trainer."""
    envs = tuple(get_game(name).env for name in scorecard_games())
    return ("cardgame_core", *envs, "madiao_mao.agents", "madiao_mao.training")


def code_fingerprint() -> str:
    """The sha256 of the source of ``playing_packages()`` and the versions of the libraries a record
    names (``cardgame_core.runtime.library_versions``): cached games made by other code are played
    again (an editable install keeps its version number through every edit). The data files the
    agents read (shipped models, weights) are not code: each pairing is keyed by its own seats'
    (``PairingCache.data_files``), so a new model replays only the pairings that seat it."""

    digest = hashlib.sha256()
    for package in playing_packages():
        root = Path(importlib.import_module(package).__file__).parent
        files = sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)
        for path in files:
            digest.update(path.relative_to(root.parent).as_posix().encode() + b"\0" + path.read_bytes())
    for library, found in library_versions().items():
        digest.update(f"{library}=={found}".encode())
    return "sha256:" + digest.hexdigest()


def default_reference_cache() -> Path:
    """Where the CLI keeps the reference games for every scorecard to reuse:
    ``$MADIAO_MAO_CACHE/scorecard-references``, else under ``$XDG_CACHE_HOME`` or ``~/.cache``."""

    root = os.environ.get("MADIAO_MAO_CACHE")
    if not root:
        root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "madiao-mao"
    return Path(root) / "scorecard-references"


class PairingCache:
    """Each finished pairing's games as JSON in a folder, under a key naming the protocol, the
    suite (checksum), the code that played them (``code_fingerprint``), the policy and the data
    files its seats read (``data_files``); an entry with another key is played again. The
    reference's pairings do not depend on the policy: with a ``references`` folder they are kept
    there, under the game and suite, for every scorecard to reuse. Without a folder (or for a
    policy with no identity) nothing is kept."""

    def __init__(self, folder: Path | None, key: dict[str, Any], references: Path | None = None):
        self.folder = folder
        self.references = None if references is None else references / f"{key['game']}-{key['suite']}"
        self.key = key if folder is None and references is None else {**key, "code": code_fingerprint()}
        self.hits: list[str] = []
        self.seconds: dict[str, float] = {}
        self._reads: dict[str, frozenset[Path]] = {}

    def data_files(self, seats: Sequence[str]) -> list[str]:
        """``name:sha256:DIGEST`` of each data file (``madiao_mao.agents.data_files``) the agents
        of the specs ``seats`` read when built, sorted."""
        read: set[Path] = set()
        for spec in seats:
            if spec not in self._reads:
                with recording_reads() as found:
                    game_module(self.key["game"]).check_policy_spec(spec)
                self._reads[spec] = frozenset(found)
            read |= self._reads[spec]
        return sorted(f"{p.name}:sha256:{hashlib.sha256(p.read_bytes()).hexdigest()}" for p in read)

    def get_or_play(
        self,
        name: str,
        play: Callable[[], dict[str, Any]],
        *,
        policy: str | None,
        seats: Sequence[str | None] = (),
    ) -> dict[str, Any]:
        """The cached result of pairing ``name``, else ``play()``'s, stored. ``policy``: the
        identity of the policy that plays in it (None for the references, which are the same
        for every policy). ``seats``: the agent specs seated in it, the policy's among them when
        it is one (None: a policy given as an object, whose identity stands for it)."""
        reference = name.startswith("reference")
        folder = self.references if reference and self.references is not None else self.folder
        path = None if folder is None else folder / f"{name}.json"
        cacheable = path is not None and (policy is not None or reference)
        key = {**self.key, "policy": policy}
        if cacheable:
            key["data"] = self.data_files([spec for spec in seats if spec is not None])
        if cacheable and path.is_file():
            try:
                stored = json.loads(path.read_text())
            except ValueError:
                stored = None
            if isinstance(stored, dict) and stored.get("key") == key:
                self.hits.append(name)
                self.seconds[name] = stored["seconds"]
                return stored["result"]
        started = time.perf_counter()
        result = play()
        self.seconds[name] = time.perf_counter() - started
        if cacheable:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(path, json.dumps({"key": key, "seconds": self.seconds[name], "result": result}))
        return result


# ---- the API


def score(
    policy: Agent | str | Callable[..., Any],
    *,
    game: str = default_game(),
    suite: str = "dev",
    exploit_steps: int | None = None,
    batched: bool = False,
    baselines: Sequence[str] | None = None,
    out: str | Path | None = None,
    references: str | Path | None = None,
    progress: bool = False,
) -> Scorecard:
    """The scorecard of ``policy`` on a shipped suite: the same record ``madiao-mao scorecard``
    writes. ``policy``: an ``Agent``, an agent spec (``heuristic``, ``model:PATH``, ...,
    ``module:callable``) or a function of (observation, action mask) returning an action
    (``batched=True``: of a batch of observations and masks, returning one action per row).
    ``exploit_steps``: also train an exploiter for that many learner steps (a spec only).
    ``baselines``: play only these of the game's baselines (a partial scorecard for quick checks,
    with the same figures against them as the whole one; the leaderboard takes whole ones only).
    ``out``: keep each pairing's games in ``out/cache`` (a rerun resumes from them).
    ``references``: keep the reference's games in this folder instead, shared by every scorecard
    that names it (the CLI's default: ``default_reference_cache()``)."""
    module = game_module(game)
    chosen = _suite(module, game, suite)
    played = chosen_baselines(module, game, baselines)
    if exploit_steps is not None:
        _check_exploit(policy, game, exploit_steps)
    under_test = resolve_policy(policy, game, batched=batched)
    cache = PairingCache(
        None if out is None else Path(out) / "cache",
        {"protocol": module.PROTOCOL, "game": game, "suite": chosen.name, "checksum": chosen.checksum},
        None if references is None else Path(references),
    )
    started = time.perf_counter()
    figures, ratings = module.play_suite(under_test, chosen, cache, played, progress=progress)
    exploit_record = None
    if exploit_steps is not None:
        exploit_record = _exploit(under_test, module, chosen, exploit_steps, out, cache)
    return Scorecard(
        protocol=module.PROTOCOL,
        game=game,
        policy=under_test.label,
        suite=chosen.describe(),
        package_version=distribution_version(),
        baselines=list(played),
        figures=figures,
        ratings=ratings,
        exploit=exploit_record,
        timing={
            "pairing_seconds": dict(sorted(cache.seconds.items())),
            "cached_pairings": sorted(cache.hits),
            "total_seconds": time.perf_counter() - started,
            "machine": machine_description(),
            "libraries": library_versions(),
        },
    )


def _suite(module: ModuleType, game: str, name: str):
    if name not in module.SUITES:
        raise ValueError(f"unknown {game} suite {name!r}; suites are {', '.join(module.SUITES)}")
    suite = module.SUITES[name]
    check_suite(suite)
    return suite


def chosen_baselines(module: ModuleType, game: str, names: Sequence[str] | None) -> tuple[str, ...]:
    """The baselines to play, in the protocol's order: all of them (``names`` None) or the named
    ones, each one of the game's baselines, named once."""
    if names is None:
        return tuple(module.BASELINES)
    names = [names] if isinstance(names, str) else list(names)
    unknown = [name for name in names if name not in module.BASELINES]
    if unknown or not names or len(set(names)) != len(names):
        problem = f"unknown {unknown[0]!r}" if unknown else "none" if not names else "one named twice"
        raise ValueError(
            f"{game} baselines: {problem}; name one or more of {', '.join(module.BASELINES)}, each once"
        )
    return tuple(name for name in module.BASELINES if name in names)


def _check_exploit(policy: Any, game: str, steps: int) -> None:
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"exploit_steps must be a positive integer, got {steps!r}")
    if not isinstance(policy, str):
        raise ValueError(
            "the exploitability proxy trains against a policy named by an agent spec or model:PATH"
        )

    check_target(policy, game)


def _exploit(
    under_test: PolicyUnderTest, module: ModuleType, suite, steps: int, out, cache
) -> dict[str, Any]:
    """The exploitability proxy at ``steps`` learner steps, scored on the suite's exploit deals."""

    folder = Path(out) / "exploit" if out is not None else Path("runs")

    def play() -> dict[str, Any]:
        settings = ExploitSettings(
            under_test.spec, game=suite.game, steps=steps, deals=suite.exploit_deals, seed=suite.seed,
            out=str(folder),
        )  # fmt: skip
        evaluation = exploit(settings, say=lambda *_: None)["evaluation"]
        return {key: value for key, value in evaluation.items() if key != "seconds"}

    evaluation = cache.get_or_play(
        f"exploit-{steps}", play, policy=under_test.identity, seats=[under_test.spec]
    )
    return {"steps": steps, "deals": suite.exploit_deals, "figures": module.exploit_figures(evaluation)}


# ---- the report


def scorecard_markdown(record: dict[str, Any]) -> str:
    """The scorecard as markdown: the suite, a table of every figure and the ratings."""
    module = game_module(record["game"])
    suite = record["suite"]
    lines = [
        f"# Scorecard: `{record['policy']}` ({record['game']}, suite `{suite['name']}`)",
        "",
        f"Protocol `{record['protocol']}`, suite checksum `{suite['checksum']}`, package "
        f"{record['package_version']}. {module.SETUP} 95% intervals; n: {module.SAMPLE_UNITS}.",
        "",
    ]
    figures = [Figure(**f) for f in record["figures"]]
    tables = list(dict.fromkeys(f.table for f in figures))
    measures = list(dict.fromkeys(f.measure for f in figures))
    rows = []
    for measure in measures:
        row: list[object] = [measure]
        for table in tables:
            found = [f for f in figures if f.table == table and f.measure == measure]
            row.append(
                f"{found[0].text(signed=measure not in module.RATES)} (n={found[0].n})" if found else ""
            )
        rows.append(row)
    lines += [markdown_table(["measure", *(f"vs {t}" for t in tables)], rows), ""]
    ratings = sorted(record["ratings"].items(), key=lambda kv: -kv[1]["ordinal"])
    rating_rows = [
        [name, f"{r['mu']:.2f}", f"{r['sigma']:.2f}", f"{r['ordinal']:.2f}"] for name, r in ratings
    ]
    lines += [
        "## Ratings (openskill Plackett-Luce)",
        "",
        markdown_table(["agent", "mu", "sigma", "ordinal"], rating_rows),
        "",
    ]
    if record["exploit"] is not None:
        exploit = record["exploit"]
        lines += [
            f"## Exploitability proxy ({exploit['steps']:,} learner steps, {exploit['deals']} deals/games)",
            "",
        ]
        lines += [
            f"- {f['measure']}: {Figure(**f).text(signed=f['measure'] not in module.RATES)} (n={f['n']})"
            for f in exploit["figures"]
        ] + [""]
    return "\n".join(lines)


def plot_scorecard(record: dict[str, Any], path: Path) -> Path:
    """The headline measure against each table, with its interval, as PNG."""
    # Imported here: keeps matplotlib off this module's import path.
    import matplotlib

    matplotlib.use("Agg")
    # Imported here: keeps matplotlib off this module's import path.
    import matplotlib.pyplot as plt

    module = game_module(record["game"])
    figures = [
        Figure(**f) for f in record["figures"] if f["measure"] == module.HEADLINE and f["mean"] is not None
    ]
    fig, ax = plt.subplots(figsize=(6, 0.5 + 0.5 * max(len(figures), 1)))
    for row, figure in enumerate(figures):
        low = figure.low if figure.low is not None else figure.mean
        high = figure.high if figure.high is not None else figure.mean
        ax.errorbar(figure.mean, row, xerr=[[figure.mean - low], [high - figure.mean]], fmt="o", capsize=4)
    ax.set_yticks(range(len(figures)), [f.table for f in figures])
    ax.axvline(0.0, color="grey", linewidth=0.5)
    ax.set_xlabel(f"{module.HEADLINE} (95% CI)")
    ax.set_title(f"{record['policy']} ({record['game']}, {record['suite']['name']})")
    fig.tight_layout()
    fig.savefig(path, dpi=100, metadata={"Software": None})
    plt.close(fig)
    return path


def write_scorecard(card: Scorecard, folder: Path) -> list[Path]:
    """``scorecard.json``, ``scorecard.md`` and ``scorecard.png`` in ``folder``."""

    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_text(folder / JSON_NAME, card.to_json())
    atomic_write_text(folder / MARKDOWN_NAME, card.markdown())
    return [folder / JSON_NAME, folder / MARKDOWN_NAME, plot_scorecard(card.to_dict(), folder / PLOT_NAME)]


def command_scorecard(args: argparse.Namespace) -> int:
    """``madiao-mao scorecard``: everything is checked (the suite, the policy, the output folder,
    an exploit target) before anything is played or written."""

    module = game_module(args.game)
    _suite(module, args.game, args.suite)
    chosen_baselines(module, args.game, args.baselines)
    out = args.out or f"scorecards/{args.game}-{args.suite}-{re.sub(r'[^A-Za-z0-9_.=-]+', '-', args.policy)}"
    check_output_folder(out, "--out")
    references = args.reference_cache or str(default_reference_cache())
    check_output_folder(references, "--reference-cache")
    if args.exploit_steps is not None:
        _check_exploit(args.policy, args.game, args.exploit_steps)
    resolve_policy(args.policy, args.game, batched=args.batched)
    card = score(
        args.policy, game=args.game, suite=args.suite, exploit_steps=args.exploit_steps, batched=args.batched,
        baselines=args.baselines, out=out, references=references, progress=not args.no_progress,
    )  # fmt: skip
    print(card.markdown())
    print("wrote " + ", ".join(str(p) for p in write_scorecard(card, Path(out))))
    return 0


# ---- the leaderboard


def leaderboard_markdown(folder: Path | None = None) -> str:
    """docs/leaderboard.md from the scorecard JSON files in ``folder`` (default: the shipped ones,
    ``SCORECARDS_DIR``): a table per game and suite, a row per policy (ranked as the game's module
    says, ``leaderboard_table``) and the command that reproduces it, then the module's
    ``leaderboard_remarks`` on the table. A partial scorecard (not every baseline played) is
    refused."""
    folder = SCORECARDS_DIR if folder is None else folder
    records = [json.loads(path.read_text()) for path in sorted(folder.glob("*.json"))]
    if not records:
        raise ValueError(f"no scorecards in {folder}")
    lines = [
        "# Leaderboard",
        "",
        "Generated by `python -m madiao_mao.training.scorecard leaderboard` from the scorecards in "
        "[`scorecards/`](scorecards/) (do not edit by hand; `tests/common/test_scorecard.py` checks "
        "that it matches them). How to read and cite a scorecard: [`scorecard.md`](scorecard.md).",
        "",
    ]
    for game in scorecard_games():
        ours = [r for r in records if r["game"] == game]
        if not ours:
            continue
        module = game_module(game)
        for record in ours:
            if record["baselines"] != list(module.BASELINES):
                raise ValueError(
                    f"the {game} scorecard of {record['policy']!r} played {record['baselines']}, not every "
                    f"baseline ({', '.join(module.BASELINES)}): a partial scorecard has no row"
                )
        lines += [f"## {game.capitalize()}", "", module.LEADERBOARD_NOTE, ""]
        # One table per suite: rows measured on other games do not rank against each other.
        for suite in [name for name in module.SUITES if any(r["suite"]["name"] == name for r in ours)]:
            on_suite = [r for r in ours if r["suite"]["name"] == suite]
            described = sorted({(r["suite"]["checksum"], r["protocol"]) for r in on_suite})
            lines += [f"### Suite `{suite}`", ""]
            lines += [f"Checksum {checksum}, protocol `{protocol}`." for checksum, protocol in described]
            header, ranked = module.leaderboard_table(on_suite)
            rows = [
                [
                    f"`{record['policy']}`",
                    *cells,
                    f"`madiao-mao scorecard {record['policy']} --game {game} --suite {suite}`",
                ]
                for record, cells in ranked
            ]
            lines += ["", markdown_table(["policy", *header, "reproduce"], rows), ""]
            remarks = module.leaderboard_remarks(on_suite)
            lines += [*remarks, ""] if remarks else []
    return "\n".join(lines)


# ---- the baselines' pins


def baseline_decisions_hash(
    game: str, baseline: str, seeds: Sequence[int] = PIN_SEEDS, per_game: int = PIN_DECISIONS
) -> str:
    """The sha256 of ``baseline``'s decisions on the pinned positions (``PIN_SEEDS``,
    ``PIN_DECISIONS``; with a search's values): one instance per seat, seeded from the game's
    seed and the seat. ``seeds`` and ``per_game``: other games, or more of each (the
    ``decisions`` command, to compare two machines or library versions on more positions)."""

    module = game_module(game)
    decisions = []
    for seed in seeds:
        env = module.pin_table(seed, baseline)
        players = [
            load_agent(baseline, game, seed=seed * 100 + seat, env=env) for seat in range(len(env.agents))
        ]
        for player in players:
            player.reset()
        made: list[Any] = []
        while env.agents and sum(isinstance(entry, int) for entry in made) < per_game:
            if env.terminations[env.agent_selection] or env.truncations[env.agent_selection]:
                env.step(None)  # a seat's exit from the ended game (PettingZoo's dead step)
                continue
            seen = env.observe(env.agent_selection)
            seat = env.possible_agents.index(env.agent_selection)
            action = int(players[seat].act(seen["observation"], seen["action_mask"]))
            made.append(action)
            # A search's values per candidate too: a change in what it samples shows even where
            # its choice stays the same.
            searched = getattr(players[seat], "last_decision", None)
            if searched is not None:
                made.append([round(float(value), 6) for value in searched.values])
            env.step(action)
        env.close()
        decisions.append(made)
    return "sha256:" + hashlib.sha256(json.dumps(decisions).encode()).hexdigest()


def baseline_pins() -> dict[str, Any]:
    """Every scorecard baseline's decisions hash, by game, under the game's protocol (``PINS``'s
    content)."""
    return {
        "protocols": {game: protocol(game) for game in scorecard_games()},
        "pins": {
            game: {
                baseline: baseline_decisions_hash(game, baseline) for baseline in game_module(game).BASELINES
            }
            for game in scorecard_games()
        },
    }


def check_baseline_pin(game: str, baseline: str) -> None:
    """Refuse a baseline that decides otherwise than its pin: the game's scorecards made under
    its protocol would no longer compare with new ones."""
    stored = json.loads(PINS.read_text())
    current = protocol(game)
    pinned_protocol = stored["protocols"].get(game)
    if pinned_protocol != current:
        raise ValueError(
            f"{PINS.name} pins the {game} baselines of {pinned_protocol}, not {current}: run "
            "python -m madiao_mao.training.scorecard pins"
        )
    pinned = stored["pins"].get(game, {}).get(baseline)
    found = baseline_decisions_hash(game, baseline)
    if found != pinned:
        raise ValueError(
            f"the {game} baseline {baseline!r} decides otherwise than under protocol {current} "
            f"(decisions {found}, pinned {pinned}): {game} scorecards made before no longer compare with "
            f"new ones. Bump PROTOCOL in training/{game}/scorecard.py, regenerate its files in "
            "docs/scorecards/ and docs/leaderboard.md (docs/scorecard.md, Regenerating), then the pins: "
            "python -m madiao_mao.training.scorecard pins"
        )


# ---- making the shipped scorecards again


def shipped_scorecards(game: str, folder: Path | None = None) -> list[tuple[Path, dict[str, Any]]]:
    """The scorecard files of ``game`` in ``folder`` (default: the shipped ones, ``SCORECARDS_DIR``),
    each with its record as read."""
    found = sorted((SCORECARDS_DIR if folder is None else folder).glob("*.json"))
    records = [(path, json.loads(path.read_text())) for path in found]
    return [(path, record) for path, record in records if record["game"] == game]


class _Remake(NamedTuple):
    """A shipped scorecard to make again: its file and what it names."""

    path: Path
    policy: str
    suite: str
    seconds: float  # what it took last time (the longest start first)


def _rescore(game: str, policy: str, suite: str, out: str, references: str) -> str:
    """One scorecard made again, as its JSON (a worker's task: plain arguments, text back)."""
    return score(policy, game=game, suite=suite, out=out, references=references).to_json()


def regenerate_scorecards(
    game: str,
    *,
    jobs: int = 1,
    work: Path | None = None,
    folder: Path | None = None,
    say: Callable[[str], None] = print,
) -> list[Path]:
    """Make every shipped scorecard of ``game`` (``shipped_scorecards``) again under its current
    protocol, each with the policy and suite it names, ``jobs`` at a time in processes of their
    own, the longest (by its recorded time) first; each file is replaced when its scorecard is
    done. ``work``: where each scorecard keeps its pairings' games (``score``'s ``out``) and the
    reference's (default: beside ``default_reference_cache()``); a rerun takes every pairing whose
    code and data files are unchanged from there, so after a new shipped model only the pairings
    that seat it are played. Refused before anything is played when a baseline decides otherwise
    than its pin (bump the protocol and run the ``pins`` command first), or for a bad file."""
    if jobs < 1:
        raise ValueError(f"--jobs must be at least 1, got {jobs}")
    module = game_module(game)
    for baseline in module.BASELINES:
        check_baseline_pin(game, baseline)
    work = default_reference_cache().parent / "regenerate" if work is None else Path(work)
    check_output_folder(str(work), "--work")
    remakes = []
    for path, record in shipped_scorecards(game, folder):
        remake = _Remake(
            path, record["policy"], record["suite"]["name"], record["timing"].get("total_seconds", 0.0)
        )
        _suite(module, game, remake.suite)
        resolve_policy(remake.policy, game)
        remakes.append(remake)
    remakes.sort(key=lambda remake: -remake.seconds)
    tasks = [(game, r.policy, r.suite, str(work / r.path.stem), str(work / "references")) for r in remakes]
    pool = None if jobs == 1 else ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"))
    results = (
        (_rescore(*task) for task in tasks) if pool is None else pool.map(_rescore, *zip(*tasks, strict=True))
    )
    written = []
    try:
        for remake, text in zip(remakes, results, strict=True):
            atomic_write_text(remake.path, text)
            say(f"wrote {remake.path.name} ({remake.policy}, suite {remake.suite})")
            written.append(remake.path)
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    return written


@dataclass
class DerivedFileOptions:
    """``leaderboard`` writes docs/leaderboard.md from the shipped scorecards; ``pins`` the
    baselines' pins (``PINS``), after a game's protocol bump; ``decisions`` prints one baseline's
    decisions hash over more games than its pin, to compare two machines or library versions;
    ``regenerate`` makes a game's shipped scorecards again (``regenerate_scorecards``), then the
    leaderboard."""

    command: tyro.conf.Positional[Literal["leaderboard", "pins", "decisions", "regenerate"]]
    """The file to make (``decisions``: the hash to print; ``regenerate``: the game's scorecards)."""
    check: Annotated[bool, tyro.conf.FlagCreatePairsOff] = False
    """``leaderboard``, ``pins``: only say whether the file is up to date (status 1 if not)."""
    game: str = default_game()
    """``decisions``: the baseline's game; ``regenerate``: the game whose scorecards are made."""
    jobs: int = 1
    """``regenerate``: scorecards made at once, each in a process of its own."""
    work: str | None = None
    """``regenerate``: the folder of the pairings' games (default: beside the reference cache)."""
    baseline: str = "search:samples=8"
    """``decisions``: the baseline (one of the game's scorecard baselines)."""
    games: int = len(PIN_SEEDS)
    """``decisions``: games dealt from seeds 0, 1, ... (the pins: the first three)."""
    per_game: int = PIN_DECISIONS
    """``decisions``: decisions hashed per game at most (a hand ends sooner)."""


#: The options each command reads besides ``--check`` (given to another command they are refused).
OPTIONS_READ = {
    "leaderboard": (),
    "pins": (),
    "decisions": ("game", "baseline", "games", "per_game"),
    "regenerate": ("game", "jobs", "work"),
}


def check_options_of_command(args: DerivedFileOptions) -> None:
    """Refuse an option the command does not read (it would be ignored): ``--check`` with
    ``decisions`` or ``regenerate``, another command's option with this one."""
    if args.check and args.command not in ("leaderboard", "pins"):
        raise ValueError(f"--check is for leaderboard and pins; {args.command} makes no such file")
    defaults = DerivedFileOptions(command=args.command)
    for name in sorted(
        {name for read in OPTIONS_READ.values() for name in read} - set(OPTIONS_READ[args.command])
    ):
        if getattr(args, name) != getattr(defaults, name):
            readers = [command for command, read in OPTIONS_READ.items() if name in read]
            who = (
                f"the {readers[0]} command reads"
                if len(readers) == 1
                else f"the {' and '.join(readers)} commands read"
            )
            raise ValueError(f"--{name.replace('_', '-')}: only {who} it, not {args.command}")


def print_decisions_hash(args: DerivedFileOptions) -> int:
    """The ``decisions`` command: a bad game, baseline or count is a ValueError naming it."""
    module = game_module(args.game)
    if args.baseline not in module.BASELINES:
        raise ValueError(
            f"--baseline {args.baseline!r} is not a {args.game} baseline; "
            f"they are {', '.join(module.BASELINES)}"
        )
    for name in ("games", "per_game"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    found = baseline_decisions_hash(args.game, args.baseline, range(args.games), args.per_game)
    print(f"{found}  {args.game} {args.baseline}, {args.games} games, at most {args.per_game} decisions each")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m madiao_mao.training.scorecard leaderboard [--check]``: write docs/leaderboard.md from the
    shipped scorecards (``--check``: only say whether the file is up to date, status 1 if not).
    ``pins [--check]``: the same for the baselines' pins (``PINS``), after a game's protocol bump.
    ``decisions --game G --baseline B --games N``: print B's decisions hash over N games.
    ``regenerate --game G [--jobs N]``: make G's shipped scorecards again, then the leaderboard."""

    prog = "python -m madiao_mao.training.scorecard"

    def run() -> int:
        args = parse_dataclass(DerivedFileOptions, sys.argv[1:] if argv is None else argv, prog=prog)
        check_options_of_command(args)
        if args.command == "decisions":
            return print_decisions_hash(args)
        if args.command == "regenerate":
            if args.work is not None and not args.work.strip():
                raise ValueError("--work is empty: give a folder, or leave it out for the default")
            regenerate_scorecards(
                args.game, jobs=args.jobs, work=None if args.work is None else Path(args.work)
            )
        if args.command == "pins":
            target, text = PINS, json.dumps(baseline_pins(), indent=1, sort_keys=True) + "\n"
        else:
            target, text = LEADERBOARD, leaderboard_markdown()
        if args.check:
            current = target.read_text() if target.is_file() else ""
            print("up to date" if current == text else f"{target.name} differs from what it is made from")
            return 0 if current == text else 1
        target.write_text(text)
        print(f"wrote {target}")
        return 0

    return run_reporting_user_errors(prog, run)


if __name__ == "__main__":
    raise SystemExit(main())
