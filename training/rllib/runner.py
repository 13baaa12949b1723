"""``CardGameEnvRunner``: RLlib's single-agent env runner on the project's batched Numba games.

The extension point chosen (over a vectorized gymnasium entry point) is a subclass of
``SingleAgentEnvRunner``: the runner builds ONE ``LearnerGymVectorEnv`` over a batched env of
``num_envs_per_env_runner`` games (one Numba call steps them all, ``make_env``) and samples it
with its own loop (``_sample_bulk``): per step one forward pass of the module and one env step
for all games, recorded as arrays; the ``SingleAgentEpisode`` objects are built from whole
slices at the end of the call (``madiao_mao.training.rllib.bulk_episodes``). They are the episodes
RLlib's generic loop returns (which builds them step by step, game by game, and re-batches the
observations from them through its env-to-module connectors: two thirds of a runner's time),
field for field, with RLlib's metrics; the generic loop stays as the reference
(``bulk_sampling = False``, compared in ``tests/distributed/test_bulk_sampling.py``) and for
what the bulk loop does not do (whole-episode sampling, random actions, custom connectors or
episode callbacks). Being an actor of its own, the runner also holds the opponents of its
games, which the driver updates between iterations through ``foreach_env_runner``:

- scripted opponents (``madiao_mao.agents.registry``), built once;
- the live policy (``"current"``): this runner's own copy of the RLModule, whose weights RLlib
  syncs after every update, sampling its moves;
- snapshots: frozen copies of the policy, sent by the driver as exported policy bytes (the
  files under ``snapshots/``: TorchScript, or a ``torch.export`` program) and held by the
  runner (not as RLlib modules: the learner never trains them and they only need a forward
  pass);
- in league mode, a copy of the league (``madiao_mao.training.league``) whose PFSP probabilities pick one
  member per game; the driver's league is the one of record: the runner reports each finished
  game's (member, return) (``pop_finished``) and takes the driver's payoffs back (``sync_league``).

The run's config travels in ``config.env_config["train_config"]`` (``TrainConfig.to_json()``).
"""

from __future__ import annotations

import gc
from typing import Any

import numpy as np
import ray
import torch
from ray.rllib.callbacks.callbacks import RLlibCallback
from ray.rllib.connectors.connector_v2 import ConnectorV2
from ray.rllib.core.columns import Columns
from ray.rllib.env.env_runner import ENV_STEP_FAILURE
from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner
from ray.rllib.utils.metrics import MODULE_TO_ENV_CONNECTOR, RLMODULE_INFERENCE_TIMER

from madiao_mao.agents.base import Agent, act_as_batch_of_one, act_on_rows_with_a_move
from madiao_mao.agents.exported_policy import load_policy
from madiao_mao.training.config import TrainConfig
from madiao_mao.training.game_spec import game_spec
from madiao_mao.training.league import League
from madiao_mao.training.learner_games import TimedVectorEnv
from madiao_mao.training.opponents import LeagueOpponents, OpponentPool, scripted_agents
from madiao_mao.training.rllib.bulk_episodes import GameCarry, StepArrays, build_episodes
from madiao_mao.training.rllib.env import LearnerGymVectorEnv, SkippingLearnerVecEnv
from madiao_mao.training.rllib.module import MASK_KEY, OBS_KEY
from madiao_mao.training.run_folder import new_league


