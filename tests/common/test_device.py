"""``TrainConfig.device`` (``--device``): the values a config takes, what "auto" picks, the one-line
refusal of a GPU that torch does not see (no run folder made), the device each engine is asked
for, a resumed run on a machine without the GPU it asked for, and the benchmark's device.

The suite runs on the CPU (``tests/conftest.py``); a GPU is pretended by replacing
``torch.cuda.is_available``/``device_count``, and no tensor goes to it. The tests marked
``needs_gpu`` run a toy run on a real GPU when ``MADIAO_MAO_TEST_GPU=1`` shows torch one (their
CPU variant runs everywhere).
"""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest

from madiao_mao.training.config import ConfigError, TrainConfig, resolve_device
from tests.common.test_training import _toy_training_config

torch = pytest.importorskip("torch")
pytest.importorskip("sb3_contrib")

NO_CUDA = "no CUDA device is visible to torch"
needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="torch sees no CUDA device")


def pretend_gpus(monkeypatch, count: int) -> None:
    """torch reports ``count`` CUDA devices (0: none) for the rest of the test."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: count > 0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: count)


@pytest.mark.parametrize("value", ["gpu", "CUDA", "cuda:", "cuda:-1", "cuda:x", "mps", "", 0, None])
def test_an_unknown_device_is_a_config_error_naming_it(value):
    with pytest.raises(ConfigError, match="device must be one of auto, cpu, cuda or cuda:N") as raised:
        TrainConfig(device=value)
    assert raised.value.field == "device"


def test_a_config_naming_a_gpu_reads_on_a_machine_without_one(monkeypatch):
    """Only a run that starts asks for the device: a saved GPU run's config still reads here."""
    pretend_gpus(monkeypatch, 0)
    for value in ("auto", "cpu", "cuda", "cuda:3"):
        config = TrainConfig(device=value)
        assert TrainConfig.from_json(config.to_json()).device == value
    assert TrainConfig().device == "auto"


@pytest.mark.parametrize(
    ("gpus", "request_", "device"),
    [
        (0, "auto", "cpu"),
        (0, "cpu", "cpu"),
        (1, "auto", "cuda"),
        (1, "cpu", "cpu"),
        (1, "cuda", "cuda"),
        (2, "cuda:1", "cuda:1"),
    ],
)
def test_auto_takes_a_gpu_when_torch_sees_one_and_the_cpu_otherwise(monkeypatch, gpus, request_, device):
    pretend_gpus(monkeypatch, gpus)
    assert resolve_device(request_) == device


@pytest.mark.parametrize(
    ("gpus", "request_", "seen"), [(0, "cuda", NO_CUDA), (0, "cuda:0", NO_CUDA), (2, "cuda:2", "sees 2 CUDA")]
)
def test_a_gpu_torch_does_not_see_is_refused_for_a_new_run_and_is_the_cpu_for_a_resumed_one(
    monkeypatch, gpus, request_, seen
):
    pretend_gpus(monkeypatch, gpus)
    with pytest.raises(ConfigError, match=f"device {request_} cannot be used: .*{seen}") as raised:
        resolve_device(request_)
    assert raised.value.field == "device"
    assert resolve_device(request_, resuming=True) == "cpu"


def test_this_machine_trains_on_the_cpu():
    """The suite hides any GPU (tests/conftest.py), so "auto" is the CPU here."""
    if not torch.cuda.is_available():
        assert resolve_device("auto") == "cpu"
    else:  # MADIAO_MAO_TEST_GPU=1 on a machine with one
        assert resolve_device("auto") == "cuda"


def _train_status(argv: list[str], capsys) -> tuple[int, str]:
    from madiao_mao.cli.main import main

    try:
        status = main(["train", *argv])
    except SystemExit as exit_:
        status = exit_.code
    return status, capsys.readouterr().err


