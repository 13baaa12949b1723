"""The Mao memory policy (``agents/mao/memory.py``) and the Bayesian player at the training table
(per-game-seat posteriors handed row keys by ``madiao_mao.training.sb3.adapter.LearnerVecEnv``)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("sb3_contrib")

from gymnasium import spaces  # noqa: E402

from madiao_mao.agents.base import Agent, legal_actions  # noqa: E402
from madiao_mao.agents.mao.beliefs import SUIT, parse_event, parse_observation  # noqa: E402
from madiao_mao.agents.mao.memory import EventAttention, MaoMemoryFeatures, MaoMemoryPolicy  # noqa: E402
from madiao_mao.agents.mao.players import BaseRulesAgent, BayesianRuleAgent  # noqa: E402
from madiao_mao.training.sb3.adapter import LearnerVecEnv  # noqa: E402
from mao_env import cards, core, layout  # noqa: E402
from mao_env.layout import KIND_BAD_CARD, KIND_PLAY  # noqa: E402
from mao_env.vector import MaoVectorEnv  # noqa: E402
from tests.common.helpers import TINY_RUN  # noqa: E402

N_EVENTS = core.EVENT_SLOTS
N_ACTIONS = MaoVectorEnv.n_actions
WIDTH = layout.event_width(False)


def _space(n_events: int = N_EVENTS) -> spaces.Box:
    return spaces.Box(-np.inf, np.inf, (layout.obs_size(n_events, False),), np.float32)


def _played_observations(
    n_games: int = 16, n_steps: int = 120, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Observations and masks of the seat to act, after base-rules players played a while (the
    event windows are full by then)."""
    env = MaoVectorEnv(n_games, seed=seed, n_events=N_EVENTS, rule_pool=(0, 5, 9))
    player = BaseRulesAgent(seed=seed)
    step = env.reset(seed=seed)
    for _ in range(n_steps):
        step = env.step(player.act_batch(step.observation, step.action_mask))
    return step.observation.astype(np.float32), step.action_mask.astype(bool)


@pytest.fixture(scope="module")
def played() -> tuple[np.ndarray, np.ndarray]:
    return _played_observations()


def _policy(seed: int = 0) -> MaoMemoryPolicy:
    torch.manual_seed(seed)
    return MaoMemoryPolicy(_space(), spaces.Discrete(N_ACTIONS), lambda _: 3e-4, net_arch=[32])


def test_memory_policy_acts_on_batches_and_respects_masks(played):
    observations, masks = played
    policy = _policy()
    obs = torch.as_tensor(observations)
    with torch.no_grad():
        probs = policy.get_distribution(obs, action_masks=masks).distribution.probs.numpy()
        actions, values, _ = policy(obs, action_masks=masks)
    assert probs.shape == (len(observations), N_ACTIONS) and values.shape == (len(observations), 1)
    assert np.all(probs[~masks] == 0.0) and np.allclose(probs.sum(1), 1.0, atol=1e-5)
    assert all(masks[row, action] for row, action in enumerate(actions.numpy()))
    single = policy.get_distribution(obs[:1], action_masks=masks[:1]).distribution.probs.detach().numpy()
    np.testing.assert_allclose(single[0], probs[0], atol=1e-6)  # a row does not depend on its batch


def test_memory_features_need_an_event_history():
    with pytest.raises(ValueError, match="memory features need an event history"):
        MaoMemoryFeatures(_space(0))
    assert MaoMemoryFeatures(_space(4)).n_events == 4  # any window the env gives


def _reference_context(row_events: list) -> tuple[np.ndarray, np.ndarray]:
    """Step by step, oldest event first: the top card and suit to follow before each event."""
    tops = np.zeros((N_EVENTS, cards.N_CARD_TYPES), dtype=np.float32)
    suits = np.zeros((N_EVENTS, 4), dtype=np.float32)
    top, suit = -1, -1
    for k in range(len(row_events) - 1, -1, -1):
        event = row_events[k]
        if top >= 0:
            tops[k, top], suits[k, suit] = 1.0, 1.0
        if event.kind == KIND_PLAY and event.card >= 0:
            top = event.card
            suit = event.named_suit if event.named_suit >= 0 else int(SUIT[event.card])
        if event.won:
            top, suit = -1, -1
    return tops, suits


def test_event_context_matches_a_step_by_step_reference(played):
    observations, _ = played
    features = MaoMemoryFeatures(_space())
    events = torch.as_tensor(observations[:, layout.OFF_EVENTS :].reshape(len(observations), N_EVENTS, WIDTH))
    tokens = features.tokens(events).numpy()
    top_at = slice(WIDTH, WIDTH + cards.N_CARD_TYPES)
    suit_at = slice(top_at.stop, top_at.stop + 4)
    checked = 0
    for row, observation in enumerate(observations):
        view = parse_observation(observation)
        row_events = [parse_event(r) for r in view.event_rows]
        tops, suits = _reference_context(row_events)
        n = len(row_events)
        np.testing.assert_array_equal(tokens[row, :n, top_at], tops[:n])
        np.testing.assert_array_equal(tokens[row, :n, suit_at], suits[:n])
        checked += int(tops[:n].sum())
    assert checked > 100  # most events had a known context


