"""`agui-mcp-bridge serve` (HTTP: pages and MCP) and `agui-mcp-bridge stdio` (MCP on stdin/stdout)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys

import uvicorn

from bridge.app import create_app
from bridge.config import Settings, add_arguments, from_arguments

# Everything uvicorn says goes to stderr: in stdio mode stdout belongs to MCP alone.
LOG_CONFIG = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"stderr": {"class": "logging.StreamHandler", "stream": "ext://sys.stderr", "formatter": "plain"}},
    "loggers": {"uvicorn": {"handlers": ["stderr"], "propagate": False},
                "uvicorn.access": {"handlers": ["stderr"], "propagate": False},
                "bridge": {"handlers": ["stderr"], "propagate": False}},
}


def http_server(settings: Settings, *, access_log: bool) -> uvicorn.Server:
    app = create_app(settings)
    config = uvicorn.Config(app, host=settings.host, port=settings.port, log_config=LOG_CONFIG,
                            log_level=settings.log_level, access_log=access_log, ws_max_size=16 * (1 << 20),
                            timeout_graceful_shutdown=2)
    return uvicorn.Server(config)


async def serve_stdio(settings: Settings) -> None:
    from mcp.server.stdio import stdio_server

    http = http_server(settings, access_log=False)
    web = asyncio.create_task(http.serve())
    while not http.started:  # the MCP rooms run inside the app's lifespan
        if web.done():
            raise SystemExit(f"agui-mcp-bridge: could not serve pages on {settings.host}:{settings.port}")
        await asyncio.sleep(0.01)
    room = http.config.app.state.mcp.server(settings.room)
    try:
        async with stdio_server() as (read, write):
            await room.server.run(read, write, room.server.create_initialization_options())
    finally:
        http.should_exit = True
        await web


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="agui-mcp-bridge", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    for name, help_text in (("serve", "serve pages and MCP (Streamable HTTP at /mcp) over HTTP"),
                            ("stdio", "serve MCP on stdin/stdout; pages still connect over HTTP")):
        add_arguments(commands.add_parser(name, help=help_text))
    args = parser.parse_args(argv)
    settings = from_arguments(args)
    logging.basicConfig(stream=sys.stderr, level=settings.log_level.upper())
    if args.command == "serve":
        print(f"agui-mcp-bridge: demo http://{settings.host}:{settings.port}/  MCP http://{settings.host}:"
              f"{settings.port}/mcp", file=sys.stderr)
        http_server(settings, access_log=True).run()
    else:
        asyncio.run(serve_stdio(settings))


if __name__ == "__main__":
    main()
