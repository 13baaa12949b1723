"""MadiaoVectorEnv against the AEC env, game by game, plus its contract and input checks.

The AEC env is the reference here: every vector game is mirrored by its own raw AEC env that gets
the same actions. The first episode of game ``i`` must be the AEC env's ``reset(seed=game_seeds[i])``
deal; after an auto-reset the mirror is loaded with ``get_game_state(i)`` (the vector env draws
later deals from the game's own random stream) and the new deal is compared again.
"""

from __future__ import annotations

import numpy as np
import pytest

from cardgame_core.aec import IllegalActionError
from madiao_env import cards, core, madiao_v0
from madiao_env.vector import MadiaoVectorEnv
from madiao_mao.agents.base import RandomAgent
from madiao_mao.training.sb3.adapter import LearnerVecEnv
from tests.common.helpers import maskable_ppo_returns
from tests.madiao.conftest import env_after_random_actions

AGENTS = [f"player_{seat}" for seat in range(4)]


def assert_matches_aec(step, game: int, aec) -> None:
    """The vector env's outputs for ``game`` equal the AEC env's view of the seat to act."""
    seat = AGENTS.index(aec.agent_selection)
    assert step.to_act[game] == seat
    observed = aec.observe(aec.agent_selection)
    np.testing.assert_array_equal(step.observation[game], observed["observation"])
    np.testing.assert_array_equal(step.action_mask[game], observed["action_mask"].astype(bool))


def mirrored_play(env_kwargs: dict, n_games: int, n_steps: int, seed: int) -> int:
    """Play random legal actions (some games skipped each call) in the vector env and in one AEC
    env per game, checking every output of every call; returns the number of finished episodes."""
    venv = MadiaoVectorEnv(n_games, seed=seed, **env_kwargs)
    step = venv.reset()
    mirrors = []
    for game in range(n_games):
        aec = madiao_v0.raw_env(**env_kwargs)
        aec.reset(seed=int(venv.game_seeds[game]))
        assert_matches_aec(step, game, aec)
        mirrors.append(aec)
    episode_sum = np.zeros((n_games, 4))
    rng = np.random.default_rng(seed)
    finished = 0
    for _ in range(n_steps):
        actions = np.array([rng.choice(np.flatnonzero(mask)) for mask in step.action_mask], dtype=np.int64)
        skipped = rng.random(n_games) < 0.2
        actions[skipped] = -1
        before = step
        step = venv.step(actions)
        assert not step.truncated.any()
        for game, aec in enumerate(mirrors):
            if skipped[game]:
                np.testing.assert_array_equal(step.observation[game], before.observation[game])
                np.testing.assert_array_equal(step.action_mask[game], before.action_mask[game])
                assert step.to_act[game] == before.to_act[game]
                assert not step.rewards[game].any() and not step.terminated[game]
                continue
            aec.step(int(actions[game]))
            aec_rewards = np.array([aec.rewards[agent] for agent in AGENTS])
            np.testing.assert_allclose(step.rewards[game], aec_rewards, rtol=1e-6)
            episode_sum[game] += aec_rewards
            ended = all(aec.terminations.values())
            assert step.terminated[game] == ended
            if not ended:
                assert_matches_aec(step, game, aec)
                continue
            finished += 1
            np.testing.assert_allclose(step.final_payoffs[game], episode_sum[game], rtol=1e-6)
            for seat, agent in enumerate(AGENTS):
                np.testing.assert_array_equal(
                    step.final_observation[game, seat], aec.observe(agent)["observation"]
                )
            episode_sum[game] = 0
            aec.set_state(venv.get_game_state(game))
            assert_matches_aec(step, game, aec)
    return finished


@pytest.mark.parametrize(
    "env_kwargs",
    [
        {},
        {"obs_type": "history", "stake": 0.5},
        {"face_up_discard": True, "max_redeals": 1},
    ],
    ids=["summary", "history-half-stake", "discard-variant"],
)
def test_games_match_the_aec_env_step_by_step(env_kwargs):
    finished = mirrored_play(env_kwargs, n_games=5, n_steps=150, seed=3)
    assert finished >= 10  # several auto-resets per game were checked


def test_every_game_of_a_batch_of_several_step_chunks_matches_the_aec_env():
    # The batched step takes its games in chunks of STEP_CHUNK (one call each): a batch that is
    # not a whole number of chunks checks every chunk's first and last game.
    n_games = 2 * core.STEP_CHUNK + 3
    assert mirrored_play({}, n_games=n_games, n_steps=50, seed=8) >= n_games // 2  # auto-resets too


