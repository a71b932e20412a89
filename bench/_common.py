"""Shared parts of the end-to-end benchmarks (roundtrip.py, memory.py, scale.py).

Every server runs in its own process, so what is measured is what an agent sees:

- the bridge: the command line, `agui-mcp-bridge serve --port N` (`start_bridge`);
- the floor: an MCP server built with the same SDK (low-level `mcp.server.Server`, handlers as
  keyword arguments, `StreamableHTTPSessionManager` under uvicorn) whose tools answer in-process
  (`python bench/_common.py floor --port N`, `start_floor`);
- the pages: one process holding any number of real pages, each a `websockets` client plus an
  event-stream reader on a plain asyncio connection, driven by JSON lines on its stdin
  (`python bench/_common.py pages --url U`, `Pages`);
- the agents: MCP SDK clients of either protocol era in the benchmark's own process (`mcp_client`).

Needs only what the project installs (mcp, uvicorn, starlette, websockets, httpx). Memory is read
from /proc (Linux).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import asynccontextmanager
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
ERAS = ("legacy", "2026-07-28")  # handshake era (Mcp-Session-Id) and the sessionless era
ERA_LABEL = {"legacy": "handshake", "2026-07-28": "2026-07-28"}

ECHO_SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
ECHO_TOOL = {"name": "echo", "description": "Answer with the text it is given.", "inputSchema": ECHO_SCHEMA}
WAIT_TOOL = {"name": "wait", "description": "Answer when released.", "inputSchema": ECHO_SCHEMA}
ARGUMENTS = {"text": "hello from the agent"}
ORDER_TOOL = {"name": "get_order", "description": "Read one order of the shop.",
              "inputSchema": {"type": "object", "properties": {"order_id": {"type": "integer"}},
                              "required": ["order_id"]}}


def bench_order(order_id: int) -> dict:
    """The pages' answer to get_order: order n, open when n is odd, its total 10 + n, with its items."""
    return {"id": order_id, "status": "open" if order_id % 2 else "closed", "total": 10.0 + order_id,
            "customer": f"customer {order_id}", "placed": "2026-11-28",
            "items": [{"sku": f"sku-{order_id}-{k}", "name": f"item {k}", "qty": k + 1, "price": 4.5}
                      for k in range(3)]}


# --- machine, processes, /proc ----------------------------------------------------------------

def machine() -> str:
    model = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions = " ".join(f"{p} {_version(p)}" for p in ("mcp", "uvicorn", "starlette", "websockets", "httpx"))
    return (f"{time.strftime('%Y-%m-%d %H:%M:%S %Z')}; nproc {os.cpu_count()}, {model}; "
            f"Python {platform.python_version()}; {versions}; bridge at {_commit()}")


def _commit() -> str:
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "bridge"], cwd=ROOT, capture_output=True,
                               text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "?"
    return f"{head or '?'}{' + uncommitted bridge/ changes' if dirty else ''}"


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "?"


def raise_fd_limit(wanted: int = 20_000) -> None:
    """Children inherit it: 1,000 pages are 2,000 sockets on each side."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kb(pid: int) -> int:
    """Resident memory (VmRSS) of a process, in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


