"""The one place where Numba JIT flags are set (kernels never pass their own flags).

``cache=True`` writes compiled machine code next to the package so a second process starts in
well under a second; ``nogil`` lets a caller run kernels from threads. ``fastmath`` stays off:
every kernel here is integer bit arithmetic and settlement must be exact.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numba

from cardgame_core import compile_notice

# The first real compilation in a process says so on stderr (first run only: later runs load the
# cache silently); see cardgame_core.compile_notice.
compile_notice.install()

JIT_OPTIONS: dict[str, Any] = {"cache": True, "nogil": True}


def njit(function: Callable | None = None, **overrides: Any):
    """``numba.njit`` with the project's flags; usable as ``@njit`` or ``@njit(...)``."""
    options = {**JIT_OPTIONS, **overrides}
    if function is None:
        return numba.njit(**options)
    return numba.njit(**options)(function)