def test_match_episodes_match_the_aec_env_hand_after_hand():
    # A match is several hands long: each hand's reward comes as it is settled, and the ended
    # match's final_payoffs are the sum over its hands.
    finished = mirrored_play({"episode": "match"}, n_games=3, n_steps=500, seed=5)
    assert finished >= 1


def test_terminal_rewards_reach_every_seat_and_the_game_auto_resets():
    venv = MadiaoVectorEnv(16, seed=1)
    step = venv.reset()
    rng = np.random.default_rng(1)
    checked = paid_to_others = 0
    for _ in range(120):
        movers = step.to_act.copy()
        actions = np.array([rng.choice(np.flatnonzero(mask)) for mask in step.action_mask], dtype=np.int64)
        step = venv.step(actions)
        for game in np.flatnonzero(step.terminated):
            rewards = step.rewards[game]
            # The hand is paid to all four seats in the call that ends it, whoever moved last
            # (a hand can also settle at zero for everyone, hence the count below).
            others = [seat for seat in range(4) if seat != movers[game]]
            paid_to_others += bool(np.any(rewards[others] != 0))
            assert rewards.sum() == pytest.approx(0.0, abs=1e-5)
            np.testing.assert_array_equal(step.final_payoffs[game], rewards)
            final_phase = step.final_observation[game, :, core.OBS_PHASE_AT : core.OBS_PHASE_AT + 3]
            assert (final_phase == [0, 0, 1]).all()  # every seat's last view shows the hand over
            # The returned observation is already the next deal's: 8 cards, trick 0, not over.
            assert step.observation[game, core.OBS_HAND_AT : core.OBS_HAND_AT + 40].sum() == 8
            assert step.observation[game, core.OBS_TRICK_NUMBER_AT] == 1
            assert step.observation[game, core.OBS_PHASE_AT + 2] == 0
            assert step.action_mask[game].any()
            checked += 1
        assert not step.terminated[np.flatnonzero(~step.terminated)].any()
    assert checked >= 16 and paid_to_others >= checked // 2


def test_observe_gives_each_seats_view_and_copy_false_shares_buffers():
    venv = MadiaoVectorEnv(4, seed=2, copy=False)
    step = venv.reset()
    for seat in range(4):
        seats = np.full(4, seat, dtype=np.int64)
        views = venv.observe(seats)
        for game in range(4):
            aec = madiao_v0.raw_env()
            aec.set_state(venv.get_game_state(game))
            np.testing.assert_array_equal(views[game], aec.observe(AGENTS[seat])["observation"])
    again = venv.step(np.full(4, -1, dtype=np.int64))
    assert again.observation is step.observation and again.action_mask is step.action_mask
    copied = MadiaoVectorEnv(4, seed=2).reset()
    np.testing.assert_array_equal(copied.observation, step.observation)
    assert copied.observation.dtype == np.int8 and copied.action_mask.dtype == np.bool_


def test_same_seed_same_games_other_seed_other_games():
    def play(seed: int) -> list[np.ndarray]:
        venv = MadiaoVectorEnv(8, seed=seed)
        step = venv.reset()
        outputs = [step.observation]
        for _ in range(80):
            # A fixed rule (the highest legal id) so that only the env's seed varies.
            actions = np.array([np.flatnonzero(mask)[-1] for mask in step.action_mask], dtype=np.int64)
            step = venv.step(actions)
            outputs += [step.observation, step.rewards, step.final_payoffs]
        return outputs

    first, second, other = play(11), play(11), play(12)
    for a, b in zip(first, second, strict=True):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[0], other[0])
    venv = MadiaoVectorEnv(8, seed=99)
    np.testing.assert_array_equal(venv.reset(seed=11).observation, first[0])


