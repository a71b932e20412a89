"""`/metrics` in the Prometheus text format: what the hub holds, read when scraped, and what
it does, counted as it happens (the hub tells its observers).

Each `Bridge` has its own registry, so two bridges in one process never mix their numbers.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString
from starlette.requests import Request
from starlette.responses import Response

from bridge.core.hub import HubObserver

# Calls wait for people: seconds to minutes, not milliseconds only.
CALL_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)
SEARCH_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10)  # Prometheus's own


class Histogram:
    """Observations counted in fixed buckets (`le`: at most the bound) and summed."""

    __slots__ = ("bounds", "counts", "sum")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)  # the last: over every bound (+Inf)
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += 1
        self.sum += value

    def cumulative(self) -> list[tuple[str, float]]:
        """(le, observations at most le) as the exposition format lists them, +Inf last."""
        buckets: list[tuple[str, float]] = []
        total = 0
        for bound, count in zip((*self.bounds, float("inf")), self.counts):
            total += count
            buckets.append((floatToGoString(bound), total))
        return buckets


class BridgeMetrics(Collector, HubObserver):
    """Counts what the hub tells it (pass it among the hub's observers); reads `state()` (the
    hub's dashboard state) when scraped.

    Counted in plain numbers: the hub tells it on the event loop, where scrapes are answered too,
    so a call pays no lock and no labelled-series lookup of a metrics library."""

    def __init__(self, state: Callable[[], dict[str, Any]]) -> None:
        self.state = state
        self.registry = CollectorRegistry()
        self.registry.register(self)
        self.calls_started: dict[str, int] = {}  # by room
        self.calls_finished: dict[tuple[str, str], int] = {}  # by room and outcome
        self.call_seconds: dict[str, Histogram] = {}
        self.searches: dict[str, Histogram] = {}
        self.resumes: dict[str, int] = {}

    # --- what happens (HubObserver) ----------------------------------------------------------

    def call_started(self, room: str) -> None:
        self.calls_started[room] = self.calls_started.get(room, 0) + 1

    def call_finished(self, room: str, outcome: str, seconds: float) -> None:
        key = room, outcome
        self.calls_finished[key] = self.calls_finished.get(key, 0) + 1
        histogram = self.call_seconds.get(room)
        if histogram is None:
            histogram = self.call_seconds[room] = Histogram(CALL_BUCKETS)
        histogram.observe(seconds)

    def searched(self, room: str, seconds: float) -> None:
        histogram = self.searches.get(room)
        if histogram is None:
            histogram = self.searches[room] = Histogram(SEARCH_BUCKETS)
        histogram.observe(seconds)

    def stream_resumed(self, room: str) -> None:
        self.resumes[room] = self.resumes.get(room, 0) + 1

    # --- what is (read when scraped) ---------------------------------------------------------

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily | HistogramMetricFamily]:
        yield from self._counted()
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

    def _counted(self) -> Iterator[CounterMetricFamily | HistogramMetricFamily]:
        started = CounterMetricFamily("agui_bridge_calls_started", "Tool calls agents started", labels=["room"])
        for room, count in self.calls_started.items():
            started.add_metric([room], count)
        finished = CounterMetricFamily("agui_bridge_calls_finished", "Tool calls ended, by outcome",
                                       labels=["room", "outcome"])
        for (room, outcome), count in self.calls_finished.items():
            finished.add_metric([room, outcome], count)
        resumes = CounterMetricFamily("agui_bridge_event_stream_reconnects", "Page event streams opened again",
                                      labels=["room"])
        for room, count in self.resumes.items():
            resumes.add_metric([room], count)
        yield from (started, finished, resumes)
        for name, documentation, histograms in (
                ("agui_bridge_call_duration_seconds", "From the agent's call to its end", self.call_seconds),
                ("agui_bridge_search_duration_seconds", "tool_search latency", self.searches)):
            family = HistogramMetricFamily(name, documentation, labels=["room"])
            for room, histogram in histograms.items():
                family.add_metric([room], histogram.cumulative(), histogram.sum)
            yield family

    async def endpoint(self, request: Request) -> Response:
        return Response(generate_latest(self.registry), media_type=CONTENT_TYPE_LATEST)
