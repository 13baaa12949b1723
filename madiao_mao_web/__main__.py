"""``python -m madiao_mao_web [--host H] [--port P] [--allow-host NAME]``: the web app without the
CLI (whose other commands need the train extra); ``madiao-mao serve`` is the same server."""

from __future__ import annotations

import argparse

from madiao_mao_web.security import host_name


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m madiao_mao_web", description=__doc__.split(";")[0])
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: this machine only)")
    parser.add_argument("--port", type=int, default=8000, help="TCP port (default 8000)")
    parser.add_argument(
        "--allow-host",
        action="append",
        type=host_name,
        default=[],
        metavar="NAME",
        help="a Host name the app also answers to (repeatable; the localhost names and --host always)",
    )
    args = parser.parse_args(argv)
    if not 1 <= args.port <= 65535:
        parser.error(f"--port must be 1..65535, got {args.port}")
    # Imported here: keeps FastAPI off this module's import path.
    from madiao_mao_web.app import serve

    print(f"madiao-mao web app on http://{args.host}:{args.port}/ (Ctrl-C stops it)")
    serve(host=args.host, port=args.port, allow_hosts=args.allow_host)


if __name__ == "__main__":
    main()
