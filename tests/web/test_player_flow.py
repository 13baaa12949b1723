"""A person at the table, in Chromium (issue 34): a reload or Back shows the same game at the same
moment (its id is in the URL), the status line follows the other seats' moves as they are shown,
and a Mao call window played by keyboard alone calls nothing unless asked to."""

from __future__ import annotations

import re

from tests.web import pages


def table_moment(page) -> tuple[str, str, list[str]]:
    """What a person sees of the moment: the status line, the table and the moves offered."""
    return pages.text_of(page, "status"), pages.text_of(page, "table"), pages.legal_moves(page)


def test_a_reload_and_back_show_the_same_game_at_the_same_moment(page, tmp_path):
    page.goto("/play/madiao?seat=0&agents=random&seed=21&pause=0")
    render = pages.wait_ready(page)
    for _ in range(2):
        moves = pages.legal_moves(page)
        render = pages.click_move(page, next((m for m in moves if m == "pass"), moves[0]), render)
    game = page.evaluate("document.body.dataset.game")
    assert f"game={game}" in page.url and "seed=21" in page.url
    before = table_moment(page)
    page.reload()
    pages.wait_ready(page)
    assert page.evaluate("document.body.dataset.game") == game
    assert table_moment(page) == before
    page.goto("/")
    pages.wait_ready(page)
    page.go_back()
    pages.wait_ready(page)
    assert table_moment(page) == before
    # The game goes on from there, and a new game from its links is a new game.
    moves = pages.legal_moves(page)
    pages.click_move(
        page,
        next((m for m in moves if m == "pass"), moves[0]),
        int(page.evaluate("Number(document.body.dataset.render)")),
    )
    pages.screenshot(page, tmp_path, "madiao-resumed")
    assert page.console_errors == []


def test_the_status_line_follows_the_other_seats_moves_as_they_are_shown(page):
    page.goto("/play/madiao?seat=0&agents=random&seed=23&pause=150")
    render = pages.wait_ready(page)
    moves = pages.legal_moves(page)
    if "pass" in moves:  # a redeal offer first
        render = pages.click_move(page, "pass", render)
    assert "Your turn" in pages.text_of(page, "status")
    page.evaluate(
        """() => { window.samples = []; window.sampler = setInterval(() => window.samples.push([
             document.body.dataset.state, document.querySelector('[data-testid=status]').textContent
           ]), 20); }"""
    )
    pages.click_move(page, pages.legal_moves(page)[0], render)
    samples = page.evaluate("clearInterval(window.sampler) || window.samples")
    shown = [status for state, status in samples if state == "busy"]
    assert len(shown) >= 3  # the other seats' moves were shown one at a time
    assert not any("Your turn" in status for status in shown), shown
    assert "Your turn" in pages.text_of(page, "status") or "over" in pages.text_of(page, "status").lower()
    assert page.console_errors == []


def test_a_mao_call_window_by_keyboard_alone_calls_nothing_unless_asked(page, tmp_path):
    page.goto("/play/mao?seat=0&players=3&calls=players&hand_size=4&rounds=1&seed=5&pause=0")
    render = pages.wait_ready(page)
    windows = 0
    for _ in range(pages.MAX_CLICKS):
        if page.locator('[data-testid="download-record"]').count() or windows == 2:
            break
        moves = pages.legal_moves(page)
        if "no call" in moves:
            focused = page.evaluate("document.activeElement.dataset.action")
            assert focused == "no call", focused  # the safe default: calling nothing
            if windows == 0:
                pages.screenshot(page, tmp_path, "mao-call-window", full_page=False)
            page.keyboard.press("Enter")
            render = pages.wait_ready(page, render)
            page.keyboard.press("Enter")  # a second Enter: on the next window's default, or nothing
            page.wait_for_timeout(300)
            render = pages.wait_ready(page)
            windows += 1
            continue
        plays = [m for m in moves if m.startswith("play")]
        action = plays[0] if plays else "draw" if "draw" in moves else moves[-1]
        render = pages.click_move(page, action, render)
    assert windows >= 1
    turns = (
        page.locator('[data-testid="turns"]').inner_text()
        if page.locator('[data-testid="turns"]').count()
        else ""
    )
    assert "You called" not in turns
    assert page.console_errors == []


PAYMENT = re.compile(r"^(You|Seat \d) pays? (\d+(?:\.\d+)?) stakes? to (you|seat \d)(?: — (.+))?$")


def test_a_settlement_says_who_pays_whom_once_per_rule_and_pair(page, tmp_path):
    """Watched seed 0 (heuristic players): the boss-card rule is settled both ways between seats 3
    and 0 by the env; the page shows one netted payment per pair, each naming payer and payee and
    what is behind it (the trick count, the tricks won with a boss card, who was dealt 100T)."""
    page.goto("/watch/madiao?seed=0&agents=heuristic&pause=0")
    render = pages.wait_ready(page)
    page.click('[data-testid="watch-play"]')
    page.wait_for_selector('[data-testid="settlement"]', timeout=120_000)
    pages.wait_ready(page, render)
    rules = page.locator('[data-testid="settlement"] li.rule')
    assert rules.count() >= 1
    for index in range(rules.count()):
        lines = rules.nth(index).locator("ul.payments > li:not(.muted)").all_inner_texts()
        pairs = []
        for line in lines:
            match = PAYMENT.match(line.strip())
            assert match, line
            pairs.append(frozenset((match.group(1).lower(), match.group(3).lower())))
            assert match.group(4), line  # every rule of this hand has a card or trick behind it
            assert re.search(
                r"\b(made \d+ tricks?|tricks? [\d, and]+ won with|dealt to)\b", match.group(4)
            ), line
        assert len(pairs) == len(set(pairs)), lines  # never both ways between two seats
    pages.screenshot(page, tmp_path, "madiao-settlement-netted")
    assert page.console_errors == []


