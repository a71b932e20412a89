"""A program run as a task outlives its bridge process (shared mode): bridge processes joined by a real
redis-server, one of them killed (SIGKILL) while its program waits on a page; another takes the program over and
it completes, read with tasks/get through a surviving process by the real MCP SDK client declaring the tasks
extension. No page call is ever sent twice; a call whose answer went to the dead process reads "outcome unknown"
in the program. A record changed in Redis, unsealed, or of another sandbox version is refused, never loaded; of
two processes racing to take a program over, one does."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import hmac
import json
import subprocess
import textwrap
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from types import SimpleNamespace
from typing import Any

import pydantic_monty
import pytest
from agent_tasks import Tasks, cancel_task, start_task, task_ending
from code_mode_support import ServedPage, code_bridge, served_page
from mcp import Client
from redis.asyncio import Redis
from redis_support import start_bridge_process, stop, wait_for_port
from support import PortOnly, eventually, free_port

from bridge.code_mode import Limits, ParkedProgram, PendingCall
from bridge.core.calls import ProgramCall
from bridge.core.programs import Resumption
from bridge.core.surviving_programs import ClaimedProgram, SentCall, SurvivingRun
from bridge.core.tasks import Task
from bridge.shared_mode import _scripts as scripts
from bridge.shared_mode._link import PROGRAM_TAKEN_OVER
from bridge.shared_mode._programs import ABANDONED, SEAL_PURPOSE, UNSEALED, RedisPrograms

MONTY = pydantic_monty.__version__

OUTCOME_UNKNOWN = "outcome unknown: the answer to the call to confirm was lost; it may or may not have taken effect"
WAITS_ON_A_PERSON = textwrap.dedent("""
    first = await get_order(order_id=3)
    answer = await confirm(question=f"Refund order {first['id']}?")
    after = await get_order(order_id=4)
    [answer, first["id"], after["id"]]
    """)
CATCHES_A_LOST_ANSWER = textwrap.dedent("""
    try:
        answer = await confirm(question="Refund order 3?")
    except Exception as error:
        answer = f"no answer: {error}"
    answer
    """)
SLOW_HEARTBEAT = 2.0  # the dying process is taken for dead 3 heartbeats after its last: 6 s to act before that


async def until(check: Callable[[], Awaitable[Any]], timeout: float = 20) -> Any:
    """Wait (bounded) until the awaited `check()` is truthy; its value."""
    async def poll() -> Any:
        while not (value := await check()):
            await asyncio.sleep(0.05)
        return value
    return await asyncio.wait_for(poll(), timeout)


@asynccontextmanager
async def bridge_process(redis_url: str, heartbeat: float = 0.2) -> AsyncIterator[tuple[subprocess.Popen, PortOnly]]:
    """`agui-mcp-bridge serve` in its own OS process (code mode on, as by default), to kill."""
    port = free_port()
    process = start_bridge_process(port, redis_url, heartbeat)
    try:
        await wait_for_port(port)
        yield process, PortOnly(port)
    finally:
        stop(process)


@asynccontextmanager
async def redis_client(url: str) -> AsyncIterator[Redis]:
    client = Redis.from_url(url, decode_responses=True)
    try:
        yield client
    finally:
        await client.aclose()


async def offered(client: Client, name: str) -> None:
    """Once the agent's process lists `name` (a page of another process offers it)."""
    async def listed() -> bool:
        return name in [tool.name for tool in (await client.list_tools()).tools]
    await until(listed)


async def parked_on(redis: Redis, run_id: str, tool: str) -> None:
    """Once the program's record in Redis waits on a call of `tool` (its process writes it as the program parks)."""
    async def waiting() -> bool:
        envelope = await redis.hget(f"agui:program:{run_id}", "record")
        return bool(envelope) and [call["name"] for call in json.loads(json.loads(envelope)["record"])["pending"]] \
            == [tool]
    await until(waiting)


async def program_waiting_in(process: PortOnly, shop: ServedPage, redis: Redis, code: str) -> tuple[str, str, str]:
    """An agent (the MCP SDK client, declaring the tasks extension) starts `code` as a task through `process`;
    once the program waits on the person (`confirm`, held by the page) and its record says so: the task's id, the
    held call's id, and the process holding the program."""
    async with Client(process.url + "/mcp", extensions=[Tasks()]) as agent:
        await offered(agent, "confirm")
        created = await start_task(agent, "run_code", {"code": code})
    await eventually(lambda: shop.held)
    await parked_on(redis, created.task_id, "confirm")
    [call_id] = shop.held
    holder = await redis.hget(f"agui:program:{created.task_id}", "process")
    assert holder == await redis.hget(f"agui:call:{call_id}", "owner")  # the process that sent the call holds it
    return created.task_id, call_id, holder


