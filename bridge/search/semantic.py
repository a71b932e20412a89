"""The optional semantic tier of tool search: sentence embeddings fused with the lexical ranking.

Installed with ``pip install "agui-mcp-bridge[semantic]"`` (fastembed, which runs ONNX models
with onnxruntime: no PyTorch). Without it everything works but loading a model
(bridge.search.models.load_embedder raises `SemanticSearchUnavailable` saying what to install);
a `ToolIndex` with no embedder searches lexically.

The model never runs on the event loop. Each embedder gets one thread of its own
(`EmbeddingWorker`), which embeds the queries waiting first, all in one model call, and
tools in small batches when no query waits. However many rooms and agents there are, one
model call runs at a time, on one core (MODEL_THREADS), and a loop only waits in its own
`await`s. How the hub drives
it (it owns the loop; an index is used from that loop only)::

    from bridge.search.models import load_embedder
    from bridge.search.semantic import embed_pending, embed_query
    embedder = load_embedder(settings.search_model)           # once, at start-up; off the loop
    index = ToolIndex(embedder=embedder)                      # ... or embedder=None: lexical only
    index.add(tools)                                          # searchable lexically at once
    await embed_pending(index)                                # after registrations
    model = index.query_embedder(query)                       # None: the search is lexical
    vector = await embed_query(model, query) if model else None
    hits = index.search(query, limit, query_vector=vector)    # each hit says its tier

`embed_pending` takes a snapshot of the texts still to embed on the loop
(`ToolIndex.embedding_job()`), embeds them on the embedder's thread
(`EmbeddingJob.compute()`, which touches only the job and the embedder, never the index), and
hands the vectors back on the loop (`ToolIndex.store_embeddings()`), until nothing is left.
Tools added or removed meanwhile are fine: a vector is only used for a tool whose text still
has that hash, a tool added later is in the next job, and vectors are cached by the hash of
the text, so registering the same tool again (another tab, a reload) costs nothing.

fastembed, rather than sentence-transformers (PyTorch) or onnxruntime called directly (the
tokenising, pooling and model download would be ours to keep): bench/README.md says why.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, Protocol

import numpy as np

__all__ = ["MODEL_THREADS", "Embedder", "EmbeddingBusy", "EmbeddingJob", "EmbeddingWorker", "QueryCosts",
           "SemanticSearchUnavailable", "covered_scripts", "embed_pending", "embed_query", "joined_parts",
           "query_parts", "similarity_floor", "text_hash", "worker_for"]

log = logging.getLogger(__name__)

# onnxruntime's threads for one model call. One: its threads wait for work spinning, and a
# model on every core takes them from the event loop and the calls; one core is enough for a
# query (tens of words) and keeps the others free.
MODEL_THREADS = 1

class SemanticSearchUnavailable(ImportError):
    """The semantic extra is not installed, or the model could not be loaded."""


class Embedder(Protocol):
    """What the index needs of a model. Vectors are float32 and L2-normalised, so a dot
    product is the cosine. Both methods run on the embedder's worker threads (EmbeddingWorker),
    never on the event loop. An embedder may also have `embed_queries(texts)`, many queries in
    one call, which the worker then uses for the queries waiting together; `query_parts(texts)`,
    the same call by call (each call's positions and vectors), so that the worker answers each
    call's queries as it ends; `scripts`, the scripts of the languages it was trained on (see
    covered_scripts); and `similarity_floor`, the cosine it gives unrelated texts (see
    similarity_floor)."""

    name: str

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray: ...  # (len(texts), dimension)

    def embed_query(self, text: str) -> np.ndarray: ...  # (dimension,)


def covered_scripts(embedder: Embedder) -> frozenset[str] | None:
    """The scripts (bridge.search.tokenizer.script_of's names) of the languages `embedder` was trained on,
    from its `scripts`; None: every script, or not known. Its vector of text in another script is
    noise, so a query mostly in others is searched by words only (ToolIndex.query_embedder)."""
    scripts: frozenset[str] | None = getattr(embedder, "scripts", None)
    return scripts


def similarity_floor(embedder: Embedder, default: float) -> float:
    """The cosine `embedder` gives unrelated texts, from its `similarity_floor` (else `default`):
    fusion rescales a query's similarities between it and the best tool's, so that a model whose
    cosines all sit high (multilingual-e5: 0.7 to 1.0) still tells tools apart."""
    floor: float = getattr(embedder, "similarity_floor", default)
    return floor


def text_hash(text: str) -> bytes:
    """The key an embedding is cached under (with the model's name in the index)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def joined_parts(count: int, parts: Iterable[tuple[list[int], np.ndarray]]) -> np.ndarray:
    """The vectors of `count` texts, from the parts that hold them (positions, vectors)."""
    vectors: np.ndarray | None = None
    for positions, embedded in parts:
        if vectors is None:
            vectors = np.empty((count, embedded.shape[1]), dtype=np.float32)
        vectors[positions] = embedded
    return vectors if vectors is not None else np.zeros((0, 0), dtype=np.float32)


@dataclass
class EmbeddingJob:
    """Texts to embed, taken from an index on its loop; `compute()` runs anywhere (a worker
    thread) and reads nothing but this job."""

    embedder: Embedder
    hashes: list[bytes]
    texts: list[str]
    vectors: np.ndarray | None = field(default=None, repr=False)
    seconds: float = 0.0  # the model's time for them

    def compute(self) -> EmbeddingJob:
        started = time.perf_counter()
        self.vectors = self.embedder.embed_documents(self.texts)
        self.seconds = time.perf_counter() - started
        return self


# Queries embedded in one model call, at most; and queries waiting for the model, at most: past
# that a search is lexical rather than queued behind a backlog (see EmbeddingBusy).
QUERY_BATCH = 64
QUERIES_WAITING_MAX = 256
_QUERIES_KEPT = 256  # query -> vector, for the same query again (agents repeat themselves)

Waiter = tuple[asyncio.AbstractEventLoop, "asyncio.Future[Any]"]


@dataclass
class QueryCosts:
    """Where a worker's query time went, summed since it started (read by the benchmarks)."""

    kept: int = 0  # queries answered from the vectors kept
    queries: int = 0  # queries the model embedded
    batches: int = 0  # model calls of queries waiting together
    waited: float = 0.0  # seconds from each query's asking to its batch's start, summed
    model: float = 0.0  # seconds in the model, summed over batches


class EmbeddingBusy(RuntimeError):
    """Too many queries are waiting for the model: search this one by words."""


class EmbeddingWorker:
    """The one thread an embedder runs on, off every event loop. It takes the queries waiting
    first, all of them (up to QUERY_BATCH) in one model call, and a batch of tools
    (`documents`) only when no query waits, so a page registering many tools holds a search up
    by one batch at most. One thread, and the model loaded with one thread of its own
    (MODEL_THREADS): the model never takes more than one core from the loops and the calls.
    Get an embedder's worker with `worker_for`; a worker serves any number of loops."""

    def __init__(self, embedder: Embedder) -> None:
        # Weakly: the worker is kept by the embedder (worker_for), and must not keep it alive.
        self._embedder = weakref.ref(embedder)
        self._lock = threading.Lock()
        self._waiting: dict[str, list[Waiter]] = {}  # query -> who waits for its vector
        self._asked: dict[str, float] = {}  # query waiting -> when it was first asked
        self.costs = QueryCosts()
        self._jobs: deque[tuple[EmbeddingJob, Waiter]] = deque()
        self._pumping = False  # the thread is taking work
        self._queries: dict[str, np.ndarray] = {}  # query -> vector, least recently used first
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="bridge-embedding")

    @property
    def queries_waiting(self) -> int:
        """Queries waiting for the model (not those it is embedding now)."""
        with self._lock:
            return len(self._waiting)

    async def documents(self, job: EmbeddingJob) -> EmbeddingJob:
        """`job` computed on the thread, once no query waits."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[EmbeddingJob] = loop.create_future()
        with self._lock:
            self._jobs.append((job, (loop, future)))
            self._pump()
        return await future

    async def query(self, text: str) -> np.ndarray:
        """The vector of the query `text`, embedded together with the other queries waiting then.
        Raises EmbeddingBusy past QUERIES_WAITING_MAX waiting queries, and what the model raised."""
        loop = asyncio.get_running_loop()
        with self._lock:
            vector = self._queries.pop(text, None)
            if vector is not None:
                self._queries[text] = vector  # the most recently used: last
                self.costs.kept += 1
                return vector
            waiters = self._waiting.get(text)
            if waiters is None:
                if len(self._waiting) >= QUERIES_WAITING_MAX:
                    raise EmbeddingBusy(f"{len(self._waiting)} queries are waiting for the embedding model")
                waiters = self._waiting[text] = []
                self._asked[text] = time.perf_counter()
            future: asyncio.Future[np.ndarray] = loop.create_future()
            waiters.append((loop, future))
            self._pump()
        return await future

    def _pump(self) -> None:
        """Start the thread's work unless it is at it (under the lock)."""
        if not self._pumping:
            self._pumping = True
            self._thread.submit(self._work)

    def _work(self) -> None:
        """On the thread: queries first, then one job of tools, until nothing is left."""
        while True:
            with self._lock:
                if self._waiting:
                    texts = list(islice(self._waiting, QUERY_BATCH))
                    waiters = [self._waiting.pop(text) for text in texts]
                    started = time.perf_counter()
                    self.costs.waited += sum(started - self._asked.pop(text) for text in texts)
                    job = None
                elif self._jobs:
                    job, waiter = self._jobs.popleft()
                else:
                    self._pumping = False
                    return
            if job is None:
                self._embed_queries(texts, waiters)
            elif not waiter[1].done():  # else the embedding was cancelled: the job is dropped
                try:
                    _answer(waiter, job.compute(), None)
                except BaseException as exc:  # handed to the waiter; the thread goes on
                    _answer(waiter, None, exc)

    def _embed_queries(self, texts: list[str], waiters: list[list[Waiter]]) -> None:
        started = time.perf_counter()
        unanswered = set(range(len(texts)))
        with self._lock:
            self.costs.batches += 1
        try:
            for positions, vectors in self._query_parts(texts):
                with self._lock:  # counted before the answers, which a caller may read them after
                    self.costs.queries += len(positions)
                    self.costs.model += time.perf_counter() - started
                    for at, vector in zip(positions, vectors):
                        if len(self._queries) >= _QUERIES_KEPT:
                            del self._queries[next(iter(self._queries))]
                        self._queries[texts[at]] = vector
                _answer_in_turns([(waiter, vector) for at, vector in zip(positions, vectors) for waiter in waiters[at]])
                unanswered.difference_update(positions)
                started = time.perf_counter()
        except BaseException as exc:  # handed to every waiter not answered yet; the thread goes on
            for at in unanswered:
                for waiter in waiters[at]:
                    _answer(waiter, None, exc)

    def _query_parts(self, texts: list[str]) -> Iterator[tuple[list[int], np.ndarray]]:
        """The queries' vectors, a model call at a time when the embedder says how it splits
        them (`query_parts`), so that short queries need not wait for a long one's call."""
        embedder = self._embedder()
        if embedder is None:
            raise SemanticSearchUnavailable("the embedding model was dropped")
        for positions, vectors in query_parts(embedder, texts):
            vectors = np.asarray(vectors, dtype=np.float32)
            if len(vectors) != len(positions):
                raise ValueError(f"the model gave {len(vectors)} vectors for {len(positions)} queries")
            yield positions, vectors

    def close(self) -> None:
        """Let the thread end once what it runs is done."""
        self._thread.shutdown(wait=False)


def query_parts(embedder: Embedder, texts: list[str]) -> Iterable[tuple[list[int], np.ndarray]]:
    """The vectors of the queries `texts`, as (positions in `texts`, their vectors): call by
    call when the embedder says how it splits them (its `query_parts`), else all at once, in
    one call when it takes many queries at once (its `embed_queries`)."""
    parts = getattr(embedder, "query_parts", None)
    if parts is not None:
        return parts(texts)
    many = getattr(embedder, "embed_queries", None)
    vectors = many(texts) if many is not None else np.stack([embedder.embed_query(text) for text in texts])
    return [(list(range(len(texts))), vectors)]


def _answer_in_turns(answers: list[tuple[Waiter, Any]]) -> None:
    """Settle the waiters' futures with their vectors, on each one's loop one per loop turn: each
    search goes on from there with its part of the work on the loop (the product with the tools'
    vectors, the fusion, its MCP answer), and a batch's searches all in one turn would hold the
    loop for all of them at once."""
    by_loop: dict[asyncio.AbstractEventLoop, deque[tuple[asyncio.Future[Any], Any]]] = {}
    for (loop, future), vector in answers:
        by_loop.setdefault(loop, deque()).append((future, vector))
    for loop, its_answers in by_loop.items():
        _on_loop(loop, _settle_in_turns, loop, its_answers)


def _answer(waiter: Waiter, result: Any, error: BaseException | None) -> None:
    """Settle a waiter's future on its own loop (from the worker's thread)."""
    loop, future = waiter
    _on_loop(loop, _settle, future, result, error)


def _on_loop(loop: asyncio.AbstractEventLoop, callback: Callable[..., None], *args: Any) -> None:
    try:
        loop.call_soon_threadsafe(callback, *args)
    except RuntimeError:  # that loop is closed: nobody waits any more
        pass


def _settle_in_turns(loop: asyncio.AbstractEventLoop, answers: deque[tuple[asyncio.Future[Any], Any]]) -> None:
    """On the loop: settle the first answer's future, and the next in the loop's next turn."""
    future, result = answers.popleft()
    _settle(future, result, None)
    if answers:
        loop.call_soon(_settle_in_turns, loop, answers)


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.done():  # the search or the embedding task was cancelled
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


_workers: weakref.WeakKeyDictionary[Any, EmbeddingWorker] = weakref.WeakKeyDictionary()
_workers_lock = threading.Lock()


def worker_for(embedder: Embedder) -> EmbeddingWorker:
    """The embedder's one worker (made on first use, gone with the embedder)."""
    with _workers_lock:
        worker = _workers.get(embedder)
        if worker is None:
            worker = _workers[embedder] = EmbeddingWorker(embedder)
            weakref.finalize(embedder, worker.close)
        return worker


async def embed_query(embedder: Embedder, text: str) -> np.ndarray:
    """The vector of the query `text`, embedded off the loop (see EmbeddingWorker.query)."""
    return await worker_for(embedder).query(text)


# Tool texts in one model call of `embed_pending`, at most: a query asked meanwhile waits for that
# call to end, and a call of 8 texts takes the English model ~20 ms on one core (8 queries' worth).
# A slower model (multilingual-e5: ~12 ms a text; a pair of models) gets fewer texts a call, so
# that a call takes about DOCUMENT_CALL_SECONDS, as measured on the calls before.
DOCUMENT_BATCH = 8
DOCUMENT_CALL_SECONDS = 0.025


async def embed_pending(index: Any, batch: int = DOCUMENT_BATCH) -> int:
    """Embed every tool of `index` (a ToolIndex) still lacking a vector, at most `batch` texts
    per model call on the embedder's thread (small: a query waits for at most one), fewer when
    the model's last call took longer than DOCUMENT_CALL_SECONDS, handing each batch back on
    the loop; the number of texts embedded. Call it from the loop that uses the index, e.g. as a
    task after each registration; runs until nothing is pending, so tools added meanwhile are
    embedded too. If the model raises, the exception propagates and the texts stay pending for
    the next call."""
    done, size = 0, batch
    while (job := index.embedding_job(size)) is not None:
        if not job.texts:  # the tools it read had their texts cached: nothing for the model this turn
            await asyncio.sleep(0)
            continue
        try:
            await worker_for(job.embedder).documents(job)
        finally:
            index.store_embeddings(job)  # without vectors (the model failed, or cancelled): texts freed
        done += len(job.texts)
        if job.seconds > 0:
            size = max(1, min(batch, int(DOCUMENT_CALL_SECONDS * len(job.texts) / job.seconds)))
    return done
