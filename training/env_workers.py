"""The learner's games in shards stepped side by side: the first shard in the trainer's process,
every other in a worker process of its own, so that the per-game Python of a rollout (the
opponents' decisions, a belief policy's posteriors) runs on every core.

``ShardedVecEnv`` is an SB3 ``VecEnv`` over the shards' games (as many in each), in shard order: it sends each
worker its games' actions, steps the first shard itself meanwhile, and returns the games'
observations, rewards, ends, infos and learner masks as one batch (``action_masks()``). A worker is
forked (``start``) after the trainer has built its model: it inherits the trainer's objects, builds
its own shard with ``build_shard(index)`` and answers the calls the trainer makes of every shard
(``call_workers``: what the shard's builder named, e.g. a new opponent). What the trainer's
``sync`` gives (a league's standings, which its opponent draws follow) each worker's "sync" call
takes before a reset or step whenever it changed. Why processes and not
threads: that Python holds the interpreter's lock (threads took turns on one core); why forked:
a worker starts from the trainer's state (its model among it) without pickling any of it, in a
fraction of a second. Each worker ignores Ctrl-C (the trainer stops it: ``close``) and exits
when the trainer's end of its pipe closes.

A worker that fails says why: its traceback is the text of the ``RuntimeError`` the trainer raises.
"""

from __future__ import annotations

import contextlib
import copy
import multiprocessing
import signal
import sys
import traceback
from collections.abc import Callable
from typing import Any

import numpy as np
from stable_baselines3.common.vec_env import VecEnv

#: Seconds a worker is given to stop at ``close`` before it is terminated.
CLOSE_TIMEOUT_SECONDS = 10.0

#: ``build_shard(index)``: the shard's learner env and the calls it answers, by name.
ShardBuilder = Callable[[int], tuple[VecEnv, dict[str, Callable[..., Any]]]]

#: What a step or reset command carries when the trainer's ``sync`` value has not changed.
_UNCHANGED = None


def fork_available() -> bool:
    """Whether this platform can fork worker processes (what ``ShardedVecEnv`` needs)."""
    return "fork" in multiprocessing.get_all_start_methods()


