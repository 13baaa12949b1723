"""The third game (High card, ``tests/tiny_game``) is served by the web app from its registry entry
alone (issue 22): its page, its API games and replays, played by clicking in a real browser, and
never a hidden card of another seat in a live view."""

from __future__ import annotations

import pytest

from madiao_mao.games import register_game, unregister_game
from tests.tiny_game import GAME

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", autouse=True)
def tiny_registered():
    """Registered before the module's app is made (the app reads the registry when it is made)."""
    register_game(GAME)
    yield
    unregister_game(GAME.name)


def test_its_page_and_api_game_keep_the_other_cards_hidden_until_the_end(client):
    home = client.get("/").text
    assert 'action="/play/tiny"' in home and 'data-agents="tiny">random, threshold<' in home
    assert client.get("/play/tiny").status_code == 200
    response = client.post("/api/games", json={"game": "tiny", "seat": 1, "seed": 5})
    assert response.status_code == 200, response.text
    key, view = response.json()["id"], response.json()["view"]
    assert view["to_act"] == 1 and view["moves"][0] is not None  # seat 0 (an agent) has moved
    assert [len(hand) for hand in view["hands"]] == [0, 1, 0]
    assert client.get(f"/api/games/{key}/record").status_code == 404  # the game offers no record file
    bad = client.post(f"/api/games/{key}/move", json={"action": "check", "version": view["version"]})
    assert bad.status_code == 400 and "fold, play, raise" in bad.text
    moved = client.post(f"/api/games/{key}/move", json={"action": "raise", "version": view["version"]})
    assert moved.status_code == 200, moved.text
    final = moved.json()["view"]
    assert final["over"] and [len(hand) for hand in final["hands"]] == [1, 1, 1]
    assert sum(final["payoffs"]) == 0
    replay = client.post(f"/api/games/{key}/replay", json={})
    assert replay.status_code == 200, replay.text
    frame = client.get(f"/api/replays/{replay.json()['id']}?step=3&view=1").json()["frame"]
    assert frame["moves"][1] == "raise" and [c is None for c in frame["cards"]] == [True, False, True]


def test_it_is_played_by_clicking_and_replayed(page):
    page.goto("/play/tiny?seed=3&pause=0")
    page.wait_for_selector("body[data-state=ready]")
    render = page.evaluate("Number(document.body.dataset.render)")
    page.click("button[data-action=play]")
    page.wait_for_function(
        "n => document.body.dataset.state === 'ready' && Number(document.body.dataset.render) > n", arg=render
    )
    assert "Game over" in page.locator('[data-testid="status"]').inner_text()
    assert "play" in page.locator('[data-testid="table"]').inner_text()
    page.click('[data-testid="replay-link"]')
    page.wait_for_selector('[data-testid="replay-step"]')
    assert page.console_errors == []
