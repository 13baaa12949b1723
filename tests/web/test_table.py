"""The card table in a real browser (Debian's Chromium driven by Playwright).

A whole Madiao match played by clicking cards, a Mao round of the players' calls variant with a
call made by clicking, the Mao rule choice by family, a watched game, the table at 375 px, the
keyboard focus after a move, the other seats' moves shown one at a time, a stale view refreshed.
The agents' pause is 0 (``?pause=0``) except where the pause itself is tested. Every test saves
screenshots (``MADIAO_MAO_SCREENSHOTS=docs/img`` writes the documentation's images).
"""

from __future__ import annotations

import pytest

from tests.web.pages import (
    MAX_CLICKS,
    click,
    click_move,
    horizontal_overflow,
    legal_moves,
    screenshot,
    text_of,
    wait_ready,
)

pytestmark = pytest.mark.slow


def click_a_card(page, render: int) -> tuple[int, str]:
    """Click the first highlighted card of the hand; the action it made."""
    card = page.locator('[data-testid="hand"] button.card.legal').first
    name, action = card.get_attribute("data-card"), card.get_attribute("data-action")
    assert action in (f"play {name}", f"slough {name}")
    card.click()
    return wait_ready(page, render), action


def test_a_whole_madiao_match_by_clicking_cards(page, tmp_path):
    page.goto("/play/madiao?seat=0&agents=heuristic&seed=21&match=1&pause=0")
    render = wait_ready(page)
    assert page.locator('[data-testid="table"] .seat').count() == 4
    assert "Banker" in text_of(page, "table")
    hand = page.locator('[data-testid="hand"] button.card')
    assert hand.count() == 8
    assert any("\u4e00" <= ch <= "\u9fff" for ch in hand.first.inner_text())  # Chinese names shown
    shots = set()
    clicks = sloughs = 0
    while not page.locator('[data-testid="again"]').count():
        if page.locator('button[data-action="pass"]').count():
            assert "redeal" in text_of(page, "hand").lower() or "redeal" in page.inner_text(".decision")
            render = click_move(page, "pass", render)
        else:
            if "table" not in shots and page.locator('[data-testid="trick"] .trick-play').count() >= 2:
                assert "Suit led" in text_of(page, "table")
                assert page.locator('[data-testid="trick"] .winning').count() == 1
                screenshot(page, tmp_path, "madiao-table")
                shots.add("table")
            render, action = click_a_card(page, render)
            sloughs += action.startswith("slough")
        clicks += 1
        assert clicks < MAX_CLICKS
        if page.locator('[data-testid="trick-winner"]').count():
            assert "won by" in text_of(page, "trick-winner")
            shots.add("trick-winner")
        if "settlement" not in shots and page.locator('[data-testid="match-totals"]').count():
            settlement = text_of(page, "settlement")
            assert any(words in settlement for words in ("You won", "You lost", "You broke even"))
            assert "—" in settlement  # every rule with its one-line explanation
            assert "_" not in settlement  # spoken names, not identifiers like trick_count
            screenshot(page, tmp_path, "madiao-settlement")
            shots.add("settlement")
    assert {"table", "trick-winner", "settlement"} <= shots and sloughs
    assert "Match over" in text_of(page, "status")
    assert page.locator(".seat-turn").count() == 0  # nobody "to play" after the end
    totals = page.locator('[data-testid="match-totals"] table')
    hands = totals.locator("tr").count() - 2  # less the header and the total
    assert hands >= 4
    bankers = {totals.locator("tr").nth(row).locator("td").nth(1).inner_text() for row in range(1, hands + 1)}
    assert bankers == {"you", "seat 1", "seat 2", "seat 3"}  # every seat banker once
    total_row = [int(cell.inner_text()) for cell in totals.locator("tr.total td.num").all()]
    assert len(total_row) == 4 and sum(total_row) == 0
    screenshot(page, tmp_path, "madiao-match-totals")
    assert page.console_errors == []

    # The game just played, replayed from its link.
    page.click('[data-testid="replay-link"]')
    render = wait_ready(page)
    steps = int(text_of(page, "replay-step").split()[-1])
    assert text_of(page, "replay-step") == f"step 0 of {steps}" and steps > 100
    render = click(page, '[data-testid="replay-last"]', render)
    assert page.locator('[data-testid="settlement"]').count() == 1
    assert page.console_errors == []


