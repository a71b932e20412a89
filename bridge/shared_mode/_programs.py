"""Shared mode for agents' programs that run as tasks: one outlives its process (`SurvivingPrograms`).

While its process holds it, a program is the hash `<prefix>program:<run id>` (the process, and its last
record: where it waits on pages, sealed with an HMAC of the key the processes share, so that no record
another writer put there is ever loaded into the sandbox) and the index `<prefix>programs` (run id ->
process). Each page call it sends is marked in `<prefix>program:<run id>:calls` (the sandbox's call id ->
the bridge's call id and page) by the same Lua step that sends it (scripts.PUSH).

When that process's heartbeat is gone, every process finds the program in the index (`orphans`); one
claims it (scripts.CLAIM_PROGRAM, atomic), reads its record and marks, and goes on from the record
(`Programs.resume`): the record's pending calls still waiting at their pages are taken over (`Hub.adopt`),
the calls sent after the record (the process died while the program computed) are cancelled at their
pages, and no marked call is sent again. A process that lost its program (taken for stopped while it
lived) writes nothing more of it: each write checks that the program is still its own (an ended
program stays, marked so, until it expires, for that check). A Redis that lost its data (restarted)
lost the programs: each is written again by its process at its next call or park.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any, cast

from redis.exceptions import RedisError

from bridge.code_mode import ParkedProgram
from bridge.code_mode.parked import expect_str
from bridge.core.surviving_programs import ClaimedProgram, SentCall, SurvivingRun
from bridge.shared_mode import _scripts as scripts
from bridge.shared_mode._link import RedisLink

log = logging.getLogger(__name__)

ENVELOPE_FORMAT = 1
SEAL_PURPOSE = b"agui-mcp-bridge parked program"  # the seal's key is derived from the shared secret for this
ABANDONED = "the bridge process running the program stopped while it computed"
NOTHING_TO_RESUME = ("its process stopped before the program first waited on a page (it was computing): the calls "
                     "it made may or may not have taken effect")
UNSEALED = ("its record in Redis does not carry this deployment's seal (it was changed, or written by something "
            "other than a bridge process), so it was not loaded")
NO_KEY = "this process could not read the key that seals programs' records from Redis"


class RedisPrograms:
    """`bridge.core.programs.SurvivingPrograms` in Redis, beside `link` (its connections, heartbeats and page
    calls). `ttl`: how long a program's keys may outlive their last write (a task's time to live: no run is
    longer); `shared_secret`: the key the processes share (`RedisTasks.shared_secret`)."""

    def __init__(self, link: RedisLink, *, ttl: float, shared_secret: Callable[[], Awaitable[str | None]]) -> None:
        self.link, self.redis, self.process_id = link, link.redis, link.process_id
        self.ttl_ms = max(1, int(ttl * 1000))
        self._shared_secret = shared_secret
        self._key: bytes | None = None
        self._claim = self.redis.register_script(scripts.CLAIM_PROGRAM)
        self._write = self.redis.register_script(scripts.WRITE_PROGRAM)
        self._end = self.redis.register_script(scripts.END_PROGRAM)
        self._latest: dict[str, tuple[str, str]] = {}  # run id -> its record and seal, not yet written
        self._writers: dict[str, asyncio.Task[None]] = {}  # run id -> the task writing its records, in order

    @property
    def _index(self) -> str:
        return self.link.prefix + "programs"

    async def _seal_key(self) -> bytes | None:
        if self._key is None and (secret := await self._shared_secret()) is not None:
            self._key = hmac.new(secret.encode(), SEAL_PURPOSE, hashlib.sha256).digest()
        return self._key

    def _seal(self, key: bytes, text: str) -> str:
        return hmac.new(key, text.encode(), hashlib.sha256).hexdigest()

    # --- the process holding a run ---------------------------------------------------------

    async def started(self, run: SurvivingRun) -> bool:
        try:
            if await self._seal_key() is None:
                log.warning("program %s runs without outliving this process: %s", run.run_id[:8], NO_KEY)
                return False
            async with self.redis.pipeline(transaction=True) as pipe:
                pipe.hset(self.link.program(run.run_id), "process", self.process_id)
                pipe.pexpire(self.link.program(run.run_id), self.ttl_ms)
                pipe.hset(self._index, run.run_id, self.process_id)
                await pipe.execute()
            return True
        except RedisError as exc:
            log.warning("program %s runs without outliving this process: %s", run.run_id[:8], exc)
            return False

    def parked(self, run: SurvivingRun, record: ParkedProgram) -> None:
        if self._key is None:  # `started` (or `claim`) got it before the run could park
            return
        envelope = json.dumps({"format": ENVELOPE_FORMAT, "run_id": run.run_id, "room": run.room,
                               "deadline_at": run.deadline_at, "record": record.to_json()}, ensure_ascii=False)
        self._latest[run.run_id] = envelope, self._seal(self._key, envelope)
        if run.run_id not in self._writers:
            self._writers[run.run_id] = asyncio.get_running_loop().create_task(self._write_latest(run.run_id))

    async def _write_latest(self, run_id: str) -> None:
        """Write the run's records in order, only the last of those that piled up meanwhile. The writer leaves
        `_writers` in the same step that finds no record left, so a record parked after it gets a writer."""
        try:
            while (latest := self._latest.pop(run_id, None)) is not None:
                try:
                    if not await self._write(keys=[self.link.program(run_id), self._index],
                                             args=[self.process_id, *latest, self.ttl_ms, run_id]):
                        log.warning("program %s: another process goes on with it; its record is not written here",
                                    run_id[:8])
                except RedisError as exc:
                    log.warning("program %s: its record did not reach Redis (%s)", run_id[:8], exc)
        finally:
            self._writers.pop(run_id, None)

    async def ended(self, run_id: str) -> None:
        writer = self._writers.get(run_id)
        if writer is not None:
            await asyncio.wait([writer])
        self._latest.pop(run_id, None)
        try:
            await self._end(keys=[self.link.program(run_id), self.link.program(run_id, ":calls"), self._index],
                            args=[self.process_id, run_id])
        except RedisError as exc:  # it expires with the task's time to live
            log.warning("program %s: could not forget it in Redis (%s)", run_id[:8], exc)

    # --- the processes that go on with runs whose process stopped ----------------------------

    async def orphans(self) -> list[str]:
        held = cast(dict[str, str], await self.redis.hgetall(self._index))
        living = await self.link.living(set(held.values()) - {self.process_id})
        return [run_id for run_id, process in held.items() if process != self.process_id and process not in living]

    async def claim(self, run_id: str) -> ClaimedProgram | bool:
        claimed = await self._claim(keys=[self.link.program(run_id), self.link.program(run_id, ":calls"), self._index],
                                    args=[run_id, self.process_id, self.link.prefix])
        if claimed[0] != 2:
            return bool(claimed[0])
        previous, envelope, seal, marks = claimed[1:]
        sent = _sent_calls(marks)
        program = await self._opened(run_id, envelope, seal, sent)
        log.info("program %s: its process %s stopped; this process takes it over%s", run_id[:8], previous,
                 f" ({program.problem})" if program.problem else "")
        if program.record is not None and program.problem is None:
            waited_on = {pending.call_id for pending in program.record.pending}
            for sandbox_id, call in sent.items():
                if sandbox_id not in waited_on:  # sent after the record: its answer would reach no one
                    await self._abandon(call, previous)
        return program

    async def _opened(self, run_id: str, envelope: str, seal: str, sent: dict[int, SentCall]) -> ClaimedProgram:
        """The claimed program's record, if it is sealed by this deployment, readable, of this run and loadable
        by this process's sandbox; else why not."""
        if not envelope:
            return ClaimedProgram(run_id, problem=NOTHING_TO_RESUME, sent=sent)
        key = await self._seal_key()
        if key is None:
            return ClaimedProgram(run_id, problem=NO_KEY, sent=sent)
        if not hmac.compare_digest(seal, self._seal(key, envelope)):
            log.warning("program %s: refused a record that is not sealed by this deployment", run_id[:8])
            return ClaimedProgram(run_id, problem=UNSEALED, sent=sent)
        try:
            data = json.loads(envelope)
            if data.get("format") != ENVELOPE_FORMAT or data.get("run_id") != run_id:
                raise ValueError(f"not this run's record (format {data.get('format')!r})")
            run = SurvivingRun(run_id, expect_str(data["room"]), float(data["deadline_at"]))
            record = ParkedProgram.from_json(expect_str(data["record"]))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            return ClaimedProgram(run_id, problem=f"its record cannot be read: {exc}", sent=sent)
        return ClaimedProgram(run_id, run, record, record.version_problem(), sent)

    async def _abandon(self, call: SentCall, previous: str) -> None:
        try:
            await self.link.cancel_stopped(call.session_id, call.call_id, previous, ABANDONED, keep_programs=False)
        except RedisError as exc:
            log.warning("call %s: could not cancel it at its page (%s)", call.call_id, exc)


def _sent_calls(marks: list[str]) -> dict[int, SentCall]:
    """The marks of a program's sent calls (field, value, ...), by the sandbox's call id. A malformed one names
    no call to take over, but its call id is never sent again all the same."""
    sent = {}
    for field, value in zip(marks[::2], marks[1::2]):
        if not field.isdigit():
            continue  # no call of the sandbox's
        try:
            call: dict[str, Any] = json.loads(value)
            sent[int(field)] = SentCall(expect_str(call["call"]), expect_str(call["sid"]))
        except (ValueError, KeyError, TypeError):
            log.warning("a malformed mark of a program's call: %.200s", value)
            sent[int(field)] = SentCall("", "")  # no such call or page: its answer reads as lost
    return sent

