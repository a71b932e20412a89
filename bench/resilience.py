"""Exactly once through faults: every agent call answered once, with its own answer, while pages drop.

The bridge runs as its own process (`agui-mcp-bridge serve --page-grace 10`, so its resident memory
can be read from /proc); pages and agents run here. Each page is a `websockets` client plus an SSE
reader (httpx) that registers one tool, `echo`, in the default room, its description naming the page
(the same definition from several pages would be one tool, called at the page used last): the names
collide, so each page's calls use the MCP name the bridge gave it in `agui.tools.registered`. A handful of MCP SDK
clients of both protocol eras call every page's tool, `--concurrency` calls at a time per page,
each call's arguments carrying a unique token that the page echoes back after a short random delay.

While the calls run, each page suffers faults at random times (a seeded RNG per page; the kinds
come in a shuffled round, each once per round):

- `ws drop`: the WebSocket is aborted (no close frame); the page says `agui.hello` again with its
  session id, then sends the answers that found no socket meanwhile (as web_client/connection.js
  does) and, again, the answers it wrote in the last `--resend-window` seconds before the drop:
  nothing acknowledges an answer, so those may not have arrived;
- `stream drop`: the event stream is cut and opened again with `Last-Event-ID`, the last id read;
- `reload`: both are lost with everything the page held (answers not sent yet, ids read); a new
  page says hello with the same session id, registers the same tool (its MCP name must not
  change) and opens a fresh stream without `Last-Event-ID`, to be sent the invocations still waiting.

A page answers every invocation it receives, a replayed one too: the bridge must refuse a second
answer with `agui.error` `unknown_call` (counted). Checked: every call returns once, with its own
token: none lost (not returned once no call has returned for `stall` seconds, then `drain` seconds
more without faults), none an error, none with another call's token, none invoked under two call
ids (doubled). A reload re-sends every invocation still waiting, which would also hide one lost
earlier: `--faults ws-drop,stream-drop` shows whether resuming alone loses anything. Resident
memory (VmRSS) of the bridge is read after a warm-up round (the run's calls and faults, so what
is measured is growth, not first use) and again after the run and a short settle; `--rounds N`
repeats the run and reads it after each round, which tells a leak (growing every round) from the
allocator keeping a peak (growing once).

    .venv/bin/python bench/resilience.py                    # 100 pages x 20 calls, ~1 minute
    .venv/bin/python bench/resilience.py --quick            # 10 pages x 5 calls, ~5 s
    .venv/bin/python bench/resilience.py --pages 50 --calls 40 --seed 7 --faults ws-drop,stream-drop
    .venv/bin/python bench/resilience.py --bridge-src /tmp/variant   # a scratch copy of the package
    .venv/bin/python bench/resilience.py --redis    # pages on one process, agents on another (Redis)

Exits 1 when any call was lost, doubled, wrong or an error; `--json PATH` also writes the run's counts
there. tests/interaction/test_resilience.py runs the quick variant so (`--quick --no-warmup --settle 0 --json ...`).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import logging
import os
import platform
import random
import signal
import socket
import sys
import time
import zlib
from collections import Counter
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import websockets

ROOT = Path(__file__).resolve().parent.parent
ERAS = ("legacy", "2026-07-28")
ECHO = {"name": "echo", "description": "Answer with the token it is given.",
        "inputSchema": {"type": "object", "properties": {"token": {"type": "string"}}, "required": ["token"]}}
FAULTS = ("ws drop", "stream drop", "reload")


@dataclass
class Config:
    pages: int = 100
    calls: int = 20  # per page
    concurrency: int = 10  # calls in flight per page
    seed: int = 1
    clients: int = 4  # MCP SDK clients, alternating eras
    fault_every: float = 0.7  # mean seconds between two faults of one page
    down: tuple[float, float] = (0.0, 0.3)  # how long a page stays disconnected, seconds
    answer_delay: tuple[float, float] = (0.01, 0.4)  # how long a page takes to answer, seconds
    resend_window: float = 1.0  # after a WebSocket drop, answers written this recently are sent again (0: never)
    page_grace: float = 10.0
    faults: tuple[str, ...] = FAULTS  # the kinds of fault to inflict
    budget: float = 300.0  # seconds for all calls to return while faults go on
    stall: float = 60.0  # ... or until no call has returned for this long (see _calls)
    drain: float = 10.0  # then seconds for the rest to return without faults, else they are lost
    settle: float = 3.0  # seconds before reading memory
    warmup: bool = True
    rounds: int = 1  # rounds of `calls` per page, memory read after each
    client_keepalive: float = 2.0  # seconds an idle HTTP connection is reused by agents (see mcp_client)
    bridge_src: str | None = None  # run `bridge` from this directory instead (a scratch variant)
    redis: bool = False  # shared mode: pages on one bridge process, agents on another, through a redis-server

    @classmethod
    def quick(cls, **overrides: Any) -> Config:
        quick: dict[str, Any] = {"pages": 10, "calls": 5, "concurrency": 2, "clients": 2, "fault_every": 0.25,
                                 "answer_delay": (0.05, 0.5), "budget": 30.0, "stall": 8.0, "drain": 3.0, "settle": 1.0}
        return cls(**(quick | overrides))


@dataclass
class Tally:
    """What the run saw; `failed` says whether any guarantee was broken."""

    calls: int = 0
    ok: int = 0
    errors: list[str] = field(default_factory=list)  # the agent got isError or an exception
    lost: list[str] = field(default_factory=list)  # tokens of calls that never returned
    wrong: list[str] = field(default_factory=list)  # a call got another call's answer
    doubled: list[str] = field(default_factory=list)  # one call invoked under two call ids
    faults: Counter = field(default_factory=Counter)
    invocations: int = 0  # agui.tool.invoke events read by pages
    replays: int = 0  # ... of a call id a page (or its earlier self) had already been sent
    answers: int = 0  # agui.tool.return written to a socket
    resent: int = 0  # answers sent again after a WebSocket drop (see SimPage.fault)
    refused: int = 0  # agui.error unknown_call received for them
    rescued: int = 0  # calls whose first answer was lost with a dropped WebSocket, answered by the resend
    page_errors: Counter = field(default_factory=Counter)  # other agui.error codes
    renamed: int = 0  # a reloaded page's tool got another MCP name
    not_resumed: int = 0  # a hello with the session id opened a new session
    unexpected_closes: Counter = field(default_factory=Counter)  # the bridge ended a socket or stream
    reconnect_failures: Counter = field(default_factory=Counter)  # a reconnection attempt failed: why
    fault_failures: list[str] = field(default_factory=list)  # a page gave up reconnecting
    answered: set[str] = field(default_factory=set)  # tokens whose answer a page wrote to a socket
    stall_state: list[str] = field(default_factory=list)  # what the bridge had in flight when calls stalled
    relisted: int = 0  # results of a tool the SDK client did not see listed, so it listed tools again
    rss_before_kb: int = 0
    rss_after_kb: int = 0
    rss_rounds_kb: list[int] = field(default_factory=list)
    threads: tuple[int, int] = (0, 0)  # the bridge's threads before and after (each may hold a malloc arena)
    seconds: float = 0.0
    bridge_log: list[str] = field(default_factory=list)
    warmup: Tally | None = None

    @property
    def failed(self) -> bool:
        return (bool(self.errors or self.lost or self.wrong or self.doubled) or self.ok != self.calls
                or (self.warmup is not None and self.warmup.failed))

    def figures(self) -> dict[str, Any]:
        """What `--json` writes: the counts (lists counted, not listed: the report shows the first ones)."""
        counts = ("calls", "ok", "invocations", "replays", "answers", "resent", "refused", "rescued", "renamed",
                  "not_resumed", "relisted", "rss_before_kb", "rss_after_kb", "seconds")
        listed = ("errors", "lost", "wrong", "doubled", "fault_failures")
        counters = ("faults", "page_errors", "unexpected_closes", "reconnect_failures")
        return ({"failed": self.failed} | {name: getattr(self, name) for name in counts}
                | {name: len(getattr(self, name)) for name in listed}
                | {name: dict(getattr(self, name)) for name in counters})


# --- the bridge, as a process ------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def proc_status(pid: int, key: str) -> int:
    """A number from /proc/<pid>/status: `VmRSS` (KiB), `Threads`, ..."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {key} for process {pid}")


