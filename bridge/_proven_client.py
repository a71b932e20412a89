"""The HTTP client a stdio process relays its agent with: each connection it opens first has the server
prove it is a bridge started by this user (bridge._port_claim), and only then carries a request, the agent
token included. The port's holder can change under a relay (it stops, and whatever takes the port answers
the next connection): proving each connection, not the first only, keeps the token and the calls from
ever reaching a server that merely took the port. A client is bound to one `Holder`: a bridge that took
the port over since proves itself with another secret, and is a new upstream, not this one.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import anyio
import httpcore2
import httpx2
import mcp_types as types
from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

from bridge import _port_claim as port_claim

MAX_PROOF_BYTES = 16 * 1024  # a bridge's answer is ~150 bytes
HOLDER_CHECK_SECONDS = 1.0
HOLDER_CHECK_TIMEOUT = 10.0  # a holder busy on a loaded machine is still there


class NotProven(httpcore2.ConnectError):
    """The server did not prove it is the bridge (of this user) expected; the message says how it failed."""


class Holder:
    """A bridge holding a port, as its first proof showed it: the secret of its claim, which each later
    connection must prove again, and its version."""

    def __init__(self) -> None:
        self.secret: bytes | None = None
        self.version = ""

    async def prove(self, stream: httpcore2.AsyncNetworkStream, host: str, port: int, timeout: float | None) -> None:
        """Challenge the server at the other end of `stream` (GET /api/holder with a nonce, on this very
        connection); raises `NotProven` unless it answers with the HMAC of this holder's secret, or on a
        first proof, of the secret in the port's claim."""
        nonce = port_claim.new_nonce()
        authority = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        await stream.write(f"GET /api/holder?nonce={nonce} HTTP/1.1\r\nHost: {authority}\r\n\r\n".encode(), timeout)
        try:
            status, body = await _response(stream, timeout)
            answer = json.loads(body)
        except (httpcore2.ReadError, ValueError, IndexError) as exc:
            why = str(exc) or type(exc).__name__
            raise NotProven(f"its answer to GET /api/holder is not a bridge's ({why})") from None
        if not isinstance(answer, dict) or not isinstance(answer.get("proof"), str):
            error = answer.get("error") if isinstance(answer, dict) else None
            # A bridge that cannot write its claim says why; quoted and cut: the text is the server's own.
            said = f" {json.dumps(error[:200])}" if isinstance(error, str) else ""
            raise NotProven(f"it answered GET /api/holder with {status}{said}, not a proof")
        reached = stream.get_extra_info("server_addr")
        if reached is None:
            raise NotProven("it closed the connection as it answered")
        try:
            secret = self.secret if self.secret is not None else port_claim.claimed_secret(port)
        except port_claim.ClaimUnusable as exc:
            raise NotProven(str(exc)) from None
        if not port_claim.proves(secret, nonce, reached[0], reached[1], answer["proof"]):
            raise NotProven("it is not the bridge this agent was served through" if self.secret is not None
                            else f"its proof does not match the secret in {port_claim.claim_path(port)}")
        self.secret, self.version = secret, str(answer.get("version", ""))


def proven_client(holder: Holder, headers: dict[str, str] | None = None, *, timeout: float = MCP_DEFAULT_TIMEOUT,
                  upstream: bool = False) -> httpx2.AsyncClient:
    """A client whose connections are each proven by `holder`. An `upstream` one answers a request the
    server can no longer take as a server that stopped would (see `_LossAnswered`)."""
    transport: httpx2.AsyncBaseTransport = _ProvenTransport(holder)
    if upstream:
        transport = _LossAnswered(transport)
    # Proxies from the environment would carry the token past the proof: never for a bridge.
    read = MCP_DEFAULT_SSE_READ_TIMEOUT if upstream else timeout
    return httpx2.AsyncClient(headers=headers, transport=transport, trust_env=False,
                              timeout=httpx2.Timeout(timeout, read=read))


def not_proven(exc: httpx2.HTTPError) -> NotProven | None:
    """The failed proof behind `exc`, if that is what it is."""
    return exc.__cause__ if isinstance(exc.__cause__, NotProven) else None


