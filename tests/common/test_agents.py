"""The shared agent call shape: random, learned-policy and human agents, and the registry."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from madiao_mao.agents.base import Agent, RandomAgent, legal_actions
from madiao_mao.agents.registry import make_agent


def test_random_agent_only_picks_legal_actions_and_is_seeded():
    mask = np.zeros(82, dtype=np.int8)
    mask[[3, 17, 81]] = 1
    picks = [RandomAgent(seed=5).act(None, mask) for _ in range(3)]
    assert picks[0] == picks[1] == picks[2]  # same seed, same first pick
    agent = RandomAgent(seed=1)
    drawn = {agent.act(None, mask) for _ in range(200)}
    assert drawn == {3, 17, 81}


def test_random_agent_batch_is_uniform_over_legal_actions_and_skips_idle_rows():
    masks = np.zeros((3, 5), dtype=bool)
    masks[0, [1, 4]] = True
    masks[2, :] = True
    agent = RandomAgent(seed=0)
    draws = np.array([agent.act_batch(np.zeros((3, 2)), masks) for _ in range(2000)])
    assert set(np.unique(draws[:, 0])) == {1, 4}
    assert (draws[:, 1] == -1).all()
    counts = np.bincount(draws[:, 2], minlength=5)
    assert counts.min() > 300  # roughly 400 each


def test_default_act_batch_loops_over_act_and_checks_shapes():
    class Lowest(Agent):
        def act(self, observation, action_mask):
            return int(legal_actions(action_mask)[0])

    masks = np.array([[0, 1, 1], [0, 0, 0], [1, 0, 0]], dtype=bool)
    assert Lowest().act_batch(np.zeros((3, 1)), masks).tolist() == [1, -1, 0]
    with pytest.raises(ValueError, match="batch size"):
        Lowest().act_batch(np.zeros((2, 1)), masks)
    with pytest.raises(ValueError, match="no legal action"):
        Lowest().act(None, np.zeros(3, dtype=bool))


class _MaskedToyEnv(gym.Env):
    """Four actions; only actions 1 and 2 are ever legal."""

    observation_space = gym.spaces.Box(-1, 1, (3,), np.float32)
    action_space = gym.spaces.Discrete(4)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(3, dtype=np.float32), {}

    def step(self, action):
        return np.zeros(3, dtype=np.float32), float(action == 2), True, False, {}

    def action_masks(self):
        return np.array([False, True, True, False])


def test_learned_policy_agent_loads_a_saved_model_and_respects_masks(tmp_path):
    from sb3_contrib import MaskablePPO

    from madiao_mao.agents.learned import LearnedPolicyAgent

    model = MaskablePPO(
        "MlpPolicy", _MaskedToyEnv(), n_steps=16, batch_size=16, policy_kwargs={"net_arch": [8]}
    )
    path = tmp_path / "policy.zip"
    model.save(str(path))
    agent = make_agent(f"model:{path}")
    assert isinstance(agent, LearnedPolicyAgent) and agent.name == "policy"
    mask = np.array([0, 0, 1, 0], dtype=bool)
    assert agent.act(np.zeros(3), mask) == 2
    masks = np.array([[0, 1, 0, 0], [0, 0, 0, 0], [0, 0, 1, 0]], dtype=bool)
    assert agent.act_batch(np.zeros((3, 3)), masks).tolist() == [1, -1, 2]
    with pytest.raises(ValueError, match="expects observations of length 3"):
        agent.act(np.zeros(5), mask)
    with pytest.raises(FileNotFoundError, match="no saved model"):
        LearnedPolicyAgent(tmp_path / "missing.zip")


def test_a_model_loads_on_one_torch_thread_and_leaves_the_setting_as_it_was(tmp_path, monkeypatch):
    import torch
    from sb3_contrib import MaskablePPO

    from madiao_mao.agents.learned import load_model

    path = tmp_path / "policy.zip"
    MaskablePPO("MlpPolicy", _MaskedToyEnv(), n_steps=16, batch_size=16).save(str(path))
    real_load, threads_while_loading = MaskablePPO.load, []

    def load(*args, **kwargs):
        threads_while_loading.append(torch.get_num_threads())
        return real_load(*args, **kwargs)

    monkeypatch.setattr(MaskablePPO, "load", load)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        load_model(path)
        assert threads_while_loading == [1] and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_registry_names_unknown_agents_and_games():
    with pytest.raises(ValueError, match="unknown madiao agent 'wizard'"):
        make_agent("wizard", "madiao")
    with pytest.raises(ValueError, match="unknown game 'chess'"):
        make_agent("random", "chess")
    with pytest.raises(ValueError, match="needs the env"):
        make_agent("search", "madiao")


def test_human_agent_reads_the_input_and_output_of_the_moment(monkeypatch):
    """Not those bound when its module was first imported (a test that had replaced ``input``
    then left its stand-in to every later player of the session)."""
    from madiao_mao.agents.human import HumanAgent

    agent = HumanAgent()
    mask = np.zeros(82, dtype=bool)
    mask[[5, 45]] = True
    written = []
    monkeypatch.setattr("builtins.input", lambda prompt="": "2")
    monkeypatch.setattr("builtins.print", lambda *args, **kwargs: written.append(args))
    assert agent.act(None, mask) == 45
    assert written


def test_human_agent_reads_numbers_text_and_card_names_and_reasks_on_bad_input():
    from madiao_mao.agents.human import HumanAgent, HumanQuit

    mask = np.zeros(82, dtype=bool)
    mask[[5, 45, 12 + 40]] = True  # play 4C, slough 4C, slough 2S
    lines = iter(["", "banana", "7", "play 2S", "1M", "2s"])
    written: list[str] = []
    agent = HumanAgent(read_line=lambda prompt: next(lines), write=written.append)
    assert agent.act(None, mask) == 52  # "2s" -> the only legal move with 2S: slough it
    text = "\n".join(written)
    assert "Please type a move" in text
    assert "neither a move number nor a card name" in text
    assert "There is no move 7" in text
    assert "'play 2S' is not legal now" in text
    assert "You cannot play 1M now" in text
    assert HumanAgent(read_line=lambda p: "4C", write=written.append).act(None, mask) == 5
    assert HumanAgent(read_line=lambda p: "2", write=written.append).act(None, mask) == 45

    def eof(prompt):
        raise EOFError

    with pytest.raises(HumanQuit):
        HumanAgent(read_line=eof, write=written.append).act(None, mask)
    with pytest.raises(HumanQuit):
        HumanAgent(read_line=lambda p: "quit", write=written.append).act(None, mask)