class ModuleAgent(Agent):
    """A policy as an opponent: masked logits from ``logits(obs, masks)``, moves sampled (Gumbel-max)
    from its own seeded generator, as the SB3 trainer's policy opponents do."""

    def __init__(self, logits, name: str, seed: int | None) -> None:
        self._logits = logits
        self.name = name
        self.rng = np.random.default_rng(seed)

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        return act_as_batch_of_one(self, observation, action_mask)

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        observations = np.asarray(observations)
        return act_on_rows_with_a_move(masks, lambda rows, legal: self._sample(observations[rows], legal))

    def _sample(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        logits = np.asarray(self._logits(observations, masks), dtype=np.float64)
        logits = logits - np.log(-np.log(self.rng.random(logits.shape)))
        logits[~masks] = -np.inf
        return logits.argmax(axis=1)


def module_logits(module):
    """``logits(obs, masks)`` of a masking RLModule (inference pass, no gradients)."""

    def logits(observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        batch = {
            Columns.OBS: {
                OBS_KEY: torch.as_tensor(np.asarray(observations, dtype=np.float32)),
                MASK_KEY: torch.as_tensor(np.asarray(masks, dtype=np.float32)),
            }
        }
        with torch.no_grad():
            return module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS].numpy()

    return logits


def exported_logits(data: bytes):
    """``logits(obs, masks)`` of an exported policy given as bytes (a ``torch.export`` program or
    the TorchScript of older runs: ``madiao_mao.agents.exported_policy.load_policy``)."""
    net, _ = load_policy(data)

    def logits(observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return net(
                torch.as_tensor(np.asarray(observations, dtype=np.float32)),
                torch.as_tensor(np.asarray(masks, dtype=np.float32)),
            ).numpy()

    return logits


class BatchedActionsToEnv(ConnectorV2):
    """The module-to-env pipeline of the runner: the actions (sampled, or greedy when not
    exploring) and their log-probabilities, kept as batched numpy arrays.

    RLlib's default pipeline unbatches every output into one item per game and back again
    (``UnBatchToIndividualItems``, ``ListifyDataForVectorEnv``), a third of the sampling time with
    256 games per runner (cProfile); the runner indexes the batched arrays per game itself, and a
    discrete action needs no normalizing or clipping."""

    def __call__(
        self,
        *,
        rl_module: Any,
        batch: dict[str, Any],
        episodes: list[Any],
        explore: bool | None = None,
        shared_data: dict | None = None,
        **kwargs: Any,
    ) -> Any:
        if explore:
            distribution = rl_module.get_exploration_action_dist_cls().from_logits(
                batch[Columns.ACTION_DIST_INPUTS]
            )
        else:
            distribution = (
                rl_module.get_inference_action_dist_cls()
                .from_logits(batch[Columns.ACTION_DIST_INPUTS])
                .to_deterministic()
            )
        actions = distribution.sample()
        return {
            Columns.ACTIONS: actions.numpy(),
            Columns.ACTION_LOGP: distribution.logp(actions).numpy(),
            Columns.ACTION_DIST_INPUTS: batch[Columns.ACTION_DIST_INPUTS].numpy(),
        }


def module_to_env_pipeline(env: Any = None, spaces: Any = None) -> BatchedActionsToEnv:
    """``config.env_runners(module_to_env_connector=...)``: the runner's own pipeline."""
    return BatchedActionsToEnv()


class CardGameEnvRunner(SingleAgentEnvRunner):
    """RLlib env runner stepping a batched card game with the opponents inside (module doc)."""

    #: ``sample(num_timesteps=...)`` through the bulk sampler (``_sample_bulk``); False: RLlib's
    #: generic loop, kept as the reference the tests compare the bulk sampler with (and taken
    #: whenever the config asks for something the bulk sampler does not do: ``_bulk_applies``).
    bulk_sampling: bool = True
    #: The bulk sampler's games between calls (``bulk_episodes.GameCarry``); None: reset first.
    _carry: Any = None

    def _bulk_applies(self, num_timesteps: int | None, random_actions: bool) -> bool:
        """Whether a ``_sample`` call can go through the bulk sampler: timesteps (not whole
        episodes), actions from the module, RLlib's default env-to-module pipeline (the sampler
        batches the env's observations itself), no episode callbacks and numpy episodes."""
        config = self.config
        return (
            self.bulk_sampling
            and num_timesteps is not None
            and not random_actions
            and self.module is not None
            and config._env_to_module_connector is None
            and config.episodes_to_numpy
            and all(type(callback) is RLlibCallback for callback in self._callbacks)
            and not any(
                getattr(config, f"callbacks_{event}", None)
                for event in ("on_episode_created", "on_episode_start", "on_episode_step", "on_episode_end")
            )
        )

    def _sample(
        self,
        *,
        num_timesteps: int | None = None,
        num_episodes: int | None = None,
        explore: bool,
        random_actions: bool = False,
        force_reset: bool = False,
    ) -> list[Any]:
        if self._bulk_applies(num_timesteps, random_actions):
            return self._sample_bulk(
                num_timesteps=int(num_timesteps), explore=explore, force_reset=force_reset
            )
        # RLlib's loop keeps its own episodes: it resets the games unless it ran the last call, and
        # the bulk sampler resets after it.
        generic_continues = not self.bulk_sampling and not force_reset
        self._carry = None
        return super()._sample(
            num_timesteps=num_timesteps,
            num_episodes=num_episodes,
            explore=explore,
            random_actions=random_actions,
            force_reset=not generic_continues,
        )

    def _reset_bulk(self) -> None:
        """Reset every game (seeded on the runner's first reset, as RLlib's loop does)."""
        self._ongoing_episodes_for_metrics.clear()
        self._shared_data = {}
        observations, _ = self._try_env_reset(seed=self._seed if self._needs_initial_reset else None)
        self._needs_initial_reset = False
        self._carry = GameCarry.after_reset(observations[OBS_KEY], observations[MASK_KEY])

    def _sample_bulk(self, *, num_timesteps: int, explore: bool, force_reset: bool) -> list[Any]:
        """At least ``num_timesteps`` learner steps of the runner's games: one forward pass and one
        env step per step for all games, the steps recorded as arrays and the episodes built from
        them at the end (``bulk_episodes``); the same episodes as RLlib's loop."""
        if force_reset or self._needs_initial_reset or self._carry is None:
            self._reset_bulk()
        steps = StepArrays(self._carry)
        runners = self.config.num_env_runners or 1
        ts = 0
        while ts < num_timesteps:
            batch = {
                Columns.OBS: {
                    OBS_KEY: torch.from_numpy(steps.observations[-1]),
                    MASK_KEY: torch.from_numpy(steps.masks[-1]),
                }
            }
            with self.metrics.log_time(RLMODULE_INFERENCE_TIMER):
                if explore:
                    # RLlib's estimate of the global env steps (for exploration schedules).
                    t = (self.num_env_steps_sampled_lifetime // runners + ts) * runners
                    to_env = self.module.forward_exploration(batch, t=t)
                else:
                    to_env = self.module.forward_inference(batch)
            to_env = self._module_to_env(
                rl_module=self.module,
                batch=to_env,
                episodes=[],
                explore=explore,
                shared_data=self._shared_data,
                metrics=self.metrics,
                metrics_prefix_key=(MODULE_TO_ENV_CONNECTOR,),
            )
            actions = to_env.pop(Columns.ACTIONS)
            results = self._try_env_step(to_env.pop(Columns.ACTIONS_FOR_ENV, actions))
            if results == ENV_STEP_FAILURE:
                # The env was made again (restart_failed_sub_environments): start afresh, as
                # RLlib's loop does, dropping this call's steps.
                self._reset_bulk()
                steps, ts = StepArrays(self._carry), 0
                continue
            observations, rewards, terminated, truncated, _ = results
            # A game waiting for its reset took no step (its first observation comes back).
            ts += int(np.count_nonzero(~steps.waiting[-1]))
            steps.record(
                actions,
                to_env,
                observations[OBS_KEY],
                observations[MASK_KEY],
                rewards,
                terminated,
                truncated,
            )
        # Thousands of episode objects at once, all kept: Python's cyclic collector would run
        # several full passes over the process's (Ray's, torch's) objects for nothing, half the
        # time of building them (measured).
        collecting = gc.isenabled()
        gc.disable()
        try:
            done, ongoing, self._carry = build_episodes(
                steps,
                self._carry,
                weights_seq_no=self._weights_seq_no,
                observation_space=self.env.single_observation_space,
                action_space=self.env.single_action_space,
            )
        finally:
            if collecting:
                gc.enable()
        # RLlib's bookkeeping of a sampling call (get_metrics reads it).
        self._done_episodes_for_metrics.extend(done)
        for chunk in ongoing:
            self._ongoing_episodes_for_metrics[chunk.id_].append(chunk)
        self._log_env_steps(metric=self._metrics_num_env_steps_sampled, num_steps=ts)
        self._increase_sampled_metrics(ts, len(done))
        return done + ongoing

    def make_env(self) -> None:
        # Policy forward passes of one runner are small batches: one thread each (see
        # madiao_mao.agents.learned.SMALL_BATCH); parallelism comes from more runners.
        torch.set_num_threads(1)
        if self.env is not None:
            self.env.close()
        env_config = dict(self.config.env_config)
        config = TrainConfig.from_json(dict(env_config["train_config"]))
        self.train_config = config
        worker = int(self.worker_index or 0)
        # Each runner plays its own deal stream; a resumed run a fresh one.
        seed = config.seed + 1000 * int(env_config.get("resumes", 0)) + 7919 * worker
        self.pool = self._build_opponents(config, env_config, seed)
        self.vector_env = TimedVectorEnv(
            game_spec(config.game).make_vector_env(config, self.config.num_envs_per_env_runner, seed)
        )
        league = config.opponents == "league"
        learner = SkippingLearnerVecEnv(
            self.vector_env,
            self.pool.slots,
            learner_seat="rotate",
            seed=seed,
            opponent_draw="per_game" if league else "per_seat",
            opponent_sampler=self.pool.sample if league else None,
        )
        if league:
            self.pool.attach(learner)
        shaped = game_spec(config.game).shape_reward(learner, config)
        self.env = LearnerGymVectorEnv(learner, shaped)
        self.num_envs = self.env.num_envs
        self._needs_initial_reset = True
        self._carry = None

    def _build_opponents(self, config, env_config: dict, seed: int):
        if config.opponents != "league":
            return OpponentPool(
                scripted_agents(config, config.scripted_opponents, "scripted opponent"),
                weights=config.opponent_weights,
                max_snapshots=config.max_snapshots,
            )
        if env_config.get("league") is not None:
            league = League.from_dict(env_config["league"])
        else:
            # No league of record sent (a runner made outside a run, as in the benchmark): the
            # config's fresh one, as a new run starts with.
            league = new_league(config)
        # Snapshots join through add_snapshot (in the driver's order), so start without them.
        for name in league.names("snapshot"):
            league.remove(name)
        anchors = league.names("anchor")
        agents = scripted_agents(config, tuple(league.members[n].agent for n in anchors), "league anchor")
        return LeagueOpponents(
            league, dict(zip(anchors, agents, strict=True)), max_snapshots=config.max_snapshots
        )

    def make_module(self) -> None:
        super().make_module()
        if self.env is not None and self.module is not None:
            config = self.train_config
            self.pool.set_current(
                ModuleAgent(
                    module_logits(self.module), "current", seed=config.seed * 7 + int(self.worker_index or 0)
                )
            )

    # -- called by the driver through foreach_env_runner --------------------------------------
    def add_snapshot(self, name: str, path: str, step: int, data: bytes) -> None:
        """A frozen policy joins the opponents (pool or league) of this runner's games."""
        if self.env is None:
            return
        seed = self.train_config.seed * 1_000_003 + step + 7919 * int(self.worker_index or 0)
        self.pool.add_snapshot(ModuleAgent(exported_logits(data), name, seed), path=path, step=step)

    def sync_league(self, league_data: dict) -> None:
        """Take the driver's payoffs and ratings (the league of record) for the PFSP draws."""
        league = getattr(self.pool, "league", None) if self.env is not None else None
        if league is None:
            return
        for member in league_data["members"]:
            mine = league.members.get(member["name"])
            if mine is not None:
                for field in ("games", "return_sum", "score_sum", "mu", "sigma"):
                    setattr(mine, field, member[field])

    def pop_finished(self) -> list[dict[str, Any]]:
        """The learner's finished games since the last call: role, return and (league mode) the
        member that played the other seats."""
        if self.env is None:
            return []
        spec = game_spec(self.train_config.game)
        slot_member = getattr(self.pool, "slot_member", None)
        stale = getattr(self.pool, "stale_games", set())
        games = []
        for info in self.env.finished:
            role = spec.learner_role(info["terminal_observation"]) if spec.learner_role else spec.roles[0]
            member = None
            if slot_member is not None and "opponent_index" in info:
                if info["game"] in stale:
                    # Its opponent slot changed hands while it was played: it met two members.
                    stale.discard(info["game"])
                else:
                    member = slot_member[info["opponent_index"]]
            games.append({"role": role, "return": float(info["episode"]["r"]), "member": member})
        self.env.finished.clear()
        return games

    def timing(self) -> dict[str, float]:
        """Seconds spent in the game env and in opponent policies, and opponent decisions."""
        if self.env is None:
            return {"env_seconds": 0.0, "opponent_seconds": 0.0}
        return {"env_seconds": float(self.vector_env.seconds), "opponent_seconds": float(self.pool.seconds)}

    def node_id(self) -> str:
        """The Ray node this runner lives on."""
        return ray.get_runtime_context().get_node_id()
