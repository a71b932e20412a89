"""Settings: every one is a command-line flag and an `AGUI_BRIDGE_*` environment variable."""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, field, fields
from typing import Any

ENV_PREFIX = "AGUI_BRIDGE_"


@dataclass(frozen=True)
class Settings:
    host: str = field(default="127.0.0.1", metadata={"help": "interface to listen on"})
    port: int = field(default=8765, metadata={"help": "HTTP port (0 picks a free one)"})
    call_timeout: float = field(default=600.0, metadata={"help": "seconds a call may wait for the page; a human may be deciding"})
    page_grace: float = field(default=1.0, metadata={"help": "seconds a page may be disconnected before its tools and calls are dropped"})
    progress_interval: float = field(default=15.0, metadata={"help": "seconds between keep-alive progress notifications to agents"})
    sse_ping: float = field(default=15.0, metadata={"help": "seconds between keep-alive comments on idle event streams"})
    inline_max: int = field(default=40, metadata={"help": "most tools listed inline before search mode"})
    inline_token_budget: int = field(default=5000, metadata={"help": "most estimated tokens (characters / 4) of the inline listing"})
    description_max_chars: int = field(default=200, metadata={"help": "inline descriptions are cut to this in search mode"})
    search_tool_name: str = field(default="tool_search", metadata={"help": "name of the search meta-tool"})
    describe_tool_name: str = field(default="tool_describe", metadata={"help": "name of the describe meta-tool"})
    call_tool_name: str = field(default="call_tool", metadata={"help": "name of the call-through meta-tool"})
    max_message_bytes: int = field(default=1 << 20, metadata={"help": "largest page message accepted"})
    allowed_origins: str = field(
        default="http://127.0.0.1:*,http://localhost:*,http://[::1]:*",
        metadata={"help": "comma-separated Origin patterns pages may connect from (* matches a port or anything)"})
    token: str = field(default="", metadata={"help": "when set, pages must send it in agui.hello"})
    room: str = field(default="default", metadata={"help": "room served to the stdio agent"})
    log_level: str = field(default="info", metadata={"help": "debug, info, warning or error"})

    @property
    def loopback_only(self) -> bool:
        return self.host in ("127.0.0.1", "localhost", "::1")

    @property
    def meta_tool_names(self) -> frozenset[str]:
        return frozenset({self.search_tool_name, self.describe_tool_name, self.call_tool_name})


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """One `--flag` per setting; its default comes from the environment, else from Settings."""
    for f in fields(Settings):
        env = ENV_PREFIX + f.name.upper()
        default = os.environ.get(env, f.default)
        parser.add_argument("--" + f.name.replace("_", "-"), dest=f.name, type=type(f.default), default=default,
                            help=f"{f.metadata['help']} (env {env}; default {f.default!r})")


def from_arguments(namespace: argparse.Namespace, **overrides: Any) -> Settings:
    values = {f.name: getattr(namespace, f.name) for f in fields(Settings)} | overrides
    # Environment values arrive as strings; argparse only converts the ones given as flags.
    return Settings(**{f.name: type(f.default)(values[f.name]) for f in fields(Settings)})
