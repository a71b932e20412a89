"""2026-07-28 `tools/call`s that ask for no progress, answered as one JSON body.

The SDK answers a 2026-07-28 request in the mode its session manager was made with: SSE mode runs
each handler beside a task watching for the agent to close the request (that era's cancel), with a
stream and a timer; JSON mode writes one body but never watches, so a cancel would not reach the
page. A call without `_meta.progressToken` has nothing to send but its result, so `McpRooms` hands
it to a JSON-mode manager through `answer_watching_disconnect`, which does the watching itself with
one plain task. Everything else (handshake-era sessions, progress, `subscriptions/listen`) stays
with the SSE-mode manager. Which one serves a request is decided from its body, read here once
within the SDK's own size limit and replayed to the manager.
"""

from __future__ import annotations

import asyncio
import json
from collections import deque

import anyio
from mcp.server.streamable_http_manager import DEFAULT_MAX_REQUEST_BODY_SIZE
from mcp_types import LOG_LEVEL_META_KEY
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.types import ASGIApp, Message, Receive, Scope, Send

PROTOCOL_VERSION_HEADER = b"mcp-protocol-version"
DISCONNECT: Message = {"type": "http.disconnect"}


class PeekedRequest:
    """A POST's body read ahead (at most `limit` bytes past which the SDK refuses it), to be replayed."""

    def __init__(self, messages: list[Message], complete: bool) -> None:
        self.messages, self.complete = messages, complete

    @classmethod
    async def read(cls, receive: Receive, limit: int = DEFAULT_MAX_REQUEST_BODY_SIZE) -> PeekedRequest:
        messages: list[Message] = []
        size = 0
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                return cls(messages, complete=False)  # the agent left while sending it
            size += len(message.get("body", b""))
            if not message.get("more_body", False):
                return cls(messages, complete=True)
            if size > limit:
                return cls(messages, complete=False)  # the manager reads on and answers 413

    @property
    def body(self) -> bytes:
        return b"".join(m.get("body", b"") for m in self.messages)

    def replay(self, then: Receive) -> Receive:
        """A receive that gives the messages read ahead, then whatever `then` gives."""
        pending = deque(self.messages)

        async def receive() -> Message:
            return pending.popleft() if pending else await then()

        return receive


def may_ask_for_plain_call(scope: Scope) -> bool:
    """Whether a request could be a 2026-07-28 call (cheap: headers only, nothing read)."""
    return (scope["method"] == "POST"
            and (header(scope["headers"], PROTOCOL_VERSION_HEADER) or "") in MODERN_PROTOCOL_VERSIONS)


def header(headers: list[tuple[bytes, bytes]], name: bytes) -> str | None:
    """An ASGI request's or response's header by its lower-case name, or None."""
    return next((value.decode("latin-1") for key, value in headers if key == name), None)


def is_plain_call(request: PeekedRequest) -> bool:
    """A complete JSON-RPC `tools/call` request that asks for no progress and no log messages."""
    if not request.complete:
        return False
    try:
        message = json.loads(request.body)
    except (ValueError, RecursionError):
        return False  # the manager answers the parse error
    if not isinstance(message, dict) or message.get("method") != "tools/call" or "id" not in message:
        return False
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return not (isinstance(meta, dict) and (meta.get("progressToken") is not None or LOG_LEVEL_META_KEY in meta))


async def answer_watching_disconnect(app: ASGIApp, scope: Scope, request: PeekedRequest, receive: Receive,
                                     send: Send) -> None:
    """Let `app` answer `request`, cancelling it when the agent closes the request first."""
    gone = asyncio.Event()

    async def after_the_body() -> Message:
        await gone.wait()  # `app` has the whole body: all it can hear of now is the agent leaving
        return DISCONNECT

    with anyio.CancelScope() as answering:
        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            gone.set()
            # Also fires once the answer is out (the server then reports a disconnect); by then
            # nothing is left to cancel.
            answering.cancel()

        watcher = asyncio.get_running_loop().create_task(watch())
        try:
            await app(scope, request.replay(after_the_body), send)
        finally:
            watcher.cancel()