def _serve(connection, build_shard: ShardBuilder, index: int) -> None:
    """A worker's life: build shard ``index``, then answer the trainer's commands until "close"
    (or until the trainer's end of the pipe is gone)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the trainer stops its workers itself
    try:
        venv, calls = build_shard(index)
    except BaseException:
        connection.send(("error", traceback.format_exc()))
        return
    connection.send(("ok", None))
    while True:
        try:
            command, argument = connection.recv()
        except EOFError:
            return
        try:
            if command == "close":
                venv.close()
                connection.send(("ok", None))
                return
            if command in ("reset", "step"):
                synced, argument = argument
                if synced is not _UNCHANGED:
                    calls["sync"](synced)
            if command == "reset":
                result: Any = (venv.reset(), venv.action_masks())
            elif command == "step":
                observations, rewards, dones, infos = venv.step(argument)
                result = (observations, rewards, dones, infos, venv.action_masks())
            elif command == "call":
                name, args = argument
                result = calls[name](*args)
            else:
                raise ValueError(f"unknown command {command!r}")
        except BaseException:
            connection.send(("error", traceback.format_exc()))
            continue
        connection.send(("ok", result))


class ShardedVecEnv(VecEnv):
    """The games of ``first`` (shard 0, stepped in this process) followed by those of
    ``n_shards - 1`` workers' shards of as many games each (module doc); ``start`` forks the
    workers. Until then only ``first``'s attributes can be read."""

    def __init__(self, first: VecEnv, n_shards: int) -> None:
        if n_shards < 1:
            raise ValueError(f"n_shards must be at least 1, got {n_shards}")
        self.first = first  # before VecEnv's own set-up, which reads the shards' render mode
        self.n_shards = n_shards
        self.shard_games = first.num_envs
        super().__init__(n_shards * first.num_envs, first.observation_space, first.action_space)
        self._connections: list[Any] = []
        self._processes: list[Any] = []
        self._masks = np.zeros((self.num_envs, int(self.action_space.n)), dtype=bool)
        self._actions: np.ndarray | None = None
        #: What every worker's "sync" call is given before a reset or step, when its value
        #: changed since they were last given it (None: no such call).
        self.sync: Callable[[], Any] | None = None
        self._synced: Any = _UNCHANGED

    # -- the workers ---------------------------------------------------------------------------
    @property
    def started(self) -> bool:
        return bool(self._processes)

    @property
    def worker_pids(self) -> list[int]:
        """The process ids of the workers (shards 1, 2, ...), once started."""
        return [process.pid for process in self._processes]

    def start(self, build_shard: ShardBuilder) -> None:
        """Fork one worker per shard after the first; each builds its shard with
        ``build_shard(index)`` (``index`` >= 1). Returns once every worker has built its shard
        (a worker that failed: ``RuntimeError`` with its traceback, and every worker stopped)."""
        if self.started:
            raise RuntimeError("the workers are already started")
        context = multiprocessing.get_context("fork")
        # A forked worker flushes the standard streams when it exits: what this process had
        # buffered would be printed twice.
        sys.stdout.flush()
        sys.stderr.flush()
        for index in range(1, self.n_shards):
            ours, theirs = context.Pipe()
            process = context.Process(
                target=_serve, args=(theirs, build_shard, index), name=f"shard-{index}", daemon=True
            )
            process.start()
            theirs.close()
            self._connections.append(ours)
            self._processes.append(process)
        try:
            self._receive_all()
        except BaseException:
            self.close()
            raise

    def call_workers(self, name: str, *args: Any) -> list[Any]:
        """Every worker's answer to the call its shard named ``name`` (``build_shard``'s)."""
        self._require_started()
        for connection in self._connections:
            connection.send(("call", (name, args)))
        return self._receive_all()

    def _require_started(self) -> None:
        if not self.started and self.n_shards > 1:
            raise RuntimeError("start the workers (ShardedVecEnv.start) before using the env")

    def _receive_all(self) -> list[Any]:
        """Every worker's answer, in shard order; a worker's failure raised (after all answered)."""
        answers, failures = [], []
        for index, connection in enumerate(self._connections, start=1):
            try:
                status, payload = connection.recv()
            except (EOFError, OSError):  # the worker's end is gone: it exited
                status, payload = "error", f"the worker of shard {index} exited"
            if status == "error":
                failures.append(f"shard {index}: {payload}")
            answers.append(payload)
        if failures:
            raise RuntimeError("a worker process failed:\n" + "\n".join(failures))
        return answers

    def _changed_sync(self) -> Any:
        """The value of ``sync`` if the workers have not been given it yet, else ``_UNCHANGED``."""
        if self.sync is None:
            return _UNCHANGED
        value = self.sync()
        if value == self._synced:
            return _UNCHANGED
        self._synced = value
        return value

    # -- VecEnv --------------------------------------------------------------------------------
    def reset(self) -> np.ndarray:
        self._require_started()
        synced = self._changed_sync()
        for connection in self._connections:
            connection.send(("reset", (synced, None)))
        observations = [self.first.reset()]
        masks = [self.first.action_masks()]
        for worker_observations, worker_masks in self._receive_all():
            observations.append(worker_observations)
            masks.append(worker_masks)
        self._masks = np.concatenate(masks).astype(bool, copy=False)
        return np.concatenate(observations)

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions)

    def step_wait(self):
        self._require_started()
        actions, self._actions = self._actions, None
        games = self.shard_games
        synced = self._changed_sync()
        for index, connection in enumerate(self._connections, start=1):
            connection.send(("step", (synced, actions[index * games : (index + 1) * games])))
        observations, rewards, dones, infos = self.first.step(actions[:games])
        parts = [(observations, rewards, dones, infos, self.first.action_masks())]
        parts += self._receive_all()
        self._masks = np.concatenate([part[4] for part in parts]).astype(bool, copy=False)
        return (
            np.concatenate([part[0] for part in parts]),
            np.concatenate([part[1] for part in parts]),
            np.concatenate([part[2] for part in parts]),
            [info for part in parts for info in part[3]],
        )

    def action_masks(self) -> np.ndarray:
        """``[n_envs, n_actions]`` bool: the learner's legal actions in every game."""
        return self._masks.copy()

    def close(self) -> None:
        """Stop the workers (each closes its shard; one that does not stop in time is terminated),
        then close the first shard."""
        for connection in self._connections:
            with contextlib.suppress(OSError):  # a worker that already exited
                connection.send(("close", None))
        for connection, process in zip(self._connections, self._processes, strict=True):
            try:
                if connection.poll(CLOSE_TIMEOUT_SECONDS):
                    connection.recv()
            except (EOFError, OSError):  # a worker that already exited
                pass
            process.join(CLOSE_TIMEOUT_SECONDS)
            if process.is_alive():
                process.terminate()
                process.join()
            connection.close()
        self._connections, self._processes = [], []
        self.first.close()

    def get_attr(self, attr_name: str, indices=None) -> list[Any]:
        return [getattr(self.first, attr_name) for _ in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices=None) -> None:
        raise NotImplementedError("ShardedVecEnv: the shards' attributes are their own")

    def env_method(self, method_name: str, *method_args, indices=None, **method_kwargs) -> list[Any]:
        if method_name != "action_masks":
            raise NotImplementedError(
                f"ShardedVecEnv answers env_method('action_masks') only, not {method_name!r}"
            )
        masks = self.action_masks()
        return [masks[i] for i in self._get_indices(indices)]

    def env_is_wrapped(self, wrapper_class, indices=None) -> list[bool]:
        return [False for _ in self._get_indices(indices)]

    def has_attr(self, attr_name: str) -> bool:
        return hasattr(self, attr_name) or hasattr(self.first, attr_name)

    def __getattr__(self, name: str) -> Any:
        # What the first shard's learner env says of itself (the table's observation length,
        # ...) is every shard's: all are built alike.
        if name == "first":
            raise AttributeError(name)
        return getattr(self.first, name)


