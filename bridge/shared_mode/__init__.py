"""Shared mode: several bridge processes serve one set of rooms through Redis (`--redis-url`, the
`redis` extra). Each process's hub is given a `RedisLink` instead of its local link; tasks and
input requests' spent states are kept in Redis too (docs/scaling.md)::

    from bridge.shared_mode import RedisLink, RedisMarks, RedisPrograms, RedisTasks

    link = RedisLink("redis://127.0.0.1:6379/0", page_grace=10, call_timeout=600, heartbeat=1)
    hub = Hub(config, link=link, observers=[link])            # then link.attach(...), await link.start()

The modules (private: the bridge's app composes them): `_link` (pages, invocations and answers
across processes; the mirror of other processes' tools), `_tasks` (tasks), `_states` (spent
input states), `_programs` (tasks' programs, which outlive their process).
"""

from bridge.shared_mode._link import RedisLink
from bridge.shared_mode._programs import RedisPrograms
from bridge.shared_mode._states import RedisMarks
from bridge.shared_mode._tasks import RedisTasks

__all__ = ["RedisLink", "RedisMarks", "RedisPrograms", "RedisTasks"]