def play_mao_turn(page, render: int, hand_said: set[str]) -> tuple[int, str]:
    """The person's move outside a call window: a card if one is highlighted, else draw; the
    phrases the hand size asks for; then the end of the turn."""
    moves = legal_moves(page)
    hand_size = page.locator('[data-testid="hand"] button.card').count()
    if any(m.startswith("play ") for m in moves):
        render, action = click_a_card(page, render)
        return render, action
    if "draw" in moves:
        return click_move(page, "draw", render), "draw"
    for phrase, size in (("last-card", 1), ("mao", 0)):
        if hand_size == size and f"say {phrase}" in moves and phrase not in hand_said:
            hand_said.add(phrase)
            return click_move(page, f"say {phrase}", render), f"say {phrase}"
    hand_said.clear()
    return click_move(page, "end", render), "end"


def test_a_mao_round_with_the_players_calls_and_a_call_made_by_clicking(page, tmp_path):
    page.goto("/play/mao?players=3&seat=0&agents=base&rounds=1&hand_size=3&seed=4&calls=players&pause=0")
    render = wait_ready(page)
    assert page.locator('[data-testid="table"] .seat').count() == 3
    called = False
    said: set[str] = set()
    clicks = 0
    while not page.locator('[data-testid="again"]').count():
        moves = legal_moves(page)
        assert moves, "no move offered before the game ended"
        if "no call" in moves:
            window = text_of(page, "call-window")
            assert "Call window on" in window and "Point of order" in window
            assert "point of order" in moves and "call talking" in moves
            if not called and "call bad-card" in moves:  # a card was played: call it bad
                screenshot(page, tmp_path, "mao-call-window")
                render = click_move(page, "call bad-card", render)
                called = True
                calls = text_of(page, "calls")
                assert "You called “Bad card”" in calls
                assert "correct" in calls or "bad call" in calls
                assert "penalty card" in calls
                screenshot(page, tmp_path, "mao-calls")
            else:
                render = click_move(page, "no call", render)
        else:
            render, _ = play_mao_turn(page, render, said)
        clicks += 1
        assert clicks < MAX_CLICKS
    assert called
    body = page.inner_text("body")
    assert "Game over" in text_of(page, "status") and "<name of the card>" not in body
    results = text_of(page, "results")
    assert "rounds won" in results and "penalty cards" in results
    counts = [cell.inner_text() for cell in page.locator('[data-testid="results"] td.num').all()]
    assert len(counts) == 6 and all(count.isdigit() for count in counts)  # cards and rounds, no rewards
    assert page.locator(".seat-turn").count() == 0
    screenshot(page, tmp_path, "mao-end")
    assert page.console_errors == []


def test_the_mao_rule_choice_is_grouped_by_family(page, tmp_path):
    # Seed 18: the person goes out in the first round after a few clicks and chooses a rule.
    page.goto("/play/mao?players=3&seat=0&agents=base&rounds=2&hand_size=2&seed=18&pause=0")
    render = wait_ready(page)
    said: set[str] = set()
    clicks = 0
    while not page.locator('[data-testid="rule-choice"]').count():
        render, _ = play_mao_turn(page, render, said)
        clicks += 1
        assert clicks < 40
    families = page.locator('[data-testid="rule-choice"] details.rule-family')
    assert families.count() == 3
    assert [families.nth(k).locator("summary strong").inner_text() for k in range(3)] == [
        "Which cards may be played",
        "What a card does",
        "What to say",
    ]
    assert all(families.nth(k).get_attribute("open") is not None for k in range(3))  # none folded shut
    rules = page.locator('[data-testid="rule-choice"] button[data-action^="rule "]')
    assert rules.count() >= 44
    screenshot(page, tmp_path, "mao-rule-choice")
    first = families.nth(0).locator("button[data-action]").first
    description = first.inner_text()
    render = click(page, f'button[data-action="{first.get_attribute("data-action")}"]', render)
    assert description in text_of(page, "rules")  # now one of the rules you authored
    assert f"You introduce a new rule: {description}" in text_of(page, "calls")
    assert page.console_errors == []


