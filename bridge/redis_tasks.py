"""Shared mode for tasks: every bridge process reads every task from Redis.

A task is written to `<prefix>task:<id>` (JSON, expiring with the task) when it is
made and at each change, by the process that runs its page call; any process
answers `tasks/get` from there. A cancel or answers for a task whose call runs in
another process are published on `<prefix>tasks`, where that process acts on them.
A task whose process stopped stays as it was last written until its time to live
runs out (its page call went with the process).
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import RedisError

from bridge.tasks import Task

log = logging.getLogger("bridge.redis")

Orders = Callable[[str, dict[str, Any]], Awaitable[None]]


class RedisTasks:
    def __init__(self, url: str, *, prefix: str = "agui:") -> None:
        self.redis = Redis.from_url(url, decode_responses=True)
        self.prefix = prefix
        self._listener: asyncio.Task[None] | None = None

    def _key(self, task_id: str) -> str:
        return f"{self.prefix}task:{task_id}"

    @property
    def _channel(self) -> str:
        return f"{self.prefix}tasks"

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
        if left_ms > 0:
            await self.redis.set(self._key(task.task_id), json.dumps(task.record()), px=left_ms)

    async def load(self, task_id: str) -> Task | None:
        record = await self.redis.get(self._key(task_id))
        return Task.from_record(json.loads(record)) if record else None

    async def send(self, task_id: str, order: dict[str, Any]) -> None:
        await self.redis.publish(self._channel, json.dumps({"task_id": task_id, **order}))

    def listen(self, orders: Orders) -> None:
        """Carry out the orders other processes send (`orders(task_id, order)`), until `close`."""
        self._listener = asyncio.get_running_loop().create_task(self._listen(orders))

    async def _listen(self, orders: Orders) -> None:
        while True:
            try:
                async with self.redis.pubsub(ignore_subscribe_messages=True) as pubsub:
                    await pubsub.subscribe(self._channel)
                    async for message in pubsub.listen():
                        order = json.loads(message["data"])
                        await orders(order.pop("task_id"), order)
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
