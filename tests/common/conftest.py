"""Fixtures shared by the CLI tests of tests/common."""

from __future__ import annotations

import json

import pytest

from madiao_env import records


@pytest.fixture()
def paths(tmp_path):
    """Files and folders that bad invocations point at."""
    corrupt_model = tmp_path / "corrupt.zip"
    corrupt_model.write_text("not a zip file")
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    folder = tmp_path / "folder"
    folder.mkdir()
    not_json = tmp_path / "not_json.json"
    not_json.write_text("{not json")
    old_format = tmp_path / "old.json"
    old_format.write_text(json.dumps({"game": "madiao", "format": 1, "seats": [], "events": []}))
    bad_event = tmp_path / "bad_event.json"
    bad_event.write_text(
        json.dumps(
            {
                "game": "madiao",
                "format": records.RECORD_FORMAT,
                "seats": ["a", "b", "c", "d"],
                "events": [{"type": "move", "seat": 9}],
                "returns": [0, 0, 0, 0],
            }
        )
    )
    return {
        "CORRUPT": str(corrupt_model),
        "MISSING": str(tmp_path / "missing.zip"),
        "FILE": str(a_file),
        "UNDER_FILE": str(a_file / "inside.json"),
        "FOLDER": str(folder),
        "NOT_JSON": str(not_json),
        "OLD_FORMAT": str(old_format),
        "BAD_EVENT": str(bad_event),
    }