def rss_kb(pid: int) -> int:
    return proc_status(pid, "VmRSS")


def bridge_command(cfg: Config) -> tuple[list[str], dict[str, str]]:
    env = os.environ | {"PYTHONUNBUFFERED": "1"}
    if cfg.bridge_src is not None:
        return [sys.executable, "-m", "bridge.cli"], env | {"PYTHONPATH": cfg.bridge_src}
    script = Path(sys.executable).parent / "agui-mcp-bridge"  # the CLI, as installed
    return ([str(script)] if script.exists() else [sys.executable, "-m", "bridge.cli"]), env


@asynccontextmanager
async def redis_server():
    """Debian's redis-server on a free port, nothing kept on disk; its URL."""
    port = free_port()
    proc = await asyncio.create_subprocess_exec("redis-server", "--port", str(port), "--bind", "127.0.0.1",
                                                "--save", "", "--appendonly", "no",
                                                stdout=asyncio.subprocess.DEVNULL)
    try:
        for _ in range(200):
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.close()
                break
            except OSError:
                await asyncio.sleep(0.02)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        await proc.wait()


@asynccontextmanager
async def bridge_process(cfg: Config, log: list[str], *extra: str):
    port = free_port()
    command, env = bridge_command(cfg)
    proc = await asyncio.create_subprocess_exec(
        *command, "serve", "--port", str(port), "--page-grace", f"{cfg.page_grace:g}",
        "--log-level", "warning", *extra, cwd=cfg.bridge_src or ROOT, stderr=asyncio.subprocess.PIPE, env=env)
    assert proc.stderr is not None
    try:
        banner = await asyncio.wait_for(proc.stderr.readline(), 30)
        if b"MCP" not in banner:
            raise RuntimeError(f"the bridge did not start: {banner.decode(errors='replace')}"
                               f"{(await proc.stderr.read()).decode(errors='replace')}")

        async def keep_log() -> None:  # drained, so the bridge never blocks on a full pipe
            assert proc.stderr is not None
            while line := await proc.stderr.readline():
                log.append(line.decode(errors="replace").rstrip())

        reader = asyncio.create_task(keep_log())
        yield proc, f"http://127.0.0.1:{port}"
        proc.send_signal(signal.SIGTERM)
        await asyncio.wait_for(proc.wait(), 15)
        await asyncio.wait_for(reader, 5)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


