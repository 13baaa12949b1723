"""The Madiao rule and observation options, validated once: :class:`MadiaoOptions`.

The AEC env (``madiao_env.env.raw_env``), the batched env (``madiao_env.vector``) and the
play-outs (``madiao_env.rollout``) all build from this object: it checks the options (one
``TypeError``/``ValueError`` naming the option), makes the kernels' config row from named fields
(:meth:`MadiaoOptions.config_row`) and gives the facts derived from them (the observation size).
The options themselves are documented in the ``madiao_env.env`` docstring.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from madiao_env import core, state
from madiao_env.layout import OBS_SIZES, OBS_TYPES

EPISODES = ("hand", "match")
# Rewards stay finite: the largest payoff of a settlement is a few dozen stakes.
MAX_STAKE = 1e12
# The redeal cap lives in the kernels' int32 config row.
MAX_REDEALS_CAP = 2**31 - 1


@dataclass(frozen=True)
class MadiaoOptions:
    """Validated Madiao options (a bad one raises ``TypeError`` or ``ValueError`` naming it).

    ``stake`` is stored as a float, ``max_redeals`` as an int or None, ``face_up_discard`` as a
    bool, whatever numeric type they were given as.
    """

    obs_type: str = "summary"
    """"summary" (484 entries: the table now), "history" (1579 entries: a perfect-recall
    information state of the deal) or "record" (968 entries: the summary, then the hand's public
    record by seat); index tables in the ``madiao_env.env`` docstring."""
    episode: str = "hand"
    """"hand" (an episode is one hand) or "match" (an episode is a whole match: it ends after the
    hand in which the last seat that had not been banker has been banker)."""
    stake: float = 1.0
    """The reward of one stake: every payment is multiplied by it; a number in (0, MAX_STAKE]."""
    max_redeals: int | None = None
    """Redeals allowed per hand: None (unlimited) or an int 0..MAX_REDEALS_CAP; once that many redeals
    happened in a hand, nobody is asked any more."""
    face_up_discard: bool = False
    """Rule variant: a face-up play that does not capture is legal and costs 2 stakes to the
    banker (a banker pays 2 to each player)."""

    def __post_init__(self) -> None:
        obs_type, episode, stake = self.obs_type, self.episode, self.stake
        max_redeals, face_up_discard = self.max_redeals, self.face_up_discard
        # isinstance first: ``in`` on a tuple of strings compares an array elementwise.
        if not isinstance(obs_type, str) or obs_type not in OBS_TYPES:
            raise ValueError(f"obs_type must be one of {', '.join(map(repr, OBS_TYPES))}, got {obs_type!r}")
        if not isinstance(episode, str) or episode not in EPISODES:
            raise ValueError(f"episode must be 'hand' or 'match', got {episode!r}")
        if isinstance(stake, bool) or not isinstance(stake, (int, float, np.integer, np.floating)):
            raise TypeError(f"stake must be a positive number, got {type(stake).__name__} {stake!r}")
        # Compared before any float(), which raises OverflowError for a huge int; NaN fails both.
        if not 0 < stake <= MAX_STAKE:
            raise ValueError(f"stake must be a number in (0, {MAX_STAKE:g}], got {stake!r}")
        if max_redeals is not None and (
            isinstance(max_redeals, bool) or not isinstance(max_redeals, (int, np.integer))
        ):
            raise TypeError(
                f"max_redeals must be None or an int >= 0, got {type(max_redeals).__name__} {max_redeals!r}"
            )
        if max_redeals is not None and not 0 <= max_redeals <= MAX_REDEALS_CAP:
            raise ValueError(f"max_redeals must be None or an int 0..{MAX_REDEALS_CAP}, got {max_redeals!r}")
        if not isinstance(face_up_discard, (bool, np.bool_)):
            raise TypeError(
                f"face_up_discard must be a bool, got {type(face_up_discard).__name__} {face_up_discard!r}"
            )
        # Plain Python values from here on (a frozen dataclass is set through object.__setattr__).
        object.__setattr__(self, "stake", float(stake))
        object.__setattr__(self, "max_redeals", None if max_redeals is None else int(max_redeals))
        object.__setattr__(self, "face_up_discard", bool(face_up_discard))

    @property
    def obs_size(self) -> int:
        """Length of the observation vector of this ``obs_type``."""
        return OBS_SIZES[self.obs_type]

    def config_row(self) -> np.ndarray:
        """The kernels' config row (int32[core.N_CONFIG]) of these options; ``stake`` is not in it
        (the kernels count integer stakes, the env layer multiplies)."""
        return state.config_row(
            state.ConfigEntries(
                face_up_discard=int(self.face_up_discard),
                max_redeals=-1 if self.max_redeals is None else self.max_redeals,
                match=int(self.episode == "match"),
                obs_type=OBS_TYPES.index(self.obs_type),
            )
        )

    @classmethod
    def from_config_row(cls, row: np.ndarray, stake: float) -> MadiaoOptions:
        """The options whose kernel config row is ``row`` (a snapshot's ``config``), the inverse of
        :meth:`config_row`; ``ValueError`` naming ``config`` if no options make that row."""
        if not isinstance(row, np.ndarray) or row.shape != (core.N_CONFIG,) or row.dtype != np.int32:
            raise ValueError(f"config must be an int32 array of shape ({core.N_CONFIG},), got {row!r}")
        entries = state.config_entries(row)
        flags = {
            "face_up_discard": entries.face_up_discard,
            "match": entries.match,
        }
        for name, value in flags.items():
            if value not in (0, 1):
                raise ValueError(f"config {row.tolist()}: the {name} entry must be 0 or 1, got {value}")
        if entries.obs_type not in range(len(OBS_TYPES)):
            last = len(OBS_TYPES) - 1
            raise ValueError(
                f"config {row.tolist()}: the obs_type entry must be 0..{last}, got {entries.obs_type}"
            )
        max_redeals = entries.max_redeals
        if max_redeals < -1:
            raise ValueError(f"config {row.tolist()}: the max_redeals entry must be -1 (unlimited) or >= 0")
        return cls(
            obs_type=OBS_TYPES[entries.obs_type],
            episode=EPISODES[flags["match"]],
            stake=stake,
            max_redeals=None if max_redeals < 0 else max_redeals,
            face_up_discard=bool(flags["face_up_discard"]),
        )

    def as_kwargs(self) -> dict[str, Any]:
        """The options as keyword arguments of ``raw_env``/``MadiaoVectorEnv`` (normalised values)."""
        return asdict(self)
