"""Bit kernels over uint64 card sets, shared by both games.

A card set is a ``np.uint64`` whose bit ``i`` is set when card ``i`` is in the set. The kernels
are plain integer arithmetic so Numba compiles them to a handful of instructions; the Python
helpers at the bottom convert between masks and id lists for the checked, non-kernel layers.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from cardgame_core.jit import njit

ONE = np.uint64(1)
ZERO = np.uint64(0)
_M1 = np.uint64(0x5555555555555555)
_M2 = np.uint64(0x3333333333333333)
_M4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_H01 = np.uint64(0x0101010101010101)


@njit
def popcount(x: np.uint64) -> int:
    """Number of set bits (SWAR: no loop, no branch)."""
    x = np.uint64(x)
    x = x - ((x >> np.uint64(1)) & _M1)
    x = (x & _M2) + ((x >> np.uint64(2)) & _M2)
    x = (x + (x >> np.uint64(4))) & _M4
    return np.int64((x * _H01) >> np.uint64(56))  # int() would keep uint64 in Numba


@njit
def lowest_bit(x: np.uint64) -> int:
    """Index of the lowest set bit, or -1 for an empty set."""
    x = np.uint64(x)
    if x == ZERO:
        return -1
    return popcount((x & (~x + ONE)) - ONE)


@njit
def highest_bit(x: np.uint64) -> int:
    """Index of the highest set bit, or -1 for an empty set (binary search, six steps)."""
    x = np.uint64(x)
    if x == ZERO:
        return -1
    index = 0
    for shift in (32, 16, 8, 4, 2, 1):
        if x >> np.uint64(shift):
            x = x >> np.uint64(shift)
            index += shift
    return index


@njit
def nth_set_bit(x: np.uint64, n: int) -> int:
    """Index of the ``n``-th lowest set bit (0-based), or -1 when ``x`` has fewer bits."""
    x = np.uint64(x)
    for _ in range(n):
        if x == ZERO:
            return -1
        x &= x - ONE
    return lowest_bit(x)


@njit
def bit(index: int) -> np.uint64:
    """The set holding the single card ``index``."""
    return ONE << np.uint64(index)


@njit
def bits_above(index: int) -> np.uint64:
    """All bits strictly above ``index`` (``index`` in 0..63)."""
    if index >= 63:
        return ZERO
    return ~((np.uint64(2) << np.uint64(index)) - ONE)


def mask_from_ids(ids: Iterable[int]) -> int:
    """Python helper: the uint64 set (as a Python int) holding the given card ids."""
    mask = 0
    for card in ids:
        mask |= 1 << int(card)
    return mask


def ids_from_mask(mask: int) -> list[int]:
    """Python helper: the card ids in a set, lowest bit first."""
    mask = int(mask)
    ids = []
    while mask:
        low = mask & -mask
        ids.append(low.bit_length() - 1)
        mask ^= low
    return ids
