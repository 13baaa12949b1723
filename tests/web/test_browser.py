"""The web app in a real browser: headless Chromium (Debian's) driven by Playwright.

A whole Madiao hand and a Mao round are played by clicking the move buttons, recorded games of
both kinds are replayed forwards and backwards, no page logs a console error, and every test saves
a screenshot (to its tmp dir; set ``MADIAO_MAO_SCREENSHOTS=DIR`` to also write them to ``DIR``,
which is how ``docs/img/*.png`` are made). Skipped without chromium, failed without it in CI.
"""

from __future__ import annotations

from pathlib import Path

from tests.web.pages import MAX_CLICKS, click_move, legal_moves, screenshot, wait_ready


def test_play_a_whole_madiao_hand_by_clicking(page, tmp_path):
    page.goto("/play/madiao?seat=0&agents=heuristic&seed=21&pause=0")
    version = wait_ready(page)
    hand = page.locator('[data-testid="hand"] .card')
    assert hand.count() == 8
    first_card = hand.first.inner_text()
    assert any("\u4e00" <= ch <= "\u9fff" for ch in first_card)  # Chinese name shown
    clicks = 0
    while not page.locator('[data-testid="settlement"]').count():
        moves = legal_moves(page)
        assert moves, "no move offered before the hand ended"
        assert all(m in ("redeal", "pass") or m.split()[0] in ("play", "slough") for m in moves)
        # Pass on a redeal offer, else the first card offered (face up when it may be).
        action = next((m for m in moves if m == "pass"), None) or moves[0]
        version = click_move(page, action, version)
        clicks += 1
        assert clicks < MAX_CLICKS
        if clicks == 3:
            screenshot(page, tmp_path, "madiao-play")
    assert page.locator('[data-testid="hand"] .card').count() == 0
    assert page.locator('[data-testid="settlement"] li.rule').count() >= 1
    assert "Payoffs" in page.locator('[data-testid="payoffs"]').inner_text()
    screenshot(page, tmp_path, "madiao-hand-settlement")
    assert page.console_errors == []


def click_through_a_mao_round(page, version: int, tmp_path: Path, shot: str) -> bool:
    """Play the person's seat by clicking until the game ends; whether a phrase button was used."""
    clicks = 0
    said_phrase = False
    while not page.locator('[data-testid="download-record"]').count():
        moves = legal_moves(page)
        assert moves, "no move offered before the round ended"
        hand_size = page.locator('[data-testid="hand"] .card').count()
        plays = [m for m in moves if m.startswith("play")]
        if plays:
            action = plays[0]
        elif "draw" in moves:
            action = "draw"
        elif hand_size == 1 and "say last-card" in moves:
            action = "say last-card"
        elif hand_size == 0 and "say mao" in moves:
            action = "say mao"
        elif not said_phrase and "say nice-day" in moves:
            action = "say nice-day"  # the Mao Master may call it: either way a phrase button is used
        else:
            action = "end"
        said_phrase |= action.startswith("say")
        version = click_move(page, action, version)
        clicks += 1
        assert clicks < MAX_CLICKS
        if clicks == 4:
            screenshot(page, tmp_path, shot)
    assert "Game over" in page.locator("#game").inner_text()
    return said_phrase


def test_play_a_mao_round_by_clicking(page, tmp_path):
    page.goto("/play/mao?players=3&seat=0&agents=base&rounds=1&hand_size=3&seed=4&pause=0")
    version = wait_ready(page)
    assert page.locator('[data-testid="hand"] .card').count() == 3
    assert page.locator('[data-testid="calls"]').count() == 1
    assert click_through_a_mao_round(page, version, tmp_path, "mao-play")  # phrase buttons used
    screenshot(page, tmp_path, "mao-end")
    assert page.console_errors == []


def test_start_a_mao_game_against_the_shipped_model_from_the_home_page(page, tmp_path):
    page.goto("/")
    form = page.locator('form[action="/play/mao"]')
    assert "model" in form.locator('[data-agents="mao"]').inner_text()
    for field, value in (("players", "3"), ("agents", "model"), ("rounds", "1"), ("hand_size", "3"),
                         ("seed", "7")):  # fmt: skip
        form.locator(f'input[name="{field}"]').fill(value)
    form.locator('button[type="submit"]').click()
    # Each model seat loads the shipped policy (seconds each; more on a loaded machine).
    page.wait_for_selector("body[data-state=ready]", timeout=180_000)
    version = wait_ready(page)
    assert "agents=model" in page.url
    assert page.locator('[data-testid="hand"] .card').count() == 3
    # This clicker plays its first card whatever the top card; with seed 7 the round still ends
    # in a few dozen clicks (a model table slows down when the person keeps playing bad cards).
    click_through_a_mao_round(page, version, tmp_path, "mao-model-play")
    assert page.console_errors == []


def replay_step(page) -> str:
    return page.locator('[data-testid="replay-step"]').inner_text()


def step_replay(page, button: str, version: int) -> int:
    page.click(f'[data-testid="{button}"]')
    return wait_ready(page, version)


def test_replay_a_recorded_match_forwards_and_backwards(page, tmp_path):
    from madiao_mao.cli.main import main

    record = tmp_path / "match.json"
    assert main(["match", "--seed", "5", "--record", str(record)]) == 0
    page.goto("/replay")
    version = wait_ready(page)
    page.set_input_files('[data-testid="replay-file"]', str(record))
    version = wait_ready(page, version)
    assert replay_step(page).startswith("step 0 of ")
    for _ in range(6):
        version = step_replay(page, "replay-next", version)
    assert replay_step(page).startswith("step 6 of ")
    open_hands = page.locator(".hand-row").count()
    assert open_hands == 4
    version = step_replay(page, "replay-prev", version)
    assert replay_step(page).startswith("step 5 of ")
    page.select_option('[data-testid="replay-view"]', "2")
    version = wait_ready(page, version)
    assert page.locator(".hand-row").count() == 1 and page.locator('[data-testid="hand"]').count() == 1
    version = step_replay(page, "replay-last", version)
    assert page.locator('[data-testid="settlement"]').count() == 1
    screenshot(page, tmp_path, "replay-madiao")
    version = step_replay(page, "replay-prev", version)
    total = int(replay_step(page).split()[-1])
    assert replay_step(page) == f"step {total - 1} of {total}"
    assert page.console_errors == []


def test_replay_a_mao_record(page, tmp_path):
    from mao_env.records import record_game, write_record

    path = write_record(tmp_path / "mao.json", record_game(["base", "base", "bayes"], seed=2, n_players=3))
    page.goto("/replay")
    version = wait_ready(page)
    page.set_input_files('[data-testid="replay-file"]', str(path))
    version = wait_ready(page, version)
    for _ in range(3):
        version = step_replay(page, "replay-next", version)
    assert replay_step(page).startswith("step 3 of ")
    version = step_replay(page, "replay-prev", version)
    assert replay_step(page).startswith("step 2 of ")
    assert page.locator(".hand-row").count() == 3
    # The frame's table as a game's: the three seats around the pile.
    assert page.locator('#replay-frame [data-testid="table"] .seat').count() == 3
    version = step_replay(page, "replay-last", version)
    assert page.locator('[data-testid="calls"]').count() == 1
    screenshot(page, tmp_path, "replay-mao")
    assert page.console_errors == []


def test_a_bad_start_parameter_is_shown_not_crashed(page):
    page.goto("/play/madiao?seat=9")
    wait_ready(page)
    error = page.locator('[data-testid="error"]')
    assert error.is_visible() and "seat" in error.inner_text()
