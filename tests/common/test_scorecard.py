"""The scorecard (issue 26): fixed suites proved by their checksums, ``score()`` and the CLI giving
the same record, byte-equal reruns, resuming after an interruption, bad input refused with nothing
written, callable policies, the ranking of a weak and a strong policy, and the leaderboard."""

from __future__ import annotations

import copy
import dataclasses
import json
import re
import zipfile
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("madiao_env.madiao_v0")

from cardgame_core.runtime import machine_description
from madiao_mao.agents import madiao as madiao_agents
from madiao_mao.cli.main import main
from madiao_mao.training import scorecard
from madiao_mao.training.madiao import scorecard as madiao_scorecard
from madiao_mao.training.mao import scorecard as mao_scorecard
from madiao_mao.training.scorecard import check_suite, score, without_timing


def _cli(capsys, *args: str) -> tuple[int, str, str]:
    status = main(["scorecard", *args, "--no-progress"])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def _record(folder: Path) -> dict:
    return json.loads((folder / scorecard.JSON_NAME).read_text())


@pytest.fixture(scope="module", autouse=True)
def reference_cache(tmp_path_factory):
    """The CLI's default reference cache, in a folder of this module's (not the user's cache)."""
    folder = tmp_path_factory.mktemp("user-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MADIAO_MAO_CACHE", str(folder))
        yield folder / "scorecard-references"


@pytest.fixture(scope="module")
def greedy_smoke(tmp_path_factory) -> Path:
    """``madiao-mao scorecard greedy --suite smoke`` run once for the tests that compare with it."""
    folder = tmp_path_factory.mktemp("greedy") / "out"
    assert main(["scorecard", "greedy", "--suite", "smoke", "--out", str(folder), "--no-progress"]) == 0
    return folder


@pytest.mark.parametrize("module", [madiao_scorecard, mao_scorecard])
def test_shipped_suites_derive_the_games_of_their_checksum(module) -> None:
    for suite in module.SUITES.values():
        check_suite(suite)
    changed = dataclasses.replace(module.SUITES["smoke"], seed=module.SUITES["smoke"].seed + 1)
    with pytest.raises(ValueError, match="checksum"):
        check_suite(changed)


def test_cli_and_score_agree_and_reruns_are_byte_equal(greedy_smoke, tmp_path, capsys) -> None:
    status, out, _ = _cli(capsys, "greedy", "--suite", "smoke", "--out", str(tmp_path / "again"))
    assert status == 0 and "vs heuristic" in out
    # Byte for byte up to the timing fields, the last key of the sorted record.
    texts = [(folder / scorecard.JSON_NAME).read_text() for folder in (greedy_smoke, tmp_path / "again")]
    assert all('\n "timing": {' in text for text in texts)
    assert texts[0].split('\n "timing": {')[0] == texts[1].split('\n "timing": {')[0]
    first, second = _record(greedy_smoke), _record(tmp_path / "again")
    # A fresh folder: the policy's pairings played again, the reference's from the shared cache.
    references = sorted(name for name in second["timing"]["pairing_seconds"] if name.startswith("reference"))
    assert references and sorted(second["timing"]["cached_pairings"]) == references
    # Where it ran: two machines' figures can differ where the code and seeds did not.
    assert second["timing"]["libraries"]["numpy"] == np.__version__
    assert second["timing"]["machine"] == machine_description()
    assert not list((tmp_path / "again" / "cache").glob("reference*"))
    api = score("greedy", game="madiao", suite="smoke")
    assert without_timing(api.to_dict()) == without_timing(first)
    assert first["protocol"] == madiao_scorecard.PROTOCOL
    assert first["suite"]["checksum"] == madiao_scorecard.SUITES["smoke"].checksum
    for name in (scorecard.MARKDOWN_NAME, scorecard.PLOT_NAME):
        assert (greedy_smoke / name).stat().st_size > 0
    # Every baseline in every role, each figure with its sample size.
    measures = {(f["table"], f["measure"]) for f in first["figures"]}
    for baseline in madiao_scorecard.BASELINES:
        for suffix, _ in madiao_scorecard.ROLES:
            assert (baseline, f"stakes_per_hand{suffix}") in measures
            assert (baseline, f"difference_from_heuristic{suffix}") in measures
    assert all(f["n"] > 0 for f in first["figures"])


