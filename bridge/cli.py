"""`agui-mcp-bridge serve` (HTTP: pages and MCP) and `agui-mcp-bridge stdio` (MCP on stdin/stdout)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import logging.config
import sys
from pathlib import Path

from bridge import __version__, client_config
from bridge import _user_files as user_files
from bridge.config import Settings, UnusableSettings, add_arguments, from_arguments
from bridge.server import PortInUse, RunningServer, log_config, serve, serve_stdio

EXIT_USAGE = 2


def main(argv: list[str] | None = None) -> None:
    try:
        args, settings = _parse(argv)
    except UnusableSettings as exc:  # from a flag or an environment variable: one line, no traceback
        print(f"agui-mcp-bridge: {exc}", file=sys.stderr)
        sys.exit(EXIT_USAGE)
    if args.command == "config":
        _configure_client(args, settings)
        return
    logging.config.dictConfig(log_config(settings.log_json))
    logging.getLogger().setLevel(settings.log_level.upper())
    # This process's log lines name no thread, process or source line: a record need not look them up
    # (a call's line is written for every call; the logging HOWTO's "Optimization" lists these switches).
    logging.logThreads = logging.logProcesses = logging.logMultiprocessing = False
    logging._srcfile = None
    try:
        if args.command == "serve":
            asyncio.run(serve(settings, ready=_announce))
        else:
            asyncio.run(serve_stdio(settings, ready=_announce))
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
    config = commands.add_parser("config", help="print (or --write) the entry an MCP client needs to start this "
                                                 "bridge over stdio, with this installation's absolute path")
    config.add_argument("client", choices=client_config.CLIENTS)
    config.add_argument("--name", default=client_config.DEFAULT_NAME, help="the server's name in the client's config")
    config.add_argument("--write", action="store_true", help="merge it into the client's config file (the old "
                                                             "file is kept as .bak, .bak.1, …)")
    config.add_argument("--config-file", type=Path, help="that file, when not where the client keeps it by default")
    add_arguments(config, "stdio")  # the settings the client's bridge will start with
    args = parser.parse_args(argv)
    settings = from_arguments(args)
    settings.check()
    return args, settings


def _configure_client(args: argparse.Namespace, settings: Settings) -> None:
    entry = client_config.server_entry(args.client, settings)
    if not args.write:
        print(client_config.snippet(args.client, args.name, entry))
        _say(client_config.snippet_notes(args.client, entry))
        return
    path = args.config_file or client_config.config_file(args.client)
    # The project's .mcp.json may come with a cloned repository: a link there may not lead out of it.
    within = Path.cwd() if args.client == "claude-code" and args.config_file is None else None
    try:
        written = client_config.write(path, args.client, args.name, entry, within)
    except (UnusableSettings, user_files.Refused, OSError) as exc:
        print(f"agui-mcp-bridge: {exc}", file=sys.stderr)
        sys.exit(EXIT_USAGE)
    _say(client_config.written_notes(args.client, args.name, path, written, entry))


def _say(notes: list[str]) -> None:
    for note in notes:
        print(f"agui-mcp-bridge: {note}", file=sys.stderr)


def _announce(server: RunningServer) -> None:
    print(f"agui-mcp-bridge {__version__}: demo {server.url}/  MCP {server.url}/mcp", file=sys.stderr)


if __name__ == "__main__":
    main()
