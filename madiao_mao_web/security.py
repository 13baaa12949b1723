"""The web app's trust boundary: who may send requests, what bodies are read, what every response says.

- :func:`allowed_hosts`: the ``Host`` names the app answers to (the localhost names, the bound
  address, names given on ``serve --allow-host``), enforced by Starlette's ``TrustedHostMiddleware``
  so that a DNS-rebinding page (an attacker's name pointed at 127.0.0.1) is refused.
- :class:`BrowserGuard`: refuses requests a browser sends on behalf of another site (``Origin``,
  ``Sec-Fetch-Site``) and puts the security headers on every response, refusals included.
- :func:`read_json_body`: a request body read up to a size limit (413), only as
  ``application/json`` (415), parsed strictly (400 for NaN/Infinity, numbers out of range,
  over-long integers and deep nesting, never a 500).
- :func:`echo`: user input quoted in an error message, cut short.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

import numpy as np
from fastapi import HTTPException, Request
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

LOCAL_HOSTS = ("localhost", "127.0.0.1", "[::1]")
HOST_NAME = re.compile(r"\[[0-9a-f:.]+\]|[a-z0-9]([a-z0-9.-]*[a-z0-9])?")
#: Addresses that mean "every interface": not a name a browser sends in ``Host``.
WILDCARD_ADDRESSES = ("", "0.0.0.0", "::", "[::]")
#: Sec-Fetch-Site values of a request the app's own page (or the person, typing a URL) made.
FIRST_PARTY_SITES = ("same-origin", "none")
ECHO_CHARS = 80
MAX_JSON_DEPTH = 32  # a record is 4 levels deep; nothing the app reads nests more than 6
JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')  # a string literal, escapes included
MAX_INTEGER_DIGITS = 40  # seeds are below 2**64 (20 digits); longer integers are refused unparsed

SECURITY_HEADERS = {
    # Only the app's own script and stylesheet run (the page has no inline script or style), it
    # talks to its own origin only, and no other site may frame it (clickjacking).
    "content-security-policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
        "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    ),
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",  # frame-ancestors for browsers without CSP level 2
    "referrer-policy": "no-referrer",
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
    "permissions-policy": "camera=(), microphone=(), geolocation=(), payment=(), usb=()",
}
API_HEADERS = {"cache-control": "no-store"}  # a seat's view is not kept by caches


def echo(value: Any, limit: int = ECHO_CHARS) -> str:
    """``repr(value)`` for an error message, cut to ``limit`` characters (a 4 MB action text is
    not sent back whole)."""
    if isinstance(value, str) and len(value) > limit:
        return repr(value[:limit]) + f"... ({len(value)} characters)"
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"


def host_name(text: str) -> str:
    """``text`` as a ``Host`` name (lower case, an IPv6 address in brackets); ``ValueError`` if it
    is not a host name or address (a port, a path or a wildcard is not)."""
    name = text.strip().lower()
    if ":" in name and not name.startswith("["):
        name = f"[{name}]"  # an IPv6 address as bound is bracketed in Host
    if not HOST_NAME.fullmatch(name):
        raise ValueError(f"not a host name or address: {echo(text)}")
    return name


def allowed_hosts(bound_host: str, extra: Iterable[str] = ()) -> list[str]:
    """The ``Host`` names to answer: the localhost names, ``bound_host`` (unless it is a wildcard
    address, which no browser sends) and ``extra`` (LAN names when serving beyond this machine)."""
    names = list(LOCAL_HOSTS)
    if bound_host.strip().lower() not in WILDCARD_ADDRESSES:
        names.append(host_name(bound_host))
    names.extend(host_name(name) for name in extra)
    return list(dict.fromkeys(names))


class BrowserGuard:
    """ASGI middleware: same-origin requests only, security headers on every response.

    Starlette has no middleware for either (``CORSMiddleware`` adds headers for the origins it
    allows but still runs a cross-site "simple" request), hence this one. A request is refused
    with 403 when a browser marks it as sent from another site: ``Sec-Fetch-Site`` other than
    ``same-origin``/``none`` (another port of localhost is ``same-site``: refused too), or an
    ``Origin`` whose host differs from ``Host``. The one exception is a top-level navigation
    (a ``GET`` link followed from elsewhere), which only shows the page. Clients that send
    neither header (curl, scripts) are not browsers acting for another site and pass.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        extra = API_HEADERS if scope["path"].startswith("/api/") else {}

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {name.lower() for name, _ in headers}
                for name, value in (SECURITY_HEADERS | extra).items():
                    if name.encode() not in present:
                        headers.append((name.encode(), value.encode()))
                message = {**message, "headers": headers}
            await send(message)

        refusal = self.refusal(scope)
        if refusal is not None:
            await JSONResponse({"detail": refusal}, status_code=403)(scope, receive, send_with_headers)
            return
        await self.app(scope, receive, send_with_headers)

    @staticmethod
    def refusal(scope: Scope) -> str | None:
        """Why this request is refused as cross-site, or None."""
        headers = Headers(scope=scope)
        navigation = scope["method"] in ("GET", "HEAD") and headers.get("sec-fetch-mode") == "navigate"
        site = headers.get("sec-fetch-site")
        if site is not None and site not in FIRST_PARTY_SITES and not navigation:
            return f"cross-site request refused (Sec-Fetch-Site: {echo(site, 20)}); use the app's own page"
        origin = headers.get("origin")
        if origin is not None and not navigation:
            origin_host = urlsplit(origin).netloc.lower() if origin != "null" else "null"
            # Compared with Host, not with a scheme too: behind a TLS proxy the page is https.
            if origin_host != headers.get("host", "").lower():
                return f"request from another origin ({echo(origin, 60)}) refused; use the app's own page"
        return None


