"""The page protocol's messages, typed.

docs/protocol.md is the contract; these models are its executable form. Pages
send JSON objects with a `type`; `parse_page_message` turns one WebSocket text
frame into a model or raises `ProtocolError` with the code the page will see.
"""

from __future__ import annotations

import json
import math
import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, TypeAdapter, ValidationError

from bridge.core.prose import cut_text

JSONValue = Any
MessageId = str | int


class ProtocolError(Exception):
    """A message the bridge cannot take; becomes an `agui.error` frame."""

    def __init__(self, code: str, message: str, **fields: Any) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.fields = {k: v for k, v in fields.items() if v is not None}

    def to_message(self) -> dict[str, Any]:
        return {"type": "agui.error", "code": self.code, "message": self.message, **self.fields}


class _Message(BaseModel):
    # Unknown fields are tolerated so newer pages can talk to older bridges.
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


# --- page -> bridge --------------------------------------------------------------------------


class PageInfo(_Message):
    url: str | None = None
    title: str | None = None


class Hello(_Message):
    type: Literal["agui.hello"]
    id: MessageId | None = None
    room: str = "default"
    session_id: str | None = None
    page: PageInfo = Field(default_factory=PageInfo)
    token: str | None = None
    # Its user is on the page now (false: a tab opened or reconnecting in the background); see PageActive.
    active: StrictBool = True


class ToolAnnotations(_Message):
    model_config = ConfigDict(extra="allow")
    title: str | None = None
    readOnlyHint: bool | None = None
    destructiveHint: bool | None = None
    idempotentHint: bool | None = None
    openWorldHint: bool | None = None
    # WebMCP's: the tool's output may hold text someone other than the page's author wrote (reviews, mail).
    untrustedContentHint: bool | None = None


INPUT_EXAMPLES_MAX = 5


class ToolExecution(_Message):
    # Whether an agent may (optional), must (required) or may not (forbidden) run the tool as a task.
    taskSupport: Literal["forbidden", "optional", "required"] = "forbidden"


class ToolDefinition(_Message):
    name: Annotated[str, Field(min_length=1, max_length=128)]
    description: str = ""
    inputSchema: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})
    outputSchema: dict[str, Any] | None = None
    title: str | None = None
    annotations: ToolAnnotations | None = None
    execution: ToolExecution | None = None
    # A task-capable tool whose page asks for input first: that first round is answered synchronously
    # (MCP's input_required), and the call becomes a task when the agent calls again with the answers.
    inputBeforeTask: StrictBool = False
    # Listed even when the room is in search mode (counted against the inline limits first).
    pinned: StrictBool = False
    # Argument objects showing how to call the tool; each must match inputSchema (checked at registration).
    inputExamples: Annotated[list[dict[str, Any]], Field(max_length=INPUT_EXAMPLES_MAX)] | None = None


class RegisterTools(_Message):
    type: Literal["agui.tools.register"]
    id: MessageId | None = None
    # Definitions are checked one by one (see Hub), so one bad tool loses nothing else.
    tools: list[Any]


class UnregisterTools(_Message):
    type: Literal["agui.tools.unregister"]
    id: MessageId | None = None
    tools: list[str]


class ToolError(_Message):
    message: str
    code: str | None = None


class ToolReturn(_Message):
    type: Literal["agui.tool.return"]
    id: MessageId | None = None
    call_id: str
    result: JSONValue = None
    error: ToolError | None = None


class ToolProgress(_Message):
    type: Literal["agui.tool.progress"]
    id: MessageId | None = None
    call_id: str
    progress: float
    total: float | None = None
    message: str | None = None

    def note(self) -> dict[str, Any]:
        return {"progress": [self.progress, self.total, self.message]}


LogLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]


class ToolLog(_Message):
    """A log line about a waiting call, for agents that asked for log messages at this level or below."""

    type: Literal["agui.tool.log"]
    id: MessageId | None = None
    call_id: str
    level: LogLevel = "info"
    data: JSONValue = None
    logger: Annotated[str, Field(max_length=200)] | None = None

    def note(self) -> dict[str, Any]:
        return {"log": {"level": self.level, "data": self.data, "logger": self.logger}}


class InputRequest(_Message):
    model_config = ConfigDict(extra="forbid")
    method: Literal["elicitation/create", "sampling/createMessage", "roots/list"]
    params: dict[str, Any] = Field(default_factory=dict)


# The client capability an agent must have declared for the bridge to pass it each kind of input request.
INPUT_CAPABILITIES = {"elicitation/create": "elicitation", "sampling/createMessage": "sampling", "roots/list": "roots"}


class ToolInputRequest(_Message):
    """A waiting call needs input from the agent's side: the call ends, and the page is invoked again
    with the answers (`input_responses`) and its own `request_state`."""

    type: Literal["agui.tool.input_request"]
    id: MessageId | None = None
    call_id: str
    requests: Annotated[dict[Annotated[str, Field(min_length=1, max_length=100)], InputRequest],
                        Field(min_length=1, max_length=16)]
    requestState: Annotated[str, Field(max_length=65_536)] | None = None


