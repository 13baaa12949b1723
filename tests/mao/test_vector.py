"""MaoVectorEnv: game by game against the AEC env, auto-reset, rewards of every seat, bad input,
determinism, and a short MaskablePPO run through the SB3 adapter."""

from __future__ import annotations

import numpy as np
import pytest

from cardgame_core.aec import IllegalActionError
from cardgame_core.vector import NO_ACTION
from madiao_mao.agents.base import RandomAgent
from madiao_mao.training.sb3.adapter import LearnerVecEnv
from mao_env import cards, core
from mao_env import rules as rule_library
from mao_env.env import raw_env
from mao_env.vector import MaoVectorEnv
from tests.common.helpers import maskable_ppo_returns
from tests.mao.mao_helpers import scenario


def _random_actions(rng: np.random.Generator, masks: np.ndarray, skip: float = 0.0) -> np.ndarray:
    actions = np.array([rng.choice(np.flatnonzero(mask)) for mask in masks], dtype=np.int64)
    actions[rng.random(len(actions)) < skip] = NO_ACTION
    return actions


def _check_game_against_aec(step, game: int, aec: raw_env) -> None:
    observed = aec.observe(aec.agent_selection)
    assert step.to_act[game] == aec.possible_agents.index(aec.agent_selection)
    assert np.array_equal(step.observation[game], observed["observation"])
    assert np.array_equal(step.action_mask[game], observed["action_mask"].astype(bool))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"n_players": 4, "num_rounds": 2, "max_steps": 90},
        {
            "n_players": 3,
            "mask": "rules",
            "reasons": "revealed",
            "rounds": "cambridge",
            "num_rounds": 3,
            "max_steps": 120,
        },
        {"n_players": 5, "obs_type": "summary", "rule_choice": "sampled", "num_rounds": 2, "max_steps": 150},
        {"n_players": 4, "calls": "players", "forgotten_mao_cards": 1, "num_rounds": 2, "max_steps": 200},
    ],
)
def test_games_match_the_aec_env_step_by_step(kwargs):
    assert _mirrored_play(kwargs, n_envs=6, n_steps=250) > 0


def test_every_game_of_a_batch_of_several_step_chunks_matches_the_aec_env():
    # The batched step takes its games in chunks of STEP_CHUNK (one call each): a batch that is
    # not a whole number of chunks checks every chunk's first and last game.
    n_envs = 2 * core.STEP_CHUNK + 3
    ended = _mirrored_play({"n_players": 4, "num_rounds": 1, "max_steps": 30}, n_envs=n_envs, n_steps=45)
    assert ended >= n_envs // 2  # auto-resets too


def _mirrored_play(kwargs: dict, n_envs: int, n_steps: int) -> int:
    """Random legal actions (a fifth of the games skipped each call) in the vector env and in one
    AEC env per game, every output of every call checked; returns the number of ended episodes."""
    venv = MaoVectorEnv(n_envs, seed=11, rules=[(3, 1), 20], **kwargs)
    step = venv.reset()
    aecs = []
    for game in range(n_envs):
        aec = raw_env(**kwargs)
        aec.reset(seed=int(venv.game_seeds[game]), options={"rules": [(3, 1), 20]})
        _check_game_against_aec(step, game, aec)
        aecs.append(aec)
    payoffs = np.zeros((n_envs, venv.n_players))
    rng = np.random.default_rng(5)
    ended = {"terminated": 0, "truncated": 0}
    for _ in range(n_steps):
        actions = _random_actions(rng, step.action_mask, skip=0.2)
        step = venv.step(actions)
        for game, aec in enumerate(aecs):
            if actions[game] == NO_ACTION:
                assert not step.rewards[game].any() and not step.terminated[game] | step.truncated[game]
                continue
            aec.step(int(actions[game]))
            expected = np.array([aec.rewards[agent] for agent in aec.possible_agents], dtype=np.float32)
            assert np.array_equal(step.rewards[game], expected)
            payoffs[game] += [aec.rewards[agent] for agent in aec.possible_agents]
            agent = aec.possible_agents[0]
            assert step.terminated[game] == aec.terminations[agent]
            assert step.truncated[game] == aec.truncations[agent]
            if step.terminated[game] or step.truncated[game]:
                ended["terminated" if step.terminated[game] else "truncated"] += 1
                for seat, name in enumerate(aec.possible_agents):
                    final = aec.observe(name)["observation"]
                    assert np.array_equal(step.final_observation[game, seat], final)
                np.testing.assert_allclose(step.final_payoffs[game], payoffs[game], rtol=1e-6, atol=1e-6)
                payoffs[game] = 0
                # The new episode of this game continues in the AEC env from the game's state.
                aec.set_state(venv.get_game_state(game))
            _check_game_against_aec(step, game, aec)
    return sum(ended.values())


