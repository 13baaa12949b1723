"""The Madiao observation vectors as one table of named pieces per ``obs_type``.

Each piece is ``(name, size, description)``; a piece starts where the one before it ends. This
table is the one statement of the layout: it produces the offsets the Numba encoder in
``madiao_env.core`` writes at (module-level int constants there, read by Numba as compile-time
globals), the ``OBS_*``/``HIST_*`` slices ``madiao_env.env`` exports, the index tables of the
``madiao_env.env`` docstring (:func:`table_text`; a test checks the docstring holds exactly that
text) and the slices the scripted agents read by name (``madiao_mao.agents.madiao.obs_layout``).

Seats in an observation are relative: 0 is the observer, 1 the next seat to act after it, ...

After editing a piece, print the new docstring tables with ``python -m madiao_env.layout``. The
kernels recompile by themselves: their disk cache is stamped with this module's source as well
(``cardgame_core.jit``).
"""

from __future__ import annotations

import textwrap
from typing import NamedTuple

from madiao_env.cards import N_CARDS, N_SEATS, N_TRICKS

N_PHASES = 3  # redeal offer / play / over
#: A slot of the history's play record: relative seat one-hot, card one-hot, face-down flag.
HIST_SLOT_SIZE = N_SEATS + N_CARDS + 1
#: Play slots of the history record: every play of a hand.
HIST_PLAY_SLOTS = N_SEATS * N_TRICKS


class Piece(NamedTuple):
    """One named run of entries of an observation vector."""

    name: str
    size: int
    description: str


SUMMARY_PIECES = (
    Piece("OBS_HAND", N_CARDS, "cards held"),
    Piece("OBS_UPCARD", N_CARDS, "the upcard (one-hot)"),
    Piece("OBS_SEEN_FACE_UP", N_CARDS, "every card played face up this hand (current trick too)"),
    Piece("OBS_OWN_SLOUGHED", N_CARDS, "cards this seat sloughed face down this hand"),
    Piece(
        "OBS_TRICK_FACE_UP",
        N_SEATS * N_CARDS,
        "current trick by relative seat, 4 x 40: the face-up card played",
    ),
    Piece("OBS_TRICK_FACE_DOWN", N_SEATS, "current trick: relative seats that sloughed face down"),
    Piece("OBS_TRICK_FACE_DOWN_COUNT", 1, "current trick: number of face-down cards"),
    Piece("OBS_TRICK_LEADER", N_SEATS, "relative seat that led the current trick (all 0: none)"),
    Piece(
        "OBS_TRICK_PLAYS",
        (N_SEATS - 1) * (N_CARDS + 1),
        "current trick in play order, 3 x (card one-hot 40, face down 1)",
    ),
    Piece("OBS_TRICKS_WON", N_SEATS, "tricks won by relative seat (counts 0..8)"),
    Piece("OBS_BANKER", N_SEATS, "banker's relative seat (one-hot)"),
    Piece("OBS_FIRST", N_SEATS, "relative seat dealt first (one-hot)"),
    Piece("OBS_TRICK_NUMBER", N_TRICKS + 1, "tricks completed, 0..8 (one-hot)"),
    Piece("OBS_PHASE", N_PHASES, "redeal offer / play / over (one-hot)"),
    Piece("OBS_BEEN_BANKER", N_SEATS, "relative seats that have been banker in this match"),
    Piece("OBS_REDEAL_PASSED", N_SEATS, "relative seats that passed a redeal offer on this deal"),
)

#: The summary with the hand's record by seat appended: what each seat played face up, the cards
#: it won tricks with, and what it declined to beat, all public. The summary's pieces keep their
#: places, so a summary policy's weights carry over with zero weights for the new entries.
RECORD_PIECES = (
    *SUMMARY_PIECES,
    Piece(
        "OBS_FACE_UP_BY_SEAT",
        N_SEATS * N_CARDS,
        "every card played face up this hand by relative seat, 4 x 40 (current trick too)",
    ),
    Piece(
        "OBS_WON_WITH_BY_SEAT",
        N_SEATS * N_CARDS,
        "the winning card of every trick won this hand, by relative seat of the winner, 4 x 40",
    ),
    Piece(
        "OBS_SLOUGHED_UNDER_BY_SEAT",
        N_SEATS * N_CARDS,
        "by relative seat, 4 x 40: for each face-down slough this hand, the best face-up card of"
        " its trick when the seat sloughed (the card it did not beat)",
    ),
    Piece("OBS_SLOUGHS_BY_SEAT", N_SEATS, "face-down cards sloughed this hand, by relative seat (0..8)"),
)

