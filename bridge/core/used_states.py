"""Input requests' states already used: each state the bridge issues takes one retry.

A 2026-07-28 agent answers a page's input request by calling the tool again with the
sealed `requestState` of that request; the state names itself with a random id, and
the first retry the bridge passes on to the page spends it. This process remembers
the ids it saw spent for as long as a state lives (at most `USED_STATES_MAX` of them:
past that the oldest are forgotten); in shared mode the mark is also set in Redis,
so a state spent through one process is refused by every other.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import Protocol

USED_STATES_MAX = 100_000  # ids remembered per process: ~19 MB when full


class SharedMarks(Protocol):
    """Marks every bridge process sharing rooms sees (Redis)."""

    async def mark_once(self, key: str, ttl: float) -> bool:
        """False if the key was marked already; True if not, or if the marks cannot be reached."""

    async def close(self) -> None: ...


class UsedStates:
    """The ids of the states spent, each kept `ttl` seconds (a state's own time to live)."""

    def __init__(self, ttl: float, shared: SharedMarks | None = None, bound: int = USED_STATES_MAX) -> None:
        self.ttl, self.shared, self._bound = ttl, shared, bound
        self._spent: OrderedDict[str, float] = OrderedDict()  # id -> when it may be forgotten (monotonic)

    async def spend(self, state_id: str) -> bool:
        """Marks the state spent; False if it was already (here, or in shared mode by any process)."""
        now = time.monotonic()
        while self._spent and next(iter(self._spent.values())) <= now:  # in order of expiry: same ttl for all
            self._spent.popitem(last=False)
        if state_id in self._spent:
            return False
        self._spent[state_id] = now + self.ttl  # before any await: a concurrent retry here finds it
        if len(self._spent) > self._bound:
            self._spent.popitem(last=False)
        return self.shared is None or await self.shared.mark_once(state_id, self.ttl)

    async def close(self) -> None:
        if self.shared is not None:
            await self.shared.close()
