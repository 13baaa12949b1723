"""The registry of games: the only list of the games the suite knows.

Every generic layer (the CLI, the trainer and both engines, evaluation, the exploiter, the
scorecard, the web app, the benchmarks, the agent registry) loops over this registry and never
names a game. What a layer does for one game lives in that game's own module of the layer, named by
the game's entry here and imported only when that layer needs it (so listing the games imports
neither torch nor a kernel):

- ``env``: the game package (``raw_env``, ``env``, its options, its batched env),
- ``agents``: the game's players, by spec name (``madiao_mao.agents.<game>``),
- ``training``: the game's trainer spec, evaluation and commands (``madiao_mao.training.<game>``),
- ``web``: how the web app shows and records the game (``madiao_mao_web.<game>``),
- ``benchmarks``: the game's benchmark subjects (``madiao_mao.benchmarks.<game>``).

What each layer's module must define is one ``typing.Protocol``, declared in the generic module that
reads it and named here in ``LAYER_CONTRACTS``: a module that lacks a part of its contract is
refused with one line naming the part (``GameContractError``), when the game is registered at run
time and whenever a layer's module is loaded.

A package outside this repository adds a game with one ``Game`` in the entry-point group
``madiao_mao.games`` (``name = "package.module:GAME"``), or at run time with ``register_game``.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from importlib.metadata import entry_points
from types import ModuleType

#: The entry-point group through which installed packages add games.
ENTRY_POINT_GROUP = "madiao_mao.games"

#: The layers a game provides a module for (the fields of ``Game`` that name modules).
LAYERS = ("env", "agents", "training", "web", "benchmarks")

#: Each layer's contract: the ``typing.Protocol`` (``"module:name"``) its game modules satisfy. The
#: env layer has none of its own: the generic layers reach a game's envs through its training
#: spec (``GameSpec.table_envs``, ``GameSpec.make_vector_env``).
LAYER_CONTRACTS = {
    "agents": "madiao_mao.agents.spec:AgentsModule",
    "training": "madiao_mao.training.game_spec:TrainingModule",
    "web": "madiao_mao_web.games:WebGame",
    "benchmarks": "madiao_mao.benchmarks.subjects:BenchmarksModule",
}


class GameContractError(TypeError):
    """A game's module of a layer lacks a part of that layer's contract."""


def layer_contract(layer: str) -> type | None:
    """The Protocol of ``layer`` (None for a layer without one), imported when asked."""
    reference = LAYER_CONTRACTS.get(layer)
    if reference is None:
        return None
    module, _, name = reference.partition(":")
    return getattr(importlib.import_module(module), name)


def check_layer_module(game_name: str, layer: str, module: ModuleType) -> ModuleType:
    """``module`` if it satisfies ``layer``'s contract, else a ``GameContractError`` naming the
    missing parts on one line."""
    contract = layer_contract(layer)
    if contract is None or isinstance(module, contract):
        return module
    # The one place where a game's module is probed by name: its contract's parts.
    missing = [part for part in contract.__annotations__ if not hasattr(module, part)]
    raise GameContractError(
        f"game {game_name!r}: its {layer} module {module.__name__} lacks {', '.join(missing)} "
        f"(the {layer} layer's contract, {LAYER_CONTRACTS[layer]})"
    )


@dataclass(frozen=True)
class Game:
    """One game: its name and the module of each layer that holds what is particular to it."""

    #: The name users type (``--game NAME``); lower case, a Python identifier.
    name: str
    #: How people call the game, for titles and reports.
    title: str
    env: str
    agents: str
    training: str
    web: str
    benchmarks: str

    def __post_init__(self) -> None:
        if not (isinstance(self.name, str) and self.name.isidentifier() and self.name.islower()):
            raise ValueError(f"a game's name must be a lower-case identifier, got {self.name!r}")
        for layer in LAYERS:
            if not isinstance(getattr(self, layer), str) or not getattr(self, layer):
                raise ValueError(f"game {self.name!r}: the {layer} layer must name a module")

    def layer(self, layer: str) -> ModuleType:
        """The game's module of ``layer`` (one of ``LAYERS``), imported on first use."""
        if layer not in LAYERS:
            raise ValueError(f"layer must be one of {', '.join(LAYERS)}, got {layer!r}")
        return check_layer_module(self.name, layer, importlib.import_module(getattr(self, layer)))

    def check(self) -> None:
        """Every layer's module against its contract (a ``GameContractError`` names the first part
        missing). A layer whose module cannot be imported here (an extra it needs, such as torch, is
        not installed) is checked when it is first used."""
        for layer in LAYERS:
            try:
                module = importlib.import_module(getattr(self, layer))
            except ImportError:
                continue
            check_layer_module(self.name, layer, module)


_BUILT_IN = (
    Game(
        name="madiao",
        title="Madiao (马吊)",
        env="madiao_env",
        agents="madiao_mao.agents.madiao",
        training="madiao_mao.training.madiao",
        web="madiao_mao_web.madiao",
        benchmarks="madiao_mao.benchmarks.madiao",
    ),
    Game(
        name="mao",
        title="Mao",
        env="mao_env",
        agents="madiao_mao.agents.mao",
        training="madiao_mao.training.mao",
        web="madiao_mao_web.mao",
        benchmarks="madiao_mao.benchmarks.mao",
    ),
)

_registry: dict[str, Game] = {}
_entry_points_loaded = False


def register_game(game: Game) -> Game:
    """Add ``game`` to the registry (a second game of the same name is a ValueError; a layer module
    that lacks a part of its contract is a ``GameContractError`` naming it, and nothing is added)."""
    if not isinstance(game, Game):
        raise TypeError(f"register_game takes a madiao_mao.games.Game, got {type(game).__name__}")
    _load()  # the built-in and installed games come first, whenever this is called
    if game.name in _registry and _registry[game.name] != game:
        raise ValueError(f"a game named {game.name!r} is already registered")
    game.check()
    _add(game)
    return game


def _add(game: Game) -> None:
    if game.name in _registry and _registry[game.name] != game:
        raise ValueError(f"a game named {game.name!r} is already registered")
    _registry[game.name] = game


def unregister_game(name: str) -> None:
    """Remove a game added with ``register_game`` (tests; the built-in games stay)."""
    if any(game.name == name for game in _BUILT_IN):
        raise ValueError(f"{name!r} is a built-in game")
    _registry.pop(name, None)


def _load() -> dict[str, Game]:
    global _entry_points_loaded
    if not _entry_points_loaded:
        _entry_points_loaded = True
        for game in _BUILT_IN:
            _add(game)
        for point in entry_points(group=ENTRY_POINT_GROUP):
            game = point.load()
            if not isinstance(game, Game):
                raise TypeError(f"entry point {point.value} ({ENTRY_POINT_GROUP}) is not a Game")
            _add(game)
    return _registry


def games() -> dict[str, Game]:
    """Every registered game by name, built-in games first."""
    return dict(_load())


def game_names() -> tuple[str, ...]:
    return tuple(_load())


def default_game() -> str:
    """The game a command or function plays when none is named: the first built-in one."""
    return _BUILT_IN[0].name


def get_game(name: str) -> Game:
    """The game called ``name``; an unknown name is a ValueError listing the games."""
    registry = _load()
    try:
        return registry[name]
    except (KeyError, TypeError):
        raise ValueError(f"game must be one of {', '.join(registry)}, got {name!r}") from None
