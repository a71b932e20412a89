"""Tasks: page calls whose outcome outlives the request that started them.

A person deciding in a confirm dialog may take longer than an agent's request
may wait. A task keeps the call's state and outcome, by an unguessable id, for
its time to live; the agent reads it whenever it likes. The table is the only
writer of a task: the MCP edge starts the call, and reports how it went here.
Knows nothing of MCP's wire beyond the shape a task is read in.
"""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

TERMINAL = frozenset({"completed", "failed", "cancelled"})


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
    result: dict[str, Any] | None = None  # the CallToolResult, once completed
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
        elif self.status == "completed":
            shown["result"] = self.result
        elif self.status == "failed":
            shown["error"] = self.error
        return shown


class TooManyTasks(Exception):
    def __init__(self, limit: int) -> None:
        super().__init__(f"This bridge keeps at most {limit} tasks at once; wait for some to end or expire.")


class TaskTable:
    """The tasks of one bridge process by id, each until its time to live runs out."""

    def __init__(self, *, ttl: float, poll_interval: float, max_tasks: int = 10_000,
                 clock: Callable[[], float] = time.time) -> None:
        self.ttl, self.poll_interval, self.max_tasks = ttl, poll_interval, max_tasks
        self._clock = clock
        self._tasks: OrderedDict[str, Task] = OrderedDict()  # in creation order, which is expiry order

    def __len__(self) -> int:
        self._forget_expired()
        return len(self._tasks)

    def create(self, *, owner: str, room: str, tool: str) -> Task:
        self._forget_expired()
        if len(self._tasks) >= self.max_tasks:
            raise TooManyTasks(self.max_tasks)
        now = self._clock()
        task = Task(secrets.token_urlsafe(16), owner, room, tool, now, self.ttl, self.poll_interval, now)
        self._tasks[task.task_id] = task
        return task

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
        self._end(task, "completed", result=result)

    def failed(self, task: Task, code: int, message: str) -> None:
        self._end(task, "failed", error={"code": code, "message": message}, status_message=message)

    def cancelled(self, task: Task, reason: str) -> None:
        self._end(task, "cancelled", status_message=reason)

    def ask(self, task: Task, requests: dict[str, Any]) -> list[str]:
        """The task waits for input; returns the keys refused because they were asked before."""
        if task.terminal:
            return []
        reused = [key for key in requests if key in task.asked]
        fresh = {key: request for key, request in requests.items() if key not in task.asked}
        task.asked.update(fresh)
        task.input_requests.update(fresh)
        if task.input_requests:
            self._set(task, "input_required", status_message="Waiting for input from the agent's side.")
        return reused

    def answered(self, task: Task, keys: list[str]) -> dict[str, Any]:
        """Takes the answers to the outstanding requests among `keys`; returns those requests by key."""
        taken = {key: task.input_requests.pop(key) for key in keys if key in task.input_requests}
        if taken and not task.input_requests and not task.terminal:
            self._set(task, "working", status_message=None)
        return taken

    def _end(self, task: Task, status: str, *, result: dict[str, Any] | None = None,
             error: dict[str, Any] | None = None, status_message: str | None = None) -> None:
        if task.terminal:
            return  # the first outcome stays: a cancel racing the page's answer loses
        task.result, task.error = result, error
        task.input_requests.clear()
        self._set(task, status, status_message=status_message)

    def _set(self, task: Task, status: str, *, status_message: str | None) -> None:
        task.status, task.status_message, task.updated_at = status, status_message, self._clock()

    def _forget_expired(self) -> None:
        now = self._clock()
        while self._tasks:
            oldest = next(iter(self._tasks.values()))
            if oldest.expires_at() > now:
                return
            del self._tasks[oldest.task_id]


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