def test_bad_actions_raise_errors_that_name_the_problem():
    venv = MadiaoVectorEnv(3, seed=0)
    with pytest.raises(RuntimeError, match="reset"):
        venv.step(np.zeros(3, dtype=np.int64))
    step = venv.reset()
    legal = np.array([np.flatnonzero(mask)[0] for mask in step.action_mask], dtype=np.int64)
    with pytest.raises(TypeError, match="numpy array"):
        venv.step(list(legal))
    with pytest.raises(TypeError, match="integer dtype"):
        venv.step(legal.astype(np.float64))
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        venv.step(legal[:2])
    out_of_range = legal.copy()
    out_of_range[2] = cards.N_ACTIONS
    with pytest.raises(IllegalActionError, match="game 2: action 82 is out of range"):
        venv.step(out_of_range)
    illegal = legal.copy()
    illegal[1] = np.flatnonzero(~step.action_mask[1])[0]
    text = cards.action_to_text(int(illegal[1]))
    with pytest.raises(IllegalActionError, match=f"game 1: action {illegal[1]} \\({text}\\) is not legal"):
        venv.step(illegal)
    # Nothing was applied by the rejected calls; int32 actions are accepted too.
    after = venv.step(legal.astype(np.int32))
    assert not np.array_equal(after.observation, step.observation)
    with pytest.raises(ValueError, match="out of range"):
        venv.observe(np.array([0, 4, 1]))
    with pytest.raises(ValueError, match="game 3 is out of range"):
        venv.get_game_state(3)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"obs_type": "pixels"}, ValueError, "obs_type"),
        ({"episode": "rubber"}, ValueError, "episode"),
        ({"stake": -1.0}, ValueError, "stake"),
        ({"stake": "1"}, TypeError, "stake"),
        ({"max_redeals": 1.5}, TypeError, "max_redeals"),
        ({"face_up_discard": 1}, TypeError, "face_up_discard"),
        ({"render_mode": "ansi"}, TypeError, "render_mode"),
        ({"colour": "red"}, TypeError, "colour"),
    ],
)
def test_bad_options_raise_clear_errors(kwargs, error, message):
    with pytest.raises(error, match=message):
        MadiaoVectorEnv(2, **kwargs)


def test_bad_sizes_and_seeds_raise():
    with pytest.raises(ValueError, match="n_envs"):
        MadiaoVectorEnv(0)
    with pytest.raises(TypeError, match="seed"):
        MadiaoVectorEnv(2, seed=1.5)
    venv = MadiaoVectorEnv(2, obs_type="history")
    assert venv.obs_dim == core.HISTORY_SIZE and venv.reset().observation.shape == (2, core.HISTORY_SIZE)


def test_maskable_ppo_trains_on_the_learner_vec_env():
    venv = LearnerVecEnv(MadiaoVectorEnv(8, seed=0), RandomAgent(seed=1), seed=0)
    # One hand is about 8 decisions: the budget finishes many.
    assert len(maskable_ppo_returns(venv)) >= 50


def test_per_game_methods_name_a_bad_game_index_before_and_after_reset():
    venv = MadiaoVectorEnv(3, seed=0)
    with pytest.raises(RuntimeError, match=r"call reset\(\) before get_game_state\(\)"):
        venv.get_game_state(0)
    venv.reset()
    with pytest.raises(TypeError, match="game must be an int, got bool True"):
        venv.get_game_state(True)
    with pytest.raises(ValueError, match=r"game 3 is out of range 0\.\.2"):
        venv.get_game_state(3)
    assert venv.get_game_state(np.int64(2))["agent_selection"].startswith("player_")


def test_game_seeds_are_those_of_the_last_reset():
    venv = MadiaoVectorEnv(4, seed=11)
    assert venv.game_seeds.shape == (4,) and not venv.game_seeds.any()
    venv.reset()
    first = venv.game_seeds.copy()
    venv.reset(seed=11)
    np.testing.assert_array_equal(venv.game_seeds, first)
    assert venv.game_seeds.dtype == np.uint64 and len(set(first.tolist())) == 4


def _mid_hand_snapshot(seed: int, moves: int, **env_kwargs) -> dict:
    """An AEC ``get_state()`` after ``moves`` random legal moves of a seeded hand (still going)."""
    aec = env_after_random_actions(moves, seed, **env_kwargs)
    assert aec.table()["phase"] == "play"
    return aec.get_state()