def test_attention_pooling_is_a_set_function_of_the_present_events():
    torch.manual_seed(0)
    attention = EventAttention(8)
    queries, tokens = torch.randn(3, 5, 8), torch.randn(3, 6, 8)
    present = torch.tensor([[1, 1, 0, 1, 1, 0], [1] * 6, [0] * 6], dtype=torch.float32)
    out = attention(queries, tokens, present)
    order = torch.tensor([4, 2, 0, 5, 1, 3])
    torch.testing.assert_close(attention(queries, tokens[:, order], present[:, order]), out)
    changed = tokens.clone()
    changed[0, 2] += 5.0  # an absent event is not read
    torch.testing.assert_close(attention(queries, changed, present), out)
    changed[0, 1] += 5.0  # a present one is
    assert not torch.allclose(attention(queries, changed, present)[0], out[0])
    # No event at all: only the learned "nothing relevant" value is read.
    torch.testing.assert_close(out[2], attention.null_value[0].expand(5, -1))


def test_memory_reads_events_older_than_the_mlp_window(played):
    """Today's MLP reads the 8 newest events; changing the 13th newest (a good play turned into a
    "bad card") moves the memory policy's action probabilities."""
    observations, masks = played
    full = observations[:, layout.OFF_EVENTS + (N_EVENTS - 1) * WIDTH + layout.EV_PRESENT] > 0.5
    row = int(np.flatnonzero(full)[0])
    old = 12
    start = layout.OFF_EVENTS + old * WIDTH
    changed = observations[row].copy()
    kind = changed[start + layout.EV_KIND : start + layout.EV_KIND + layout.N_EVENT_KINDS]
    kind[:] = 0.0
    kind[KIND_BAD_CARD] = 1.0
    assert not np.array_equal(changed, observations[row])
    window_of_8 = layout.obs_size(8, False)
    assert np.array_equal(changed[:window_of_8], observations[row, :window_of_8])  # invisible to it
    policy = _policy()
    pair = torch.as_tensor(np.stack([observations[row], changed]))
    with torch.no_grad():
        probs = policy.get_distribution(pair, action_masks=masks[[row, row]]).distribution.probs
    assert (probs[0] - probs[1]).abs().max() > 1e-6


# ---- the Bayesian player at the training table


class WindowFollower(Agent):
    """A test double with a memory per row key: it checks that the event window each key sees
    continues the window it saw last (new events pushed in at the front, none lost), as one seat
    of one game does, and counts the times it did not. ``use_keys=False`` ignores the keys and
    remembers by batch index (what a memory agent without keys would do)."""

    name = "window-follower"

    def __init__(self, use_keys: bool = True) -> None:
        self.use_keys = use_keys
        self.windows: dict[int, list[np.ndarray]] = {}
        self.broken = 0
        self.followed = 0
        self.rng = np.random.default_rng(0)

    def act_batch(
        self, observations: np.ndarray, masks: np.ndarray, rows: np.ndarray | None = None
    ) -> np.ndarray:
        keys = rows if (rows is not None and self.use_keys) else np.arange(len(masks))
        actions = np.full(len(masks), -1, dtype=np.int64)
        for index, (observation, mask) in enumerate(zip(observations, masks, strict=True)):
            window = parse_observation(observation).event_rows
            previous = self.windows.get(int(keys[index]))
            if previous is not None:
                if self._continues(previous, window):
                    self.followed += 1
                else:
                    self.broken += 1
            self.windows[int(keys[index])] = window
            actions[index] = int(self.rng.choice(legal_actions(mask)))
        return actions

    @staticmethod
    def _continues(previous: list[np.ndarray], window: list[np.ndarray]) -> bool:
        for shift in range(len(window) + 1):
            kept = len(window) - shift
            if kept != len(previous) and len(window) < N_EVENTS:
                continue  # below a full window no old event may be lost
            if kept <= len(previous) and all(
                np.array_equal(window[shift + i], previous[i]) for i in range(kept)
            ):
                return True
        return False

    def reset_rows(self, rows: np.ndarray) -> None:
        for key in np.asarray(rows).ravel():
            self.windows.pop(int(key), None)


def _table(opponent, n_games: int = 6, seed: int = 3) -> LearnerVecEnv:
    # Short games (max_steps) make many game ends, and so many new games on the same rows.
    vector_env = MaoVectorEnv(n_games, seed=seed, n_events=N_EVENTS, max_steps=60, rule_pool=(0, 5, 9))
    return LearnerVecEnv(vector_env, [opponent], seed=seed, opponent_draw="per_game")