def _cpu(pid: int) -> tuple[float, float]:
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2:].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far."""
    return sum(_cpu(pid))


def user_seconds(pid: int) -> float:
    """User CPU time a process has used so far (Python runs there; system time is its system calls)."""
    return _cpu(pid)[0]


def children_of(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


async def wait_listening(port: int, proc: subprocess.Popen, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"server on port {port} exited with {proc.returncode}")
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"nothing listens on port {port} after {timeout} s") from None
            await asyncio.sleep(0.05)


class Server:
    """A server subprocess; `pid` is the Python process serving (under a profiler, its child)."""

    def __init__(self, name: str, argv: list[str], port: int, cwd: Path = ROOT) -> None:
        self.name, self.port = name, port
        self.url = f"http://127.0.0.1:{port}"
        self.mcp_url = f"{self.url}/mcp"
        # The server's log goes to a file, as it would to a terminal or journal (a pipe nobody reads would block it).
        self.log = tempfile.NamedTemporaryFile(prefix=f"bench-{name}-", suffix=".log", delete=False)
        self.proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log)
        self.pid = self.proc.pid

    async def started(self) -> Server:
        await wait_listening(self.port, self.proc)
        # Under `py-spy record` the server is py-spy's child.
        kids = children_of(self.proc.pid)
        if kids and "py-spy" in Path(f"/proc/{self.proc.pid}/cmdline").read_bytes().decode(errors="replace"):
            self.pid = kids[0]
        return self

    def stop(self, wait: float = 15) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(2)  # SIGINT: uvicorn shuts down cleanly, a profiler writes its output
            try:
                self.proc.wait(wait)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def bridge_command(src: Path | None = None) -> list[str]:
    cli = Path(sys.executable).parent / "agui-mcp-bridge"
    return [str(cli)] if cli.exists() and src is None else [sys.executable, "-m", "bridge.cli"]


async def start_bridge(*extra: str, prefix: list[str] | None = None, src: Path | None = None) -> Server:
    """`agui-mcp-bridge serve --port N` with its defaults, plus `extra` flags.

    `src`: a directory holding another copy of the `bridge` package (a scratch variant to compare),
    run as `python -m bridge.cli` from there so that copy is the one imported.
    """
    port = free_port()
    argv = (prefix or []) + bridge_command(src) + ["serve", "--port", str(port), *extra]
    return await Server("bridge", argv, port, cwd=src or ROOT).started()


def add_bridge_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bridge-arg", action="append", default=[],
                        help="extra flag for agui-mcp-bridge serve, e.g. --bridge-arg=--log-level=warning")
    parser.add_argument("--bridge-src", type=Path,
                        help="run the bridge package found in this directory (a scratch variant) instead")


async def start_floor(prefix: list[str] | None = None, page_hop: bool = False) -> Server:
    """The floor; with `page_hop`, the floor whose echo tool asks a page (`PageHop`)."""
    port = free_port()
    argv = (prefix or []) + [sys.executable, str(Path(__file__)), "floor", "--port", str(port)]
    return await Server("hop" if page_hop else "floor", argv + ["--page-hop"] * page_hop, port).started()


# --- the floor: the same SDK, tools answered in-process ----------------------------------------

class PageHop:
    """The least a server can do to have a page answer a tool: the bench pages' side of the page
    protocol and nothing else (no catalog, limits, timeouts, resume, checks or logs). One event
    stream of `agui.tool.invoke` events out, `agui.tool.return` frames back on the WebSocket, a
    future per call. With it the floor measures what the page hop itself costs on this machine."""

    def __init__(self) -> None:
        self.events: asyncio.Queue[bytes] | None = None  # the one page's event stream
        self.socket: Any = None
        self.waiting: dict[str, asyncio.Future] = {}
        self.next_id = 0

    async def call(self, arguments: dict) -> Any:
        if self.events is None or self.socket is None:
            raise RuntimeError("no page connected")
        self.next_id += 1
        call_id = f"c{self.next_id}"
        future = self.waiting[call_id] = asyncio.get_running_loop().create_future()
        data = json.dumps({"type": "agui.tool.invoke", "call_id": call_id, "tool": "echo", "name": "echo",
                           "params": arguments})
        self.events.put_nowait(f"id: {self.next_id}\r\nevent: agui.tool.invoke\r\ndata: {data}\r\n\r\n".encode())
        try:
            return await future
        finally:
            del self.waiting[call_id]

    async def websocket(self, ws: Any) -> None:
        await ws.accept()
        hello = await ws.receive_json()
        assert hello["type"] == "agui.hello", hello
        await ws.send_json({"type": "agui.welcome", "session_id": "page", "events_url": "/agui/events"})
        self.socket = ws
        while True:
            message = json.loads(await ws.receive_text())
            if message["type"] == "agui.tool.return":
                future = self.waiting.get(message["call_id"])
                if future is not None and not future.done():
                    future.set_result(message["result"])
            elif message["type"] == "agui.tools.register":
                await ws.send_json({"type": "agui.tools.registered",
                                    "tools": [{"name": t["name"]} for t in message["tools"]]})

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """The page's event stream (an ASGI app, as Starlette passes a method a Request instead)."""
        self.events = asyncio.Queue()
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-store")]})
        await send({"type": "http.response.body", "body": b": hello\r\n\r\n", "more_body": True})
        while True:
            await send({"type": "http.response.body", "body": await self.events.get(), "more_body": True})


