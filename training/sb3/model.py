"""The MaskablePPO model of a run: its policy, optimizer and learning-rate schedule, and the
inference-only copy of a trained one (``export_policy``)."""

from __future__ import annotations

import io
import os
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from sb3_contrib import MaskablePPO

from madiao_mao.agents.learned import leading_observations, load_model
from madiao_mao.training.config import TrainConfig, rollout_size, steps_at_end
from madiao_mao.training.game_spec import POLICY_FEATURES
from madiao_mao.training.logging_utils import atomic_save_model
from madiao_mao.training.run_folder import device_text, make_run_dir
from madiao_mao.training.sb3.privileged import actor_only, is_privileged, privileged_policy

if TYPE_CHECKING:  # typing only: the SB3 engine's run imports this module
    from madiao_mao.training.sb3.train import Run

#: The SB3 engine's checkpoint in the run folder (the whole model, optimizer included).
CHECKPOINT_FILE = "checkpoint.zip"

#: Adam as SB3 sets it up for PPO (eps 1e-5), with torch's fused CPU kernel: one kernel over all
#: parameters instead of a Python loop over them; the same update rule, and the update is
#: compute-bound (benchmarks/learner.py).
ADAM_OPTIONS = {"eps": 1e-5, "fused": True}


#: The TrainConfig fields that SB3's PPO takes under the same names.
PPO_SETTINGS = (
    "n_steps",
    "batch_size",
    "n_epochs",
    "gamma",
    "gae_lambda",
    "clip_range",
    "ent_coef",
    "vf_coef",
)


def ppo_settings(config: TrainConfig) -> dict[str, Any]:
    """``config``'s PPO settings as keyword arguments of SB3's ``PPO``/``MaskablePPO``."""
    return {name: getattr(config, name) for name in PPO_SETTINGS}


def learning_rate_schedule(config: TrainConfig):
    """The learning rate for SB3: a constant, or a function of the remaining progress (1 -> 0).

    Linear: each PPO update runs at the rate of its rollout's start, decaying linearly over the
    run's real length (its budget rounded up to whole rollouts, ``steps_at_end``), as CleanRL
    anneals it: the first update at the full rate, the last at ``1 / rollouts`` of it. SB3 reads
    the progress after collecting a rollout (1 - steps / total, and ``learn`` passes the real
    length as the total), so it reaches 0 at the last update; the schedule adds the one rollout's
    share back. A rate of the progress alone gave the last rollout a rate of 0 (a budget of
    20,000 steps runs three rollouts of 8,192: the third learned nothing).
    """
    if config.lr_schedule == "constant":
        return config.learning_rate
    start = config.learning_rate
    rollout_share = rollout_size(config) / steps_at_end(config, 0)
    return lambda progress_remaining: start * min(max(progress_remaining, 0.0) + rollout_share, 1.0)


def policy_kwargs(config: TrainConfig) -> dict[str, Any]:
    """The MaskablePPO policy options of a config (network sizes, features extractor, optimizer)."""
    _, extra = POLICY_FEATURES[config.features].policy()
    return {"net_arch": list(config.net_arch), "optimizer_kwargs": dict(ADAM_OPTIONS), **extra}


def policy_class(config: TrainConfig):
    """The MaskablePPO policy of a config's features: the MLP policy, or for Mao's "rules"
    features the policy whose action layer also reads the per-card rule planes."""
    policy, _ = POLICY_FEATURES[config.features].policy()
    return policy


def model_policy(config: TrainConfig, venv) -> tuple[Any, dict[str, Any]]:
    """The policy class and options of a run on ``venv``: those of its features, or with
    ``privileged_critic`` (or ``oracle_guiding_steps``) the policy whose critic (or actor, while
    the oracle fades) also reads the privileged columns ``venv`` appends
    (``madiao_mao.training.sb3.privileged``)."""
    if not config.trains_on_hidden_state:
        return policy_class(config), policy_kwargs(config)
    variant = POLICY_FEATURES[config.features].privileged_policy
    return privileged_policy(
        policy_class(config),
        policy_kwargs(config),
        table_obs_dim=int(venv.seat_obs_dim),
        privileged_dim=int(venv.privileged_dim),
        oracle_guiding_steps=config.oracle_guiding_steps,
        critic_reads_privileged=config.privileged_critic,
        privileged_class=None if variant is None else variant(),
    )