def test_a_rerun_in_the_same_folder_comes_from_the_cache(greedy_smoke, capsys) -> None:
    before = _record(greedy_smoke)
    status, _, _ = _cli(capsys, "greedy", "--suite", "smoke", "--out", str(greedy_smoke))
    after = _record(greedy_smoke)
    assert status == 0 and without_timing(after) == without_timing(before)
    assert sorted(after["timing"]["cached_pairings"]) == sorted(after["timing"]["pairing_seconds"])


def test_an_interrupted_run_resumes_with_the_same_record(greedy_smoke, tmp_path, monkeypatch) -> None:
    real = madiao_scorecard.duplicate_match
    calls = []

    def interrupted(*args, **kwargs):
        calls.append(1)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(madiao_scorecard, "duplicate_match", interrupted)
    with pytest.raises(KeyboardInterrupt):
        score("greedy", suite="smoke", out=tmp_path)
    monkeypatch.setattr(madiao_scorecard, "duplicate_match", real)
    assert len(list((tmp_path / "cache").glob("*.json"))) == 3  # the pairings finished before it
    resumed = score("greedy", suite="smoke", out=tmp_path)
    assert len(resumed.timing["cached_pairings"]) == 3
    assert without_timing(resumed.to_dict()) == without_timing(_record(greedy_smoke))


def test_reference_games_made_by_other_code_are_played_again(tmp_path, monkeypatch) -> None:
    first = score("greedy", suite="smoke", references=tmp_path)
    again = score("greedy", suite="smoke", references=tmp_path)
    assert again.timing["cached_pairings"] and all(
        n.startswith("reference") for n in again.timing["cached_pairings"]
    )
    monkeypatch.setattr(scorecard, "code_fingerprint", lambda: "sha256:other code")
    other = score("greedy", suite="smoke", references=tmp_path)
    assert other.timing["cached_pairings"] == []
    assert (
        without_timing(first.to_dict()) == without_timing(again.to_dict()) == without_timing(other.to_dict())
    )


def test_a_new_shipped_model_replays_only_the_pairings_that_seat_it(tmp_path, monkeypatch) -> None:
    # The shipped model's bytes change (a zip comment: same weights, so the same games) and only
    # the pairings with a seat that reads it are played again; the data files are not code.
    first = score("greedy", suite="smoke", out=tmp_path / "card", references=tmp_path / "references")
    code = scorecard.code_fingerprint()
    moved = tmp_path / "madiao_selfplay.zip"
    moved.write_bytes(madiao_agents.PRETRAINED_MODEL.read_bytes())
    with zipfile.ZipFile(moved, "a") as archive:
        archive.comment = b"another model"
    monkeypatch.setattr(madiao_agents, "PRETRAINED_MODEL", moved)
    again = score("greedy", suite="smoke", out=tmp_path / "card", references=tmp_path / "references")
    assert scorecard.code_fingerprint() == code
    seating_the_model = {"policy-vs-model", "reference-vs-model"}
    assert set(first.timing["pairing_seconds"]) >= seating_the_model
    assert set(again.timing["cached_pairings"]) == set(first.timing["pairing_seconds"]) - seating_the_model
    assert without_timing(first.to_dict()) == without_timing(again.to_dict())


