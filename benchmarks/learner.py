"""The learner suite: how fast the SB3 engine and the fast engine learn, next to what this
machine's matrix multiply allows.

PPO on a CPU is compute-bound: nearly all of a training run is the update's matrix multiplies.
So the update is measured against a ceiling taken in the same run: the policy's own layer shapes
(every ``nn.Linear`` of the default game's policy, policy and value networks) multiplied at a
large batch, forward only, on every core (the machine's limit, whatever thread count the trainer
is configured with). A learner sample costs
``3 x n_epochs x`` the forward FLOPs of those layers (a backward pass is about twice a forward
one), so ``ceiling = GFLOP/s / FLOP per sample`` and the target is a ratio of it.

Measured (the default training run's model, ``TrainConfig()``, scripted heuristic opponents, as
the trainer builds it):

- "sb3 PPO update": learner samples per second through ``model.train()`` (each sample is used
  ``n_epochs`` times), the rollout buffer filled once beforehand;
- "sb3 rollout collection": learner steps per second through ``collect_rollouts`` (policy
  inference for the learner, the opponents and the batched env);
- "sb3 training": both together, what a run's progress line shows;
- "matmul ceiling": the GFLOP/s described above, and "learner ceiling" in samples/s;
- "fast PPO update", "fast rollout collection", "fast training": the same three through the fast
  engine's loop (``madiao_mao.training.fast``) on the same model, games and opponents, with their
  ratios to the SB3 rows and to the ceiling in the notes.

- "fast rollout collection against a league": the same collection against the default config's
  league when it is full (the live policy, ``max_snapshots`` snapshots of it and the anchors, one
  member per game as in training), the league's policies asked in one joint call
  (``LearnedPolicyAgent.act_jointly``) and, beside it, one call per policy; SB3's collection
  against the same league; and each engine's training against it (its update and that
  collection), the default config's own training once the league is full, which issue 32's
  target names (``benchmarks.targets``).

``training_run_speed`` measures a whole training run of a config with either engine (what
``benchmarks/gpu_check.py`` compares on a GPU and on the CPU), and ``training_run_rows`` a short
run of every registered game's default config by each engine, in turns (``short_training_config``:
no warm start, no evaluation), as the run reports its learner steps/s: issue 32's per-game
targets compare the two engines there (a game's ``Goals.fast_training_over_sb3``).

The model and the ceiling's multiplies run on the torch device of ``--device`` (default "auto": a
CUDA GPU when torch sees one), which every row's note names.

The measurements of ``run`` take turns (``seconds_in_turns``: ``ROUNDS`` rounds, each figure its
median over them), so that the ratios in one run, which the targets read, are not one
measurement's luck on a shared machine whose speed drifts by a third within minutes
(benchmarks/README.md, "Sparse first layers in the rollout").
"""

from __future__ import annotations

import dataclasses
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from madiao_mao.benchmarks.timing import Result

if TYPE_CHECKING:
    from madiao_mao.training.config import TrainConfig

#: Rows of the matrices that measure the ceiling: large enough that per-call overhead vanishes.
CEILING_BATCH = 8192

#: Rounds in which ``run``'s measurements take turns (each its share of the time, at least one
#: call, a round's order the last one's reversed): every figure is its median over the rounds,
#: so the ratios the targets read compare like with like while a shared machine's load drifts.
ROUNDS = 3

#: The rows of the default config's own training, against its league when full, by each engine
#: (issue 32's target compares them: ``benchmarks.targets``).
LEAGUE_TRAINING = "fast training against a league (collection + update)"
SB3_LEAGUE_TRAINING = "sb3 training against a league (collection + update)"


#: Rollouts in each short training run of ``training_run_rows``: the second one's update and
#: collection run warm, and the slowest game's default takes about half a minute per engine.
TRAINING_RUN_ROLLOUTS = 2
#: The engines a training run is measured with, in the order they run.
ENGINES = ("sb3", "fast")
#: The worker processes of the training run timed with its games in shards (``env_workers``).
TRAINING_RUN_ENV_WORKERS = 2
#: ``training_run_rows``' tiny setting for a smoke test (``--quick``): 16 games, rollouts of 8 steps.
QUICK_RUN = {"n_envs": 16, "n_steps": 8, "batch_size": 64}


