"""Running a `Bridge` with uvicorn: `serve()` (pages and MCP over HTTP) and `serve_stdio()`
(MCP on stdin/stdout, pages over HTTP in the same process).

The port is bound before anything else starts, so a port in use is one clear `PortInUse`
error rather than a started banner followed by uvicorn's traceback.
"""

from __future__ import annotations

import asyncio
import errno
import gc
import json
import logging
import math
import signal
import socket
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import replace
from functools import partial

import anyio
import uvicorn
from mcp.shared.message import SessionMessage

from bridge._proven_client import Holder, holder_gone
from bridge.app import Bridge
from bridge.config import Settings, UnusableSettings
from bridge.connections import ConnectionGuard, RepeatedErrorFilter, connection_cap, guarded_protocol, open_file_limit
from bridge.stdio_relay import Relay, UpstreamRefused, holder_of, http_upstream

log = logging.getLogger(__name__)


LINE_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class LineFormatter(logging.Formatter):
    """`logging.Formatter(LINE_FORMAT)`'s lines, written for this one format (a call's line is written
    for every call): the date and seconds formatted once a second rather than for every line
    (strftime was a third of the line), the line joined directly rather than by a %-format."""

    _second: int | None = None
    _seconds_text = ""

    def __init__(self) -> None:
        super().__init__(LINE_FORMAT)

    def format(self, record: logging.LogRecord) -> str:
        record.message = record.getMessage()
        record.asctime = self.formatTime(record)
        line = f"{record.asctime} {record.levelname} {record.name}: {record.message}"
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        for more in (record.exc_text, record.stack_info and self.formatStack(record.stack_info)):
            if more:
                line = line + more if line.endswith("\n") else f"{line}\n{more}"
        return line

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        if datefmt is not None:
            return super().formatTime(record, datefmt)
        second = int(record.created)
        if second != self._second:
            self._seconds_text = time.strftime(self.default_time_format, self.converter(record.created))
            self._second = second
        return f"{self._seconds_text},{int(record.msecs):03d}"  # as logging's default_msec_format


class JsonFormatter(LineFormatter):
    """One JSON object a line; a call's line carries its fields (see `Hub._finished`)."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {"time": self.formatTime(record), "level": record.levelname, "logger": record.name,
                 "message": record.getMessage()}
        entry |= getattr(record, "call", {})  # a call's line carries its fields
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


CLIENT_LOGGERS = ("httpx2", "httpcore2", "mcp.client.streamable_http")


def log_config(as_json: bool) -> dict:
    """Everything goes to stderr: in stdio mode stdout belongs to MCP alone."""
    formatter = {"()": JsonFormatter if as_json else LineFormatter}
    handler = {"handlers": ["stderr"], "propagate": False}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"line": formatter},
        # Out of files, asyncio would log a traceback per failed accept: once per cause instead.
        "filters": {"repeated_errors": {"()": RepeatedErrorFilter}},
        "handlers": {"stderr": {"class": "logging.StreamHandler", "stream": "ext://sys.stderr", "formatter": "line",
                                "filters": ["repeated_errors"]}},
        # A relaying stdio process is an HTTP client: one line a request would drown what the user needs.
        "loggers": {"uvicorn": handler, "uvicorn.access": handler, "bridge": handler,
                    **{name: {"level": "ERROR"} for name in CLIENT_LOGGERS}},
        "root": {"handlers": ["stderr"]},  # the libraries' own loggers (mcp, sse_starlette) alike
    }
# The WebSocket layer closes a connection (1009) whose frame passes 4x --max-message-bytes; below
# that the bridge reads the frame and answers `too_large`, ending the call it answered.
WS_FRAME_CAP_FACTOR = 4
SHUTDOWN_FLUSH_SECONDS = 0.2
# Longer than MCP clients keep an idle connection (httpx: 5 s), so the bridge never closes one just
# as a client reuses it (uvicorn's default of 5 s raced it: requests failed with ReadError).
KEEP_ALIVE_SECONDS = 30


class PortInUse(OSError):
    def __init__(self, host: str, port: int) -> None:
        super().__init__(errno.EADDRINUSE, f"port {port} on {host} is already in use (is another bridge running?); "
                                           "choose another with --port")


def bind(settings: Settings) -> socket.socket:
    """The listening socket, bound now; `PortInUse` when another process has the port."""
    family = socket.AF_INET6 if ":" in settings.host else socket.AF_INET
    try:
        sock = socket.create_server((settings.host, settings.port), family=family)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise PortInUse(settings.host, settings.port) from None
        raise
    # Accepted connections inherit it (Linux). Without it an answer written as headers then body
    # waits ~40 ms for the client's delayed ACK (Nagle): asyncio sets it only on sockets it creates.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


class _Server(uvicorn.Server):
    """uvicorn, but a stop signal first answers the calls in flight, while agents are still connected
    to read the answer (uvicorn then waits for their responses before it closes connections); and
    SIGTERM, a service manager's stop, ends the process with status 0 once it stopped gracefully."""

    def __init__(self, config: uvicorn.Config, bridge: Bridge) -> None:
        super().__init__(config)
        self._bridge = bridge

    def handle_exit(self, sig: int, frame: object) -> None:
        # A signal handler runs between two bytecodes: wake the loop to do the work on it.
        asyncio.get_running_loop().call_soon_threadsafe(self._answer_then_exit, sig, frame)

    def _answer_then_exit(self, sig: int, frame: object) -> None:
        self._bridge.shutdown()
        # A moment for the answers and the pages' cancels to go out before streams are cut.
        asyncio.get_running_loop().call_later(SHUTDOWN_FLUSH_SECONDS, self._exit, sig, frame)

    def _exit(self, sig: int, frame: object) -> None:
        if sig == signal.SIGTERM:
            # uvicorn would raise the signal again once stopped, and the process die of it (status 143).
            self.should_exit = True
        else:  # Ctrl-C: raised again once stopped (the CLI ends quietly), a second one forces the exit
            uvicorn.Server.handle_exit(self, sig, frame)  # type: ignore[arg-type]