def floor_main(port: int, page_hop: bool = False) -> None:
    import contextlib

    import mcp_types as types
    import uvicorn
    from mcp.server import Server as McpServer
    from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.applications import Starlette
    from starlette.routing import Route, WebSocketRoute

    hop = PageHop() if page_hop else None
    release = asyncio.Event()
    waiting = 0
    # Every tool is listed: the SDK client lists tools again before each call of a tool it has not seen listed.
    control = [{"name": n, "description": d, "inputSchema": {"type": "object"}}
               for n, d in (("release", "Answer every waiting call."), ("waiting", "How many calls wait."))]
    tools = [types.Tool.model_validate(t) for t in (ECHO_TOOL, WAIT_TOOL, *control)]
    schemas = {t.name: t.input_schema for t in tools}

    async def list_tools(ctx, params):
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx, params: types.CallToolRequestParams):
        nonlocal waiting, release
        arguments = params.arguments or {}
        if params.name == "wait":
            waiting += 1
            try:
                await release.wait()
            finally:
                waiting -= 1
        elif params.name == "release":  # answers every waiting call
            release.set()
            release = asyncio.Event()
        elif params.name == "waiting":
            return types.CallToolResult(content=[types.TextContent(type="text", text=str(waiting))])
        elif hop is not None:
            return types.CallToolResult(content=[types.TextContent(type="text", text=str(await hop.call(arguments)))])
        return types.CallToolResult(content=[types.TextContent(type="text", text=str(arguments.get("text", "")))])

    server = McpServer("floor", version="1.0", on_list_tools=list_tools, on_call_tool=call_tool,
                       get_tool_input_schema=schemas.get)
    # A Host and Origin check on every request, as the bridge makes in front of its endpoints.
    security = TransportSecuritySettings(enable_dns_rebinding_protection=True,
                                         allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
                                         allowed_origins=["http://127.0.0.1:*", "http://localhost:*",
                                                          "http://[::1]:*"])
    manager = StreamableHTTPSessionManager(server, security_settings=security)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        async with manager.run():
            yield

    # An ASGI app instance (not a function), so Starlette passes scope/receive/send through, as in the bridge.
    routes = [Route("/mcp", StreamableHTTPASGIApp(manager))]
    if hop is not None:
        routes += [WebSocketRoute("/agui/ws", hop.websocket), Route("/agui/events", hop)]
    app = Starlette(routes=routes, lifespan=lifespan)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False, ws_per_message_deflate=False)


# --- pages: many real pages in one process, driven over stdin/stdout ----------------------------

