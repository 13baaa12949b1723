"""An agent that plays a saved sb3-contrib MaskablePPO policy (the trainer's checkpoints).

Each game's agents module names the small model shipped with the package for it
(``PRETRAINED_MODEL``), so ``make_agent("model", game)``, ``play`` and ``evaluate`` work straight
after install; a game with a policy kind of its own plays it with the module's ``policy_agent``
(``madiao_mao.agents.spec``).
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from madiao_mao.agents.base import Agent, act_as_batch_of_one, act_on_rows_with_a_move, legal_actions
from madiao_mao.agents.data_files import note_read
from madiao_mao.games import games, get_game

#: Batches below this many rows are evaluated on one torch thread.
SMALL_BATCH = 256


class LearnedPolicyAgent(Agent):
    """Plays a MaskablePPO model loaded from a ``.zip`` (always masked; greedy by default).

    ``deterministic=False`` samples from the policy instead (the trainer's snapshot opponents
    use sampling so that self-play does not collapse onto one line of play); ``seed`` seeds
    that sampling.

    ``sparse_inputs=True`` computes the actor's first layer from the non-zero entries of its
    inputs only (``madiao_mao.agents.torch_mlp.SparseFirstLayer``), when they are sparse enough:
    for a league's snapshots in training, whose weights never change. Its logits are the dense
    product's up to float rounding, so by default an agent decides bit for bit as SB3's
    ``predict``; either way it decides for a row what it decides for that row in any batch.
    """

    decides_from_observation = True  # a feed-forward policy; Mao's event window is in the observation

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        model=None,
        deterministic: bool = True,
        name: str | None = None,
        seed: int | None = None,
        sparse_inputs: bool = False,
    ) -> None:
        if (path is None) == (model is None):
            raise ValueError("give exactly one of a model path or a loaded model")
        if model is None:
            model = load_model(path)
        self.model = model
        self.deterministic = deterministic
        self.sparse_inputs = sparse_inputs
        self.name = name or (Path(path).stem if path is not None else "learned")
        self.obs_dim = int(np.prod(model.observation_space.shape))
        #: The length of the observations it is handed (a belief policy appends inputs of its own;
        #: a policy whose critic read the hidden cards in training is handed its seat's alone).
        self.table_obs_dim = int(getattr(model.policy, "table_obs_dim", self.obs_dim))
        self.rng = np.random.default_rng(seed)

    def seed(self, seed: int | None) -> None:
        """Reseed the sampling (``deterministic=False``); greedy play has no randomness."""
        self.rng = np.random.default_rng(seed)

    def _check_obs(self, observations: np.ndarray) -> np.ndarray:
        observations = np.asarray(observations, dtype=np.float32)
        length = observations.shape[-1]
        if length != self.table_obs_dim and leading_observations().get(length) == self.table_obs_dim:
            # A richer variant of the observation it was trained on, which begins with that one.
            observations = np.ascontiguousarray(observations[..., : self.table_obs_dim])
        if observations.shape[-1] != self.table_obs_dim:
            raise ValueError(
                f"model {self.name!r} expects observations of length {self.table_obs_dim}, got "
                f"{observations.shape[-1]} (was it trained on another game or obs_type?)"
            )
        return observations

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        legal_actions(action_mask)
        return act_as_batch_of_one(self, observation, action_mask)

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        observations = np.asarray(observations)
        return act_on_rows_with_a_move(
            masks, lambda rows, legal: self._choose(self._check_obs(observations[rows]), legal)
        )

    def _choose(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """Masked greedy or sampled actions (the policy's logits: :meth:`_logits`)."""
        policy = self.model.policy
        if not _is_actor_critic(policy):
            chosen, _ = self.model.predict(observations, action_masks=masks, deterministic=self.deterministic)
            return np.asarray(chosen, dtype=np.int64)
        return self._pick(self._logits(observations), masks)

    def _pick(self, logits: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """The greedy or sampled legal action of each row of ``logits`` (changed in place)."""
        if not self.deterministic:
            # Gumbel-max: argmax of logits plus Gumbel noise samples the softmax policy.
            logits += -np.log(-np.log(self.rng.random(logits.shape)))
        logits[~masks] = -np.inf
        return logits.argmax(axis=1).astype(np.int64)

    def action_log_probs(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """The policy's masked log-probabilities ``[N, n_actions]`` (``-inf`` off the mask): how
        likely the sampling policy is to make each move; a search weighs the deals it imagines by
        them (``madiao_mao.agents.madiao.search``). Every row needs a legal action."""
        masks = np.asarray(masks, dtype=bool)
        if not masks.any(axis=1).all():
            raise ValueError("action_log_probs: every row needs at least one legal action")
        if not _is_actor_critic(self.model.policy):
            raise TypeError(f"model {self.name!r}: action_log_probs needs an actor-critic policy")
        logits = self._logits(self._check_obs(np.asarray(observations)))
        logits[~masks] = -np.inf
        peak = logits.max(axis=1, keepdims=True)
        return logits - peak - np.log(np.exp(logits - peak).sum(axis=1, keepdims=True))

    def joint_key(self) -> tuple | None:
        """What another agent must share with this one for :meth:`act_jointly` to decide for both
        in one pass: the policy's class and device, the actor's features extractor (its class and
        settings: it must have no parameters, so that one pass of it serves every agent) and the
        observation length. None when there is no such pass (not an actor-critic, a features
        extractor that learns, or an agent of a subclass, which may decide in a way of its own)."""
        policy = self.model.policy
        cached = getattr(self, "_joint_key", None)
        if cached is not None and cached[0] is policy:  # asked at every round of opponent moves
            return cached[1]
        key = None
        if type(self) is LearnedPolicyAgent and _is_actor_critic(policy):
            extractor = policy.pi_features_extractor
            settings = getattr(policy, "features_extractor_kwargs", None) or {}
            if not any(True for _ in extractor.parameters()):
                key = (type(policy), str(policy.device), type(extractor), repr(sorted(settings.items())))
                key += (self.table_obs_dim,)
        self._joint_key = (policy, key)
        return key

    @classmethod
    def act_jointly(
        cls,
        agents: list[LearnedPolicyAgent],
        observations: list[np.ndarray],
        masks: list[np.ndarray],
    ) -> list[np.ndarray]:
        """``agent.act_batch(observations[i], masks[i])`` for each agent, the same actions and the
        same random draws, with one pass of the features extractor over every agent's rows (its
        per-call cost is most of a small batch's); the agents share a :meth:`joint_key`. Each
        agent's layers then run on its own rows, as in its own call, so the logits are the same
        bit for bit. Why: a league's policy snapshots are asked one call each at every round of
        opponent moves, a few dozen rows apiece (docs/training.md)."""
        # Imported here: keeps torch off this module's import path.
        import torch

        keys = {agent.joint_key() for agent in agents}
        if len(keys) != 1 or None in keys:
            raise ValueError("act_jointly: the agents must share one joint_key (not None)")
        checked, legal_masks, movers = [], [], []
        for agent, agent_observations, agent_masks in zip(agents, observations, masks, strict=True):
            agent_masks = np.asarray(agent_masks, dtype=bool)
            rows = np.flatnonzero(agent_masks.any(axis=1))
            checked.append(agent._check_obs(np.asarray(agent_observations)[rows]))
            legal_masks.append(agent_masks)
            movers.append(rows)
        policy = agents[0].model.policy
        logits_of_agents, start = [], 0
        with torch.inference_mode():
            with threads_for_batch(sum(rows.size for rows in movers)):
                features = policy.pi_features_extractor(
                    torch.as_tensor(np.concatenate(checked), device=policy.device)
                )
            for agent, rows in zip(agents, movers, strict=True):
                logits_of_agents.append(agent._actor_logits_tensor(features[start : start + rows.size]))
                start += rows.size
            # One conversion for every agent's rows (each a copy of the same float32 numbers).
            logits = torch.cat(logits_of_agents).cpu().numpy().astype(np.float64)
        actions, start = [], 0
        for agent, rows, agent_masks in zip(agents, movers, legal_masks, strict=True):
            chosen = np.full(agent_masks.shape[0], -1, dtype=np.int64)  # -1: no move in that row
            chosen[rows] = agent._pick(logits[start : start + rows.size], agent_masks[rows])
            start += rows.size
            actions.append(chosen)
        return actions

    def _logits(self, observations: np.ndarray) -> np.ndarray:
        """The actor's action logits (float64 ``[N, n_actions]``), computed directly from the
        actor-critic's modules: a fraction of ``model.predict``'s per-call cost, which dominates
        for the small batches an opponent gets."""
        # Imported here: keeps torch off this module's import path.
        import torch

        policy = self.model.policy
        with threads_for_batch(observations.shape[0]), torch.inference_mode():
            # On the policy's device: a saved model loads on the CPU, the live model of a run
            # training on a GPU (as an opponent, or evaluated) stays there.
            features = policy.pi_features_extractor(torch.as_tensor(observations, device=policy.device))
        return self._actor_logits(features)

    def _actor_logits(self, features) -> np.ndarray:
        """The action logits (float64) of the actor's features (the features extractor's output)."""
        # Imported here: keeps torch off this module's import path.
        import torch

        with torch.inference_mode():
            return self._actor_logits_tensor(features).cpu().numpy().astype(np.float64)

    def _actor_logits_tensor(self, features):
        """The action logits (a float32 tensor on the policy's device) of the actor's features,
        on one torch thread for a small batch (``threads_for_batch``). A plain actor (linear
        layers and known activations) runs without its modules' calls
        (``madiao_mao.agents.torch_mlp``): the same products, so the same logits bit for bit,
        for less of the per-call cost that dominates a league opponent's few dozen rows (with
        ``sparse_inputs``, the first layer over the non-zero features: the same up to rounding)."""
        # Imported here: keeps torch off this module's import path.
        from madiao_mao.agents.torch_mlp import (
            NonzeroEntries,
            SparseFirstLayer,
            actor_layers,
            mlp_outputs,
            sparse_mlp_output,
        )

        policy = self.model.policy
        cached = getattr(self, "_actor_layers", None)
        if cached is None or cached[0] is not policy:  # the layers are read once per policy
            layers = actor_layers(policy)
            sparse = layers is not None and self.sparse_inputs
            first_layer = SparseFirstLayer(layers[0][0]) if sparse else None
            cached = self._actor_layers = (policy, layers, first_layer)
        _, layers, first_layer = cached
        with threads_for_batch(features.shape[0]):
            if layers is None:
                return policy.action_net(policy.mlp_extractor.forward_actor(features))
            if first_layer is not None and features.shape[0]:
                entries = NonzeroEntries.of(features)
                if entries is not None:
                    return sparse_mlp_output(layers, first_layer, entries)
                # Inputs too dense for it are of this policy's kind (the density is the
                # observation type's): not scanned again.
                self._actor_layers = (policy, layers, None)
            return mlp_outputs(layers, features)[-1]


@contextlib.contextmanager
def threads_for_batch(n_rows: int) -> Iterator[None]:
    """torch on one thread while a batch of fewer than ``SMALL_BATCH`` rows is evaluated, then as
    before: small batches run fastest on one thread (more threads only add synchronisation, and on
    a busy machine they wait for cores): measured 0.15 ms vs 1.2 ms per decision on 2 cores."""
    # Imported here: keeps torch off this module's import path.
    import torch

    threads = torch.get_num_threads()
    if n_rows < SMALL_BATCH:
        torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _is_actor_critic(policy) -> bool:
    return all(hasattr(policy, a) for a in ("pi_features_extractor", "mlp_extractor", "action_net"))


def load_model(path: str | Path):
    """A saved MaskablePPO model, on the CPU (a clear error for a missing file)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no saved model at {path}")
    note_read(path)
    # Imported here: torch and SB3 are optional ("train" extra) and slow to import.
    import torch
    from sb3_contrib import MaskablePPO

    # Loading first builds the policy with its orthogonal initialisation (QR decompositions), then
    # reads the saved weights over it. On one thread; more only wait for cores on a busy machine,
    # where that made loading the Mao model 40 times slower (docs/results.md).
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return MaskablePPO.load(str(path), device="cpu")
    finally:
        torch.set_num_threads(threads)


@functools.cache  # asked at every call of an agent; the games do not change
def leading_observations() -> Mapping[int, int]:
    """Observation lengths that begin with a shorter observation of the same game, the same entries
    in the same places (each game's agents module's ``LEADING_OBSERVATIONS``): a policy trained on
    the shorter one plays from the leading entries of the longer one."""
    leading: dict[int, int] = {}
    for game in games().values():
        leading.update(game.layer("agents").LEADING_OBSERVATIONS)
    return MappingProxyType(leading)


def policy_agent(
    path: str | Path | None = None,
    *,
    model=None,
    table=None,
    name: str | None = None,
    **kwargs,
) -> LearnedPolicyAgent:
    """The agent that plays a saved or live MaskablePPO model: the player of its policy's kind when
    a game's agents module has one (its ``policy_agent``, e.g. Mao's belief policies), else a
    :class:`LearnedPolicyAgent`. ``table``: the env (AEC or vector) the agent plays at, whose
    variants such a player follows (default: the default table's); ``kwargs`` are the agents' own
    (``deterministic``, ``seed``)."""
    if (path is None) == (model is None):
        raise ValueError("give exactly one of a model path or a loaded model")
    if model is None:
        model = load_model(path)
        name = name or Path(path).stem
    for game in games().values():
        kind = game.layer("agents").policy_agent
        agent = kind(model, table=table, name=name, **kwargs) if kind is not None else None
        if agent is not None:
            return agent
    return LearnedPolicyAgent(model=model, name=name, **kwargs)


_SHARED_MODELS: dict[tuple[str, int, int], Any] = {}
_SHARED_MODELS_LOCK = threading.Lock()


def shared_model(path: Path):
    """The saved model at ``path``, loaded once per process and shared by every agent that plays
    it (a model is read, never changed, while it plays: a server's games at once held one copy
    each, about 10 MB a Mao seat). Keyed by the file's path, size and time, so a file replaced on
    disk is read again. Training loads its own copy with :func:`load_model`."""
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    note_read(path)  # also when the model is already loaded: this agent reads it too
    with _SHARED_MODELS_LOCK:  # a web server builds games in threads: one load, not one a thread
        model = _SHARED_MODELS.get(key)
        if model is None:
            model = _SHARED_MODELS[key] = load_model(path)
        return model


def pretrained_agent(game: str, name: str = "model", table=None) -> LearnedPolicyAgent:
    """The shipped model of ``game`` (its agents module's ``PRETRAINED_MODEL``, loaded once per
    process: :func:`shared_model`), greedy; ``table``: as :func:`policy_agent`'s."""
    path = get_game(game).layer("agents").PRETRAINED_MODEL
    if path is None:
        raise ValueError(f"no pretrained {game} model is shipped; give a model path (model:PATH)")
    if not path.is_file():
        raise FileNotFoundError(
            f"the pretrained {game} model is missing ({path.name}); give a model path "
            f"or train one with 'madiao-mao train --game {game}'"
        )
    return policy_agent(model=shared_model(path), name=name, table=table)
