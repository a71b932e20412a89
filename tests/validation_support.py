"""For the tests of schemas, arguments and registrations that must not stall the bridge: schemas and values
that blow up a validator without bounds, a schema of thousands of subschemas, and a probe that measures how
long the event loop was held. The bound the bridge promises is 50 ms; the tests allow LAG_BOUND for a shared,
noisy machine (before the work budget the same attacks held the loop for seconds to minutes)."""

from __future__ import annotations

import asyncio
import time
from contextlib import asynccontextmanager
from typing import Any

LAG_BOUND = 1.0  # seconds the loop may be held (the promise is 0.05 s; the machine is shared and noisy)


# --- bombs --------------------------------------------------------------------------------------


def nested_any_of(levels: int, leaf: dict | None = None) -> dict:
    """anyOf of two references to the level below, `levels` deep: 2**levels ways to fail, ~1 KB."""
    defs: dict[str, Any] = {f"l{i}": {"anyOf": [{"$ref": f"#/$defs/l{i + 1}"}, {"$ref": f"#/$defs/l{i + 1}"}]}
                            for i in range(levels)}
    defs[f"l{levels}"] = leaf or {"type": "string"}
    return {"type": "object", "properties": {"x": {"$ref": "#/$defs/l0"}}, "$defs": defs}


# Recursive, so it unfolds into few subschemas; each level of the value doubles the work: both
# branches descend into "a" before "required" fails them.
RECURSIVE_BOMB = {"type": "object", "properties": {"x": {"$ref": "#/$defs/n"}}, "$defs": {"n": {"anyOf": [
    {"type": "object", "properties": {"a": {"$ref": "#/$defs/n"}}, "required": ["b"]},
    {"type": "object", "properties": {"a": {"$ref": "#/$defs/n"}}, "required": ["c"]}]}}}


def deep(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = {"a": value}
    return value


# A schema of some 2,400 subschemas: seconds of work to check against the meta-schema, again and again.
WIDE = {"type": "object", "properties": {f"p{i}": {"type": "string", "description": "x"} for i in range(1200)}}


# --- how long the loop was held ----------------------------------------------------------------


class LoopProbe:
    """The longest the bridge's loop went without running this task (its 5 ms sleeps, overslept)."""

    def __init__(self) -> None:
        self.longest = 0.0

    async def _run(self) -> None:
        last = time.perf_counter()
        while True:
            await asyncio.sleep(0.005)
            now = time.perf_counter()
            self.longest = max(self.longest, now - last - 0.005)
            last = now


@asynccontextmanager
async def probed():
    probe = LoopProbe()
    task = asyncio.create_task(probe._run())
    await asyncio.sleep(0.02)
    try:
        yield probe
    finally:
        task.cancel()
