"""The `run_code` tool's description: what an agent reads to use it well, in a few lines."""

from __future__ import annotations

from bridge.code_mode.limits import Limits


def run_code_description(limits: Limits) -> str:
    megabytes = limits.memory_bytes // (1024 * 1024)
    return (
        "Run a short Python program that calls this room's tools; only its final value comes back. Prefer it to "
        "separate tool calls when a task takes several calls, loops, filtering or totals: the intermediate results "
        "stay out of your context.\n"
        "- Each tool is an async function of the same name taking keyword arguments: "
        "`order = await get_order(order_id=3)`. `await call_tool(\"name\", {...})` reaches any tool, deferred ones "
        "and names that are not Python identifiers included. A failed call raises an exception (try/except).\n"
        "- `import asyncio` and `await asyncio.gather(...)` run calls at once.\n"
        "- The value of the last expression (or a top-level `return`) is the result, as JSON; print() output comes "
        "back too.\n"
        "- A Python subset: functions, comprehensions, dicts, try/except, f-strings, json, re, datetime, math, "
        "collections, itertools; no class inheritance, generators, `del`, files, network, environment or sleep.\n"
        f"- Limits: {limits.compute_seconds:g} s of computing (waiting on tools is free), {megabytes} MB, "
        f"{limits.max_calls} tool calls ({limits.max_calls_in_flight} at once), {limits.max_value_chars:,} "
        "characters of result (a longer one is cut: aggregate in the program)."
    )
