"""Rule-aware features for Mao policies: the raw observation plus what a player works out from it.

A flat MLP over a Mao observation has to discover two products before it can play at all: which
held cards match the top card (a card's suit against the suit to follow, its rank against the top
card's rank) and which phrases the card it just played calls for. Both are fixed functions of the
observation and of the *base* rules, which every player at the table is assumed to know (the
base-rules player knows them too). What the calls of the last ``K`` public events say about the
secret rules is summarised the same way, per card, so that "a card like the one just called bad"
is one input next to the action that would play it. ``MaoRuleFeatures`` hands the network

    the observation (counts squashed with log1p, the rounds-finished count left out) |
    held cards that match under the base rules (53) |
    held cards of a suit or rank called "bad card" in the recent events (53) |
    held cards of a suit or rank played without a call in the recent events (53) |
    phrases the base rules ask for this turn (the card's, "penalty card", "last card", "Mao") (16) |
    phrases whose absence drew a call in the recent events (16)

It reads only the observation (no rule it was not told) and has no trainable parameters; the
event layout comes from the observation size (``madiao_mao.agents.mao.beliefs.event_layout``); pieces are read
by name (:mod:`mao_env.layout`).

``MaoRulePolicy`` (a MaskablePPO policy) also hands those per-card and per-phrase planes to the
action layer directly, beside the MLP's output (a skip connection): "play card c" can then weigh
"c matches" and "c looks like a card just called bad" in one linear step instead of carrying 53
bits through the hidden layers.

``MaoBeliefPolicy`` (Mao's default, features "belief") reads those planes and, appended to the
observation, the seat's belief inputs (``madiao_mao.agents.mao.belief_inputs``: its posterior over the secret
rules, a memory of the whole game); its action head (``BeliefActionHead``) weighs each action's
belief with weights shared by all actions and decides speech and calls by the belief alone.
"""

from __future__ import annotations

import functools

import numpy as np
import torch
from gymnasium import spaces
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor, MlpExtractor
from torch import nn

from madiao_mao.agents.mao.belief_inputs import BELIEF_SLICES, BELIEF_WIDTH
from madiao_mao.agents.mao.beliefs import event_layout
from mao_env import cards, layout
from mao_env.layout import EVENT_SLICES, SLICES
from mao_env.reference import base_card_phrases

N_TYPES = cards.N_CARD_TYPES
N_PHRASES = cards.N_PHRASES
N_DERIVED = 3 * N_TYPES + 2 * N_PHRASES
# Count-valued columns of the table part (hand sizes .. active rules), squashed so that no input
# dwarfs the one-hots.
COUNT_COLUMNS = slice(SLICES["hand_sizes"].start, SLICES["n_rules"].stop)
_TOOK_SEVEN = SLICES["took_seven"].start
_DREW = SLICES["drew"].start
_ROUNDS = SLICES["rounds"].start
_PRESENT = EVENT_SLICES["present"].start
_FAILURES = slice(EVENT_SLICES["calls"].start, EVENT_SLICES["calls"].start + N_PHRASES)


def card_tables() -> dict[str, np.ndarray]:
    """Per card type: its suit and rank (one-hot), its base-rule phrases and whether it is a seven
    (the card planes' lookup rows, shared with ``madiao_mao.agents.mao.memory``)."""
    suit = np.zeros((N_TYPES, 4), dtype=np.float32)
    rank = np.zeros((N_TYPES, 13), dtype=np.float32)
    phrases = np.zeros((N_TYPES, N_PHRASES), dtype=np.float32)
    for card in range(N_TYPES):
        suit[card, cards.CARD_SUIT[card]] = 1.0  # the joker counts as the nine of diamonds
        rank[card, cards.CARD_RANK[card] - 1] = 1.0  # ranks run from 1 (ace) to 13 (king)
        bits = base_card_phrases(card)
        phrases[card] = [(bits >> p) & 1 for p in range(N_PHRASES)]
    seven = np.zeros(N_TYPES, dtype=np.float32)
    seven[[c for c in range(N_TYPES) if cards.CARD_RANK[c] == cards.SEVEN]] = 1.0
    return {"suit": suit, "rank": rank, "phrases": phrases, "seven": seven}


