"""MaoRuleFeatures computes, from the observation alone, what the numpy rule model of the scripted
players computes: the held cards the base rules allow, the phrases the base rules require this
turn, and the per-card summary of the recent calls."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from madiao_mao.agents.base import RandomAgent  # noqa: E402
from madiao_mao.agents.mao.beliefs import (  # noqa: E402
    KIND_BAD_CARD,
    KIND_PLAY,
    RANK,
    SUIT,
    first_suit_said,
    own_turn_judgement,
    parse_event,
    parse_observation,
    play_validity,
)
from madiao_mao.agents.mao.features import N_DERIVED, MaoRuleFeatures  # noqa: E402
from madiao_mao.agents.mao.players import BaseRulesAgent  # noqa: E402
from mao_env import cards, core  # noqa: E402
from mao_env import rules as rule_library  # noqa: E402
from mao_env.env import raw_env  # noqa: E402

N = cards.N_CARD_TYPES
P = cards.N_PHRASES
NO_RULES = np.zeros((1, rule_library.N_RULES), dtype=np.float32)


def _expected_planes(observation: np.ndarray) -> dict[str, np.ndarray]:
    view = parse_observation(observation)
    held = view.hand > 0
    playable = np.zeros(N, dtype=bool)
    if view.phase == 0:
        for card in np.flatnonzero(held):
            playable[card] = play_validity(
                NO_RULES, int(card), view.top, view.suit_to_follow, view.pending_seven
            )[0]
    events = [parse_event(row) for row in view.event_rows]
    bad = [e.card for e in events if e.kind == KIND_BAD_CARD and e.card >= 0]
    clean = [e.card for e in events if e.kind == KIND_PLAY and e.card >= 0 and e.call_bits == 0]

    def like(called: list[int]) -> np.ndarray:
        suits, ranks = {SUIT[c] for c in called}, {RANK[c] for c in called}
        return held & np.array([SUIT[c] in suits or RANK[c] in ranks for c in range(N)])

    missed = np.zeros(P, dtype=bool)
    for event in events:
        missed |= [(event.failure_bits >> p) & 1 == 1 for p in range(P)]
    return {
        "view": view,
        "playable": playable,
        "suspect": like(bad),
        "trusted": like(clean),
        "missed": missed,
    }


def test_features_match_the_numpy_rule_model_over_random_games():
    env = raw_env(4, num_rounds=2, max_steps=1500)
    extractor = MaoRuleFeatures(env.observation_space("player_0")["observation"])
    assert extractor.features_dim == env.obs_dim + N_DERIVED
    rng = np.random.default_rng(0)
    checked = {"start": 0, "speak": 0, "suspect": 0, "trusted": 0, "missed": 0, "due": 0}
    for game in range(6):
        agents = [
            BaseRulesAgent(seed=game),
            RandomAgent(seed=game),
            BaseRulesAgent(seed=game + 1),
            RandomAgent(seed=7),
        ]
        env.reset(seed=game, options={"rules": [int(rng.integers(rule_library.N_RULES))]})
        for _ in range(1500):
            observation, _, terminated, truncated, _ = env.last()
            if terminated or truncated:
                break
            obs = observation["observation"]
            features = extractor(torch.as_tensor(obs[None, :])).numpy()[0]
            assert np.array_equal(features[: core.OFF_HAND_SIZES], obs[: core.OFF_HAND_SIZES])
            derived = features[env.obs_dim :]
            playable, suspect, trusted = (derived[i * N : (i + 1) * N] > 0.5 for i in range(3))
            due, missed = derived[3 * N : 3 * N + P] > 0.5, derived[3 * N + P :] > 0.5
            expected = _expected_planes(obs)
            view = expected["view"]
            if view.phase == 0:
                assert np.array_equal(playable, expected["playable"])
                checked["start"] += 1
            assert np.array_equal(suspect, expected["suspect"])
            assert np.array_equal(trusted, expected["trusted"])
            assert np.array_equal(missed, expected["missed"])
            checked["suspect"] += suspect.any()
            checked["trusted"] += trusted.any()
            checked["missed"] += missed.any()
            base_valid = (
                view.played < 0
                or play_validity(NO_RULES, view.played, view.top, view.suit_to_follow, view.pending_seven)[0]
            )
            if view.phase == 1 and base_valid:
                judgement = own_turn_judgement(NO_RULES, view, first_suit_said(view.said, view.played))
                required = judgement.required[0]
                if view.played >= 0 and view.hand_total == 0:
                    required = required.copy()
                    required[cards.MAO] = True  # a winning play: "Mao" (mao_due, no other fault)
                assert np.array_equal(due, required), (view.played, view.hand_total, due, required)
                checked["speak"] += 1
                checked["due"] += due.any()
            seat = env.current_seat
            env.step(agents[seat].act(obs, observation["action_mask"]))
    assert all(count > 10 for count in checked.values()), checked


def test_summary_observations_have_no_event_planes():
    env = raw_env(3, obs_type="summary")
    env.reset(seed=1)
    extractor = MaoRuleFeatures(env.observation_space("player_0")["observation"])
    features = extractor(torch.as_tensor(env.observe(env.agent_selection)["observation"][None, :]))
    assert features.shape == (1, env.obs_dim + N_DERIVED)
    assert not features[0, env.obs_dim + N :].numpy()[N : 2 * N].any()  # no events: nothing trusted
    with pytest.raises(ValueError, match="not Mao observations"):
        from gymnasium import spaces

        MaoRuleFeatures(spaces.Box(0, 1, (10,), np.float32))


def test_rule_policy_feeds_the_planes_to_the_action_layer_and_round_trips(tmp_path):
    sb3_contrib = pytest.importorskip("sb3_contrib")
    from madiao_mao.agents.base import RandomAgent
    from madiao_mao.agents.learned import LearnedPolicyAgent
    from madiao_mao.agents.mao.features import MaoRulePolicy
    from madiao_mao.training.sb3.adapter import LearnerVecEnv
    from mao_env.vector import MaoVectorEnv

    venv = LearnerVecEnv(MaoVectorEnv(4, seed=0, rule_pool=[1, 2, 3]), [RandomAgent(seed=1)])
    model = sb3_contrib.MaskablePPO(
        MaoRulePolicy, venv, n_steps=16, batch_size=32, policy_kwargs={"net_arch": [32]}, device="cpu", seed=0
    )
    assert model.policy.action_net.in_features == 32 + N_DERIVED
    # The action layer reads the derived planes themselves: the last N_DERIVED latent columns.
    obs = torch.as_tensor(venv.reset())
    features = model.policy.extract_features(obs, model.policy.pi_features_extractor)
    latent = model.policy.mlp_extractor.forward_actor(features)
    assert torch.equal(latent[:, -N_DERIVED:], features[:, -N_DERIVED:])
    model.learn(128)
    model.save(tmp_path / "mao.zip")
    agent = LearnedPolicyAgent(tmp_path / "mao.zip")
    assert type(agent.model.policy).__name__ == "MaoRulePolicy"
    observations, masks = venv.reset(), venv.action_masks()
    expected, _ = model.predict(observations, action_masks=masks, deterministic=True)
    assert np.array_equal(agent.act_batch(observations, masks), expected)


def test_the_rounds_finished_count_does_not_reach_the_policy():
    # Training episodes are single rounds: a long game's round count must not move the policy.
    env = raw_env(4)
    env.reset(seed=2)
    extractor = MaoRuleFeatures(env.observation_space("player_0")["observation"])
    obs = env.observe(env.agent_selection)["observation"].copy()
    later = obs.copy()
    later[core.OFF_ROUND] = 7.0
    assert torch.equal(extractor(torch.as_tensor(obs[None])), extractor(torch.as_tensor(later[None])))
