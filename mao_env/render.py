"""Plain-text rendering of a Mao table (``render_mode`` "ansi" returns it, "human" prints it).

Everything here reads the env and writes nothing to the game: the Mao Master's view with every
hand (:func:`master_view`), one seat's view (:func:`seat_view`), the table talk of the public
events (:func:`narrate`, :func:`event_text`) and the calls as the Mao Master says them
(:func:`describe_call`). The env (``mao_env.env.raw_env``) keeps the text it has yet to show.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from mao_env import cards, core
from mao_env import rules as rule_library
from mao_env import state as snapshots
from mao_env.options import check_int

if TYPE_CHECKING:  # the env imports this module: the type alone avoids an import cycle
    from mao_env.env import raw_env

CALL_REASONS = {
    core.CALL_BAD_CARD: "bad card",
    core.CALL_FAILURE_TO_SAY: "failure to say",
    core.CALL_TALKING: "talking",
    core.CALL_MAO: "mao",
    core.CALL_BAD_CALL: "bad call",
}


def describe_call(code: int, phrase: int, reasons: str = "calls", rule: int = -1) -> str:
    """The formal penalty call as the Mao Master says it."""
    if reasons == "hidden":
        return "Penalty"
    if code == core.CALL_BAD_CARD:
        text = "Bad card"
    elif code == core.CALL_FAILURE_TO_SAY:
        text = f"Failure to say '{cards.PHRASES[phrase]}'"
    elif code == core.CALL_TALKING:
        text = "Talking"
    elif code == core.CALL_BAD_CALL:
        text = "Bad call"
    else:
        text = "Taking the name of the great Chinese leader in vain"
    if reasons == "revealed" and rule >= 0:
        text += f" (rule {rule}: {rule_library.RULE_DESCRIPTIONS[rule]})"
    return text


# The few distinct call texts, formatted once each (the step path records calls often).
call_text = functools.cache(describe_call)


def narrate(env: raw_env, since: int, last_calls: list[dict[str, Any]]) -> list[str]:
    """The table talk of every public event from event number ``since`` on (``last_calls``: the
    calls of the step that made them, as the Mao Master announced them)."""
    lines = []
    for _, event in env.game_view.recent_events(since):
        name = env.possible_agents[event.seat]
        kind = event.kind
        if kind == core.KIND_RULE_ADDED:
            lines.append(f'{name}: "Introducing a new rule."')
            continue
        if kind in (core.KIND_CALL, core.KIND_POINT_OF_ORDER):
            lines.append("  " + event_text(env, event))
            continue
        card = event.card
        said = phrases_said(event)
        action = f"plays {cards.CARD_NAMES[card]}" if card >= 0 else "draws"
        if event.chain_cards:
            action = f"takes {event.chain_cards} for the sevens, " + action
        speech = f", saying {', '.join(repr(p) for p in said)}" if said else ""
        lines.append(f"{name} {action}{speech}.")
        if env.options.calls != "players" and (kind == core.KIND_BAD_CARD or event.n_calls):
            for call in last_calls:
                n = call["cards"]
                taken = f"{call['player']} takes {n} card{'s' if n > 1 else ''}"
                lines.append(f'  Mao Master: "{call["call"]}." ({taken})')
        if event.forced_draw:
            forced_seat = env.possible_agents[event.forced_seat]
            lines.append(f"  {forced_seat} takes {event.forced_draw} card(s).")
        if event.named_suit >= 0:
            lines.append(f"  The suit is now {cards.SUIT_NAMES[event.named_suit]}.")
        if event.won:
            lines.append(f"  {name} wins the round.")
    return lines


def master_view(env: raw_env, announcements: list[str]) -> str:
    """The Mao Master's view: the table talk ``announcements``, the table, every hand."""
    game = env.game_view
    lines = list(announcements)
    named = game.named_suit
    lines.append(
        f"top {env.top_card()}"
        + (f" (suit named: {cards.SUIT_NAMES[named]})" if named >= 0 else "")
        + f" | direction {'+' if game.direction > 0 else '-'}"
        + f" | stack {game.stack_size} | pile {game.pile_size}"
        + (f" | seven chain {game.pending_seven}" if game.pending_seven else "")
    )
    for seat, agent in enumerate(env.possible_agents):
        marker = ">" if seat == env.current_seat else " "
        lines.append(f"{marker} {agent}: {' '.join(env.hand(seat))}")
    return "\n".join(lines)


