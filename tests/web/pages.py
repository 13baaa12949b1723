"""What the browser tests do on the page: wait for it, click, save screenshots.

The page marks ``body[data-state]`` "busy" while it talks to the server or shows the other seats'
moves, "ready" after, and counts every ready render in ``body[data-render]``; a test waits for a
render newer than the one it saw, so it never reads a half-drawn table.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

MAX_CLICKS = 300  # far above what a Madiao match or a short Mao round needs: the loops always end


def screenshot(page, tmp_path: Path, name: str, full_page: bool = True) -> Path:
    """Save a PNG (to the test's tmp dir; also to ``$MADIAO_MAO_SCREENSHOTS`` when set: that is how
    ``docs/img/*.png`` are made)."""
    path = tmp_path / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    assert path.stat().st_size > 10_000  # a rendered page, not a blank one
    copy_to = os.environ.get("MADIAO_MAO_SCREENSHOTS")
    if copy_to:
        Path(copy_to).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(copy_to) / path.name)
    return path


def wait_ready(page, after_render: int | None = None) -> int:
    """Wait until the page has rendered (a render newer than ``after_render``); its number."""
    if after_render is None:
        page.wait_for_selector("body[data-state=ready]")
    else:
        page.wait_for_function(
            "n => document.body.dataset.state === 'ready' && Number(document.body.dataset.render) > n",
            arg=after_render,
        )
    return int(page.evaluate("Number(document.body.dataset.render || 0)"))


def click(page, selector: str, render: int) -> int:
    page.click(selector)
    return wait_ready(page, render)


def click_move(page, action: str, render: int) -> int:
    return click(page, f'button[data-action="{action}"]', render)


def legal_moves(page) -> list[str]:
    return page.eval_on_selector_all("[data-action]", "nodes => nodes.map(n => n.dataset.action)")


def text_of(page, testid: str) -> str:
    return page.locator(f'[data-testid="{testid}"]').inner_text()


def horizontal_overflow(page) -> int:
    """How many pixels the page is wider than the window (0: nothing to scroll sideways)."""
    return int(page.evaluate("document.documentElement.scrollWidth - window.innerWidth"))
