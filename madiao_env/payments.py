"""Every Madiao payment in one place: the rule ids, their names and the amounts, in stakes.

In the order of the rules doc (``docs/madiao-rules.md``), each with the rule it pays. The Numba
kernels (``madiao_env.core``: ``_declare``, ``_play_card``, ``_settle_play``) and the plain
Python reference (``madiao_env.reference``) both read the amounts and rule ids from here; Numba
reads these module-level ints as compile-time constants. Amounts are integer stakes; the env
layer multiplies them by the ``stake`` option.

Unless a rule says otherwise, a payment is a line between the banker and one player: "what a
player earns, the banker pays to that player; what the banker earns, each player pays to the
banker" (so a banker's gain or loss is one line per player).

The rule ids are stored in snapshots and settlement buffers: they keep their numbers (a new rule
takes the next free id), whatever order the rules are listed in here.

After changing an amount, nothing else needs touching: the kernels' disk cache is stamped with
this module's source as well (``cardgame_core.jit``), so they recompile with the new amounts.
"""

from __future__ import annotations

from typing import Any

# ----------------------------------------------------------------------------- rule ids and names
RULE_MELD = 0
RULE_FOUR_LOWEST = 1
RULE_TRICK_COUNT = 2
RULE_SLAM = 3
RULE_BOSS_CARD = 4
RULE_HUNDRED_MYRIAD = 5
RULE_HONOURS = 6
RULE_TWO_TRICKS_HUNDRED_MYRIAD = 7
RULE_STOCK_CHECK = 8
RULE_FACE_UP_DISCARD = 9
#: The name of each rule id, as settlement lines and infos spell it (``RULE_NAMES[RULE_SLAM]``).
RULE_NAMES = (
    "meld",
    "four_lowest",
    "trick_count",
    "slam",
    "boss_card",
    "hundred_myriad",
    "honours",
    "two_tricks_hundred_myriad",
    "stock_check",
    "face_up_discard",
)
#: Each rule as players name it at the table (``SPOKEN_NAMES[RULE_SLAM]``) and what it pays in one
#: line (``EXPLANATIONS``): the web app's settlement shows them; the amounts are the constants below.
SPOKEN_NAMES = (
    "meld",
    "four lowest",
    "trick count",
    "slam",
    "boss card",
    "Hundred Myriad",
    "honours",
    "two tricks with the Hundred",
    "stock check",
    "face-up discard",
)
EXPLANATIONS = (
    "A special eight-card hand ends the hand at once; every other seat pays its holder 4 to 8.",
    "Holding 20T, 1M, 1S and 9C wins 1 from every other seat; the cards are dealt again.",
    "A player with 0-1 tricks pays the banker 1; with 3 or more tricks the banker pays that player 1.",
    "All eight tricks: 8 from each player for the banker, or 8 from the banker for a player.",
    "1 for each trick won with the top card of a suit, by a seat that made at least two tricks.",
    "For the seat dealt 100T: 1 with under two tricks, 2 with two or more, 3 if 100T won a trick.",
    "Tricks won with 10000T, 1000T and 100T pay 3; with 0C as well, 4.",
    "A player who wins a trick with 100T and makes exactly two tricks gets 1 from each other player.",
    "If the next stock card is the top of its suit, who played that suit's second-best card face up "
    "pays 1 to each seat.",
    "A face-up card that does not capture costs 2 (a variant).",
)

# ----------------------------------------------------------------------------- declarations
# Meld: "Melds end the hand at once. The holder is paid by every other seat except the holder of
# 100T (if someone else holds it) and becomes the next banker. Only the holder's best meld
# counts: 10000T 9M 9S 0C -> 4; the same with 100T -> 5; a flush (all eight cards one suit) -> 4;
# a flush of Tens holding 100T -> 5; eight red cards -> 6; eight red cards holding 100T -> 7;
# exactly 10000T 20T 9M 1M 9S 1S 0C 9C -> 8."
MELD_FOUR_TOPS = 4
MELD_FOUR_TOPS_WITH_HUNDRED = 5
MELD_FLUSH = 4
MELD_TENS_FLUSH_WITH_HUNDRED = 5
MELD_EIGHT_RED = 6
MELD_EIGHT_RED_WITH_HUNDRED = 7
MELD_EXACT_EIGHT = 8

# Four lowest: "a seat holding 20T, 1M, 1S and 9C wins 1 from each other seat (the 100T exemption
# does not apply here)".
FOUR_LOWEST = 1

# ----------------------------------------------------------------------------- play
# Face-up discard (variant ``face_up_discard``): a face-up card that does not capture is allowed,
# "at a cost of 2 stakes to the banker; a banker pays 2 to each player".
FACE_UP_DISCARD = 2

# ----------------------------------------------------------------------------- settlement
#: The minimum: the trick count, boss cards, the Hundred Myriad's tiers and its two-trick bonus
#: are all measured against two tricks.
MINIMUM_TRICKS = 2

# Trick count: "each player with 0-1 tricks pays the banker 1; 2 tricks: nothing; 3 or more: the
# banker pays the player 1".
TRICK_COUNT = 1

# Slam: "all eight tricks, instead of the trick count: a banker's slam collects 8 from each
# player; a player's slam collects 8 from the banker (the two other players, with no tricks,
# still pay the banker 1)".
SLAM = 8

# Boss card: "1 for every trick a seat won with the top card of a suit, only if that seat made at
# least two tricks. If the upcard is itself a top card, the second-best card of that suit counts
# as the top card instead".
BOSS_CARD_PER_TRICK = 1

# Hundred Myriad: "for the seat dealt 100T (nothing if it lies in the stock), one tier: under two
# tricks -> 1 (consolation); two or more tricks without winning a trick with 100T -> 2; two or
# more tricks and a trick won with 100T -> 3".
HUNDRED_MYRIAD_CONSOLATION = 1
HUNDRED_MYRIAD_MINIMUM = 2
HUNDRED_MYRIAD_WON_WITH_IT = 3

# Honours: "tricks won with each of 10000T, 1000T and 100T -> 3; those three and 0C -> 4 instead".
HONOURS_THREE = 3
HONOURS_FOUR = 4

# Two tricks with 100T: "a player who wins a trick with 100T and makes exactly two tricks also
# collects 1 from each of the other two players. A banker who does so keeps the bank for the
# next hand" (and collects nothing more).
TWO_TRICKS_HUNDRED_MYRIAD = 1

# Stock check: "after the eighth trick the upcard is removed and the next stock card shown. If it
# is the top card of its suit (no promotion here), the seat that played that suit's second-best
# card face up pays 1 to each other seat".
STOCK_CHECK = 1

#: The largest stakes one settlement line can carry (a meld of eight, a slam); snapshots are
#: checked against it.
MAX_LINE_STAKES = max(MELD_EXACT_EIGHT, SLAM, 4 * BOSS_CARD_PER_TRICK, HONOURS_FOUR)


# ----------------------------------------------------------------------------- the stake option
def stakes_to_rewards(stakes: Any, stake: float) -> Any:
    """Whole stakes (an int, or an array of them) as rewards: times the ``stake`` option.

    The one place the option is applied: the kernels count whole stakes, and the AEC env's
    settlement lines, the vector env's rewards and final payoffs and the play-outs are converted
    here (in float64; the vector env then stores float32, rounding once as it always did). Nothing
    divides by it again: duplicate tournaments play with ``stake`` 1 and score whole stakes.
    """
    return stakes * stake