def training_run_system(game: str, engine: str, env_workers: int = 1) -> str:
    """The row name of ``game``'s short training run by ``engine`` (with ``env_workers``)."""
    workers = f", {env_workers} env workers" if env_workers > 1 else ""
    return f"{game} training run, {engine} engine{workers}"


def default_model(seed: int = 0, device: str = "cpu", settings: dict | None = None):
    """The default training run's model on torch ``device``, on its batched env with heuristic
    opponents (``settings``: ``TrainConfig`` fields that replace the defaults, as ``QUICK_RUN``)."""
    # Imported here: keeps torch and stable-baselines3 off this module's import path.
    from madiao_mao.training.config import TrainConfig
    from madiao_mao.training.sb3.model import make_model

    config = TrainConfig(seed=seed, **(settings or {}))
    return make_model(config, heuristic_env(config, seed), device=device), config


def heuristic_env(config: TrainConfig, seed: int):
    """The learner's batched games of ``config`` against the scripted heuristic in every other
    seat, the learner's seat rotating (the SB3 adapter's ``LearnerVecEnv``)."""
    # Imported here: keeps stable-baselines3 off this module's import path.
    from madiao_mao.training.opponents import scripted_agents
    from madiao_mao.training.sb3.adapter import LearnerVecEnv
    from madiao_mao.training.sb3.train import make_vector_env

    vector_env = make_vector_env(config, config.n_envs, seed=seed)
    opponents = scripted_agents(config, ("heuristic",), "benchmark opponent")
    return LearnerVecEnv(vector_env, opponents, learner_seat="rotate", seed=seed)


def linear_shapes(policy) -> list[tuple[int, int]]:
    """(inputs, outputs) of every ``nn.Linear`` in ``policy``, the matrix multiplies of a forward pass."""
    # Imported here: keeps torch off this module's import path.
    import torch

    return [(m.in_features, m.out_features) for m in policy.modules() if isinstance(m, torch.nn.Linear)]


def flop_per_sample(shapes: list[tuple[int, int]], n_epochs: int) -> float:
    """Matrix-multiply FLOPs one learner sample costs in a PPO update: forward + backward (twice
    the forward) in each of ``n_epochs`` epochs."""
    forward = sum(2.0 * n_in * n_out for n_in, n_out in shapes)
    return 3.0 * n_epochs * forward


def matmul_pass(
    shapes: list[tuple[int, int]], batch: int = CEILING_BATCH, device: str = "cpu"
) -> tuple[Callable[[], None], float]:
    """One pass of ``batch`` rows through each layer shape in turn (float32 products on torch
    ``device``, on every core, waiting for a GPU to finish them) as a body to time, and its FLOPs."""
    # Imported here: keeps torch off this module's import path.
    import torch

    generator = torch.Generator().manual_seed(0)
    inputs = [torch.randn(batch, n_in, generator=generator).to(device) for n_in, _ in shapes]
    weights = [torch.randn(n_in, n_out, generator=generator).to(device) for n_in, n_out in shapes]
    flop = sum(2.0 * batch * n_in * n_out for n_in, n_out in shapes)

    @torch.no_grad()
    def body() -> None:
        threads = torch.get_num_threads()
        torch.set_num_threads(os.cpu_count() or 1)  # the machine's limit, whatever the trainer's threads
        try:
            for x, w in zip(inputs, weights, strict=True):
                torch.mm(x, w)
            synchronize(device)  # a GPU queues the multiplies: wait for them before reading the clock
        finally:
            torch.set_num_threads(threads)

    body()  # warm-up: allocations, thread pool
    return body, flop


def matmul_gflops(
    shapes: list[tuple[int, int]], seconds: float, batch: int = CEILING_BATCH, device: str = "cpu"
) -> float:
    """GFLOP/s of torch multiplying ``batch`` rows through each layer shape in turn (float32), on
    torch ``device`` (``matmul_pass``)."""
    body, flop = matmul_pass(shapes, batch, device)
    return flop / _time_until(body, seconds) / 1e9


