"""Tasks: page calls whose outcome outlives the request that started them.

A person deciding in a confirm dialog may take longer than an agent's request
may wait. A task keeps the call's state and outcome, by an unguessable id, for
its time to live; the agent reads it whenever it likes. The table is the only
writer of a task: the MCP edge starts the call, and reports how it went here.
Knows nothing of MCP's wire beyond the shape a task is read in.

What the table keeps is bounded (`TaskLimits`) for each agent, each room and
the whole process, in tasks and in bytes, so one agent can neither take every
task nor fill the memory: past a bound the oldest task under it that has ended
is forgotten to make room; when every one of them still runs, a new task is
refused, and a result that cannot be kept fails its task, saying so.
"""

from __future__ import annotations

import json
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from bridge.core.defaults import TASK_LIMITS, TaskLimits

TERMINAL = frozenset({"completed", "failed", "cancelled"})
INTERNAL_ERROR = -32603  # JSON-RPC's: what a task whose outcome cannot be kept fails with


@dataclass(eq=False, slots=True)
class Task:
    task_id: str
    owner: str  # who may read it: a digest of the credential its agent presented ("" when none is needed)
    room: str
    tool: str
    created_at: float  # seconds since the epoch
    ttl: float  # seconds from creation; then the task is forgotten
    poll_interval: float
    updated_at: float = 0.0
    status: str = "working"
    status_message: str | None = None
    # The CallToolResult once completed, as JSON: one copy of it. A text block that is the JSON of
    # structuredContent (as the bridge makes it) is left out, and made again when the task is read.
    kept_result: str | None = None
    error: dict[str, Any] | None = None  # {code, message}, once failed
    input_requests: dict[str, Any] = field(default_factory=dict)  # outstanding, by key
    asked: set[str] = field(default_factory=set)  # every key ever asked: a key is never reused

    def record(self) -> dict[str, Any]:
        """The task as another bridge process reads it back (`from_record`)."""
        record = {name: getattr(self, name) for name in self.__slots__}
        record["asked"] = sorted(self.asked)
        return record

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Task:
        return cls(**{**record, "asked": set(record.get("asked", ()))})

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    def expires_at(self) -> float:
        return self.created_at + self.ttl

    def detailed(self) -> dict[str, Any]:
        """The task as `tasks/get` and the task's creation show it (camelCase, ISO 8601 times)."""
        shown: dict[str, Any] = {"taskId": self.task_id, "status": self.status,
                                 "createdAt": _iso(self.created_at), "lastUpdatedAt": _iso(self.updated_at),
                                 "ttlMs": int(self.ttl * 1000), "pollIntervalMs": int(self.poll_interval * 1000)}
        if self.status_message is not None:
            shown["statusMessage"] = self.status_message
        if self.status == "input_required":
            shown["inputRequests"] = dict(self.input_requests)
        elif self.status == "completed" and self.kept_result is not None:
            shown["result"] = shown_result(self.kept_result)
        elif self.status == "failed":
            shown["error"] = self.error
        return shown


def kept_result(result: dict[str, Any]) -> str:
    """`result` as the table keeps it: JSON, without a text block that `shown_result` makes again."""
    structured = result.get("structuredContent")
    if "structuredContent" in result and result.get("content") == [{"type": "text", "text": _text_of(structured)}]:
        result = {key: value for key, value in result.items() if key != "content"}
    return json.dumps(result, ensure_ascii=False)


def shown_result(kept: str) -> dict[str, Any]:
    """The CallToolResult `kept_result` kept (a CallToolResult always has content: none means it was left out)."""
    result: dict[str, Any] = json.loads(kept)
    if "content" not in result:
        result = {"content": [{"type": "text", "text": _text_of(result.get("structuredContent"))}], **result}
    return result


def _text_of(structured: Any) -> str:
    return json.dumps(structured, ensure_ascii=False)


class TooManyTasks(Exception):
    """A new task finds a bound reached by tasks that all still run; the message says which."""


@dataclass(slots=True)
class _Share:
    """The tasks of one agent, one room, or the whole table: how many, the bytes they keep, and which
    have ended, oldest first (the first forgotten when a bound is reached)."""

    tasks: int = 0
    kept_bytes: int = 0
    ended: OrderedDict[str, None] = field(default_factory=OrderedDict)


_ALL = ("all", "")