class _Page:
    def __init__(self, owner: _PagesHost, index: int) -> None:
        self.owner, self.index = owner, index
        self.replies: asyncio.Queue[dict] = asyncio.Queue()
        self.tasks: list[asyncio.Task] = []
        self.session_id = ""
        self.names: list[str] = []

    async def connect(self, tools: list[dict], deflate: bool) -> None:
        import websockets

        o = self.owner
        # Each page its own app (origin): tabs of one app would share their tools' names, and their calls.
        self.ws = await websockets.connect(o.ws_url, compression="deflate" if deflate else None,
                                           max_size=None, ping_interval=None,
                                           origin=f"http://127.0.0.1:{20_000 + self.index}")
        await self.ws.send(json.dumps({"type": "agui.hello", "room": "default",
                                       "page": {"url": f"http://127.0.0.1/bench/{self.index}",
                                                "title": f"Bench page {self.index}"}}))
        welcome = json.loads(await self.ws.recv())
        assert welcome["type"] == "agui.welcome", welcome
        self.session_id = welcome["session_id"]
        self.tasks.append(asyncio.create_task(self._read_socket()))
        opened = asyncio.Event()
        self.tasks.append(asyncio.create_task(self._read_events(welcome["events_url"], opened)))
        await opened.wait()
        if tools:
            await self.register(tools)

    async def register(self, tools: list[dict]) -> list[str]:
        """The MCP names the tools got (a name taken by another page gets a suffix); a refused tool
        (a limit, say) is missing from them, its agui.error following the reply."""
        await self.ws.send(json.dumps({"type": "agui.tools.register", "tools": tools}))
        while True:
            reply = await self.replies.get()
            if reply["type"] == "agui.tools.registered":
                self.names += [t["name"] for t in reply["tools"]]
                return [t["name"] for t in reply["tools"]]
            if reply["type"] != "agui.error":  # an earlier registration's refusals are skipped
                raise RuntimeError(f"registration failed: {reply}")

    async def _read_socket(self) -> None:
        import websockets

        try:
            async for frame in self.ws:
                message = json.loads(frame)
                if message["type"] == "agui.error" and message.get("code") == "unknown_call":
                    continue  # an invocation replayed to a new stream and answered twice
                await self.replies.put(message)
        except websockets.ConnectionClosed:
            pass

    async def _read_events(self, events_url: str, opened: asyncio.Event) -> None:
        """The page's event stream, read as a browser's native EventSource would: one plain
        connection, the chunked body and the SSE fields parsed here (httpx's streaming cost the
        page process ~0.1 ms of CPU per event, which on 2 shared cores is charged to the bridge)."""
        o = self.owner
        reader, writer = await asyncio.open_connection(o.host, o.port, limit=1 << 24)
        try:
            writer.write(f"GET {events_url} HTTP/1.1\r\nHost: {o.host}:{o.port}\r\n"
                         "Accept: text/event-stream\r\n\r\n".encode())
            head = await reader.readuntil(b"\r\n\r\n")
            status = head.split(b" ", 2)[1]
            assert status == b"200", head
            assert b"transfer-encoding: chunked" in head.lower(), head
            opened.set()
            pending = b""
            while True:
                size = int((await reader.readuntil(b"\r\n"))[:-2].split(b";", 1)[0], 16)
                if size == 0:
                    return
                pending += (await reader.readexactly(size + 2))[:-2]
                *events, pending = pending.replace(b"\r\n", b"\n").split(b"\n\n")
                for raw in events:
                    event, data = "", []
                    for line in raw.decode().split("\n"):
                        field, _, value = line.partition(":")
                        value = value[1:] if value.startswith(" ") else value
                        if field == "event":
                            event = value
                        elif field == "data":
                            data.append(value)
                    if event == "agui.tool.invoke":
                        await o.invoked(self, json.loads("\n".join(data)))
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the bridge ended the stream
        finally:
            writer.close()

    async def answer(self, call_id: str, result: Any) -> None:
        await self.ws.send(json.dumps({"type": "agui.tool.return", "call_id": call_id, "result": result}))

    async def close(self) -> None:
        for task in self.tasks:
            task.cancel()
        try:
            await self.ws.close(1000)  # a deliberate leave: the bridge drops the session at once
        except Exception:
            pass


