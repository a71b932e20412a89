"""How a program's tool calls leave the sandbox: the caller the engine is given, and what it tells back.

The engine calls tools through a `ToolCaller` it is given, so that the MCP edge can pass one that goes through
exactly the hub's checks (schema, room, limits, timeouts). A call's awaitable is cancelled when its program ends
or is cancelled, so the caller can tell the page (`agui.tool.cancel`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol

# The sandbox's id of the call a `ToolCaller` is making, set while the caller runs: unique within the run, and the
# same when a parked program is resumed from its record (the sandbox is deterministic), so a caller that keeps
# calls across processes can tell a call it already sent from a new one.
CALL_ID: ContextVar[int] = ContextVar("CALL_ID")


class ToolCaller(Protocol):
    def __call__(self, name: str, arguments: dict[str, Any]) -> Awaitable[Any]:
        """Call the room's tool `name`; resolve to the page's answer: the JSON value the page returned, or an
        MCP-shaped result (`{"content": [...], "structuredContent"?: ..., "isError"?: ...}`).

        Raise `ToolError` when the call failed (the message is what the program's exception says), and
        `AnswerLost` when its answer is gone (the program reads "outcome unknown")."""
        ...


class ToolError(Exception):
    """The call failed: unknown tool, invalid arguments, timeout, the page's own error... The message is the
    program's exception message."""


class AnswerLost(Exception):
    """The call's answer is lost (its process went away): the call may or may not have taken effect."""


@dataclass(frozen=True)
class CallFinished:
    """Progress: one of the program's tool calls finished (`finished` of the `started` so far)."""

    name: str
    ok: bool
    finished: int
    started: int


CallFinishedSink = Callable[[CallFinished], None]