def _play_randomly(venv: LearnerVecEnv, n_steps: int, seed: int = 0) -> int:
    rng = np.random.default_rng(seed)
    venv.reset()
    games_ended = 0
    for _ in range(n_steps):
        actions = np.array([rng.choice(np.flatnonzero(mask)) for mask in venv.action_masks()])
        _, _, dones, _ = venv.step(actions)
        games_ended += int(dones.sum())
    return games_ended


def test_memory_opponents_follow_one_game_seat_and_forget_it_at_a_new_game():
    follower = WindowFollower()
    ended = _play_randomly(_table(follower), 150)
    assert ended >= 6 and follower.followed > 300
    assert follower.broken == 0
    # The same double keyed by batch index mixes games and seats up: the check sees it.
    by_index = WindowFollower(use_keys=False)
    _play_randomly(_table(by_index), 150)
    assert by_index.broken > 50


def test_a_memory_opponent_without_keys_is_refused():
    from tests.common.toy_game import MemoryWithoutKeys

    with pytest.raises(ValueError, match="keeps a memory per game but its act_batch takes no rows= keys"):
        _table(MemoryWithoutKeys())


def test_bayes_at_the_table_keeps_one_posterior_per_opponent_seat():
    bayes = BayesianRuleAgent(seed=0)
    venv = _table(bayes)
    rng = np.random.default_rng(1)
    venv.reset()
    ended = 0
    for _ in range(150):
        actions = np.array([rng.choice(np.flatnonzero(mask)) for mask in venv.action_masks()])
        ended += int(venv.step(actions)[2].sum())
        # Only the opponent seats of the games now played have a posterior: a finished game's
        # seats were forgotten before the next game (where the learner may sit in one of them).
        seats = {
            int(venv.row_keys(game, seat))
            for game in range(venv.num_envs)
            for seat in range(venv.n_players)
            if seat != venv.learner_seat[game]
        }
        assert bayes.posteriors.held_keys() <= seats
    assert ended >= 6 and len(bayes.posteriors.held_keys()) > venv.num_envs


def test_bayes_batch_rows_are_checked_before_anything_changes():
    bayes = BayesianRuleAgent(seed=0)
    observations, masks = _played_observations(n_games=2, n_steps=10)
    with pytest.raises(ValueError, match="rows must not repeat a key"):
        bayes.act_batch(observations, masks, rows=np.array([7, 7]))
    with pytest.raises(ValueError, match="rows must hold one integer key per observation"):
        bayes.act_batch(observations, masks, rows=np.array([7]))
    assert not bayes.posteriors.held_keys()
    bayes.act_batch(observations, masks, rows=np.array([7, 9]))
    assert bayes.posteriors.held_keys() == {7, 9}


# ---- a tiny league run with the memory features


def _tiny_memory_config(tmp_path, **overrides):
    from madiao_mao.training.config import TrainConfig

    options = {
        "game": "mao",
        "features": "memory",
        "env_kwargs": {"n_events": N_EVENTS},
        "opponents": "league",
        "league_anchors": ("base",),
        **TINY_RUN,
        "imitation_decisions": 64,
        "imitation_epochs": 1,
        "final_eval_deals": 1,
        "torch_threads": 1,
        "runs_dir": str(tmp_path),
    }
    return TrainConfig(**{**options, **overrides})


def _check_saved_policy(run_dir):
    from madiao_mao.agents.learned import LearnedPolicyAgent
    from madiao_mao.agents.registry import make_agent
    from madiao_mao.training.mao.evaluation import HELD_OUT_RULES, event_window_kwargs, held_out_experiment

    agent = make_agent(f"model:{run_dir / 'final_model.zip'}", "mao")
    assert isinstance(agent, LearnedPolicyAgent)
    assert isinstance(agent.model.policy, MaoMemoryPolicy)
    # An evaluation table gives it the window it was trained with.
    assert event_window_kwargs(agent, None) == {"n_events": N_EVENTS}
    assert event_window_kwargs(agent, {"n_events": 4}) == {"n_events": 4}  # an explicit one stays
    observations, masks = _played_observations(n_games=4, n_steps=20)
    actions = agent.act_batch(observations, masks)
    assert all(masks[row, action] for row, action in enumerate(actions))
    # The held-out evaluation seats the saved policy at a table with its window (no env_kwargs).
    report = held_out_experiment({"learned": f"model:{run_dir / 'final_model.zip'}"}, turns=2)
    assert report.stats["learned"].turns >= 2 * len(HELD_OUT_RULES)


def test_a_tiny_league_run_with_memory_features_trains_saves_and_loads(tmp_path):
    from madiao_mao.training.sb3.train import train

    run_dir = train(_tiny_memory_config(tmp_path))
    _check_saved_policy(run_dir)


def test_bayes_can_be_a_league_anchor(tmp_path):
    from madiao_mao.training.sb3.train import train

    run_dir = train(_tiny_memory_config(tmp_path, league_anchors=("base", "bayes")))
    _check_saved_policy(run_dir)
