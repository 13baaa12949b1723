"""The run-folder contract both engines share (``madiao_mao.training.run_folder``): a folder to resume is
checked the same way whichever engine wrote it, before anything in it changes."""

from __future__ import annotations

import json

import pytest

from madiao_mao.training.config import TrainConfig
from madiao_mao.training.run_folder import reopen_run, snapshot_path, snapshot_step

RLLIB_CHECKPOINT = "rllib_checkpoint"


def _rllib_folder(tmp_path, **state):
    """A folder as the RLlib engine leaves it: config, state and its checkpoint folder."""
    (tmp_path / "config.json").write_text(json.dumps(TrainConfig(game="mao").to_json()))
    (tmp_path / "state.json").write_text(json.dumps({"num_timesteps": 256, "engine": "rllib", **state}))
    (tmp_path / RLLIB_CHECKPOINT).mkdir()
    return tmp_path


def test_an_rllib_folder_reopens_with_its_budget_raised(tmp_path):
    config, state, league = reopen_run(
        _rllib_folder(tmp_path), checkpoint=RLLIB_CHECKPOINT, engine="rllib", total_timesteps=1024
    )
    assert config.total_timesteps == 1024 and state["num_timesteps"] == 256 and league is None


def test_a_folder_reopens_with_the_torch_threads_given_each_value_checked(tmp_path):
    folder = _rllib_folder(tmp_path)
    config, _state, _league = reopen_run(folder, checkpoint=RLLIB_CHECKPOINT, engine="rllib", torch_threads=3)
    assert config.torch_threads == 3
    for bad in ({"torch_threads": 0}, {"total_timesteps": 0}):
        with pytest.raises(ValueError, match=f"{next(iter(bad))} must be"):
            reopen_run(folder, checkpoint=RLLIB_CHECKPOINT, engine="rllib", **bad)


@pytest.mark.parametrize(
    ("state", "message"),
    [
        ({"eval": {"not": "a list"}}, r"state\.json is damaged: eval should be a list"),
        ({"snapshots": [3]}, r"state\.json is damaged: snapshots should be a list of file names"),
        ({"engine": "sb3"}, "was not trained by the rllib engine"),
    ],
)
def test_an_rllib_folder_is_checked_as_an_sb3_one(tmp_path, state, message):
    folder = _rllib_folder(tmp_path, **state)
    before = {path.name: path.read_bytes() for path in folder.iterdir() if path.is_file()}
    with pytest.raises(ValueError, match=message):
        reopen_run(folder, checkpoint=RLLIB_CHECKPOINT, engine="rllib")
    assert {path.name: path.read_bytes() for path in folder.iterdir() if path.is_file()} == before


def test_a_folder_without_the_engines_checkpoint_is_named(tmp_path):
    folder = _rllib_folder(tmp_path)
    (folder / RLLIB_CHECKPOINT).rmdir()
    with pytest.raises(FileNotFoundError, match=f"{RLLIB_CHECKPOINT} is missing"):
        reopen_run(folder, checkpoint=RLLIB_CHECKPOINT, engine="rllib")


def test_snapshot_names_carry_their_step(tmp_path):
    path = snapshot_path(tmp_path, 250112, ".pt")
    assert path.name == "snapshot_000250112.pt" and path.parent.is_dir()
    assert snapshot_step(path) == 250112
