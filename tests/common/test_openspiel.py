"""Both games as OpenSpiel games, checked with OpenSpiel's own code.

OpenSpiel's random simulation test (``pyspiel.random_sim_test``: chance, legal actions, clones,
serialization, observations, returns against rewards, game length) on both games and their
variants; a hand played through OpenSpiel against the PettingZoo env on the same deal and the same
actions (Madiao: every later deal fed from the env's own random stream; Mao: the env continued
from the OpenSpiel state); OpenSpiel's MCCFR and ``evaluate_bots`` through the example; bad
parameters and actions. Skipped only where OpenSpiel is not installed (the ``openspiel`` extra).
"""

from __future__ import annotations

import pickle
import runpy
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel", reason="OpenSpiel is not installed (the 'openspiel' extra)")

from cardgame_core.aec import seed_sequence  # noqa: E402 (after the skip)
from cardgame_core.openspiel import AgentBot  # noqa: E402
from madiao_env import cards, core, layout, madiao_v0  # noqa: E402
from madiao_env import openspiel_game as madiao_spiel  # noqa: E402
from mao_env import mao_v0  # noqa: E402
from mao_env import openspiel_game as mao_spiel  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "openspiel_madiao.py"
CHANCE = pyspiel.PlayerId.CHANCE
NAMES = cards.CARD_NAMES


def _play_randomly(state, rng: np.random.Generator, max_moves: int | None = None):
    """Chance by its distribution, players uniformly at random, to the end (or ``max_moves``)."""
    while not state.is_terminal() and (max_moves is None or state.move_number() < max_moves):
        if state.is_chance_node():
            outcomes, probabilities = zip(*state.chance_outcomes(), strict=True)
            state.apply_action(int(rng.choice(outcomes, p=probabilities)))
        else:
            state.apply_action(int(rng.choice(state.legal_actions())))
    return state


# ----------------------------------------------------------------------------- registration


def test_the_games_register_only_when_their_module_is_imported_and_name_the_extra_without_openspiel():
    script = """
import sys
import madiao_env.env, mao_env.env, madiao_env, mao_env
assert "pyspiel" not in sys.modules, "importing the envs imported OpenSpiel"
import pyspiel
assert not {"madiao", "mao"} & set(pyspiel.registered_names())
import madiao_env.openspiel_game, mao_env.openspiel_game
assert {"madiao", "mao"} <= set(pyspiel.registered_names())
for name in [n for n in sys.modules if n.endswith("openspiel_game") or n.endswith(".openspiel")]:
    del sys.modules[name]
sys.modules["pyspiel"] = None  # OpenSpiel not installed
try:
    import mao_env.openspiel_game
except ImportError as error:
    print(error)
"""
    finished = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0, finished.stderr
    assert "pip install 'madiao-mao[openspiel]'" in finished.stdout


# ----------------------------------------------------------------------------- OpenSpiel's own test


@pytest.mark.parametrize(
    ("parameters", "sims"),
    [
        pytest.param({}, 12, id="default"),
        pytest.param({"stake": 2.5, "face_up_discard": True}, 4, id="stake-face-up-discard"),
        pytest.param({"max_redeals": 0}, 4, id="no-redeals"),
        pytest.param({"max_redeals": 1}, 4, id="one-redeal"),
    ],
)
def test_madiao_passes_openspiels_random_simulation_test(parameters, sims):
    game = madiao_spiel.load_game(**parameters)
    pyspiel.random_sim_test(game, num_sims=sims, serialize=True, verbose=False)


@pytest.mark.parametrize(
    "parameters",
    [
        pytest.param({"players": 3, "max_steps": 300}, id="3-players"),
        pytest.param({"max_steps": 200, "calls": "players"}, id="players-calls"),
        pytest.param(
            {"players": 8, "max_steps": 120, "mask": "rules", "reasons": "revealed"}, id="8-players"
        ),
        pytest.param({"players": 2, "max_steps": 200, "obs_type": "summary"}, id="2-players-summary"),
    ],
)
def test_mao_passes_openspiels_random_simulation_test(parameters):
    game = mao_spiel.load_game(**parameters)
    pyspiel.random_sim_test(game, num_sims=2, serialize=True, verbose=False)


def test_the_game_strings_load_the_same_games_with_their_defaults():
    madiao = pyspiel.load_game("madiao(max_redeals=2)")
    assert madiao.get_parameters() == {"stake": 1.0, "max_redeals": 2, "face_up_discard": False}
    assert madiao.max_game_length() == 4 * 2 + 32
    mao = pyspiel.load_game("mao(players=3,max_steps=500)")
    assert (mao.num_players(), mao.max_game_length()) == (3, 500)
    assert mao.get_parameters()["seven_phrase"] == "penalty card"
    for game in (madiao, mao):
        assert str(pyspiel.load_game(str(game))) == str(game)


