"""Shared mode for tasks: every bridge process reads every task from Redis.

A task is written to `<prefix>task:<id>` (a hash: the process running its call,
and the task as JSON; expiring with the task) when it is made and at each change,
by that process (and only while no other living process runs it: see `_programs`, whose
programs outlive their process); any process answers `tasks/get` from there. A cancel or answers
for a task whose call runs in another process are published on that process's
own channel, `<prefix>tasks:<process id>`, where it acts on them or drops them:
an order is never passed on, so none goes round. A task whose process stopped
(its heartbeat is gone) while its call ran fails when next read; a task the
running process forgot to make room (its bounds) is deleted here too.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Any, cast

from redis.asyncio import Redis
from redis.exceptions import RedisError

from bridge.core.tasks import Task
from bridge.shared_mode import _scripts as scripts

log = logging.getLogger(__name__)

Orders = Callable[[str, dict[str, Any]], Awaitable[None]]


class RedisTasks:
    """`process_id`: this process's, as its heartbeat names it; `lives(process_id)`: whether a process's
    heartbeat is in Redis."""

    def __init__(self, url: str, *, process_id: str, lives: Callable[[str], Awaitable[bool]],
                 prefix: str = "agui:") -> None:
        self.redis = Redis.from_url(url, decode_responses=True)
        self.prefix, self.process_id, self._lives = prefix, process_id, lives
        self._listener: asyncio.Task[None] | None = None
        self._save = self.redis.register_script(scripts.SAVE_TASK)

    def _key(self, task_id: str) -> str:
        return f"{self.prefix}task:{task_id}"

    def _orders(self, process_id: str) -> str:
        """The channel of the orders for the tasks whose calls run in that process."""
        return f"{self.prefix}tasks:{process_id}"

    async def shared_secret(self) -> str | None:
        """One secret for all the processes (the first to ask makes it): a request state one sealed,
        another opens. None when Redis cannot be reached."""
        key = f"{self.prefix}request-state-key"
        try:
            await self.redis.set(key, secrets.token_hex(32), nx=True)
            return str(await self.redis.get(key))
        except (RedisError, OSError) as exc:
            log.warning("input requests' state is sealed with this process's own key (%s): a retry reaching "
                        "another process is refused, and its agent calls again", exc)
            return None

    async def save(self, task: Task) -> None:
        left_ms = int((task.expires_at() - time.time()) * 1000)
        if left_ms > 0 and not await self._save(keys=[self._key(task.task_id)],
                                                args=[self.process_id, json.dumps(task.record()), left_ms,
                                                      self.prefix]):
            log.warning("task %s: another process runs it now; not saved here", task.task_id)

    async def forget(self, task_ids: list[str]) -> None:
        await self.redis.delete(*(self._key(task_id) for task_id in task_ids))

    async def load(self, task_id: str) -> tuple[Task, bool] | None:
        """The task, and whether the process running its call lives (not asked of a task that ended)."""
        process, record = cast(list[str | None], await self.redis.hmget(self._key(task_id), ["process", "task"]))
        if not record:
            return None
        task = Task.from_record(json.loads(record))
        return task, task.terminal or (process is not None and await self._lives(process))

    async def send(self, task_id: str, order: dict[str, Any]) -> bool:
        """Publishes the order to the process running the task's call; whether that process heard it
        (True for a task no longer kept: nothing is left to do)."""
        process = cast(str | None, await self.redis.hget(self._key(task_id), "process"))
        if process is None:
            return True
        return bool(await self.redis.publish(self._orders(process), json.dumps({"task_id": task_id, **order})))

    def listen(self, orders: Orders) -> None:
        """Carry out the orders other processes send this one (`orders(task_id, order)`), until `close`."""
        self._listener = asyncio.get_running_loop().create_task(self._listen(orders))

    async def _listen(self, orders: Orders) -> None:
        while True:
            try:
                async with self.redis.pubsub(ignore_subscribe_messages=True) as pubsub:
                    await pubsub.subscribe(self._orders(self.process_id))
                    async for message in pubsub.listen():
                        order = _read(message["data"])
                        if order is None:
                            log.warning("ignored an unreadable task order: %.200s", message["data"])
                        else:
                            await orders(*order)
            except (RedisError, OSError) as exc:
                log.warning("lost the task orders channel (%s); listening again", exc)
                await asyncio.sleep(0.5)

    async def close(self) -> None:
        # redis-py can swallow a cancel that lands mid-command: cancel again until the listener ended.
        for _ in range(25):
            if self._listener is None or self._listener.done():
                break
            self._listener.cancel()
            await asyncio.wait([self._listener], timeout=0.2)
        await self.redis.aclose()


def _read(data: str) -> tuple[str, dict[str, Any]] | None:
    """(task id, order) of a message on an orders channel; None for anything else (a stray publisher)."""
    try:
        order = json.loads(data)
    except ValueError:
        return None
    if not isinstance(order, dict) or not isinstance(task_id := order.pop("task_id", None), str):
        return None
    return task_id, order
