"""Tool search: what an agent's `tool_search` finds among a room's deferred tools.

Words first (BM25 over what pages say of their tools, stems and folds for every script), then,
with the `semantic` extra and a model, meaning: sentence embeddings fused with the words' ranking.
One `ToolIndex` per room; the model runs on a thread of its own, never on the event loop::

    from bridge.search import IndexedTool, ToolIndex

    index = ToolIndex()
    index.add([IndexedTool("get_forecast", "get_forecast", "Weather forecast for a city.")])
    hits = index.search("weather in Paris", limit=5)        # [SearchHit(key="get_forecast", ...)]

The modules: `tokenizer` (words and terms of every script, with the Chinese tables in data/),
`tool_text` (what search reads of a tool), `bm25` (the incremental BM25), `index` (the ranking),
`vectors` (a room's tool vectors), `semantic` (the embedding worker, the tier's protocol),
`models` (which model runs: fastembed's, a packaged one, or a pair: `packaged_models`,
`model_pair`), `background` (the tier in the background of the hub's loop).
"""

from bridge.search._tool_text import IndexedTool
from bridge.search.background import BackgroundEmbedding
from bridge.search.index import SearchHit, ToolIndex
from bridge.search.models import DEFAULT_MODEL, load_embedder
from bridge.search.semantic import Embedder, EmbeddingBusy, SemanticSearchUnavailable, embed_pending, embed_query

__all__ = ["DEFAULT_MODEL", "BackgroundEmbedding", "Embedder", "EmbeddingBusy", "IndexedTool", "SearchHit",
           "SemanticSearchUnavailable", "ToolIndex", "embed_pending", "embed_query", "load_embedder"]
