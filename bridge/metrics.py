"""`/metrics` in the Prometheus text format: what the hub holds, read when scraped, and what
it does, counted as it happens (the hub tells its observers).

Each `Bridge` has its own registry, so two bridges in one process never mix their numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from starlette.requests import Request
from starlette.responses import Response

from bridge.hub import HubObserver

# Calls wait for people: seconds to minutes, not milliseconds only.
CALL_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)


class BridgeMetrics(Collector, HubObserver):
    """Counts what the hub tells it (pass it among the hub's observers); reads `state()` (the
    hub's dashboard state) when scraped."""

    def __init__(self, state: Callable[[], dict[str, Any]]) -> None:
        self.state = state
        self.registry = CollectorRegistry()
        self.calls_started = Counter("agui_bridge_calls_started", "Tool calls agents started", ["room"],
                                     registry=self.registry)
        self.calls_finished = Counter("agui_bridge_calls_finished", "Tool calls ended, by outcome",
                                      ["room", "outcome"], registry=self.registry)
        self.call_seconds = Histogram("agui_bridge_call_duration_seconds", "From the agent's call to its end",
                                      ["room"], buckets=CALL_BUCKETS, registry=self.registry)
        self.searches = Histogram("agui_bridge_search_duration_seconds", "tool_search latency", ["room"],
                                  registry=self.registry)
        self.resumes = Counter("agui_bridge_event_stream_reconnects", "Page event streams opened again",
                               ["room"], registry=self.registry)
        self.registry.register(self)
        # The labelled series prometheus_client keeps anyway (one a room), found without its lock.
        self._per_room: dict[str, tuple[Any, Any]] = {}
        self._finished: dict[tuple[str, str], Any] = {}

    # --- what happens (HubObserver) ----------------------------------------------------------

    def call_started(self, room: str) -> None:
        self._room_series(room)[0].inc()

    def call_finished(self, room: str, outcome: str, seconds: float) -> None:
        finished = self._finished.get((room, outcome))
        if finished is None:
            finished = self._finished[room, outcome] = self.calls_finished.labels(room, outcome)
        finished.inc()
        self._room_series(room)[1].observe(seconds)

    def _room_series(self, room: str) -> tuple[Any, Any]:
        """A room's calls-started counter and call-duration histogram, looked up once rather than by
        `labels()` (a lock and a tuple of label values) at every call."""
        series = self._per_room.get(room)
        if series is None:
            series = self._per_room[room] = (self.calls_started.labels(room), self.call_seconds.labels(room))
        return series

    def searched(self, room: str, seconds: float) -> None:
        self.searches.labels(room).observe(seconds)

    def stream_resumed(self, room: str) -> None:
        self.resumes.labels(room).inc()

    # --- what is (read when scraped) ---------------------------------------------------------

    def collect(self) -> Iterator[GaugeMetricFamily]:
        state = self.state()
        pages = GaugeMetricFamily("agui_bridge_pages_connected", "Pages connected to this process",
                                  labels=["room"])
        tools = GaugeMetricFamily("agui_bridge_tools", "Tools in a room, listed or deferred",
                                  labels=["room", "state"])
        waiting = GaugeMetricFamily("agui_bridge_calls_in_flight", "Calls waiting for a page", labels=["room"])
        in_flight: dict[str, int] = {}
        for call in state["calls"]:
            in_flight[call["room"]] = in_flight.get(call["room"], 0) + 1
        for room in state["rooms"]:
            name = room["name"]
            pages.add_metric([name], sum(1 for p in room["pages"] if p["connected"] and p["here"]))  # summable
            tools.add_metric([name, "listed"], room["tools"] - room["deferred"])
            tools.add_metric([name, "deferred"], room["deferred"])
            waiting.add_metric([name], in_flight.get(name, 0))
        yield from (pages, tools, waiting)

    async def endpoint(self, request: Request) -> Response:
        return Response(generate_latest(self.registry), media_type=CONTENT_TYPE_LATEST)