class _BadNumberError(ValueError):
    pass


def _integer(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INTEGER_DIGITS:
        raise _BadNumberError(f"an integer of {len(text)} digits (at most {MAX_INTEGER_DIGITS})")
    return int(text)


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise _BadNumberError(f"the number {echo(text, 40)} is out of range")
    return number


def _no_constant(name: str) -> Any:
    raise _BadNumberError(f"{name} is not a JSON number")


def nesting_depth(raw: bytes) -> int:
    """How deep the arrays and objects of the JSON text ``raw`` nest, read from its brackets
    outside strings (vectorised: 4 MB in about 0.1 s, where walking a parsed value of a million
    lists took seconds, and json.loads itself recurses once per level)."""
    codes = np.frombuffer(JSON_STRING.sub(b"", raw), np.uint8)
    opening = (codes == ord("[")) | (codes == ord("{"))
    closing = (codes == ord("]")) | (codes == ord("}"))
    steps = opening.astype(np.int32) - closing
    return int(np.cumsum(steps).max(initial=0))


def parse_json(raw: bytes, what: str) -> Any:
    """``raw`` as strict JSON: ``HTTPException(400)`` naming ``what`` for anything else."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise HTTPException(400, f"{what} is not UTF-8 text") from None
    if nesting_depth(raw) > MAX_JSON_DEPTH:
        raise HTTPException(400, f"{what} nests deeper than {MAX_JSON_DEPTH} levels")
    try:
        value = json.loads(text, parse_int=_integer, parse_float=_finite_float, parse_constant=_no_constant)
    except RecursionError:  # not reached after the depth check; kept as the last line of defence
        raise HTTPException(400, f"{what} nests deeper than {MAX_JSON_DEPTH} levels") from None
    except _BadNumberError as error:
        raise HTTPException(400, f"{what} is refused: {error}") from None
    except ValueError as error:  # JSONDecodeError: its message gives a position, not the text
        raise HTTPException(400, f"{what} is not valid JSON: {error}") from None
    return value


async def read_json_body(request: Request, what: str, max_bytes: int) -> Any:
    """The body of ``request``, parsed strictly: 415 unless it is ``application/json``, 413 when
    longer than ``max_bytes`` (known from ``Content-Length`` before reading, or while reading: an
    unannounced long body is not read whole), 400 when not strict JSON.

    Hand-written because neither Starlette nor uvicorn limits a request body's size (Starlette's
    limits are for multipart forms only)."""
    media_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media_type != "application/json":
        raise HTTPException(
            415, f"{what} must be sent with Content-Type: application/json (got {echo(media_type, 40)})"
        )
    declared = request.headers.get("content-length", "")
    if declared.isascii() and declared.isdigit() and int(declared) > max_bytes:
        raise HTTPException(413, f"{what} is larger than {max_bytes} bytes")
    chunks = bytearray()
    async for chunk in request.stream():
        chunks += chunk
        if len(chunks) > max_bytes:
            raise HTTPException(413, f"{what} is larger than {max_bytes} bytes")
    return parse_json(bytes(chunks), what)