@asynccontextmanager
async def mcp_client(url: str, era: str, keepalive: float):
    """An MCP SDK client with no connection limit, so the concurrency is the caller's.

    `keepalive`: the SDK's own client reuses an idle connection for up to 5 s, which is also when
    the bridge's uvicorn (`timeout_keep_alive` 5 s) closes it; a request sent on a connection the
    bridge is closing fails (httpx2.ReadError), and the SDK client then fails as a whole. Below
    5 s that race cannot happen; at 5 it does now and then (see bench/README.md).
    """
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    limits = httpx2.Limits(max_connections=None, max_keepalive_connections=None, keepalive_expiry=keepalive)
    async with httpx2.AsyncClient(limits=limits, timeout=httpx2.Timeout(30, read=300)) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=era) as client:
            yield client


# --- pages ---------------------------------------------------------------------------------------

class SimPage:
    """A page that loses its connections on purpose and must still answer every call once."""

    def __init__(self, index: int, url: str, http: httpx.AsyncClient, tally: Tally, cfg: Config,
                 rng: random.Random, invoked: dict[str, set[str]], seen: set[str]) -> None:
        self.index, self.url, self.http, self.tally, self.cfg, self.rng = index, url, http, tally, cfg, rng
        self.invoked = invoked  # token -> call ids it was invoked under (all pages)
        self.seen = seen  # call ids any page was sent (all pages)
        self.session_id: str | None = None
        self.events_url = ""
        self.mcp_name = ""
        self.ws: Any = None  # None while disconnected
        self.reader: asyncio.Task | None = None
        self.stream: asyncio.Task | None = None
        self.last_event_id: int | None = None
        self.outbox: dict[str, dict] = {}  # answers that found no socket, sent after reconnecting
        self.written: list[tuple[float, dict]] = []  # answers written on the current socket, and when
        self.answering: set[asyncio.Task] = set()
        self.replies: dict[int, asyncio.Future] = {}
        self.ids = itertools.count(1)
        self.faulting = False
        self.bag: list[str] = []  # fault kinds to come: each kind once per round, in a random order

    # connection -----------------------------------------------------------------------------

    async def open(self) -> None:
        await self._hello()
        echo = ECHO | {"description": f"{ECHO['description']} (page {self.index})"}
        reply = await self._request({"type": "agui.tools.register", "tools": [echo]})
        assert reply["type"] == "agui.tools.registered", reply
        (entry,) = reply["tools"]
        if self.mcp_name and entry["name"] != self.mcp_name:
            self.tally.renamed += 1
        self.mcp_name = entry["name"]
        await self._listen()

    async def _hello(self) -> None:
        ws = await websockets.connect(self.url.replace("http://", "ws://") + "/agui/ws", open_timeout=30,
                                      ping_interval=None, max_size=None)
        try:
            await ws.send(json.dumps({"type": "agui.hello", "room": "default", "session_id": self.session_id,
                                      "page": {"url": f"http://127.0.0.1/page/{self.index}",
                                               "title": f"Page {self.index}"}}))
            welcome = json.loads(await asyncio.wait_for(ws.recv(), 30))
            assert welcome["type"] == "agui.welcome", welcome
        except BaseException:
            ws.transport.abort()
            raise
        if self.session_id is not None and not welcome["resumed"]:
            self.tally.not_resumed += 1
        self.session_id, self.events_url = welcome["session_id"], welcome["events_url"]
        self.ws, self.written = ws, []
        self.reader = asyncio.create_task(self._read_socket(ws))
        for call_id, answer in list(self.outbox.items()):
            if await self._send(answer):
                del self.outbox[call_id]

    async def _listen(self) -> None:
        opened = asyncio.get_running_loop().create_future()
        self.stream = asyncio.create_task(self._read_events(self.last_event_id, opened))
        try:
            await asyncio.wait_for(opened, 30)
        except BaseException:
            self.stream.cancel()
            raise

    async def _retrying(self, step, *, socket: bool = True) -> None:
        """Try `step` until it works, backing off as web_client/connection.js does; failures are counted.
        `socket`: the step opens the WebSocket, so what a failed attempt left of it is dropped."""
        for attempt in itertools.count():
            try:
                return await step()
            except (OSError, EOFError, websockets.WebSocketException, httpx.HTTPError, TimeoutError, RuntimeError,
                    AssertionError) as exc:
                self.tally.reconnect_failures[f"{type(exc).__name__}: {exc}"[:160]] += 1
                if socket:
                    self._drop_socket()
                if attempt >= 10:
                    raise
                await asyncio.sleep(min(2.0, 0.1 * 2 ** attempt))

    def _drop_socket(self) -> None:
        ws, self.ws = self.ws, None
        if ws is not None:
            ws.transport.abort()
        if self.reader is not None and self.reader is not asyncio.current_task():
            self.reader.cancel()

    async def _drop_stream(self) -> None:
        if self.stream is not None:
            self.stream.cancel()
            await asyncio.gather(self.stream, return_exceptions=True)

    async def _request(self, message: dict) -> dict:
        if self.ws is None:
            raise ConnectionError("the WebSocket is gone")
        message["id"] = next(self.ids)
        self.replies[message["id"]] = future = asyncio.get_running_loop().create_future()
        await self.ws.send(json.dumps(message))
        return await asyncio.wait_for(future, 30)

    async def _read_socket(self, ws: Any) -> None:
        try:
            async for frame in ws:
                message = json.loads(frame)
                future = self.replies.pop(message.get("reply_to"), None) if "reply_to" in message else None
                if future is not None and not future.done():
                    future.set_result(message)
                elif message.get("type") == "agui.error" and message.get("code") == "unknown_call":
                    self.tally.refused += 1
                elif message.get("type") == "agui.error":
                    self.tally.page_errors[message.get("code")] += 1
        except websockets.ConnectionClosed:
            pass
        if self.ws is ws:  # not one of our drops: the bridge closed it
            self.tally.unexpected_closes[f"ws {ws.close_code}"] += 1
            self.ws = None
            if not self.faulting:
                await self._retrying(self._hello)

    async def _read_events(self, last_event_id: int | None, opened: asyncio.Future) -> None:
        headers = {"Last-Event-ID": str(last_event_id)} if last_event_id is not None else {}
        try:
            async with self.http.stream("GET", self.url + self.events_url, headers=headers) as response:
                if response.status_code != 200:
                    raise RuntimeError(f"event stream: HTTP {response.status_code}")
                opened.set_result(None)
                fields: dict[str, str] = {}
                async for line in response.aiter_lines():
                    if line == "":
                        if "data" in fields:
                            if fields.get("id", "").isdigit():
                                self.last_event_id = int(fields["id"])
                            self._event(json.loads(fields["data"]))
                        fields = {}
                    elif not line.startswith(":"):
                        key, _, value = line.partition(":")
                        fields[key] = fields.get(key, "") + value.removeprefix(" ")
        except Exception as exc:
            if not opened.done():
                opened.set_exception(exc)
                return
            self.tally.unexpected_closes[f"stream {type(exc).__name__}"] += 1
        else:
            self.tally.unexpected_closes["stream ended"] += 1
        if not self.faulting:  # as an EventSource does: back with Last-Event-ID
            await asyncio.sleep(0.1)
            await self._retrying(self._listen, socket=False)

    # answering ------------------------------------------------------------------------------

    def _event(self, data: dict) -> None:
        if data["type"] != "agui.tool.invoke":
            self.tally.page_errors[f"event {data['type']}"] += 1
            return
        self.tally.invocations += 1
        call_id, token = data["call_id"], data["params"]["token"]
        if call_id in self.seen:
            self.tally.replays += 1
        self.seen.add(call_id)
        self.invoked.setdefault(token, set()).add(call_id)
        task = asyncio.create_task(self._answer(call_id, token))
        self.answering.add(task)
        task.add_done_callback(self.answering.discard)

    async def _answer(self, call_id: str, token: str) -> None:
        await asyncio.sleep(self.rng.uniform(*self.cfg.answer_delay))
        answer = {"type": "agui.tool.return", "call_id": call_id, "result": token}
        if not await self._send(answer):
            self.outbox[call_id] = answer

    async def _send(self, message: dict) -> bool:
        ws = self.ws
        if ws is None:
            return False
        try:
            await ws.send(json.dumps(message))
        except websockets.ConnectionClosed:
            return False
        self.tally.answers += 1
        if message["type"] == "agui.tool.return":
            self.written.append((time.monotonic(), message))
            self.tally.answered.add(message["result"].removesuffix(" (again)"))
        return True

    # faults ---------------------------------------------------------------------------------

    def next_fault(self) -> str:
        if not self.bag:
            self.bag = self.rng.sample(self.cfg.faults, len(self.cfg.faults))
        return self.bag.pop()

    async def fault(self, kind: str) -> None:
        self.faulting = True
        try:
            self.tally.faults[kind] += 1
            unsure: list[dict] = []
            if kind == "ws drop" and self.cfg.resend_window > 0:
                # Nothing acknowledges an answer: what was written just before the drop may not have
                # arrived. Sent again after reconnecting; the bridge refuses those it already has.
                since = time.monotonic() - self.cfg.resend_window
                unsure = [{**a, "result": f"{a['result']} (again)"} for t, a in self.written if t >= since]
            if kind in ("ws drop", "reload"):
                self._drop_socket()
            if kind in ("stream drop", "reload"):
                await self._drop_stream()
            if kind == "reload":  # a new page: it knows only its session id (sessionStorage)
                for task in self.answering:
                    task.cancel()
                self.outbox.clear()
                self.last_event_id = None
            await asyncio.sleep(self.rng.uniform(*self.cfg.down))
            if kind == "ws drop":
                await self._retrying(self._hello)
                for answer in unsure:
                    if await self._send(answer):
                        self.tally.resent += 1
            elif kind == "stream drop":
                await self._retrying(self._listen, socket=False)
            else:
                await self._retrying(self.open)
        finally:
            self.faulting = False

    async def close(self) -> None:
        for task in (self.reader, self.stream, *self.answering):
            if task is not None:
                task.cancel()
        if self.ws is not None:
            await self.ws.close(1000)


