"""An agent that plays a saved sb3-contrib MaskablePPO policy (the trainer's checkpoints)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from agents.base import Agent, legal_actions


class LearnedPolicyAgent(Agent):
    """Plays a MaskablePPO model loaded from a ``.zip`` (always masked; greedy by default).

    ``deterministic=False`` samples from the policy instead (the trainer's snapshot opponents
    use sampling so that self-play does not collapse onto one line of play).
    """

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        model=None,
        deterministic: bool = True,
        name: str | None = None,
    ) -> None:
        if (path is None) == (model is None):
            raise ValueError("give exactly one of a model path or a loaded model")
        if model is None:
            path = Path(path)
            if not path.is_file():
                raise FileNotFoundError(f"no saved model at {path}")
            # Imported here: torch and SB3 are optional ("train" extra) and slow to import.
            from sb3_contrib import MaskablePPO

            model = MaskablePPO.load(str(path), device="cpu")
        self.model = model
        self.deterministic = deterministic
        self.name = name or (Path(path).stem if path is not None else "learned")
        self.obs_dim = int(np.prod(model.observation_space.shape))

    def _check_obs(self, observations: np.ndarray) -> np.ndarray:
        observations = np.asarray(observations, dtype=np.float32)
        if observations.shape[-1] != self.obs_dim:
            raise ValueError(
                f"model {self.name!r} expects observations of length {self.obs_dim}, got "
                f"{observations.shape[-1]} (was it trained on another game or obs_type?)"
            )
        return observations

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        legal_actions(action_mask)
        action, _ = self.model.predict(
            self._check_obs(observation),
            action_masks=np.asarray(action_mask, dtype=bool),
            deterministic=self.deterministic,
        )
        return int(action)

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        masks = np.asarray(masks, dtype=bool)
        actions = np.full(masks.shape[0], -1, dtype=np.int64)
        rows = np.flatnonzero(masks.any(axis=1))
        if rows.size:
            chosen, _ = self.model.predict(
                self._check_obs(np.asarray(observations)[rows]),
                action_masks=masks[rows],
                deterministic=self.deterministic,
            )
            actions[rows] = np.asarray(chosen, dtype=np.int64)
        return actions