class MaoRuleFeatures(BaseFeaturesExtractor):
    """The observation with base-rule and recent-call card planes appended (module doc)."""

    def __init__(self, observation_space: spaces.Box) -> None:
        obs_dim = int(np.prod(observation_space.shape))
        if obs_dim < layout.OFF_EVENTS:
            raise ValueError(f"observations of {obs_dim} values are not Mao observations")
        self.n_events, self.event_width = event_layout(obs_dim)
        super().__init__(observation_space, features_dim=obs_dim + N_DERIVED)
        for name, table in card_tables().items():
            self.register_buffer(name, torch.as_tensor(table), persistent=False)

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        obs = observations.float().flatten(1)
        hand = (obs[:, SLICES["hand"]] > 0.5).float()
        top = obs[:, SLICES["top"]]
        suit_to_follow = obs[:, SLICES["valid_suit"]]
        pending = (obs[:, SLICES["pending_seven"]] > 0.5).float()
        matches = ((suit_to_follow @ self.suit.T + (top @ self.rank) @ self.rank.T) > 0.5).float()
        # A pending seven chain is answered only with a seven.
        playable = hand * (pending * self.seven + (1.0 - pending) * matches)

        played = obs[:, SLICES["played"]]
        has_played = played.sum(1)
        took_seven = (obs[:, _TOOK_SEVEN] > 0.5).float()
        acted = (has_played + obs[:, _DREW] + took_seven).clamp(max=1.0)
        held = obs[:, SLICES["hand"]].sum(1).round()  # without the card played
        due = played @ self.phrases
        due[:, cards.PENALTY_CARD] = torch.maximum(due[:, cards.PENALTY_CARD], took_seven)
        due[:, cards.LAST_CARD] = acted * (held == 1).float()
        due[:, cards.MAO] = has_played * (held == 0).float()

        if self.n_events:
            start = layout.OFF_EVENTS
            events = obs[:, start : start + self.n_events * self.event_width]
            events = events.reshape(-1, self.n_events, self.event_width)
            present = events[:, :, _PRESENT]
            card = events[:, :, EVENT_SLICES["card"]]
            kind = events[:, :, EVENT_SLICES["kind"]]
            bad = (present * kind[:, :, layout.KIND_BAD_CARD]).unsqueeze(2)
            good = present * kind[:, :, layout.KIND_PLAY]
            called = events[:, :, EVENT_SLICES["calls"]].sum(2)
            clean = (good * (called < 0.5).float()).unsqueeze(2)
            bad_suits, bad_ranks = ((bad * card).sum(1) @ self.suit), ((bad * card).sum(1) @ self.rank)
            ok_suits, ok_ranks = ((clean * card).sum(1) @ self.suit), ((clean * card).sum(1) @ self.rank)
            suspect = hand * ((bad_suits @ self.suit.T + bad_ranks @ self.rank.T) > 0.5).float()
            trusted = hand * ((ok_suits @ self.suit.T + ok_ranks @ self.rank.T) > 0.5).float()
            missed = (events[:, :, _FAILURES].sum(1) > 0.5).float()
        else:
            suspect = trusted = torch.zeros_like(hand)
            missed = torch.zeros_like(due)

        squashed = obs.clone()
        squashed[:, COUNT_COLUMNS] = torch.log1p(obs[:, COUNT_COLUMNS].clamp(min=0.0))
        # The count of rounds finished is left out: training episodes are single rounds, where it
        # is always 0, and in a long game it would move the policy where it was never trained.
        squashed[:, _ROUNDS] = 0.0
        return torch.cat([squashed, playable, suspect, trusted, due, missed], dim=1)


