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


def compiled_for(kernel: Callable, *args: Any) -> Callable:
    """``kernel`` compiled (or loaded from the cache) for the types of ``args``: its entry point.

    A call through the entry point skips Numba's per-call type dispatch, which for a named tuple
    such as a game state costs about 1.5 us (arrays alone are typed in C): a tenth of an AEC step.
    The entry point does not check its arguments, so the caller must always pass these types
    (the envs pass their own buffers). Without the JIT (``NUMBA_DISABLE_JIT=1``): ``kernel``.
    """
    compile_for_types = getattr(kernel, "compile", None)
    if compile_for_types is None:
        return kernel
    return compile_for_types(tuple(numba.typeof(arg) for arg in args))
