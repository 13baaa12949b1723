"""Each layer's per-game part is a checked contract (a ``typing.Protocol`` named in
``madiao_mao.games.LAYER_CONTRACTS``): a game whose module lacks a part is refused at registration
with one line naming the part, and the generic layers read a game's parts as fields, never by
probing its module."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import pytest

from madiao_mao.games import (
    LAYER_CONTRACTS,
    LAYERS,
    Game,
    GameContractError,
    game_names,
    games,
    layer_contract,
    register_game,
    unregister_game,
)
from tests.tiny_game import GAME as TINY

REPO = Path(__file__).resolve().parents[2]


def test_every_contract_is_a_protocol_of_a_layer():
    assert set(LAYER_CONTRACTS) <= set(LAYERS)
    for layer in LAYER_CONTRACTS:
        contract = layer_contract(layer)
        assert getattr(contract, "_is_protocol", False), layer
        assert contract.__annotations__, layer


@pytest.mark.parametrize("name", ["madiao", "mao"])
def test_built_in_games_keep_their_contracts(name):
    games()[name].check()


@pytest.mark.parametrize(
    ("layer", "part"),
    [("training", "GAME_SPEC"), ("agents", "PRETRAINED_MODEL"), ("benchmarks", "SUBJECTS")],
)
def test_a_game_lacking_a_part_is_refused_at_registration(monkeypatch, layer, part):
    real = __import__(getattr(TINY, layer), fromlist=["_"])
    lacking = types.ModuleType(f"lacking_{layer}")
    lacking.__dict__.update({key: value for key, value in vars(real).items() if key != part})
    monkeypatch.setitem(sys.modules, lacking.__name__, lacking)
    game = Game(**{**vars(TINY), "name": "lacking", layer: lacking.__name__})
    with pytest.raises(GameContractError) as refused:
        register_game(game)
    message = str(refused.value)
    assert "\n" not in message and part in message and f"its {layer} module" in message
    assert "lacking" not in game_names()


def test_a_complete_game_registers():
    try:
        assert register_game(TINY) is TINY and TINY.name in game_names()
    finally:
        unregister_game(TINY.name)


#: The generic modules that read games' layers.
GENERIC_FILES = [
    *sorted((REPO / "training").glob("*.py")),
    REPO / "agents" / "registry.py",
    REPO / "agents" / "learned.py",
    REPO / "benchmarks" / "subjects.py",
]


def test_generic_code_never_probes_a_game_module_by_name():
    probe = re.compile(r"(hasattr|getattr)\([^)]*\.layer\(")
    probes = [
        f"{path}:{number}"
        for path in GENERIC_FILES
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if probe.search(line)
    ]
    assert probes == []


def test_the_compile_notice_covers_every_kernel_module_of_the_project():
    from cardgame_core.compile_notice import _is_project_kernel, project_packages

    def compiling(module: str) -> types.SimpleNamespace:
        return types.SimpleNamespace(
            data={"dispatcher": types.SimpleNamespace(py_func=types.SimpleNamespace(__module__=module))}
        )

    # Kernels of the generic layers (installed under madiao_mao) and of every game's packages.
    for module in (
        "madiao_mao.agents.madiao.heuristic",
        "madiao_mao.training.learner_games",
        "madiao_env.core",
    ):
        assert _is_project_kernel(compiling(module)), module
    assert not _is_project_kernel(compiling("my_research.kernels"))
    try:
        register_game(TINY)
        assert "tests" in project_packages()  # a registered game's own package counts
    finally:
        unregister_game(TINY.name)
    assert "tests" not in project_packages()
