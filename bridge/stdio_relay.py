"""Several stdio agents, one bridge: an `agui-mcp-bridge stdio` whose port is held by a running
bridge serves its agent through that bridge, so pages connect to one port whatever the number of
agents (Claude Desktop, Cursor and Claude Code each start their own).

`Relay` carries the agent's MCP messages to an upstream and back: first the bridge holding the
port (Streamable HTTP, the agent token passed along, over connections the bridge proves are its
user's: bridge._proven_client), and when that bridge stops, a bridge of its own on the freed port, or
whichever bridge took it. The agent keeps its stdio session across the move: what it sent to the
upstream it lost is answered with an error (a call gets an error result it can read), and its
handshake is replayed to the next upstream.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.inbound import (
    MCP_METHOD_HEADER,
    MCP_NAME_HEADER,
    MCP_PROTOCOL_VERSION_HEADER,
    NAME_BEARING_METHODS,
    encode_header_value,
)
from mcp.shared.message import ClientMessageMetadata, SessionMessage

from bridge._proven_client import Holder, not_proven, proven_client

log = logging.getLogger(__name__)

Upstream = tuple[ReadStream[SessionMessage | Exception], WriteStream[SessionMessage]]


class UpstreamRefused(Exception):
    """The server holding the port will not serve this agent, or must not (it did not prove it is a
    bridge of this user); the message says what to do."""


async def holder_of(url: str, agent_token: str) -> Holder | None:
    """The agui-mcp-bridge answering at `url` (its base URL), once it has proved it was started by this
    user (bridge._proven_client); None when nothing answers there as a server would. Nothing this agent
    says, its token included, goes to a server before it has proved that."""
    where, holder = httpx2.URL(url), Holder()
    try:
        async with proven_client(holder, _authorization(agent_token), timeout=3) as http:
            response = await http.get(url + "/api/state")
    except httpx2.HTTPError as exc:
        if (failed := not_proven(exc)) is None:
            return None
        raise UpstreamRefused(f"port {where.port} on {where.host} is already in use by a server that did not prove it "
                              f"is an agui-mcp-bridge started by you ({failed}), so this agent's token and calls are "
                              "not sent to it; stop that server or choose another port with --port") from None
    if response.status_code == 401:
        raise UpstreamRefused("the bridge holding the port needs its agent token: pass --agent-token "
                              "(or AGUI_BRIDGE_AGENT_TOKEN) to this stdio command too")
    return holder


def _authorization(agent_token: str) -> dict[str, str]:
    """The headers that pass the agent token to the bridge (none without a token)."""
    return {"Authorization": f"Bearer {agent_token}"} if agent_token else {}


class Relay:
    """The agent's side of the relay: its stdio streams, and what is in flight upstream."""

    def __init__(self, agent_read: ReadStream[SessionMessage | Exception], agent_write: WriteStream[SessionMessage]
                 ) -> None:
        self.agent_read, self.agent_write = agent_read, agent_write
        self.pending: dict[Any, str] = {}  # request id -> method, sent upstream and not yet answered
        self.handshake: list[SessionMessage] = []  # initialize and notifications/initialized, to replay
        self.agent_done = False

    async def through(self, upstream: Upstream, *, gone: Callable[[], Awaitable[None]] | None = None) -> bool:
        """Carry messages both ways until the agent closes stdin (False) or the upstream is lost
        (True, once every request it had is answered to the agent with an error)."""
        up_read, up_write = upstream
        lost = False
        replayed = {m.message.id for m in self.handshake if isinstance(m.message, types.JSONRPCRequest)}
        async with anyio.create_task_group() as relaying:
            async def upstream_to_agent() -> None:
                nonlocal lost
                async for item in up_read:
                    if isinstance(item, Exception):
                        log.debug("upstream transport error: %s", item)
                        continue
                    message = item.message
                    if isinstance(message, types.JSONRPCError) and message.error.code == types.CONNECTION_CLOSED:
                        # The transport's answer when a request's stream broke (its bridge was killed) or a
                        # connection failed its proof, or a server's as it stops: this upstream is lost, and
                        # the call gets the error result below.
                        break
                    if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
                        self.pending.pop(message.id, None)
                        if message.id in replayed:
                            replayed.discard(message.id)  # the agent had its answer from the first upstream
                            continue
                    await self.agent_write.send(SessionMessage(message))
                lost = True
                relaying.cancel_scope.cancel()

            async def watch() -> None:
                nonlocal lost
                assert gone is not None
                await gone()
                lost = True
                relaying.cancel_scope.cancel()

            relaying.start_soon(upstream_to_agent)
            if gone is not None:
                relaying.start_soon(watch)
            for message in self.handshake:  # a new upstream hears the agent's handshake first
                await self._send_up(up_write, message)
            async for item in self.agent_read:
                if isinstance(item, Exception):
                    continue  # the stdio transport already logged a line that was not JSON-RPC
                if isinstance(item.message, types.JSONRPCRequest) and item.message.method == "initialize" \
                        or isinstance(item.message, types.JSONRPCNotification) \
                        and item.message.method == "notifications/initialized":
                    self.handshake.append(item)
                await self._send_up(up_write, item)
            self.agent_done = True
            relaying.cancel_scope.cancel()
        if lost and not self.agent_done:
            await self._answer_pending()
            return True
        return False

    async def _send_up(self, up_write: WriteStream[SessionMessage], item: SessionMessage) -> None:
        message = item.message
        if isinstance(message, types.JSONRPCRequest):
            self.pending[message.id] = message.method
        try:
            await up_write.send(SessionMessage(message, metadata=_routing_headers(message)))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass  # the upstream is going; its loss is noticed on the other side

    async def refuse(self, why: Callable[[], str]) -> None:
        """While no bridge can serve the agent: answer each of its requests with an error saying `why()`,
        until cancelled or until the agent closes stdin."""
        async for item in self.agent_read:
            if not isinstance(item, Exception) and isinstance(item.message, types.JSONRPCRequest):
                await self.agent_write.send(_error_reply(item.message.id, item.message.method, why()))
        self.agent_done = True

    async def _answer_pending(self) -> None:
        text = ("The bridge this agent was served through stopped before answering; the page's answer, if "
                "any, is lost. Call again: this agent is now served by the bridge that holds the port.")
        for request_id, method in self.pending.items():
            if method != "initialize":  # replayed to the next upstream, whose answer the agent gets
                await self.agent_write.send(_error_reply(request_id, method, text))
        self.pending.clear()


