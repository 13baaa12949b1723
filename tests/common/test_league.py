"""The league (``madiao_mao.training.league``): PFSP weights, sampling, payoffs and ratings, persistence; one
opponent member per game in ``LearnerVecEnv``; the SB3 trainer's league mode (tiny toy runs)."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from madiao_mao.training.config import TrainConfig
from madiao_mao.training.league import MAIN, League
from madiao_mao.training.run_folder import league_report


def _league(**settings) -> League:
    league = League(**settings)
    league.add_anchor("a")
    league.add_anchor("b")
    return league


def test_the_league_module_is_engine_neutral():
    """No SB3 or torch behind ``madiao_mao.training.league``: another engine (RLlib) can use it as is."""
    import subprocess
    import sys

    code = (
        "import sys, madiao_mao.training.league; "
        "assert not {'torch', 'stable_baselines3', 'sb3_contrib'} & set(sys.modules), sorted(sys.modules)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# ---- PFSP weights on known payoffs ---------------------------------------------------------------
def test_pfsp_hard_weights_match_the_hand_computed_numbers():
    league = _league(weighting="hard", power=2.0, floor=0.1, prior_games=1.0, prior_score=0.5)
    league.record("a", [1.0, 2.0, -1.0])  # 2 wins in 3 games: x = (2 + 0.5) / 4 = 0.625
    league.record("b", [-2.0, 0.0])  # 1 tie in 2 games:   x = (0.5 + 0.5) / 3 = 1/3
    # main unplayed: x = 0.5
    assert league.win_rate("a") == pytest.approx(0.625)
    assert league.win_rate("b") == pytest.approx(1 / 3)
    assert league.win_rate(MAIN) == pytest.approx(0.5)
    # f(x) = (1 - x)^2: main 0.25, a 0.140625, b 4/9; sum = 0.8350694...
    # p = 0.9 f / sum + 0.1 / 3
    probabilities = league.probabilities()
    assert probabilities[MAIN] == pytest.approx(0.9 * 0.25 / 0.8350694444 + 0.1 / 3, rel=1e-8)
    assert probabilities["a"] == pytest.approx(0.9 * 0.140625 / 0.8350694444 + 0.1 / 3, rel=1e-8)
    assert probabilities["b"] == pytest.approx(0.9 * 0.4444444444 / 0.8350694444 + 0.1 / 3, rel=1e-8)
    assert sum(probabilities.values()) == pytest.approx(1.0)
    # The member the main agent loses to most is drawn most.
    assert probabilities["b"] > probabilities[MAIN] > probabilities["a"]


def test_pfsp_variance_weights_and_the_floor():
    league = _league(weighting="variance", floor=0.0)
    league.record("a", [1.0, 1.0, 1.0])  # x = 3.5 / 4 = 0.875: f = 0.875 * 0.125 = 0.109375
    # main and b unplayed: x = 0.5, f = 0.25 each; sum = 0.609375
    probabilities = league.probabilities()
    assert probabilities["a"] == pytest.approx(0.109375 / 0.609375)
    assert probabilities["b"] == pytest.approx(0.25 / 0.609375)
    # Under "hard" with p = 1, a member always beaten keeps exactly the floor's share.
    hard = _league(weighting="hard", power=1.0, floor=0.3, prior_games=1e-9)
    hard.record("a", [5.0] * 10)  # x ~ 1: f ~ 0
    assert hard.probabilities()["a"] == pytest.approx(0.3 / 3, abs=1e-9)


def test_all_zero_weights_fall_back_to_uniform():
    league = _league(weighting="variance", floor=0.0, prior_games=1e-12)
    for name in league.names():
        league.record(name, [1.0])  # x ~ 1 for everyone: x (1 - x) ~ 0 but positive
    assert sum(league.probabilities().values()) == pytest.approx(1.0)
    zero = League(weighting="hard", power=1.0, floor=0.0, prior_score=1.0)
    zero.add_anchor("a")  # x = 1 for both unplayed members: every f is 0
    assert zero.probabilities() == {MAIN: 0.5, "a": 0.5}


# ---- sampling ------------------------------------------------------------------------------------
def test_sampling_frequencies_follow_the_weights():
    league = _league(floor=0.05)
    league.record("a", [1.0] * 6)
    league.record("b", [-1.0] * 3 + [1.0])
    probabilities = league.probabilities()
    draws = league.sample(np.random.default_rng(3), 60_000)
    for name, probability in probabilities.items():
        frequency = draws.count(name) / len(draws)
        # binomial standard error at n = 60,000 is at most 0.002
        assert frequency == pytest.approx(probability, abs=0.01), name
    # Seeded: the same generator state draws the same members.
    assert league.sample(np.random.default_rng(7), 50) == league.sample(np.random.default_rng(7), 50)
    with pytest.raises(ValueError, match="n must be"):
        league.sample(np.random.default_rng(0), -1)


# ---- payoffs and ratings -------------------------------------------------------------------------
def test_record_updates_payoffs_and_openskill_ratings_game_by_game():
    from openskill.models import PlackettLuce

    league = _league()
    league.record("a", [2.0, -1.0, 0.0])
    member = league.members["a"]
    assert (member.games, member.return_sum, member.score_sum) == (3, 1.0, 1.5)
    # The same games rated by openskill directly, one match at a time.
    model = PlackettLuce()
    main, other = model.rating(), model.rating()
    for ranks in ([0, 1], [1, 0], [0, 0]):
        (main,), (other,) = model.rate([[main], [other]], ranks=ranks)
    assert league.members[MAIN].mu == pytest.approx(main.mu)
    assert league.members[MAIN].sigma == pytest.approx(main.sigma)
    assert member.mu == pytest.approx(other.mu) and member.sigma == pytest.approx(other.sigma)
    # Beating a member raises the main agent's rating and lowers the member's.
    before_main, before_b = league.members[MAIN].mu, league.members["b"].mu
    league.record("b", [1.0, 1.0])
    assert league.members[MAIN].mu > before_main and league.members["b"].mu < before_b
    # Self-play games count in the payoff table but leave the rating alone.
    rating = (league.members[MAIN].mu, league.members[MAIN].sigma)
    league.record(MAIN, [1.0, -1.0])
    assert league.members[MAIN].games == 2
    assert (league.members[MAIN].mu, league.members[MAIN].sigma) == rating


def test_record_checks_everything_before_changing_anything():
    league = _league()
    league.record("a", [1.0])
    saved = copy.deepcopy(league.to_dict())
    with pytest.raises(ValueError, match="returns"):
        league.record("a", [1.0, float("nan")])
    with pytest.raises(ValueError, match="no league member named 'zz'"):
        league.record("zz", [1.0])
    assert league.to_dict() == saved


def test_snapshots_join_and_the_oldest_leaves_past_the_limit():
    league = _league(max_snapshots=2)
    for step in (100, 200, 300):
        member, removed = league.add_snapshot(f"snapshot_{step}", f"snapshots/s{step}.zip", step)
        assert member.step == step
    assert removed is not None and removed.name == "snapshot_100"
    assert league.names("snapshot") == ["snapshot_200", "snapshot_300"]
    with pytest.raises(ValueError, match="already has a member named 'a'"):
        league.add_anchor("a")
    with pytest.raises(ValueError, match="main agent cannot leave"):
        league.remove(MAIN)
    with pytest.raises(ValueError, match="step must be"):
        league.add_snapshot("s", "s.zip", -5)
    assert "s" not in league.members
    with pytest.raises(ValueError, match="weighting must be one of"):
        League(weighting="soft")
    with pytest.raises(ValueError, match="floor must be in"):
        League(floor=1.5)


def test_report_rows_and_markdown():
    league = _league()
    league.record("a", [1.0, -3.0])
    rows = {row["member"]: row for row in league.report()}
    assert rows["a"]["games"] == 2 and rows["a"]["mean_return"] == pytest.approx(-1.0)
    assert rows["a"]["score"] == pytest.approx(0.5)
    assert np.isnan(rows["b"]["mean_return"])
    assert sum(row["probability"] for row in rows.values()) == pytest.approx(1.0)
    assert rows["a"]["ordinal"] == pytest.approx(rows["a"]["mu"] - 3 * rows["a"]["sigma"])
    table = league.markdown()
    assert table.count("\n") == 2 + len(rows) and "| a | anchor | 2 | -1.000 |" in table


# ---- persistence ---------------------------------------------------------------------------------
def _played_league() -> League:
    league = _league(weighting="variance", floor=0.2, max_snapshots=3)
    league.add_snapshot("snapshot_000000128", "snapshots/snapshot_000000128.zip", 128)
    league.record("a", [1.25, -0.5, 0.0])
    league.record("snapshot_000000128", [0.1])
    league.record(MAIN, [-1.0])
    return league


def test_json_round_trip_is_exact():
    league = _played_league()
    data = json.loads(json.dumps(league.to_dict()))
    restored = League.from_dict(data)
    assert restored.to_dict() == league.to_dict()
    assert restored.probabilities() == league.probabilities()
    assert restored.sample(np.random.default_rng(1), 20) == league.sample(np.random.default_rng(1), 20)


def test_a_copy_given_the_standings_draws_and_reports_as_the_league_and_a_wrong_one_changes_nothing():
    league = _played_league()
    copy_ = League.from_dict(League().to_dict() | {"members": [
        {**member, "games": 0, "return_sum": 0.0, "score_sum": 0.0} for member in league.to_dict()["members"]
    ], "settings": league.to_dict()["settings"]})  # fmt: skip
    assert copy_.probabilities() != league.probabilities()
    copy_.set_standings(league.standings())
    assert copy_.to_dict() == league.to_dict()
    assert copy_.sample(np.random.default_rng(1), 20) == league.sample(np.random.default_rng(1), 20)
    before = copy_.to_dict()
    other = _played_league()
    other.add_snapshot("late", "snapshots/late.zip", 99)
    for wrong in (other.standings(), league.standings()[::-1]):
        with pytest.raises(ValueError, match="the standings are of members"):
            copy_.set_standings(wrong)
        assert copy_.to_dict() == before


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda d: d.update(version=99), "league version must be 1"),
        (lambda d: d.update(extra=1), "unknown league fields: extra"),
        (lambda d: d["settings"].update(weighting="soft"), "league settings: weighting must be one of"),
        (lambda d: d["settings"].pop("floor"), "league settings must have exactly the fields"),
        (lambda d: d.update(members=[]), "members must be a non-empty list"),
        (lambda d: d["members"][1].update(games=-1), r"members\[1\]\.games must be an integer >= 0"),
        (lambda d: d["members"][1].update(kind="boss"), r"members\[1\]\.kind must be one of"),
        (lambda d: d["members"][1].update(score_sum=10.0), r"members\[1\]\.score_sum .* exceeds its games"),
        (lambda d: d["members"][1].update(sigma=0.0), r"members\[1\]\.sigma must be > 0"),
        (
            lambda d: d["members"][1].update(return_sum="x"),
            r"members\[1\]\.return_sum must be a finite number",
        ),
        (lambda d: d["members"][1].pop("mu"), r"members\[1\] must have exactly the fields"),
        (lambda d: d["members"][3].update(path=None), r"members\[3\]\.path must be a non-empty string"),
        (lambda d: d["members"][2].update(name="a"), r"members\[2\]\.name 'a' appears twice"),
        (lambda d: d["members"].pop(0), "exactly one main agent"),
        (lambda d: d["settings"].update(max_snapshots=0), "max_snapshots must be a positive integer"),
    ],
)
def test_from_dict_rejects_bad_data_naming_the_field(damage, message):
    data = _played_league().to_dict()
    damage(data)
    with pytest.raises(ValueError, match=message):
        League.from_dict(data)
    with pytest.raises(ValueError, match="league data must be an object"):
        League.from_dict([data])


# ---- one league member per game in LearnerVecEnv -------------------------------------------------
class _Tagged:
    """A batched opponent that plays its first legal action."""

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        return np.argmax(masks, axis=1)


def test_learner_vec_env_draws_one_pool_entry_per_game_for_all_opponent_seats():
    from madiao_mao.training.sb3.adapter import LearnerVecEnv
    from tests.common.test_training import ToyVectorEnv

    pool = [_Tagged() for _ in range(5)]
    draws: list[int] = []

    def sampler(rng: np.random.Generator, n: int) -> np.ndarray:
        picks = rng.integers(len(pool), size=n)
        draws.extend(picks.tolist())
        return picks

    venv = LearnerVecEnv(
        ToyVectorEnv(16, seed=0), pool, opponent_draw="per_game", opponent_sampler=sampler, seed=3
    )
    assert len(draws) == 16  # one draw per game, not per seat
    venv.reset()
    finished = 0
    for _ in range(60):
        # Every opponent seat of a game holds the same pool entry.
        assert (venv.opponent_index == venv.opponent_index[:, :1]).all()
        before = venv.opponent_index[:, 0].copy()
        _, _, dones, infos = venv.step(np.argmax(venv.action_masks(), axis=1))
        for game in np.flatnonzero(dones):
            # The finished game names the entry it was played against (before the next draw).
            assert infos[game]["opponent_index"] == before[game]
            finished += 1
    assert finished > 0 and len(draws) == 16 + finished + venv.episodes_without_learner
    # The default is unchanged: every opponent seat draws its own entry, uniformly.
    per_seat = LearnerVecEnv(ToyVectorEnv(64, seed=0), pool, seed=3)
    assert (per_seat.opponent_index != per_seat.opponent_index[:, :1]).any()
    expected = np.random.default_rng(3).integers(len(pool), size=(64, per_seat.n_players))
    assert (per_seat.opponent_index == expected).all()


def test_games_ending_in_one_step_draw_their_opponents_in_one_call_in_game_order():
    from madiao_mao.training.learner_games import LearnerGames
    from tests.common.test_training import ToyVectorEnv

    # The league's sampler keeps the contract that allows one call: n draws are n calls of one.
    league = _played_league()
    together = league.sample(np.random.default_rng(4), 200)
    one_rng = np.random.default_rng(4)
    assert together == [league.sample(one_rng, 1)[0] for _ in range(200)]
    assert len(set(together)) > 2
    # Each draw is numbered, so where every draw went shows.
    calls: list[int] = []

    def numbered(rng: np.random.Generator, n: int) -> np.ndarray:
        calls.append(n)
        return np.arange(sum(calls) - n, sum(calls)) % 1000

    tagged = _Tagged()
    for draw in ("per_game", "per_seat"):
        calls.clear()
        games = LearnerGames(
            ToyVectorEnv(16, seed=0), [tagged] * 1000, opponent_draw=draw, opponent_sampler=numbered
        )
        seats = games.n_players if draw == "per_seat" else 1
        first = 16 * seats
        games._finish_games(np.array([2, 5, 11]))
        assert calls == [16 * seats, 3 * seats]  # the three games in one call
        drawn = games.opponent_index[[2, 5, 11]]
        expected = np.arange(first, first + 3 * seats).reshape(3, seats)  # in game order, then seat order
        np.testing.assert_array_equal(drawn, np.broadcast_to(expected, drawn.shape))
        np.testing.assert_array_equal(
            games.opponent_index[[0, 1, 3]],
            np.broadcast_to(np.arange(16 * seats).reshape(16, seats)[[0, 1, 3]], (3, games.n_players)),
        )


def test_learner_vec_env_checks_the_opponent_draw_options():
    from madiao_mao.training.sb3.adapter import LearnerVecEnv
    from tests.common.test_training import ToyVectorEnv

    with pytest.raises(ValueError, match="opponent_draw must be one of"):
        LearnerVecEnv(ToyVectorEnv(4, seed=0), [_Tagged()], opponent_draw="per_team")
    with pytest.raises(ValueError, match="opponent_sampler returned"):
        LearnerVecEnv(
            ToyVectorEnv(4, seed=0),
            [_Tagged()],
            opponent_draw="per_game",
            opponent_sampler=lambda rng, n: [7] * n,
        )
    with pytest.raises(TypeError, match="opponent_sampler must be callable"):
        LearnerVecEnv(ToyVectorEnv(4, seed=0), [_Tagged()], opponent_sampler=3)


def test_league_opponents_record_each_game_against_the_member_that_played_it():
    from madiao_mao.agents.base import RandomAgent
    from madiao_mao.training.opponents import LeagueOpponents
    from madiao_mao.training.sb3.adapter import LearnerVecEnv
    from tests.common.test_training import ToyVectorEnv

    league = League(max_snapshots=1)
    league.add_anchor("random")
    opponents = LeagueOpponents(league, {"random": RandomAgent(seed=0)}, max_snapshots=1)
    venv = LearnerVecEnv(
        ToyVectorEnv(8, seed=0),
        opponents.slots,
        opponent_draw="per_game",
        opponent_sampler=opponents.sample,
        seed=0,
    )
    opponents.attach(venv)
    opponents.set_current(RandomAgent(seed=1, name="live"))
    # slots: 0 main, 1 the anchor, 2 the one snapshot place
    assert [slot.name for slot in opponents.slots] == ["live", "random", "live"]
    opponents.add_snapshot(RandomAgent(seed=2, name="snap_a"), path="snapshots/a.zip", step=10)
    assert opponents.slot_member == [MAIN, "random", "snap_a"]
    venv.opponent_index[:4] = 2  # games 0-3 are being played against snap_a ...
    venv.opponent_index[4:] = 1  # ... and games 4-7 against the anchor
    # snap_b pushes snap_a out and takes its slot while games 0-3 are still on.
    opponents.add_snapshot(RandomAgent(seed=3, name="snap_b"), path="snapshots/b.zip", step=20)
    assert league.names() == [MAIN, "random", "snap_b"] and opponents.slots[2].name == "snap_b"
    dones = np.ones(8, dtype=bool)
    infos = [{"episode": {"r": 1.0}, "opponent_index": int(venv.opponent_index[g, 0])} for g in range(8)]
    opponents.record_games(dones, infos)
    # Games 0-3 met two different opponents: not recorded; games 4-7 count for the anchor.
    assert (league.members["snap_b"].games, league.members["random"].games) == (0, 4)
    infos = [{"episode": {"r": -1.0}, "opponent_index": 2} for _ in range(8)]
    opponents.record_games(dones, infos)  # new games on snap_b's slot count for it
    assert league.members["snap_b"].games == 8 and league.members["snap_b"].score_sum == 0.0
    # Draws follow the league's probabilities, over member slots only.
    drawn = opponents.sample(np.random.default_rng(0), 3000)
    assert set(np.unique(drawn)) == {0, 1, 2}
    assert np.mean(drawn == 2) == pytest.approx(league.probabilities()["snap_b"], abs=0.03)


# ---- the SB3 trainer's league mode (tiny runs on the toy game of test_training) -----------------
def _league_config(train_module, tmp_path, monkeypatch, **overrides):
    from tests.common.test_training import _toy_training_config

    options = {
        "imitate": "none",
        "opponents": "league",
        "league_anchors": ("random",),
        "total_timesteps": 512,
        "snapshot_every": 128,
        "checkpoint_every": 128,
        "max_snapshots": 2,
    }
    return _toy_training_config(train_module, tmp_path, monkeypatch, **{**options, **overrides})


def _saved_league(run_dir) -> dict:
    return json.loads((run_dir / "league.json").read_text())


def _capture_restored_leagues(monkeypatch) -> list[dict]:
    """Records the league every call of ``League.from_dict`` restores (what a resumed run starts with)."""
    restored: list[dict] = []
    original = League.from_dict.__func__

    def from_dict(cls, data):
        league = original(cls, data)
        restored.append(copy.deepcopy(league.to_dict()))
        return league

    monkeypatch.setattr(League, "from_dict", classmethod(from_dict))
    return restored


def test_league_run_keeps_a_payoff_table_and_resumes_with_exactly_the_saved_league(tmp_path, monkeypatch):
    pytest.importorskip("sb3_contrib")
    from madiao_mao.training.sb3 import train as train_module

    config = _league_config(train_module, tmp_path, monkeypatch, total_timesteps=512)
    run_dir = train_module.train(config)
    saved = _saved_league(run_dir)
    members = {member["name"]: member for member in saved["members"]}
    # main, the anchor, and the newest snapshots (max_snapshots = 2 of the 4 taken)
    assert [m["kind"] for m in saved["members"]] == ["main", "anchor", "snapshot", "snapshot"]
    assert [m["step"] for m in saved["members"][2:]] == [384, 512]
    assert all((run_dir / m["path"]).is_file() for m in saved["members"][2:])
    # Finished training games filled the payoff table: every game counted once, against one member.
    assert members["random"]["games"] > 0 and members["main"]["games"] > 0
    assert sum(m["games"] for m in saved["members"]) > 0
    # TensorBoard / progress.csv carry the payoff and the rating of each member.
    columns = (run_dir / "progress.csv").read_text().splitlines()[0].split(",")
    assert "league/payoff/random" in columns and "league/rating/random" in columns
    assert "league/rating/main" in columns and "league/probability/random" in columns
    # The report's league section: the saved payoff table and its history plotted.
    section = league_report(run_dir)
    assert League.from_dict(saved).markdown() in section
    assert (run_dir / "league_payoffs.png").is_file() and (run_dir / "league_ratings.png").is_file()
    assert "`league_ratings.png`" in section

    # Resume: the league restored is exactly the one saved with the checkpoint.
    restored = _capture_restored_leagues(monkeypatch)
    train_module.train(resume=run_dir, total_timesteps=768, quiet=True)
    assert restored[0] == saved
    resumed = _saved_league(run_dir)
    for before in saved["members"]:
        after = next((m for m in resumed["members"] if m["name"] == before["name"]), None)
        if after is not None:
            assert after["games"] >= before["games"]
    assert resumed["members"][-1]["step"] == 768


def test_a_frozen_model_such_as_an_exploiter_can_be_a_league_member(tmp_path, monkeypatch):
    pytest.importorskip("sb3_contrib")
    from madiao_mao.training.sb3 import train as train_module

    first = train_module.train(_league_config(train_module, tmp_path / "first", monkeypatch))
    frozen = f"model:{first / 'final_model.zip'}"
    config = _league_config(
        train_module, tmp_path / "second", monkeypatch, league_anchors=("random", frozen), seed=2
    )
    run_dir = train_module.train(config)
    members = {member["name"]: member for member in _saved_league(run_dir)["members"]}
    assert members[frozen]["kind"] == "anchor" and members[frozen]["agent"] == frozen
    assert members[frozen]["games"] > 0, "the frozen model played training games"
    # A missing model is refused when the config is made, naming the file.
    with pytest.raises(ValueError, match=r"league_anchors: no saved model at .*missing\.zip"):
        _league_config(
            train_module, tmp_path / "third", monkeypatch, league_anchors=(f"model:{tmp_path}/missing.zip",)
        )


def test_interrupted_league_run_resumes_with_the_league_saved_at_the_interrupt(tmp_path, monkeypatch):
    pytest.importorskip("sb3_contrib")
    from madiao_mao.training.sb3 import train as train_module
    from tests.common.test_training_hardening import _InterruptedToyEnv

    config = _league_config(train_module, tmp_path, monkeypatch, total_timesteps=512, checkpoint_every=10**6)
    monkeypatch.setattr(
        train_module, "make_vector_env", lambda config, n, seed: _InterruptedToyEnv(n, seed=seed)
    )
    monkeypatch.setattr(_InterruptedToyEnv, "calls", 0)
    monkeypatch.setattr(_InterruptedToyEnv, "interrupt_at", 230)  # in the third rollout
    with pytest.raises(KeyboardInterrupt):
        train_module.train(config)
    (run_dir,) = tmp_path.iterdir()
    saved = _saved_league(run_dir)
    assert sum(m["games"] for m in saved["members"]) > 0
    monkeypatch.setattr(_InterruptedToyEnv, "interrupt_at", None)
    restored = _capture_restored_leagues(monkeypatch)
    train_module.train(resume=run_dir, quiet=True)
    assert restored[0] == saved


def test_league_run_is_deterministic_per_seed(tmp_path, monkeypatch):
    pytest.importorskip("sb3_contrib")
    import torch
    from sb3_contrib import MaskablePPO

    from madiao_mao.training.sb3 import train as train_module

    leagues, policies = [], []
    for attempt in range(2):
        config = _league_config(train_module, tmp_path / str(attempt), monkeypatch, total_timesteps=384)
        run_dir = train_module.train(config)
        league = _saved_league(run_dir)
        for member in league["members"]:
            member["path"] = member["path"] and member["path"].replace(run_dir.name, "RUN")
        leagues.append(league)
        policies.append(MaskablePPO.load(str(run_dir / "final_model.zip")).policy.state_dict())
    assert leagues[0] == leagues[1]
    assert all(torch.equal(policies[0][key], policies[1][key]) for key in policies[0])


def test_league_options_are_checked(tmp_path, monkeypatch):
    pytest.importorskip("sb3_contrib")
    from madiao_mao.training.sb3 import train as train_module

    for overrides, message in (
        ({"opponents": "arena"}, "opponents must be one of pool, league"),
        ({"league_anchors": ("nobody",)}, "league_anchors: 'nobody' is not a mao agent"),
        ({"league_anchors": ()}, "league_anchors must name at least one"),
        ({"pfsp_weighting": "soft"}, "pfsp_weighting must be one of hard, variance"),
        ({"pfsp_power": 0}, "pfsp_power must be > 0"),
        ({"pfsp_floor": 1.5}, r"pfsp_floor must be in \[0, 1\]"),
    ):
        with pytest.raises(ValueError, match=message):
            _league_config(train_module, tmp_path, monkeypatch, **overrides)
    # An anchor with a memory per game but no row keys cannot sit in the SB3 pool (as for scripted
    # opponents; Mao's real Bayesian player takes the keys: tests/mao/test_memory.py).
    from tests.common.test_training import _forgetful_bayes

    _forgetful_bayes(monkeypatch)
    config = _league_config(train_module, tmp_path, monkeypatch, league_anchors=("random", "bayes"))
    refused = "'bayes' keeps a memory per game but its act_batch takes no rows= keys"
    with pytest.raises(ValueError, match=refused):
        train_module.train(config)
    assert not list(tmp_path.iterdir()), "a refused run leaves no folder"
    # Madiao's search player needs an env of its own per game: it cannot be an anchor here either.
    config = _league_config(
        train_module, tmp_path, monkeypatch, game="madiao", league_anchors=("random", "search")
    )
    with pytest.raises(ValueError, match="league anchor 'search' cannot sit in the training pool"):
        train_module.train(config)
    assert not list(tmp_path.iterdir()), "a refused run leaves no folder"
    # The league is Madiao's default; Mao keeps the pool.
    assert TrainConfig().opponents == "league"
    assert TrainConfig(game="mao").opponents == "pool"


def test_resume_refuses_a_missing_or_damaged_league_file(tmp_path, monkeypatch):
    pytest.importorskip("sb3_contrib")
    from madiao_mao.training.sb3 import train as train_module

    config = _league_config(train_module, tmp_path, monkeypatch, total_timesteps=128)
    run_dir = train_module.train(config)
    league_file = run_dir / "league.json"
    data = _saved_league(run_dir)
    games = data["members"][1]["games"]
    data["members"][1]["games"] = -3
    league_file.write_text(json.dumps(data))
    before = (run_dir / "state.json").read_bytes()
    with pytest.raises(ValueError, match=r"league.json is damaged: members\[1\]\.games"):
        train_module.train(resume=run_dir, total_timesteps=256, quiet=True)
    data["members"][1]["games"] = games
    league_file.write_text(json.dumps(data))
    snapshot = run_dir / data["members"][-1]["path"]
    snapshot.write_bytes(b"not a zip")
    with pytest.raises(ValueError, match=rf"{snapshot.name}, snapshot .* of league\.json, is damaged"):
        train_module.train(resume=run_dir, total_timesteps=256, quiet=True)
    snapshot.unlink()
    with pytest.raises(FileNotFoundError, match=r"the file of snapshot .* is missing"):
        train_module.train(resume=run_dir, total_timesteps=256, quiet=True)
    league_file.unlink()
    with pytest.raises(FileNotFoundError, match=r"league\.json is missing"):
        train_module.train(resume=run_dir, total_timesteps=256, quiet=True)
    assert (run_dir / "state.json").read_bytes() == before


def test_league_section_of_the_report_prints_the_payoff_table(tmp_path):

    league = _played_league()
    (tmp_path / "league.json").write_text(json.dumps(league.to_dict()))
    text = league_report(tmp_path)
    assert league.markdown() in text
    assert league_report(tmp_path / "missing") == ""


def test_cli_opponents_flag_selects_the_trainer_and_each_game_has_its_default():
    from madiao_mao.cli.train import parse_train_command

    def config(*flags: str):
        return parse_train_command(list(flags)).train_config()

    assert config().opponents == "league"  # Madiao's default: league self-play
    assert config().league_anchors == ("random", "greedy", "heuristic")
    assert config("--opponents", "pool").opponents == "pool"
    assert config("--game", "mao").opponents == "pool"
    assert config("--game", "mao", "--opponents", "league").opponents == "league"
    assert config("--league-anchors", "greedy", "heuristic").league_anchors == ("greedy", "heuristic")


def test_cli_minibatch_and_learning_rate_default_per_game():
    from madiao_mao.cli.train import parse_train_command

    def config(*flags: str):
        return parse_train_command(list(flags)).train_config()

    assert (config().batch_size, config().learning_rate) == (256, 3e-4)
    assert (config("--game", "mao").batch_size, config("--game", "mao").learning_rate) == (256, 3e-4)
    chosen = config("--batch-size", "512", "--learning-rate", "0.001")
    assert (chosen.batch_size, chosen.learning_rate) == (512, 1e-3)