# ----------------------------------------------------------------------------- tensors


def test_the_tensors_are_the_projects_observation_layouts():
    madiao = madiao_spiel.load_game()
    info_state = pyspiel.IIGObservationType(perfect_recall=True)
    names = list(madiao.make_py_observer(info_state).dict)
    assert names == [piece.name for piece in layout.HISTORY_PIECES] + ["REDEALS"]
    assert list(madiao.make_py_observer().dict) == [piece.name for piece in layout.SUMMARY_PIECES]
    assert madiao.information_state_tensor_shape() == [layout.HISTORY_SIZE + 1]
    assert madiao.observation_tensor_shape() == [layout.SUMMARY_SIZE]
    mao = mao_spiel.load_game(players=3)
    assert mao.observation_tensor_shape() == [mao_v0.raw_env(3).obs_dim]
    assert mao.make_py_observer().dict["events"].shape == (8, 132)
    with pytest.raises(ValueError, match="no information state"):
        mao.make_py_observer(info_state)
    with pytest.raises(ValueError, match="own view"):
        madiao.make_py_observer(pyspiel.IIGObservationType(perfect_recall=False, public_info=False))


# ----------------------------------------------------------------------------- the same game as the env


class EngineStream:
    """The Madiao engine's random draws from a given state, made with the engine's own draw: what
    the env's kernel deals at random (a Fisher-Yates shuffle, as ``core._deal_random``; a banker is
    one draw before it), to feed OpenSpiel's chance nodes the env's own deals."""

    def __init__(self, rng_state: np.uint64) -> None:
        self.card_sets = np.zeros((1, core.N_CARD_COLS), dtype=np.uint64)
        self.card_sets[0, core.CS_RNG] = rng_state

    def below(self, n: int) -> int:
        return int(core._random_below(self.card_sets, 0, n))

    def deck(self) -> list[int]:
        deck = list(range(cards.N_CARDS))
        for i in range(cards.N_CARDS - 1, 0, -1):
            j = self.below(i + 1)
            deck[i], deck[j] = deck[j], deck[i]
        return deck


# A deck with no meld and no four lowest: dealt at reset, it draws nothing from the engine stream.
CLEAN_DECK = [NAMES[card] for card in range(cards.N_CARDS)]
PLANTED = {
    "four lowest": [cards.card_id(name) for name in ("20T", "1M", "1S", "9C")],
    "meld": [cards.card_id(name) for name in ("10000T", "9M", "9S", "0C")],
}


def _first_deck(rng: np.random.Generator, hand: int) -> list[int]:
    """A random deck; every third hand the first four cards (one seat's batch) hold the four lowest
    or the four tops (a meld), so that the first deal is replaced."""
    deck = rng.permutation(cards.N_CARDS).tolist()
    planted = (None, PLANTED["four lowest"], PLANTED["meld"])[hand % 3]
    if planted is None:
        return deck
    return planted + [card for card in deck if card not in planted]


def _play_madiao_on_both(variant: dict, hand: int, kinds: dict) -> None:
    rng = np.random.default_rng(1000 + hand)
    deck, banker = _first_deck(rng, hand), int(rng.integers(4))
    env_options = {"max_redeals": madiao_spiel.DEFAULT_MAX_REDEALS, **variant}
    envs = {
        obs_type: madiao_v0.raw_env(obs_type=obs_type, **env_options) for obs_type in ("summary", "history")
    }
    # The engine stream of reset(seed=hand): what a deck that needs no new deal leaves untouched.
    envs["summary"].reset(seed=hand, options={"deck": CLEAN_DECK, "banker": banker})
    stream = EngineStream(envs["summary"].get_state()["arrays"][0][0, core.CS_RNG])
    for env in envs.values():
        env.reset(seed=hand, options={"deck": [NAMES[card] for card in deck], "banker": banker})
    state = madiao_spiel.load_game(**variant).new_initial_state()
    for outcome in [banker, *deck[:-1]]:
        state.apply_action(outcome)
    env_returns = np.zeros(4)
    while not state.is_terminal():
        if state.is_chance_node():  # a deal the env made at random: the same one from its stream
            if state.action_to_string(CHANCE, 0).startswith("banker"):
                kinds["banker"] += 1
                state.apply_action(stream.below(4))
            kinds["deal"] += 1
            for card in stream.deck()[:-1]:
                state.apply_action(card)
            continue
        seat = state.current_player()
        agent = f"player_{seat}"
        assert envs["summary"].agent_selection == agent, (hand, str(state))
        observed = envs["summary"].observe(agent)
        view = state.agent_observation(seat)
        np.testing.assert_array_equal(view["observation"], observed["observation"])
        np.testing.assert_array_equal(view["action_mask"], observed["action_mask"])
        np.testing.assert_array_equal(state.observation_tensor(seat), observed["observation"])
        for other in range(4):  # the information state of every seat: the env's history view
            history = envs["history"].observe(f"player_{other}")["observation"]
            np.testing.assert_array_equal(state.information_state_tensor(other)[:-1], history)
        assert state.legal_actions() == np.flatnonzero(observed["action_mask"]).tolist()
        action = int(rng.choice(state.legal_actions()))
        kinds["redeal"] += action == cards.ACTION_REDEAL
        state.apply_action(action)
        for env in envs.values():
            env.step(action)
        env_returns += [envs["summary"].rewards[f"player_{s}"] for s in range(4)]
    assert all(envs["summary"].terminations.values())
    assert state.returns() == pytest.approx(env_returns.tolist())
    assert sum(state.returns()) == pytest.approx(0.0)


