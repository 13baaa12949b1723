"""A deterministic per-game random stream that lives inside the state arrays (SplitMix64).

Batched kernels cannot share one numpy ``Generator``: each game keeps its own 64-bit state in a
uint64 array element, so a game's continuation depends only on its own state (clone/restore of a
state reproduces the future exactly, whatever other games in the batch do). SplitMix64 is tiny,
passes BigCrush, and any 64-bit value is a valid state. The pure-Python twins at the bottom give
the same numbers for reference implementations and tests.
"""

from __future__ import annotations

import numpy as np

from cardgame_core.jit import njit

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX_1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX_2 = np.uint64(0x94D049BB133111EB)
_MASK64 = (1 << 64) - 1


@njit
def next_u64(state: np.ndarray, index: int) -> np.uint64:
    """Advance ``state[index]`` and return the next 64-bit output."""
    s = state[index] + _GOLDEN
    state[index] = s
    z = (s ^ (s >> np.uint64(30))) * _MIX_1
    z = (z ^ (z >> np.uint64(27))) * _MIX_2
    return z ^ (z >> np.uint64(31))


@njit
def random_below(state: np.ndarray, index: int, n: int) -> int:
    """A draw from ``0..n-1`` (``n >= 1``; modulo bias below 2**-50 for the sizes used here)."""
    return int(next_u64(state, index) % np.uint64(n))


@njit
def shuffle_prefix(values: np.ndarray, n: int, state: np.ndarray, index: int) -> None:
    """Fisher-Yates shuffle of ``values[:n]`` in place, drawing from ``state[index]``."""
    for i in range(n - 1, 0, -1):
        j = random_below(state, index, i + 1)
        values[i], values[j] = values[j], values[i]


def next_u64_py(state: int) -> tuple[int, int]:
    """Pure-Python :func:`next_u64`: ``(new_state, output)``."""
    s = (state + 0x9E3779B97F4A7C15) & _MASK64
    z = ((s ^ (s >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return s, z ^ (z >> 31)


def random_below_py(state: int, n: int) -> tuple[int, int]:
    """Pure-Python :func:`random_below`: ``(new_state, value)``."""
    state, value = next_u64_py(state)
    return state, value % n


def shuffle_prefix_py(values: list, n: int, state: int) -> int:
    """Pure-Python :func:`shuffle_prefix` on a list; returns the new state."""
    for i in range(n - 1, 0, -1):
        state, j = random_below_py(state, i + 1)
        values[i], values[j] = values[j], values[i]
    return state
