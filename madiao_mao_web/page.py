"""The app's one page: ``static/index.html`` with every registered game's part filled in (its
navigation link, its forms on the home page, its stylesheet and script), so that the page learns
the list of games from the server. Each game's files come from its web module (``STATIC``,
``SCRIPT``, ``STYLESHEET``, ``PLAY_FORM``, ``WATCH_FORM``, ``PAGE_TITLE``: see
``madiao_mao_web.games.WebGame``) and are served at ``/static/games/<game>/``.

The template's markers are HTML comments (``<!-- games: play forms -->``), so the template is a
page too (without games) and holds no inline script or style, as the security policy requires.
"""

from __future__ import annotations

import html
from importlib import resources
from importlib.resources.abc import Traversable

from madiao_mao.agents.registry import agent_names
from madiao_mao_web.games import web_modules

TEMPLATE = resources.files("madiao_mao_web") / "static" / "index.html"
AGENTS_FIELD = "{agents}"  # in a game's forms: its agent names, comma-separated


def game_pages() -> dict[str, Traversable]:
    """Every game's folder of page files, by game name (served at ``/static/games/<game>/``)."""
    return {name: module.STATIC for name, module in web_modules().items()}


def _and_list(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def render_page() -> str:
    """The page: the template with every registered game's links, forms, stylesheet and script."""
    titles, links, play_forms, watch_forms, stylesheets, scripts = [], [], [], [], [], []
    for name, module in web_modules().items():
        folder = f"/static/games/{name}"
        agents = html.escape(", ".join(agent_names(name)))
        titles.append(html.escape(module.PAGE_TITLE))
        links.append(f'<a href="/play/{name}">{html.escape(module.PAGE_TITLE)}</a>')
        play_forms.append(module.STATIC.joinpath(module.PLAY_FORM).read_text().replace(AGENTS_FIELD, agents))
        if module.WATCH_FORM is not None:
            watch_forms.append(
                module.STATIC.joinpath(module.WATCH_FORM).read_text().replace(AGENTS_FIELD, agents)
            )
        if module.STYLESHEET is not None:
            stylesheets.append(f'<link rel="stylesheet" href="{folder}/{module.STYLESHEET}">')
        scripts.append(f'<script src="{folder}/{module.SCRIPT}"></script>')
    page = TEMPLATE.read_text()
    for marker, text in (
        ("titles", _and_list(titles)),
        ("play links", " ".join(links)),
        ("play forms", "".join(play_forms)),
        ("watch forms", "".join(watch_forms)),
        ("stylesheets", "\n".join(stylesheets)),
        ("scripts", "\n".join(scripts)),
    ):
        page = page.replace(f"<!-- games: {marker} -->", text)
    return page