def test_every_seat_is_paid_and_final_payoffs_include_seats_that_did_not_move_last():
    # Seat 0 plays 9C on 5H: a bad card, one penalty card (-0.1 to seat 0 only). Seat 1 then goes
    # out with 2H saying "Mao" and wins the only round: +1 to seat 1 in the ending call, and the
    # episode's payoffs still hold seat 0's penalty although seat 0 did not make the last move.
    table = {"hands": {0: ["9C", "9H"], 1: ["2H"], 2: ["2C", "3C"], 3: ["2D", "3D"]}, "pile": ["5H"]}
    aec = scenario(4, **table)
    venv = MaoVectorEnv(2, seed=0)
    venv.reset()
    venv.set_game_state(1, aec.get_state())
    untouched = venv.observe(np.zeros(2, dtype=np.int64))[0]
    texts = ["play 9C", "end", "play 2H", "say mao", "end"]
    paid = []
    for text in texts:
        action = aec.action_from_text(text)
        step = venv.step(np.array([NO_ACTION, action]))
        aec.step(action)
        assert step.rewards[1].tolist() == pytest.approx([aec.rewards[a] for a in aec.possible_agents])
        assert not step.rewards[0].any()  # the skipped game is paid nothing
        paid.append(step.rewards[1].tolist())
    assert paid[1] == pytest.approx([-0.1, 0.0, 0.0, 0.0])
    assert paid[4] == pytest.approx([0.0, 1.0, 0.0, 0.0])
    assert step.terminated.tolist() == [False, True] and aec.terminations["player_0"]
    assert step.final_payoffs[1].tolist() == pytest.approx([-0.1, 1.0, 0.0, 0.0])
    assert np.array_equal(step.final_observation[1, 0], aec.observe("player_0")["observation"])
    assert np.array_equal(venv.observe(np.zeros(2, dtype=np.int64))[0], untouched)


def test_auto_reset_keeps_the_ended_game_and_deals_a_new_one():
    venv = MaoVectorEnv(4, seed=2, max_steps=30)
    step = venv.reset()
    rng = np.random.default_rng(0)
    for _ in range(29):
        step = venv.step(_random_actions(rng, step.action_mask))
        assert not step.truncated.any()
    before = venv.observe(step.to_act)
    step = venv.step(_random_actions(rng, step.action_mask))
    assert step.truncated.all() and not step.terminated.any()
    # A fresh deal: five cards in every hand, step counter restarted, one pile card.
    assert (venv._state[3][:, core.S_STEP] == 0).all() and (venv._state[3][:, core.S_PILE_SIZE] == 1).all()
    assert (step.observation[:, core.OFF_HAND_SIZES : core.OFF_HAND_SIZES + 4] == 5).all()
    assert step.final_observation.shape == (4, 4, venv.obs_dim)
    assert not np.array_equal(step.final_observation[:, 0], step.observation)
    assert before.shape == (4, venv.obs_dim)


def test_observe_matches_the_aec_observation_of_every_seat():
    venv = MaoVectorEnv(3, seed=4, reasons="revealed")
    step = venv.reset()
    rng = np.random.default_rng(1)
    for _ in range(40):
        step = venv.step(_random_actions(rng, step.action_mask))
    aec = raw_env(reasons="revealed")
    for game in range(3):
        aec.set_state(venv.get_game_state(game))
        for seat in range(4):
            observed = venv.observe(np.full(3, seat))
            assert np.array_equal(observed[game], aec.observe(f"player_{seat}")["observation"])


def test_same_seed_same_games_and_copy_modes():
    def trail(copy: bool):
        venv = MaoVectorEnv(5, seed=7, copy=copy, num_rounds=2, rule_choice="sampled")
        step = venv.reset()
        rng = np.random.default_rng(3)
        out = []
        for _ in range(120):
            step = venv.step(_random_actions(rng, step.action_mask, skip=0.1))
            out.append(
                (step.observation.copy(), step.rewards.copy(), step.terminated.copy(), step.to_act.copy())
            )
        return out

    first, second = trail(True), trail(False)
    for a, b in zip(first, second, strict=True):
        for x, y in zip(a, b, strict=True):
            assert np.array_equal(x, y)
    other = MaoVectorEnv(5, seed=8).reset().observation
    assert not np.array_equal(other, MaoVectorEnv(5, seed=7).reset().observation)


