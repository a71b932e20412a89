"""Tool-search quality on MetaTool: the bridge's ToolIndex against plain rank-bm25.

    python bench/search_quality.py --dataset ../shared/datasets/metatool [--limit N]
    python bench/search_quality.py --multilingual   # the multilingual table only

Single-tool rows (all_clean_data.csv): R@1, R@5, R@10, nDCG@10, MRR@10. Multi-tool rows
(multi_tool_query_golden.json): R@5 = share of a request's gold tools in the top 5. Name
queries (each tool asked for by its name) and name fragments (its name less the first
letter) exercise the name rules, which MetaTool's requests never reach. Every system
answers through the call the bridge makes, search(query, limit=10), so a ToolIndex list
shortened by AutoCut counts as it is. The ablation adds the pipeline one step at a time,
then AutoCut variants are compared. --split dev|test scores one half of the rows (split by
a hash of the query), so parameters can be chosen on one half and checked on the other.
The multilingual table (bench/data/multilingual_tools.json: Chinese, Japanese, Korean, Thai
and a few English tools, with requests in those languages and mixed) follows.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import random
import re
import sys
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rank_bm25 import BM25Okapi

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

import bridge.search as search_module  # noqa: E402
import bridge.tokenizer as tokenizer_module  # noqa: E402
from bridge.search import IndexedTool, ToolIndex  # noqa: E402
from bridge.tokenizer import split_words, terms, tokenize  # noqa: E402

Search = Callable[[str, int], Sequence[str]]  # (query, limit) -> tool names, best first
TOP = 10


# --- data ----------------------------------------------------------------------------------


def load(dataset: Path) -> tuple[dict[str, str], list[tuple[str, str]], list[tuple[str, list[str]]]]:
    """Tools (name -> description), single-tool rows and multi-tool rows, with every tool
    name spelled as in plugin_des.json (the CSV's case differs now and then)."""
    tools = json.loads((dataset / "plugin_des.json").read_text())
    canonical = {name.lower(): name for name in tools}
    with (dataset / "all_clean_data.csv").open(newline="") as file:
        single = [(row["Query"], canonical[row["Tool"].lower()]) for row in csv.DictReader(file)]
    multi = [
        (row["query"], [canonical[name.lower()] for name in row["tool"]])
        for row in json.loads((dataset / "multi_tool_query_golden.json").read_text())
    ]
    return tools, single, multi


def in_split(query: str, split: str | None) -> bool:
    return split is None or (zlib.crc32(query.encode()) % 2 == 0) == (split == "dev")


# --- systems -------------------------------------------------------------------------------


def rank_bm25_search(tools: dict[str, str], tokenizer: Callable[[str], list[str]], name_words: bool = True) -> Search:
    """rank_bm25's BM25Okapi with its default parameters over "name words + description"
    (over the text alone without `name_words`)."""
    names = list(tools)
    bm25 = BM25Okapi([tokenizer(f"{' '.join(split_words(name))} {tools[name]}" if name_words else tools[name])
                      for name in names])

    def search(query: str, limit: int) -> list[str]:
        scores = bm25.get_scores(tokenizer(query))
        order = sorted(range(len(names)), key=lambda i: -scores[i])[:limit]
        return [names[i] for i in order if scores[i] > 0]

    return search


def plain_words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


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


def as_indexed(name: str, description: str) -> IndexedTool:
    return IndexedTool(key=name, name=name, description=description)


def tool_index_search(tools: dict[str, str], index_class: type[ToolIndex] = ToolIndex) -> Search:
    index = index_class(as_indexed(name, description) for name, description in tools.items())
    return lambda query, limit: [hit.key for hit in index.search(query, limit)]


class PrecomputedQueries:
    """An embedder whose query vectors were computed in batches beforehand (the model's own
    query embedding, only faster to run for 20,000 queries); documents go to the model."""

    def __init__(self, embedder, queries: list[str]) -> None:
        self.embedder, self.name = embedder, embedder.name
        batch = getattr(embedder, "embed_queries", None)
        vectors = batch(queries) if batch else [embedder.embed_query(query) for query in queries]
        self.vectors = dict(zip(queries, vectors))

    def embed_documents(self, texts):
        return self.embedder.embed_documents(texts)

    def embed_query(self, text: str):
        found = self.vectors.get(text)
        return found if found is not None else self.embedder.embed_query(text)


def hybrid_search(tools: dict[str, str], embedder, index_class: type[ToolIndex] = ToolIndex) -> Search:
    import asyncio

    from bridge.semantic import embed_pending

    index = index_class((as_indexed(name, description) for name, description in tools.items()), embedder=embedder)
    asyncio.run(embed_pending(index))

    def search(query: str, limit: int) -> list[str]:
        hits = index.search(query, limit)
        assert index.last_tier == "hybrid"
        return [hit.key for hit in hits]

    return search


class ReciprocalRankFusion(ToolIndex):
    """The hybrid tier with reciprocal rank fusion (k = 60) instead of weighted scores."""

    def _fuse(self, lexical, similarity, depth):
        semantic = self._semantic
        embedded = semantic.embedded_slots()
        nearest = embedded[(-similarity[embedded]).argsort(kind="stable")[:depth]].tolist()
        fused: dict[int, float] = {}
        for ranking in (sorted(lexical, key=lambda slot: -lexical[slot]), nearest):
            for rank, slot in enumerate(ranking, 1):
                fused[slot] = fused.get(slot, 0.0) + 1 / (60 + rank)
        return fused


def tier_table(tools, single, multi, embedder, weights: list[float], name_shares: list[float]) -> None:
    """Lexical against hybrid; what the model reads of a tool (one text, or name and
    description apart at several NAME_SHAREs); and the fusion: weighted scores at several
    lexical weights, and reciprocal rank fusion."""
    print()
    print(f"Tiers ({embedder.name}):")
    print(f"{'tier':<52} {'R@1':>6} {'R@5':>6} {'R@10':>6} {'MRR@10':>6} {'multi R@5':>9} {'hits':>6}")
    weight, share = search_module.FUSION_WEIGHT, search_module.NAME_SHARE
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
        scores = score_single(search, single)
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
    saved, search_module.NAME_SHARE = search_module.NAME_SHARE, share
    try:
        return build()
    finally:
        search_module.NAME_SHARE = saved


def _one_text(tool: IndexedTool, name_words: list[str]) -> tuple[str, str]:
    """The model reading one text of the tool (as the bridge did before the two fields)."""
    text = ". ".join(part for part in (" ".join(name_words), tool.description) if part)
    return text, text


def _with_texts(texts: Callable[[IndexedTool, list[str]], tuple[str, str]], build: Callable[[], Search]) -> Search:
    """A search whose index was built with `texts` as what the model reads of each tool."""
    saved, search_module._embedding_texts = search_module._embedding_texts, texts
    try:
        return build()
    finally:
        search_module._embedding_texts = saved


# --- metrics -------------------------------------------------------------------------------


def score_single(search: Search, rows: list[tuple[str, str]]) -> dict[str, float]:
    totals = dict.fromkeys(["R@1", "R@5", "R@10", "nDCG@10", "MRR@10", "hits"], 0.0)
    for query, gold in rows:
        found = list(search(query, TOP))
        totals["hits"] += len(found)
        if gold in found:
            rank = found.index(gold) + 1
            totals["R@1"] += rank <= 1
            totals["R@5"] += rank <= 5
            totals["R@10"] += 1
            totals["nDCG@10"] += 1 / math.log2(rank + 1)
            totals["MRR@10"] += 1 / rank
    return {name: total / len(rows) for name, total in totals.items()}


def score_multi(search: Search, rows: list[tuple[str, list[str]]]) -> float:
    recall = 0.0
    for query, gold in rows:
        top5 = set(search(query, TOP)[:5])
        recall += len(top5.intersection(gold)) / len(gold)
    return recall / len(rows)


def name_rows(tools: dict[str, str]) -> list[tuple[str, str]]:
    """An agent asking for a tool by name: as the page spelled it, and as words."""
    return [(query, name) for name in tools for query in (name, " ".join(split_words(name)))]


def fragment_rows(tools: dict[str, str]) -> list[tuple[str, str]]:
    """A name remembered in part: its letters without the first one ("esearchhelper")."""
    rows = []
    for name in tools:
        letters = "".join(split_words(name))
        if len(letters) > 4:
            rows.append((letters[1:], name))
    return rows


def recall_at_1(search: Search, rows: list[tuple[str, str]]) -> float:
    return sum(search(query, TOP)[:1] == [gold] for query, gold in rows) / len(rows)


def autocut_variants(tools: dict[str, str], single: list[tuple[str, str]], multi: list[tuple[str, list[str]]],
                     by_name: list[tuple[str, str]]) -> None:
    """AutoCut tuned: where it may first cut, and how steep a fall it needs."""
    print()
    print(f"{'AutoCut: stop before a hit scoring':<44} {'R@5':>6} {'R@10':>6} {'multi R@5':>9} {'hits':>6} {'name hits':>9}")
    for ratio, first in [(0.0, 2), (0.5, 2), (0.5, 3), (0.5, 4), (0.25, 2)]:
        label = "never (no AutoCut)" if not ratio else f"< {ratio:g} x the previous, from hit {first} on"
        search = tool_index_search(tools, cutting(ratio, first))
        scores = score_single(search, single)
        name_hits = sum(len(search(query, TOP)) for query, _ in by_name) / len(by_name)
        print(f"{label:<44} {scores['R@5']:>6.3f} {scores['R@10']:>6.3f} {score_multi(search, multi):>9.3f} "
              f"{scores['hits']:>6.2f} {name_hits:>9.2f}")


# --- multilingual ---------------------------------------------------------------------------

MULTILINGUAL = REPO_ROOT / "bench" / "data" / "multilingual_tools.json"
_SPACELESS = re.compile("[\u0e01-\u0e4e\u1100-\u11ff\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uff66-\uff9f]")
_LATIN = re.compile("[A-Za-z\uff21-\uff3a\uff41-\uff5a]")


def load_multilingual(path: Path = MULTILINGUAL) -> tuple[list[IndexedTool], list[tuple[str, str, set[str]]]]:
    """The catalog's tools, and its requests as (query, gold tool, groups): the tool's language
    ("zh", "ja", "ko", "th", "en"), "CJK" for the first three, "mixed" for a request written in
    Latin letters and one of those scripts."""
    catalog = json.loads(path.read_text())["tools"]
    tools = [IndexedTool(key=entry["name"], name=entry["name"], description=entry["description"], app=entry.get("app"),
                         input_schema=_schema(entry.get("parameters", {}))) for entry in catalog]
    rows = []
    for entry in catalog:
        for query in entry["queries"]:
            groups = {entry["lang"], "all"}
            if entry["lang"] in ("zh", "ja", "ko"):
                groups.add("CJK")
            if _SPACELESS.search(query) and _LATIN.search(query):
                groups.add("mixed")
            rows.append((query, entry["name"], groups))
    return tools, rows


def _schema(parameters: dict[str, str]) -> dict:
    properties = {name: {"type": "string", "description": about} for name, about in parameters.items()}
    return {"type": "object", "properties": properties}


def tool_text(tool: IndexedTool) -> str:
    """What rank_bm25 reads of a tool: the text the bridge indexes, all of it once."""
    properties = (tool.input_schema or {}).get("properties", {})
    parameters = [f"{name} {schema['description']}" for name, schema in properties.items()]
    return " ".join([" ".join(split_words(tool.name)), tool.app or "", tool.description, *parameters])


MULTILINGUAL_GROUPS = ["zh", "ja", "ko", "th", "en", "mixed", "CJK", "all"]


def multilingual_table(path: Path = MULTILINGUAL) -> None:
    """R@1 / R@5 per language on the multilingual catalog: rank_bm25 over plain \\w+ words
    (a CJK run is one word), over the bridge's terms, and the bridge's lexical ToolIndex."""
    tools, rows = load_multilingual(path)
    texts = {tool.key: tool_text(tool) for tool in tools}
    systems: list[tuple[str, Callable[[], Search]]] = [
        ("rank_bm25, \\w+ words", lambda: rank_bm25_search(texts, plain_words, name_words=False)),
        ("rank_bm25, bridge terms", lambda: rank_bm25_search(texts, terms, name_words=False)),
        ("ToolIndex, CJK bigrams only", lambda: _bigrams_only(lambda: _indexed_search(tools))),
        ("ToolIndex (lexical) = bridge", lambda: _indexed_search(tools)),
    ]
    counts = {group: sum(group in groups for _, _, groups in rows) for group in MULTILINGUAL_GROUPS}
    print()
    print(f"Multilingual catalog: {len(tools)} tools, {len(rows)} requests ("
          + ", ".join(f"{group} {count}" for group, count in counts.items() if group != "all") + ")")
    header = f"{'R@1 / R@5':<30} " + " ".join(f"{group:>11}" for group in MULTILINGUAL_GROUPS)
    print(header)
    print("-" * len(header))
    for label, build in systems:
        search = build()
        found = {query: list(search(query, TOP)) for query, _, _ in rows}
        cells = []
        for group in MULTILINGUAL_GROUPS:
            ranks = [found[query].index(gold) + 1 if gold in found[query] else math.inf
                     for query, gold, groups in rows if group in groups]
            at_1, at_5 = (sum(rank <= top for rank in ranks) / len(ranks) for top in (1, 5))
            cells.append(f"{at_1:.2f} / {at_5:.2f}")
        print(f"{label:<30} " + " ".join(f"{cell:>11}" for cell in cells))


def _indexed_search(tools: list[IndexedTool]) -> Search:
    index = ToolIndex(tools)
    return lambda query, limit: [hit.key for hit in index.search(query, limit)]


def _bigrams_only(build: Callable[[], Search]) -> Search:
    """A search whose tools and queries get the bigrams of a Han, kana or Hangul run but not
    its characters (Lucene's CJK analyzer), set around each call (the terms are memoised)."""
    def bigrams_only(word: str) -> tuple[str, ...]:
        found = saved(word)
        return found[:max(1, len(word) - 1)] if tokenizer_module._IS_CJK.match(word) else found

    def swapped(run: Callable[[], Any]) -> Any:
        tokenizer_module._spaceless_terms = bigrams_only
        _forget_terms()
        try:
            return run()
        finally:
            tokenizer_module._spaceless_terms = saved
            _forget_terms()

    saved = tokenizer_module._spaceless_terms
    search = swapped(build)
    return lambda query, limit: swapped(lambda: search(query, limit))


def _forget_terms() -> None:
    tokenizer_module.word_terms.cache_clear()
    tokenizer_module._TERMS_IN.clear()


# --- report --------------------------------------------------------------------------------

COLUMNS = ["R@1", "R@5", "R@10", "nDCG@10", "MRR@10", "multi R@5", "name R@1", "frag R@1", "hits"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", type=Path, default=Path("../shared/datasets/metatool"),
                        help="MetaTool folder, relative to the repo root unless absolute")
    parser.add_argument("--limit", type=int, help="score a seeded sample of this many single-tool rows")
    parser.add_argument("--split", choices=["dev", "test"], help="score one half of the rows only")
    parser.add_argument("--no-ablation", action="store_true", help="baseline and ToolIndex only")
    parser.add_argument("--model", help="also measure the hybrid tier with this fastembed model name")
    parser.add_argument("--model-path", help="... loaded from this local directory (nothing fetched)")
    parser.add_argument("--weights", type=float, nargs="+", default=[0.2, 0.3, 0.5],
                        help="lexical weights of the fusion to compare")
    parser.add_argument("--name-shares", type=float, nargs="+", default=[0.0, 0.2, 0.3, 0.5],
                        help="shares of the name's similarity (NAME_SHARE) to compare")
    parser.add_argument("--multilingual", action="store_true", help="the multilingual table only (no MetaTool)")
    args = parser.parse_args()
    if args.multilingual:
        multilingual_table()
        return

    dataset = args.dataset if args.dataset.is_absolute() else REPO_ROOT / args.dataset
    tools, single, multi = load(dataset)
    single = [row for row in single if in_split(row[0], args.split)]
    multi = [row for row in multi if in_split(row[0], args.split)]
    if args.limit and args.limit < len(single):
        single = random.Random(0).sample(single, args.limit)
    by_name, fragments = name_rows(tools), fragment_rows(tools)

    systems: list[tuple[str, Callable[[], Search]]] = [
        ("rank_bm25 BM25Okapi, \\w+ (baseline)", lambda: rank_bm25_search(tools, plain_words)),
    ]
    if not args.no_ablation:
        systems += [
            ("+ bridge tokenizer, stemmer", lambda: rank_bm25_search(tools, tokenize)),
            ("+ 4-letter truncations", lambda: rank_bm25_search(tools, terms)),
            ("+ name weight, k1/b, idf²", lambda: tool_index_search(tools, NoNameFirst)),
            ("+ exact name first", lambda: tool_index_search(tools, NoFallback)),
            ("+ substring fallback", lambda: tool_index_search(tools, NoRerank)),
            ("+ letter-trigram rerank", lambda: tool_index_search(tools, NoStopList)),
            ("+ query stop list", lambda: tool_index_search(tools, NoDuplicatesLast)),
            ("+ near-duplicates last", lambda: tool_index_search(tools, NoAutocut)),
        ]
    systems.append(("ToolIndex (+ AutoCut) = bridge", lambda: tool_index_search(tools)))

    print(f"MetaTool: {len(tools)} tools, {len(single)} single-tool rows, {len(multi)} multi-tool rows"
          + (f" ({args.split} half)" if args.split else "")
          + f"; {len(by_name)} name and {len(fragments)} name-fragment queries")
    widths = [max(6, len(column)) for column in COLUMNS]
    header = f"{'system':<36} " + " ".join(f"{c:>{w}}" for c, w in zip(COLUMNS, widths))
    print(header)
    print("-" * len(header))
    rows = []
    for label, build in systems:
        search = build()
        single_scores = score_single(search, single)
        row = {**single_scores, "multi R@5": score_multi(search, multi),
               "name R@1": recall_at_1(search, by_name), "frag R@1": recall_at_1(search, fragments)}
        rows.append(row)
        print(f"{label:<36} " + " ".join(f"{row[c]:>{w}.3f}" for c, w in zip(COLUMNS, widths)))
    base, ours = rows[0], rows[-1]
    print(f"{'ratio ToolIndex / baseline':<36} "
          + " ".join(f"{ours[c] / base[c] if base[c] else float('inf'):>{w}.2f}" for c, w in zip(COLUMNS, widths)))
    if not args.no_ablation:
        autocut_variants(tools, single, multi, by_name)
    multilingual_table()
    if args.model or args.model_path:
        import time

        from bridge.semantic import DEFAULT_MODEL, load_embedder

        model = load_embedder(args.model or DEFAULT_MODEL, path=args.model_path, threads=2)
        started = time.perf_counter()
        embedder = PrecomputedQueries(model, sorted({q for q, _ in single} | {q for q, _ in multi}))
        print(f"\n(embedded {len(embedder.vectors)} queries in {time.perf_counter() - started:.0f} s)")
        tier_table(tools, single, multi, embedder, args.weights, args.name_shares)


if __name__ == "__main__":
    main()