def synchronize(device: str) -> None:
    """Wait for the work queued on a CUDA ``device`` (nothing to wait for on the CPU)."""
    if device != "cpu":
        # Imported here: keeps torch off this module's import path.
        import torch

        torch.cuda.synchronize(device)


class _Continue:
    """The smallest SB3 callback ``collect_rollouts`` accepts (it only asks to go on)."""

    def __init__(self, model) -> None:
        # Imported here: keeps stable-baselines3 off this module's import path.
        from stable_baselines3.common.callbacks import BaseCallback

        class Nothing(BaseCallback):
            def _on_step(self) -> bool:
                return True

        self.callback = Nothing()
        self.callback.init_callback(model)


def _time_until(body, seconds: float, min_calls: int = 2) -> float:
    """Seconds per call of ``body`` (at least ``min_calls`` calls, at least ``seconds`` in all)."""
    calls, started = 0, time.perf_counter()
    while True:
        body()
        calls += 1
        elapsed = time.perf_counter() - started
        if calls >= min_calls and elapsed >= seconds:
            return elapsed / calls


def seconds_in_turns(
    bodies: dict[str, Callable[[], object]], seconds: float, rounds: int = ROUNDS
) -> dict[str, float]:
    """Seconds per call of each of ``bodies`` (already warm), the bodies taking turns: ``rounds``
    rounds, each giving every body ``seconds / rounds`` (at least one call), every other round
    in the reverse order; each figure is the median of its rounds."""
    per_round: dict[str, list[float]] = {name: [] for name in bodies}
    names = list(bodies)
    for round_number in range(rounds):
        for name in names if round_number % 2 == 0 else names[::-1]:
            per_round[name].append(_time_until(bodies[name], seconds / rounds, min_calls=1))
    return {name: statistics.median(times) for name, times in per_round.items()}


