"""The semantic tier in the background of the hub's event loop (`BackgroundEmbedding`): the model
loaded once, off the loop, and each index's tools embedded as they come."""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import Callable
from typing import Any

from bridge.search.models import load_embedder
from bridge.search.semantic import Embedder, embed_pending

__all__ = ["BackgroundEmbedding"]

log = logging.getLogger(__name__)


class BackgroundEmbedding:
    """The hub's side of the semantic tier, all in the background of its event loop: the model,
    loaded once in a worker thread when `start()` is first called with a loop running, and for
    each index one `embed_pending` task at a time (`embed_later`), so nobody waits for a vector.
    Agents' queries are embedded by `embed_query` (bridge.core.catalog.Room.search).

    `model` empty: nothing is ever loaded and search stays lexical. A model that cannot be
    loaded is logged once, with why, and search stays lexical. `on_loaded(embedder)` is called
    on the loop once the model is there (the hub gives it to its rooms).
    """

    def __init__(self, model: str, *, path: str = "", cache_dir: str = "",
                 on_loaded: Callable[[Embedder], None] = lambda embedder: None) -> None:
        self.model, self.path, self.cache_dir = model, path, cache_dir
        self.on_loaded = on_loaded
        self.embedder: Embedder | None = None
        self.failure: str | None = None  # why the model could not be loaded
        self._loading: asyncio.Task[None] | None = None
        self._embedding: dict[Any, asyncio.Task[int]] = {}  # index -> its embedding task

    def start(self) -> None:
        """Begin loading the model, once; a no-op without a model or a running loop."""
        if not self.model or self._loading is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # called outside the loop (a test building rooms by hand): the next call starts it
        self._loading = loop.create_task(self._load())
        self._loading.add_done_callback(_log_failure)

    async def _load(self) -> None:
        where = f" from {self.path}" if self.path else ""
        log.info("loading the embedding model %s%s for semantic tool search", self.model, where)
        try:
            embedder = await asyncio.to_thread(load_embedder, self.model, path=self.path or None,
                                               cache_dir=self.cache_dir or None)
        except Exception as error:  # SemanticSearchUnavailable, or whatever else the loader raised
            self.failure = str(error) or type(error).__name__
            log.error("semantic tool search is off, tool search stays lexical (by words): %s", error)
            return
        self.embedder = embedder
        if gc.get_freeze_count():
            # The process froze what start-up built (`serve` does): the model's libraries, imported
            # just now, live as long, and full collections would otherwise walk their modules.
            gc.collect()
            gc.freeze()
        log.info("semantic tool search is on (model %s)", self.model)
        self.on_loaded(embedder)

    def embed_later(self, index: Any) -> None:
        """Embed what `index` (a ToolIndex made with this embedder) still lacks, in the background;
        a task already running for it picks the new tools up. Failures are logged; the texts stay
        pending for the next call. Starts loading the model if nothing did yet."""
        self.start()
        if self.embedder is None or index.pending_embeddings == 0:
            return
        running = self._embedding.get(index)
        if running is not None and not running.done():
            return
        task = self._embedding[index] = asyncio.get_running_loop().create_task(embed_pending(index))
        task.add_done_callback(lambda done: self._embedded(index, done))

    def _embedded(self, index: Any, task: asyncio.Task[int]) -> None:
        if self._embedding.get(index) is task:
            del self._embedding[index]
        _log_failure(task)

    async def wait(self) -> None:
        """Until the model is loaded (or failed) and nothing is being embedded (for tests and benchmarks)."""
        if self._loading is not None:
            await asyncio.gather(self._loading, return_exceptions=True)
        while self._embedding:
            await asyncio.gather(*self._embedding.values(), return_exceptions=True)

    def close(self) -> None:
        """Stop what runs in the background (a worker thread already embedding finishes its batch)."""
        for task in [self._loading, *self._embedding.values()]:
            if task is not None:
                task.cancel()
        self._embedding.clear()


def _log_failure(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("semantic tool search: a background task failed; the tools it was embedding are found by words "
                  "until the next registration tries again", exc_info=task.exception())
