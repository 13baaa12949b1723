"""The RLlib engine beside the SB3 engine, in one run (``python -m madiao_mao.benchmarks --only rllib``).

Both engines on the same training games of the default game (``TrainConfig().game``; the scripted
pool of opponents in the batched env), the same network (256x256 tanh MLPs, flat observation), the same
batch sizes (the game's default minibatch) and one torch thread per process. Rows (learner
steps = the learning seat's decisions):

- SB3 rollout collection (MaskablePPO ``collect_rollouts``: policy inference + env + opponents);
- RLlib sampling, one env runner in this process (``CardGameEnvRunner.sample``): per runner,
  with RLlib's generic sampling loop (the reference) and with the runner's bulk sampler;
- RLlib sampling with 1 and 2 env-runner actors on Ray, sampling in parallel (aggregate);
- SB3 learner (``MaskablePPO.train``: the PPO update of one rollout, n_epochs passes) and RLlib
  learner (the learner update of one iteration, ``learner_update_timer``), learner steps/s
  counted once per sample (not per epoch): the learner in the driver (``num_learners=0``), one
  learner actor, and two data-parallel learner actors (DDP over gloo) beside one env runner.

Ratios to SB3 are given in the notes. The SB3 learner and the RLlib learners run on the torch
device of ``--device`` (default "auto": a CUDA GPU when torch sees one; each learner actor then
holds a GPU of its own, and a row that needs more GPUs than torch sees says so); the notes name
it. Sampling always runs on the CPU. Needs the ``train`` and ``distributed`` extras; without Ray
the rows say so. On a machine with fewer cores than runners + 1, the 2-runner row measures
contention, not scaling (docs/scaling-out.md says how the projection is made).
"""

from __future__ import annotations

import os
import time

from madiao_mao.benchmarks.timing import Result

SUITE = "rllib"
N_ENVS = 256
N_STEPS = 32


def _config():
    # Imported here: keeps tyro and numpy off this module's import path.
    from madiao_mao.training.config import TrainConfig

    return TrainConfig(
        n_envs=N_ENVS,
        n_steps=N_STEPS,
        total_timesteps=10**7,
        features="flat",
        # The scripted pool (heuristic and greedy), as in the figures of docs/scaling-out.md.
        opponents="pool",
        imitate="none",
        # Both engines' learners on one thread (the runners always use one): equal footing, and
        # a second thread only waits on a machine shared with other work.
        torch_threads=1,
        progress_bar=False,
        verbose=False,
    )


def _sb3(seconds: float, device: str) -> tuple[float, float]:
    """SB3 rollout-collection and learner throughput (learner steps/s), the policy on ``device``."""
    # Imported here: keeps torch and stable-baselines3 off this module's import path.
    import torch
    from sb3_contrib import MaskablePPO

    from madiao_mao.training.opponents import build_opponents
    from madiao_mao.training.sb3.model import learning_rate_schedule
    from madiao_mao.training.sb3.train import Run, build_env

    config = _config()
    torch.set_num_threads(config.torch_threads)
    run = Run(config, config.to_json(), state={})
    pool = build_opponents(run)
    _, venv = build_env(run, pool)
    model = MaskablePPO(
        "MlpPolicy",
        venv,
        learning_rate=learning_rate_schedule(config),
        n_steps=config.n_steps,
        batch_size=config.batch_size,
        n_epochs=config.n_epochs,
        policy_kwargs={"net_arch": list(config.net_arch)},
        seed=0,
        device=device,
        verbose=0,
    )
    _, callback = model._setup_learn(10**7, callback=None)
    callback.on_training_start(locals(), globals())
    collect = train = 0.0
    steps = rounds = 0
    deadline = time.perf_counter() + seconds
    while rounds < 2 or time.perf_counter() < deadline:
        started = time.perf_counter()
        model.collect_rollouts(model.env, callback, model.rollout_buffer, config.n_steps)
        middle = time.perf_counter()
        model.train()
        ended = time.perf_counter()
        if rounds > 0:  # the first round warms up
            collect += middle - started
            train += ended - middle
            steps += config.n_envs * config.n_steps
        rounds += 1
    venv.close()
    return steps / collect, steps / train