class RunningServer:
    """A bridge being served on a bound socket; `port` is the real one (port 0 picks a free one)."""

    def __init__(self, bridge: Bridge, sock: socket.socket) -> None:
        self.bridge = bridge
        self.port: int = sock.getsockname()[1]
        s = bridge.settings
        # Deadlines for request heads and bodies, and a cap on connections below the open-file limit.
        self.guard = ConnectionGuard(connection_cap(s.max_connections, open_file_limit()),
                                     s.request_head_timeout, s.request_body_timeout)
        # No permessage-deflate: pages send small JSON, and each compressor costs ~50 KB a page.
        # Pings find a page whose machine vanished without closing its socket.
        config = uvicorn.Config(bridge, log_config=log_config(s.log_json), log_level=s.log_level, access_log=False,
                                ws_max_size=WS_FRAME_CAP_FACTOR * s.max_message_bytes, ws_per_message_deflate=False,
                                ws_ping_interval=10, ws_ping_timeout=10, timeout_graceful_shutdown=3,
                                timeout_keep_alive=KEEP_ALIVE_SECONDS, http=guarded_protocol(self.guard))
        self.uvicorn = _Server(config, bridge)
        self._sock = sock
        self._task: asyncio.Task[None] | None = None

    @property
    def url(self) -> str:
        return replace(self.bridge.settings, port=self.port).public_url.rstrip("/")

    @classmethod
    async def started(cls, settings: Settings, bridge: Bridge | None) -> RunningServer:
        bridge = bridge or Bridge(settings)
        server = cls(bridge, bind(bridge.settings))
        await server.start()
        return server

    async def start(self) -> None:
        self._task = asyncio.create_task(self.uvicorn.serve(sockets=[self._sock]))
        while not self.uvicorn.started:
            if self._task.done():
                await self._task
                raise RuntimeError("the bridge stopped while starting")
            await asyncio.sleep(0.01)

    async def wait(self) -> None:
        assert self._task is not None
        await self._task

    async def stop(self) -> None:
        self.bridge.shutdown()
        self.uvicorn.should_exit = True
        if self._task is not None:
            await self._task


async def serve(settings: Settings, *, bridge: Bridge | None = None,
                ready: Callable[[RunningServer], None] | None = None) -> None:
    """Serve pages and MCP over HTTP until interrupted. `ready` is called once listening."""
    server = await RunningServer.started(settings, bridge)
    _freeze_startup_heap()
    if ready is not None:
        ready(server)
    await server.wait()


def _freeze_startup_heap() -> None:
    """What starting allocated (modules, the app, the schemas' validators) lives as long as the process:
    kept out of the collector's scans, a full collection pauses every thread (the event loop too) for
    a few ms, not tens."""
    gc.collect()
    gc.freeze()


async def serve_stdio(settings: Settings, *, bridge: Bridge | None = None,
                      ready: Callable[[RunningServer], None] | None = None) -> None:
    """Serve MCP for `settings.room` on stdin/stdout until the agent closes stdin; pages connect over
    HTTP meanwhile. When another bridge holds the port, the agent is served through it
    (bridge.stdio_relay). `ready` is called whenever this process starts serving the port."""
    from mcp.server.stdio import stdio_server

    try:
        server = await RunningServer.started(settings, bridge)  # the MCP rooms run in the app's lifespan
        _freeze_startup_heap()
    except PortInUse:
        if bridge is not None:
            raise  # an embedder's own bridge is the one to serve
        holder = await _holder(settings)
        if holder is None:
            raise  # the port is not a bridge's
        # Closing the agent's write stream ends stdio_server's writer, so the process ends with stdin.
        async with stdio_server() as (read, write), write:
            await _serve_through_the_holder(settings, Relay(read, write), holder, ready)
        return
    if ready is not None:
        ready(server)
    room = server.bridge.mcp.server(settings.room).server
    try:
        async with stdio_server() as (read, write):
            await room.run(read, write, room.create_initialization_options())
    finally:
        await server.stop()


