"""Which data files (saved models, weights) the agents built in a block read.

Every loader of an agent's data file (a saved model, the card-location model, the caller's
weights) calls :func:`note_read`; :func:`recording_reads` collects those reads for the code it
wraps. The scorecard keys each cached pairing by the files its seats read
(``madiao_mao.training.scorecard.PairingCache``), so a new shipped model replays only the
pairings that seat it. An agent reads its files when it is built, never later
(``tests/common/test_data_files.py`` holds every agent to that).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path

# Per thread: a web server builds games in threads, and one game's reads are not another's.
_recorders = threading.local()


def note_read(path: str | Path) -> None:
    """Record that an agent's data file at ``path`` was read (in every recording open in this thread)."""
    for found in getattr(_recorders, "open", ()):
        found.add(Path(path).resolve())


@contextlib.contextmanager
def recording_reads() -> Iterator[set[Path]]:
    """The set of data files (resolved paths) read while the block runs, this thread's reads only;
    recordings nest (an outer one sees the inner one's reads too)."""
    found: set[Path] = set()
    stack = getattr(_recorders, "open", None)
    if stack is None:
        stack = _recorders.open = []
    stack.append(found)
    try:
        yield found
    finally:
        # By identity: list.remove would take the first equal set, an outer recording's when both
        # hold the same reads (two empty ones, say), and leave this one open in its place.
        del stack[next(k for k, open_set in enumerate(stack) if open_set is found)]
