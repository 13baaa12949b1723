"""Helpers for hand-worked Madiao scenarios: set the deal, play the cards by text, read the payments.

A *script* is a list of tricks; each trick is a string of plays in play order, starting with the
leader: ``"0:2S 1:5S 3:~100T"`` means seat 0 leads 2S face up, seat 1 plays 5S face up, seat 3
sloughs 100T face down. Seats not listed slough a filler card face down. The helper derives every
seat's hand from the script (plus fillers), sets it with the ``hands`` reset option, checks that the
deal was kept (no meld, no four lowest), and plays the tricks, asserting before each play that the
env has that seat to act: so the leader of every trick (the previous trick's winner) is checked too.
The expected payments are written out by hand in each test; nothing here knows the rules.
"""

from __future__ import annotations

import numpy as np

from madiao_env import cards, madiao_v0

# Cards that stay in the stock unless a script uses them (so they are nobody's by default):
# 100T there means "no Hundred Myriad lines", 9C there rules out the four lowest in a hand.
STOCK_PREFERENCE = ["100T", "9C", "1000T", "10000T", "0C", "9S", "9M", "HC", "8S", "8M", "90T"]
# Filler sloughs, suits interleaved so that no hand becomes a flush by accident.
FILLER_ORDER = [f"{n}{s}" for n in range(2, 9) for s in ("C", "S", "M")] + [
    "1C",
    "1S",
    "1M",
    "20T",
    "30T",
    "40T",
    "50T",
    "60T",
    "70T",
    "80T",
    "90T",
    "HC",
    "0C",
    "9S",
    "9M",
]


def parse_script(script: list[str]) -> list[list[tuple[int, str, bool]]]:
    tricks = []
    for trick in script:
        plays = []
        for token in trick.split():
            seat_text, card = token.split(":")
            face_up = not card.startswith("~")
            plays.append((int(seat_text), card.lstrip("~"), face_up))
        tricks.append(plays)
    return tricks


def build_deal(script, upcard, exposed, stock_extra=()):
    """Hands by seat, the stock (upcard first) and the full play list (seat, action text)."""
    tricks = parse_script(script)
    explicit = {card for trick in tricks for _, card, _ in trick}
    reserved = explicit | {upcard, exposed} | set(stock_extra)
    assert len(reserved) == len(explicit) + 2 + len(stock_extra), "a card is used twice"
    leftover = [c for c in cards.CARD_NAMES if c not in reserved]
    stock_rest = list(stock_extra)
    for name in STOCK_PREFERENCE + FILLER_ORDER[::-1]:
        if len(stock_rest) == 6:
            break
        if name in leftover and name not in stock_rest:
            stock_rest.append(name)
    fillers = [c for c in FILLER_ORDER if c in leftover and c not in stock_rest]
    fillers += [c for c in leftover if c not in fillers and c not in stock_rest]
    hands: list[list[str]] = [[], [], [], []]
    plays = []
    for trick in tricks:
        leader = trick[0][0]
        listed = {seat: (card, face_up) for seat, card, face_up in trick}
        assert len(listed) == len(trick), f"a seat plays twice in {trick}"
        for k in range(4):
            seat = (leader + k) % 4
            if seat in listed:
                card, face_up = listed[seat]
            else:
                card, face_up = fillers.pop(0), False
            hands[seat].append(card)
            plays.append((seat, f"{'play' if face_up else 'slough'} {card}"))
    stock = [upcard, exposed, *stock_rest]
    assert all(len(h) == 8 for h in hands), hands
    return hands, stock, plays


def make_env(**kwargs):
    """The raw env with redeal offers off unless a test asks (scripts then start with the lead)."""
    kwargs.setdefault("max_redeals", 0)
    return madiao_v0.raw_env(**kwargs)


def set_deal(env, hands, stock, banker, first, seed=0):
    env.reset(seed=seed, options={"hands": hands, "stock": stock, "banker": banker, "first": first})
    table = env.table()
    expected = [sorted(h, key=cards.card_id) for h in hands]
    assert table["hand_number"] == 0 and table["hands"] == expected, (
        "the deal was not kept (a meld or the four lowest?)"
    )
    return env


def step_text(env, seat: int, text: str) -> None:
    table = env.table()
    assert table["to_act"] == seat, f"expected seat {seat} to act for {text!r}, env has {table['to_act']}"
    env.step(cards.text_to_action(text))


def play_script(
    script,
    *,
    banker=0,
    upcard="5M",
    exposed="6M",
    stock_extra=(),
    stop_before=None,
    **env_kwargs,
):
    """Deal from a script, play it (up to play index ``stop_before`` if given) and return the env."""
    hands, stock, plays = build_deal(script, upcard, exposed, stock_extra)
    env = set_deal(make_env(**env_kwargs), hands, stock, banker, plays[0][0])
    for index, (seat, text) in enumerate(plays):
        if stop_before is not None and index == stop_before:
            return env
        step_text(env, seat, text)
    return env


def settlement(env) -> list[tuple[str, int, int, float]]:
    """The last settlement's lines as sorted (rule, payer, payee, stakes) tuples."""
    lines = env.unwrapped.last_settlement["lines"]
    return sorted((line["rule"], line["payer"], line["payee"], line["stakes"]) for line in lines)


def payoffs(env) -> list[float]:
    return list(env.infos["player_0"]["payoffs"])


def env_after_random_actions(n_actions: int, seed: int = 0, **env_kwargs):
    """A raw env reset with ``seed`` that then took ``n_actions`` random legal actions (drawn
    with the same seed)."""
    env = madiao_v0.raw_env(**env_kwargs)
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(n_actions):
        mask = env.observe(env.agent_selection)["action_mask"]
        env.step(int(rng.choice(np.flatnonzero(mask))))
    return env


def searched_decisions(env, agent, seat: str, others, seed: int) -> list[tuple[object, int]]:
    """One hand of the wrapped env from ``reset(seed)``: ``agent`` plays ``seat``, ``others`` (one
    agent) every other seat. Returns ``(agent.last_decision, action)`` for each action the agent
    chose by a search; every action it took was legal."""
    decisions = []
    env.reset(seed=seed)
    for name in env.agent_iter():
        seen, _, terminated, truncated, _ = env.last()
        if terminated or truncated:
            env.step(None)
            continue
        if name == seat:
            action = agent.act(seen["observation"], seen["action_mask"])
            assert seen["action_mask"][action]
            if agent.last_decision is not None:
                decisions.append((agent.last_decision, action))
        else:
            action = others.act(seen["observation"], seen["action_mask"])
        env.step(action)
    return decisions


def finish_randomly(env, seed: int = 0) -> None:
    """Play random legal actions until the episode is over (raw env)."""
    rng = np.random.default_rng(seed)
    while env.agents and not env.terminations[env.agent_selection]:
        mask = env.observe(env.agent_selection)["action_mask"]
        env.step(int(rng.choice(np.flatnonzero(mask))))
