"""The scripted Mao players: legal actions only, the base player never faults without secret rules,
the oracle never faults at all (its every action is one the full rule set allows), the Bayesian
posterior finds the rule from the calls, and hand-set tables where each player's choice is known."""

from __future__ import annotations

import numpy as np
import pytest

from madiao_mao.agents.base import Agent
from madiao_mao.agents.mao.beliefs import hypotheses_from_sets, parse_observation
from madiao_mao.agents.mao.players import (
    BaseRulesAgent,
    BayesianRuleAgent,
    OracleAgent,
    RulePosterior,
    rules_to_propose,
)
from madiao_mao.agents.registry import make_agent
from mao_env import cards
from mao_env import rules as rule_library
from mao_env.env import raw_env
from tests.mao.mao_helpers import actions_to_the_end_of_turn, play_with_agents, scenario, won_round_table


def rule_id(description: str) -> int:
    return rule_library.RULE_DESCRIPTIONS.index(description)


def play_game(env, agents, *, seed, options=None, check=None, max_steps=6000):
    """Play one game; returns (calls per seat, turns per seat). ``check(seat, action)`` runs
    before every step."""
    env.reset(seed=seed, options=options)
    calls = np.zeros(env.n_players, dtype=int)
    turns = np.zeros(env.n_players, dtype=int)

    def count(seat: int, action: int) -> None:
        if action == cards.END_TURN:
            turns[seat] += 1
            calls[seat] += len(env.last_calls)

    play_with_agents(env, agents, max_steps=max_steps, before_step=check, after_step=count)
    return calls, turns


@pytest.mark.parametrize("name", ["base", "bayes", "oracle", "random"])
def test_every_agent_takes_only_mask_legal_actions_with_rules_and_rule_choices(name):
    env = raw_env(4, num_rounds=3, rule_choice="agent", max_steps=4000)
    agents = [make_agent(name, "mao", seed=seat, env=env) for seat in range(4)]
    _, turns = play_game(env, agents, seed=5, options={"rules": [3, 40]})
    assert turns.sum() > 20
    assert len(env.active_rules()) >= 2


def test_base_rules_player_never_draws_a_call_without_secret_rules():
    env = raw_env(4, num_rounds=3, rule_choice="fixed", max_steps=6000)
    agents = [BaseRulesAgent(seed=seat) for seat in range(4)]
    total_calls, total_turns = 0, 0
    for seed in range(3):
        calls, turns = play_game(env, agents, seed=seed)  # no fixed rules: the game stays base-only
        total_calls += calls.sum()
        total_turns += turns.sum()
        assert env.terminations["player_0"], "three rounds were won"
    assert total_turns > 100
    assert total_calls == 0


def test_oracle_only_takes_actions_the_full_rule_set_allows_and_never_faults():
    env = raw_env(4, num_rounds=2, rule_choice="sampled", max_steps=6000)
    oracles = [OracleAgent(env, seed=seat) for seat in range(4)]

    def allowed(seat, action):
        assert env.allowed_actions()[action] or action >= cards.CHOOSE_RULE_0, (
            f"oracle chose {env.describe_action(action)}, which rules {env.active_rules()} forbid"
        )

    rng = np.random.default_rng(3)
    total_turns = 0
    for seed in range(4):
        rules = [int(r) for r in rng.choice(rule_library.N_RULES, size=6, replace=False)]
        calls, turns = play_game(env, oracles, seed=seed, options={"rules": rules}, check=allowed)
        assert calls.sum() == 0
        total_turns += turns.sum()
    assert total_turns > 100