def test_bad_actions_name_the_game():
    venv = MaoVectorEnv(3, seed=0)
    with pytest.raises(RuntimeError, match="reset"):
        venv.step(np.zeros(3, dtype=np.int64))
    step = venv.reset()
    illegal = np.full(3, NO_ACTION, dtype=np.int64)
    illegal[2] = cards.END_TURN  # not legal at the start of a turn
    end = cards.END_TURN
    with pytest.raises(IllegalActionError, match=rf"game 2: action {end} \(end\) is not legal for seat"):
        venv.step(illegal)
    with pytest.raises(IllegalActionError, match=r"game 1: action 500 is out of range"):
        venv.step(np.array([NO_ACTION, 500, NO_ACTION]))
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        venv.step(np.zeros(2, dtype=np.int64))
    with pytest.raises(TypeError, match="integer dtype"):
        venv.step(np.zeros(3))
    with pytest.raises(TypeError, match="numpy array"):
        venv.step([53, 53, 53])
    with pytest.raises(ValueError, match="seat 9 of game 0"):
        venv.observe(np.array([9, 0, 0]))
    assert np.array_equal(venv.step(np.full(3, NO_ACTION)).observation, step.observation)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"n_players": 9}, ValueError, "n_players must be in 2..8"),
        ({"mask": "legal"}, ValueError, "mask must be one of"),
        ({"obs_type": "full"}, ValueError, "obs_type must be one of"),
        ({"talking": 1}, TypeError, "talking must be a bool"),
        ({"render_mode": "ansi"}, TypeError, "no render_mode"),
        ({"rules": [99]}, ValueError, r"rule id must be in 0\.\.44"),
        ({"fixed_rules": [1]}, ValueError, "fixed_rules needs rule_choice='fixed'"),
        ({"colour": "red"}, TypeError, "colour"),
        ({"rule_pool": [3, 3]}, ValueError, "rule_pool lists rule 3 twice"),
        ({"rule_pool": [45]}, ValueError, r"rule_pool rule id 45 is out of range 0\.\.44"),
        ({"rule_pool": "12"}, TypeError, "rule_pool must be a sequence"),
        ({"rule_pool": [1, 2], "pool_draws": 3}, ValueError, r"pool_draws must be in 1\.\.2"),
    ],
)
def test_bad_options_raise_clear_errors(kwargs, error, message):
    with pytest.raises(error, match=message):
        MaoVectorEnv(2, **kwargs)


def test_fixed_rule_queue_is_used_in_every_episode():
    venv = MaoVectorEnv(2, seed=0, rule_choice="fixed", fixed_rules=[13, 19], num_rounds=3)
    venv.reset()
    assert (venv._state[4][:, core.QUEUE, :2] == [13, 19]).all()
    assert venv.n_actions == cards.n_actions(rule_library.N_RULES)


def test_rule_pool_draws_rules_per_episode_and_keeps_the_aec_game():
    # Every episode starts with two distinct pool rules (no author) on top of the fixed rule 20;
    # the game is the AEC env's reset with the same seed and those rules, step for step.
    pool = [0, 7, 21, 30, 38]
    kwargs = {"n_players": 3, "num_rounds": 1, "max_steps": 60}
    venv = MaoVectorEnv(8, seed=4, rules=[20], rule_pool=pool, pool_draws=2, **kwargs)
    step = venv.reset()
    drawn = set()
    aecs = []
    for game in range(venv.n_envs):
        rules = venv.game_rules(game)
        assert rules[0] == (20, -1) and len(rules) == 3
        assert all(rule in pool and author == -1 for rule, author in rules[1:])
        assert rules[1][0] != rules[2][0]
        drawn.update(rule for rule, _ in rules[1:])
        aec = raw_env(**kwargs)
        aec.reset(seed=int(venv.game_seeds[game]), options={"rules": rules})
        _check_game_against_aec(step, game, aec)
        aecs.append(aec)
    assert len(drawn) >= 4  # the draws differ between games
    rng = np.random.default_rng(9)
    restarted = 0
    for _ in range(200):
        actions = _random_actions(rng, step.action_mask)
        step = venv.step(actions)
        for game, aec in enumerate(aecs):
            aec.step(int(actions[game]))
            if step.terminated[game] or step.truncated[game]:
                restarted += 1
                rules = venv.game_rules(game)
                assert len(rules) == 3 and {rule for rule, _ in rules[1:]} <= set(pool)
                aec.set_state(venv.get_game_state(game))
            _check_game_against_aec(step, game, aec)
    assert restarted > 0
    # The same seed draws the same rules.
    again = MaoVectorEnv(8, seed=4, rules=[20], rule_pool=pool, pool_draws=2, **kwargs)
    again.reset()
    first = MaoVectorEnv(8, seed=4, rules=[20], rule_pool=pool, pool_draws=2, **kwargs)
    first.reset()
    assert [again.game_rules(g) for g in range(8)] == [first.game_rules(g) for g in range(8)]


def test_maskable_ppo_trains_on_the_learner_vec_env():
    venv = LearnerVecEnv(
        MaoVectorEnv(8, seed=0, obs_type="summary", max_steps=200), RandomAgent(seed=1), seed=0
    )
    assert maskable_ppo_returns(venv)


def test_copy_false_rows_equal_a_full_observation_at_every_step():
    # The step kernel rewrites a row's event block only when the events or the observing seat
    # changed; every row must still equal a whole observation of the seat to act, through turns,
    # auto-resets (short episodes), revealed reasons and a set_game_state.
    rng = np.random.default_rng(3)
    venv = MaoVectorEnv(6, seed=3, copy=False, max_steps=60, reasons="revealed")
    step = venv.reset()
    resets = 0
    for k in range(400):
        step = venv.step(_random_actions(rng, step.action_mask, skip=0.2))
        resets += int(step.terminated.sum() + step.truncated.sum())
        np.testing.assert_array_equal(step.observation, venv.observe(step.to_act))
        if k == 200:
            venv.set_game_state(2, venv.get_game_state(4))
            np.testing.assert_array_equal(step.observation, venv.observe(step.to_act))
    assert resets > 0