async def holder_gone(holder: Holder, url: str) -> None:
    """Returns once a new connection to `url` (a bridge's base URL) is refused or is not proven by
    `holder` (it stopped, or another server holds the port now). A slow answer is not an absence."""
    where, backend = httpx2.URL(url), _ProvingBackend(holder)
    while True:
        await anyio.sleep(HOLDER_CHECK_SECONDS)
        try:
            stream = await backend.connect_tcp(where.host, where.port or 80, timeout=HOLDER_CHECK_TIMEOUT)
        except httpcore2.TimeoutException:
            continue
        except httpcore2.NetworkError:
            return  # refused, cut, or not proven
        await stream.aclose()


class _ProvingBackend(httpcore2.AsyncNetworkBackend):
    def __init__(self, holder: Holder) -> None:
        self._backend = httpcore2.AnyIOBackend()
        self._holder = holder

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                          socket_options: Iterable[Any] | None = None) -> httpcore2.AsyncNetworkStream:
        stream = await self._backend.connect_tcp(host, port, timeout, local_address, socket_options)
        try:
            await self._holder.prove(stream, host, port, timeout)
        except BaseException:
            await stream.aclose()
            raise
        return stream

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Iterable[Any] | None = None) -> httpcore2.AsyncNetworkStream:
        raise NotProven("a bridge is reached over TCP")

    async def sleep(self, seconds: float) -> None:
        await self._backend.sleep(seconds)


async def _response(stream: httpcore2.AsyncNetworkStream, timeout: float | None) -> tuple[int, bytes]:
    """The status and body of one HTTP/1.1 response with a Content-Length, read no further than its end
    (the connection then carries the client's requests)."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += await _more(stream, timeout, len(data))
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    lengths = [value for name, _, value in (line.partition(":") for line in lines[1:])
               if name.strip().lower() == "content-length"]
    if len(lengths) != 1:
        raise ValueError("no Content-Length")
    length = int(lengths[0])
    if length > MAX_PROOF_BYTES:
        raise ValueError("too long")
    while len(body) < length:
        body += await _more(stream, timeout, len(head) + len(body))
    if len(body) > length:
        raise ValueError("more than its Content-Length")
    return status, body


async def _more(stream: httpcore2.AsyncNetworkStream, timeout: float | None, so_far: int) -> bytes:
    if so_far > MAX_PROOF_BYTES:
        raise ValueError("too long")
    chunk = await stream.read(MAX_PROOF_BYTES, timeout)
    if not chunk:
        raise ValueError("the connection closed")
    return chunk


class _ProvenTransport(httpx2.AsyncHTTPTransport):
    def __init__(self, holder: Holder) -> None:
        # httpx2 takes no network backend: its pool is made again, with the backend that proves connections.
        # verify=False spares building an SSL context from the system CA bundle (~27 ms) that the replaced
        # pool never uses: a bridge is only plain http on this machine.
        super().__init__(verify=False, trust_env=False)
        self._pool = httpcore2.AsyncConnectionPool(network_backend=_ProvingBackend(holder), max_connections=100,
                                                   max_keepalive_connections=20, keepalive_expiry=5.0)


class _LossAnswered(httpx2.AsyncBaseTransport):
    """A request the server can no longer take (it is gone, or what now holds the port is not proven)
    is answered with JSON-RPC CONNECTION_CLOSED, as a stopping server answers: the relay reads it as its
    upstream lost. Raised, the error would end the SDK's transport and the agent's session with it."""

    def __init__(self, inner: httpx2.AsyncBaseTransport) -> None:
        self.inner = inner

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        try:
            return await self.inner.handle_async_request(request)
        except httpx2.TransportError as exc:
            error = {"code": types.CONNECTION_CLOSED, "message": f"the bridge holding the port is gone: {exc}"}
            return httpx2.Response(503, json={"jsonrpc": "2.0", "id": None, "error": error}, request=request)

    async def aclose(self) -> None:
        await self.inner.aclose()