# --- the run ---------------------------------------------------------------------------------------

async def _calls(pages: list[SimPage], clients: list[Any], cfg: Config, tally: Tally, tag: str,
                 invoked: dict[str, set[str]]) -> None:
    """Every page's calls, `cfg.concurrency` at a time per page, while its faults run."""
    outstanding: set[str] = set()  # tokens of the calls not returned yet
    sent: dict[str, int] = {}  # token -> the client that made the call
    stop_faults = asyncio.Event()
    last_return = time.monotonic()

    async def one(page: SimPage, token: str) -> None:
        nonlocal last_return
        sent[token] = zlib.crc32(token.encode()) % len(clients)
        client = clients[sent[token]]
        try:
            result = await client.call_tool(page.mcp_name, {"token": token})
        except Exception as exc:  # not CancelledError: a call cancelled at the deadline stays outstanding
            outstanding.discard(token)
            tally.errors.append(f"{token}: {type(exc).__name__}: {exc}")
            return
        finally:
            last_return = time.monotonic()
        outstanding.discard(token)
        text = result.content[0].text if result.content and hasattr(result.content[0], "text") else repr(result)
        if result.is_error:
            tally.errors.append(f"{token}: {text}")
        elif text == f"{token} (again)":
            tally.ok += 1
            tally.rescued += 1
        elif text != token:
            tally.wrong.append(f"{token} got {text}")
        else:
            tally.ok += 1

    async def page_calls(page: SimPage) -> None:
        gate = asyncio.Semaphore(cfg.concurrency)
        tokens = [f"{tag}-p{page.index}-c{n}" for n in range(cfg.calls)]
        outstanding.update(tokens)

        async def gated(token: str) -> None:
            async with gate:
                await one(page, token)

        await asyncio.gather(*(gated(t) for t in tokens))

    async def page_faults(page: SimPage, done: asyncio.Task) -> None:
        while cfg.faults and not (done.done() or stop_faults.is_set()):
            await asyncio.sleep(page.rng.expovariate(1 / cfg.fault_every))
            if not (done.done() or stop_faults.is_set()):
                try:
                    await page.fault(page.next_fault())
                except Exception as exc:  # the page is broken now: its calls will show it
                    tally.fault_failures.append(f"page {page.index}: {type(exc).__name__}: {exc}")
                    return

    tally.calls += cfg.calls * len(pages)
    work = [asyncio.create_task(page_calls(p)) for p in pages]
    chaos = [asyncio.create_task(page_faults(p, w)) for p, w in zip(pages, work)]
    # Faults go on while calls return. A call lost mid-run may still be delivered by a later reload
    # (a fresh stream is sent every invocation waiting): run with faults=("ws drop", "stream drop")
    # to see whether resuming alone loses anything. `stall` is generous because the first round is
    # slow: the MCP SDK client re-lists tools after each result of a tool it has not seen listed
    # (ClientSession.validate_tool_result), and with 100 tools the room is in search mode, where a
    # tool is listed only once called: ~800 tools/list in the warm-up, none in the run.
    deadline, pending = time.monotonic() + cfg.budget, set(work)
    while pending and time.monotonic() < deadline and time.monotonic() - last_return < cfg.stall:
        _, pending = await asyncio.wait(pending, timeout=0.5)
    if pending:  # what the bridge says it is waiting for, while it still is
        tally.stall_state.append(await _bridge_state(pages[0].http, pages[0].url))
        if os.environ.get("RESILIENCE_DEBUG"):
            _dump_tasks()
    stop_faults.set()
    await asyncio.gather(*chaos)
    if pending:  # no more faults: what still does not return is lost
        _, pending = await asyncio.wait(pending, timeout=cfg.drain)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
    for token in sorted(outstanding):
        where = ("not sent: its page's earlier calls did not return" if token not in sent
                 else "answered" if token in tally.answered else "read by its page" if token in invoked
                 else "never reached its page")
        client = f", client {sent[token]} ({ERAS[sent[token] % len(ERAS)]})" if token in sent else ""
        tally.lost.append(f"{token} ({where}{client})")


