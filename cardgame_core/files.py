"""Writing files so that a crash leaves either the old file or the new one, never half of one.

Run folders (checkpoints, ``state.json``, ``league.json``) and game records of both games are
written this way; the module needs nothing beyond the standard library so that the game packages
can use it without the training extra.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any


def _temporary_beside(path: Path) -> Path:
    """A temporary file's path in ``path``'s folder, its own to this process and thread: writers
    of the same file at once (scorecard jobs filling one reference cache) each rename a whole file
    of their own, where one shared name had one writer rename the other's away."""
    return path.with_name(f".{path.name}.{os.getpid()}-{threading.get_ident()}.tmp")


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder, then rename."""
    temporary = _temporary_beside(path)
    temporary.write_text(text)
    os.replace(temporary, path)


def atomic_write_json(path: Path, data: Any) -> None:
    """``data`` as indented JSON (numpy values and paths as plain lists and strings), atomically."""
    atomic_write_text(path, json.dumps(data, indent=1, default=_json_default))


def _json_default(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder, then rename."""
    temporary = _temporary_beside(path)
    temporary.write_bytes(data)
    os.replace(temporary, path)