class _PagesHost:
    """Commands (one JSON object a line on stdin), each answered by one JSON line on stdout:

    {"cmd": "open", "n": N, "tools": [...], "deflate": true}  N more pages, each registering `tools`
    {"cmd": "register", "page": I, "tools": [...]}              page I registers more tools
    {"cmd": "close", "keep": K}                                  pages past the first K leave
    {"cmd": "hold", "on": true}                                  keep invocations unanswered (or not)
    {"cmd": "delay", "seconds": S}                               answer each invocation S seconds after it came
    {"cmd": "held"}  {"cmd": "release"}  {"cmd": "stats"}  {"cmd": "quit"}

    `get_order` is answered with `bench_order(order_id)`, any other tool with its `text` argument; `stats`
    counts the answers and the bytes of their results' JSON.
    """

    def __init__(self, url: str) -> None:
        self.url = url
        self.host, _, port = url.removeprefix("http://").partition(":")
        self.port = int(port)
        self.ws_url = url.replace("http://", "ws://") + "/agui/ws"
        self.pages: list[_Page] = []
        self.holding = False
        self.held: list[tuple[_Page, dict]] = []
        self.answered = 0
        self.answer_bytes = 0
        self.delay = 0.0
        self._later: set[asyncio.Task] = set()

    async def invoked(self, page: _Page, invoke: dict) -> None:
        if self.holding:
            self.held.append((page, invoke))
        elif self.delay:  # the event stream reads on meanwhile: the calls' delays overlap
            later = asyncio.create_task(self._answer(page, invoke, self.delay))
            self._later.add(later)
            later.add_done_callback(self._later.discard)
        else:
            await self._answer(page, invoke)

    async def _answer(self, page: _Page, invoke: dict, after: float = 0.0) -> None:
        if after:
            await asyncio.sleep(after)
        params = invoke["params"]
        result = bench_order(params["order_id"]) if invoke["tool"] == "get_order" else params.get("text", "")
        self.answered += 1
        self.answer_bytes += len(json.dumps(result))
        await page.answer(invoke["call_id"], result)

    async def open(self, n: int, tools: list[dict], deflate: bool = True, parallel: int = 50) -> dict:
        started = time.perf_counter()
        fresh = [_Page(self, len(self.pages) + i) for i in range(n)]
        self.pages += fresh
        gate = asyncio.Semaphore(parallel)

        async def one(p: _Page) -> None:
            async with gate:
                await p.connect(tools, deflate)

        await asyncio.gather(*(one(p) for p in fresh))
        return {"pages": len(self.pages), "seconds": time.perf_counter() - started, "names": [p.names for p in fresh]}

    async def run(self) -> None:
        reader = asyncio.StreamReader(limit=1 << 26)
        await asyncio.get_running_loop().connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader),
                                                           sys.stdin)
        while line := await reader.readline():
            command = json.loads(line)
            cmd = command.pop("cmd")
            try:
                reply = await self.do(cmd, **command)
            except Exception as exc:  # reported to the driver, which raises
                reply = {"error": f"{type(exc).__name__}: {exc}"}
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()
            if cmd == "quit":
                return

    async def do(self, cmd: str, **kw: Any) -> dict:
        if cmd == "open":
            return await self.open(**kw)
        if cmd == "register":
            started = time.perf_counter()
            names = await self.pages[kw["page"]].register(kw["tools"])
            return {"seconds": time.perf_counter() - started, "registered": len(names)}
        if cmd == "close":
            doomed, self.pages = self.pages[kw["keep"]:], self.pages[:kw["keep"]]
            await asyncio.gather(*(p.close() for p in doomed))
            return {"pages": len(self.pages)}
        if cmd == "hold":
            self.holding = kw["on"]
            return {}
        if cmd == "delay":
            self.delay = kw["seconds"]
            return {}
        if cmd == "held":
            return {"held": len(self.held)}
        if cmd == "release":
            held, self.held = self.held, []
            await asyncio.gather(*(self._answer(p, i) for p, i in held))
            return {"released": len(held)}
        if cmd == "stats":
            return {"answered": self.answered, "pages": len(self.pages), "answer_bytes": self.answer_bytes}
        if cmd == "quit":
            await asyncio.gather(*(p.close() for p in self.pages))
            return {}
        raise ValueError(f"unknown command {cmd}")


class CommandProcess:
    """The driver's handle on a process that takes commands as JSON lines on stdin and answers each
    with one JSON line on stdout (`{"error": ...}` when it failed)."""

    name = "process"

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.pid = proc.pid

    async def reply(self, cmd: str = "") -> dict:
        assert self.proc.stdout is not None
        line = await self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the {self.name} process exited ({await self.proc.wait()})")
        reply = json.loads(line)
        if "error" in reply:
            raise RuntimeError(f"{self.name}: {cmd}: {reply['error']}")
        return reply

    async def do(self, cmd: str, **kw: Any) -> dict:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps({"cmd": cmd, **kw}) + "\n").encode())
        await self.proc.stdin.drain()
        return await self.reply(cmd)