def run(seconds: float, device: str = "cpu", quick: bool = False) -> list[Result]:
    """The suite's rows (module doc), measured on torch ``device`` (``resolve_device``'s);
    ``quick``: on the tiny ``QUICK_RUN`` setting of the default model, a smoke test of the rows."""
    # Imported here: keeps torch off this module's import path.
    import torch

    model, config = default_model(device=device, settings=QUICK_RUN if quick else None)
    torch.set_num_threads(config.torch_threads)
    rollout_size = config.n_envs * config.n_steps
    model.learn(rollout_size)  # the first rollout and update: warm-up, and a full buffer
    callback = _Continue(model).callback
    shapes = linear_shapes(model.policy)
    ceiling_pass, ceiling_flop = matmul_pass(shapes, device=device)
    fast_update_body, fast_collect_body = fast_engine_bodies(model, config)
    bodies = {
        "update": model.train,
        "collect": lambda: model.collect_rollouts(
            model.env, callback, model.rollout_buffer, n_rollout_steps=model.n_steps
        ),
        "fast_update": fast_update_body,
        "fast_collect": fast_collect_body,
        "league_joint": league_collection_body(model, config, joint=True),
        "league_alone": league_collection_body(model, config, joint=False),
        "sb3_league": league_collection_body(model, config, engine="sb3"),
        "ceiling": ceiling_pass,
    }
    timed = seconds_in_turns(bodies, seconds)
    update, collect, fast_update, fast_collect = (
        timed[name] for name in ("update", "collect", "fast_update", "fast_collect")
    )
    league_joint, league_alone, sb3_league = (
        timed[name] for name in ("league_joint", "league_alone", "sb3_league")
    )
    gflops = ceiling_flop / timed["ceiling"] / 1e9
    ceiling_threads = os.cpu_count() or 1
    ceiling = gflops * 1e9 / flop_per_sample(shapes, config.n_epochs)
    threads = f"{torch.get_num_threads()} torch thread(s)"
    on = f"on {device}"
    network = f"{len(shapes)} linear layers, {flop_per_sample(shapes, 1) / 3e6:.2f} MFLOP forward per sample"
    return [
        Result(
            "learner",
            "matmul ceiling (the policy's layer shapes)",
            gflops,
            "GFLOP/s",
            f"{on}, {ceiling_threads} torch thread(s); {network}",
        ),
        Result(
            "learner",
            "learner ceiling (matmul GFLOP/s / FLOP per sample)",
            ceiling,
            "samples/s",
            f"{on}, {config.n_epochs} epochs, forward + backward; the suite's rows before its training runs: "
            f"median of {ROUNDS} rounds in turns",
        ),
        Result(
            "learner",
            "sb3 PPO update",
            rollout_size / update,
            "samples/s",
            f"{on}, minibatch {config.batch_size}, {config.n_epochs} epochs, {threads}; "
            f"{rollout_size / update / ceiling:.2f} of the ceiling",
        ),
        Result(
            "learner",
            "sb3 rollout collection",
            rollout_size / collect,
            "learner steps/s",
            f"{on}, {config.n_envs} games, heuristic opponents, policy inference included",
        ),
        Result(
            "learner",
            "sb3 training (collection + update)",
            rollout_size / (update + collect),
            "learner steps/s",
            f"{on}, rollout of {rollout_size} learner steps",
        ),
        Result(
            "learner",
            "fast PPO update",
            rollout_size / fast_update,
            "samples/s",
            f"{on}, minibatch {config.batch_size}, {config.n_epochs} epochs, {threads}; "
            f"{rollout_size / fast_update / ceiling:.2f} of the ceiling, {update / fast_update:.2f}x sb3's",
        ),
        Result(
            "learner",
            "fast rollout collection",
            rollout_size / fast_collect,
            "learner steps/s",
            f"{on}, the same games and opponents; {collect / fast_collect:.2f}x sb3's",
        ),
        Result(
            "learner",
            "fast rollout collection against a league, policies asked jointly",
            rollout_size / league_joint,
            "learner steps/s",
            f"{on}, the live policy, {config.max_snapshots} snapshots and "
            f"{len(config.league_anchors)} anchors; {league_alone / league_joint:.2f}x one call per policy",
        ),
        Result(
            "learner",
            "fast rollout collection against a league, one call per policy",
            rollout_size / league_alone,
            "learner steps/s",
            f"{on}, the same league",
        ),
        Result(
            "learner",
            "fast training (collection + update)",
            rollout_size / (fast_update + fast_collect),
            "learner steps/s",
            f"{on}, rollout of {rollout_size} learner steps; "
            f"{(update + collect) / (fast_update + fast_collect):.2f}x sb3's, "
            f"{rollout_size / (fast_update + fast_collect) / ceiling:.2f} of the learner ceiling",
        ),
        Result(
            "learner",
            "sb3 rollout collection against a league",
            rollout_size / sb3_league,
            "learner steps/s",
            f"{on}, the same league, its policies asked jointly",
        ),
        Result(
            "learner",
            SB3_LEAGUE_TRAINING,
            rollout_size / (update + sb3_league),
            "learner steps/s",
            f"{on}, rollout of {rollout_size} learner steps",
        ),
        Result(
            "learner",
            LEAGUE_TRAINING,
            rollout_size / (fast_update + league_joint),
            "learner steps/s",
            f"{on}, rollout of {rollout_size} learner steps; "
            f"{(update + sb3_league) / (fast_update + league_joint):.2f}x sb3's, "
            f"{rollout_size / (fast_update + league_joint) / ceiling:.2f} of the learner ceiling",
        ),
    ]


def fast_engine_bodies(model, config) -> tuple[Callable[[], None], Callable[[], None]]:
    """A PPO update and a rollout collection of the fast engine (``madiao_mao.training.fast``) on
    ``model``'s policy, in games of its own against the same opponents as the SB3 rows' (so
    that the two engines, timed in turns, each step their own games), as bodies to time, after
    one rollout and update of warm-up."""
    # Imported here: keeps torch and stable-baselines3 off this module's import path.
    from stable_baselines3.common.logger import Logger

    from madiao_mao.training.fast.train import FastLoop

    model.set_logger(Logger(folder=None, output_formats=[]))
    loop = FastLoop(model, heuristic_env(config, config.seed + 1), config, seed=config.seed)
    loop.collect()
    loop.update(1.0)
    return (lambda: loop.update(1.0)), loop.collect