async def read_through(process: Any, task_id: str) -> Any:
    """The task once it ended, read with tasks/get through `process` by the SDK client."""
    async with Client(process.url + "/mcp", extensions=[Tasks()]) as reader:
        return await task_ending(reader, task_id)


async def owned_by_another(redis: Redis, call_id: str, dead: str) -> bool:
    """Whether a process other than `dead` took the call over (the page's answer goes to it)."""
    owner = await redis.hget(f"agui:call:{call_id}", "owner")
    return owner is not None and owner != dead


async def claimed_by_an_answer(redis: Redis, call_id: str) -> bool:
    """Whether the page's answer claimed the call in Redis (it is gone)."""
    return not await redis.exists(f"agui:call:{call_id}")


def killed(process: subprocess.Popen) -> None:
    process.kill()  # SIGKILL: no goodbye; only its heartbeat stops
    process.wait(10)


async def test_a_program_whose_process_is_killed_goes_on_in_another_and_no_page_call_is_sent_twice(redis_url):
    async with bridge_process(redis_url) as (dying, dying_at), bridge_process(redis_url) as (_, surviving_at), \
            redis_client(redis_url) as redis, served_page(surviving_at) as shop:
        task_id, call_id, dead = await program_waiting_in(dying_at, shop, redis, WAITS_ON_A_PERSON)
        killed(dying)

        # The surviving process takes the waiting call over: the page's answer goes to it now.
        await until(lambda: owned_by_another(redis, call_id, dead))
        await shop.answer(call_id, "yes")
        done = await read_through(surviving_at, task_id)
        assert done.status == "completed", done
        assert done.result["structuredContent"] == {"result": ["yes", 3, 4]}

        # Each call reached the page once: the two before the process died, the last from the other process.
        assert [(event["tool"], event["params"]) for event in shop.invoked] == [
            ("get_order", {"order_id": 3}), ("confirm", {"question": "Refund order 3?"}),
            ("get_order", {"order_id": 4})]
        assert len({event["call_id"] for event in shop.invoked}) == 3 and shop.cancelled == []
        # Once over, only the mark that it ended stays (until it expires).
        taker = await redis.hget(f"agui:program:{task_id}", "process")
        assert taker != dead and await redis.hgetall(f"agui:program:{task_id}") == {"process": taker, "ended": "1"}
        assert not await redis.exists(f"agui:program:{task_id}:calls") and not await redis.hlen("agui:programs")



async def test_a_call_answered_while_its_process_was_dying_reads_outcome_unknown_and_is_never_sent_again(redis_url):
    async with bridge_process(redis_url, SLOW_HEARTBEAT) as (dying, dying_at), \
            bridge_process(redis_url) as (_, surviving_at), redis_client(redis_url) as redis, \
            served_page(surviving_at) as shop:
        task_id, call_id, dead = await program_waiting_in(dying_at, shop, redis, CATCHES_A_LOST_ANSWER)
        killed(dying)
        await shop.answer(call_id, "yes")  # the page answers: its answer goes to the dead process
        await until(lambda: claimed_by_an_answer(redis, call_id))
        # ... before any other process could take the call over: the dead one's heartbeat still counts.
        assert await redis.exists(f"agui:proc:{dead}")
        done = await read_through(surviving_at, task_id)
        assert done.status == "completed", done
        assert done.result["structuredContent"] == {"result": f"no answer: {OUTCOME_UNKNOWN}"}
        assert [event["tool"] for event in shop.invoked] == ["confirm"] and shop.cancelled == []