def make_model(config: TrainConfig, venv, *, device: str) -> MaskablePPO:
    """A fresh MaskablePPO model of ``config`` on ``venv``, its policy on torch ``device`` (the
    run's ``resolve_device``; what a run trains, and the learner benchmark builds the same model)."""
    policy, options = model_policy(config, venv)
    model = MaskablePPO(
        policy,
        venv,
        learning_rate=learning_rate_schedule(config),
        policy_kwargs=options,
        seed=config.seed,
        device=device,
        verbose=0,
        **ppo_settings(config),
    )
    if config.trains_on_hidden_state:
        # The oracle's weight at step 0, for a warm start before the first rollout sets it.
        model.policy.set_oracle_factor_at(0)
    return model


def load_initial_weights(model: MaskablePPO, path: str | Path) -> None:
    """Copy the policy and value weights of the saved model at ``path`` into ``model`` (a config's
    ``init_model``); its optimizer stays fresh. A model that cannot be read, or whose spaces or
    network differ from ``model``'s, is a ValueError naming the file. A model trained on a shorter
    observation that ``model``'s begins with (``madiao_mao.agents.learned.leading_observations``,
    e.g. Madiao's summary inside the record) starts ``model`` as the same policy: its weights,
    with zero weights on the new entries."""

    try:
        saved = load_model(path)
    except FileNotFoundError:
        raise
    except Exception as error:  # a damaged zip fails in zipfile, torch or pickle, each its own way
        raise ValueError(f"init_model {path} cannot be loaded ({type(error).__name__}: {error})") from None
    ours, theirs = model.observation_space.shape, saved.observation_space.shape
    carried_over = len(ours) == len(theirs) == 1 and leading_observations().get(ours[0]) == theirs[0]
    if ours != theirs and not carried_over:
        raise ValueError(f"init_model {path} has observations {theirs}, this run's env {ours}")
    if model.action_space != saved.action_space:
        raise ValueError(
            f"init_model {path} has actions {saved.action_space}, this run's env {model.action_space}"
        )
    weights = saved.policy.state_dict()
    if carried_over:
        before = {name: value.clone() for name, value in model.policy.state_dict().items()}
        weights = _with_new_inputs(weights, model.policy.state_dict(), at=theirs[0])
    try:
        model.policy.load_state_dict(weights)
    except RuntimeError as error:
        first = str(error).strip().splitlines()[0]
        raise ValueError(
            f"init_model {path} is another network than this config's (features, net_arch): {first}"
        ) from None
    if carried_over:
        # The started policy on random 0/1 observations (a fixed seed) and the saved one on their
        # leading entries: the same logits and values, or the start is refused.
        longer = _random_observations(ours[0])
        started = _logits_and_values(model.policy, longer)
        kept = _logits_and_values(saved.policy, longer[:, : theirs[0]])
        if not all(torch.allclose(a, b, atol=1e-5) for a, b in zip(started, kept, strict=True)):
            model.policy.load_state_dict(before)  # a refused start leaves the model as it was
            raise ValueError(
                f"init_model {path}: this config's features do not keep the observation's entries first, "
                "so its weights cannot carry over to the longer observation"
            )


def _with_new_inputs(weights: dict, target: dict, at: int) -> dict:
    """``weights`` with zero columns inserted at input ``at`` of every matrix whose input is wider
    in ``target`` (the layers that read the observation, whose new entries start at ``at``)."""
    widened = dict(weights)
    for name, tensor in weights.items():
        wanted = target.get(name)
        same_rows = wanted is not None and tensor.dim() == 2 and wanted.shape[0] == tensor.shape[0]
        if not same_rows or wanted.shape[1] == tensor.shape[1]:
            continue
        grown = wanted.shape[1] - tensor.shape[1]
        zeros = torch.zeros(tensor.shape[0], grown, dtype=tensor.dtype, device=tensor.device)
        widened[name] = torch.cat([tensor[:, :at], zeros, tensor[:, at:]], dim=1)
    return widened


