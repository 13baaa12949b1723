"""The FastAPI app behind ``madiao-mao serve``: one page, a small JSON API, for every game of the
registry (``madiao_mao.games``); what is particular to a game comes from its web module
(``madiao_mao_web.games.WebGame``).

Pages (all the same page, made once from ``static/index.html`` and the games' forms and scripts;
its script reads the path and the query):

- ``/play/<game>?seat=0&agents=...&seed=7&...`` — a game of ``<game>`` with you in ``seat``
  against ``agents`` (one registered name for the other seats, or one per seat, comma-separated);
  the other options are the game's (its live game class's ``parameters`` and docstring).
- ``/watch/<game>`` (the same options, without ``seat``) — agents in every seat, every hand open,
  stepped by the page one move at a time or at a chosen speed.
- ``/replay`` — open a record file (written by the CLI's ``--record`` or this app's "download
  record") and step through it; ``/replay?game=ID`` replays the finished game ``ID`` played here.

Page-only query parameters (never sent to the API): ``pause`` — milliseconds between the other
seats' moves as the page shows them (``pause=0``: at once, as the browser tests use).

API (JSON in, JSON out; every error is a 4xx whose ``detail`` says what is wrong, quotes at most
a short piece of the input, and changes nothing):

- ``POST /api/games`` ``{"game": <a registered game>, <the game's options>}`` -> ``{"id", "view"}``
  (400 naming a bad parameter; 409 for a watched game sharing the dealt cards of a game with a
  person's seat still being played here (at any table size or hand size: ``LiveGame.deal``), or
  the other way round; 503 when every live game, or every game of this client, was played in the
  last few minutes: ``madiao_mao_web.store``). ``GET /api/games/{id}`` -> ``{"id", "view"}``.
- ``POST /api/games/{id}/move`` ``{"action": "play 9S", "version": 3}`` -> ``{"id", "view"}``.
  ``action`` is one of the view's ``legal`` texts; ``version`` is the ``version`` of the view the
  move was chosen from (a counter of the person's moves, 0 at the start). 400: an unreadable or
  illegal move, a missing or non-integer version, a body with other keys, a watched game; 409:
  the version is not the game's current one (a stale or double-sent move: nothing is played;
  fetch the view again) or the game is over.
- ``POST /api/games/{id}/step`` ``{"version": 3}`` -> ``{"id", "view"}``: a watched game's next
  agent move (the version counts the steps; 400 for a game with a person's seat, 409 as a move).
- ``GET /api/games/{id}/record`` -> the game's record once the game is over, for the games that
  offer it (``LiveGame.record_file``; 404 for the others); 409 while it is being played (the
  record holds every hand and secret) or while a game of the same deal is.
- ``POST /api/games/{id}/replay`` ``{}`` -> a replay of the finished game, as ``POST /api/replays``
  answers (409 while it, or a game of the same deal, is being played).
- ``GET /api/rules`` -> every game's rules in words, by game name, which views name by id.
- ``POST /api/replays`` (body: a record) -> ``{"id", "game", "n_steps", "seats", "frame"}``; 400 for
  a record that does not read or replay, 422 for one longer than a replay holds or too slow to
  replay, 409 for a record that could be a game still being played here (its game's
  ``record_deal``). ``GET /api/replays/{id}?step=K&view=all|SEAT`` -> ``{"frame"}`` (400 for a bad
  step or view).

Every request: a body only as ``Content-Type: application/json`` (415 otherwise), at most
``MAX_REQUEST_BYTES`` (a record: ``MAX_BODY_BYTES``; 413 beyond), strict JSON (400 for
NaN/Infinity, out-of-range numbers, integers longer than 40 digits, nesting deeper than 32);
numbers in a query or a parameter given as text are ASCII digits; a ``Host`` of the allowlist
(400 otherwise: DNS rebinding); no request a browser sends for another site (403: ``Origin`` /
``Sec-Fetch-Site``, top-level links excepted); security headers on every response (see
``madiao_mao_web.security``). 404 for an unknown or expired id.

A view is only what the person's seat observes (see ``madiao_mao_web.games``), with ``version``
and ``frames`` (the public table after each move since the last request that moved). Only a
watched game, agents in every seat from its creation on, shows every hand while it is played; no
route turns a game with a person's seat into a watched one, and no full table of a live game
with a person's seat is given by any route, even through another game or a record of the same
deal (the person who chose the seed of such a game could deal it with the env, but not here).
Live games and replays are kept apart in one bounded store (``madiao_mao_web.store``): a client
holds a bounded number of games (its burst evicts its own), and new games evict finished and idle
games, those of the client holding the most first, never one moved (or stepped) in the last few
minutes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from importlib import resources
from typing import Any

import anyio
from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.trustedhost import TrustedHostMiddleware

from madiao_mao_web.games import (
    GameLiveError,
    GameOptionError,
    GameOverError,
    LiveGame,
    MoveError,
    StaleMoveError,
    rule_texts,
    web_modules,
)
from madiao_mao_web.page import game_pages, render_page
from madiao_mao_web.replays import (
    RecordError,
    RecordTooLargeError,
    Replay,
    load_record,
    make_replay,
    parse_step,
    parse_view,
    record_deal,
)
from madiao_mao_web.security import BrowserGuard, allowed_hosts, echo, read_json_body
from madiao_mao_web.store import GameStore, StoreFullError, UnknownGameError

MAX_BODY_BYTES = 4 * 1024 * 1024  # a record: the built-in games' longest are well under 1 MB
MAX_REQUEST_BYTES = 16 * 1024  # a new game's options or a move: a few hundred bytes
MAX_DETAIL_CHARS = 2000  # an error's detail: the longest list of legal moves fits
REPLAY_BUILDS_AT_ONCE = 2  # uploads replaying at the same time (each costs up to MAX_BUILD_SECONDS)
MOVE_KEYS = {"action", "version"}
STEP_KEYS = {"version"}
STATIC = resources.files("madiao_mao_web") / "static"


def create_app(store: GameStore | None = None, hosts: Iterable[str] | None = None) -> FastAPI:
    """The app; ``store`` sets the bounds on live games (a fresh default store otherwise);
    ``hosts`` the ``Host`` names it answers to (default: this machine's localhost names)."""
    store = store if store is not None else GameStore()
    games = {name: module.LIVE_GAME for name, module in web_modules().items()}
    rules_in_words = rule_texts()
    page_html = render_page()
    app = FastAPI(title="madiao-mao", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.store = store
    # add_middleware puts the last one added outermost: the guard's headers reach host refusals too.
    app.add_middleware(
        TrustedHostMiddleware, allowed_hosts=list(hosts) if hosts is not None else allowed_hosts("127.0.0.1")
    )
    app.add_middleware(BrowserGuard)
    # Each game's page files first: the generic folder's mount would take their paths too.
    for name, folder in game_pages().items():
        app.mount(f"/static/games/{name}", StaticFiles(directory=str(folder)), name=f"static-{name}")
    app.mount("/static", StaticFiles(directory=str(STATIC)), name="static")
    replay_builds = anyio.CapacityLimiter(REPLAY_BUILDS_AT_ONCE)

    @app.exception_handler(StarletteHTTPException)
    async def short_detail(request: Request, error: StarletteHTTPException) -> JSONResponse:
        # The one backstop for messages quoting input from below the app (the env's parsers).
        detail = error.detail if isinstance(error.detail, str) else str(error.detail)
        if len(detail) > MAX_DETAIL_CHARS:
            detail = detail[:MAX_DETAIL_CHARS] + " ... (cut)"
        return JSONResponse({"detail": detail}, status_code=error.status_code, headers=error.headers)

    def page() -> HTMLResponse:
        return HTMLResponse(page_html)

    paths = ["/", "/replay"]
    for name, live_game in games.items():
        paths.append(f"/play/{name}")
        if "watch" in live_game.parameters:
            paths.append(f"/watch/{name}")
    for path in paths:
        app.add_api_route(path, page, methods=["GET"], include_in_schema=False)

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon() -> Response:
        return FileResponse(str(STATIC / "favicon.svg"), media_type="image/svg+xml")

    def entry_of(key: str, kind: type | tuple[type, ...]):
        try:
            entry = store.get(key)
        except UnknownGameError:
            raise HTTPException(404, "no live game or replay with this id (unknown or expired)") from None
        if not isinstance(entry.item, kind):
            raise HTTPException(404, "no live game or replay of that kind with this id")
        return entry

    def deal_in_play(deal: frozenset[str], watched: bool) -> bool:
        """Whether a live game sharing a fingerprint of ``deal`` (``LiveGame.deal``), watched
        (every hand open) or with a person's seat as ``watched`` says, is in the store."""
        live = [item for item in store.items() if isinstance(item, LiveGame)]
        return any(
            not game.over and game.watch == watched and not game.deal.isdisjoint(deal) for game in live
        )

    def refuse_twin_of_seated(deal: frozenset[str]) -> None:
        """409 when a game with a person's seat and this deal is being played: a record, a replay
        or a watched game of the deal would show that game's full table."""
        if deal_in_play(deal, watched=False):
            raise HTTPException(
                409,
                "a game with the same deal is still being played here by a person: its full table "
                "is shown once it is over",
            )

    @app.get("/api/rules")
    def rules() -> JSONResponse:
        return JSONResponse(rules_in_words)

    @app.post("/api/games")
    async def new_game(request: Request) -> JSONResponse:
        body = await read_json_body(request, "the request body", MAX_REQUEST_BYTES)
        if not isinstance(body, dict):
            raise HTTPException(400, "the request body must be a JSON object with 'game' and options")
        game = body.get("game")
        if not isinstance(game, str) or game not in games:
            raise HTTPException(400, f"game must be {one_of(list(games))}, got {echo(game)}")
        parameters = games[game].parameters
        unknown = set(body) - {"game", *parameters}
        if unknown:
            raise HTTPException(
                400,
                f"unknown parameter(s) {echo(sorted(unknown))}; {game} takes {', '.join(parameters)}",
            )
        client = request.client.host if request.client is not None else ""
        try:
            store.reserve(client)  # refuse before the agents are built and the first moves played
        except StoreFullError as error:
            raise HTTPException(503, str(error)) from None
        options = {key: body[key] for key in parameters if key in body}
        factory = games[game]
        try:
            live = await run_in_threadpool(lambda: factory(**options))
        except GameOptionError as error:
            raise HTTPException(400, str(error)) from None
        if live.watch:
            refuse_twin_of_seated(live.deal)
        elif deal_in_play(live.deal, watched=True):
            raise HTTPException(
                409,
                "a watched game with the same deal (every hand open) is still being played here: "
                "choose another seed, or play this one once it is over",
            )
        try:
            key = store.add(live, client=client)
        except StoreFullError as error:
            raise HTTPException(503, str(error)) from None
        return JSONResponse({"id": key, "view": live.view()})

    @app.get("/api/games/{key}")
    async def get_game(key: str) -> JSONResponse:
        entry = entry_of(key, LiveGame)

        def look() -> dict[str, Any]:
            with entry.lock:  # a move of this game may be under way in another thread
                return entry.item.view()

        return JSONResponse({"id": key, "view": await run_in_threadpool(look)})

    @app.post("/api/games/{key}/move")
    async def move(key: str, request: Request) -> JSONResponse:
        entry = entry_of(key, LiveGame)
        body = await read_json_body(request, "the move", MAX_REQUEST_BYTES)
        if not isinstance(body, dict) or set(body) != MOVE_KEYS:
            raise HTTPException(
                400, 'a move is a JSON object {"action": "<action text>", "version": <the view\'s version>}'
            )
        return await played(key, entry, lambda game: game.move(body["action"], body["version"]))

    @app.post("/api/games/{key}/step")
    async def step(key: str, request: Request) -> JSONResponse:
        entry = entry_of(key, LiveGame)
        body = await read_json_body(request, "the step", MAX_REQUEST_BYTES)
        if not isinstance(body, dict) or set(body) != STEP_KEYS:
            raise HTTPException(400, 'a step is a JSON object {"version": <the view\'s version>}')
        return await played(key, entry, lambda game: game.step(body["version"]))

    async def played(key: str, entry, act: Callable[[Any], None]) -> JSONResponse:
        """``act`` on the game (a move or a step) and its view after; the game is kept a while."""

        def play() -> dict[str, Any]:
            # The version is compared under the game's lock: of moves sent at once against one
            # version, the first plays and the others find a newer version (409).
            with entry.lock:
                act(entry.item)
                store.mark_moved(entry)
                return entry.item.view()

        try:
            view = await run_in_threadpool(play)
        except (GameOverError, StaleMoveError) as error:
            raise HTTPException(409, str(error)) from None
        except MoveError as error:
            raise HTTPException(400, str(error)) from None
        return JSONResponse({"id": key, "view": view})

    @app.get("/api/games/{key}/record")
    async def record(key: str) -> JSONResponse:
        entry = entry_of(key, LiveGame)
        file_name = entry.item.record_file
        if file_name is None:
            raise HTTPException(404, "no live game or replay of that kind with this id")
        data = await finished_record(entry)
        return JSONResponse(data, headers={"Content-Disposition": f'attachment; filename="{file_name}"'})

    async def finished_record(entry) -> dict[str, Any]:
        """The record of the finished game of ``entry``: 409 while it, or a game of its deal with
        a person's seat, is being played."""

        def write() -> dict[str, Any]:
            with entry.lock:
                return entry.item.record()

        try:
            data = await run_in_threadpool(write)
        except GameLiveError as error:
            raise HTTPException(409, str(error)) from None
        refuse_twin_of_seated(entry.item.deal)
        return data

    @app.post("/api/games/{key}/replay")
    async def replay_game(key: str, request: Request) -> JSONResponse:
        entry = entry_of(key, LiveGame)
        body = await read_json_body(request, "the request body", MAX_REQUEST_BYTES)
        if body != {}:
            raise HTTPException(400, "a replay of a game played here is asked with an empty JSON object {}")
        return await add_replay(await finished_record(entry))

    @app.post("/api/replays")
    async def new_replay(request: Request) -> JSONResponse:
        body = await read_json_body(request, "the record", MAX_BODY_BYTES)
        try:
            record = load_record(body)
        except RecordError as error:
            raise HTTPException(400, str(error)) from None
        deal = record_deal(record)
        if deal is not None:
            refuse_twin_of_seated(deal)
        return await add_replay(record)

    async def add_replay(record: dict[str, Any]) -> JSONResponse:
        """A replay of ``record`` (checked by ``load_record``) in the store's replays."""

        def build():
            replay = make_replay(record)
            return replay, replay.frame(0, None)  # before the store holds it: no one else steps it

        try:
            replay, first = await anyio.to_thread.run_sync(build, limiter=replay_builds)
        except RecordTooLargeError as error:
            raise HTTPException(422, str(error)) from None
        except RecordError as error:
            raise HTTPException(400, str(error)) from None
        key = store.add(replay, replay=True)
        return JSONResponse(
            {"id": key, "game": replay.game, "n_steps": replay.n_steps, "seats": replay.seats, "frame": first}
        )

    @app.get("/api/replays/{key}")
    async def replay_frame(key: str, step: str = "0", view: str = "all") -> JSONResponse:
        entry = entry_of(key, Replay)
        replay = entry.item
        try:
            number = parse_step(step, replay.n_steps)
            seat = parse_view(view, len(replay.seats))
        except RecordError as error:
            raise HTTPException(400, str(error)) from None

        def show() -> dict[str, Any]:
            with entry.lock:  # a replay may step its one env to the frame
                return replay.frame(number, seat)

        return JSONResponse({"frame": await run_in_threadpool(show)})

    return app


def one_of(names: list[str]) -> str:
    """ "'a' or 'b'", "'a', 'b' or 'c'": the choices an error message lists."""
    quoted = [f"'{name}'" for name in names]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


def serve(host: str = "127.0.0.1", port: int = 8000, allow_hosts: Iterable[str] = ()) -> None:
    """Run the app with uvicorn until interrupted (``madiao-mao serve``); it answers requests for
    the localhost names, ``host`` and the names in ``allow_hosts``."""
    # Imported here: keeps uvicorn off this module's import path.
    import uvicorn

    uvicorn.run(create_app(hosts=allowed_hosts(host, allow_hosts)), host=host, port=port, log_level="info")