async def test_a_program_taken_over_is_cancelled_through_any_process_and_its_page_call_with_it(redis_url):
    async with bridge_process(redis_url) as (dying, dying_at), bridge_process(redis_url) as (_, other_at), \
            code_bridge(redis_url=redis_url, redis_heartbeat=0.2) as survivor, redis_client(redis_url) as redis, \
            served_page(survivor) as shop:
        task_id, call_id, dead = await program_waiting_in(dying_at, shop, redis, WAITS_ON_A_PERSON)
        killed(dying)
        await until(lambda: owned_by_another(redis, call_id, dead))
        async with Client(other_at.url + "/mcp", extensions=[Tasks()]) as agent:
            await cancel_task(agent, task_id)  # through a process that holds neither the program nor the page
            done = await task_ending(agent, task_id)
        assert done.status == "cancelled", done
        await eventually(lambda: [(event["call_id"], event["reason"]) for event in shop.cancelled]
                         == [(call_id, "cancelled by the agent")])
        assert [event["tool"] for event in shop.invoked] == ["get_order", "confirm"]


# --- what cannot be resumed ---------------------------------------------------------------


def sealed(secret: str, envelope: str) -> str:
    """The seal a bridge process of this deployment puts on a record (the key all of them share)."""
    key = hmac.new(secret.encode(), SEAL_PURPOSE, hashlib.sha256).digest()
    return hmac.new(key, envelope.encode(), hashlib.sha256).hexdigest()


def with_record(envelope: str, **changes: Any) -> str:
    """The envelope with fields of its parked program's record changed."""
    data = json.loads(envelope)
    data["record"] = json.dumps(json.loads(data["record"]) | changes)
    return json.dumps(data)


async def changed(redis: Redis, key: str) -> None:
    await redis.hset(key, "record", (await redis.hget(key, "record")).replace("Refund order", "Delete order"))


async def unsealed(redis: Redis, key: str) -> None:
    await redis.hdel(key, "seal")


async def of_another_sandbox(redis: Redis, key: str) -> None:
    envelope = with_record(await redis.hget(key, "record"), monty_version="0.0.1")
    await redis.hset(key, mapping={"record": envelope, "seal": sealed(await redis.get("agui:request-state-key"),
                                                                      envelope)})


@pytest.mark.parametrize(("tampering", "refusal"), [
    (changed, UNSEALED), (unsealed, UNSEALED),
    (of_another_sandbox, f"the program was parked by sandbox version 0.0.1, this process runs {MONTY}")])
async def test_a_record_changed_unsealed_or_of_another_sandbox_version_is_refused_and_never_loaded(
        redis_url, tampering, refusal):
    async with bridge_process(redis_url, SLOW_HEARTBEAT) as (dying, dying_at), \
            code_bridge(redis_url=redis_url, redis_heartbeat=0.2) as survivor, redis_client(redis_url) as redis, \
            served_page(survivor) as shop:
        task_id, call_id, _ = await program_waiting_in(dying_at, shop, redis, WAITS_ON_A_PERSON)
        killed(dying)
        await tampering(redis, f"agui:program:{task_id}")  # before its process is taken for dead
        done = await read_through(survivor, task_id)
        assert done.status == "completed" and done.result["isError"] is True, done
        error = done.result["structuredContent"]["error"]
        assert error["kind"] == "invalid"
        assert error["message"] == f"its bridge process stopped and it could not be resumed in another: {refusal}"
        assert not survivor.bridge.programs.started  # nothing was loaded into its sandbox: it never started
        # The person's dialog closes; nothing was sent again.
        await eventually(lambda: [event["call_id"] for event in shop.cancelled] == [call_id])
        assert [event["tool"] for event in shop.invoked] == ["get_order", "confirm"]
        assert await redis.hget(f"agui:program:{task_id}", "ended") == "1"


async def test_of_two_processes_racing_to_take_a_program_over_exactly_one_resumes_it(redis_url):
    async with bridge_process(redis_url, SLOW_HEARTBEAT) as (dying, dying_at), \
            code_bridge(redis_url=redis_url, redis_heartbeat=0.2) as b, \
            code_bridge(redis_url=redis_url, redis_heartbeat=0.2) as c, redis_client(redis_url) as redis, \
            served_page(b) as shop:
        task_id, call_id, dead = await program_waiting_in(dying_at, shop, redis, WAITS_ON_A_PERSON)
        killed(dying)
        await until(lambda: owned_by_another(redis, call_id, dead))
        holder = await redis.hget(f"agui:program:{task_id}", "process")
        taker, other = (b, c) if holder == b.bridge.link.process_id else (c, b)
        assert holder == taker.bridge.link.process_id == await redis.hget(f"agui:call:{call_id}", "owner")
        assert taker.bridge.programs.running == 1 and other.bridge.programs.running == 0
        await shop.answer(call_id, "yes")
        done = await read_through(other, task_id)  # read through the process that did not take it
        assert done.status == "completed" and done.result["structuredContent"] == {"result": ["yes", 3, 4]}
        assert [event["tool"] for event in shop.invoked] == ["get_order", "confirm", "get_order"]
        assert not other.bridge.programs.started and shop.cancelled == []


