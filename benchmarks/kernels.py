"""Numba kernels used only by the benchmarks: a batched random legal policy and the trick probe.

``trick_loop_hands`` is the "bare trick loop" probe: random legal Madiao play of the eight tricks
only (no declarations, no settlement, no observations, no env), i.e. a practical speed limit for
full-rules play-outs. It follows the capture rule of the trick phase: a follower may play face up
only a card of the led suit above the best card so far, otherwise it sloughs any card face down;
in the last trick a seat that has won no trick yet may not capture.
"""

from __future__ import annotations

import numpy as np

from cardgame_core.bits import bit, bits_above, nth_set_bit, popcount
from cardgame_core.jit import njit
from madiao_env.cards import CARD_SUIT, N_CARDS, N_SEATS, N_TRICKS, SUIT_MASK

HAND_SIZE = 8


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


@njit
def trick_loop_hands(n_hands, seed):
    """Play ``n_hands`` random hands of the trick phase; returns seat 0's total tricks (a checksum)."""
    np.random.seed(seed)
    deck = np.arange(N_CARDS)
    hands = np.zeros(N_SEATS, dtype=np.uint64)
    tricks_won = np.zeros(N_SEATS, dtype=np.int64)
    checksum = 0
    for _ in range(n_hands):
        np.random.shuffle(deck)
        for seat in range(N_SEATS):
            hand = np.uint64(0)
            for j in range(HAND_SIZE):
                hand |= bit(deck[seat * HAND_SIZE + j])
            hands[seat] = hand
            tricks_won[seat] = 0
        leader = 0
        for trick in range(N_TRICKS):
            hand = hands[leader]
            led = int(nth_set_bit(hand, np.random.randint(popcount(hand))))
            hands[leader] = hand & ~bit(led)
            led_suit_cards = SUIT_MASK[CARD_SUIT[led]]
            best = led
            winner = leader
            for offset in range(1, N_SEATS):
                seat = (leader + offset) % N_SEATS
                hand = hands[seat]
                captures = hand & led_suit_cards & bits_above(best)
                if trick == N_TRICKS - 1 and tricks_won[seat] == 0:
                    captures = np.uint64(0)
                n_captures = popcount(captures)
                pick = np.random.randint(n_captures + popcount(hand))
                if pick < n_captures:
                    card = int(nth_set_bit(captures, pick))
                    best = card
                    winner = seat
                else:
                    card = int(nth_set_bit(hand, pick - n_captures))
                hands[seat] = hand & ~bit(card)
            tricks_won[winner] += 1
            leader = winner
        checksum += tricks_won[0]
    return checksum
