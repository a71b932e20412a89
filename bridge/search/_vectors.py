"""The semantic tier's vector store: one vector per tool of a ToolIndex, by slot.

A tool is embedded as two texts (bridge.search._tool_text.embedding_texts), cached by the hash of
each text (with the model's name), so a tool registered again (a reload, another tab) costs
no model call. `job()` hands out the texts still to embed, `store()` takes their vectors
back; both run on the index's loop, the model off it (bridge.search.semantic). A store made for tools
already indexed (an index given its embedder late) reads their texts only as jobs take them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

import numpy as np

from bridge.search.semantic import Embedder, EmbeddingJob, text_hash

__all__ = ["NAME_SHARE", "ToolVectors"]

# A tool's similarity to a query is NAME_SHARE x the cosine with its name text + (1 - NAME_SHARE)
# x the cosine with its description text (chosen on the dev half of MetaTool: a request naming
# two tools' topics is near each of their names). The sum of cosines is the cosine with the same
# sum of the vectors, so each tool keeps one vector and a query costs one product.
NAME_SHARE = 0.3
_VECTORS_KEPT = 50_000  # cached embeddings by text hash (~1.5 KB each at 384 dimensions)


class ToolVectors:
    """A ToolIndex's vectors by slot, the texts still to embed, and the cache by text hash.
    A slot's vector is its texts' vectors weighted (NAME_SHARE), set once all have one.
    Used from the index's loop only; the model runs elsewhere (see bridge.search.semantic)."""

    def __init__(self, embedder: Embedder, unread: Iterable[int] = (),
                 read: Callable[[int], tuple[str, str]] | None = None) -> None:
        """`unread`: slots in use before the store was made, waiting for their vectors as if
        added, their texts read with `read(slot)` only as jobs take them: reading every tool
        at once (its definition parsed, its texts made and hashed) would hold the loop."""
        self.embedder = embedder
        self._unread = dict.fromkeys(unread)
        self._read = read
        self._vectors: np.ndarray | None = None  # (slots, dimension) float32, grown by doubling
        self._has = np.zeros(64, dtype=bool)
        self.count = 0  # slots with a vector
        self._hashes_at: dict[int, tuple[bytes, bytes]] = {}  # slot -> hashes of its name and description texts
        self._waiting: dict[int, dict[bytes, np.ndarray]] = {}  # slot still to embed -> its texts' vectors so far
        self._pending: dict[bytes, tuple[str, set[int]]] = {}  # hash -> (text, slots waiting for it)
        self._in_flight: set[bytes] = set()  # hashes in a job not handed back yet
        self._cache: dict[bytes, np.ndarray] = {}  # hash of a text, or a tool's two -> vector, oldest first

    @property
    def pending_slots(self) -> int:
        return len(self._waiting) + len(self._unread)

    def add(self, slot: int, texts: tuple[str, str]) -> None:
        hashes = self._hashes_at[slot] = (self._hash(texts[0]), self._hash(texts[1]))
        # A tool seen before (a reload, another tab): its combined vector, one lookup.
        vector = self._cache.get(hashes[0] + hashes[1])
        if vector is not None:
            self._set(slot, vector)
            return
        found = {digest: vector for digest in hashes if (vector := self._cache.get(digest)) is not None}
        if len(found) == len(set(hashes)):
            self._set(slot, self._combined(hashes, found))
            return
        self._waiting[slot] = found
        for digest, text in zip(hashes, texts):
            if digest not in found:
                self._pending.setdefault(digest, (text, set()))[1].add(slot)

    def _hash(self, text: str) -> bytes:
        return text_hash(f"{self.embedder.name}\0{text}")

    def _combined(self, hashes: tuple[bytes, bytes], vectors: Mapping[bytes, np.ndarray]) -> np.ndarray:
        """The tool's vector (see NAME_SHARE), kept under the pair of hashes."""
        name, about = hashes
        combined = NAME_SHARE * vectors[name] + (1 - NAME_SHARE) * vectors[about]
        self._keep(name + about, combined)
        return combined

    def _keep(self, key: bytes, vector: np.ndarray) -> None:
        if len(self._cache) >= _VECTORS_KEPT:
            del self._cache[next(iter(self._cache))]
        self._cache[key] = vector

    def remove(self, slot: int) -> None:
        self._unread.pop(slot, None)
        hashes = self._hashes_at.pop(slot, ())
        if self._waiting.pop(slot, None) is not None:
            for digest in hashes:
                found = self._pending.get(digest)
                if found is not None:
                    found[1].discard(slot)
                    if not found[1]:
                        del self._pending[digest]
        if slot < len(self._has) and self._has[slot]:
            self._has[slot] = False
            self.count -= 1

    def job(self, limit: int) -> EmbeddingJob | None:
        """Up to `limit` texts to embed; None when none is left. A job reads at most `limit`
        unread slots: when all of their texts were cached, it has no texts while more wait."""
        self._read_unread(limit)
        hashes, texts = [], []
        for digest, (text, _) in self._pending.items():
            if digest not in self._in_flight:
                hashes.append(digest)
                texts.append(text)
                if len(hashes) >= limit:
                    break
        if not hashes and not self._unread:
            return None
        self._in_flight.update(hashes)
        return EmbeddingJob(self.embedder, hashes, texts)

    def _read_unread(self, limit: int) -> None:
        """Unread slots added with their texts until `limit` texts wait for a job, at most `limit`
        slots (texts in flight are counted off those waiting, also those no tool waits for any
        more: then a slot or two more is read)."""
        read = self._read
        if read is None:  # made with no unread slot
            return
        for _ in range(min(limit, len(self._unread))):
            if len(self._pending) - len(self._in_flight) >= limit:
                return
            slot, _ = self._unread.popitem()  # the last: taking the first would rescan the entries freed
            self.add(slot, read(slot))

    def store(self, job: EmbeddingJob) -> None:
        self._in_flight.difference_update(job.hashes)
        if job.vectors is None or len(job.vectors) != len(job.hashes):
            return
        vectors = np.asarray(job.vectors, dtype=np.float32)
        for digest, vector in zip(job.hashes, vectors):
            self._keep(digest, vector)
            found = self._pending.pop(digest, None)
            for slot in found[1] if found is not None else ():
                has = self._waiting[slot]
                has[digest] = vector
                hashes = self._hashes_at[slot]
                if len(has) == len(set(hashes)):
                    del self._waiting[slot]
                    self._set(slot, self._combined(hashes, has))

    def _set(self, slot: int, vector: np.ndarray) -> None:
        if self._vectors is None or slot >= len(self._vectors):
            self._grow(slot + 1, len(vector))
        assert self._vectors is not None
        self._vectors[slot] = vector
        if not self._has[slot]:
            self._has[slot] = True
            self.count += 1

    def _grow(self, slots: int, dimension: int) -> None:
        """Room for `slots` slots at least, by doubling, in one step: new arrays whose zeros the
        system gives as their pages are first written (np.zeros), the rows so far copied in. The
        last slot may be the first embedded (unread slots are read last first), and doubling a
        step at a time would allocate, zero and copy every size in between."""
        size = max(64, len(self._has))
        while size < slots:
            size *= 2
        vectors = np.zeros((size, dimension), dtype=np.float32)
        has = np.zeros(size, dtype=bool)
        if self._vectors is not None:
            vectors[:len(self._vectors)] = self._vectors
        has[:len(self._has)] = self._has
        self._vectors, self._has = vectors, has

    def has_vector(self, slot: int) -> bool:
        return slot < len(self._has) and bool(self._has[slot])

    def embedded_slots(self) -> np.ndarray:
        return np.flatnonzero(self._has)

    def similarities(self, query_vector: np.ndarray, size: int) -> np.ndarray:
        """Similarity of the query's vector to each slot's tool (see NAME_SHARE; 0 where there
        is no vector), for slots 0 .. size - 1 (the slots in use: the arrays grow by doubling,
        and the product reads only these rows)."""
        vector = np.asarray(query_vector, dtype=np.float32)
        found = np.zeros(size, dtype=np.float32)
        if self._vectors is None:
            return found
        rows = min(size, len(self._vectors), len(self._has))
        # numpy's own loop, not BLAS: OpenBLAS would run this one product on all cores, and
        # waiting for its threads on a busy machine costs more than the product.
        found[:rows] = np.einsum("ij,j->i", self._vectors[:rows], vector)
        found[:rows][~self._has[:rows]] = 0.0
        return found
