"""Rooms for the search-mode tests: many tools, a few of them easy to find by what they do."""

from __future__ import annotations

from support import tool

META = ["tool_search", "tool_describe", "call_tool"]

DOMAINS = {
    "weather": "Get the weather forecast for a city",
    "flight": "Book a flight between two airports",
    "invoice": "Create an invoice for a customer",
    "playlist": "Add a song to the user's music playlist",
    "translate": "Translate text into another language",
    "calendar": "Schedule a meeting in the user's calendar",
}


def many_tools(n: int) -> list[dict]:
    """`n` distinct tools; the last six, deferred in search mode, are easy to find by what they do."""
    named = [tool(f"{name}_tool", description, {"query": {"type": "string", "description": "what to look up"}})
             for name, description in DOMAINS.items()]
    filler = [tool(f"widget_{i}", f"Adjust widget number {i} on the dashboard panel") for i in range(n - len(named))]
    return filler + named
