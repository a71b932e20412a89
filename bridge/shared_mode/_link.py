"""Shared mode: several bridge processes serve one set of rooms through Redis (`--redis-url`).

Every process keeps the whole catalog: its own pages, and a mirror of the pages other
processes hold, kept current from the `catalog` channel and loaded from Redis at start and
after a lost connection. What a page is asked lives in Redis until its call ends, so
whichever process serves the page's event stream reads it there, and a page that comes back
on another process finds it; a page's answer is claimed once in Redis and published to the
process whose agent waits. Processes prove they live with a heartbeat key: the pages of one
that stops are given the grace period to come back elsewhere, then dropped, and their calls
fail as any call of a page that went away; the calls whose agent waited on one that stopped are
cancelled at their pages by whichever process streams them, but for a surviving program's (a task's
program, `_programs`): those wait for the process that goes on with their program, which takes them
over (`adopt`). docs/scaling.md has the keys, their lifetimes and the failure cases.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Any, cast

from redis.asyncio import BlockingConnectionPool, Redis
from redis.exceptions import RedisError

from bridge.core import messages
from bridge.core.calls import CallTable, Outcome, ProgramCall
from bridge.core.catalog import Catalog, Room, Tool
from bridge.core.hub import HubObserver, LinkDown
from bridge.core.messages import ProtocolError
from bridge.core.pages import Pages
from bridge.core.sessions import OTHER_EVENTS_KEPT, PageEvent, PageSession
from bridge.search.index import ToolIndex
from bridge.shared_mode import _scripts as scripts
from bridge.shared_mode._mirror import OrderedWork, ToolMirror

log = logging.getLogger(__name__)

BACKOFF_MAX = 1.0  # a Redis that is back serves calls within about this long
REDIS_CONNECTIONS = 32
UNAVAILABLE = ("The bridge lost its connection to Redis, which it shares pages and calls through; "
               "try again in a moment.")
AGENT_GONE = "the agent's bridge process stopped"
TAKEN_FOR_STOPPED = ("This bridge process missed its heartbeats to Redis, so the others took it for stopped and "
                     "cancelled the call at its page; call again.")
PROGRAM_TAKEN_OVER = ("This bridge process missed its heartbeats to Redis, so the others took it for stopped and "
                      "another goes on with this program: this process sends none of its calls any more.")

class RedisLink(HubObserver):
    """The hub's link to the other processes (see `bridge.core.hub.HubLink`); as one of the hub's
    observers it tells them of this process's pages and tools.

    The hub is built with this link; the composer then gives the link the hub's parts it
    works on (`attach`), before anything connects."""

    calls: CallTable
    catalog: Catalog
    pages: Pages
    mirror: ToolMirror

    def __init__(self, url: str, *, page_grace: float, call_timeout: float, heartbeat: float = 1.0,
                 prefix: str = "agui:") -> None:
        self.page_grace = page_grace
        self.call_timeout = call_timeout
        self.process_id = secrets.token_hex(8)
        self.heartbeat = heartbeat
        self.prefix = prefix
        # Calls wait their turn for one of a bounded set of connections rather than fail at a burst.
        self.redis = Redis(connection_pool=BlockingConnectionPool.from_url(
            url, max_connections=REDIS_CONNECTIONS, timeout=5, decode_responses=True, socket_connect_timeout=2,
            socket_keepalive=True))
        self._push = self.redis.register_script(scripts.PUSH)
        self._settle = self.redis.register_script(scripts.SETTLE)
        self._reply = self.redis.register_script(scripts.REPLY)
        self._forget = self.redis.register_script(scripts.FORGET)
        self._adopt = self.redis.register_script(scripts.ADOPT_CALL)
        self._pubsub = self.redis.pubsub(ignore_subscribe_messages=True)
        self._streamed: set[str] = set()  # pages whose events this process subscribes to
        self._asked: set[str] = set()  # calls of this process whose invocation is in Redis
        self._owners: dict[str, str] = {}  # call_id -> the other process whose agent waits, for pages streamed here
        self._unsettled: dict[str, str] = {}  # call_id -> page: calls that ended while Redis was away
        self._writes: asyncio.Queue[Callable[[], Awaitable[Any]]] = asyncio.Queue()  # in order: page then tools
        self._tasks: set[asyncio.Task[Any]] = set()
        # A page's pushes and call ends, in order: a cancel, then its call's end (the other way round, the
        # page's process hears the call ended and drops the cancel as a stale event).
        self._page_writes = OrderedWork(self._spawn)
        self._runners: list[asyncio.Task[Any]] = []
        self.up = False
        self._live = False  # the current pubsub is subscribed: an event stream opening follows its page on it
        self._tried = asyncio.Event()  # the first attempt to connect and load the catalog ended

    def attach(self, *, calls: CallTable, catalog: Catalog, pages: Pages,
               embed_later: Callable[[ToolIndex], None]) -> None:
        """The hub's call table, catalog and pages, which other processes' news updates, and how a
        room's tools are queued for embedding."""
        self.calls, self.catalog, self.pages = calls, catalog, pages
        self.mirror = ToolMirror(catalog, embed_later)

    # --- keys ------------------------------------------------------------------------------

    def _page(self, sid: str, part: str = "") -> str:
        return f"{self.prefix}page:{sid}{part}"

    def _page_keys(self, sid: str) -> list[str]:
        return [self._page(sid), self._page(sid, ":tools"), self._page(sid, ":calls"), self._page(sid, ":others")]

    def _events(self, sid: str) -> str:
        """The channel of a page's events, which the process streaming them to the page follows."""
        return f"{self.prefix}events:{sid}"

    def _call(self, call_id: str) -> str:
        return f"{self.prefix}call:{call_id}"

    def program(self, run_id: str, part: str = "") -> str:
        """A surviving program's key (`:calls`, the calls it sent), which `_programs` keeps."""
        return f"{self.prefix}program:{run_id}{part}"

    @property
    def _catalog(self) -> str:
        return self.prefix + "catalog"

    def _proc(self, pid: str) -> str:
        return f"{self.prefix}proc:{pid}"

    @property
    def _beat_ttl_ms(self) -> int:
        """How long a process is taken for alive after its last heartbeat."""
        return int(3 * self.heartbeat * 1000)

    @property
    def _ttl_ms(self) -> int:
        """How long a page's keys outlive their holder's last heartbeat."""
        return int((self.page_grace + 3 * self.heartbeat) * 1000)

    @property
    def _call_ttl_ms(self) -> int:
        return int((self.call_timeout + self.page_grace + 3 * self.heartbeat) * 1000)

    # --- life ------------------------------------------------------------------------------

    async def start(self) -> None:
        """Listen and beat; returns once the catalog is loaded, or once Redis did not answer (the
        link keeps trying, and calls fail with a clear error meanwhile)."""
        self._runners = [asyncio.create_task(self._listen()), asyncio.create_task(self._beat()),
                         asyncio.create_task(self._write())]
        try:
            await asyncio.wait_for(self._tried.wait(), 5)
        except TimeoutError:
            pass
        if not self.up:
            log.error("Redis is not reachable; pages and agents get errors until it is (retrying)")

    async def close(self) -> None:
        """Let what the shutdown said reach Redis, then leave: other processes see this one gone at
        once, and its pages come back on them."""
        pending = list(self._tasks)
        if pending:
            await asyncio.wait(pending, timeout=2)
        try:
            await asyncio.wait_for(self._writes.join(), 2)
        except TimeoutError:
            pass
        # redis-py can swallow a cancel that lands mid-command (the loop then runs on): cancel again
        # until each has ended.
        running = set(self._runners)
        for _ in range(25):
            if not running:
                break
            for runner in running:
                runner.cancel()
            _, running = await asyncio.wait(running, timeout=0.2)
        await asyncio.gather(*(r for r in self._runners if r.done()), return_exceptions=True)
        try:
            await self.redis.delete(self._proc(self.process_id))
        except RedisError:
            pass
        await self._pubsub.aclose()
        await self.redis.aclose()

    def _spawn(self, work: Awaitable[Any], what: str) -> asyncio.Task[None]:
        async def logged() -> None:
            try:
                await work
            except RedisError as exc:
                log.warning("could not %s through Redis: %s", what, exc)
        task = asyncio.create_task(logged())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _queue(self, write: Callable[[], Awaitable[Any]]) -> None:
        self._writes.put_nowait(write)

    async def _write(self) -> None:
        """Catalog writes, one at a time in order, so other processes see a page before its tools."""
        while True:
            write = await self._writes.get()
            try:
                await write()
            except RedisError as exc:
                log.warning("a catalog change did not reach Redis (%s); it is sent again on reconnecting", exc)
            finally:
                self._writes.task_done()

    async def _listen(self) -> None:
        delay = 0.1
        while True:
            try:
                self._pubsub = self.redis.pubsub(ignore_subscribe_messages=True)
                followed = set(self._streamed)
                await self._pubsub.subscribe(self._catalog, self._proc(self.process_id),
                                             *(self._events(sid) for sid in followed))
                self._live = True
                if late := self._streamed - followed:  # streams that opened while this subscribed
                    await self._pubsub.subscribe(*(self._events(sid) for sid in late))
                await self._sync()
                if not self.up:
                    log.info("shared mode: process %s joined through Redis", self.process_id)
                self.up, delay = True, 0.1
                self._tried.set()
                async for message in self._pubsub.listen():
                    try:
                        self._dispatch(message["channel"], message["data"])
                    except Exception:  # one bad message (another version, a stray publisher) stops nothing
                        log.exception("ignored a message on %s that could not be applied", message["channel"])
            except (RedisError, OSError) as exc:
                self._live = False
                if self.up:
                    log.warning("lost the connection to Redis (%s); reconnecting", exc)
                    self._lost()
                self.up = False
                self._tried.set()
                # Every connection to the Redis that went away is closed now: the pool does not always
                # notice one the server closed, and would hand it out after Redis is back, failing a command.
                with contextlib.suppress(RedisError, OSError):
                    await self._pubsub.aclose()
                    await self.redis.connection_pool.disconnect()
                await asyncio.sleep(delay)
                delay = min(delay * 2, BACKOFF_MAX)

    def _lost(self) -> None:
        """No answer can reach this process without Redis: its agents' calls end now, with the reason,
        rather than at their timeout."""
        for call in self.calls.in_flight():
            self.calls.settle(call.call_id, Outcome.failure("unavailable", UNAVAILABLE))

    async def _beat(self) -> None:
        """Say this process lives, keep its pages' keys, and notice processes that stopped."""
        while True:
            try:
                if self.up:
                    await self._beat_once()
            except RedisError as exc:
                log.debug("heartbeat failed: %s", exc)
            await asyncio.sleep(self.heartbeat)

    async def _beat_once(self) -> None:
        held = self.pages.held_here()
        if self._unsettled:
            await self._tell_ended()
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.set(self._proc(self.process_id), "1", px=self._beat_ttl_ms)
            for session in held:
                pipe.pexpire(self._page(session.id), self._ttl_ms)
                pipe.pexpire(self._page(session.id, ":tools"), self._ttl_ms)
            await pipe.execute()
        mirrors = self.pages.held_elsewhere()
        asked = self._asked_here()
        living = await self.living({s.holder for s in mirrors if s.holder} | {owner for _, owner in asked.values()})
        for session in mirrors:
            # Its process stopped: the page has the grace period to come back on another one.
            if session.holder not in living and self.pages.unaccounted(session):
                log.info("page %s: its process %s stopped; waiting for it to come back", session.id[:6],
                         session.holder)
        for call_id, (sid, owner) in asked.items():
            if owner not in living:
                await self._cancel_orphan(sid, call_id, owner)

    async def lives(self, pid: str) -> bool:
        """Whether process `pid`'s heartbeat is in Redis."""
        return bool(await self.redis.exists(self._proc(pid)))

    async def living(self, pids: set[str]) -> set[str]:
        """The processes of `pids` whose heartbeat is in Redis."""
        if not pids:
            return set()
        ordered = sorted(pids)
        return {pid for pid, beat in zip(ordered, await self.redis.mget([self._proc(p) for p in ordered])) if beat}

    def _asked_here(self) -> dict[str, tuple[str, str]]:
        """call_id -> (page, process) for the calls waiting at pages streamed here whose agent waits on
        another process; owners of calls that ended are forgotten."""
        asked = {}
        for sid in self._streamed:
            session = self.pages.get(sid)
            for call_id in session.pending_calls if session is not None else ():
                owner = self._owners.get(call_id)
                if owner is not None:
                    asked[call_id] = (sid, owner)
        self._owners = {call_id: owner for call_id, (_, owner) in asked.items()}
        return asked

    async def _cancel_orphan(self, sid: str, call_id: str, owner: str) -> bool:
        """Cancel at its page a call whose agent's process stopped: no one else would end it before its
        timeout. Should that process live after all (it missed its heartbeats), its agent hears why. A
        surviving program's call is kept for the process that goes on with the program."""
        done = await self.cancel_stopped(sid, call_id, owner, AGENT_GONE)
        if done == 1:
            log.info("call %s: cancelled at page %s, its agent's process %s stopped", call_id, sid[:6], owner)
        elif isinstance(done, str):  # another process took it over: watched as that one's
            self._owners[call_id] = done
        elif done == -1:
            self._owners.pop(call_id, None)  # it ended
        return done == 1

    async def cancel_stopped(self, sid: str, call_id: str, owner: str, reason: str, *,
                             keep_programs: bool = True) -> int | str:
        """Cancel a call at its page while it is still `owner`'s and `owner`'s heartbeat is gone (with
        `keep_programs`, unless a surviving program's, whose program waits for a process): 1 when cancelled,
        else the reason (see scripts.PUSH)."""
        told = _outcome_message(call_id, Outcome.failure("unavailable", TAKEN_FOR_STOPPED))
        return cast(int | str, await self._push_to(sid, messages.tool_cancel(call_id, reason),
                                                    stopped=(owner, told), keep_programs=keep_programs))

    async def _sync(self) -> None:
        """After (re)connecting: write this process's pages as they are here, load everyone else's,
        give the event streams served here what they missed, and tell pages of the calls that ended
        here while Redis was away."""
        # Alive before any page of this process is seen, or others would take it for a stopped one's.
        await self.redis.set(self._proc(self.process_id), "1", px=self._beat_ttl_ms)
        now = time.time()
        for session in self.pages.held_here():
            await self._write_page(session, now)
            await self._write_tools(session, self.catalog.room(session.room).tools_of(session.id), [], full=True)
        sids = cast(list[str], await self.redis.zrange(self.prefix + "pages", 0, -1))
        async with self.redis.pipeline(transaction=False) as pipe:
            for sid in sids:
                pipe.hgetall(self._page(sid))
                pipe.hgetall(self._page(sid, ":tools"))
            replies = await pipe.execute()
        known = set()
        expired = [sid for sid, record in zip(sids, replies[::2]) if not record]
        if expired:  # pages whose record outlived every process that could forget them
            await self.redis.zrem(self.prefix + "pages", *expired)
        for sid, record, tools in zip(sids, replies[::2], replies[1::2]):
            if not record or record.get("holder") == self.process_id:
                continue
            known.add(sid)
            mirror = self._mirror_record(sid, record)
            if mirror is not None:
                entries = sorted((json.loads(t) for t in tools.values()), key=lambda t: t["seq"])
                self.mirror.change(mirror, entries, [], full=True)
        await self.mirror.settled()
        for session in self.pages.held_elsewhere():
            if session.id not in known:
                # Not in Redis (it lost its data, or the page left meanwhile): its holder writes it back
                # soon if it lives; if not, it goes after the grace period.
                self.pages.unaccounted(session)
        for sid in list(self._streamed):
            streamed = self.pages.get(sid)
            if streamed is not None and streamed.streaming:
                await self._backlog(streamed, None)
        await self._tell_ended()

    async def _tell_ended(self) -> None:
        """Cancel, to their pages, the calls that ended here while Redis was away (a page not yet
        written back by its process is tried again at the next heartbeat)."""
        for call_id, sid in list(self._unsettled.items()):
            if self.pages.get(sid) is None:  # the page is gone: nothing to tell
                del self._unsettled[call_id]
                self._asked.discard(call_id)
            elif await self._push_to(sid, messages.tool_cancel(call_id, "the bridge lost its connection to Redis")):
                await self._end_call(sid, call_id)
                del self._unsettled[call_id]

    # --- what other processes say ----------------------------------------------------------

    def _dispatch(self, channel: str, data: str) -> None:
        message = json.loads(data)
        if channel == self._catalog:
            if message.get("pid") != self.process_id:
                self._on_catalog(message)
        elif channel == self._proc(self.process_id):
            self._on_reply(message)
        else:
            session = self.pages.get(channel.removeprefix(self.prefix + "events:"))
            if session is None:
                return
            if "settled" in message:
                session.settled(message["settled"])
            else:
                self._deliver(session, message)

    def _deliver(self, session: PageSession, envelope: dict[str, Any]) -> None:
        """An event for a page streamed here; an invocation's process is kept, to cancel the call should
        that process stop."""
        event, owner = envelope["data"], envelope.get("owner")
        if event["type"] == "agui.tool.invoke" and owner not in (None, self.process_id):
            self._owners[event["call_id"]] = owner
        session.deliver(PageEvent(envelope["id"], event["type"], event))

    def _on_catalog(self, message: dict[str, Any]) -> None:
        """Where a page is and whether it is connected change here at once: nothing the mirror of its
        tools does reads or writes them, and a page dropped (it left) stops its mirroring."""
        op, sid = message["op"], message.get("sid", "")
        if op == "held":
            self._mirror(sid, message["room"], message["page"], message["pid"], True, message.get("origin"),
                         message.get("active", 0.0))
        elif op == "activate":
            self.mirror.activate(message["room"], message["keys"])
            return
        session = self.pages.get(sid)
        if session is None or session.holder == self.process_id:
            return
        if op == "away":
            self.pages.away(session)
        elif op == "used":
            self.pages.used(session, message["at"])
        elif op == "left":
            self._unsubscribe(sid)
            self.pages.drop(session)
        elif op == "tools":
            self.mirror.change(session, message["tools"], message["removed"], full=message["full"])

    def _mirror_record(self, sid: str, record: dict[str, str]) -> PageSession | None:
        return self._mirror(sid, record["room"], record["page"], record["holder"], record.get("connected") == "1",
                            record.get("origin") or None, float(record.get("active", 0)))

    def _mirror(self, sid: str, room: str, page: str, holder: str, connected: bool, origin: str | None,
                active_at: float) -> PageSession | None:
        return self.pages.mirror(sid, room, page, holder, connected, origin=origin, active_at=active_at)

    def _on_reply(self, message: dict[str, Any]) -> None:
        call_id = message["call_id"]
        if "outcome" in message:
            self._asked.discard(call_id)  # the answer ended it in Redis too
            self.calls.settle(call_id, Outcome(**message["outcome"]))
        else:
            self.calls.report(call_id, message["note"])

    # --- what this process says (HubObserver, HubLink) -------------------------------------

    def page_held(self, session: PageSession) -> None:
        self._queue(lambda: self._write_page(session, time.time()))

    async def _write_page(self, session: PageSession, joined: float) -> None:
        page = session.page.model_dump_json()
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.hset(self._page(session.id), mapping={
                "room": session.room, "page": page, "holder": self.process_id,
                "connected": "1" if session.connected else "0", "origin": session.origin or "",
                "active": repr(session.active_at)})
            pipe.pexpire(self._page(session.id), self._ttl_ms)
            pipe.zadd(self.prefix + "pages", {session.id: joined}, nx=True)
            pipe.publish(self._catalog, json.dumps({"op": "held", "pid": self.process_id, "sid": session.id,
                                                    "room": session.room, "page": page, "origin": session.origin,
                                                    "active": session.active_at}))
            await pipe.execute()

    def page_used(self, session: PageSession) -> None:
        at = session.active_at

        async def write() -> None:
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.hset(self._page(session.id), "active", repr(at))
                pipe.publish(self._catalog, json.dumps({"op": "used", "pid": self.process_id, "sid": session.id,
                                                        "at": at}))
                await pipe.execute()
        self._queue(write)

    def page_away(self, session: PageSession) -> None:
        async def write() -> None:
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.hset(self._page(session.id), "connected", "0")
                pipe.publish(self._catalog, json.dumps({"op": "away", "pid": self.process_id, "sid": session.id}))
                await pipe.execute()
        self._queue(write)

    def page_left(self, session: PageSession) -> None:
        self._unsubscribe(session.id)

        async def write() -> None:
            if await self._forget_page(session.id):
                await self.redis.publish(self._catalog, json.dumps({"op": "left", "pid": self.process_id,
                                                                    "sid": session.id}))
        self._queue(write)

    def expired(self, session: PageSession) -> None:
        """The grace period ran out here; the page is dropped unless it came back on a living process."""
        async def confirm() -> None:
            try:
                gone = await self._forget_page(session.id)
            except RedisError:
                self.pages.expect_back(session, self.heartbeat)  # ask again once Redis answers
                raise
            if gone:
                holder = session.holder
                self.pages.drop(session, for_all=True)
                if holder != self.process_id:
                    log.info("page %s did not come back after its process stopped", session.id[:6])
            else:
                record = cast(dict[str, str], await self.redis.hgetall(self._page(session.id)))
                if record:
                    self._mirror_record(session.id, record)
        self._spawn(confirm(), "confirm that a page went away")

    async def _forget_page(self, sid: str) -> bool:
        """Delete a page's keys unless a living process other than this one holds it."""
        return bool(await self._forget(keys=[*self._page_keys(sid), self.prefix + "pages"],
                                       args=[self.process_id, sid, self.prefix]))

    def tools_changed(self, session: PageSession, registered: list[Tool], removed: list[Tool]) -> None:
        self._queue(lambda: self._write_tools(session, registered, removed, full=False))

    async def _write_tools(self, session: PageSession, registered: list[Tool], removed: list[Tool], *,
                           full: bool) -> None:
        # Each entry written around the definition's JSON text as the tool keeps it: parsing and
        # writing 1,000 definitions again held the loop for tens of ms.
        now = time.time()
        entries: dict[Any, str] = {
            t.page_name: f'{{"definition":{t.definition_json},"key":{json.dumps(t.key)},"seq":{now + i * 1e-6!r}}}'
            for i, t in enumerate(registered)}
        change = json.dumps({"op": "tools", "pid": self.process_id, "sid": session.id,
                             "removed": [t.page_name for t in removed], "full": full})
        key = self._page(session.id, ":tools")
        async with self.redis.pipeline(transaction=False) as pipe:
            if full:
                pipe.delete(key)
            if removed:
                pipe.hdel(key, *(t.page_name for t in removed))
            if entries:
                pipe.hset(key, mapping=entries)
                pipe.pexpire(key, self._ttl_ms)
            pipe.publish(self._catalog, f'{change[:-1]},"tools":[{",".join(entries.values())}]}}')
            await pipe.execute()

    def room_activated(self, room: Room) -> None:
        message = json.dumps({"op": "activate", "pid": self.process_id, "room": room.name, "keys": room.activated})
        self._queue(lambda: self.redis.publish(self._catalog, message))

    async def invoke(self, session: PageSession, call_id: str, data: dict[str, Any],
                     program_call: ProgramCall | None = None) -> None:
        if not self.up:  # until this process follows its channel again, the page's answer would reach no one
            raise LinkDown("unavailable", UNAVAILABLE)
        try:
            number = await self._push_to(session.id, data, program_call=program_call)
        except RedisError as exc:
            log.warning("could not send a call to page %s through Redis: %s", session.id[:6], exc)
            raise LinkDown("unavailable", UNAVAILABLE) from None
        if number == 1:
            self._asked.add(call_id)
        elif number == -2:
            raise LinkDown("taken_over", PROGRAM_TAKEN_OVER)
        else:
            raise LinkDown("page_gone", "The page that provides this tool went away before the call reached it.")

    async def adopt(self, session: PageSession, call_id: str, run_id: str) -> bool:
        told = _outcome_message(call_id, Outcome.failure("unavailable", PROGRAM_TAKEN_OVER))
        try:
            adopted = await self._adopt(keys=[self._call(call_id), self.program(run_id)],
                                        args=[self.process_id, run_id, self.prefix, json.dumps(told)])
        except RedisError as exc:
            log.warning("could not take over call %s through Redis: %s", call_id, exc)
            return False
        if adopted:
            self._asked.add(call_id)
        return bool(adopted)

    def push(self, session: PageSession, data: dict[str, Any]) -> None:
        self._page_writes.add(session.id, lambda: self._push_to(session.id, data), f"send {data['type']} to a page")

    async def _push_to(self, sid: str, data: dict[str, Any], *, stopped: tuple[str, dict[str, Any]] | None = None,
                       keep_programs: bool = True, program_call: ProgramCall | None = None) -> Any:
        """Push an event to a page (scripts.PUSH says what it returns): with `stopped` (the process whose call
        this cancels, what to tell it), only while that call is that process's and its heartbeat is gone; with
        `program_call` (an invocation), marked as that surviving program's."""
        call_id = data.get("call_id", "")
        keys = [self._page(sid), self._page(sid, ":calls"), self._page(sid, ":others"), self._call(call_id),
                self._events(sid)]
        args: list[Any] = [data["type"], call_id, json.dumps(data), self.process_id, self._call_ttl_ms, sid,
                           OTHER_EVENTS_KEPT, self.prefix]
        if stopped is not None:
            owner, told = stopped
            args += ["stopped", owner, json.dumps(told), "1" if keep_programs else "0"]
        elif program_call is not None:
            keys += [self.program(program_call.run_id), self.program(program_call.run_id, ":calls")]
            args += ["program", program_call.run_id, program_call.sandbox_call_id]
        else:
            args.append("")
        return await self._push(keys=keys, args=args)

    def settled(self, session: PageSession, call_id: str) -> None:
        self._page_writes.add(session.id, lambda: self._end_call(session.id, call_id), "end a call")

    async def _end_call(self, sid: str, call_id: str) -> None:
        if call_id not in self._asked:
            return  # it never reached Redis
        try:
            await self._settle(keys=[self._page(sid, ":calls"), self._call(call_id), self._events(sid)], args=[call_id])
        except RedisError:
            self._unsettled[call_id] = sid  # ended here while Redis was away: the page is told on reconnecting
            raise
        self._asked.discard(call_id)

    async def answer(self, session: PageSession, call_id: str, outcome: Outcome) -> bool:
        return await self._send_reply(session, call_id, _outcome_message(call_id, outcome), claim=True)

    async def note(self, session: PageSession, call_id: str, note: dict[str, Any]) -> bool:
        return await self._send_reply(session, call_id, {"call_id": call_id, "note": note}, claim=False)

    async def _send_reply(self, session: PageSession, call_id: str, message: dict[str, Any], *, claim: bool) -> bool:
        try:
            return bool(await self._reply(keys=[self._call(call_id), self._page(session.id, ":calls"),
                                                self._events(session.id)],
                                          args=[session.id, json.dumps(message), "1" if claim else "0", self.prefix,
                                                call_id]))
        except RedisError:
            raise ProtocolError("unavailable", UNAVAILABLE, call_id=call_id) from None

    async def waiting(self, session: PageSession) -> list[str]:
        """The calls the page was asked that still wait; those whose agent's process stopped are
        cancelled now rather than listed (the page may be back before anyone else noticed)."""
        try:
            asked = cast(dict[str, str], await self.redis.hgetall(self._page(session.id, ":calls")))
            owners = {call_id: json.loads(event).get("owner") for call_id, event in asked.items()}
            others = {owner for owner in owners.values() if owner not in (None, self.process_id)}
            living = await self.living(others)
            for call_id, owner in owners.items():
                if owner in others and owner not in living and await self._cancel_orphan(session.id, call_id, owner):
                    del asked[call_id]
            return sorted(asked)
        except RedisError:
            return sorted(session.pending_calls)

    async def streaming(self, session: PageSession, last_event_id: int | None) -> None:
        """An event stream opens here: follow the page's events, and fetch what it has not seen."""
        try:
            if session.id not in self._streamed:
                self._streamed.add(session.id)
                if self._live:  # else the link follows it when it joins again
                    await self._pubsub.subscribe(self._events(session.id))
            await self._backlog(session, last_event_id)
        except RedisError as exc:  # the stream still opens; what it missed comes on reconnecting
            log.warning("could not read page %s's events from Redis: %s", session.id[:6], exc)

    async def _backlog(self, session: PageSession, last_event_id: int | None) -> None:
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.hvals(self._page(session.id, ":calls"))
            if last_event_id is not None:
                pipe.xrange(self._page(session.id, ":others"), f"{last_event_id + 1}-0", "+")
            replies = await pipe.execute()
        events = [json.loads(e) for e in replies[0]]
        if last_event_id is not None:
            events += [json.loads(fields["e"]) for _, fields in replies[1]]
        for event in sorted(events, key=lambda e: e["id"]):
            self._deliver(session, event)

    def _unsubscribe(self, sid: str) -> None:
        if sid in self._streamed:
            self._streamed.discard(sid)
            if self._live:
                self._spawn(self._pubsub.unsubscribe(self._events(sid)), "stop following a page's events")


def _outcome_message(call_id: str, outcome: Outcome) -> dict[str, Any]:
    """How a call's end travels to the process that waits for it (read back as `Outcome(**message["outcome"])`)."""
    return {"call_id": call_id, "outcome": {"result": outcome.result, "error": outcome.error, "kind": outcome.kind}}