@pytest.mark.parametrize(
    ("gpus", "argv", "message"),
    [
        (0, ["--device", "cuda"], f"--device: device cuda cannot be used: {NO_CUDA} (use cpu or auto)"),
        (
            0,
            ["--device", "cuda:0", "--engine", "rllib"],
            f"--device: device cuda:0 cannot be used: {NO_CUDA}",
        ),
        (1, ["--device", "cuda:1"], "--device: device cuda:1 cannot be used: torch sees 1 CUDA device(s)"),
        (1, ["--device", "gpu"], "--device: device must be one of auto, cpu, cuda or cuda:N, got 'gpu'"),
    ],
)
def test_the_command_line_refuses_a_device_in_one_line_before_making_the_run_folder(
    tmp_path, monkeypatch, capsys, gpus, argv, message
):
    pretend_gpus(monkeypatch, gpus)
    status, error = _train_status(["--runs-dir", str(tmp_path / "runs"), *argv], capsys)
    assert status == 2
    lines = error.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"madiao-mao train: error: {message}"), error
    assert not (tmp_path / "runs").exists()


def test_train_help_lists_the_device_flag(capsys):
    from madiao_mao.cli.main import main

    with pytest.raises(SystemExit):
        main(["train", "--help"])
    # Without the help column's wrapping and box lines.
    help_text = re.sub(r"[\s│]", "", capsys.readouterr().out)
    flag = help_text.split("--device{auto,cpu,cuda,cuda:N}", 1)[1].split("--progress", 1)[0]
    assert flag.startswith("Wherethepolicytrains") and flag.endswith("(default:auto)")


class _ModelMadeError(Exception):
    """Raised by the stand-in for MaskablePPO once it has been asked for a model."""


@pytest.mark.parametrize(
    ("gpus", "request_", "device"),
    [(0, "auto", "cpu"), (1, "auto", "cuda"), (1, "cpu", "cpu"), (2, "cuda:1", "cuda:1")],
)
def test_the_sb3_engine_asks_for_the_model_on_the_resolved_device(
    tmp_path, monkeypatch, gpus, request_, device
):
    from madiao_mao.training.sb3 import model as model_module
    from madiao_mao.training.sb3 import train as train_module

    pretend_gpus(monkeypatch, gpus)
    asked = {}

    def maskable_ppo(*args, **kwargs):
        asked.update(kwargs)
        raise _ModelMadeError

    monkeypatch.setattr(model_module, "MaskablePPO", maskable_ppo)
    config = _toy_training_config(
        train_module, tmp_path / "runs", monkeypatch, imitate="none", device=request_
    )
    with pytest.raises(_ModelMadeError):
        train_module.train(config)
    assert asked["device"] == device
    assert not (tmp_path / "runs").exists()  # the folder is made once the model is


def test_a_new_run_on_a_missing_gpu_is_refused_by_either_engine_before_anything_is_made(
    tmp_path, monkeypatch
):
    from madiao_mao.training.rllib.run import train_rllib
    from madiao_mao.training.sb3 import train as train_module

    pretend_gpus(monkeypatch, 0)
    config = _toy_training_config(train_module, tmp_path / "runs", monkeypatch, imitate="none", device="cuda")
    for train in (train_module.train, train_rllib):
        with pytest.raises(ConfigError, match=NO_CUDA):
            train(config)
    assert not (tmp_path / "runs").exists()


def test_a_run_that_asked_for_a_gpu_resumes_on_the_cpu_of_a_machine_without_one(
    tmp_path, monkeypatch, capsys
):
    from madiao_mao.training import run_folder
    from madiao_mao.training.sb3 import train as train_module

    pretend_gpus(monkeypatch, 0)
    config = _toy_training_config(train_module, tmp_path, monkeypatch, imitate="none", total_timesteps=128)
    run_dir = train_module.train(config)
    assert json.loads((run_dir / "state.json").read_text())["device"] == "cpu"
    # As if it had been started on a machine with a GPU: its config asks for one.
    saved = json.loads((run_dir / "config.json").read_text())
    (run_dir / "config.json").write_text(json.dumps({**saved, "device": "cuda"}))
    capsys.readouterr()
    train_module.train(resume=run_dir, total_timesteps=256, quiet=True)
    assert "at step 128 on cpu (the run asks for cuda, which this machine lacks)" in capsys.readouterr().out
    state = json.loads((run_dir / "state.json").read_text())
    assert (state["num_timesteps"], state["device"]) == (256, "cpu")
    assert json.loads((run_dir / "config.json").read_text())["device"] == "cuda"  # the request, kept
    # The report names the device the run last trained on (the game's sections stood in for).
    monkeypatch.setattr(run_folder, "game_spec", lambda game: SimpleNamespace(report=lambda *args: []))
    report = run_folder.write_final_report(run_dir, None, None, verbose=False)
    assert "Learner device: cpu (the torch device of the last training call)." in report