def _rllib_local_sampling(seconds: float, *, bulk: bool = True) -> float:
    """One ``CardGameEnvRunner`` in this process: learner steps/s of ``sample``, with the
    runner's bulk sampler or (``bulk=False``) RLlib's generic loop."""
    # Imported here: keeps torch and stable-baselines3 off this module's import path.
    from madiao_mao.training.rllib.config import ppo_config
    from madiao_mao.training.rllib.runner import CardGameEnvRunner

    config = _config()
    algo_config = ppo_config(
        config, num_env_runners=0, envs_per_runner=N_ENVS, env_config={"train_config": config.to_json()}
    )
    runner = CardGameEnvRunner(config=algo_config, worker_index=0)
    runner.bulk_sampling = bulk
    try:
        runner.sample(num_timesteps=N_ENVS * 4)
        steps, started = 0, time.perf_counter()
        while steps == 0 or time.perf_counter() - started < seconds:
            steps += sum(len(e) for e in runner.sample(num_timesteps=N_ENVS * N_STEPS))
        return steps / (time.perf_counter() - started)
    finally:
        runner.stop()


def _learner_speed(algo, seconds: float) -> float:
    """Learner steps/s of an algorithm's updates (RLlib's ``learner_update_timer`` of each
    iteration after the first, which warms up), over at least two iterations and ``seconds`` of
    updating."""
    learner_seconds, learned, iteration = 0.0, 0, 0
    while iteration < 3 or learner_seconds < seconds:
        result = algo.train()
        if iteration > 0:
            learner_seconds += float(result["timers"]["learner_update_timer"])
            learned += int(result["env_runners"]["num_env_steps_sampled"])
        iteration += 1
    return learned / max(learner_seconds, 1e-9)


def _rllib_learners(seconds: float, learners: int, device: str) -> float:
    """Learner steps/s with ``learners`` learner actors (one env runner samples). Each actor
    holds ``(CPUs - 1) / learners`` CPUs (at most one, one torch thread), so that all fit beside
    the runner: on a small machine the rows measure the actors' overhead (the episodes sent to
    them, DDP's all-reduce over gloo), not scaling. On a GPU each actor holds one."""
    # Imported here: keeps torch and stable-baselines3 off this module's import path.
    from madiao_mao.training.rllib.config import ppo_config

    config = _config()
    cpus = os.cpu_count() or 1
    algo = ppo_config(
        config,
        num_env_runners=1,
        envs_per_runner=N_ENVS,
        env_config={"train_config": config.to_json()},
        num_learners=learners,
        cpus_per_learner=min(1.0, max(cpus - 1, 1) / learners),
        device=device,
    ).build_algo()
    try:
        return _learner_speed(algo, seconds)
    finally:
        algo.stop()


def _rllib_cluster(seconds: float, runners: int, *, learner: bool, device: str) -> tuple[float, float | None]:
    """``runners`` env-runner actors sampling in parallel (aggregate learner steps/s), and (if
    ``learner``) the steps/s of the learner in the driver (``num_learners=0``, on ``device``) over
    training iterations."""
    # Imported here: keeps torch and stable-baselines3 off this module's import path.
    from madiao_mao.training.rllib.config import ppo_config

    config = _config()
    algo = ppo_config(
        config,
        num_env_runners=runners,
        envs_per_runner=N_ENVS // runners,
        env_config={"train_config": config.to_json()},
        device=device,
    ).build_algo()
    try:
        group = algo.env_runner_group
        per_call = N_ENVS * N_STEPS // runners
        group.foreach_env_runner(lambda r: len(r.sample(num_timesteps=N_ENVS)), local_env_runner=False)
        steps, started = 0, time.perf_counter()
        while steps == 0 or time.perf_counter() - started < seconds:
            counts = group.foreach_env_runner(
                lambda r: sum(len(e) for e in r.sample(num_timesteps=per_call)), local_env_runner=False
            )
            steps += sum(counts)
        sampling = steps / (time.perf_counter() - started)
        return sampling, _learner_speed(algo, seconds) if learner else None
    finally:
        algo.stop()