def seat_view(env: raw_env, seat: int, n_recent: int = 8) -> str:
    """The table as seat ``seat`` sees it (``raw_env.seat_view``, which documents it)."""
    seat = check_int("seat", seat, 0, env.n_players - 1)
    n_recent = check_int("n_recent", n_recent, 0, core.EVENT_SLOTS)
    env._require_reset()
    game = env.game_view
    named = game.named_suit
    top = game.top_card()
    follow = cards.SUIT_NAMES[named if named >= 0 else int(cards.CARD_SUIT[top])]
    name = env.possible_agents[seat]
    round_number = min(game.rounds_finished + 1, env.num_rounds)
    lines = [
        f"{name} (you) | round {round_number} of {env.num_rounds} | step {game.steps}",
        f"top card {env.top_card()} | suit to follow {follow}{' (named)' if named >= 0 else ''}"
        f" | direction {'+' if game.direction > 0 else '-'}"
        f" | stack {game.stack_size} | pile {game.pile_size}"
        + (f" | seven chain {game.pending_seven}" if game.pending_seven else ""),
    ]
    own = env.hand(seat)
    lines.append(f"your hand ({len(own)}): {' '.join(own)}")
    acting = env.current_seat
    for other, agent in enumerate(env.possible_agents):
        if other != seat:
            n = len(env.hand(other))
            lines.append(f"{'>' if other == acting else ' '} {agent}: {n} card{'' if n == 1 else 's'}")
    phase = game.phase
    if phase == core.PH_OVER:
        lines.append("the episode is over")
    elif phase == core.PH_CHOOSE_RULE:
        lines.append(f"{env.possible_agents[acting]} won the round and chooses a new rule")
    elif phase == core.PH_CALL or acting == seat:
        turn = []
        if game.took_seven:
            turn.append(f"took {game.took_seven} for the sevens")
        if game.played >= 0:
            turn.append(f"played {cards.CARD_NAMES[game.played]}")
        if game.drew:
            turn.append("drew a card")
        said = [cards.PHRASES[p] for p in range(cards.N_PHRASES) if (game.said >> p) & 1]
        if said:
            turn.append("said " + ", ".join(repr(p) for p in said))
        if phase == core.PH_CALL:
            mover = game.mover
            whose = "your turn" if mover == seat else f"{env.possible_agents[mover]}'s turn"
            caller = "you" if acting == seat else env.possible_agents[acting]
            lines.append(f"calls on {whose}" + (": " + "; ".join(turn) if turn else ""))
            lines.append(f"{caller} to call or pass")
        else:
            lines.append("your turn" + (": " + "; ".join(turn) if turn else ""))
    else:
        lines.append(f"{env.possible_agents[acting]} to act")
    active = game.active_rules()
    authored = [rule for rule, author in active if author == seat]
    lines.append(f"secret rules in force: {len(active)}; yours: {len(authored)}")
    lines += [f"  rule {rule}: {rule_library.RULE_DESCRIPTIONS[rule]}" for rule in authored]
    refused = env.refused_rules(seat)
    if refused:
        lines.append("refused to you as already in force:")
        lines += [f"  rule {rule}: {rule_library.RULE_DESCRIPTIONS[rule]}" for rule in refused]
    recent = game.recent_events(game.n_events - n_recent)
    if recent:
        lines.append("recently:")
        lines += ["  " + event_text(env, event) for _, event in recent]
    return "\n".join(lines)