def toy_config_on(device: str, tmp_path, monkeypatch) -> TrainConfig:
    """A toy run on ``device`` that exercises every use of it: the warm start, the live policy
    and its snapshots as opponents."""
    from madiao_mao.training.sb3 import train as train_module

    return _toy_training_config(
        train_module,
        tmp_path,
        monkeypatch,
        device=device,
        imitate="random",
        imitation_decisions=64,
        imitation_epochs=1,
        snapshot_every=128,
        opponent_weights={"scripted": 0.2, "snapshot": 0.4, "current": 0.4},
    )


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=needs_gpu)])
def test_a_toy_run_trains_on_the_device_and_its_models_play_on_the_cpu(tmp_path, monkeypatch, device):
    """The whole SB3 loop on ``device``: the warm start, the live policy and its snapshots as
    opponents, checkpoints and a resume; the saved model loads and plays on the CPU."""
    from madiao_mao.agents.learned import policy_agent
    from madiao_mao.training.sb3 import train as train_module

    run_dir = train_module.train(toy_config_on(device, tmp_path, monkeypatch))
    train_module.train(resume=run_dir, total_timesteps=256, quiet=True)
    state = json.loads((run_dir / "state.json").read_text())
    assert (state["device"], state["num_timesteps"]) == (device, 256)
    agent = policy_agent(run_dir / "final_model.zip")
    assert agent.model.policy.device.type == "cpu"
    mask = torch.ones(1, agent.model.action_space.n, dtype=torch.bool).numpy()
    observation = torch.zeros(1, agent.obs_dim).numpy()
    assert 0 <= agent.act_batch(observation, mask)[0] < mask.shape[1]


def test_the_benchmark_names_the_device_its_learner_suites_ran_on(monkeypatch, capsys):
    from madiao_mao.benchmarks import __main__ as bench
    from madiao_mao.benchmarks import learner
    from madiao_mao.benchmarks.timing import Result

    asked = []

    def run(seconds, device, quick):
        asked.append((device, quick))
        return [Result("learner", "sb3 PPO update", 1.0, "samples/s", f"on {device}")]

    def training_run_rows(device, quick):
        asked.append((device, quick))
        return [Result("learner", "mao training run, fast engine", 2.0, "learner steps/s", f"on {device}")]

    monkeypatch.setattr(learner, "run", run)
    monkeypatch.setattr(learner, "training_run_rows", training_run_rows)
    pretend_gpus(monkeypatch, 1)
    assert bench.main(["--only", "learner", "--seconds", "0.01"]) == 0
    assert bench.main(["--only", "learner", "--seconds", "0.01", "--device", "cpu", "--quick"]) == 0
    out = capsys.readouterr().out
    # The suite's rows, then every game's short training runs, on the same device.
    assert asked == [("cuda", False), ("cuda", False), ("cpu", True), ("cpu", True)]
    assert "- learner device: cuda (--device auto)" in out and "- learner device: cpu (--device cpu)" in out
    assert "| learner | sb3 PPO update | 1 samples/s | on cuda |" in out
    assert "| learner | mao training run, fast engine | 2 learner steps/s | on cuda |" in out


@pytest.mark.parametrize(
    ("gpus", "argv", "message"),
    [
        (1, ["--device", "gpu"], "--device: device must be one of auto, cpu, cuda or cuda:N, got 'gpu'"),
        (0, ["--only", "learner", "--device", "cuda"], f"--device: device cuda cannot be used: {NO_CUDA}"),
    ],
)
def test_the_benchmark_refuses_a_device_in_one_line(monkeypatch, capsys, gpus, argv, message):
    from madiao_mao.benchmarks import __main__ as bench

    pretend_gpus(monkeypatch, gpus)
    assert bench.main(argv) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and message in error[0], error


def test_a_benchmark_without_a_learner_suite_does_not_ask_torch(monkeypatch):
    from madiao_mao.benchmarks import __main__ as bench

    monkeypatch.setattr(torch.cuda, "is_available", lambda: pytest.fail("torch asked for a device"))
    assert bench.parse_arguments(["--only", "memory"]).torch_device is None
