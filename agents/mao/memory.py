"""A Mao policy with memory: attention over the public-event history, beside the rule planes.

Why this design. The secret rules can only be inferred from what happened to earlier plays (a
card called "bad", a phrase whose absence drew a call), and the evidence for a rule may lie many
turns back. MaskablePPO (sb3-contrib) has no recurrent variant, and a recurrent state would have
to follow each game seat through the opponents' batches, the snapshots and the evaluation tables.
The env already hands every seat a window of its most recent public events (``n_events``, up to
``mao_env.core.EVENT_SLOTS``), so the memory here is *attention over that window*: every event
becomes a token, and learned queries read the tokens they need. The memory is thus a function of
one observation (no hidden state), it works with any window the env gives (training runs use the
full ring of 16 events, twice today's MLP window of 8), and every agent that plays a saved
MaskablePPO model plays it unchanged.

What one event token holds (``EventTokens``):

- the event as observed (counts squashed with log1p),
- its context, rebuilt from the older events of the window: the top card and the suit to follow
  when it was played (the newest valid play before it; unknown for the oldest events), and
  whether its card matched that top card under the base rules (a play that matched yet was
  called "bad card" is the trace of a secret rule),
- its age (one-hot position in the window): order matters for a game's story.

Two sets of queries read the tokens (``EventAttention``; a learned "nothing relevant" token is
always present, so a query can abstain and an empty history is not a special case):

- a few *summary* queries, shifted by the current table (top card, hand, phase), whose pooled
  values go to the MLP;
- one *card* query per card type (a card embedding shifted by the table): its value is read out
  as two numbers per card ("memory planes"), which reach the action layer directly, next to the
  rule planes of :class:`madiao_mao.agents.mao.features.MaoRuleFeatures` (skip connection, as in
  :class:`~madiao_mao.agents.mao.features.MaoRulePolicy`): "play card c" can weigh what the history says about
  cards like c in one linear step.

The pooling is a set function of the tokens: permuting the tokens (each with its age and context)
leaves its output unchanged, and absent events are masked out (``tests/mao/test_memory.py``).
Order enters only through the tokens' age and context features.

The MLP's input is the table part of the observation (squashed), the summary read-out, the rule
planes and the memory planes; the raw events reach the network only through attention.

Limits: the memory is the env's window. Sixteen events are about four rounds of a four-player
table; evidence older than that is forgotten, where the Bayesian player keeps a posterior over
the whole game. Raising ``EVENT_SLOTS`` (the core's ring) or keeping a longer per-game log would
lift that limit.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from gymnasium import spaces
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn

from madiao_mao.agents.mao.beliefs import event_layout
from madiao_mao.agents.mao.features import N_DERIVED, MaoRuleFeatures, SkipPolicy, card_tables
from mao_env import cards, core, layout
from mao_env.layout import EVENT_SLICES

N_TYPES = cards.N_CARD_TYPES
#: Numbers per card type read out of the card queries (the memory planes).
CARD_READOUTS = 2
#: Count-valued event pieces, squashed with log1p like the table's counts.
_EVENT_COUNTS = ("n_calls", "penalty_cards", "chain_cards", "forced_draw")
#: Table-state pieces the queries are conditioned on.
_QUERY_PIECES = ("top", "valid_suit", "named", "pending_seven", "phase", "played", "drew", "said")


class EventTokens(nn.Module):
    """``[B, K, W]`` events (newest first) -> ``[B, K, token_dim]`` tokens with context and age."""

    def __init__(self, n_events: int, event_width: int) -> None:
        super().__init__()
        if n_events < 1:
            raise ValueError(f"event tokens need at least one event slot, got n_events={n_events}")
        self.n_events = n_events
        self.event_width = event_width
        tables = card_tables()
        self.register_buffer("suit", torch.as_tensor(tables["suit"]), persistent=False)
        self.register_buffer("rank", torch.as_tensor(tables["rank"]), persistent=False)
        self.register_buffer("age", torch.eye(n_events), persistent=False)
        counts = [
            i for name in _EVENT_COUNTS for i in range(EVENT_SLICES[name].start, EVENT_SLICES[name].stop)
        ]
        self.register_buffer("count_columns", torch.as_tensor(counts, dtype=torch.long), persistent=False)
        #: event | top card before it | suit to follow before it | base-rule match | age
        self.token_dim = event_width + N_TYPES + 4 + 1 + n_events

    def forward(self, events: torch.Tensor) -> torch.Tensor:
        batch = events.shape[0]
        present = events[:, :, layout.EV_PRESENT]
        card = events[:, :, EVENT_SLICES["card"]]
        named = events[:, :, EVENT_SLICES["named_suit"]]
        valid_play = present * events[:, :, EVENT_SLICES["kind"].start + layout.KIND_PLAY]
        won = events[:, :, layout.EV_WON]
        # The context of each event is what the newest valid play older than it left: its card
        # on top and its suit (or the suit named with it) to follow; a round won clears both (the
        # next round starts from a new top card the window does not show).
        slot = torch.arange(self.n_events, device=events.device).expand(batch, -1)
        play_slot = torch.where(valid_play > 0.5, slot, torch.full_like(slot, self.n_events))
        # newest play at or older than each slot: a suffix minimum over slots (newest first)
        newest_from = torch.flip(torch.cummin(torch.flip(play_slot, [1]), dim=1).values, [1])
        beyond = torch.full_like(newest_from[:, :1], self.n_events)
        source = torch.cat([newest_from[:, 1:], beyond], dim=1)  # strictly older than each slot
        known = (source < self.n_events).to(events.dtype)
        source = source.clamp(max=self.n_events - 1)
        named_any = named.sum(2, keepdim=True)
        suit_left = named_any * named + (1.0 - named_any) * (card @ self.suit)
        keep = (known * (1.0 - torch.gather(won, 1, source))).unsqueeze(2)
        gather = source.unsqueeze(2)
        top_before = torch.gather(card, 1, gather.expand(-1, -1, N_TYPES)) * keep
        suit_before = torch.gather(suit_left, 1, gather.expand(-1, -1, 4)) * keep
        same_suit = (suit_before * (card @ self.suit)).sum(2)
        same_rank = ((top_before @ self.rank) * (card @ self.rank)).sum(2)
        matched = ((same_suit + same_rank) > 0.5).to(events.dtype) * present
        squashed = events.clone()
        squashed[:, :, self.count_columns] = torch.log1p(events[:, :, self.count_columns].clamp(min=0.0))
        age = self.age.to(events.dtype).expand(batch, -1, -1)
        return torch.cat([squashed, top_before, suit_before, matched.unsqueeze(2), age], dim=2)


class EventAttention(nn.Module):
    """Scaled dot-product attention of query vectors over tokens, with a learned always-present
    "nothing relevant" token; absent tokens (``present`` 0) get no weight.

    ``forward(queries [B, Q, d], tokens [B, K, d], present [B, K]) -> [B, Q, d]`` is a set function
    of the tokens: permuting them (with their presence flags) leaves the output unchanged.
    """

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim
        self.key = nn.Linear(dim, dim)
        self.value = nn.Linear(dim, dim)
        self.null_key = nn.Parameter(torch.zeros(1, 1, dim))
        self.null_value = nn.Parameter(torch.zeros(1, 1, dim))

    def forward(self, queries: torch.Tensor, tokens: torch.Tensor, present: torch.Tensor) -> torch.Tensor:
        batch = tokens.shape[0]
        keys = torch.cat([self.null_key.expand(batch, -1, -1), self.key(tokens)], dim=1)
        values = torch.cat([self.null_value.expand(batch, -1, -1), self.value(tokens)], dim=1)
        scores = queries @ keys.transpose(1, 2) / math.sqrt(self.dim)
        always = torch.ones(batch, 1, dtype=torch.bool, device=tokens.device)
        visible = torch.cat([always, present > 0.5], dim=1)
        scores = scores.masked_fill(~visible.unsqueeze(1), float("-inf"))
        return torch.softmax(scores, dim=2) @ values


class MaoMemoryFeatures(BaseFeaturesExtractor):
    """The table, attention read-outs of the event window, the rule planes and the memory planes
    (module doc). The last ``n_skip`` features are the per-card and per-phrase planes."""

    def __init__(
        self,
        observation_space: spaces.Box,
        token_dim: int = 64,
        n_summary_queries: int = 4,
    ) -> None:
        obs_dim = int(np.prod(observation_space.shape))
        n_events, event_width = event_layout(obs_dim)
        if n_events < 1:
            raise ValueError(
                f"memory features need an event history (obs_type='history', n_events >= 1); "
                f"observations of {obs_dim} values hold none"
            )
        if token_dim < 1 or n_summary_queries < 1:
            raise ValueError(
                f"token_dim and n_summary_queries must be positive, got {token_dim}, {n_summary_queries}"
            )
        self.n_skip = N_DERIVED + CARD_READOUTS * N_TYPES
        features_dim = layout.OFF_EVENTS + n_summary_queries * token_dim + self.n_skip
        super().__init__(observation_space, features_dim=features_dim)
        self.n_events, self.event_width = n_events, event_width
        self.n_summary_queries = n_summary_queries
        self.token_dim = token_dim
        self.rules = MaoRuleFeatures(observation_space)
        self.tokens = EventTokens(n_events, event_width)
        self.embed = nn.Sequential(nn.Linear(self.tokens.token_dim, token_dim), nn.ReLU())
        query_columns = [
            i for name in _QUERY_PIECES for i in range(layout.SLICES[name].start, layout.SLICES[name].stop)
        ]
        self.register_buffer(
            "query_columns", torch.as_tensor(query_columns, dtype=torch.long), persistent=False
        )
        # The hand enters the queries as "holds this card" bits.
        query_in = len(query_columns) + N_TYPES
        self.summary_queries = nn.Parameter(
            torch.randn(1, n_summary_queries, token_dim) / math.sqrt(token_dim)
        )
        self.summary_shift = nn.Linear(query_in, n_summary_queries * token_dim)
        self.card_queries = nn.Parameter(torch.randn(1, N_TYPES, token_dim) / math.sqrt(token_dim))
        self.card_shift = nn.Linear(query_in, token_dim)
        self.attention = EventAttention(token_dim)
        self.card_readout = nn.Linear(token_dim, CARD_READOUTS)

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        obs = observations.float().flatten(1)
        batch = obs.shape[0]
        rule_features = self.rules(obs)
        table = rule_features[:, : layout.OFF_EVENTS]  # squashed like MaoRuleFeatures does
        rule_planes = rule_features[:, -N_DERIVED:]
        start = layout.OFF_EVENTS
        events = obs[:, start : start + self.n_events * self.event_width].reshape(
            batch, self.n_events, self.event_width
        )
        present = events[:, :, layout.EV_PRESENT]
        tokens = self.embed(self.tokens(events))
        holds = (obs[:, layout.SLICES["hand"]] > 0.5).float()
        situation = torch.cat([obs[:, self.query_columns], holds], dim=1)
        summary_queries = self.summary_queries + self.summary_shift(situation).view(
            batch, self.n_summary_queries, self.token_dim
        )
        card_queries = self.card_queries + self.card_shift(situation).unsqueeze(1)
        queries = torch.cat([summary_queries, card_queries], dim=1)
        read = self.attention(queries, tokens, present)
        summary = read[:, : self.n_summary_queries].flatten(1)
        memory_planes = self.card_readout(read[:, self.n_summary_queries :]).transpose(1, 2).flatten(1)
        return torch.cat([table, summary, rule_planes, memory_planes], dim=1)


class MaoMemoryPolicy(SkipPolicy):
    """MaskablePPO's MLP policy over :class:`MaoMemoryFeatures`, with the rule and memory planes
    skipping to the action layer (module doc)."""

    features_class = MaoMemoryFeatures

    def skip_width(self) -> int:
        return getattr(self.features_extractor, "n_skip", N_DERIVED + CARD_READOUTS * N_TYPES)


#: The event window memory runs train with: the core's whole ring.
MEMORY_EVENTS = core.EVENT_SLOTS


def policy_spec() -> tuple[type[MaoMemoryPolicy], dict]:
    """The MaskablePPO policy class and its extra options for ``features="memory"``
    (``madiao_mao.training.game_spec.POLICY_FEATURES``)."""
    return MaoMemoryPolicy, {}