# A bridge that took the port over may take this long to answer: meanwhile the agent's messages wait.
HOLDER_WAIT_SECONDS = 10
PORT_POLL_SECONDS = 0.2


async def _probe(settings: Settings) -> Holder | None:
    """The bridge of this user holding the port (see `holder_of`)."""
    return await holder_of(settings.public_url.rstrip("/"), settings.agent_token)


async def _holder(settings: Settings) -> Holder | None:
    try:
        return await _probe(settings)
    except UpstreamRefused as exc:
        raise UnusableSettings(str(exc)) from None


async def _serve_through_the_holder(settings: Settings, relay: Relay, holder: Holder,
                                    ready: Callable[[RunningServer], None] | None) -> None:
    """The agent's messages go to the bridge holding the port (`holder`); when it stops, this process
    takes the port (or follows whichever bridge took it), until the agent closes stdin."""
    base = settings.public_url.rstrip("/")
    mcp_url = base + ("/mcp" if settings.room == "default" else f"/rooms/{settings.room}/mcp")
    while True:
        log.warning("port %d is held by agui-mcp-bridge %s: this agent is served through it (the same rooms, "
                    "pages and tools; demo %s/)", settings.port, holder.version, base)
        async with AsyncExitStack() as upstream:
            lost = await relay.through(await http_upstream(upstream, holder, mcp_url, settings.agent_token),
                                       gone=partial(holder_gone, holder, base))
        if not lost:
            return  # the agent closed stdin
        log.warning("the bridge on port %d stopped; this agent's calls in flight got an error", settings.port)
        found = await PortSearch(settings).next_holder(relay)
        if isinstance(found, RunningServer):
            log.warning("this process now serves port %d", settings.port)
            if ready is not None:
                ready(found)
            try:
                await _serve_through_own(found, settings.room, relay)
            finally:
                await found.stop()
            return
        if found is None:
            return  # the agent closed stdin while the port had no bridge
        holder = found


class PortSearch:
    """Finding the port's next holder once the bridge serving this agent stopped."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.why_not = "no bridge answers there yet"  # why the port has no holder this agent can use

    async def next_holder(self, relay: Relay) -> RunningServer | Holder | None:
        """This process's own bridge on the freed port, or the bridge that took it; None
        when the agent closes stdin first. Its messages wait for HOLDER_WAIT_SECONDS; then, while the port
        is held by a server this agent cannot be served through, its requests are answered with an error
        saying why, and the search goes on: the agent keeps its session."""
        found = await self._look(anyio.current_time() + HOLDER_WAIT_SECONDS)
        if found is not None:
            return found
        log.warning("port %d has no bridge this agent can be served through (%s): its requests get an error "
                    "until the port is free or a bridge of yours holds it", self.settings.port, self.why_not)
        async with anyio.create_task_group() as waiting:
            async def look() -> None:
                nonlocal found
                found = await self._look(math.inf)
                waiting.cancel_scope.cancel()

            waiting.start_soon(look)
            await relay.refuse(lambda: f"No bridge serves this agent now: {self.why_not}. It is served again as soon "
                                       f"as port {self.settings.port} is free or a bridge of yours holds it.")
            waiting.cancel_scope.cancel()  # the agent closed stdin
        if isinstance(found, RunningServer) and relay.agent_done:
            await found.stop()
            return None
        return found

    async def _look(self, deadline: float) -> RunningServer | Holder | None:
        while anyio.current_time() < deadline:
            try:
                with anyio.CancelScope(shield=True):  # a bridge started here is returned, never left behind
                    return await RunningServer.started(self.settings, None)
            except PortInUse:
                pass
            try:
                holder = await _probe(self.settings)
            except UpstreamRefused as exc:
                self.why_not = str(exc)
            else:
                if holder is not None:
                    return holder
                self.why_not = f"port {self.settings.port} is held by a server that does not answer as a bridge"
            await anyio.sleep(PORT_POLL_SECONDS)
        return None


async def _serve_through_own(server: RunningServer, room_name: str, relay: Relay) -> None:
    room = server.bridge.mcp.server(room_name).server
    to_room, room_reads = anyio.create_memory_object_stream[SessionMessage | Exception](16)
    room_writes, from_room = anyio.create_memory_object_stream[SessionMessage](16)
    async with anyio.create_task_group() as serving, to_room, from_room:
        serving.start_soon(room.run, room_reads, room_writes, room.create_initialization_options())
        await relay.through((from_room, to_room))
        serving.cancel_scope.cancel()