def _dump_tasks() -> None:
    """Where this process's tasks wait (innermost frames, counted), to stderr: RESILIENCE_DEBUG=1."""
    where: Counter = Counter()
    for task in asyncio.all_tasks():
        frames, coro = [], task.get_coro()  # type: list[str], Any
        while coro is not None:
            frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
            if frame is not None:
                frames.append(f"{Path(frame.f_code.co_filename).name}:{frame.f_lineno}:{frame.f_code.co_name}")
            coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
        where[" <- ".join(reversed(frames[-5:]))] += 1
    for line, n in where.most_common(25):
        print(f"tasks {n:5d} {line}", file=sys.stderr, flush=True)


async def _bridge_state(http: httpx.AsyncClient, url: str) -> str:
    """The calls the bridge has in flight, from its dashboard's JSON."""
    try:
        response = await http.get(url + "/api/state", timeout=10)
        if response.status_code != 200:
            return f"/api/state: HTTP {response.status_code}"
        state = response.json()
    except Exception as exc:
        return f"/api/state: {type(exc).__name__}: {exc}"
    calls = state.get("calls", [])
    ages = sorted(c.get("age_s", 0) for c in calls)
    connected = sum(p.get('connected', False) for r in state.get('rooms', []) for p in r.get('pages', []))
    return (f"bridge has {len(calls)} calls in flight on {len({c.get('page_id') for c in calls})} pages"
            + (f", ages {ages[0]:.1f}-{ages[-1]:.1f} s" if ages else "")
            + f"; pages connected: {connected}"
            + f"; recent outcomes: {dict(Counter(r.get('outcome') for r in state.get('recent', [])))}")