def league_collection_body(model, config, *, joint: bool = True, engine: str = "fast") -> Callable[[], None]:
    """A rollout collection against ``config``'s league when it is full, as a body to time (after
    one of warm-up): the live policy (``model``), ``max_snapshots`` snapshots (each an agent of its
    own, with sparse inputs, over one frozen copy of ``model`` saved and loaded as a run's
    snapshots are: what is timed is their calls) and the anchors, one member per game drawn by
    PFSP. ``joint=False`` gives every policy agent no ``joint_key``, so each is asked alone.
    ``engine``: the fast engine's loop, or SB3's ``collect_rollouts`` (``model``'s own games'
    last observation is put back after each call, so that its other rows can follow)."""
    # Imported here: keeps torch and stable-baselines3 off this module's import path.
    import tempfile

    import numpy as np
    from stable_baselines3.common.logger import Logger

    from madiao_mao.agents.learned import load_model, policy_agent
    from madiao_mao.training.fast.train import FastLoop
    from madiao_mao.training.opponents import LeagueOpponents, scripted_agents
    from madiao_mao.training.run_folder import new_league
    from madiao_mao.training.sb3.train import league_learner_env, make_vector_env

    if engine not in ("fast", "sb3"):
        raise ValueError(f"engine must be 'fast' or 'sb3', got {engine!r}")
    league = new_league(config)
    anchors = scripted_agents(config, config.league_anchors, "league anchor")
    pool = LeagueOpponents(
        league, dict(zip(config.league_anchors, anchors, strict=True)), max_snapshots=config.max_snapshots
    )
    policies = [policy_agent(model=model, deterministic=False, seed=0, name="main")]
    pool.set_current(policies[0])
    with tempfile.TemporaryDirectory(prefix="league-snapshot-") as folder:
        model.save(f"{folder}/snapshot.zip")
        frozen = load_model(f"{folder}/snapshot.zip")  # as a run loads its snapshots, on the CPU
    for number in range(1, config.max_snapshots + 1):
        snapshot = policy_agent(
            model=frozen,
            deterministic=False,
            seed=number,
            name=f"snapshot_{number}",
            sparse_inputs=True,
        )
        pool.add_snapshot(snapshot, path=f"snapshot_{number}.zip", step=number)
        policies.append(snapshot)
    if not joint:
        for policy in policies:
            policy.joint_key = lambda: None
    venv = league_learner_env(make_vector_env(config, config.n_envs, seed=config.seed), pool, config.seed)
    model.set_logger(Logger(folder=None, output_formats=[]))
    if engine == "fast":
        loop = FastLoop(model, venv, config, seed=config.seed)
        loop.collect()
        return loop.collect
    callback = _Continue(model).callback
    league_games = {"last_obs": venv.reset(), "starts": np.ones(venv.num_envs, dtype=bool)}

    def collect() -> None:
        saved = model._last_obs, model._last_episode_starts
        model._last_obs, model._last_episode_starts = league_games["last_obs"], league_games["starts"]
        try:
            model.collect_rollouts(venv, callback, model.rollout_buffer, n_rollout_steps=model.n_steps)
        finally:
            league_games["last_obs"], league_games["starts"] = model._last_obs, model._last_episode_starts
            model._last_obs, model._last_episode_starts = saved

    collect()
    return collect


def league_collection_seconds(
    model, config, seconds: float, *, joint: bool = True, engine: str = "fast"
) -> float:
    """Seconds per rollout collection against ``config``'s full league (``league_collection_body``)."""
    return _time_until(league_collection_body(model, config, joint=joint, engine=engine), seconds)


def short_training_config(
    config: TrainConfig,
    runs_dir: str | Path,
    settings: dict | None = None,
    rollouts: int = TRAINING_RUN_ROLLOUTS,
) -> TrainConfig:
    """``config`` with ``settings`` (``TrainConfig`` fields) made a short measured run: ``rollouts``
    rollouts, no warm start, no evaluation, no checkpoint before the end, a snapshot after every
    rollout, its run folder in ``runs_dir``, nothing printed."""
    sized = dataclasses.replace(config, **(settings or {}))
    rollout = sized.n_envs * sized.n_steps
    return dataclasses.replace(
        sized,
        total_timesteps=rollouts * rollout,
        imitate="none",
        eval_every=0,
        checkpoint_every=10 * rollouts * rollout,
        snapshot_every=rollout,
        runs_dir=str(runs_dir),
        progress_bar=False,
        verbose=False,
    )


