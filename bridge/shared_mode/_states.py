"""Shared mode for input requests' states: a state spent through one process is spent for all.

Each spent state is the key `<prefix>used-state:<id>`, set only if absent and expiring
with the state.
"""

from __future__ import annotations

import logging

from redis.asyncio import Redis
from redis.exceptions import RedisError

log = logging.getLogger(__name__)


class RedisMarks:
    def __init__(self, url: str, *, prefix: str = "agui:") -> None:
        self.redis = Redis.from_url(url, decode_responses=True)
        self.prefix = prefix

    async def mark_once(self, key: str, ttl: float) -> bool:
        try:
            return bool(await self.redis.set(f"{self.prefix}used-state:{key}", "1", nx=True,
                                             px=max(1, int(ttl * 1000))))
        except (RedisError, OSError) as exc:  # the process's own mark still holds there
            log.warning("could not mark an input request's state used in Redis (%s): only the process that "
                        "took it refuses it again", exc)
            return True

    async def close(self) -> None:
        await self.redis.aclose()