async def _every_tool_reached(http: httpx.AsyncClient, url: str, tools: int) -> None:
    """Shared mode: the agents' process has learnt every page's tool."""
    for _ in range(500):
        rooms = (await http.get(url + "/api/state")).json()["rooms"]
        if rooms and rooms[0]["tools"] == tools:
            return
        await asyncio.sleep(0.02)
    raise RuntimeError("the pages' tools did not all reach the agents' bridge process")


def _check_doubles(invoked: dict[str, set[str]], tally: Tally) -> None:
    for token, call_ids in invoked.items():
        if len(call_ids) > 1:
            tally.doubled.append(f"{token} invoked as {sorted(call_ids)}")


class _Unlisted(logging.Filter):
    """Counts, instead of printing, the MCP SDK's warning for a result of a tool it has not seen
    listed: after each such result the client lists the tools again (ClientSession.validate_tool_result).
    In search mode a deferred tool is listed once called, but only the `--max-activated` most recent."""

    def __init__(self) -> None:
        super().__init__()
        self.tally: Tally | None = None

    def filter(self, record: logging.LogRecord) -> bool:
        if "not listed by server" in record.getMessage() and self.tally is not None:
            self.tally.relisted += 1
            return False
        return True


_UNLISTED = _Unlisted()
logging.getLogger("client").addFilter(_UNLISTED)  # the MCP SDK's ClientSession logger


