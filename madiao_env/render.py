"""Plain-text rendering of a Madiao table (``render_mode`` "ansi" returns it, "human" prints it)."""

from __future__ import annotations

from typing import Any


def render_table(
    table: dict[str, Any], settlement: dict[str, Any] | None = None, seat: int | None = None
) -> str:
    """The table as text: hands, upcard, stock, current trick, tricks won, and ``settlement`` (the
    env's ``last_settlement``: ``{"hand_number", "lines", "payoffs"}``) if given.

    ``seat=None``: the full table (every hand, the whole stock). ``seat=k``: what seat ``k`` sees:
    its own hand, the other hands as card counts, the upcard only (and the card under it once the
    stock check exposed it), the other seats' face-down plays as "face down".
    """
    banker = table["banker"]
    roles = {
        banker: "banker",
        (banker + 1) % 4: "dealer",
        (banker + 2) % 4: "opposite",
        (banker + 3) % 4: "shuffler",
    }
    header = (
        f"Madiao hand {table['hand_number']}  phase: {table['phase']}  trick {table['trick_number']}/8"
        f"  redeals: {table['redeals']}"
    )
    stock = table["stock"]
    if seat is None:
        lines = [header, f"upcard: {stock[0]}   stock (upcard first): {' '.join(stock)}"]
    else:
        # The stock check after the eighth trick turns up the card under the upcard.
        shown = 2 if table["phase"] == "over" and table["trick_number"] == 8 else 1
        lines = [
            f"{header}  (view of seat {seat})",
            f"upcard: {stock[0]}   stock (upcard first): {' '.join(stock[:shown])}"
            f" + {len(stock) - shown} face down",
        ]
    for other in range(4):
        marks = []
        if other == table["first"]:
            marks.append("dealt first")
        if other == table["to_act"]:
            marks.append("to act")
        extra = f" ({', '.join(marks)})" if marks else ""
        hand = table["hands"][other]
        held = (" ".join(hand) or "-") if seat is None or other == seat else f"{len(hand)} cards"
        lines.append(
            f"seat {other} {roles[other]:>8}: tricks {table['tricks_won'][other]}  hand: {held}{extra}"
        )
    if table["current_trick"]:
        plays = ", ".join(
            f"seat {player} {_play_text(name, face_up, seat is None or player == seat)}"
            for player, name, face_up in table["current_trick"]
        )
        lines.append(f"current trick: {plays}")
    if settlement is not None:
        lines.append(f"settlement of hand {settlement['hand_number']}:")
        for line in settlement["lines"]:
            lines.append(
                f"  {line['rule']:<26} seat {line['payer']} pays seat {line['payee']} {line['stakes']:g}"
            )
        lines.append("  payoffs by seat: " + " ".join(f"{p:+g}" for p in settlement["payoffs"]))
    return "\n".join(lines)


def _play_text(name: str, face_up: bool, card_visible: bool) -> str:
    if face_up:
        return name
    return f"({name} face down)" if card_visible else "(face down)"
