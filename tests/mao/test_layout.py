"""The observation layout is one table of named pieces (``mao_env.layout``): the kernels write at
its offsets, agents read its pieces by name, and the env docstring shows the table it generates."""

from __future__ import annotations

import inspect
import re

import numpy as np
import pytest

from madiao_mao.agents.mao import beliefs as mao_beliefs
from madiao_mao.agents.mao import features as mao_features
from mao_env import cards, core, layout
from mao_env import env as mao_env_module
from mao_env import rules as rule_library
from mao_env.layout import EVENT_SLICES, SLICES
from tests.mao.mao_helpers import make, random_legal


def test_the_env_docstring_holds_the_generated_table():
    doc = mao_env_module.__doc__
    assert layout.docstring_table() in doc
    assert f"``E = {layout.EVENT_FEATURES}`` features per event" in doc
    assert f"``R = {rule_library.N_RULES}`` library rules" in doc


def test_pieces_tile_the_observation_without_gaps():
    starts = [SLICES[p.name].start for p in layout.STATE_PIECES]
    stops = [SLICES[p.name].stop for p in layout.STATE_PIECES]
    assert starts[0] == 0 and starts[1:] == stops[:-1] and stops[-1] == layout.OFF_EVENTS
    event_pieces = (*layout.EVENT_PIECES, layout.REVEALED_PIECE)
    starts = [EVENT_SLICES[p.name].start for p in event_pieces]
    stops = [EVENT_SLICES[p.name].stop for p in event_pieces]
    assert starts[0] == 0 and starts[1:] == stops[:-1]
    assert EVENT_SLICES["rules"].start == layout.EVENT_FEATURES
    for n_events in (0, 3, 16):
        for reasons, code in (("calls", core.REASONS_CALLS), ("revealed", core.REASONS_REVEALED)):
            assert core.obs_size(n_events, code) == layout.obs_size(n_events, reasons == "revealed")
            assert make(3, n_events=n_events, reasons=reasons).obs_dim == core.obs_size(n_events, code)


def test_agents_read_pieces_by_name():
    for module in (mao_beliefs, mao_features):
        source = inspect.getsource(module)
        assert not re.findall(r"core\.OFF_|EV_COUNTS|EV_[A-Z]+ \+ \d", source), module.__name__
        assert not re.findall(r"N_PHRASES \+ 3", source), module.__name__


@pytest.mark.parametrize("reasons", ["calls", "revealed", "hidden"])
def test_named_pieces_hold_what_their_names_say(reasons):
    """Play random games; every observation's pieces, read by name, match the env's own state and
    its public event records."""
    rng = np.random.default_rng(7)
    env = make(4, n_events=5, reasons=reasons)
    env.reset(seed=11, options={"rules": [0, 20, 33]})
    for _ in range(250):
        agent = env.agent_selection
        seat = env.possible_agents.index(agent)
        obs = env.observe(agent)["observation"]
        hands, _, _, scalars, _ = env._state[:5]
        assert np.array_equal(obs[SLICES["hand"]], hands[0, seat])
        assert obs[SLICES["top"]][cards.card_id(env.top_card())] == 1.0
        assert obs[SLICES["stack"]][0] == scalars[0, core.S_STACK_SIZE]
        assert obs[SLICES["pile"]][0] == scalars[0, core.S_PILE_SIZE]
        assert obs[SLICES["n_rules"]][0] == len(env.active_rules())
        sizes = [hands[0, (seat + rel) % 4].sum() for rel in range(4)]
        assert np.array_equal(obs[SLICES["hand_sizes"]][:4], sizes)
        width = layout.event_width(reasons == "revealed")
        records = env.public_events()[::-1][: env.n_events]
        for k, record in enumerate(records):
            row = obs[layout.OFF_EVENTS + k * width : layout.OFF_EVENTS + (k + 1) * width]
            assert row[EVENT_SLICES["present"]][0] == 1.0
            assert np.argmax(row[EVENT_SLICES["seat"]]) == (record["seat"] - seat) % 4
            kinds = ("play", "bad card", "draw", "new rule")
            assert kinds[int(np.argmax(row[EVENT_SLICES["kind"]]))] == record["kind"]
            card = row[EVENT_SLICES["card"]]
            assert (cards.CARD_NAMES[int(np.argmax(card))] if card.any() else None) == record["card"]
            said = [cards.PHRASE_KEYS[p] for p in np.flatnonzero(row[EVENT_SLICES["phrases"]])]
            assert said == record["phrases"]
            assert row[EVENT_SLICES["n_calls"]][0] == record["n_calls"]
            assert row[EVENT_SLICES["penalty_cards"]][0] == record["penalty_cards"]
            assert row[EVENT_SLICES["chain_cards"]][0] == record["chain_cards"]
            assert row[EVENT_SLICES["forced_draw"]][0] == record["forced_draw"]
            assert bool(row[EVENT_SLICES["won"]][0]) == record["won"]
            suit = row[EVENT_SLICES["named_suit"]]
            assert (cards.SUIT_NAMES[int(np.argmax(suit))] if suit.any() else None) == record["named_suit"]
            call_bits = sum(1 << int(b) for b in np.flatnonzero(row[EVENT_SLICES["calls"]]))
            assert call_bits == record.get("call_bits", 0)
            if reasons == "revealed":
                assert list(np.flatnonzero(row[EVENT_SLICES["rules"]])) == record["rules"]
        parsed = mao_beliefs.parse_observation(obs)
        assert len(parsed.event_rows) == len(records)
        env.step(random_legal(rng, env._mask))
        if env.terminations[env.agent_selection] or env.truncations[env.agent_selection]:
            env.reset(seed=int(rng.integers(1 << 30)), options={"rules": [0, 20, 33]})