@pytest.mark.parametrize(
    ("variant", "hands"),
    [
        pytest.param({}, 18, id="default"),
        pytest.param({"stake": 2.5, "face_up_discard": True}, 9, id="stake-face-up-discard"),
        pytest.param({"max_redeals": 1}, 9, id="one-redeal"),
    ],
)
def test_a_madiao_hand_through_openspiel_is_the_envs_hand(variant, hands):
    # Same deal, same banker, same actions, and every later deal (redeals, the deal after the four
    # lowest or a meld) the env's own: the same seats act with the same masks and observations,
    # and the returns are the env's rewards.
    kinds = {"deal": 0, "banker": 0, "redeal": 0}
    for hand in range(hands):
        _play_madiao_on_both(variant, hand, kinds)
    assert kinds["deal"] > kinds["banker"] > 0, kinds  # replaced deals, with and without a banker
    assert kinds["redeal"] > 0, kinds


def test_the_clean_deck_draws_nothing_and_a_planted_deck_draws_a_deal():
    game = madiao_spiel.load_game()
    for deck, chance_after in (
        (CLEAN_DECK, False),
        ([NAMES[c] for c in _first_deck(np.random.default_rng(0), 1)], True),
    ):
        state = game.new_initial_state()
        for outcome in [0, *[cards.card_id(name) for name in deck[:-1]]]:
            state.apply_action(outcome)
        assert state.is_chance_node() == chance_after
        if chance_after:  # the four lowest: the banker is drawn again, then the deck
            assert [state.action_to_string(CHANCE, seat) for seat, _ in state.chance_outcomes()] == [
                f"banker: seat {seat}" for seat in range(4)
            ]


@pytest.mark.parametrize(
    "options",
    [
        pytest.param({"n_players": 3, "max_steps": 300}, id="3-players"),
        pytest.param({"n_players": 4, "max_steps": 300, "mask": "rules", "calls": "players"}, id="calls"),
        pytest.param(
            {"n_players": 5, "max_steps": 300, "num_rounds": 2, "rule_choice": "sampled"}, id="rounds"
        ),
    ],
)
def test_a_mao_game_through_openspiel_is_the_envs_game(options):
    parameters = {("players" if key == "n_players" else key): value for key, value in options.items()}
    game = mao_spiel.load_game(**parameters)
    rng = np.random.default_rng(7)
    for _ in range(3):
        state = game.new_initial_state()
        for byte in rng.integers(256, size=mao_spiel.SEED_BYTES):
            state.apply_action(int(byte))
        env = mao_v0.raw_env(**options)
        env.reset(seed=0)
        env.set_state({**env.get_state(), "arrays": state.snapshot_arrays()})  # the env continues it
        env_returns = np.zeros(game.num_players())
        while not state.is_terminal():
            seat = state.current_player()
            agent = f"player_{seat}"
            assert env.agent_selection == agent
            observed = env.observe(agent)
            np.testing.assert_array_equal(state.observation_tensor(seat), observed["observation"])
            np.testing.assert_array_equal(
                state.agent_observation(seat)["action_mask"], observed["action_mask"]
            )
            action = int(rng.choice(state.legal_actions()))
            state.apply_action(action)
            env.step(action)
            step_rewards = [env.rewards[f"player_{s}"] for s in range(game.num_players())]
            assert state.rewards() == pytest.approx(step_rewards)
            env_returns += step_rewards
        assert all(env.terminations[a] or env.truncations[a] for a in env.agents)
        assert state.returns() == pytest.approx(env_returns.tolist())


