"""The search player's learned leaf value (``search:value=CHECKPOINT``, issue 33): the critic of a
privileged-critic run values each play-out from the seat's next decision on, it reads the seat's
view and the imagined deal's hands, never the real table's, and a bad option is named."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sb3_contrib")

from madiao_env import madiao_v0
from madiao_env.cards import N_CARDS
from madiao_env.layout import SUMMARY_SLICES
from madiao_env.privileged import PRIVILEGED_SLICES
from madiao_mao.agents.madiao.heuristic import RoleAwareHeuristicAgent
from madiao_mao.agents.madiao.search import MadiaoSearchAgent, SearchBudget, parse_search_options
from madiao_mao.agents.registry import make_agent
from tests.common.helpers import TINY_RUN

#: The leaf value a stub critic gives every play-out (far from any payoff of a hand).
STUB_VALUE = 1000.0


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> str:
    """A run trained with a privileged critic, a few rollouts long (its checkpoint holds the critic)."""
    from madiao_mao.training.config import TrainConfig
    from madiao_mao.training.sb3 import train as sb3_train

    folder = tmp_path_factory.mktemp("privileged")
    config = TrainConfig(
        **{**TINY_RUN, "total_timesteps": 256, "runs_dir": str(folder), "torch_threads": 1},
        privileged_critic=True,
    )
    return str(sb3_train.train(config, quiet=True) / "checkpoint.zip")


def test_the_value_option_is_read_written_and_checked():
    budget = parse_search_options("samples=2,value=runs/x/checkpoint.zip")
    assert budget.value == "runs/x/checkpoint.zip"
    assert budget.label() == "samples=2,sloughs=3,policy=heuristic,value=runs/x/checkpoint.zip"
    assert "value" not in SearchBudget().label()
    with pytest.raises(ValueError, match="must be written key=value"):
        parse_search_options("value=")
    with pytest.raises(ValueError, match="value needs a play-out policy that plays move by move"):
        SearchBudget(policy="random", value="runs/x/checkpoint.zip")


def test_a_missing_or_unprivileged_value_model_is_named(tmp_path):
    from madiao_mao.agents.madiao import PRETRAINED_MODEL

    env = madiao_v0.env()
    with pytest.raises(FileNotFoundError, match="search option value: no saved model"):
        make_agent(f"search:value={tmp_path / 'none.zip'}", env=env)
    with pytest.raises(ValueError, match="has no privileged critic"):
        make_agent(f"search:value={PRETRAINED_MODEL}", env=env)
    # Oracle guiding alone: the checkpoint has the hidden cards' columns, its critic reads zeros there.
    from madiao_mao.training.config import TrainConfig
    from madiao_mao.training.fast import train as fast_train
    from tests.common.helpers import TINY_RUN

    config = TrainConfig(
        **{**TINY_RUN, "total_timesteps": 256, "oracle_guiding_steps": 128, "runs_dir": str(tmp_path)}
    )
    checkpoint = fast_train.train(config, quiet=True) / "checkpoint.zip"
    with pytest.raises(ValueError, match="has no privileged critic"):
        make_agent(f"search:value={checkpoint}", env=env)


def _first_searched_decision(env, seat: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Play the heuristic everywhere up to ``seat``'s first decision of the play with a choice."""
    heuristic = RoleAwareHeuristicAgent()
    env.reset(seed=seed)
    while True:
        seen = env.observe(env.agent_selection)
        observation, mask = np.asarray(seen["observation"]), np.asarray(seen["action_mask"])
        table = env.unwrapped.table()
        if table["phase"] == "play" and table["to_act"] == seat and mask.sum() > 1:
            return observation, mask
        env.step(heuristic.act(observation, mask))


@pytest.mark.parametrize("seat", [0, 2])
def test_the_critic_values_each_play_out_at_the_seats_next_decision(checkpoint, seat):
    env = madiao_v0.env()
    agent = MadiaoSearchAgent(env, budget=SearchBudget(samples=3, value=checkpoint), seed=1)
    seen_rows: list[tuple[np.ndarray, np.ndarray]] = []

    def stub(observations: np.ndarray, privileged: np.ndarray) -> np.ndarray:
        seen_rows.append((observations.copy(), privileged.copy()))
        return np.full(observations.shape[0], STUB_VALUE)

    agent.leaf_value.values = stub
    observation, mask = _first_searched_decision(env, seat, seed=3)
    agent.act(observation, mask)
    decision = agent.last_decision
    assert decision is not None and len(decision.candidates) > 1
    # Early in a hand no play-out ends before the seat decides again, and nothing is paid before
    # the end: every candidate is worth the leaf value alone, and every play-out reached a leaf.
    np.testing.assert_array_equal(decision.values, np.full(len(decision.candidates), STUB_VALUE))
    observations = np.concatenate([rows for rows, _ in seen_rows])
    privileged = np.concatenate([rows for _, rows in seen_rows])
    assert observations.shape[0] == 3 * len(decision.candidates)
    # Each leaf row is the seat's own view, and the imagined deal's hands are seen from its seat:
    # the hand it holds in its observation is the first of the privileged hands.
    hand = SUMMARY_SLICES["OBS_HAND"]
    own_hand = privileged[:, PRIVILEGED_SLICES["PRIV_HANDS"]][:, :N_CARDS]
    np.testing.assert_array_equal(observations[:, hand], own_hand)
    # One card fewer than now: the seat played one of its candidates, the others one each.
    held_now = observation[hand].sum()
    np.testing.assert_array_equal(observations[:, hand].sum(axis=1), held_now - 1)


def test_a_search_with_a_learned_value_plays_whole_hands_and_repeats_with_its_seed(checkpoint):
    from madiao_mao.training.madiao.evaluation import duplicate_match, make_deals

    env = madiao_v0.env()
    deals = make_deals(1, seed=9)
    spec = f"search:samples=2,value={checkpoint}"
    scores = [
        duplicate_match(make_agent(spec, env=env, seed=5), make_agent("heuristic"), deals, env=env).score
        for _ in range(2)
    ]
    assert scores[0] == scores[1]


def test_a_search_with_a_learned_value_decides_the_same_whatever_the_hidden_cards(checkpoint):
    from tests.common.test_hidden_information import decisions, pairs

    spec = f"search:samples=2,value={checkpoint}"
    for pair in pairs("madiao")[:2]:
        first = decisions(spec, "madiao", pair.first, pair.observer)
        second = decisions(spec, "madiao", pair.second, pair.observer)
        assert first == second, f"the search with a learned value decides from hidden cards at {pair.name}"
