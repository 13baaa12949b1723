"""Fixtures of the web app's tests: the app (TestClient), a live server, headless Chromium.

The web extra (fastapi, uvicorn, playwright) and Debian's ``chromium`` are optional locally: the
tests that need them skip without them, but FAIL when the environment variable ``CI`` is set
(CI must prove them; ``.ci/run`` installs both). Playwright drives the system Chromium through
``executable_path`` (its own browser download does not work on these machines).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator

import pytest

LOCAL_BASE_URL = "http://localhost"


def require(condition: bool, reason: str) -> None:
    """Skip locally, fail in CI, when something a web test needs is missing."""
    if condition:
        return
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (required when CI is set)")
    pytest.skip(reason)


def import_or_require(module: str):
    try:
        return __import__(module)
    except ImportError:
        require(False, f"{module} is not installed (pip install -e '.[web]')")


@pytest.fixture
def client():
    """A TestClient on a fresh app (its own store)."""
    import_or_require("fastapi")
    from fastapi.testclient import TestClient

    from madiao_mao_web.app import create_app

    # A Host of the app's allowlist (TestClient's default "testserver" is refused, as any other is).
    with TestClient(create_app(), base_url=LOCAL_BASE_URL) as test_client:
        yield test_client


def chromium_path() -> str | None:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


@contextlib.contextmanager
def serving_in_thread(app) -> Iterator[str]:
    """uvicorn serving ``app`` in a thread, on a free port of 127.0.0.1 (its base URL); stopped after."""
    import_or_require("uvicorn")
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while not server.started:
            if time.monotonic() > deadline or not thread.is_alive():
                raise RuntimeError("the test web server did not start")
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@pytest.fixture(scope="module")
def live_server() -> Iterator[str]:
    """uvicorn serving a fresh app in a thread, on a free port of 127.0.0.1; stopped after."""
    import_or_require("fastapi")
    from madiao_mao_web.app import create_app

    with serving_in_thread(create_app()) as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    path = chromium_path()
    require(path is not None, "Debian's chromium is not installed (apt-get install -y chromium)")
    import_or_require("playwright")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        # --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
        launched = playwright.chromium.launch(executable_path=path, headless=True, args=["--no-sandbox"])
        yield launched
        launched.close()


@pytest.fixture
def page(browser, live_server):
    """A fresh page (own browser context: own cookies and storage) that records console errors;
    the other seats' moves are shown at once (the page's stored pause is 0; ``?pause=`` overrides)."""
    context = browser.new_context(viewport={"width": 1100, "height": 1000}, base_url=live_server)
    context.add_init_script("localStorage.setItem('madiao-mao-pause', '0')")
    new_page = context.new_page()
    new_page.console_errors = []
    new_page.on("console", lambda m: new_page.console_errors.append(m.text) if m.type == "error" else None)
    new_page.on("pageerror", lambda e: new_page.console_errors.append(str(e)))
    new_page.set_default_timeout(20_000)
    yield new_page
    context.close()
    # Every browser test also shows that the page runs under the server's Content-Security-Policy.
    assert [text for text in new_page.console_errors if "Content Security Policy" in text] == []