def test_set_game_state_puts_a_snapshot_into_one_game_which_then_plays_as_the_aec_env():
    venv = MadiaoVectorEnv(3, seed=5)
    before = venv.reset()
    snapshot = _mid_hand_snapshot(seed=21, moves=6)
    venv.set_game_state(1, snapshot)
    aec = madiao_v0.raw_env()
    aec.set_state(snapshot)
    # Round trip: the game's arrays are the snapshot's; the other games are untouched.
    for mine, theirs in zip(venv.get_game_state(1)["arrays"], snapshot["arrays"], strict=True):
        np.testing.assert_array_equal(mine, theirs)
    current = venv.step(np.full(3, -1, dtype=np.int64))
    assert_matches_aec(current, 1, aec)
    for game in (0, 2):
        np.testing.assert_array_equal(current.observation[game], before.observation[game])
        np.testing.assert_array_equal(current.action_mask[game], before.action_mask[game])
    # The game then plays on exactly as the AEC env does, to the end of the hand.
    rng = np.random.default_rng(0)
    while True:
        action = int(rng.choice(np.flatnonzero(current.action_mask[1])))
        actions = np.full(3, -1, dtype=np.int64)
        actions[1] = action
        current = venv.step(actions)
        aec.step(action)
        if current.terminated[1]:
            assert all(aec.terminations.values())
            np.testing.assert_allclose(current.final_payoffs[1], aec.last_settlement["payoffs"])
            break
        assert_matches_aec(current, 1, aec)


def test_set_game_state_rejects_a_bad_game_or_snapshot_and_changes_nothing():
    venv = MadiaoVectorEnv(2, seed=3)
    snapshot = _mid_hand_snapshot(seed=4, moves=5)
    with pytest.raises(RuntimeError, match=r"call reset\(\) before set_game_state\(\)"):
        venv.set_game_state(0, snapshot)
    start = venv.reset()
    games = [venv.get_game_state(game) for game in range(2)]
    corrupt = {**snapshot, "arrays": [array.copy() for array in snapshot["arrays"]]}
    corrupt["arrays"][1][0, core.I_TO_ACT] = 7
    finished = madiao_v0.raw_env()
    finished.reset(seed=8)
    while finished.agents and not all(finished.terminations.values()):
        finished.step(int(np.flatnonzero(finished.observe(finished.agent_selection)["action_mask"])[0]))
    other_options = _mid_hand_snapshot(seed=4, moves=5, face_up_discard=True)
    for game, bad, error, message in (
        (2, snapshot, ValueError, r"game 2 is out of range 0\.\.1"),
        (-1, snapshot, ValueError, r"game -1 is out of range"),
        (True, snapshot, TypeError, "game must be an int"),
        (0, {"version": 2}, ValueError, "snapshot is missing key"),
        (0, corrupt, ValueError, r"ints\[I_TO_ACT\] = 7: seat to act must be -1\.\.3"),
        (0, finished.get_state(), ValueError, "the episode is over"),
        (1, other_options, ValueError, "other options"),
        (1, [], ValueError, "not a Madiao get_state"),
    ):
        with pytest.raises(error, match=message):
            venv.set_game_state(game, bad)
        for index in range(2):
            for mine, before in zip(
                venv.get_game_state(index)["arrays"], games[index]["arrays"], strict=True
            ):
                np.testing.assert_array_equal(mine, before)
        unchanged = venv.step(np.full(2, -1, dtype=np.int64))
        np.testing.assert_array_equal(unchanged.observation, start.observation)
        np.testing.assert_array_equal(unchanged.action_mask, start.action_mask)
        np.testing.assert_array_equal(unchanged.to_act, start.to_act)


def test_copy_game_makes_games_that_play_on_like_the_source_and_checks_indices_first():
    venv = MadiaoVectorEnv(4, seed=2)
    venv.reset()
    venv.set_game_state(0, _mid_hand_snapshot(seed=13, moves=7))
    before = [venv.get_game_state(game) for game in range(4)]
    for bad, error in (([1, 4], ValueError), ([True], TypeError)):
        with pytest.raises(error):
            venv.copy_game(0, bad)
        for game in range(4):  # a refused copy changes nothing
            for mine, theirs in zip(venv.get_game_state(game)["arrays"], before[game]["arrays"], strict=True):
                np.testing.assert_array_equal(mine, theirs)
    venv.copy_game(0, [2, 3])
    np.testing.assert_array_equal(venv.hands()[2], venv.hands()[0])
    current = venv.step(np.full(4, -1, dtype=np.int64))
    rng = np.random.default_rng(1)
    while not current.terminated[0]:
        action = int(rng.choice(np.flatnonzero(current.action_mask[0])))
        current = venv.step(np.array([action, -1, action, action], dtype=np.int64))
        for copy in (2, 3):
            np.testing.assert_array_equal(current.observation[copy], current.observation[0])
            assert current.terminated[copy] == current.terminated[0]
    np.testing.assert_array_equal(current.final_payoffs[2], current.final_payoffs[0])
    np.testing.assert_array_equal(current.final_payoffs[3], current.final_payoffs[0])