def test_a_policy_named_by_a_model_path_is_keyed_by_the_file(tmp_path) -> None:
    saved = tmp_path / "policy.zip"
    saved.write_bytes(madiao_agents.PRETRAINED_MODEL.read_bytes())
    spec = f"model:{saved}"
    cache = scorecard.PairingCache(tmp_path / "cache", {"protocol": "p", "game": "madiao", "suite": "s"})
    assert cache.get_or_play("policy-vs-x", lambda: {"n": 1}, policy=spec, seats=[spec]) == {"n": 1}
    assert cache.get_or_play("policy-vs-x", lambda: {"n": 2}, policy=spec, seats=[spec]) == {"n": 1}
    with zipfile.ZipFile(saved, "a") as archive:
        archive.comment = b"retrained"
    fresh = scorecard.PairingCache(tmp_path / "cache", {"protocol": "p", "game": "madiao", "suite": "s"})
    assert fresh.get_or_play("policy-vs-x", lambda: {"n": 3}, policy=spec, seats=[spec]) == {"n": 3}


def test_the_code_fingerprint_reads_source_not_data_files(tmp_path, monkeypatch) -> None:
    package = tmp_path / "played_package"
    package.mkdir()
    (package / "__init__.py").write_text("MOVES = 1\n")
    (package / "model.zip").write_bytes(b"weights")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(scorecard, "playing_packages", lambda: ("played_package",))
    shipped = scorecard.code_fingerprint()
    (package / "model.zip").write_bytes(b"other weights")
    assert scorecard.code_fingerprint() == shipped
    (package / "__init__.py").write_text("MOVES = 2\n")
    assert scorecard.code_fingerprint() != shipped


def test_another_library_version_is_other_code(monkeypatch) -> None:
    # Cached games made under another numpy (or torch, numba, ...) are played again.
    shipped = scorecard.code_fingerprint()
    versions = scorecard.library_versions()
    monkeypatch.setattr(scorecard, "library_versions", lambda: {**versions, "numpy": "0.0.0"})
    assert scorecard.code_fingerprint() != shipped