def test_oracle_draws_fewer_calls_than_the_base_player_under_secret_rules():
    rules = [
        rule_id("when drawing a card, say 'That's the rabbit'"),
        rule_id("hearts may not be played on spades"),
        rule_id("when playing queens, say 'That's the hedgehog'"),
    ]
    env = raw_env(4, num_rounds=2, rule_choice="fixed", max_steps=6000)
    oracle_calls, oracle_turns, base_calls, base_turns = 0, 0, 0, 0
    for seed in range(2):
        # The same games: seat 0 is the oracle, then the base player, the rest base players.
        lineup = [OracleAgent(env, seed=0)] + [BaseRulesAgent(seed=s) for s in (1, 2, 3)]
        calls, turns = play_game(env, lineup, seed=seed, options={"rules": rules})
        oracle_calls += calls[0]
        oracle_turns += turns[0]
        lineup[0] = BaseRulesAgent(seed=0)
        calls, turns = play_game(env, lineup, seed=seed, options={"rules": rules})
        base_calls += calls[0]
        base_turns += turns[0]
    assert oracle_calls == 0
    assert base_calls / base_turns > 0.1  # it keeps forgetting "That's the rabbit" when it draws


def test_base_player_plays_the_only_good_card_and_says_every_base_phrase():
    # Seat 0 holds 7S and 9C on 7H: the seven is good; it needs "Have a nice day" and its name.
    env = scenario(4, hands={0: ["9C", "7S"], 1: ["2D"] * 2, 2: ["3D"] * 2, 3: ["4D"] * 2}, pile=["7H"],
                   stack=["KC", "QC", "KD", "QD"], pending_seven=0)  # fmt: skip
    actions = actions_to_the_end_of_turn(env, BaseRulesAgent(seed=0), max_actions=6)
    assert actions[0] == "play 7S"
    assert sorted(actions[1:-1]) == ["say card-name", "say last-card", "say nice-day"]
    assert actions[-1] == "end" and env.last_calls == []


def test_base_player_names_its_longest_suit_with_a_jack_and_says_mao_last():
    env = scenario(4, hands={0: ["JD"], 1: ["2H", "3H"], 2: ["2C", "3C"], 3: ["4S", "5S"]}, pile=["5D"],
                   stack=["KC", "QC", "KD", "QD"])  # fmt: skip
    agent = BaseRulesAgent(seed=0)
    first, *_ = env.last()
    assert env.describe_action(agent.act(first["observation"], first["action_mask"])) == "play JD"
    env.step(env.action_from_text("play JD"))
    texts = actions_to_the_end_of_turn(env, agent, max_actions=4)
    # No card left: any suit is "most held"; the suit comes first, Mao last, and the round is won.
    assert texts[0].startswith("say ") and texts[0][4:] in cards.PHRASE_KEYS[7:11]
    assert texts[-2:] == ["say mao", "end"]
    assert env.terminations["player_0"] and env.last_calls == []


def test_base_player_takes_the_seven_chain_and_says_penalty_card():
    env = scenario(4, hands={0: ["9C", "2D"], 1: ["2H"] * 2, 2: ["3H"] * 2, 3: ["4H"] * 2}, pile=["7C"],
                   stack=["KD", "QD", "10H"], pending_seven=2)  # fmt: skip
    texts = actions_to_the_end_of_turn(env, BaseRulesAgent(seed=0), max_actions=8)
    # Draw takes the two chain cards; then 9C follows clubs; "Penalty card" is due.
    assert texts[:2] == ["draw", "play 9C"]
    assert "say penalty-card" in texts and texts[-1] == "end"
    assert env.last_calls == []


def watch_rule(rule: int, seat_zero_act, turns: int = 40) -> None:
    """One game with ``rule`` active from the start: seat 0 acts with ``seat_zero_act(observation,
    mask)``, three base players (who fault on the rule) sit in the others, until seat 0 has taken
    ``turns`` turns."""
    env = raw_env(4, num_rounds=100, rule_choice="fixed", max_steps=100_000)
    lineup = [None] + [BaseRulesAgent(seed=s) for s in (2, 3, 4)]
    env.reset(seed=rule, options={"rules": [rule]})
    taken = 0
    while taken < turns:
        observation, _, terminated, truncated, _ = env.last()
        assert not (terminated or truncated)
        seat = env.current_seat
        obs, mask = observation["observation"], observation["action_mask"]
        action = seat_zero_act(obs, mask) if seat == 0 else lineup[seat].act(obs, mask)
        env.step(action)
        taken += seat == 0 and action == cards.END_TURN


