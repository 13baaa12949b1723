"""An agent that plays a saved sb3-contrib MaskablePPO policy (the trainer's checkpoints).

``PRETRAINED_MODELS`` are the small models shipped with the package, one per game (Madiao: a league
run of ``madiao-mao train``, 12M steps; Mao: ``madiao-mao train --game mao`` at its defaults), so
``make_agent("model", game)``, ``play`` and ``evaluate`` work straight after install.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from madiao_mao.agents.base import Agent, legal_actions

#: Batches below this many rows are evaluated on one torch thread.
SMALL_BATCH = 256

#: The shipped policy of each game, used when no model path is given (Madiao: summary
#: observations; Mao: the default 8-event history observations).
PRETRAINED_MODELS: dict[str, Path] = {
    "madiao": Path(__file__).resolve().parent / "pretrained" / "madiao_selfplay.zip",
    "mao": Path(__file__).resolve().parent / "pretrained" / "mao_selfplay.zip",
}
PRETRAINED_MADIAO = PRETRAINED_MODELS["madiao"]


class LearnedPolicyAgent(Agent):
    """Plays a MaskablePPO model loaded from a ``.zip`` (always masked; greedy by default).

    ``deterministic=False`` samples from the policy instead (the trainer's snapshot opponents
    use sampling so that self-play does not collapse onto one line of play); ``seed`` seeds
    that sampling.
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
    ) -> None:
        if (path is None) == (model is None):
            raise ValueError("give exactly one of a model path or a loaded model")
        if model is None:
            model = load_model(path)
        self.model = model
        self.deterministic = deterministic
        self.name = name or (Path(path).stem if path is not None else "learned")
        self.obs_dim = int(np.prod(model.observation_space.shape))
        #: The length of the observations it is handed (a belief policy appends inputs of its own).
        self.table_obs_dim = self.obs_dim
        self.rng = np.random.default_rng(seed)

    def seed(self, seed: int | None) -> None:
        """Reseed the sampling (``deterministic=False``); greedy play has no randomness."""
        self.rng = np.random.default_rng(seed)

    def _check_obs(self, observations: np.ndarray) -> np.ndarray:
        observations = np.asarray(observations, dtype=np.float32)
        if observations.shape[-1] != self.table_obs_dim:
            raise ValueError(
                f"model {self.name!r} expects observations of length {self.table_obs_dim}, got "
                f"{observations.shape[-1]} (was it trained on another game or obs_type?)"
            )
        return observations

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        legal_actions(action_mask)
        return int(self.act_batch(np.asarray(observation)[None], np.asarray(action_mask)[None])[0])

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        masks = np.asarray(masks, dtype=bool)
        actions = np.full(masks.shape[0], -1, dtype=np.int64)
        rows = np.flatnonzero(masks.any(axis=1))
        if rows.size:
            actions[rows] = self._choose(self._check_obs(np.asarray(observations)[rows]), masks[rows])
        return actions

    def _choose(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """Masked greedy or sampled actions. An actor-critic policy's logits are computed directly
        (a fraction of ``model.predict``'s per-call cost, which dominates for the small batches an
        opponent gets); other policy classes go through ``predict``."""
        import torch

        policy = self.model.policy
        if not all(hasattr(policy, a) for a in ("pi_features_extractor", "mlp_extractor", "action_net")):
            chosen, _ = self.model.predict(observations, action_masks=masks, deterministic=self.deterministic)
            return np.asarray(chosen, dtype=np.int64)
        # Small batches run fastest on one thread (more threads only add synchronisation, and on
        # a busy machine they wait for cores): measured 0.15 ms vs 1.2 ms per decision on 2 cores.
        threads = torch.get_num_threads()
        if observations.shape[0] < SMALL_BATCH:
            torch.set_num_threads(1)
        try:
            with torch.no_grad():
                features = policy.pi_features_extractor(torch.as_tensor(observations))
                logits = policy.action_net(policy.mlp_extractor.forward_actor(features)).numpy()
        finally:
            torch.set_num_threads(threads)
        logits = logits.astype(np.float64)
        if not self.deterministic:
            # Gumbel-max: argmax of logits plus Gumbel noise samples the softmax policy.
            logits += -np.log(-np.log(self.rng.random(logits.shape)))
        logits[~masks] = -np.inf
        return logits.argmax(axis=1).astype(np.int64)


class BeliefPolicyAgent(LearnedPolicyAgent):
    """Plays a Mao policy that reads the belief inputs beside its observation
    (``madiao_mao.agents.mao.features.MaoBeliefPolicy``): it keeps the seat's posterior over the secret rules
    (``madiao_mao.agents.mao.belief_inputs``), so it has a memory per game, like the Bayesian player.

    It is handed the table's observation (``table_obs_dim`` values) and appends the inputs itself.
    ``act`` follows one seat of one game (call :meth:`reset` between games); ``act_batch`` keeps
    one posterior per row key, the batch row by default or ``rows`` (one game-seat key per row,
    as the trainer's opponent table hands them); :meth:`reset_rows` forgets ended games' keys.
    ``posterior``: the posterior options of the table's variants
    (``madiao_mao.agents.mao.players.posterior_options``; default: the default table's).

    A round winner's rule proposal follows the posterior, as the scripted players' does: the
    network chooses among the rules it most suspects are in force without being sure
    (``madiao_mao.agents.mao.players.rules_to_propose``; a refusal is free news of a secret rule). No belief
    input speaks of single rules, and the network's rule logits were learned when the mask offered
    only the rules not in force.
    """

    decides_from_observation = False  # its posterior remembers the game

    def __init__(self, path: str | Path | None = None, *, posterior: dict | None = None, **kwargs) -> None:
        from madiao_mao.agents.mao.belief_inputs import BELIEF_WIDTH, BeliefTracker

        super().__init__(path, **kwargs)
        self.table_obs_dim = self.obs_dim - BELIEF_WIDTH
        self.beliefs = BeliefTracker(posterior)

    def reset(self) -> None:
        self.beliefs.reset()

    def reset_rows(self, rows: np.ndarray) -> None:
        self.beliefs.forget(rows)

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        legal_actions(action_mask)
        masks = np.asarray(action_mask, dtype=bool)[None]
        return int(self._act_rows(np.asarray(observation)[None], masks, [self.beliefs.posteriors.default])[0])

    def act_batch(
        self, observations: np.ndarray, masks: np.ndarray, rows: np.ndarray | None = None
    ) -> np.ndarray:
        masks = np.asarray(masks, dtype=bool)
        return self._act_rows(observations, masks, self.beliefs.seat_posteriors(masks.shape[0], rows))

    def _act_rows(self, observations: np.ndarray, masks: np.ndarray, posteriors: list) -> np.ndarray:
        from madiao_mao.agents.mao.players import rules_to_propose

        from mao_env.cards import CHOOSE_RULE_0

        policy_inputs = self.beliefs.policy_observations(self._check_obs(observations), masks, posteriors)
        actions = np.full(masks.shape[0], -1, dtype=np.int64)
        rows = np.flatnonzero(masks.any(axis=1))
        if rows.size:
            choices = masks[rows]
            for choice, row in zip(choices, rows, strict=True):
                if choice[CHOOSE_RULE_0:].any():
                    choice[:] = False
                    choice[rules_to_propose(masks[row], posteriors[row].marginals())] = True
            actions[rows] = self._choose(policy_inputs[rows], choices)
        self.beliefs.note_actions(posteriors, actions)
        return actions


def load_model(path: str | Path):
    """A saved MaskablePPO model, on the CPU (a clear error for a missing file)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no saved model at {path}")
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


def policy_agent(
    path: str | Path | None = None,
    *,
    model=None,
    table=None,
    name: str | None = None,
    **kwargs,
) -> LearnedPolicyAgent:
    """The agent that plays a saved or live MaskablePPO model: a :class:`BeliefPolicyAgent` when
    its policy reads belief inputs (``reads_belief``), else a :class:`LearnedPolicyAgent`.
    ``table``: the Mao env (AEC or vector) the agent plays at, whose variants the belief follows
    (default: the default table's); ``kwargs`` are the agents' own (``deterministic``, ``seed``)."""
    if (path is None) == (model is None):
        raise ValueError("give exactly one of a model path or a loaded model")
    if model is None:
        model = load_model(path)
        name = name or Path(path).stem
    if getattr(model.policy, "reads_belief", False):
        posterior = None
        if table is not None:
            from madiao_mao.agents.mao.players import posterior_options

            posterior = posterior_options(getattr(table, "unwrapped", table).options)
        return BeliefPolicyAgent(model=model, posterior=posterior, name=name, **kwargs)
    return LearnedPolicyAgent(model=model, name=name, **kwargs)


def pretrained_agent(game: str, name: str = "model", table=None) -> LearnedPolicyAgent:
    """The shipped model of ``game`` (``PRETRAINED_MODELS``), greedy; ``table``: as
    :func:`policy_agent`'s (the Mao env it plays at)."""
    if game not in PRETRAINED_MODELS:
        raise ValueError(f"game must be one of {', '.join(PRETRAINED_MODELS)}, got {game!r}")
    path = PRETRAINED_MODELS[game]
    if not path.is_file():
        raise FileNotFoundError(
            f"the pretrained {game} model is missing ({path.name}); give a model path "
            f"or train one with 'madiao-mao train --game {game}'"
        )
    return policy_agent(path, name=name, table=table)