def _random_observations(length: int):
    """64 observations of ``length`` random 0/1 entries, always the same."""
    return torch.randint(0, 2, (64, length), generator=torch.Generator().manual_seed(0)).float()


def _logits_and_values(policy, observations):
    """``policy``'s action logits and values of ``observations``, on the CPU."""
    with torch.no_grad():
        observations = observations.to(policy.device)
        logits = policy.get_distribution(observations).distribution.logits
        return logits.cpu(), policy.predict_values(observations).cpu()


def new_model(run: Run, venv) -> MaskablePPO:
    """A fresh MaskablePPO model of the run's config, with the weights of its ``init_model`` if it
    names one; the run's folder is made now that it can start (a bad option leaves no empty
    folder)."""
    model = make_model(run.config, venv, device=run.device)
    if run.config.init_model is not None:
        try:
            load_initial_weights(model, run.config.init_model)
        except (OSError, ValueError):
            venv.close()
            raise
    run.run_dir = make_run_dir(run.config)
    return model


def load_checkpoint(run: Run, venv) -> MaskablePPO:
    """The model of a resumed run's checkpoint; a checkpoint that does not load is a ValueError
    naming it (the env is closed first)."""
    checkpoint = run.run_dir / CHECKPOINT_FILE
    try:
        # The schedule of the run's config (a resume may raise the budget), not the saved one.
        model = MaskablePPO.load(
            str(checkpoint), env=venv, device=run.device, learning_rate=learning_rate_schedule(run.config)
        )
    except Exception as error:  # a damaged zip fails in zipfile, torch or pickle, each its own way
        venv.close()
        raise ValueError(
            f"{checkpoint} is damaged or does not fit this run ({type(error).__name__}: {error})"
        ) from None
    budget, device = run.config.total_timesteps, device_text(run.config.device, run.device)
    print(f"resumed {run.run_dir} at step {model.num_timesteps} on {device} (budget {budget} learner steps)")
    return model


def for_play(model: MaskablePPO) -> MaskablePPO:
    """``model`` as agents play it: itself, or for a privileged-critic model its actor alone, a
    plain model of the seat's observation (a ValueError while oracle guiding has not faded out)."""
    return actor_only(model) if is_privileged(model) else model


def save_for_play(model: MaskablePPO, path: Path) -> None:
    """Save ``model`` as agents load it (``model:PATH``): :func:`for_play`, written atomically."""
    atomic_save_model(for_play(model), path)


def export_policy(model_path: str | Path, destination: str | Path) -> Path:
    """Save an inference-only copy of a trained model (the optimizer's moment estimates, two
    thirds of a checkpoint, are dropped; it still loads with ``MaskablePPO.load``). This is how
    ``agents/pretrained/madiao_selfplay.zip`` is made from a run's ``final_model.zip``. A model
    with a privileged critic (a run's checkpoint) is exported as its actor alone, which reads the
    seat's observation only (``madiao_mao.training.sb3.privileged.actor_only``)."""
    model = for_play(MaskablePPO.load(str(model_path), device="cpu"))
    # A fresh optimizer holds no moment estimates (its rate is the schedule's starting rate).
    model.policy.optimizer = torch.optim.Adam(model.policy.parameters(), lr=model.lr_schedule(1.0))
    destination = Path(destination)
    destination.parent.mkdir(parents=True, exist_ok=True)
    stored = io.BytesIO()
    model.save(stored)
    # SB3 stores its archive uncompressed; its "data" member (the spaces, pickled) shrinks several
    # times when deflated, which keeps the shipped models small. ``MaskablePPO.load`` reads both.
    temporary = destination.with_name(f".{destination.stem}.tmp.zip")
    with zipfile.ZipFile(stored) as source, zipfile.ZipFile(temporary, "w", zipfile.ZIP_DEFLATED) as target:
        for item in source.infolist():
            target.writestr(item.filename, source.read(item.filename))
    os.replace(temporary, destination)
    return destination