def test_the_mao_chance_bytes_are_the_random_state_the_env_starts_from():
    # reset(seed) draws the engine's random state from the seed's generator and starts the game
    # from it: the OpenSpiel game drawing those eight bytes is that game.
    env = mao_v0.raw_env(3)
    env.reset(seed=11)
    engine_seed = int(seed_sequence(11).integers(0, 2**63 - 1))
    state = mao_spiel.load_game(players=3).new_initial_state()
    for byte in engine_seed.to_bytes(mao_spiel.SEED_BYTES, "big"):
        state.apply_action(byte)
    for key, array in env.get_state()["arrays"].items():
        np.testing.assert_array_equal(state.snapshot_arrays()[key], array, err_msg=key)


# ----------------------------------------------------------------------------- serialization, bad input


def test_a_pickled_state_continues_exactly():
    game = madiao_spiel.load_game()
    state = _play_randomly(game.new_initial_state(), np.random.default_rng(3), max_moves=60)
    copy = pickle.loads(pickle.dumps(state))
    assert str(copy) == str(state) and copy.history() == state.history()
    for continued in (state, copy):
        _play_randomly(continued, np.random.default_rng(4))
    assert copy.returns() == state.returns() and copy.history() == state.history()


def test_bad_parameters_and_actions_are_named():
    with pytest.raises(pyspiel.SpielError, match="Unknown parameter 'episode'"):
        pyspiel.load_game("madiao(episode=match)")  # OpenSpiel's own check
    with pytest.raises(ValueError, match=r"unknown game parameter\(s\) \['episode'\]"):
        madiao_spiel.MadiaoGame({"episode": "match"})
    with pytest.raises(ValueError, match="stake"):
        madiao_spiel.load_game(stake=-1.0)
    with pytest.raises(ValueError, match="max_redeals"):
        madiao_spiel.load_game(max_redeals=-1)
    with pytest.raises(ValueError, match="n_players"):
        mao_spiel.load_game(players=9)
    state = madiao_spiel.load_game().new_initial_state()
    with pytest.raises(ValueError, match="not a seat"):
        state.apply_action(7)
    state.apply_action(0)
    state.apply_action(5)
    with pytest.raises(ValueError, match="not a card left"):
        state.apply_action(5)
    state = _play_randomly(state, np.random.default_rng(0), max_moves=45)
    illegal = next(a for a in range(cards.N_ACTIONS) if a not in state.legal_actions())
    before = (str(state), state.history())
    with pytest.raises(ValueError, match="not legal now; legal actions: "):
        state.apply_action(illegal)
    assert (str(state), state.history()) == before  # nothing applied, nothing recorded
    with pytest.raises(ValueError, match=r"player must be a seat 0\.\.3, got 4"):
        state.agent_observation(4)
    with pytest.raises(ValueError, match=r"player must be a seat 0\.\.2, got -1"):
        mao_spiel.load_game(players=3).new_initial_state().agent_observation(-1)


# ----------------------------------------------------------------------------- algorithms and bots


def test_the_example_runs_mccfr_and_evaluates_against_the_heuristic():
    example = runpy.run_path(str(EXAMPLE), run_name="example")
    results = example["run"](iterations=3, hands=4, seed=1)
    again = example["run"](iterations=3, hands=4, seed=1)
    assert results == again  # seeded: the same training and the same hands
    bound = madiao_spiel.load_game().max_utility()
    assert set(results) == {"mccfr", "random"}
    assert all(abs(mean) <= bound for mean in results.values())


def test_the_projects_agents_play_as_openspiel_bots():
    from madiao_mao.agents.registry import make_agent

    game = madiao_spiel.load_game()
    bots = [AgentBot(make_agent("heuristic"), seat) for seat in range(4)]
    returns = [pyspiel.evaluate_bots(game.new_initial_state(), bots, seed) for seed in range(6)]
    assert all(sum(r) == pytest.approx(0.0) for r in returns)
    assert any(any(r) for r in returns)  # some hand paid something
    mao = mao_spiel.load_game(players=3, max_steps=200)
    mao_bots = [AgentBot(make_agent("base", "mao", seed=seat), seat) for seat in range(3)]
    assert len(pyspiel.evaluate_bots(mao.new_initial_state(), mao_bots, 0)) == 3