# --- the store of programs, through Redis -------------------------------------------------

RUN = "t_crafted"
STOPPED = "a-process-that-stopped"  # no heartbeat of that name is in Redis


def envelope_of(run_id: str = RUN, *, room: str = "default", **record: Any) -> str:
    """A program's record as a bridge process writes it (not loaded here: the snapshot is a stand-in)."""
    parked = ParkedProgram(run_id=run_id, code="await confirm(question='Go?')", snapshot=b"\0",
                           pending=(PendingCall(0, "confirm", {"question": "Go?"}),), calls_started=1, printed="",
                           printed_over=False, limits=Limits(), monty_version=MONTY)
    return json.dumps({"format": 1, "run_id": run_id, "room": room, "deadline_at": 0.0,
                       "record": json.dumps(json.loads(parked.to_json()) | record)})


async def left_by_a_stopped_process(redis: Redis, fields: dict[str, str], marks: dict[str, str] | None = None) -> None:
    await redis.hset(f"agui:program:{RUN}", mapping={"process": STOPPED, **fields})
    await redis.hset("agui:programs", RUN, STOPPED)
    if marks:
        await redis.hset(f"agui:program:{RUN}:calls", mapping=marks)


async def test_two_processes_claiming_one_program_at_once_one_takes_it_and_the_other_hears_it_is_held(redis_url):
    async with code_bridge(redis_url=redis_url) as b, code_bridge(redis_url=redis_url) as c, \
            redis_client(redis_url) as redis:
        envelope = envelope_of()
        await left_by_a_stopped_process(redis, {"record": envelope, "seal": sealed(
            await b.bridge.mcp.tasks.shared.shared_secret(), envelope)}, {"0": '{"call": "c_1", "sid": "page"}'})
        assert await b.bridge.programs.orphans() == [RUN] == await c.bridge.programs.orphans()
        stores = b.bridge.programs.survivors, c.bridge.programs.survivors
        claims = await asyncio.gather(*(store.claim(RUN) for store in stores))
        [won] = [claim for claim in claims if isinstance(claim, ClaimedProgram)]
        assert [claim for claim in claims if not isinstance(claim, ClaimedProgram)] == [True]
        assert won.problem is None and won.run == SurvivingRun(RUN, "default", 0.0)
        assert won.record is not None and won.record.pending == (PendingCall(0, "confirm", {"question": "Go?"}),)
        assert won.sent == {0: SentCall("c_1", "page")}
        winner = b if claims[0] is won else c
        assert await redis.hget(f"agui:program:{RUN}", "process") == winner.bridge.link.process_id
        assert await b.bridge.programs.orphans() == [] == await c.bridge.programs.orphans()


def sealed_record(envelope: str) -> Callable[[str], dict[str, str]]:
    return lambda secret: {"record": envelope, "seal": sealed(secret, envelope)}


@pytest.mark.parametrize(("left", "problem"), [
    (lambda secret: {}, "its process stopped before the program first waited on a page (it was computing): the "
                        "calls it made may or may not have taken effect"),
    (lambda secret: {"record": envelope_of()}, UNSEALED),
    (lambda secret: {"record": envelope_of(), "seal": "0" * 64}, UNSEALED),
    (lambda secret: {"record": envelope_of(), "seal": sealed("another deployment's", envelope_of())}, UNSEALED),
    (sealed_record("not json"), "its record cannot be read: Expecting value: line 1 column 1 (char 0)"),
    (sealed_record('["a list"]'), "its record cannot be read: 'list' object has no attribute 'get'"),
    (sealed_record(envelope_of("t_another")), "its record cannot be read: not this run's record (format 1)"),
    (sealed_record(envelope_of(snapshot="!!")),
     "its record cannot be read: not a parked program record: Only base64 data is allowed"),
    (sealed_record(envelope_of(monty_version="0.0.1")),
     f"the program was parked by sandbox version 0.0.1, this process runs {MONTY}"),
])
async def test_a_claimed_program_that_cannot_be_trusted_or_loaded_says_why(redis_url, left, problem):
    async with code_bridge(redis_url=redis_url) as b, redis_client(redis_url) as redis:
        await left_by_a_stopped_process(redis, left(await b.bridge.mcp.tasks.shared.shared_secret()))
        claimed = await b.bridge.programs.survivors.claim(RUN)
        assert isinstance(claimed, ClaimedProgram) and claimed.problem == problem


