"""Plain-text rendering of a Madiao table (``render_mode`` "ansi" returns it, "human" prints it)."""

from __future__ import annotations

from typing import Any


def render_table(table: dict[str, Any], infos: dict[str, dict] | None = None) -> str:
    """The table as text: hands, upcard, stock, current trick, tricks won, last settlement."""
    banker = table["banker"]
    roles = {
        banker: "banker",
        (banker + 1) % 4: "dealer",
        (banker + 2) % 4: "opposite",
        (banker + 3) % 4: "shuffler",
    }
    lines = [
        f"Madiao hand {table['hand_number']}  phase: {table['phase']}  trick {table['trick_number']}/8"
        f"  redeals: {table['redeals']}",
        f"upcard: {table['stock'][0]}   stock (upcard first): {' '.join(table['stock'])}",
    ]
    for seat in range(4):
        marks = []
        if seat == table["first"]:
            marks.append("dealt first")
        if seat == table["to_act"]:
            marks.append("to act")
        extra = f" ({', '.join(marks)})" if marks else ""
        lines.append(
            f"seat {seat} {roles[seat]:>8}: tricks {table['tricks_won'][seat]}  "
            f"hand: {' '.join(table['hands'][seat]) or '-'}{extra}"
        )
    if table["current_trick"]:
        plays = ", ".join(
            f"seat {seat} {name if face_up else '(' + name + ' face down)'}"
            for seat, name, face_up in table["current_trick"]
        )
        lines.append(f"current trick: {plays}")
    info = next((i for i in (infos or {}).values() if "settlement" in i), None)
    if info is not None:
        lines.append(f"settlement of hand {info.get('hand_number', '?')}:")
        for line in info["settlement"]:
            lines.append(
                f"  {line['rule']:<26} seat {line['payer']} pays seat {line['payee']} {line['stakes']:g}"
            )
        lines.append("  payoffs by seat: " + " ".join(f"{p:+g}" for p in info["payoffs"]))
    return "\n".join(lines)