HISTORY_PIECES = (
    Piece("HIST_HAND_DEALT", N_CARDS, "the observer's 8 cards as dealt"),
    Piece("HIST_HAND", N_CARDS, "cards held now"),
    Piece("HIST_UPCARD", N_CARDS, "the upcard (one-hot)"),
    Piece("HIST_BANKER", N_SEATS, "banker's relative seat"),
    Piece("HIST_FIRST", N_SEATS, "relative seat dealt first"),
    Piece("HIST_REDEAL_PASSED", N_SEATS, "relative seats that passed a redeal offer on this deal"),
    Piece("HIST_BEEN_BANKER", N_SEATS, "relative seats that have been banker in this match"),
    Piece("HIST_PHASE", N_PHASES, "redeal offer / play / over"),
    Piece(
        "HIST_PLAYS",
        HIST_PLAY_SLOTS * HIST_SLOT_SIZE,
        "32 play slots in order (slot k = trick k // 4), 45 each: relative seat one-hot (4), card"
        ' one-hot (40), face down (1). Another seat\'s face-down card is only "a face-down card": its'
        " card one-hot is all zeros; the observer's own sloughs are shown.",
    ),
)

PIECES = {"summary": SUMMARY_PIECES, "history": HISTORY_PIECES, "record": RECORD_PIECES}
#: The observation variants; a variant's place here is its code in the kernels' config row.
OBS_TYPES = tuple(PIECES)


def slices_of(pieces: tuple[Piece, ...]) -> dict[str, slice]:
    """Each piece's ``slice`` of the observation vector, by name, in layout order."""
    slices: dict[str, slice] = {}
    start = 0
    for piece in pieces:
        slices[piece.name] = slice(start, start + piece.size)
        start += piece.size
    return slices


SUMMARY_SLICES = slices_of(SUMMARY_PIECES)
HISTORY_SLICES = slices_of(HISTORY_PIECES)
RECORD_SLICES = slices_of(RECORD_PIECES)
SLICES = {"summary": SUMMARY_SLICES, "history": HISTORY_SLICES, "record": RECORD_SLICES}
SUMMARY_SIZE = sum(piece.size for piece in SUMMARY_PIECES)
HISTORY_SIZE = sum(piece.size for piece in HISTORY_PIECES)
RECORD_SIZE = sum(piece.size for piece in RECORD_PIECES)
OBS_SIZES = {"summary": SUMMARY_SIZE, "history": HISTORY_SIZE, "record": RECORD_SIZE}

_CONTENT_WIDTH = 66


def summary_part(observations, reader: str):
    """The summary entries of summary or record observations (last axis): a record observation
    begins with the summary. ``ValueError`` naming ``reader`` for any other length (a history
    observation would decode without error into a wrong view)."""
    length = observations.shape[-1]
    if length not in (SUMMARY_SIZE, RECORD_SIZE):
        raise ValueError(
            f"{reader} reads summary observations ({SUMMARY_SIZE} entries, or {RECORD_SIZE} with the record "
            f"by seat), got {length} (an env with obs_type='history'?)"
        )
    return observations[..., :SUMMARY_SIZE]


def table_text(obs_type: str) -> str:
    """The reStructuredText index table of an ``obs_type`` (as in the ``madiao_env.env`` docstring)."""
    if obs_type not in PIECES:
        raise ValueError(f"obs_type must be one of {sorted(PIECES)}, got {obs_type!r}")
    slices = SLICES[obs_type]
    rows = []
    for piece in PIECES[obs_type]:
        where = slices[piece.name]
        index = str(where.start) if piece.size == 1 else f"{where.start}..{where.stop - 1}"
        rows.append((index, piece.name, textwrap.wrap(piece.description, _CONTENT_WIDTH)))
    index_width = max(len("index"), *(len(index) for index, _, _ in rows)) + 1
    name_width = max(len("name"), *(len(name) for _, name, _ in rows)) + 1
    rule = f"{'=' * index_width} {'=' * name_width} {'=' * _CONTENT_WIDTH}"
    lines = [rule, f"{'index':<{index_width}} {'name':<{name_width}} content", rule]
    for index, name, content in rows:
        lines.append(f"{index:<{index_width}} {name:<{name_width}} {content[0]}")
        lines.extend(f"{'':<{index_width}} {'':<{name_width}} {more}" for more in content[1:])
    lines.append(rule)
    return "\n".join(lines)


if __name__ == "__main__":
    for kind in PIECES:
        print(f'``obs_type="{kind}"``, {OBS_SIZES[kind]} entries:\n\n{table_text(kind)}\n')