def test_watch_four_agents_play_step_by_step_then_at_speed(page, tmp_path):
    page.goto("/watch/madiao?agents=heuristic&seed=3&pause=0")
    render = wait_ready(page)
    assert page.locator(".hand-row").count() == 4  # a spectator sees every hand
    assert page.locator('[data-testid="hand"]').count() == 0
    for _ in range(9):
        before = page.locator('[data-testid="log"] li').count()
        render = click(page, '[data-testid="watch-step"]', render)
        assert page.locator('[data-testid="log"] li').count() > before
    screenshot(page, tmp_path, "watch-madiao")
    page.click('[data-testid="watch-play"]')
    page.wait_for_selector('[data-testid="again"]', timeout=120_000)
    wait_ready(page)
    assert page.locator('[data-testid="settlement"]').count() == 1
    assert "Hand over" in text_of(page, "status")
    assert page.console_errors == []


@pytest.fixture
def narrow_page(browser, live_server):
    context = browser.new_context(viewport={"width": 375, "height": 800}, base_url=live_server)
    new_page = context.new_page()
    new_page.console_errors = []
    new_page.on("pageerror", lambda e: new_page.console_errors.append(str(e)))
    new_page.set_default_timeout(20_000)
    yield new_page
    context.close()


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/play/madiao?seat=0&seed=21&match=1&pause=0",
        "/play/mao?players=8&seat=0&hand_size=6&seed=3&calls=players&pause=0",
        "/watch/madiao?seed=3&pause=0",
        "/watch/mao?players=8&hand_size=4&seed=1&pause=0",
    ],
)
def test_no_horizontal_overflow_at_375_px(narrow_page, tmp_path, path):
    narrow_page.goto(path)
    wait_ready(narrow_page)
    assert horizontal_overflow(narrow_page) <= 0, path
    if path.startswith("/play/madiao"):
        screenshot(narrow_page, tmp_path, "madiao-375")
    assert narrow_page.console_errors == []


def test_keyboard_focus_follows_the_moves(page):
    page.goto("/play/madiao?seat=0&agents=heuristic&seed=21&pause=0")
    render = wait_ready(page)
    for _ in range(3):
        focused = page.evaluate(
            "document.activeElement.matches('button.card.legal') && document.activeElement.dataset.action"
        )
        assert focused, "focus is not on a card the person may play"
        page.keyboard.press("Enter")
        render = wait_ready(page, render)
        assert page.evaluate("document.activeElement !== document.body")
        assert text_of(page, "announce")  # what happened, in the aria-live region
    assert page.get_attribute('[data-testid="announce"]', "aria-live") == "polite"


def test_the_other_seats_moves_are_shown_one_at_a_time(page):
    page.add_init_script(
        """window.announced = [];
        document.addEventListener("DOMContentLoaded", () => {
          const box = document.getElementById("announce");
          new MutationObserver(() => window.announced.push(box.textContent))
            .observe(box, {childList: true, characterData: true, subtree: true});
        });"""
    )
    page.goto("/play/madiao?seat=2&agents=heuristic&seed=21&pause=150")
    wait_ready(page)
    announced = page.evaluate("window.announced")
    # Seed 21: the deal, then seat 3 leads and seats 0 and 1 slough before seat 2's turn.
    assert announced[:4] == [
        "Hand 1 dealt; Seat 1 (heuristic) is the banker.",
        "Seat 3 (heuristic) leads 八索 8S.",
        "Seat 0 (heuristic) sloughs a card face down.",
        "Seat 1 (heuristic) sloughs a card face down.",
    ]
    assert "Your turn" in announced[-1]


def test_a_stale_view_is_refreshed_not_played(page):
    page.goto("/play/madiao?seat=0&agents=heuristic&seed=21&pause=0")
    render = wait_ready(page)
    game = page.evaluate("document.body.dataset.game")
    view = page.request.get(f"/api/games/{game}").json()["view"]
    # The same seat moves from another tab: the page's view is now one version behind.
    moved = page.request.post(
        f"/api/games/{game}/move",
        data={"action": view["legal"][0], "version": view["version"]},
        headers={"Content-Type": "application/json"},
    )
    assert moved.ok
    render, _ = click_a_card(page, render)
    error = page.locator('[data-testid="error"]')
    assert error.is_visible() and "version" in error.inner_text()
    assert page.locator('[data-testid="hand"] button.card').count() == 7  # the table as it now is
    assert page.request.get(f"/api/games/{game}").json()["view"]["version"] == 1
