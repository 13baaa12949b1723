"""The FastAPI app behind ``madiao-mao serve``: one static page, a small JSON API.

Pages (all the same static page; its script reads the path and the query):

- ``/play/madiao?seat=0&agents=heuristic&seed=7&match=1`` — a Madiao hand (``match=1``: a match,
  every seat banker once, with running totals), you in ``seat`` (0..3) against ``agents`` (one
  registered name for the three other seats, or three comma-separated).
- ``/play/mao?seat=0&players=4&agents=base&rounds=3&seed=7&hand_size=5&calls=players`` — a Mao
  game of ``players`` (3..8) seats, ``rounds`` rounds; ``hand_size`` (1..10) deals that many cards
  a seat (short rounds); ``calls=players``: the players call faults (call windows), not the Master.
- ``/watch/madiao``, ``/watch/mao`` (the same options, without ``seat``) — agents in every seat,
  every hand open, stepped by the page one move at a time or at a chosen speed.
- ``/replay`` — open a record file (``match``/``evaluate --record`` for Madiao, a Mao record from
  ``mao_env.records`` or this app's "download record") and step through it;
  ``/replay?game=ID`` replays the finished game ``ID`` played here.

Page-only query parameters (never sent to the API): ``pause`` — milliseconds between the other
seats' moves as the page shows them (``pause=0``: at once, as the browser tests use).

API (JSON; every error is a 4xx/5xx whose ``detail`` says what is wrong, and changes nothing):

- ``POST /api/games`` ``{"game": "madiao"|"mao", "seat", "agents", "players", "rounds", "seed",
  "hand_size", "match", "calls", "watch"}`` -> ``{"id", "view"}``; ``GET /api/games/{id}`` ->
  ``{"id", "view"}``; ``POST /api/games/{id}/move`` ``{"action": "play 9S", "version": 3}`` ->
  ``{"id", "view"}`` (400 for an unreadable or illegal move, 409 when it is not your turn, the
  game is over or ``version`` is not the view's current one: the move was made on a stale view);
  ``POST /api/games/{id}/step`` ``{"version": 3}`` -> ``{"id", "view"}``: a watched game's next
  agent move; ``GET /api/games/{id}/record`` -> the Mao game's record.
- ``GET /api/rules`` -> the rules in words (Madiao's payments, Mao's rule families and library),
  which views name by id.
- ``POST /api/games/{id}/replay`` -> a replay of the finished game (409 while it is played), as:
- ``POST /api/replays`` (body: a record) -> ``{"id", "game", "n_steps", "seats", "frame"}``;
  ``GET /api/replays/{id}?step=K&view=all|SEAT`` -> ``{"frame"}``.

A view is only what the person's seat observes (see ``madiao_mao_web.games``), with ``version``
(moves applied so far) and ``frames`` (the public table after each move since the last request
that moved). Live games and replays share one bounded store (``madiao_mao_web.store``): 404 for
an unknown or expired id, 503 when too many are live.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from importlib import resources
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.concurrency import run_in_threadpool

from madiao_mao_web.games import GameOptionError, GameOverError, MadiaoGame, MaoGame, MoveError, rule_texts
from madiao_mao_web.replays import MadiaoReplay, MaoReplay, RecordError, load_record, make_replay, parse_view
from madiao_mao_web.store import GameStore, StoreFullError, UnknownGameError

MAX_BODY_BYTES = 4 * 1024 * 1024  # a long Madiao match record is well under 1 MB
GAME_PARAMETERS = {
    "madiao": ("seat", "agents", "seed", "match", "watch"),
    "mao": ("seat", "agents", "players", "rounds", "seed", "hand_size", "calls", "watch"),
}
STATIC = resources.files("madiao_mao_web") / "static"
RULE_TEXTS = rule_texts()


class StaleMoveError(RuntimeError):
    """A move or step made against an older version of the game than its current one (a 409)."""


def _json_body(raw: bytes, what: str) -> Any:
    if len(raw) > MAX_BODY_BYTES:
        raise HTTPException(413, f"{what} is larger than {MAX_BODY_BYTES} bytes")
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise HTTPException(400, f"{what} is not valid JSON: {error}") from None


def create_app(store: GameStore | None = None) -> FastAPI:
    """The app; ``store`` sets the bounds on live games (a fresh default store otherwise)."""
    store = store if store is not None else GameStore()
    app = FastAPI(title="madiao-mao", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.store = store
    app.mount("/static", StaticFiles(directory=str(STATIC)), name="static")

    def page() -> FileResponse:
        return FileResponse(str(STATIC / "index.html"), media_type="text/html")

    for path in ("/", "/play/madiao", "/play/mao", "/watch/madiao", "/watch/mao", "/replay"):
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

    @app.get("/api/rules")
    def rules() -> JSONResponse:
        return JSONResponse(RULE_TEXTS)

    @app.post("/api/games")
    async def new_game(request: Request) -> JSONResponse:
        body = _json_body(await request.body(), "the request body")
        if not isinstance(body, dict):
            raise HTTPException(400, "the request body must be a JSON object with 'game' and options")
        game = body.get("game")
        if game not in GAME_PARAMETERS:
            raise HTTPException(400, f"game must be 'madiao' or 'mao', got {game!r}")
        unknown = set(body) - {"game", *GAME_PARAMETERS[game]}
        if unknown:
            raise HTTPException(
                400,
                f"unknown parameter(s) {sorted(unknown)}; {game} takes {', '.join(GAME_PARAMETERS[game])}",
            )
        try:
            store.reserve()  # refuse before the agents are built and the first moves played
        except StoreFullError as error:
            raise HTTPException(503, str(error)) from None
        options = {key: body[key] for key in GAME_PARAMETERS[game] if key in body}
        factory = MadiaoGame if game == "madiao" else MaoGame
        try:
            live = await run_in_threadpool(lambda: factory(**options))
        except GameOptionError as error:
            raise HTTPException(400, str(error)) from None
        try:
            key = store.add(live)
        except StoreFullError as error:
            raise HTTPException(503, str(error)) from None
        return JSONResponse({"id": key, "view": live.view()})

    @app.get("/api/games/{key}")
    async def get_game(key: str) -> JSONResponse:
        entry = entry_of(key, (MadiaoGame, MaoGame))

        def look() -> dict[str, Any]:
            with entry.lock:  # a move of this game may be under way in another thread
                return entry.item.view()

        return JSONResponse({"id": key, "view": await run_in_threadpool(look)})

    def versioned(entry, body: dict[str, Any], act: Callable[[Any], None]) -> Callable[[], dict[str, Any]]:
        """``act`` on the game under its lock, then its view; refused if ``body`` names a stale version."""
        version = body.get("version")
        if version is not None and (isinstance(version, bool) or not isinstance(version, int)):
            raise HTTPException(400, f"version must be the integer of the view moved from, got {version!r}")

        def play() -> dict[str, Any]:
            with entry.lock:
                if version is not None and version != entry.item.version:
                    raise StaleMoveError(
                        f"the move was made on version {version} of the game, which is now at "
                        f"version {entry.item.version}: look at the table again"
                    )
                act(entry.item)
                return entry.item.view()

        return play

    @app.post("/api/games/{key}/move")
    async def move(key: str, request: Request) -> JSONResponse:
        entry = entry_of(key, (MadiaoGame, MaoGame))
        body = _json_body(await request.body(), "the move")
        if not isinstance(body, dict) or "action" not in body or set(body) - {"action", "version"}:
            raise HTTPException(400, 'a move is a JSON object {"action": "<action text>", "version": N}')
        try:
            view = await run_in_threadpool(versioned(entry, body, lambda game: game.move(body["action"])))
        except (GameOverError, StaleMoveError) as error:
            raise HTTPException(409, str(error)) from None
        except MoveError as error:
            raise HTTPException(400, str(error)) from None
        return JSONResponse({"id": key, "view": view})

    @app.post("/api/games/{key}/step")
    async def step(key: str, request: Request) -> JSONResponse:
        entry = entry_of(key, (MadiaoGame, MaoGame))
        body = _json_body(await request.body() or b"{}", "the step")
        if not isinstance(body, dict) or set(body) - {"version"}:
            raise HTTPException(400, 'a step is a JSON object {"version": N}')
        try:
            view = await run_in_threadpool(versioned(entry, body, lambda game: game.step()))
        except (GameOverError, StaleMoveError) as error:
            raise HTTPException(409, str(error)) from None
        except MoveError as error:
            raise HTTPException(400, str(error)) from None
        return JSONResponse({"id": key, "view": view})

    @app.post("/api/games/{key}/replay")
    async def replay_game(key: str) -> JSONResponse:
        entry = entry_of(key, (MadiaoGame, MaoGame))

        def record() -> dict[str, Any]:
            with entry.lock:
                if not entry.item.over:
                    raise GameOverError("the game is still being played: it is replayed once it is over")
                return entry.item.record()

        try:
            data = await run_in_threadpool(record)
        except GameOverError as error:
            raise HTTPException(409, str(error)) from None
        return await add_replay(data)

    @app.get("/api/games/{key}/record")
    async def record(key: str) -> JSONResponse:
        entry = entry_of(key, (MaoGame,))

        def write() -> dict[str, Any]:
            with entry.lock:
                return entry.item.record()

        data = await run_in_threadpool(write)
        return JSONResponse(data, headers={"Content-Disposition": 'attachment; filename="mao-game.json"'})

    async def add_replay(record: dict[str, Any]) -> JSONResponse:
        try:
            store.reserve()
            replay = await run_in_threadpool(lambda: make_replay(record))
            key = store.add(replay)
        except RecordError as error:
            raise HTTPException(400, str(error)) from None
        except StoreFullError as error:
            raise HTTPException(503, str(error)) from None
        return JSONResponse(
            {
                "id": key,
                "game": replay.game,
                "n_steps": replay.n_steps,
                "seats": replay.seats,
                "frame": replay.frame(0, None),
            }
        )

    @app.post("/api/replays")
    async def new_replay(request: Request) -> JSONResponse:
        raw = await request.body()
        if len(raw) > MAX_BODY_BYTES:
            raise HTTPException(413, f"the record is larger than {MAX_BODY_BYTES} bytes")
        try:
            record = await run_in_threadpool(lambda: load_record(raw))
        except RecordError as error:
            raise HTTPException(400, str(error)) from None
        return await add_replay(record)

    @app.get("/api/replays/{key}")
    async def replay_frame(key: str, step: str = "0", view: str = "all") -> JSONResponse:
        entry = entry_of(key, (MadiaoReplay, MaoReplay))
        replay = entry.item
        try:
            number = int(step)
        except ValueError:
            raise HTTPException(400, f"step must be an integer 0..{replay.n_steps}, got {step!r}") from None
        if not 0 <= number <= replay.n_steps:
            raise HTTPException(400, f"step must be an integer 0..{replay.n_steps}, got {number}")
        try:
            seat = parse_view(view, len(replay.seats))
        except RecordError as error:
            raise HTTPException(400, str(error)) from None
        return JSONResponse({"frame": replay.frame(number, seat)})

    return app


def serve(host: str = "127.0.0.1", port: int = 8000) -> None:
    """Run the app with uvicorn until interrupted (``madiao-mao serve``)."""
    import uvicorn

    uvicorn.run(create_app(), host=host, port=port, log_level="info")
