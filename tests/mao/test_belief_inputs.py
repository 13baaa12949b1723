"""The belief inputs of a Mao policy (``madiao_mao.agents.mao.belief_inputs``): what they say is what the Mao
Master then calls (under the true rules), the trainer's learner wrapper and the playing agent follow
each game seat's posterior exactly as a hand-kept posterior does, and a policy that reads them
trains, saves, loads and plays through every loader."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from madiao_mao.agents.base import RandomAgent
from madiao_mao.agents.mao.belief_inputs import BELIEF_SLICES, BELIEF_WIDTH, BeliefTracker, belief_inputs
from madiao_mao.agents.mao.beliefs import RANK, hypotheses_from_sets, parse_observation
from madiao_mao.agents.mao.players import BaseRulesAgent, RulePosterior, posterior_options
from mao_env import cards
from mao_env import rules as library
from mao_env.env import raw_env
from tests.common.helpers import TINY_RUN

VALIDITY_RULES = [
    r for r in range(library.N_RULES) if library.RULE_TABLE[r, library.R_FAMILY] == library.VALIDITY
]
SPEECH_RULES = [
    r for r in range(library.N_RULES) if library.RULE_TABLE[r, library.R_FAMILY] == library.SPEECH
]


def _oracle_inputs(env, observation) -> np.ndarray:
    table = env.unwrapped
    truth = hypotheses_from_sets([[rule for rule, _author in table.active_rules()]])
    view = parse_observation(np.asarray(observation["observation"], dtype=np.float32))
    return belief_inputs(view, observation["action_mask"], truth, np.ones(1))


def _calls_on(env, player: str) -> list[dict]:
    return [call for call in env.unwrapped.last_calls if call["player"] == player]


@pytest.mark.parametrize("seed", range(6))
def test_under_the_true_rules_the_inputs_are_the_masters_verdicts(seed):
    """A seat that plays a card the inputs call good, says exactly the phrases they call required
    (and "Mao" when they call it due) draws no call; a card they call bad draws "bad card"."""
    rng = np.random.default_rng(seed)
    rules = [int(rng.choice(VALIDITY_RULES)), int(rng.choice(VALIDITY_RULES)), int(rng.choice(SPEECH_RULES))]
    env = raw_env(4)
    env.reset(seed=seed, options={"rules": sorted(set(rules))})
    judged = {"good": 0, "bad": 0}
    for _turn in range(60):
        if not env.agents:
            break
        seat = env.agent_selection
        observation = env.observe(seat)
        mask = observation["action_mask"]
        if not mask[cards.DRAW]:  # choosing a rule: not a turn
            env.step(int(np.flatnonzero(mask)[0]))
            continue
        inputs = _oracle_inputs(env, observation)
        assert set(np.unique(inputs[BELIEF_SLICES["play_good"]])) <= {0.0, 1.0}
        held = [c for c in np.flatnonzero(mask[: cards.N_CARD_TYPES]) if RANK[c] != cards.JACK]
        if not held:
            env.step(cards.DRAW)
            env.step(cards.END_TURN)
            continue
        card = int(rng.choice(held))
        good = inputs[BELIEF_SLICES["play_good"]][card] == 1.0
        env.step(card)
        speaking = _oracle_inputs(env, env.observe(seat))
        assert not speaking[BELIEF_SLICES["play_good"]].any()  # a speaking decision
        required = np.flatnonzero(speaking[BELIEF_SLICES["say_required"]] == 1.0)
        for phrase in required:
            if phrase != cards.MAO:
                env.step(cards.SAY_0 + int(phrase))
        spoken = _oracle_inputs(env, env.observe(seat))
        # A phrase said is neither still required nor talking when said again.
        assert not spoken[BELIEF_SLICES["say_required"]][required].any()
        assert not spoken[BELIEF_SLICES["say_talking"]][required].any()
        if spoken[BELIEF_SLICES["mao_due"]][0] == 1.0:
            env.step(cards.SAY_0 + cards.MAO)
        env.step(cards.END_TURN)
        calls = _calls_on(env, seat)
        if good:
            assert calls == [], (card, calls)
            judged["good"] += 1
        else:
            assert any(call["code"] == 0 for call in calls), (card, calls)
            judged["bad"] += 1
    assert judged["good"] > 5


def test_the_belief_pieces_tile_the_inputs():
    pieces = sorted(BELIEF_SLICES.values(), key=lambda piece: piece.start)
    assert pieces[0].start == 0 and pieces[-1].stop == BELIEF_WIDTH
    assert all(a.stop == b.start for a, b in itertools.pairwise(pieces))


# ---- the learner wrapper and the playing agent, against posteriors kept by hand -----------------


def _hand_kept_inputs(posteriors: dict, key, observation, mask, options) -> np.ndarray:
    posterior = posteriors.setdefault(key, RulePosterior(**options))
    view = parse_observation(observation)
    posterior.observe(view)
    return belief_inputs(
        view,
        mask,
        posterior.hypotheses,
        posterior.weights,
        talking=posterior.talking,
        thank_you=posterior.thank_you,
    )


def test_the_learner_wrapper_follows_each_games_posterior():
    from madiao_mao.training.mao.wrappers import BeliefObservations
    from madiao_mao.training.sb3.adapter import LearnerVecEnv
    from mao_env.vector import MaoVectorEnv

    vector_env = MaoVectorEnv(6, seed=1, rule_pool=(0, 5, 19, 23))
    options = posterior_options(vector_env.options)
    venv = BeliefObservations(LearnerVecEnv(vector_env, BaseRulesAgent(seed=2), seed=3), options)
    table_dim = venv.table_obs_dim
    assert venv.observation_space.shape == (table_dim + BELIEF_WIDTH,)
    learner = RandomAgent(seed=4)
    hand_kept: dict = {}
    observations = venv.reset()
    ended = 0
    for _ in range(400):
        masks = venv.env_method("action_masks")
        masks = np.asarray(masks, dtype=bool)
        for game in range(venv.num_envs):
            expected = _hand_kept_inputs(
                hand_kept, game, observations[game, :table_dim], masks[game], options
            )
            np.testing.assert_array_equal(observations[game, table_dim:], expected)
        actions = learner.act_batch(observations[:, :table_dim], masks)
        for game, action in enumerate(actions):
            hand_kept[game].note_action(int(action))
        observations, _rewards, dones, infos = venv.step(actions)
        for game in np.flatnonzero(dones):
            ended += 1
            assert infos[game]["terminal_observation"].shape == (table_dim + BELIEF_WIDTH,)
            del hand_kept[game]  # a new game: a new posterior
    assert ended >= 3


@pytest.fixture(scope="module")
def belief_run(tmp_path_factory):
    """A tiny training run with the belief features (pool opponents: the base player, snapshots
    and the live policy, the last two playing through the keyed belief agent)."""
    pytest.importorskip("sb3_contrib")
    from madiao_mao.training.config import TrainConfig
    from madiao_mao.training.sb3.train import train

    config = TrainConfig(
        **{**TINY_RUN, "total_timesteps": 256},
        game="mao",
        features="belief",
        imitation_decisions=64,
        imitation_epochs=1,
        final_eval_deals=1,
        torch_threads=1,
        runs_dir=str(tmp_path_factory.mktemp("runs")),
    )
    return train(config)


def test_a_belief_run_trains_saves_and_loads_as_a_belief_agent(belief_run):
    from madiao_mao.agents.mao.features import MaoBeliefPolicy
    from madiao_mao.agents.mao.policy import BeliefPolicyAgent
    from madiao_mao.agents.registry import make_agent
    from madiao_mao.training.mao.evaluation import HELD_OUT_RULES, event_window_kwargs, held_out_experiment

    assert (belief_run / "snapshots").is_dir() or any(belief_run.glob("**/snapshot_*.zip"))
    agent = make_agent(f"model:{belief_run / 'final_model.zip'}", "mao")
    assert isinstance(agent, BeliefPolicyAgent) and isinstance(agent.model.policy, MaoBeliefPolicy)
    assert agent.table_obs_dim + BELIEF_WIDTH == agent.obs_dim
    assert not agent.decides_from_observation
    assert event_window_kwargs(agent, None) == {"n_events": 8}  # the table's window, without the inputs
    refusal = f"expects observations of length {agent.table_obs_dim}, got {agent.obs_dim}"
    with pytest.raises(ValueError, match=refusal):
        agent.act(np.zeros(agent.obs_dim, dtype=np.float32), np.ones(agent.model.action_space.n, dtype=bool))
    report = held_out_experiment({"learned": f"model:{belief_run / 'final_model.zip'}"}, turns=2)
    assert report.stats["learned"].turns >= 2 * len(HELD_OUT_RULES)


def test_the_belief_agent_keeps_one_posterior_per_game_seat(belief_run):
    """One agent playing every seat of several games through row keys acts exactly as one agent
    per seat, each following its own seat with ``act`` (the policy is greedy)."""
    from madiao_mao.agents.registry import make_agent
    from mao_env.vector import MaoVectorEnv

    path = f"model:{belief_run / 'final_model.zip'}"
    table = MaoVectorEnv(3, seed=5, rule_pool=(0, 19))
    shared = make_agent(path, "mao")
    alone = {(g, s): make_agent(path, "mao") for g in range(3) for s in range(4)}
    step = table.reset(seed=5)
    for _ in range(150):
        games = np.arange(3)
        seats = step.to_act
        keys = games * 4 + seats
        actions = shared.act_batch(step.observation, step.action_mask, rows=keys)
        for game in games:
            if step.action_mask[game].any():
                expected = alone[(game, int(seats[game]))].act(step.observation[game], step.action_mask[game])
                assert actions[game] == expected
        step = table.step(actions)
        ended = np.flatnonzero(step.terminated | step.truncated)
        if ended.size:
            shared.reset_rows(np.concatenate([ended * 4 + s for s in range(4)]))
            for game in ended:
                for seat in range(4):
                    alone[(int(game), seat)].reset()
    assert shared.beliefs.posteriors.held_keys() <= set(range(12))


def test_the_tracker_refuses_repeated_row_keys():
    tracker = BeliefTracker()
    with pytest.raises(ValueError, match="must not repeat a key"):
        tracker.seat_posteriors(2, np.array([3, 3]))
    with pytest.raises(ValueError, match="one integer key per observation"):
        tracker.seat_posteriors(2, np.array([1.0, 2.0]))


def test_the_cli_offers_belief_features_for_mao_only(tmp_path, capsys):
    from madiao_mao.cli.main import main

    assert main(["train", "--game", "madiao", "--features", "belief", "--runs-dir", str(tmp_path)]) == 2
    assert 'features="belief" needs game="mao"' in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_the_action_head_weighs_each_actions_belief_with_shared_weights():
    torch = pytest.importorskip("torch")
    from madiao_mao.agents.mao.features import BeliefActionHead

    n_actions = cards.CHOOSE_RULE_0 + library.N_RULES
    head = BeliefActionHead(latent_dim=4, n_actions=n_actions)
    belief = np.zeros(BELIEF_WIDTH, dtype=np.float32)
    play_good = np.zeros(cards.N_CARD_TYPES, dtype=np.float32)
    play_good[[3, 17]] = [0.125, 0.75]
    belief[BELIEF_SLICES["play_good"]] = play_good
    belief[BELIEF_SLICES["say_required"].start + 2] = 0.5
    belief[BELIEF_SLICES["say_talking"].start + 4] = 1.0
    belief[BELIEF_SLICES["mao_due"]] = 0.9
    belief[BELIEF_SLICES["say_talking"].start + cards.MAO] = 1.0  # "Mao" in vain is not talking
    belief[BELIEF_SLICES["call_fault"].start + cards.CALL_REASON_BAD_CARD] = 0.6
    channels = head.channels(torch.as_tensor(belief)[None]).numpy()[0]
    good, required, talking, fault, unsaid = channels
    assert good[3] == 0.125 and good[17] == 0.75 and good[cards.DRAW] == pytest.approx(0.25)
    assert np.count_nonzero(good) == 3
    assert required[cards.SAY_0 + 2] == 0.5 and required[cards.SAY_0 + cards.MAO] == pytest.approx(0.9)
    assert np.count_nonzero(required) == 2
    assert talking[cards.SAY_0 + 4] == 1.0 and np.count_nonzero(talking) == 1
    assert fault[cards.CALL_0 + cards.CALL_REASON_BAD_CARD] == pytest.approx(0.6)
    assert np.count_nonzero(fault) == 1
    # Ending the turn weighs the phrase most worth saying: here the due "Mao" (0.9, not talking).
    assert unsaid[cards.END_TURN] == pytest.approx(0.9) and np.count_nonzero(unsaid) == 1
    # The logits add the shared weighting to the linear layer's output, one weight per channel.
    with torch.no_grad():
        head.linear.weight.zero_()
        head.linear.bias.zero_()
        latent = torch.cat([torch.zeros(1, 4), torch.as_tensor(belief)[None]], dim=1)
        logits = head(latent).numpy()[0]
    weights = np.asarray(BeliefActionHead.INITIAL_WEIGHTS, dtype=np.float32)
    np.testing.assert_allclose(logits, np.einsum("ca,c->a", channels, weights), rtol=1e-6)
    # A fresh head prefers the card most likely good, and drawing over a card likely bad.
    assert logits[17] > logits[cards.DRAW] > logits[3]
    # Speech and calls are decided by the belief alone: whatever the latent, their logits are
    # the same, and phrases (and call reasons) with the same beliefs get the same logit, so no
    # phrase is learned away for never being required in training. Cards read the latent.
    torch.manual_seed(0)
    fresh = BeliefActionHead(latent_dim=4, n_actions=n_actions)
    with torch.no_grad():
        fresh.speech_bias.copy_(torch.tensor([0.5, -0.5, 0.25, -0.25]))
        latents = torch.cat([torch.randn(2, 4), torch.as_tensor(belief)[None].expand(2, -1)], dim=1)
        both = fresh(latents).numpy()
    speech = slice(cards.SAY_0, cards.POINT_OF_ORDER)
    np.testing.assert_array_equal(both[0, speech], both[1, speech])
    assert not np.allclose(both[0, : cards.SAY_0], both[1, : cards.SAY_0])
    plain = [p for p in range(cards.N_PHRASES) if p not in (2, 4, cards.MAO)]  # no belief about them
    assert np.ptp(both[0, [cards.SAY_0 + p for p in plain]]) == 0
    assert both[0, cards.SAY_0 + 2] > both[0, cards.SAY_0 + 0] > both[0, cards.SAY_0 + 4]