class SkipMlpExtractor(nn.Module):
    """SB3's ``MlpExtractor`` whose actor latent also carries ``n_skip`` features: the last ones, or
    those before the last ``n_trailing`` (a privileged critic's columns follow the seat's features,
    ``madiao_mao.training.mao.privileged``)."""

    def __init__(
        self, feature_dim: int, net_arch, activation_fn, device, n_skip: int, n_trailing: int = 0
    ) -> None:
        super().__init__()
        self.inner = MlpExtractor(feature_dim, net_arch=net_arch, activation_fn=activation_fn, device=device)
        self.n_skip = n_skip
        self.skipped = slice(feature_dim - n_trailing - n_skip, feature_dim - n_trailing)
        self.latent_dim_pi = self.inner.latent_dim_pi + n_skip
        self.latent_dim_vf = self.inner.latent_dim_vf

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.forward_actor(features), self.forward_critic(features)

    def forward_actor(self, features: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.inner.forward_actor(features), features[:, self.skipped]], dim=1)

    def forward_critic(self, features: torch.Tensor) -> torch.Tensor:
        return self.inner.forward_critic(features)


class SkipPolicy(MaskableActorCriticPolicy):
    """MaskablePPO's MLP policy over the features extractor ``features_class`` (the default of
    ``features_extractor_class``), whose last ``skip_width()`` features skip past the actor MLP to
    the action layer (:class:`SkipMlpExtractor`)."""

    features_class: type[BaseFeaturesExtractor]

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("features_extractor_class", self.features_class)
        super().__init__(*args, **kwargs)

    def skip_width(self) -> int:
        raise NotImplementedError

    def trailing_width(self) -> int:
        """How many features follow the skipped ones (none: they are the last)."""
        return 0

    def _build_mlp_extractor(self) -> None:
        self.mlp_extractor = SkipMlpExtractor(
            self.features_dim,
            self.net_arch,
            self.activation_fn,
            self.device,
            n_skip=self.skip_width(),
            n_trailing=self.trailing_width(),
        )


class MaoRulePolicy(SkipPolicy):
    """MaskablePPO's MLP policy over ``MaoRuleFeatures`` with the derived planes skipping to the
    action layer (module doc)."""

    features_class = MaoRuleFeatures

    def skip_width(self) -> int:
        return N_DERIVED


class MaoBeliefFeatures(MaoRuleFeatures):
    """``MaoRuleFeatures`` of the observation, then the belief inputs appended to it
    (``madiao_mao.agents.mao.belief_inputs``: the observation space is the table's observation followed by
    ``BELIEF_WIDTH`` inputs)."""

    def __init__(self, observation_space: spaces.Box) -> None:
        obs_dim = int(np.prod(observation_space.shape))
        table = spaces.Box(-np.inf, np.inf, (obs_dim - BELIEF_WIDTH,), np.float32)
        super().__init__(table)
        self.table_dim = obs_dim - BELIEF_WIDTH
        self._features_dim += BELIEF_WIDTH

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        obs = observations.float().flatten(1)
        return torch.cat([super().forward(obs[:, : self.table_dim]), obs[:, self.table_dim :]], dim=1)