async def test_a_claim_of_no_program_or_of_a_living_processs_takes_nothing(redis_url):
    async with code_bridge(redis_url=redis_url) as b, code_bridge(redis_url=redis_url) as c, \
            redis_client(redis_url) as redis:
        await redis.hset("agui:programs", RUN, STOPPED)  # its program's keys expired: the entry is dropped
        assert await b.bridge.programs.claim(RUN) is False and not await redis.hexists("agui:programs", RUN)
        await redis.hset(f"agui:program:{RUN}", "process", c.bridge.link.process_id)
        await redis.hset("agui:programs", RUN, c.bridge.link.process_id)
        assert await b.bridge.programs.orphans() == [] and await b.bridge.programs.claim(RUN) is True
        assert await redis.hget(f"agui:program:{RUN}", "process") == c.bridge.link.process_id


async def test_a_process_whose_program_another_took_over_sends_none_of_its_calls_and_writes_nothing_of_it(redis_url):
    """A process taken for stopped (it missed its heartbeats) while it lived: another claimed its program."""
    async with code_bridge(redis_url=redis_url) as b, code_bridge(redis_url=redis_url) as c, \
            redis_client(redis_url) as redis, served_page(b) as shop:
        run, store, tool = SurvivingRun(RUN, "default", 0.0), b.bridge.programs.survivors, b.hub.room("default")
        assert await store.started(run)
        sent = await b.hub.call(tool.get("get_order"), {"order_id": 1}, program_call=ProgramCall(RUN, 0))
        assert sent.result["id"] == 1 and len(shop.invoked) == 1
        assert json.loads(await redis.hget(f"agui:program:{RUN}:calls", "0")) == {
            "call": shop.invoked[0]["call_id"], "sid": shop.page.session_id}  # marked as it was sent
        await redis.hset(f"agui:program:{RUN}", "process", c.bridge.link.process_id)  # c goes on with it
        await redis.hset(f"agui:task:{RUN}", mapping={"process": c.bridge.link.process_id, "task": "c's"})

        refused = await b.hub.call(tool.get("get_order"), {"order_id": 2}, program_call=ProgramCall(RUN, 1))
        assert refused.kind == "taken_over" and refused.error == PROGRAM_TAKEN_OVER
        store.parked(run, ParkedProgram.from_json(json.loads(envelope_of())["record"]))
        await store.ended(RUN)  # once its record's write is done: neither is carried out
        assert await redis.hgetall(f"agui:program:{RUN}") == {"process": c.bridge.link.process_id}
        await b.bridge.mcp.tasks.shared.save(Task(RUN, "", "default", "run_code", time.time(), 60.0, 1.0))
        assert await redis.hget(f"agui:task:{RUN}", "task") == "c's"
        # The refused call never reached the page: the next call of this process's own comes right after the first.
        assert (await b.hub.call(tool.get("get_order"), {"order_id": 3})).result["id"] == 3
        assert [event["params"]["order_id"] for event in shop.invoked] == [1, 3]


async def test_a_program_redis_lost_with_its_data_is_written_again_by_its_process(redis_url):
    async with code_bridge(redis_url=redis_url) as b, redis_client(redis_url) as redis, served_page(b):
        run, store, tool = SurvivingRun(RUN, "default", 0.0), b.bridge.programs.survivors, b.hub.room("default")
        assert await store.started(run)
        await redis.delete(f"agui:program:{RUN}", "agui:programs")  # as a Redis restarted without its data
        sent = await b.hub.call(tool.get("get_order"), {"order_id": 1}, program_call=ProgramCall(RUN, 0))
        assert sent.result["id"] == 1
        assert await redis.hget(f"agui:program:{RUN}", "process") == b.bridge.link.process_id
        assert await redis.hget("agui:programs", RUN) == b.bridge.link.process_id
        assert await redis.hexists(f"agui:program:{RUN}:calls", "0")
        await redis.delete(f"agui:program:{RUN}", "agui:programs")
        store.parked(run, ParkedProgram.from_json(json.loads(envelope_of())["record"]))
        await store.ended(RUN)  # the record was written again, then the run ended
        assert await redis.hgetall(f"agui:program:{RUN}") == {"process": b.bridge.link.process_id, "ended": "1"}