async def run(cfg: Config, progress=lambda _msg: None) -> Tally:
    """Start a bridge, open the pages, warm up, run the calls with faults; what was seen."""
    tally, warm = Tally(), Tally()
    _UNLISTED.tally = warm
    invoked: dict[str, set[str]] = {}
    seen: set[str] = set()
    async with AsyncExitStack() as stack:
        shared: tuple[str, ...] = ()
        if cfg.redis:
            shared = ("--redis-url", await stack.enter_async_context(redis_server()), "--max-calls-per-page", "1000")
        proc, url = await stack.enter_async_context(bridge_process(cfg, tally.bridge_log, *shared))
        agents_url = url
        if cfg.redis:  # the agents' process: every call crosses to the pages' process through Redis
            _, agents_url = await stack.enter_async_context(bridge_process(cfg, tally.bridge_log, *shared))
        http = await stack.enter_async_context(httpx.AsyncClient(
            timeout=httpx.Timeout(30, read=None), limits=httpx.Limits(
                max_connections=None, max_keepalive_connections=None, keepalive_expiry=cfg.client_keepalive)))
        pages: list[SimPage] = []  # closed after the agents, so no agent is told of tools leaving as it closes
        stack.push_async_callback(lambda: asyncio.gather(*(p.close() for p in pages), return_exceptions=True))
        clients = [await stack.enter_async_context(mcp_client(agents_url + "/mcp", ERAS[i % len(ERAS)],
                                                              cfg.client_keepalive))
                   for i in range(cfg.clients)]
        master = random.Random(cfg.seed)
        pages += [SimPage(i, url, http, warm, cfg, random.Random(master.getrandbits(64)), invoked, seen)
                  for i in range(cfg.pages)]
        gate = asyncio.Semaphore(20)

        async def opened(p: SimPage) -> None:
            async with gate:
                await p.open()

        await asyncio.gather(*(opened(p) for p in pages))
        if cfg.redis:
            await _every_tool_reached(http, agents_url, len(pages))
        progress(f"{len(pages)} pages open; {len(clients)} MCP clients ({', '.join(ERAS)})"
                 + (" on another bridge process, through Redis" if cfg.redis else ""))
        if cfg.warmup:  # a round like the run's, so what the run adds is growth, not first use
            await _calls(pages, clients, cfg, warm, "warm", invoked)
            progress(f"warm-up: {warm.ok}/{warm.calls} ok, faults {dict(warm.faults)}, "
                     f"failed reconnections {dict(warm.reconnect_failures)}, page errors {dict(warm.page_errors)}, "
                     f"closed by the bridge {dict(warm.unexpected_closes)}")
            await asyncio.sleep(cfg.settle)
        tally.rss_before_kb, threads_before = rss_kb(proc.pid), proc_status(proc.pid, "Threads")
        for p in pages:
            p.tally = tally
        _UNLISTED.tally = tally
        for n in range(cfg.rounds):
            started = time.perf_counter()
            await _calls(pages, clients, cfg, tally, f"run{n}", invoked)
            tally.seconds += time.perf_counter() - started
            await asyncio.sleep(cfg.settle)
            tally.rss_rounds_kb.append(rss_kb(proc.pid))
            if cfg.rounds > 1:
                progress(f"round {n + 1}: bridge RSS {tally.rss_rounds_kb[-1] / 1024:.1f} MiB")
        tally.rss_after_kb = tally.rss_rounds_kb[-1]
        tally.threads = (threads_before, proc_status(proc.pid, "Threads"))
        _check_doubles(invoked, tally)
        if cfg.warmup:
            tally.warmup = warm
    return tally


def report(cfg: Config, t: Tally) -> str:
    ratio = t.rss_after_kb / t.rss_before_kb if t.rss_before_kb else float("nan")
    rows = [
        ("pages", f"{cfg.pages} (seed {cfg.seed}; faults: {', '.join(cfg.faults)}, one per "
                  f"{cfg.fault_every:g} s per page on average)"),
        ("calls", f"{t.calls} ({cfg.rounds} x {cfg.calls} per page, {cfg.concurrency} at a time, "
                  f"{cfg.clients} MCP clients)" if cfg.rounds > 1 else
                  f"{t.calls} ({cfg.calls} per page, {cfg.concurrency} at a time, {cfg.clients} MCP clients)"),
        *((f"faults: {k}", f"{t.faults[k]}") for k in FAULTS),
        ("calls answered OK", f"{t.ok}"),
        ("errors", f"{len(t.errors)}"),
        ("lost", f"{len(t.lost)}"),
        ("doubled", f"{len(t.doubled)}"),
        ("wrong answer", f"{len(t.wrong)}"),
        ("invocations read by pages", f"{t.invocations}"),
        ("replays (call id sent again)", f"{t.replays}"),
        ("answers written to a socket", f"{t.answers}"),
        ("answers resent after a ws drop", f"{t.resent}"),
        ("second answers refused", f"{t.refused}"),
        ("calls rescued by a resent answer", f"{t.rescued}"),
        ("results of unlisted tools", f"{t.relisted}"),
        ("tool renamed on reload", f"{t.renamed}"),
        ("session not resumed", f"{t.not_resumed}"),
        ("other page errors", f"{sum(t.page_errors.values())} {dict(t.page_errors) or ''}".rstrip()),
        ("failed reconnections", f"{sum(t.reconnect_failures.values())}"),
        ("closed by the bridge", f"{sum(t.unexpected_closes.values())} {dict(t.unexpected_closes) or ''}".rstrip()),
        ("bridge RSS before", f"{t.rss_before_kb / 1024:.1f} MiB"),
        ("bridge RSS after", f"{t.rss_after_kb / 1024:.1f} MiB" + (
            f" (rounds: {', '.join(f'{kb / 1024:.1f}' for kb in t.rss_rounds_kb)})" if cfg.rounds > 1 else "")),
        ("RSS after / before", f"{ratio:.3f}" + ("" if ratio <= 1.05 else "  (over the 1.05 target)")),
        ("bridge threads before/after", f"{t.threads[0]} / {t.threads[1]}"),
        ("duration", f"{t.seconds:.1f} s"),
    ]
    width = max(len(k) for k, _ in rows)
    lines = [f"{k.ljust(width)}  {v}" for k, v in rows]
    if t.lost:
        lines.append(f"lost, by where they stopped: {dict(Counter(i.split(' (', 1)[1].rstrip(')') for i in t.lost))}")
        lines += [f"stalled: {state}" for state in t.stall_state]
    for name, items in (("failed reconnections", [f"{n} x {why}" for why, n in t.reconnect_failures.most_common()]),
                        ("pages that gave up", t.fault_failures), ("errors", t.errors), ("lost", t.lost),
                        ("doubled", t.doubled), ("wrong", t.wrong)):
        if items:
            lines.append(f"{name} (first 10):")
            lines += [f"  {item}" for item in items[:10]]
    problems = [line for line in t.bridge_log if line.strip()]
    if problems:
        lines.append(f"bridge log ({len(problems)} lines, first 20):")
        lines += [f"  {line}" for line in problems[:20]]
    w = t.warmup
    if w is not None and w.lost:
        kinds = Counter(item.split(" (", 1)[1].rstrip(")") for item in w.lost)
        lines.append(f"warm-up lost: {dict(kinds)}")
        lines += [f"warm-up stalled: {state}" for state in w.stall_state]
    if w is not None and w.failed:
        lines.append(f"warm-up FAILED: {w.ok} of {w.calls} calls OK; errors {len(w.errors)}, lost {len(w.lost)}, "
                     f"wrong {len(w.wrong)}, doubled {len(w.doubled)}; first: {(w.errors + w.lost + w.wrong)[:3]}")
    lines.append("FAILED: a call was lost, doubled, wrong or an error" if t.failed
                 else "OK: every call answered exactly once")
    return "\n".join(lines)