def test_a_cache_of_another_policy_is_not_used(tmp_path) -> None:
    score("greedy", suite="smoke", out=tmp_path)
    other = score("heuristic", suite="smoke", out=tmp_path)
    # The references (the heuristic against each baseline) do not depend on the policy: kept.
    assert other.timing["cached_pairings"] and all(
        name.startswith("reference") for name in other.timing["cached_pairings"]
    )
    # The heuristic is the reference itself, and plays deterministically: every paired difference is 0.
    for figure in other.figures:
        if figure.measure.startswith("difference_from_heuristic"):
            assert figure.mean == 0.0, figure


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["nonsense"], "unknown madiao policy 'nonsense'"),
        (["model:missing.zip"], "no saved model at missing.zip"),
        (["json:no_such_function"], "json has no no_such_function"),
        (["no_such_module_26:policy"], "cannot import no_such_module_26"),
        (["heuristic", "--suite", "huge"], "unknown madiao suite 'huge'"),
        (["oracle", "--game", "mao", "--exploit-steps", "10"], "cannot measure the exploitability"),
        (["search", "--exploit-steps", "10"], "cannot measure the exploitability"),
        (["greedy", "--baselines", "search"], "madiao baselines: unknown 'search'"),
        (["greedy", "--reference-cache", __file__], "is an existing file, not a folder"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(args, problem, tmp_path, capsys) -> None:
    out = tmp_path / "out"
    status, stdout, err = _cli(capsys, *args, "--out", str(out))
    assert status == 2
    assert err.count("\n") == 1 and problem in err and err.startswith("madiao-mao scorecard: error:")
    assert not out.exists() and stdout == ""


def first_legal(observation: np.ndarray, mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def first_legal_batch(observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
    return np.asarray(masks, dtype=bool).argmax(axis=1)


def test_callable_policies_single_and_batched_give_the_same_record(tmp_path, capsys) -> None:
    single = score(first_legal, suite="smoke").to_dict()
    batched = score(first_legal_batch, suite="smoke", batched=True).to_dict()
    assert single["policy"] == "first_legal" and batched["policy"] == "first_legal_batch"
    for record in (single, batched):
        del record["policy"], record["timing"]
    assert single == batched
    # The same function named module:callable on the command line.
    status, _, _ = _cli(
        capsys, f"{__name__}:first_legal_batch", "--batched", "--suite", "smoke", "--out", str(tmp_path)
    )
    cli_record = without_timing(_record(tmp_path))
    assert status == 0 and cli_record.pop("policy") == f"{__name__}:first_legal_batch"
    assert cli_record == single


@pytest.mark.slow
def test_mao_smoke_base_against_itself_and_the_cli(tmp_path, capsys) -> None:
    card = score("base", game="mao", suite="smoke", out=tmp_path / "api")
    tables = {f.table for f in card.figures}
    assert tables == {*mao_scorecard.BASELINES, mao_scorecard.CALLS_TABLE}
    # The policy is the reference and both are seeded from the suite: the same games, difference 0.
    for figure in card.figures:
        if figure.measure == "penalty_difference_from_base":
            assert figure.mean == 0.0 and figure.blocks == len(mao_scorecard.HELD_OUT_RULES)
    # Rates are shown without a sign (they are not differences).
    penalty_row = next(
        row for row in card.markdown().splitlines() if row.startswith("| penalty_cards_per_turn")
    )
    assert "+" not in penalty_row and "(n=" in penalty_row
    status, _, _ = _cli(capsys, "base", "--game", "mao", "--suite", "smoke", "--out", str(tmp_path / "cli"))
    assert status == 0 and without_timing(_record(tmp_path / "cli")) == without_timing(card.to_dict())


def test_random_ranks_below_the_model_on_the_dev_suite(tmp_path) -> None:
    # Against the batched baselines only (--baselines): the whole dev scorecard takes minutes, the
    # search baseline's pairings most of them.
    subset = ("greedy", "heuristic")
    weak = score("random", suite="dev", baselines=subset, out=tmp_path)
    strong = score("model", suite="dev", baselines=subset, out=tmp_path)
    assert weak.baselines == strong.baselines == list(subset)
    for baseline in subset:
        low, high = weak.figure(baseline, "stakes_per_hand"), strong.figure(baseline, "stakes_per_hand")
        assert low.high < high.low, (baseline, str(low), str(high))
    assert weak.ratings["policy"]["mu"] < strong.ratings["policy"]["mu"]
    # A baseline's figures do not depend on which others are played: the shipped whole scorecard's.
    shipped = json.loads((scorecard.SCORECARDS_DIR / "madiao-dev-random.json").read_text())
    assert [f for f in shipped["figures"] if f["table"] in subset] == [
        dataclasses.asdict(f) for f in weak.figures
    ]


@pytest.mark.parametrize(
    ("baselines", "problem"),
    [(["search"], "unknown 'search'"), ([], "none"), (["greedy", "greedy"], "one named twice")],
)
def test_a_bad_baselines_subset_is_refused(baselines, problem) -> None:
    with pytest.raises(ValueError, match=problem):
        score("greedy", suite="smoke", baselines=baselines)


def test_the_leaderboard_matches_the_shipped_scorecards() -> None:
    records = [json.loads(p.read_text()) for p in sorted(scorecard.SCORECARDS_DIR.glob("*.json"))]
    shipped = {(r["game"], r["policy"]) for r in records}
    for game in scorecard.scorecard_games():
        policies = scorecard.game_module(game).LEADERBOARD_POLICIES
        assert {(game, policy) for policy in policies} <= shipped
    for record in records:
        suite = scorecard.game_module(record["game"]).SUITES[record["suite"]["name"]]
        assert record["protocol"] == scorecard.protocol(record["game"])
        assert record["suite"]["checksum"] == suite.checksum
    assert scorecard.LEADERBOARD.read_text() == scorecard.leaderboard_markdown()


def _shipped(game: str) -> list[dict]:
    return [
        r
        for p in sorted(scorecard.SCORECARDS_DIR.glob("*.json"))
        if (r := json.loads(p.read_text()))["game"] == game
    ]


def _suites(records: list[dict]) -> dict[str, list[dict]]:
    by_suite: dict[str, list[dict]] = {}
    for record in records:
        by_suite.setdefault(record["suite"]["name"], []).append(record)
    return by_suite


def _against_the_order(records: list[dict]) -> tuple[list[tuple[str, str]], int]:
    """The (row, column) pairs whose head-to-head figure goes against the table's order, and how
    many figures were compared."""
    _, ranked = madiao_scorecard.leaderboard_table(records)
    rank = {record["policy"]: place for place, (record, _) in enumerate(ranked)}
    against, compared = [], 0
    for record, _ in ranked:
        for figure in record["figures"]:
            # A row's figure against its own spec is no head-to-head between two rows (the
            # search against copies of itself, each seeded otherwise: sampling noise, docs/results.md).
            if figure["measure"] != madiao_scorecard.HEADLINE or figure["table"] not in rank:
                continue
            if figure["table"] == record["policy"]:
                continue
            compared += 1
            if rank[record["policy"]] < rank[figure["table"]]:  # against a policy ranked under it
                if figure["high"] < 0:
                    against.append((record["policy"], figure["table"]))
            elif figure["low"] > 0:
                against.append((record["policy"], figure["table"]))
    return against, compared


def test_every_head_to_head_figure_against_the_madiao_order_is_listed_under_its_table() -> None:
    leaderboard = scorecard.LEADERBOARD.read_text()
    for records in _suites(_shipped("madiao")).values():
        against, compared = _against_the_order(records)
        remarks = madiao_scorecard.leaderboard_remarks(records)
        assert [tuple(re.findall(r"`([^`]+)`", remark)) for remark in remarks] == against
        assert all(f"\n{remark}\n" in leaderboard for remark in remarks)
        # Every column that is also another row of the suite's table is compared, in every row.
        rows = {record["policy"] for record in records}
        columns = set(madiao_scorecard.BASELINES) & rows
        assert compared == sum(len(columns - {record["policy"]}) for record in records)


def test_a_figure_turned_against_the_order_is_listed_and_one_in_line_is_not() -> None:
    records = copy.deepcopy(_suites(_shipped("madiao"))["dev"])
    against, _ = _against_the_order(records)
    model = next(record for record in records if record["policy"] == "model")
    versus_greedy = next(
        f for f in model["figures"] if f["measure"] == madiao_scorecard.HEADLINE and f["table"] == "greedy"
    )
    # The top row losing significantly to a row under it goes against the order (the order
    # itself, by the figure against the heuristic, stays).
    versus_greedy.update(mean=-0.2, low=-0.3, high=-0.1)
    remarks = madiao_scorecard.leaderboard_remarks(records)
    assert remarks[0] == (
        "Against the order: `model` scores -0.200 [-0.300, -0.100] against `greedy`, "
        "which is ranked under it."
    )
    assert len(remarks) == len(against) + 1
    versus_greedy.update(mean=0.2, low=0.1, high=0.3)
    assert len(madiao_scorecard.leaderboard_remarks(records)) == len(against)


def test_the_mao_leaderboard_shows_rates_unsigned_lowest_penalty_first() -> None:
    for suite, records in _suites(_shipped("mao")).items():
        _, ranked = mao_scorecard.leaderboard_table(records)
        means = [float(cells[len(mao_scorecard.BASELINES)]) for _, cells in ranked]
        assert means == sorted(means), suite
    dev = _suites(_shipped("mao"))["dev"]
    assert {r["policy"] for r in dev} >= set(scorecard.game_module("mao").LEADERBOARD_POLICIES)
    section = scorecard.leaderboard_markdown().split("## Mao")[1]
    assert "lower is better" in section and "+" not in section


def test_a_partial_scorecard_has_no_leaderboard_row(tmp_path) -> None:
    record = json.loads((scorecard.SCORECARDS_DIR / "madiao-dev-random.json").read_text())
    record["baselines"] = ["heuristic"]
    (tmp_path / "partial.json").write_text(json.dumps(record))
    with pytest.raises(ValueError, match="partial scorecard"):
        scorecard.leaderboard_markdown(tmp_path)


@pytest.fixture
def stale_cards(tmp_path) -> tuple[Path, dict[str, dict]]:
    """A folder of two Madiao smoke scorecards with their figures emptied (stale) and one Mao
    file, and the two records as they should be made again."""
    cards = tmp_path / "cards"
    cards.mkdir()
    expected = {}
    for policy in ("greedy", "random"):
        record = score(policy, suite="smoke").to_dict()
        expected[f"madiao-smoke-{policy}.json"] = without_timing(record)
        (cards / f"madiao-smoke-{policy}.json").write_text(json.dumps({**record, "figures": []}))
    (cards / "mao-smoke-base.json").write_text(json.dumps({"game": "mao"}))
    return cards, expected


def test_regenerate_makes_a_games_scorecards_again_then_takes_them_from_its_cache(
    tmp_path, stale_cards
) -> None:
    cards, expected = stale_cards
    said: list[str] = []
    work = tmp_path / "work"
    written = scorecard.regenerate_scorecards("madiao", jobs=2, work=work, folder=cards, say=said.append)
    assert sorted(path.name for path in written) == sorted(expected)
    for name, record in expected.items():
        assert without_timing(json.loads((cards / name).read_text())) == record
    assert json.loads((cards / "mao-smoke-base.json").read_text()) == {"game": "mao"}
    assert len(said) == 2
    scorecard.regenerate_scorecards("madiao", work=work, folder=cards, say=said.append)
    for name in expected:
        timing = json.loads((cards / name).read_text())["timing"]
        assert sorted(timing["cached_pairings"]) == sorted(timing["pairing_seconds"])


def _contents(folder: Path) -> dict[str, str]:
    return {path.name: path.read_text() for path in folder.iterdir()}


def test_regenerate_refuses_before_playing_anything(tmp_path, stale_cards, monkeypatch) -> None:
    cards, _expected = stale_cards
    before = _contents(cards)
    work = tmp_path / "work"
    with pytest.raises(ValueError, match="--jobs must be at least 1"):
        scorecard.regenerate_scorecards("madiao", jobs=0, work=work, folder=cards)
    record = json.loads((cards / "madiao-smoke-random.json").read_text())
    (cards / "madiao-smoke-random.json").write_text(json.dumps({**record, "policy": "nobody"}))
    with pytest.raises(ValueError, match="unknown madiao policy 'nobody'"):
        scorecard.regenerate_scorecards("madiao", work=work, folder=cards)
    (cards / "madiao-smoke-random.json").write_text(before["madiao-smoke-random.json"])

    def off_its_pin(game: str, baseline: str) -> None:
        raise ValueError(f"the {game} baseline {baseline} decides otherwise than its pin")

    monkeypatch.setattr(scorecard, "check_baseline_pin", off_its_pin)
    with pytest.raises(ValueError, match="decides otherwise than its pin"):
        scorecard.regenerate_scorecards("madiao", work=work, folder=cards)
    assert _contents(cards) == before
    assert not work.exists()


def test_the_regenerate_command_makes_the_scorecards_then_the_leaderboard(
    tmp_path, stale_cards, monkeypatch, capsys
) -> None:
    cards, expected = stale_cards
    (cards / "mao-smoke-base.json").unlink()
    monkeypatch.setattr(scorecard, "SCORECARDS_DIR", cards)
    monkeypatch.setattr(scorecard, "LEADERBOARD", tmp_path / "leaderboard.md")
    assert scorecard.main(["regenerate", "--game", "madiao", "--work", str(tmp_path / "work")]) == 0
    for name, record in expected.items():
        assert without_timing(json.loads((cards / name).read_text())) == record
    assert (tmp_path / "leaderboard.md").read_text() == scorecard.leaderboard_markdown(cards)
    assert "wrote madiao-smoke-greedy.json" in capsys.readouterr().out