def event_text(env: raw_env, event: snapshots.Event) -> str:
    """One public event as the table saw and heard it (from the record alone)."""
    name = env.possible_agents[event.seat]
    kind = event.kind
    reasons = env.reasons
    if kind == core.KIND_RULE_ADDED:
        return f'{name}: "Introducing a new rule."'
    if kind == core.KIND_POINT_OF_ORDER:
        return f'{name}: "Point of order." (the calls on the turn are settled) "End of point of order."'
    if kind == core.KIND_CALL:
        call = "; ".join(event_calls(event, reasons)) or "Penalty"
        n = event.penalty_cards
        if event.bad_calls and reasons != "hidden":
            return f'{name} calls "{call}": bad call, {name} takes {n} card{"s" if n > 1 else ""}.'
        return f'{name} calls "{call}" ({n} penalty card{"s" if n > 1 else ""}).'
    card = event.card
    parts = []
    if event.chain_cards:
        parts.append(f"takes {event.chain_cards} for the sevens")
    if card >= 0:
        parts.append(
            f"plays {cards.CARD_NAMES[card]}" + (" (taken back)" if kind == core.KIND_BAD_CARD else "")
        )
    elif kind == core.KIND_DRAW and not (event.chain_cards and env.seven_turn_ends):
        parts.append("draws")
    text = f"{name} {', '.join(parts) or 'ends the turn'}"
    said = phrases_said(event)
    if said:
        text += ", saying " + ", ".join(repr(p) for p in said)
    calls = event_calls(event, reasons)
    players_call = env.options.calls == "players"
    if calls:
        who = "Calls that stood" if players_call else "Mao Master"
        text += f'. {who}: "{"; ".join(calls)}." ({event.penalty_cards} penalty card(s))'
    if players_call and event.bad_calls and reasons != "hidden":
        text += ". Bad calls: " + ", ".join(reason_texts(event.bad_calls))
    if event.forced_draw:
        forced = env.possible_agents[event.forced_seat]
        text += f". {forced} takes {event.forced_draw} card(s)"
    if event.named_suit >= 0:
        text += f". The suit is now {cards.SUIT_NAMES[event.named_suit]}"
    if event.won:
        text += f". {name} wins the round"
    return text + "."


def event_calls(event: snapshots.Event, reasons: str) -> list[str]:
    """The calls of a public event as the ``reasons`` mode lets the table hear them."""
    n_calls = event.n_calls
    if not n_calls:
        return []
    if reasons == "hidden":
        return ["Penalty"] * n_calls
    bits = event.calls
    calls = []
    if (bits >> core.CALL_BIT_BAD_CARD) & 1:
        calls.append("Bad card")
    calls += [f"Failure to say '{cards.PHRASES[p]}'" for p in range(cards.N_PHRASES) if (bits >> p) & 1]
    if (bits >> core.CALL_BIT_TALKING) & 1:
        calls.append("Talking")
    if (bits >> core.CALL_BIT_MAO) & 1:
        calls.append("Taking the name of the great Chinese leader in vain")
    if reasons == "revealed":
        calls += [
            f"rule {rule}: {rule_library.RULE_DESCRIPTIONS[rule]}"
            for rule in range(rule_library.N_RULES)
            if (event.rule_bits >> rule) & 1
        ]
    return calls


def reason_texts(bits: int) -> list[str]:
    """The call reasons of a bit set, as called."""
    texts = [describe_call(core.CALL_BAD_CARD, -1)] if (bits >> cards.CALL_REASON_BAD_CARD) & 1 else []
    texts += [describe_call(core.CALL_FAILURE_TO_SAY, p) for p in range(cards.N_PHRASES) if (bits >> p) & 1]
    if (bits >> cards.CALL_REASON_TALKING) & 1:
        texts.append(describe_call(core.CALL_TALKING, -1))
    if (bits >> cards.CALL_REASON_MAO) & 1:
        texts.append(describe_call(core.CALL_MAO, cards.MAO))
    return texts


def phrases_said(event: snapshots.Event) -> list[str]:
    """The phrases of a public event as spoken ("the name of the card" spoken as the card's name)."""
    card = event.card
    return [
        cards.long_card_name(card).capitalize() if p == cards.CARD_NAME and card >= 0 else cards.PHRASES[p]
        for p in range(cards.N_PHRASES)
        if (event.phrases >> p) & 1
    ]