def _arrays_of(venv: MadiaoVectorEnv, game: int) -> list[np.ndarray]:
    return venv.get_game_state(game)["arrays"]


def test_copy_game_from_another_env_is_set_game_state_of_its_snapshot():
    source = MadiaoVectorEnv(3, seed=5)
    source_step = source.reset()
    player = RandomAgent(seed=1)
    for _ in range(9):  # a few moves into the hands
        source_step = source.step(player.act_batch(source_step.observation, source_step.action_mask))
    by_snapshot, by_copy = MadiaoVectorEnv(2, seed=0), MadiaoVectorEnv(2, seed=0)
    by_snapshot.reset()
    by_copy.reset()
    by_snapshot.set_game_state(1, source.get_game_state(2))
    by_copy.copy_game_from(source, 2, 1)
    for game in range(2):
        for mine, theirs in zip(_arrays_of(by_copy, game), _arrays_of(by_snapshot, game), strict=True):
            np.testing.assert_array_equal(mine, theirs)
    still = np.full(2, -1, dtype=np.int64)
    copied, loaded = by_copy.step(still), by_snapshot.step(still)
    np.testing.assert_array_equal(copied.observation, loaded.observation)
    np.testing.assert_array_equal(copied.action_mask, loaded.action_mask)
    np.testing.assert_array_equal(copied.to_act, loaded.to_act)
    at_source = source.step(np.full(3, -1, dtype=np.int64))
    np.testing.assert_array_equal(copied.observation[1], at_source.observation[2])


def test_copy_game_from_refuses_another_kind_of_env_other_options_or_a_bad_index_and_changes_nothing():
    target = MadiaoVectorEnv(2, seed=0)
    source = MadiaoVectorEnv(2, seed=1)
    with pytest.raises(RuntimeError, match=r"call reset\(\) before copy_game_from\(\)"):
        target.copy_game_from(source, 0, 0)
    start = target.reset()
    source.reset()
    before = [_arrays_of(target, game) for game in range(2)]
    history = MadiaoVectorEnv(2, seed=1, obs_type="history")
    staked = MadiaoVectorEnv(2, seed=1, stake=0.5)
    unready = MadiaoVectorEnv(2, seed=1)
    for env in (history, staked):
        env.reset()
    for source_env, source_game, game, error, message in (
        (source.get_game_state(0), 0, 0, ValueError, "the source must be a MadiaoVectorEnv, not dict"),
        (history, 0, 0, ValueError, "the source env has other options"),
        (staked, 0, 0, ValueError, "the source env has other options"),
        (unready, 0, 0, RuntimeError, r"call reset\(\) before copy_game_from\(\)"),
        (source, 2, 0, ValueError, r"game 2 is out of range 0\.\.1"),
        (source, 0, -1, ValueError, r"game -1 is out of range"),
        (source, 0, True, TypeError, "game must be an int"),
    ):
        with pytest.raises(error, match=message):
            target.copy_game_from(source_env, source_game, game)
        for game_index in range(2):
            for mine, theirs in zip(_arrays_of(target, game_index), before[game_index], strict=True):
                np.testing.assert_array_equal(mine, theirs)
        unchanged = target.step(np.full(2, -1, dtype=np.int64))
        np.testing.assert_array_equal(unchanged.observation, start.observation)
        np.testing.assert_array_equal(unchanged.to_act, start.to_act)


def test_hands_are_the_dealt_cards_by_seat():
    venv = MadiaoVectorEnv(2, seed=0)
    deck = np.arange(cards.N_CARDS, dtype=np.int64)
    venv.reset_deals(np.stack([deck, deck[::-1]]), np.array([0, 1]), np.array([5, 6]))
    aec = madiao_v0.raw_env()
    for game, order in enumerate((deck, deck[::-1])):
        aec.reset(seed=[5, 6][game], options={"deck": [cards.CARD_NAMES[c] for c in order], "banker": game})
        expected = [sum(1 << cards.card_id(name) for name in hand) for hand in aec.table()["hands"]]
        assert venv.hands()[game].tolist() == expected