def _error_reply(request_id: Any, method: str, text: str) -> SessionMessage:
    """A call's error is a result the agent reads (`isError`); any other request's, a JSON-RPC error."""
    reply: types.JSONRPCMessage
    if method == "tools/call":
        result = {"content": [{"type": "text", "text": text}], "isError": True}
        reply = types.JSONRPCResponse(jsonrpc="2.0", id=request_id, result=result)
    else:
        reply = types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(code=-32000, message=text))
    return SessionMessage(reply)


def _routing_headers(message: types.JSONRPCMessage) -> ClientMessageMetadata | None:
    """A 2026-07-28 request says its version, method and name again as HTTP headers (the SDK's client
    session stamps them; a relay of raw messages must do the same)."""
    if not isinstance(message, types.JSONRPCRequest) or not isinstance(message.params, dict):
        return None
    version = (message.params.get("_meta") or {}).get(types.PROTOCOL_VERSION_META_KEY)
    if not isinstance(version, str):
        return None  # a handshake-era request: the transport has the session
    headers = {MCP_PROTOCOL_VERSION_HEADER: version, MCP_METHOD_HEADER: message.method}
    name_key = NAME_BEARING_METHODS.get(message.method)
    if name_key is not None and isinstance(name := message.params.get(name_key), str):
        headers[MCP_NAME_HEADER] = encode_header_value(name)
    return ClientMessageMetadata(headers=headers)


async def http_upstream(stack: AsyncExitStack, holder: Holder, mcp_url: str, agent_token: str) -> Upstream:
    """The MCP session with `holder`, over connections it proves each (bridge._proven_client)."""
    http = await stack.enter_async_context(proven_client(holder, _authorization(agent_token), upstream=True))
    read, write = await stack.enter_async_context(streamable_http_client(mcp_url, http_client=http))
    return read, write
