"""What the core needs to know, and the one place each of its defaults is written.

`HubConfig` is the core's part of the settings: `bridge.config.Settings` takes its defaults from
`DEFAULTS` (and adds hosts, ports, log levels...), and `Settings.hub_config()` makes the hub's.
The catalog's listing policy and definition limits default to the same values. `CodeConfig` is
code mode's part (the `run_code` tool and what one program may use), `TaskLimits` the tasks'.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class CodeConfig:
    """Code mode: the `run_code` tool, and what one program may use (as `bridge.code_mode.Limits` takes it;
    written here as plain numbers so that reading the settings imports no sandbox)."""

    mode: str = "on"  # "off": no `run_code` tool, and its name is free for pages
    tool_name: str = "run_code"
    compute_seconds: float = 5.0  # the sandbox's computing time over a run; waiting on pages is free
    memory_mb: int = 64  # the sandbox's heap
    max_calls: int = 500  # tool calls one run starts
    max_calls_in_flight: int = 50  # started and not yet answered
    max_printed_chars: int = 20_000  # what print() wrote
    max_value_chars: int = 20_000  # the value's JSON text: past it the value is cut, with a note
    workers: int = 4  # sandbox worker processes at most (a program waiting on pages holds none)

    @property
    def on(self) -> bool:
        return self.mode == "on"


CODE = CodeConfig()


@dataclass(frozen=True)
class HubConfig:
    call_timeout: float = 600.0
    page_grace: float = 10.0
    # Listing: tools listed inline at most (count, estimated tokens) before search mode; in search
    # mode a listed tool's description is cut to `description_max_chars`.
    inline_max: int = 40
    inline_token_budget: int = 5000
    description_max_chars: int = 200
    search_tool_name: str = "tool_search"
    describe_tool_name: str = "tool_describe"
    call_tool_name: str = "call_tool"
    # Page text marked for agents browsing pages not their user's own (bridge.core.provenance).
    mark_page_text: bool = False
    token: str = ""  # pages must present it in agui.hello when set
    room_tokens: str = ""  # "room=token,…": the token a page must present to join that room
    # Limits: each refused with a clear error to whoever exceeded it. `max_description_chars` is
    # the longest description a page may register (what agents read in full from tool_describe).
    max_rooms: int = 1000
    max_tools_per_page: int = 1000
    max_tools_per_room: int = 10_000
    max_calls_per_page: int = 100
    max_calls_per_room: int = 1000
    max_description_chars: int = 8192
    # bridge.schemas.SchemaLimits' defaults, written as plain numbers so that reading the settings imports
    # no JSON Schema machinery (tests/core/test_defaults.py checks they agree).
    max_schema_bytes: int = 64 * 1024
    max_schema_depth: int = 32
    # Tool search: deferred tools listed once found or called, at most; the semantic tier's model.
    max_activated: int = 20
    search_model: str = ""  # a fastembed model name; empty: lexical search only
    search_model_path: str = ""  # a local folder holding that model's files (nothing is fetched)
    search_model_cache: str = ""  # where fastembed keeps models it fetches (its default when empty)
    code: CodeConfig = field(default=CODE)  # the `run_code` tool's name and limits (routed, listed, reserved)

    def page_token(self, room: str) -> str:
        """The token a page must present to join `room` ("" when none)."""
        for pair in self.room_tokens.split(","):
            name, _, token = pair.partition("=")
            if name.strip() == room and token:
                return token.strip()
        return self.token


DEFAULTS = HubConfig()


@dataclass(frozen=True)
class TaskLimits:
    """What the tasks of one bridge process may hold (`bridge.core.tasks.TaskTable`). An agent is the
    credential it presents; bytes are those of the kept results and input requests, as JSON."""

    total: int = 10_000
    per_agent: int = 1000
    per_room: int = 2000
    bytes_total: int = 256 << 20
    bytes_per_agent: int = 32 << 20


TASK_LIMITS = TaskLimits()