class Pages(CommandProcess):
    """The driver's handle on a pages process."""

    name = "pages"

    @classmethod
    async def start(cls, bridge: Server) -> Pages:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, str(Path(__file__)), "pages", "--url", bridge.url, cwd=ROOT,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=1 << 26)
        return cls(proc)

    async def stop(self) -> None:
        if self.proc.returncode is None:
            try:
                await asyncio.wait_for(self.do("quit"), 30)
            except Exception:
                pass
            if self.proc.returncode is None:
                try:
                    await asyncio.wait_for(self.proc.wait(), 10)
                except asyncio.TimeoutError:
                    self.proc.kill()
                    await self.proc.wait()


def filler_tools(prefix: str, start: int, n: int) -> list[dict]:
    """Distinct tools with their own schemas, as a real page registers."""
    return [{"name": f"{prefix}_{i}", "description": f"Filler tool number {i} of the {prefix} set.",
             "inputSchema": {"type": "object", "properties": {
                 "id": {"type": "string", "description": f"which item (#{i})"}}, "required": ["id"]}}
            for i in range(start, start + n)]


# --- agents ------------------------------------------------------------------------------------

@asynccontextmanager
async def mcp_client(url: str, era: str, connections: int | None = None):
    """An MCP SDK client of `era` ("legacy" = initialize handshake with Mcp-Session-Id, or a modern
    version such as "2026-07-28"), on one HTTP client with no pool limit so concurrency is the caller's."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

    limits = httpx2.Limits(max_connections=connections, max_keepalive_connections=connections)
    timeout = httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT)
    async with httpx2.AsyncClient(limits=limits, timeout=timeout) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=era) as client:
            yield client


async def call_text(client: Any, name: str = "echo", arguments: dict | None = None) -> str:
    result = await client.call_tool(name, arguments if arguments is not None else ARGUMENTS)
    if result.is_error:
        raise RuntimeError(f"{name} failed: {result.content[0].text if result.content else result}")
    return result.content[0].text


async def timed_calls(client: Any, calls: int, concurrency: int) -> tuple[list[float], float]:
    """`calls` echo calls from `concurrency` workers: (each call's latency in s, wall time in s)."""
    latencies: list[float] = []
    left = calls

    async def worker() -> None:
        nonlocal left
        while left > 0:
            left -= 1
            t0 = time.perf_counter()
            await call_text(client)
            latencies.append(time.perf_counter() - t0)

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return latencies, time.perf_counter() - started


# --- numbers and tables ------------------------------------------------------------------------

def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def table(headers: list[str], rows: list[list[Any]], left: int = 1) -> str:
    """Plain text table; the first `left` columns are left-aligned, the rest right-aligned."""
    cells = [[str(c) for c in headers]] + [[c if isinstance(c, str) else f"{c}" for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]

    def line(r: list[str]) -> str:
        return "  ".join(c.ljust(w) if i < left else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))

    out = [line(cells[0]), "-" * len(line(cells[0]))] + [line(r) for r in cells[1:]]
    return "\n".join(o.rstrip() for o in out)


def main() -> None:
    parser = argparse.ArgumentParser(description="helper processes of the benchmarks")
    roles = parser.add_subparsers(dest="role", required=True)
    floor = roles.add_parser("floor")
    floor.add_argument("--port", type=int, required=True)
    floor.add_argument("--page-hop", action="store_true", help="the echo tool asks a page (PageHop)")
    roles.add_parser("pages").add_argument("--url", required=True)
    args = parser.parse_args()
    raise_fd_limit()
    if args.role == "floor":
        floor_main(args.port, args.page_hop)
    else:
        asyncio.run(_PagesHost(args.url).run())


if __name__ == "__main__":
    main()


async def longest_stall(work: Any) -> tuple[float, float, Any]:
    """(seconds the work took, longest gap between 1 ms ticks of another task meanwhile, its result)."""
    worst = 0.0
    done = asyncio.Event()

    async def ticker():
        nonlocal worst
        last = time.perf_counter()
        while not done.is_set():
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            worst = max(worst, now - last - 0.001)
            last = now

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0.01)
    started = time.perf_counter()
    result = await work()
    took = time.perf_counter() - started
    done.set()
    await task
    return took, worst, result


async def timed(runs: int, action: Any) -> list[float]:
    """Seconds each of `runs` awaits of `action()` took."""
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        await action()
        samples.append(time.perf_counter() - started)
    return samples