async def test_a_claimed_programs_calls_sent_after_its_record_are_cancelled_at_their_pages(redis_url):
    """Its process stopped while the program computed past its last record: the call that record waits on is
    taken over with the program; one sent after it would answer no one, so it is cancelled at its page."""
    async with code_bridge(redis_url=redis_url) as b, redis_client(redis_url) as redis, served_page(b) as shop:
        sid = shop.page.session_id
        await until(lambda: redis.exists(f"agui:page:{sid}"))
        for call_id in ("c_0", "c_1"):  # both still wait at the page, for the stopped process
            await redis.hset(f"agui:call:{call_id}", mapping={"owner": STOPPED, "sid": sid, "run": RUN})
        await left_by_a_stopped_process(redis, sealed_record(envelope_of())(  # waits on call 0
            await b.bridge.mcp.tasks.shared.shared_secret()), {
            "0": json.dumps({"call": "c_0", "sid": sid}), "1": json.dumps({"call": "c_1", "sid": sid})})
        claimed = await b.bridge.programs.survivors.claim(RUN)
        assert isinstance(claimed, ClaimedProgram) and claimed.problem is None
        assert claimed.sent == {0: SentCall("c_0", sid), 1: SentCall("c_1", sid)}
        await eventually(lambda: [(event["call_id"], event["reason"]) for event in shop.cancelled]
                         == [("c_1", ABANDONED)])
        assert await redis.hget("agui:call:c_0", "owner") == STOPPED and not await redis.exists("agui:call:c_1")


async def test_a_claimed_program_is_resumed_in_its_records_room_only(redis_url):
    async with code_bridge(redis_url=redis_url) as b, redis_client(redis_url) as redis:
        await left_by_a_stopped_process(redis, sealed_record(envelope_of(room="elsewhere"))(
            await b.bridge.mcp.tasks.shared.shared_secret()))
        resumption = await b.bridge.programs.claim(RUN)
        assert isinstance(resumption, Resumption) and resumption.claimed.problem is None
        result = await resumption.run("default")
        assert result["isError"] is True and result["structuredContent"]["error"] == {
            "kind": "invalid", "message": "its bridge process stopped and it could not be resumed in another: its "
                                         "record is of room 'elsewhere', not 'default'"}
        assert not b.bridge.programs.started  # nothing was loaded into its sandbox: it never started
        assert await redis.hgetall(f"agui:program:{RUN}") == {"process": b.bridge.link.process_id, "ended": "1"}


async def test_a_record_parked_as_the_writer_of_the_one_before_finishes_is_written_all_the_same():
    """A run's records are written one after another, by one writer at a time; one parked in the loop step
    right after that writer wrote the last record it had gets a writer of its own, and is not left behind."""
    written: list[int] = []  # the records written, by their calls_started

    class OneStepRedis:
        """Each script takes one loop step, as a round trip to Redis does."""

        def register_script(self, source: str) -> Callable[..., Awaitable[int]]:
            async def script(keys: list[str], args: list[Any]) -> int:
                await asyncio.sleep(0)
                if source == scripts.WRITE_PROGRAM:
                    written.append(json.loads(json.loads(args[1])["record"])["calls_started"])
                return 1
            return script

        def pipeline(self, transaction: bool) -> Any:
            class Pipeline:
                async def __aenter__(self) -> Any:
                    return SimpleNamespace(hset=lambda *args: None, pexpire=lambda *args: None,
                                           execute=lambda: asyncio.sleep(0))

                async def __aexit__(self, *exc: object) -> None:
                    return None
            return Pipeline()

    async def shared_secret() -> str:
        return "the deployment's"

    link = SimpleNamespace(redis=OneStepRedis(), process_id="p", prefix="agui:",
                           program=lambda run_id, part="": f"agui:program:{run_id}{part}")
    store, run = RedisPrograms(link, ttl=60, shared_secret=shared_secret), SurvivingRun(RUN, "default", 0.0)
    record = ParkedProgram.from_json(json.loads(envelope_of())["record"])
    assert await store.started(run)
    store.parked(run, record)
    while not written:
        await asyncio.sleep(0)
    store.parked(run, dataclasses.replace(record, calls_started=2))  # the writer of the first is just done
    await store.ended(RUN)  # once its records' writes are done
    assert written == [1, 2]