def _gpus_short(device: str, learners: int) -> str:
    """Why ``learners`` learner actors on ``device`` cannot be measured here ("" if they can):
    ``EngineOptions.check_device``'s reason."""
    # Imported here: keeps tyro and numpy off this module's import path.
    from madiao_mao.training.config import ConfigError
    from madiao_mao.training.rllib.options import EngineOptions

    try:
        EngineOptions(num_learners=learners).check_device(device)
    except ConfigError as error:
        return str(error)
    return ""


def run(seconds: float, device: str = "cpu") -> list[Result]:
    """The suite's rows (see the module doc), the learners on torch ``device``."""
    try:
        # Imported here: keeps Ray off this module's import path.
        import ray
    except ImportError:
        return [
            Result(
                SUITE,
                "rllib engine",
                None,
                "learner steps/s",
                'not installed: pip install -e ".[distributed]"',
            )
        ]
    sb3_collect, sb3_learn = _sb3(seconds, device)
    on = f"on {device}"
    learner_shape = f"256x256, minibatch {_config().batch_size}, 4 epochs"
    rows = [
        Result(
            SUITE,
            f"sb3 rollout collection ({_config().game}, {N_ENVS} games)",
            sb3_collect,
            "learner steps/s",
            f"the policy {on}",
        ),
        Result(
            SUITE,
            f"sb3 learner ({learner_shape})",
            sb3_learn,
            "learner steps/s",
            f"{on}, samples/s, each seen 4x",
        ),
    ]
    generic = _rllib_local_sampling(seconds, bulk=False)
    local = _rllib_local_sampling(seconds)
    rows += [
        Result(
            SUITE,
            "rllib sampling, 1 runner in-process, RLlib's generic loop",
            generic,
            "learner steps/s",
            f"{generic / sb3_collect:.2f}x sb3",
        ),
        Result(
            SUITE,
            "rllib sampling, 1 runner in-process",
            local,
            "learner steps/s",
            f"{local / sb3_collect:.2f}x sb3, {local / generic:.2f}x the generic loop",
        ),
    ]
    started_here = not ray.is_initialized()
    if started_here:
        ray.init(
            num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False, configure_logging=False
        )
    try:
        in_driver = None
        for runners in (1, 2):
            sampling, learner_sps = _rllib_cluster(seconds, runners, learner=runners == 1, device=device)
            rows.append(
                Result(
                    SUITE,
                    f"rllib sampling, {runners} runner actor(s)",
                    sampling,
                    "learner steps/s",
                    f"{sampling / sb3_collect:.2f}x sb3, {sampling / runners:,.0f}/runner",
                )
            )
            in_driver = in_driver or learner_sps
        rows.append(
            Result(
                SUITE,
                f"rllib learner in the driver ({learner_shape})",
                in_driver,
                "learner steps/s",
                f"{on}, {in_driver / sb3_learn:.2f}x sb3",
            )
        )
        for learners in (1, 2):
            kind = "1 learner actor" if learners == 1 else f"{learners} learner actors (DDP)"
            gpus = _gpus_short(device, learners)
            if gpus:
                rows.append(Result(SUITE, f"rllib learner, {kind}", None, "learner steps/s", gpus))
                continue
            speed = _rllib_learners(seconds, learners, device)
            rows.append(
                Result(
                    SUITE,
                    f"rllib learner, {kind}",
                    speed,
                    "learner steps/s",
                    f"{on}, {speed / sb3_learn:.2f}x sb3, {speed / in_driver:.2f}x in the driver",
                )
            )
    finally:
        if started_here:
            ray.shutdown()
    return rows