class TaskTable:
    """The tasks of one bridge process by id, each until its time to live runs out, or until a bound
    needs the room (then it is among `dropped()`)."""

    def __init__(self, *, ttl: float, poll_interval: float, limits: TaskLimits = TASK_LIMITS,
                 clock: Callable[[], float] = time.time) -> None:
        self.ttl, self.poll_interval, self.limits = ttl, poll_interval, limits
        self._clock = clock
        self._tasks: OrderedDict[str, Task] = OrderedDict()  # in creation order, which is expiry order
        self._bytes: dict[str, int] = {}  # what each task keeps (its result or input requests), by id
        self._shares: dict[tuple[str, str], _Share] = {}  # ("agent", owner), ("room", room), _ALL
        self._dropped: list[str] = []

    def __len__(self) -> int:
        self._forget_expired()
        return len(self._tasks)

    def kept_bytes(self, owner: str | None = None) -> int:
        """The bytes kept by one agent's tasks, or by all."""
        share = self._shares.get(_ALL if owner is None else ("agent", owner))
        return share.kept_bytes if share is not None else 0

    def dropped(self) -> list[str]:
        """The tasks forgotten before their time to live to make room, since last asked."""
        dropped, self._dropped = self._dropped, []
        return dropped

    def create(self, *, owner: str, room: str, tool: str) -> Task:
        """A new task; `TooManyTasks` when a bound is reached and every task under it still runs."""
        self._forget_expired()
        limits = self.limits
        for key, limit, refusal in (
                (("agent", owner), limits.per_agent, f"This agent already has {limits.per_agent} tasks running"),
                (("room", room), limits.per_room, f"Room {room!r} already has {limits.per_room} tasks running"),
                (_ALL, limits.total, f"This bridge already has {limits.total} tasks running")):
            while (share := self._shares.get(key)) is not None and share.tasks >= limit:
                if not share.ended:
                    raise TooManyTasks(f"{refusal}, the most it keeps; wait for one to end.")
                self._drop(next(iter(share.ended)), before_its_time=True)
        now = self._clock()
        task = Task(secrets.token_urlsafe(16), owner, room, tool, now, self.ttl, self.poll_interval, now)
        self._keep(task)
        return task

    def adopt(self, task: Task) -> None:
        """A task another process made, whose run goes on here now (that process stopped): kept here from now
        on and counted under the bounds, never refused (it runs already)."""
        self._forget_expired()
        if task.task_id in self._tasks:
            return
        newest = next(reversed(self._tasks.values()), None)
        self._keep(task)
        if newest is not None and newest.expires_at() > task.expires_at():  # kept in expiry order
            self._tasks = OrderedDict(sorted(self._tasks.items(), key=lambda item: item[1].expires_at()))

    def get(self, task_id: str, *, owner: str, room: str) -> Task | None:
        """The task, if it exists here, has not expired, and is this owner's in this room."""
        self._forget_expired()
        return self.readable(self._tasks.get(task_id), owner=owner, room=room)

    def readable(self, task: Task | None, *, owner: str, room: str) -> Task | None:
        """`task` (made here or read from another process), if it has not expired and is this owner's in this room."""
        if task is None or task.expires_at() <= self._clock() or task.room != room:
            return None
        return task if secrets.compare_digest(task.owner, owner) else None

    def known(self, task_id: str) -> Task | None:
        """A task made here, whoever owns it."""
        self._forget_expired()
        return self._tasks.get(task_id)

    def completed(self, task: Task, result: dict[str, Any]) -> None:
        """The page's answer, kept if it fits the bounds (the oldest ended tasks under them may be
        forgotten for it); else the task fails, saying so."""
        if task.terminal:
            return
        kept = kept_result(result)
        problem = self._make_room(task, len(kept.encode()), "The page's result")
        if problem is not None:
            self.failed(task, INTERNAL_ERROR, problem)
        else:
            self._end(task, "completed", kept_result=kept)

    def failed(self, task: Task, code: int, message: str) -> None:
        self._end(task, "failed", error={"code": code, "message": message}, status_message=message)

    def cancelled(self, task: Task, reason: str) -> None:
        self._end(task, "cancelled", status_message=reason)

    def ask(self, task: Task, requests: dict[str, Any]) -> str | None:
        """The task waits for input; returns why it cannot (a key asked before, requests too large to keep)."""
        if task.terminal:
            return None
        reused = [key for key in requests if key in task.asked]
        if reused:
            return f"The page asked again under a key it used before ({', '.join(reused)})."
        outstanding = {**task.input_requests, **requests}
        problem = self._make_room(task, _json_bytes(outstanding), "The page's input requests")
        if problem is not None:
            return problem
        task.asked.update(requests)
        task.input_requests = outstanding
        if task.input_requests:
            self._set(task, "input_required", status_message="Waiting for input from the agent's side.")
        return None

    def answered(self, task: Task, keys: list[str]) -> dict[str, Any]:
        """Takes the answers to the outstanding requests among `keys`; returns those requests by key."""
        taken = {key: task.input_requests.pop(key) for key in keys if key in task.input_requests}
        if taken:
            self._resize(task, _json_bytes(task.input_requests) if task.input_requests else 0)
        if taken and not task.input_requests and not task.terminal:
            self._set(task, "working", status_message=None)
        return taken

    def _make_room(self, task: Task, size: int, what: str) -> str | None:
        """Room for `task` to keep `size` bytes instead of what it keeps now, forgetting the oldest ended
        tasks of its agent, then of anyone, as needed; why there is none, or None."""
        if task.task_id not in self._tasks:  # read from another process: kept there
            return None
        limits, mine = self.limits, self._bytes[task.task_id]
        for key, limit, whose in ((("agent", task.owner), limits.bytes_per_agent, "an agent's tasks"),
                                  (_ALL, limits.bytes_total, "all tasks")):
            if size > limit:
                return (f"{what} ({size} bytes as JSON) is larger than this bridge keeps for {whose} ({limit} bytes), "
                        "so it was not kept.")
            share = self._shares[key]
            while share.kept_bytes - mine + size > limit:
                if not share.ended:
                    return (f"{what} ({size} bytes as JSON) does not fit in what this bridge keeps for {whose} "
                            f"({limit} bytes): tasks still running hold the rest, so it was not kept.")
                self._drop(next(iter(share.ended)), before_its_time=True)
        self._resize(task, size)
        return None

    def _resize(self, task: Task, size: int) -> None:
        if task.task_id not in self._tasks:
            return
        change, self._bytes[task.task_id] = size - self._bytes[task.task_id], size
        for share in self._shares_of(task):
            share.kept_bytes += change

    def _end(self, task: Task, status: str, *, kept_result: str | None = None,
             error: dict[str, Any] | None = None, status_message: str | None = None) -> None:
        if task.terminal:
            return  # the first outcome stays: a cancel racing the page's answer loses
        task.kept_result, task.error = kept_result, error
        task.input_requests = {}
        self._set(task, status, status_message=status_message)
        if task.task_id in self._tasks:
            if kept_result is None:
                self._resize(task, 0)
            for share in self._shares_of(task):
                share.ended[task.task_id] = None

    def _set(self, task: Task, status: str, *, status_message: str | None) -> None:
        task.status, task.status_message, task.updated_at = status, status_message, self._clock()

    def _keep(self, task: Task) -> None:
        """Kept from now on, counted under its bounds (keeping nothing yet)."""
        self._tasks[task.task_id] = task
        self._bytes[task.task_id] = 0
        for share in self._shares_of(task):
            share.tasks += 1

    def _shares_of(self, task: Task) -> list[_Share]:
        return [self._shares.setdefault(key, _Share()) for key in _share_keys(task)]

    def _drop(self, task_id: str, *, before_its_time: bool) -> None:
        task = self._tasks.pop(task_id)
        size = self._bytes.pop(task_id)
        for key in _share_keys(task):
            share = self._shares[key]
            share.tasks -= 1
            share.kept_bytes -= size
            share.ended.pop(task_id, None)
            if not share.tasks:
                del self._shares[key]
        if before_its_time:
            self._dropped.append(task_id)

    def _forget_expired(self) -> None:
        now = self._clock()
        while self._tasks:
            oldest = next(iter(self._tasks.values()))
            if oldest.expires_at() > now:
                return
            self._drop(oldest.task_id, before_its_time=False)


def _share_keys(task: Task) -> tuple[tuple[str, str], ...]:
    """The shares a task counts under: its agent's, its room's, the whole table's."""
    return ("agent", task.owner), ("room", task.room), _ALL


def _json_bytes(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False).encode())


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