class PageActive(_Message):
    """The page's user is on it now (its tab became visible or focused): of the tabs sharing a tool's
    name, calls go to the one used last."""

    type: Literal["agui.page.active"]
    id: MessageId | None = None


PageMessage = Annotated[
    Hello | RegisterTools | UnregisterTools | ToolReturn | ToolProgress | ToolLog | ToolInputRequest | PageActive,
    Field(discriminator="type"),
]
_page_message = TypeAdapter(PageMessage)
PAGE_MESSAGE_TYPES = ("agui.hello", "agui.tools.register", "agui.tools.unregister", "agui.tool.return",
                      "agui.tool.progress", "agui.tool.log", "agui.tool.input_request", "agui.page.active")


def _non_finite(constant: str) -> None:
    raise ValueError(f"{constant} is not a JSON number")


def _finite(number: str) -> float:
    value = float(number)
    if math.isinf(value):  # 1e400: Python reads infinity, which no JSON can carry on to the agent
        raise ValueError(f"{cut_text(number, 40)} is not a JSON number (it overflows to infinity)")
    return value


# One decoder for every frame: `json.loads` with hooks would build one per call.
_PAGE_JSON = json.JSONDecoder(parse_constant=_non_finite, parse_float=_finite)


def parse_page_message(text: str) -> (Hello | RegisterTools | UnregisterTools | ToolReturn | ToolProgress | ToolLog
                                       | ToolInputRequest | PageActive):
    try:
        raw = _PAGE_JSON.decode(text)
    except (ValueError, RecursionError) as exc:  # ValueError covers integers too long to convert
        raise ProtocolError("bad_json", f"Not valid JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise ProtocolError("bad_message", "A message must be a JSON object with a 'type'.")
    reply_to = raw.get("id") if isinstance(raw.get("id"), (str, int)) else None
    kind = raw.get("type")
    if kind not in PAGE_MESSAGE_TYPES:
        raise ProtocolError("unknown_type", f"Unknown message type {kind!r}.", reply_to=reply_to)
    try:
        return _page_message.validate_python(raw)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'][1:])) or '(message)'}: {e['msg']}" for e in exc.errors())
        raise ProtocolError("bad_message", f"Invalid {kind}: {problems}", reply_to=reply_to) from None


_CALL_ID = re.compile(r'"call_id"\s*:\s*"([^"\\]{1,100})"')


def call_id_in(text: str) -> str | None:
    """The call a frame names, found without parsing it (it may be too large or not JSON)."""
    found = _CALL_ID.search(text)
    return found.group(1) if found else None


def looks_like_return(text: str) -> bool:
    return '"agui.tool.return"' in text


def validation_summary(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or '(value)'}: {e['msg']}" for e in exc.errors())


# --- bridge -> page --------------------------------------------------------------------------
# Built as plain dicts at the edges' request; kept here so every wire shape lives in one module.


def welcome(session_id: str, room: str, events_url: str, resumed: bool, waiting: list[str],
            reply_to: MessageId | None) -> dict[str, Any]:
    return _reply({"type": "agui.welcome", "session_id": session_id, "room": room, "events_url": events_url,
                   "resumed": resumed, "waiting": waiting}, reply_to)


def tools_registered(pairs: list[tuple[str, str]], reply_to: MessageId | None) -> dict[str, Any]:
    return _reply({"type": "agui.tools.registered", "tools": [{"tool": t, "name": n} for t, n in pairs]}, reply_to)


def tools_unregistered(names: list[str], reply_to: MessageId | None) -> dict[str, Any]:
    return _reply({"type": "agui.tools.unregistered", "tools": names}, reply_to)


def tool_invoke(call_id: str, tool: str, name: str, params: dict[str, Any], mcp_request_id: Any,
                asked: dict[str, Any] | None = None) -> dict[str, Any]:
    """`asked`: what the agent's side told the page for this call: its client capabilities, and on a
    call the page asked input for, `input_responses` and the page's own `request_state`."""
    return {"type": "agui.tool.invoke", "call_id": call_id, "tool": tool, "name": name, "params": params,
            "mcp_request_id": mcp_request_id, **(asked or {})}


def tool_cancel(call_id: str, reason: str) -> dict[str, Any]:
    return {"type": "agui.tool.cancel", "call_id": call_id, "reason": reason}


class CancelReason(str):
    """Why a call is cancelled, given as the cancel's message (`asyncio.Task.cancel(CancelReason(...))`)
    by whoever cancels the call for a reason of its own, to be told to the page."""


def cancel_reason(cancelled: BaseException) -> str:
    """What the page is told of a call whose wait was cancelled: the reason its canceller gave, else
    the agent's cancel (other messages, such as a task group's, are not for pages)."""
    given = cancelled.args[0] if cancelled.args else None
    return given if isinstance(given, CancelReason) else "cancelled by the agent"


def _reply(message: dict[str, Any], reply_to: MessageId | None) -> dict[str, Any]:
    if reply_to is not None:
        message["reply_to"] = reply_to
    return message