def shared_cpu_copy(model: Any) -> Any:
    """A copy of the SB3 model ``model`` (the trainer's live policy) for worker processes: its
    policy deep-copied to the CPU into shared memory, the optimizer left out; everything else is
    the model's. The workers play it whatever device the trainer learns on (a forked process must
    not use the trainer's GPU), and :func:`copy_weights` brings it the trainer's weights in place."""
    policy = model.policy
    optimizer = getattr(policy, "optimizer", None)
    # The memo makes the copy's optimizer None instead of a copy of the optimizer and its state.
    memo = {id(optimizer): None} if optimizer is not None else {}
    policy_copy = copy.deepcopy(policy, memo).to("cpu")
    policy_copy.share_memory()
    shared = copy.copy(model)
    shared.policy = policy_copy
    return shared


def copy_weights(source: Any, target: Any) -> None:
    """The weights of the SB3 model ``source`` copied into ``target``'s policy in place (its
    tensors stay where they are: in shared memory, for :func:`shared_cpu_copy`)."""
    target.policy.load_state_dict(source.policy.state_dict())


class ShardedOpponents:
    """The trainer's opponent pool when its games are in a ``ShardedVecEnv``: what the trainer
    tells its own pool (the live policy, a new snapshot) is told every worker's, whose shard
    answers the calls "set_current" and "add_snapshot" (path relative to the run folder, step) by
    building the same agent from its copy of the run (``madiao_mao.training.sb3.train.start_env_workers``).
    Everything else is the trainer's pool's (its time and decisions are the first shard's).

    A league's pool (one with ``stale_games``) records every shard's finished games in the
    trainer, so a worker's "add_snapshot" answers with the games of its shard that the new
    snapshot's slot made stale (they met two opponents); they join the trainer's set by their
    index among all games."""

    def __init__(self, pool: Any, shards: ShardedVecEnv) -> None:
        self.pool = pool
        self.shards = shards
        #: What brings the workers the trainer's weights before a rollout (None: nothing to do).
        self.share_weights: Callable[[], None] | None = None

    def before_rollout(self) -> None:
        """The trainer is about to collect a rollout: the workers get its weights first."""
        if self.share_weights is not None:
            self.share_weights()

    def set_current(self, agent: Any) -> None:
        self.pool.set_current(agent)
        self.shards.call_workers("set_current")

    def add_snapshot(self, agent: Any, *, path: str | None = None, step: int | None = None) -> None:
        if path is None:
            raise ValueError("a snapshot for the workers' pools needs its path (relative to the run folder)")
        self.pool.add_snapshot(agent, path=path, step=step)
        answers = self.shards.call_workers("add_snapshot", path, step)
        stale = getattr(self.pool, "stale_games", None)
        if stale is not None:
            games = self.shards.shard_games
            for shard, shard_stale in enumerate(answers, start=1):
                stale.update(shard * games + game for game in shard_stale)

    def __getattr__(self, name: str) -> Any:
        if name in ("pool", "shards", "share_weights"):
            raise AttributeError(name)
        return getattr(self.pool, name)