def test_bayesian_posterior_concentrates_on_the_true_rule_from_observed_calls():
    """Controlled experiment: one secret rule at reset, three base players fault on it, the Bayesian
    player watches the calls. Within 40 of its own turns the posterior puts > 0.9 on the true rule."""
    for description in (
        "when drawing a card, say 'That's the rabbit'",
        "face cards may not be played on face cards",
        "when playing hearts, say 'Hearts'",
    ):
        rule = rule_id(description)
        bayes = BayesianRuleAgent(seed=1)
        watch_rule(rule, bayes.act)
        marginals = bayes.posterior.marginals()
        assert marginals[rule] > 0.9, (description, np.argsort(-marginals)[:3], np.sort(marginals)[-3:])
        assert marginals.sum() == pytest.approx(1.0, abs=1e-6)  # exactly one unknown rule


def test_posterior_branches_on_new_rules_and_keeps_its_own_authored_rules():
    posterior = RulePosterior()
    hands = {0: ["2C"], 1: ["2H"], 2: ["3C"], 3: ["4S"]}
    env = scenario(4, hands=hands, pile=["5D"], stack=["KC", "QC", "KD", "QD"], rules=[(7, 0), 12, 40])
    observation, *_ = env.last()
    view = parse_observation(observation["observation"])
    assert view.known == frozenset({7}) and view.n_active == 3
    posterior.observe(view)
    # Two unknown rules among the 44 not authored: every pair, equally likely.
    assert posterior.hypotheses.shape[0] == 44 * 43 // 2
    marginals = posterior.marginals()
    assert marginals[7] == pytest.approx(1.0)
    assert marginals.sum() == pytest.approx(3.0)
    assert np.allclose(np.delete(marginals, 7), 2 / 44)