def training_run_rows(device: str = "cpu", quick: bool = False) -> list[Result]:
    """A short training run (``short_training_config``) of every registered game's default
    config on torch ``device``, by each engine in turns (``ENGINES``): learner steps/s as the run
    reports it, where its time went, and the fast engine's ratio to SB3's (``quick``: the tiny
    ``QUICK_RUN`` setting). On the CPU, each game gets one more: the fast engine with its games
    in ``TRAINING_RUN_ENV_WORKERS`` processes, and its ratio to the fast engine's run in one
    process."""
    # Imported here: keeps tyro and torch off this module's import path.
    import tempfile

    from madiao_mao.training.config import TrainConfig
    from madiao_mao.training.env_workers import fork_available
    from madiao_mao.training.game_spec import GAME_SPECS

    results = []
    with tempfile.TemporaryDirectory(prefix="training-runs-") as runs_dir:
        for game in GAME_SPECS:
            config = TrainConfig(game=game, device=device)
            speeds = {}
            for engine in ENGINES:
                run_dir = f"{runs_dir}/{game}-{engine}"
                short = short_training_config(config, run_dir, QUICK_RUN if quick else None)
                speeds[engine] = training_run_speed(short, engine)
                note = (
                    f"on {device}, default config, {short.total_timesteps:,} learner steps "
                    f"({short.n_envs} games), no warm start; {time_shares(speeds[engine])}"
                )
                if engine != ENGINES[0]:
                    note += f"; {speeds[engine]['sps'] / speeds[ENGINES[0]]['sps']:.2f}x {ENGINES[0]}'s"
                system = training_run_system(game, engine)
                results.append(Result("learner", system, speeds[engine]["sps"], "learner steps/s", note))
            if device == "cpu" and fork_available():
                # The same run with its games in worker processes (docs/training.md, "The games in
                # worker processes"); beside a GPU, the GPU check times them on its wide runs.
                settings = {**(QUICK_RUN if quick else {}), "env_workers": TRAINING_RUN_ENV_WORKERS}
                short = short_training_config(config, f"{runs_dir}/{game}-fast-workers", settings)
                speed = training_run_speed(short, "fast")
                note = (
                    f"on {device}, default config, {short.total_timesteps:,} learner steps "
                    f"({short.n_envs} games in {TRAINING_RUN_ENV_WORKERS} processes), no warm start; "
                    f"the trainer's process: {time_shares(speed)}; "
                    f"{speed['sps'] / speeds['fast']['sps']:.2f}x the fast engine's in one process"
                )
                system = training_run_system(game, "fast", TRAINING_RUN_ENV_WORKERS)
                results.append(Result("learner", system, speed["sps"], "learner steps/s", note))
    return results


def time_shares(speed: dict[str, float]) -> str:
    """Where a training run's time went (``training_run_speed``'s shares), as a row's note says it."""
    return (
        f"env {100 * speed['env_time_fraction']:.0f}%, opponents "
        f"{100 * speed['opponent_time_fraction']:.0f}%, "
        f"updates {100 * speed['update_time_fraction']:.0f}%"
    )


def training_run_speed(config, engine: str) -> dict[str, float]:
    """The speed of a whole training run of ``config`` (its ``runs_dir`` receives the run folder)
    with ``engine`` ("sb3" or "fast"), as the run reports it in ``state.json``: learner steps/s
    over training and the shares of the env, the opponents and the updates."""
    # Imported here: keeps tyro and numpy off this module's import path.
    from madiao_mao.training.fast import train as fast_train
    from madiao_mao.training.run_folder import read_state
    from madiao_mao.training.sb3 import train as sb3_train

    train = {"sb3": sb3_train.train, "fast": fast_train.train}[engine]
    run_dir = train(config, quiet=True)
    return read_state(run_dir)["final_speed"]