def test_settlement_lines_are_netted_per_rule_between_two_seats():
    from madiao_mao_web.madiao.live import madiao_settlement_view

    lines = [
        {"rule": "boss_card", "payer": 3, "payee": 0, "stakes": 1.0},
        {"rule": "boss_card", "payer": 0, "payee": 3, "stakes": 2.0},
        {"rule": "boss_card", "payer": 1, "payee": 3, "stakes": 2.0},
        {"rule": "slam", "payer": 2, "payee": 1, "stakes": 1.0},
        {"rule": "slam", "payer": 1, "payee": 2, "stakes": 1.0},
    ]
    view = madiao_settlement_view(lines, [1.0, -1.0, 0.0, 0.0], banker=3)
    assert view["rules"] == [
        {
            "rule": "boss_card",
            "payments": [{"payer": 0, "payee": 3, "stakes": 1.0}, {"payer": 1, "payee": 3, "stakes": 2.0}],
            "cancelled": False,
        },
        {"rule": "slam", "payments": [], "cancelled": True},
    ]


PHONE = {"width": 375, "height": 667}
IN_VIEW = """() => ['status', 'table', 'hand'].map(id => {
  const box = document.querySelector(`[data-testid=${id}]`).getBoundingClientRect();
  return [id, Math.round(box.top), Math.round(box.bottom)];
})"""
WRAPPED_CARD_NAMES = """() => [...document.querySelectorAll('.card .short')].filter(node => {
  const range = document.createRange(); range.selectNodeContents(node);
  return new Set([...range.getClientRects()].map(r => Math.round(r.top))).size > 1;
}).map(node => node.textContent)"""


def test_at_375_px_the_trick_the_status_and_the_hand_are_in_one_viewport(browser, live_server, tmp_path):
    context = browser.new_context(viewport=PHONE, base_url=live_server)
    try:
        page = context.new_page()
        page.set_default_timeout(20_000)
        for url in (
            "/play/madiao?seat=0&agents=random&seed=11&pause=0",  # the upcard is 10000T
            "/play/mao?seat=0&players=4&seed=5&pause=0",
        ):
            page.goto(url)
            pages.wait_ready(page)  # the focus is on the first card the person may play
            boxes = page.evaluate(IN_VIEW)
            assert all(top >= 0 and bottom <= PHONE["height"] for _, top, bottom in boxes), (url, boxes)
            assert page.evaluate(WRAPPED_CARD_NAMES) == []
            assert pages.horizontal_overflow(page) == 0
            pages.screenshot(page, tmp_path, f"{url.split('/')[2].split('?')[0]}-375", full_page=False)
    finally:
        context.close()


def test_a_refused_proposal_reads_as_the_rules_words():
    from mao_env import rules as mao_rules
    from tests.web.test_attacks import rule_choice_game

    game = rule_choice_game([(30, 2)])  # the person won and proposes a rule already in force
    game.move("rule 30", game.version)
    text = game.view()["frames"][-1]["text"]
    assert f"“{mao_rules.RULE_DESCRIPTIONS[30]}”" in text and "rule 30" not in text


def test_a_whole_madiao_match_log_is_kept():
    from madiao_mao_web.madiao.live import MadiaoGame

    game = MadiaoGame(watch=True, match=True, seed=4, agents="random")
    while not game.over:
        game.step(game.version)
    log = game.view()["log"]
    assert len(log) > 100 and log[0].startswith("Hand 1 dealt")  # the first hand's deal still there


def test_a_replay_plays_by_itself_to_the_end(page, live_server):
    from tests.web.test_table_attacks import Client

    client = Client(live_server)
    watched = client.start(game="madiao", watch=True, seed=6, agents="random")
    client.step_to_end(watched)
    page.goto(f"/replay?game={watched['id']}&pause=0")
    page.wait_for_selector('[data-testid="replay-step"]:has-text("step 0 of")')
    n_steps = int(pages.text_of(page, "replay-step").rsplit(" ", 1)[1])
    page.click('[data-testid="replay-play"]')
    page.wait_for_function(
        "n => document.querySelector('[data-testid=replay-step]').textContent === `step ${n} of ${n}`",
        arg=n_steps,
    )
    page.wait_for_selector('[data-testid="replay-play"][aria-pressed="false"]')
    assert pages.text_of(page, "replay-play") == "play"
    assert page.console_errors == []


def test_what_is_behind_a_payment_calls_the_viewer_you(page, tmp_path):
    """Seat 1 playing its first legal move each turn (seed 3): the settlement's phrases name the
    person's own seat "you", never "seat 1"."""
    page.goto("/play/madiao?seat=1&agents=heuristic&seed=3&pause=0")
    render = pages.wait_ready(page)
    for _ in range(pages.MAX_CLICKS):
        if page.locator('[data-testid="settlement"]').count():
            break
        moves = pages.legal_moves(page)
        render = pages.click_move(page, next((m for m in moves if m == "pass"), moves[0]), render)
    behind = page.locator('[data-testid="settlement"] [data-testid="behind"]').all_inner_texts()
    assert behind
    assert not any("seat 1" in text for text in behind), behind
    assert any(re.search(r"\byou\b", text) for text in behind), behind
    pages.screenshot(page, tmp_path, "madiao-settlement-behind")
    assert page.console_errors == []
