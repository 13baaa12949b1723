"""Numba kernels used by the suites of every game: a batched random legal policy."""

from __future__ import annotations

import numpy as np

from cardgame_core.jit import njit


@njit
def random_legal_actions(masks, seed, out):
    """``out[i]`` = a uniformly random legal action of row ``i`` (-1 for an all-false row).

    ``masks`` is a C-contiguous bool array. The draws come from an inline xorshift64 stream seeded
    by ``seed``: a policy that costs a few ns per game, so the batched figures measure the env
    rather than the policy (``np.random.randint`` per row cost more than the env step itself).
    """
    state = np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(0x632BE59BD9B4E019)
    if state == np.uint64(0):
        state = np.uint64(1)
    entries = masks.view(np.uint8)
    for row in range(masks.shape[0]):
        count = np.int64(0)
        for action in range(masks.shape[1]):
            count += np.int64(entries[row, action])
        if count == 0:
            out[row] = -1
            continue
        state ^= state << np.uint64(13)
        state ^= state >> np.uint64(7)
        state ^= state << np.uint64(17)
        pick = np.int64(((state >> np.uint64(32)) * np.uint64(count)) >> np.uint64(32))
        for action in range(masks.shape[1]):
            pick -= np.int64(entries[row, action])
            if pick < 0:
                out[row] = action
                break