def test_a_support_merges_repeated_rule_sets_in_the_order_of_their_rules():
    """``_set_support`` against the definition it replaced: rows packed to bytes (rule 0 the first
    bit), sorted and merged by numpy, their weights added in row order."""
    rng = np.random.default_rng(5)
    n_rules = rule_library.N_RULES
    for _ in range(300):
        sets = (rng.random((int(rng.integers(1, 12)), n_rules)) < rng.random()).astype(np.float32)
        rows = sets[rng.integers(0, sets.shape[0], int(rng.integers(1, 200)))]
        weights = rng.random(rows.shape[0])
        posterior = RulePosterior()
        posterior._set_support(rows, weights)
        unique, inverse = np.unique(np.packbits(rows > 0.5, axis=1), axis=0, return_inverse=True)
        merged = np.bincount(inverse.ravel(), weights=weights)
        assert np.array_equal(posterior.hypotheses, np.unpackbits(unique, axis=1, count=n_rules))
        assert posterior.hypotheses.dtype == np.float32
        assert np.array_equal(posterior.weights, merged / merged.sum())


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (lambda: BaseRulesAgent(seven_phrase="cheers"), ValueError, "seven_phrase must be one of"),
        (lambda: BayesianRuleAgent(play_threshold=1.5), ValueError, "play_threshold must be a probability"),
        (lambda: RulePosterior(eps=0.0), ValueError, "eps must be in"),
        (lambda: OracleAgent(object()), TypeError, "needs a Mao env"),
        (lambda: make_agent("oracle", "mao"), ValueError, "needs the env"),
    ],
    ids=["seven_phrase", "play_threshold", "eps", "oracle_without_env", "oracle_spec_without_env"],
)
def test_agent_options_are_checked(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_registry_passes_the_table_variants_to_the_rule_players():
    env = raw_env(3, talking=False, seven_phrase="thank you", rounds="cambridge", reasons="hidden")
    bayes = make_agent("bayes", "mao", seed=0, env=env)
    base = make_agent("base", "mao", seed=0, env=env)
    assert not bayes.talking and bayes.thank_you and not base.talking and base.thank_you
    assert not bayes.posterior.plain_rounds and bayes.posterior.hidden_reasons
    calls, turns = play_game(env, [bayes, base, make_agent("oracle", "mao", seed=1, env=env)], seed=2)
    assert turns.sum() > 5 and calls[2] == 0


def test_bayesian_batch_rows_forget_their_game_when_reset():
    """``act_batch`` keeps one posterior per row; ``reset_rows`` clears the rows whose games ended
    (a finished game's calls must not weigh on the next game in that row) and only those."""
    rule = rule_id("face cards may not be played on face cards")
    bayes = BayesianRuleAgent(seed=1)
    # Rows 0 and 1 both follow seat 0 of the game.
    watch_rule(rule, lambda obs, mask: int(bayes.act_batch(np.stack([obs, obs]), np.stack([mask, mask]))[0]))
    assert bayes.posteriors[0].marginals()[rule] > 0.9
    bayes.reset_rows(np.array([0]))
    assert 0 not in bayes.posteriors.held_keys() and bayes.posteriors[1].marginals()[rule] > 0.9
    BaseRulesAgent().reset_rows(np.array([0, 1]))  # memoryless agents accept it and do nothing


# ---- the rule choice: proposals, refusals as evidence ------------------------------------------
def seat_view(env, seat: int = 0):
    return parse_observation(env.observe(f"player_{seat}")["observation"])


def test_a_refused_proposal_rules_out_every_rule_set_without_that_rule():
    # Rules 3 and 30 are in force, seat 1's and seat 2's: two unknown rules for seat 0.
    env = won_round_table([(3, 1), (30, 2)])
    posterior = RulePosterior()
    posterior.observe(seat_view(env))
    assert posterior.hypotheses.shape[0] == 45 * 44 // 2 and posterior.n_unknown == 2
    events_seen = posterior.events_seen
    env.step(env.action_from_text("rule 30"))
    posterior.note_action(cards.CHOOSE_RULE_0 + 30)
    posterior.observe(seat_view(env))  # refused: seat 0 chooses again, knowing 30
    # Every rule set left holds 30 (those without it have likelihood 0): 30 with one of the 44
    # others; no event was made, none taken twice.
    assert (posterior.hypotheses[:, 30] == 1.0).all() and posterior.hypotheses.shape[0] == 44
    assert posterior.marginals()[30] == pytest.approx(1.0) and posterior.marginals().sum() == pytest.approx(
        2.0
    )
    assert posterior.known == {30} and posterior.n_unknown == 1 and posterior.events_seen == events_seen
    # A rule not in force is added: at the seat's next decision it knows 7 too, and 3 is still
    # one rule among the 43 others.
    env.step(env.action_from_text("rule 7"))
    posterior.note_action(cards.CHOOSE_RULE_0 + 7)
    while env.current_seat != 0:
        env.step(int(np.flatnonzero(env.observe(env.agent_selection)["action_mask"])[-1]))
    posterior.observe(seat_view(env))
    marginals = posterior.marginals()
    assert posterior.known == {7, 30} and posterior.n_unknown == 1
    assert marginals[7] == pytest.approx(1.0) and marginals[30] == pytest.approx(1.0)
    assert marginals.sum() == pytest.approx(3.0)


def test_a_player_proposes_the_rule_it_most_suspects_without_being_sure():
    mask = np.zeros(cards.n_actions(rule_library.N_RULES), dtype=np.int8)
    mask[cards.CHOOSE_RULE_0 :] = 1
    mask[cards.CHOOSE_RULE_0 + 5] = 0  # known to the seat: not offered
    in_force = np.zeros(rule_library.N_RULES)
    offered = [cards.CHOOSE_RULE_0 + r for r in range(rule_library.N_RULES) if r != 5]
    assert rules_to_propose(mask, in_force).tolist() == offered  # no suspicion: any rule
    in_force[[3, 12, 30, 5]] = [0.2, 1.0, 0.9, 0.95]
    # 12 is surely in force (proposing it would only be refused), 5 is not offered: 30.
    assert rules_to_propose(mask, in_force).tolist() == [cards.CHOOSE_RULE_0 + 30]
    in_force[:] = 1.0  # sure of everything: it still proposes (every offered rule)
    assert rules_to_propose(mask, in_force).tolist() == offered


def test_bayes_probes_the_rule_it_suspects_and_then_proposes_a_rule_not_in_force():
    env = won_round_table([(3, 1), (30, 2)])
    bayes = BayesianRuleAgent(seed=0)
    bayes.posterior.observe(seat_view(env))
    # Say the calls so far made it sure of rule 3 and suspect 30 over 12.
    bayes.posterior.hypotheses = hypotheses_from_sets([[3, 30], [3, 12]])
    bayes.posterior.weights = np.array([0.75, 0.25])
    observation = env.observe("player_0")
    action = bayes.act(observation["observation"], observation["action_mask"])
    assert action == cards.CHOOSE_RULE_0 + 30
    env.step(action)  # refused
    assert env.current_seat == 0 and env.refused_rules(0) == [30]
    observation = env.observe("player_0")
    action = bayes.act(observation["observation"], observation["action_mask"])
    assert bayes.posterior.hypotheses.tolist() == hypotheses_from_sets([[3, 30]]).tolist()
    assert action - cards.CHOOSE_RULE_0 not in (3, 30)  # sure of both: a rule not in force
    env.step(action)
    assert env.active_rules() == [(3, 1), (30, 2), (action - cards.CHOOSE_RULE_0, 0)]


def test_the_oracle_proposes_a_rule_not_in_force():
    rules = [(rule, 1) for rule in range(0, 31)]  # nothing here stops 9H on 5H with "Mao"
    for seed in range(5):
        env = won_round_table(rules)
        oracle = OracleAgent(env, seed=seed)
        observation = env.observe("player_0")
        action = oracle.act(observation["observation"], observation["action_mask"])
        assert action - cards.CHOOSE_RULE_0 >= 31


@pytest.mark.parametrize(
    "table",
    [{}, {"calls": "players"}, {"num_rounds": 2, "talking": False, "seven_phrase": "thank you"}],
    ids=["default", "players-calls", "rounds-no-talking"],
)
def test_the_base_players_batch_decides_as_it_does_row_by_row(table):
    """``BaseRulesAgent.act_batch`` (the views parsed for all rows at once) takes, and draws, what
    ``act`` takes row by row in row order, over the decisions of whole recorded games."""
    # Imported here: the recorder plays Bayesian players on the batched env.
    from madiao_mao.agents.mao.belief_speed import record

    batches, _options = record(12, 150, seed=4, **table)
    variants = {key: table[key] for key in ("talking", "seven_phrase") if key in table}
    batched, row_by_row = BaseRulesAgent(seed=9, **variants), BaseRulesAgent(seed=9, **variants)
    decided = 0
    for observations, masks, *_rest in batches:
        expected = [
            row_by_row.act(obs, mask) if mask.any() else -1
            for obs, mask in zip(observations, masks, strict=True)
        ]
        np.testing.assert_array_equal(batched.act_batch(observations, masks), expected)
        decided += int(masks.any(axis=1).sum())
    assert decided >= 1000


@pytest.mark.parametrize("player", ["base", "generic"])
def test_a_batch_whose_observations_and_masks_disagree_is_refused(player):
    class FirstLegal(Agent):
        def act(self, observation, action_mask):
            return int(np.flatnonzero(action_mask)[0])

    agent = BaseRulesAgent(seed=0) if player == "base" else FirstLegal()
    observations = np.zeros((2, raw_env().obs_dim), dtype=np.float32)
    masks = np.ones((3, cards.n_actions(rule_library.N_RULES)), dtype=bool)
    with pytest.raises(ValueError, match="disagree on the batch size: 2 vs 3"):
        agent.act_batch(observations, masks)