def machine() -> str:
    model = "?"
    try:
        model = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                     if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return (f"{time.strftime('%Y-%m-%d %H:%M:%S %Z')}; {os.cpu_count()} CPUs, {model}; "
            f"Python {platform.python_version()}; load {os.getloadavg()[0]:.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int)
    parser.add_argument("--calls", type=int, help="calls per page")
    parser.add_argument("--concurrency", type=int, help="calls in flight per page")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--faults", help="comma-separated kinds of fault: ws-drop, stream-drop, reload "
                                          "(default all three), or none")
    parser.add_argument("--client-keepalive", type=float,
                        help="seconds agents' HTTP clients reuse an idle connection (default 2; the MCP SDK's is 5)")
    parser.add_argument("--bridge-src", help="run the bridge package found in this directory (a scratch variant)")
    parser.add_argument("--resend-window", type=float,
                        help="seconds: answers written this soon before a WebSocket drop are sent again "
                             "(default 1; 0: never)")
    parser.add_argument("--stall", type=float,
                        help="seconds without any call returning after which the calls left are lost (default 60)")
    parser.add_argument("--rounds", type=int, help="repeat the run this many times, memory read after each (default 1)")
    parser.add_argument("--quick", action="store_true", help="10 pages x 5 calls, 2 at a time, ~5 s")
    parser.add_argument("--redis", action="store_true",
                        help="shared mode: the pages on one bridge process, the agents on another, through a "
                             "redis-server started on a free port (Debian's)")
    parser.add_argument("--settle", type=float, help="seconds before reading memory (default 3, --quick 1)")
    parser.add_argument("--no-warmup", action="store_true", help="no warm-up round: memory growth includes first use")
    parser.add_argument("--json", metavar="PATH", help="also write the run's counts to PATH as JSON")
    args = parser.parse_args()
    if args.faults is not None:
        kinds = tuple(k.strip().replace("_", " ").replace("-", " ") for k in args.faults.split(","))
        if kinds == ("none",):
            kinds = ()
        elif set(kinds) - set(FAULTS):
            parser.error("--faults: the kinds are ws-drop, stream-drop, reload, or none")
        args.faults = kinds
    overrides = {k: v for k, v in (("pages", args.pages), ("calls", args.calls), ("concurrency", args.concurrency),
                                   ("seed", args.seed), ("resend_window", args.resend_window),
                                   ("client_keepalive", args.client_keepalive), ("bridge_src", args.bridge_src),
                                   ("faults", args.faults), ("rounds", args.rounds),
                                   ("stall", args.stall), ("redis", args.redis or None), ("settle", args.settle),
                                   ("warmup", False if args.no_warmup else None)) if v is not None}
    cfg = Config.quick(**overrides) if args.quick else Config(**overrides)
    print(machine(), flush=True)
    tally = asyncio.run(run(cfg, progress=lambda msg: print(msg, flush=True)))
    print(report(cfg, tally))
    if args.json:
        Path(args.json).write_text(json.dumps(tally.figures(), indent=1))
    sys.exit(1 if tally.failed else 0)


if __name__ == "__main__":
    main()
