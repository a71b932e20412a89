"""`agui-mcp-bridge serve` (HTTP: pages and MCP) and `agui-mcp-bridge stdio` (MCP on stdin/stdout)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import logging.config
import sys

from bridge import __version__
from bridge.config import Settings, UnusableSettings, add_arguments, from_arguments
from bridge.server import PortInUse, RunningServer, log_config, serve, serve_stdio

EXIT_USAGE = 2


def main(argv: list[str] | None = None) -> None:
    try:
        args, settings = _parse(argv)
    except UnusableSettings as exc:  # from a flag or an environment variable: one line, no traceback
        print(f"agui-mcp-bridge: {exc}", file=sys.stderr)
        sys.exit(EXIT_USAGE)
    logging.config.dictConfig(log_config(settings.log_json))
    logging.getLogger().setLevel(settings.log_level.upper())
    try:
        if args.command == "serve":
            asyncio.run(serve(settings, ready=_announce))
        else:
            asyncio.run(serve_stdio(settings))
    except PortInUse as exc:
        print(f"agui-mcp-bridge: {exc.strerror}", file=sys.stderr)
        sys.exit(EXIT_USAGE)
    except UnusableSettings as exc:
        print(f"agui-mcp-bridge: {exc}", file=sys.stderr)
        sys.exit(EXIT_USAGE)
    except KeyboardInterrupt:
        pass


def _parse(argv: list[str] | None) -> tuple[argparse.Namespace, Settings]:
    parser = argparse.ArgumentParser(prog="agui-mcp-bridge", description=__doc__)
    parser.add_argument("--version", action="version", version=f"agui-mcp-bridge {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    for name, help_text in (("serve", "serve pages and MCP (Streamable HTTP at /mcp) over HTTP"),
                            ("stdio", "serve MCP on stdin/stdout; pages still connect over HTTP")):
        add_arguments(commands.add_parser(name, help=help_text), name)
    args = parser.parse_args(argv)
    settings = from_arguments(args)
    settings.check()
    return args, settings


def _announce(server: RunningServer) -> None:
    print(f"agui-mcp-bridge {__version__}: demo {server.url}/  MCP {server.url}/mcp", file=sys.stderr)


if __name__ == "__main__":
    main()
