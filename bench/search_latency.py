"""Tool-search cost: the bridge's ToolIndex beside plain rank-bm25, on synthetic catalogs.

    python bench/search_latency.py [--sizes 100 1000 10000] [--queries 500]

Catalogs are generated from a seeded vocabulary: tool names in snake_case, camelCase, dotted
and kebab styles, one- or two-sentence descriptions, and parameter schemas (half with a
nested object), with a long tail of rarer words so document frequencies look like a real
catalog's. Queries are short agent-style phrases (2-5 words) and long requests (17-25). The
baseline, rank_bm25's BM25Okapi over the same text, has no update: every change is a rebuild.
Timings are wall-clock on this machine; compare rows within one run, not across machines.
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from rank_bm25 import BM25Okapi

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bridge.search.index import IndexedTool, ToolIndex  # noqa: E402

VERBS = """get list create update delete send search find fetch upload download convert schedule
cancel book check calculate translate summarize export import sync share archive approve reject
assign close open merge publish render resize compress validate refresh track notify invite""".split()
OBJECTS = """user order invoice email message file document calendar event meeting weather forecast
stock price ticket flight hotel product cart payment report chart image video playlist song note
task project issue repository branch commit contact customer lead campaign account subscription
coupon review comment recipe restaurant reservation route map location address translation
dashboard metric alert log backup database table record form survey quiz course lesson job
candidate resume expense budget receipt shipment package warehouse inventory supplier""".split()
QUALIFIERS = """daily recent unread shared archived pending active public private monthly weekly
latest upcoming overdue draft scheduled failed nearby popular favorite current""".split()
FILLER = """the a for of to with by from in on and or your all any new this each given specific
current selected""".split()
APPS = """Mail Calendar Shop Travel CRM Finance Music Notes Tasks Git Drive Photos Maps Food
Learn Jobs Support Analytics Billing Inventory""".split()
SYLLABLES = "ka lo mi ra te su vo ne pi da zu ro ki ma shi to ba re no lu".split()


def pseudo_words(rng: random.Random, count: int) -> list[str]:
    words: set[str] = set()
    while len(words) < count:
        words.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))))
    ordered = sorted(words)  # sets iterate in a per-process order; the seed must decide
    rng.shuffle(ordered)
    return ordered


class Catalog:
    """A seeded generator of tools and queries sharing one vocabulary."""

    def __init__(self, seed: int = 7) -> None:
        self.rng = random.Random(seed)
        self.rare = pseudo_words(self.rng, 3000)  # brand and domain words, Zipf-distributed
        self.rare_weights = [1 / (rank + 1) for rank in range(len(self.rare))]
        self.count = 0

    def _rare(self, k: int) -> list[str]:
        return self.rng.choices(self.rare, self.rare_weights, k=k)

    def _name(self, verb: str, obj: str, extra: str) -> str:
        style = self.rng.randrange(4)
        if style == 0:
            return f"{verb}_{obj}_{extra}"
        if style == 1:
            return f"{verb}{obj.title()}{extra.title()}"
        if style == 2:
            return f"{obj}.{verb}.{extra}"
        return f"{verb}-{obj}-{extra}"

    def _sentence(self, verb: str, obj: str) -> str:
        r = self.rng
        words = [verb.title(), r.choice(FILLER), r.choice(QUALIFIERS), obj + "s", r.choice(FILLER),
                 r.choice(OBJECTS), *self._rare(r.randint(1, 3)), r.choice(FILLER), r.choice(OBJECTS)]
        return " ".join(words) + "."

    def _schema(self, obj: str) -> dict:
        r = self.rng
        properties: dict = {
            f"{obj}_id": {"type": "string", "description": f"Id of the {obj}."},
            r.choice(["limit", "count", "page_size"]): {"type": "integer", "description": "Most results."},
        }
        if r.random() < 0.5:
            properties["filter"] = {
                "type": "object",
                "description": f"Which {obj}s to include.",
                "properties": {q: {"type": "string", "description": f"{q} {r.choice(OBJECTS)}"}
                               for q in r.sample(QUALIFIERS, 2)},
            }
        return {"type": "object", "properties": properties}

    def tool(self) -> IndexedTool:
        r = self.rng
        self.count += 1
        verb, obj = r.choice(VERBS), r.choice(OBJECTS)
        name = self._name(verb, obj, self._rare(1)[0])
        description = " ".join(self._sentence(verb, obj) for _ in range(r.randint(1, 2)))
        return IndexedTool(key=f"{re.sub(r'[^A-Za-z0-9_-]', '_', name)}_{self.count}", name=name,
                           description=description, app=r.choice(APPS), input_schema=self._schema(obj))

    def tools(self, count: int) -> list[IndexedTool]:
        return [self.tool() for _ in range(count)]

    def short_query(self) -> str:
        r = self.rng
        words = [r.choice(VERBS), r.choice(QUALIFIERS), r.choice(OBJECTS), *self._rare(r.randint(0, 2))]
        return " ".join(r.sample(words, r.randint(2, len(words))))

    def long_query(self) -> str:
        r = self.rng
        words = [r.choice(FILLER + VERBS + OBJECTS + QUALIFIERS) for _ in range(r.randint(13, 21))]
        return "Can you " + " ".join(words + self._rare(2)) + "?"


# --- measurement ---------------------------------------------------------------------------

REPEATS = 5  # one-off operations are timed this many times; the median is shown


def timed(action: Callable[[], object]) -> float:
    """Milliseconds `action` took."""
    started = time.perf_counter()
    action()
    return (time.perf_counter() - started) * 1000


def percentiles(samples: list[float]) -> str:
    cuts = statistics.quantiles(samples, n=100, method="inclusive")
    return f"{cuts[49]:.3f} / {cuts[98]:.3f} ms"


def plain_words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def all_text(tool: IndexedTool) -> str:
    """What the index reads of a tool, for the baseline to read the same."""
    texts = [tool.name, tool.app or "", tool.description]

    def walk(schema: dict) -> None:
        for name, prop in schema.get("properties", {}).items():
            texts.extend([name, prop.get("description", "")])
            walk(prop)

    walk(dict(tool.input_schema or {}))
    return " ".join(texts)


def measure_size(size: int, query_count: int) -> list[tuple[str, str, str]]:
    catalog = Catalog(seed=size)
    tools = catalog.tools(size)
    short = [catalog.short_query() for _ in range(query_count)]
    long = [catalog.long_query() for _ in range(query_count)]
    rows = []

    def build_bm25(catalog_tools: list[IndexedTool]) -> BM25Okapi:
        return BM25Okapi([plain_words(all_text(tool)) for tool in catalog_tools])

    builds = [timed(lambda: ToolIndex(tools)) for _ in range(REPEATS)]
    raw_builds = [timed(lambda: build_bm25(tools)) for _ in range(REPEATS)]
    rebuild = statistics.median(raw_builds)
    rows.append(("build, all tools at once", f"{statistics.median(builds):.1f} ms", f"{rebuild:.1f} ms"))

    index, bm25 = ToolIndex(tools), build_bm25(tools)
    for label, queries in (("short", short), ("long", long)):
        rows.append((f"query p50 / p99, {label}",
                     percentiles([timed(lambda q=q: index.search(q, 5)) for q in queries]),
                     percentiles([timed(lambda q=q: bm25.get_scores(plain_words(q))) for q in queries])))
    # Any change empties the index's per-term cache: the first query after one pays for it.
    after_change = []
    for query in short[:200]:
        index.add(catalog.tools(1))
        after_change.append(timed(lambda: index.search(query, 5)))
    rows.append(("query p50 / p99, short, after a change", percentiles(after_change), "(rebuild first)"))

    adds = [timed(lambda t=t: index.add([t])) for t in catalog.tools(200)]
    rows.append(("add() one tool, p50 / max of 200", f"{statistics.median(adds):.3f} / {max(adds):.3f} ms",
                 f"rebuild: {rebuild:.1f} ms"))
    gone = catalog.rng.sample(tools, min(200, size))
    removals = [timed(lambda t=t: index.remove([t.key])) for t in gone]
    rows.append((f"remove() one tool, p50 / max of {len(removals)}",
                 f"{statistics.median(removals):.3f} / {max(removals):.3f} ms", f"rebuild: {rebuild:.1f} ms"))
    index.add(gone)

    page, query = catalog.tools(1000), catalog.short_query()
    adding, searching, leaving, raw = [], [], [], []
    for _ in range(REPEATS):
        adding.append(timed(lambda: index.add(page)))
        searching.append(timed(lambda: index.search(query, 5)))
        leaving.append(timed(lambda: index.remove([t.key for t in page])))
        raw.append(timed(lambda: build_bm25(tools + page).get_scores(plain_words(query))))
    rows.append(("page adds 1,000 tools + first search",
                 f"{statistics.median(adding):.1f} + {statistics.median(searching):.1f} ms",
                 f"rebuild + search: {statistics.median(raw):.1f} ms"))
    rows.append(("page leaves: remove its 1,000 tools", f"{statistics.median(leaving):.1f} ms",
                 f"rebuild: {rebuild:.1f} ms"))
    return rows


def measure_hybrid(size: int, query_count: int, embedder) -> list[tuple[str, str]]:
    """The semantic tier: embedding a catalog (on the embedder's tool thread, as the hub does),
    a search given its query's vector (what runs on the event loop), embedding a query (what
    runs on the query thread; bench/concurrent_search.py has both through MCP, with agents
    searching at once), and registering the same tools again (cached by text)."""
    import asyncio

    from bridge.search.semantic import embed_pending

    catalog = Catalog(seed=size)
    tools = catalog.tools(size)
    short = [catalog.short_query() for _ in range(query_count)]
    long = [catalog.long_query() for _ in range(query_count)]
    rows = []
    index = ToolIndex(tools, embedder=embedder)
    took = timed(lambda: asyncio.run(embed_pending(index)))
    rows.append((f"embed all {size:,} tools (worker thread)", f"{took / 1000:.1f} s = {took / size:.1f} ms a tool"))
    for label, queries in (("short", short), ("long", long)):
        vectors = embedder.embed_queries(queries)
        samples = [timed(lambda q=q, v=v: index.search(q, 5, query_vector=v)) for q, v in zip(queries, vectors)]
        assert all(hit.tier == "hybrid" for hit in index.search(queries[0], 5, query_vector=vectors[0]))
        rows.append((f"hybrid search p50 / p99, {label} (vector given)", percentiles(samples)))
        samples = [timed(lambda q=q: embedder.embed_query(q)) for q in queries[:100]]
        rows.append((f"embedding a {label} query alone, p50 / p99", percentiles(samples)))
    page = catalog.tools(1000)
    stall, took = asyncio.run(registering_stall(index, page))
    rows.append(("page adds 1,000 new tools: longest loop stall", f"{stall:.1f} ms (all embedded in {took:.1f} s)"))
    index.remove([t.key for t in page])
    # The same 1,000 tools again (a reload): vectors come from the cache, nothing is embedded.
    again = timed(lambda: index.add(page))
    pending = index.pending_embeddings
    rows.append(("page re-adds 1,000 known tools (add)", f"{again:.1f} ms, {pending} to embed"))
    return rows


async def registering_stall(index: ToolIndex, page: list[IndexedTool], slice_size: int = 50) -> tuple[float, float]:
    """The longest gap (ms) between the 1 ms wake-ups of a ticker on the loop while `page`
    is added as the hub adds it (slices of 50, yielding between them) and embedded as the hub
    embeds it (embed_pending: the model in a worker thread, vectors stored on the loop); and
    the seconds until all is embedded."""
    import asyncio

    from bridge.search.semantic import embed_pending

    longest, running = 0.0, True

    async def ticker() -> None:
        nonlocal longest
        last = time.perf_counter()
        while running:
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            longest, last = max(longest, now - last), now

    ticking = asyncio.create_task(ticker())
    await asyncio.sleep(0.01)
    started = time.perf_counter()
    for start in range(0, len(page), slice_size):
        index.add(page[start:start + slice_size])
        await asyncio.sleep(0)
    await embed_pending(index)
    took = time.perf_counter() - started
    running = False
    await ticking
    return longest * 1000, took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--queries", type=int, default=500, help="queries of each kind per size")
    parser.add_argument("--model", help="also measure the hybrid tier with this fastembed model name")
    parser.add_argument("--model-path", help="... loaded from this local directory (nothing fetched)")
    parser.add_argument("--hybrid-only", action="store_true", help="skip the lexical table")
    args = parser.parse_args()

    if args.model or args.model_path:
        from bridge.search.models import DEFAULT_MODEL, load_embedder

        embedder = load_embedder(args.model or DEFAULT_MODEL, path=args.model_path, threads=2)
        print(f"{'tools':>6}  {'hybrid tier (' + embedder.name + ')':<52} {'':>24}")
        print("-" * 84)
        for size in args.sizes:
            for label, ours in measure_hybrid(size, args.queries, embedder):
                print(f"{size:>6}  {label:<52} {ours:>24}", flush=True)
        print()
    if args.hybrid_only:
        return

    header = f"{'tools':>6}  {'measure':<40} {'ToolIndex':>22} {'rank_bm25 BM25Okapi':>26}"
    print(header)
    print("-" * len(header))
    for size in args.sizes:
        for label, ours, raw in measure_size(size, args.queries):
            print(f"{size:>6}  {label:<40} {ours:>22} {raw:>26}")


if __name__ == "__main__":
    main()