class BeliefActionHead(nn.Module):
    """Action logits of a belief policy: a linear layer of the MLP's latent, plus for every action a
    weighting, shared by all actions, of what the belief inputs say about it.

    The channels (``CHANNELS``), one value per action: "good", the belief that playing card c is a
    good play (and for drawing, one minus the best card's); "required", the belief that phrase p,
    not said yet, is required (for "Mao", that it is due); "talking", that saying p would be
    talking; "fault", that the turn under judgement deserves call reason r; "unsaid", for ending
    the turn, the largest (required - talking) of a phrase (the worth of the best phrase left).
    With one weight per channel, what the policy
    learns about acting on its belief holds for every card, phrase and rule alike, including the
    rules held out of its training; a weight per card would have to be learned card by card from
    the rules it met. Speech and calls are decided by the belief alone: saying any phrase, ending
    the turn, calling any reason and not calling each have one learned bias (``speech_bias``) and
    no logit of the latent, since what a phrase or a call costs is exactly what the belief says
    of it. A latent read there learned, on the training rules, to end a turn with a phrase that a
    held-out speech rule requires left unsaid, although the belief was certain of it. Cards,
    drawing, a point of order and the rule choices keep a logit of the latent each (``linear``).
    The latent's last ``BELIEF_WIDTH`` values are the belief inputs (the MLP extractor skips them
    there); the linear layer reads the rest.
    """

    CHANNELS = ("good", "required", "talking", "fault", "unsaid")
    #: The weights a fresh head starts from: act on the belief (good cards, required phrases and
    #: likely faults up, talking and ending a turn with a phrase worth saying down), so that even
    #: an untrained policy plays like its belief.
    INITIAL_WEIGHTS = (4.0, 4.0, -4.0, 4.0, -4.0)

    def __init__(self, latent_dim: int, n_actions: int) -> None:
        super().__init__()
        # A logit of the latent for each action that is not speech or a call: the cards, drawing,
        # a point of order and the rule choices.
        self.linear = nn.Linear(latent_dim, n_actions - N_PHRASES - cards.N_CALL_REASONS - 2)
        #: One bias each for saying a phrase, ending the turn, calling a reason and not calling.
        self.speech_bias = nn.Parameter(torch.zeros(4))
        self.channel_weights = nn.Parameter(torch.tensor(self.INITIAL_WEIGHTS))
        self.n_actions = n_actions

    def channels(self, belief: torch.Tensor) -> torch.Tensor:
        """``[B, len(CHANNELS), n_actions]``: the belief inputs placed at the actions they speak of."""
        out = belief.new_zeros((belief.shape[0], len(self.CHANNELS), self.n_actions))
        play_good = belief[:, BELIEF_SLICES["play_good"]]
        out[:, 0, : cards.N_CARD_TYPES] = play_good
        out[:, 0, cards.DRAW] = 1.0 - play_good.max(dim=1).values
        says = slice(cards.SAY_0, cards.SAY_0 + N_PHRASES)
        out[:, 1, says] = belief[:, BELIEF_SLICES["say_required"]]
        out[:, 1, cards.SAY_0 + cards.MAO] = belief[:, BELIEF_SLICES["mao_due"]][:, 0]
        out[:, 2, says] = belief[:, BELIEF_SLICES["say_talking"]]
        # "Mao" is never talking: said in vain it draws its own call, which "required" weighs.
        out[:, 2, cards.SAY_0 + cards.MAO] = 0.0
        out[:, 3, cards.CALL_0 : cards.NO_CALL] = belief[:, BELIEF_SLICES["call_fault"]]
        # Ending the turn: how much the phrase most worth saying (or a due "Mao") is worth.
        worth = (out[:, 1, says] - out[:, 2, says]).max(dim=1).values.clamp(min=0.0)
        out[:, 4, cards.END_TURN] = worth
        return out

    def forward(self, latent: torch.Tensor) -> torch.Tensor:
        belief, latent = latent[:, -BELIEF_WIDTH:], latent[:, :-BELIEF_WIDTH]
        own = self.linear(latent)
        rows = latent.shape[0]
        say, end_turn, call, no_call = (bias.expand(rows, 1) for bias in self.speech_bias)
        logits = torch.cat(
            [
                own[:, : cards.SAY_0],  # the cards and drawing
                say.expand(rows, N_PHRASES),
                end_turn,
                call.expand(rows, cards.N_CALL_REASONS),
                no_call,
                own[:, cards.SAY_0 :],  # a point of order and the rule choices
            ],
            dim=1,
        )
        return logits + torch.einsum("bca,c->ba", self.channels(belief), self.channel_weights)


class MaoBeliefPolicy(MaoRulePolicy):
    """MaskablePPO's policy over ``MaoBeliefFeatures`` (the rule planes and the belief inputs feed
    the MLPs), whose action logits add to the actor MLP's output a shared weighting of the belief
    about each action (:class:`BeliefActionHead`). Played through
    ``madiao_mao.agents.mao.policy.BeliefPolicyAgent``, which computes the inputs."""

    #: The observation this policy reads ends with the belief inputs (the agent's loader reads it).
    reads_belief = True

    features_class = MaoBeliefFeatures

    def skip_width(self) -> int:
        # The belief inputs (the last features) reach the action head beside the actor's latent.
        return BELIEF_WIDTH

    def _build(self, lr_schedule) -> None:
        super()._build(lr_schedule)
        head = BeliefActionHead(self.mlp_extractor.latent_dim_pi - BELIEF_WIDTH, int(self.action_space.n))
        if self.ortho_init:
            head.apply(functools.partial(self.init_weights, gain=0.01))  # as SB3's action_net
        self.action_net = head
        # SB3 built the optimizer over the replaced layer: once more over the policy's parameters.
        self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)
