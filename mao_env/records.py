"""Mao game records: the actions taken from a seeded reset, which replay deterministically.

A Mao game is fully determined by the env's constructor options, the reset seed, the reset's
scenario options and the actions taken, so a record stores exactly those (plain JSON)::

    {"game": "mao", "format": 1,
     "env_kwargs": {"n_players": 3, "num_rounds": 1, ...},   # raw_env options (render_mode excluded)
     "seed": 7, "options": null or {"hands": {"0": ["9D", ...]}, ...},   # reset(seed, options)
     "seats": ["you", "base", "base"],                        # who played each seat
     "actions": ["draw", "end", "play 7S", "say nice-day", ...],   # describe_action texts
     "returns": [1.0, -0.1, 0.0]}                             # total reward per seat

Replaying resets ``mao_v0.raw_env(**env_kwargs)`` with ``seed`` and ``options`` and steps the
actions in order; every state of the game (every hand, every secret rule) follows, so one record
gives every seat's view and the all-hands-open view. An action that is not legal where the record
puts it raises ``ValueError`` naming its index (the record does not belong to this rule set).

``record_game(agent_specs, seed=..., **env_kwargs)`` plays a game between registered agents and
returns its record; ``write_record``/``read_record`` store and load one (``madiao-mao serve``
writes one for every game played in the browser: ``/api/games/<id>/record``; ``madiao-mao match
--game mao``, ``play --game mao`` and ``evaluate --game mao`` write one with ``--record FILE``, and
``madiao-mao replay FILE`` prints one move by move).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from cardgame_core.files import atomic_write_json
from madiao_mao.agents.registry import make_agent
from mao_env import cards
from mao_env.env import raw_env
from mao_env.options import MaoOptions

RECORD_FORMAT = 1
#: What the terminal, replays and the web table say when a round is blocked (nothing left to take).
BLOCKED_ROUND_TEXT = "Nobody can play a card or take one: the round is blocked (no winner, no new rule)."
#: raw_env options a record carries: every game option (render_mode is a display choice, not one).
ENV_OPTION_KEYS = tuple(option.name for option in dataclasses.fields(MaoOptions))


def make_record(
    env: raw_env,
    *,
    seed: int | None,
    options: dict | None,
    seats: Sequence[str],
    actions: Sequence[str],
    returns: Sequence[float] | None = None,
) -> dict[str, Any]:
    """The record of a game played on ``env`` from ``reset(seed=seed, options=options)``."""
    env_kwargs = {key: getattr(env.options, key) for key in ENV_OPTION_KEYS}
    if len(seats) != env.n_players:
        raise ValueError(f"seats must name {env.n_players} players, got {len(seats)}")
    return {
        "game": "mao",
        "format": RECORD_FORMAT,
        "env_kwargs": env_kwargs,
        "seed": seed,
        "options": _json_options(options),
        "seats": [str(name) for name in seats],
        "actions": [str(text) for text in actions],
        "returns": [float(r) for r in (returns if returns is not None else [0.0] * env.n_players)],
    }


# raw_env stores a few options under other attribute names.


def _json_options(options: dict | None) -> dict | None:
    """Scenario options as JSON keeps them (seat keys of ``hands`` become strings)."""
    if options is None:
        return None
    result = dict(options)
    if isinstance(result.get("hands"), dict):
        result["hands"] = {str(seat): list(names) for seat, names in result["hands"].items()}
    return result


def _reset_options(options: dict | None) -> dict | None:
    """The inverse of :func:`_json_options`: seat keys back to ints for ``reset``."""
    if options is None:
        return None
    result = dict(options)
    hands = result.get("hands")
    if isinstance(hands, dict):
        converted = {}
        for seat, names in hands.items():
            if isinstance(seat, str) and seat.strip().lstrip("-").isdigit():
                seat = int(seat)
            converted[seat] = names
        result["hands"] = converted
    return result


def check_record(record: Any, source: str = "record") -> dict[str, Any]:
    """Check the shape of a record (a dict as loaded from JSON); errors name the field."""
    if not isinstance(record, dict) or record.get("game") != "mao":
        raise ValueError(f'{source} is not a Mao game record (no "game": "mao")')
    if record.get("format") != RECORD_FORMAT:
        raise ValueError(f"{source} has record format {record.get('format')!r}; expected {RECORD_FORMAT}")
    kwargs = record.get("env_kwargs")
    if not isinstance(kwargs, dict):
        raise ValueError(f"{source}: 'env_kwargs' must be an object of raw_env options")
    unknown = set(kwargs) - set(ENV_OPTION_KEYS)
    if unknown:
        raise ValueError(
            f"{source}: unknown env_kwargs {sorted(unknown)}; known: {', '.join(ENV_OPTION_KEYS)}"
        )
    seed = record.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise ValueError(f"{source}: 'seed' must be an integer or null, got {seed!r}")
    if record.get("options") is not None and not isinstance(record["options"], dict):
        raise ValueError(f"{source}: 'options' must be an object or null")
    for key in ("seats", "actions"):
        value = record.get(key)
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise ValueError(f"{source}: {key!r} must be a list of strings")
    returns = record.get("returns")
    # Optional (records of format 1 may lack it); what a replay shows of it must be one finite
    # number per seat.
    if returns is not None and (
        not isinstance(returns, list)
        or len(returns) != len(record["seats"])
        or not all(_is_finite_number(value) for value in returns)
    ):
        raise ValueError(f"{source}: 'returns' must be a list of one number per seat (a total reward each)")
    return record


def _is_finite_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def replay(record: dict[str, Any]) -> Iterator[raw_env]:
    """Yield the env after the reset and after each recorded action (the same env object, moved
    on in place: read what you need before advancing). Raises ``ValueError`` for a record whose
    options are invalid or whose actions do not replay."""
    check_record(record)
    try:
        env = raw_env(**record["env_kwargs"])
    except (TypeError, ValueError) as error:
        raise ValueError(f"record env_kwargs: {error}") from None
    if len(record["seats"]) != env.n_players:
        raise ValueError(
            f"record: 'seats' names {len(record['seats'])} players, the game has {env.n_players}"
        )
    try:
        env.reset(seed=record["seed"], options=_reset_options(record["options"]))
    except (TypeError, ValueError) as error:
        raise ValueError(f"record options: {error}") from None
    yield env
    for index, text in enumerate(record["actions"]):
        agent = env.agent_selection
        if env.terminations[agent] or env.truncations[agent]:
            raise ValueError(f"record action {index} ({text!r}) comes after the end of the game")
        try:
            action = env.action_from_text(text)
        except (TypeError, ValueError) as error:
            raise ValueError(f"record action {index}: {error}") from None
        if not env.observe(agent)["action_mask"][action]:
            raise ValueError(
                f"record action {index} ({text!r}) is not legal there: the record does not replay"
            )
        env.step(action)
        yield env


def record_game(
    agent_specs: Sequence[str], *, seed: int | None = None, options: dict | None = None, **env_kwargs: Any
) -> dict[str, Any]:
    """Play one game between registered Mao agents (one spec per seat) and return its record."""

    env = raw_env(**env_kwargs)
    if len(agent_specs) != env.n_players:
        raise ValueError(f"need one agent per seat ({env.n_players}), got {len(agent_specs)}")
    agents = [
        make_agent(spec, "mao", seed=None if seed is None else seed + seat, env=env)
        for seat, spec in enumerate(agent_specs)
    ]
    for agent in agents:
        agent.reset()
    env.reset(seed=seed, options=options)
    actions: list[str] = []
    returns = [0.0] * env.n_players
    while True:
        name = env.agent_selection
        if env.terminations[name] or env.truncations[name]:
            break
        seat = env.possible_agents.index(name)
        observation = env.observe(name)
        action = int(agents[seat].act(observation["observation"], observation["action_mask"]))
        actions.append(env.describe_action(action))
        env.step(action)
        for other, agent_name in enumerate(env.possible_agents):
            returns[other] += float(env.rewards.get(agent_name, 0.0))
    return make_record(env, seed=seed, options=options, seats=agent_specs, actions=actions, returns=returns)


def write_record(path: str | Path, record: dict[str, Any]) -> Path:
    """Write a record as JSON, atomically (a temp file, then a rename)."""
    check_record(record)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_json(path, record)
    return path


def read_record(path: str | Path) -> dict[str, Any]:
    """Load and check a Mao record; errors name what is wrong."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no game record at {path}")
    try:
        record = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise ValueError(f"{path} is not a JSON game record: {error}") from error
    return check_record(record, str(path))


def deal_fingerprint(seed: int, n_players: int) -> str:
    """A fingerprint of the shuffled cards a Mao game reset with ``seed`` at a table of
    ``n_players`` is dealt from, whatever its other options: the first round's hands, pile and
    stack are drawn from one shuffle of ``n_decks_for(n_players)`` decks (4, 5 and 6 players share
    two, so their hands overlap), and a reset's scenario cards are drawn by the same seed. Games
    or records with one fingerprint may show each other's cards."""
    n_decks = cards.n_decks_for(n_players)
    env = raw_env(n_players)
    env.reset(seed=seed)
    shuffled = env.game_view.shuffled_deck(n_decks * cards.CARDS_PER_DECK)
    return f"mao:{n_decks} decks:" + hashlib.sha256(bytes(shuffled)).hexdigest()[:32]
