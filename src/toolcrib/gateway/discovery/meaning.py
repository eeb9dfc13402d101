"""The search index as the gateway holds it: off the event loop, behind a lock, vectors cached (R-5.8).

The index is not thread-safe and its work is CPU work (ranking, encoding a query or a catalog), so
the gateway never touches it on the event loop: every search, replacement and removal runs in a
worker thread, and one lock keeps a search from reading an account while it is being swapped.

Tool vectors are looked up in the store's vector cache by the sha256 of the text they are embedded
from; only the missing ones are encoded (outside the lock, so searches go on) and written back, so a
restart or another replica does not encode an unchanged catalog again.

A catalog's missing texts are encoded on every core (up to ``ENCODER_THREADS``), by threads of
their own at the lowest CPU priority (Linux gives each thread its own nice value): the encoder
then takes whatever CPU the event loop and the searches leave, and no more. Each text is still its
own run of the model, so its vector is the same whichever thread encodes it (#9). A query is
encoded at normal priority, on the worker thread of its search.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sys
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import anyio

from toolcrib import tracing

if TYPE_CHECKING:  # numpy and the search index load at their first use (a one-shot command, #33)
    from toolcrib.search.documents import SearchDoc
    from toolcrib.search.index import SearchIndex, SearchResult
    from toolcrib.search.semantic import Encoder, Matrix
    from toolcrib.search.usage import PastSearch
    from toolcrib.store.database import Database

__all__ = ["ENCODER_THREADS", "LiveIndex", "Meaning", "Visibility", "load_meaning"]

logger = logging.getLogger(__name__)

Visibility = Callable[[str], bool]
Loader = Callable[[], "tuple[Encoder | None, str | None]"]
ENCODER_THREADS = 4
"""At most this many threads encode a catalog (one per core the process may run on, up to this)."""
_BACKGROUND_NICE = 19
_CHUNK = 16  # texts per task of the catalog encoder: ~40 ms of work for typical tool texts


@dataclass(frozen=True, slots=True)
class Meaning:
    """The meaning channel's state: its encoder, or why there is none."""

    encoder: Encoder | None
    reason: str | None = None

    @property
    def up(self) -> bool:
        return self.encoder is not None

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory: it loads at the first text to encode (see ``vectors``)."""
        return self.encoder is not None and bool(getattr(self.encoder, "loaded", True))


async def load_meaning(enabled: bool, loader: Loader | None = None) -> Meaning:
    """Load the encoder in a worker thread (reading and checking 23 MB is not the loop's work);
    ``loader`` replaces the packaged model's."""
    if not enabled:
        return Meaning(None, "turned off by the setting TOOLCRIB_SEMANTIC")
    if loader is None:
        from toolcrib.search.semantic import load_encoder

        loader = load_encoder
    try:
        encoder, reason = await anyio.to_thread.run_sync(loader)
    except Exception:  # any failure to load leaves search on words, never a dead gateway
        logger.exception("meaning search is off: the model could not be loaded")
        return Meaning(None, "the model could not be loaded (see the gateway's log)")
    return Meaning(encoder, None if encoder is not None else reason or "the model could not be loaded")


class LiveIndex:
    """A ``SearchIndex`` used only from worker threads, under one lock."""

    def __init__(self, meaning: Meaning, *, encoder_threads: int | None = None) -> None:
        self._built: SearchIndex | None = None
        self._build_lock = threading.Lock()
        self._encoder = meaning.encoder
        self._lock = threading.Lock()
        self._threads = max(1, encoder_threads or min(ENCODER_THREADS, _usable_cores()))
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()
        self.encoded = 0
        """Tool texts encoded by this process (not found in the vector cache)."""

    @property
    def _index(self) -> SearchIndex:
        """The index, built at its first use: a one-shot command that installs no catalog never
        imports it, nor numpy (#33)."""
        with self._build_lock:
            if self._built is None:
                from toolcrib.search.index import SearchIndex

                self._built = SearchIndex(encoder=self._encoder)
            return self._built

    def close(self) -> None:
        """Let the catalog encoder's threads go: a chunk being encoded is finished, the chunks not
        started are dropped (an install still waiting for them fails, as the gateway is closing)."""
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    @property
    def semantic(self) -> bool:
        return self._encoder is not None  # what the index's own ``semantic`` says

    def __len__(self) -> int:
        return 0 if self._built is None else len(self._built)

    async def search(
        self, query: str, *, limit: int, visible: Visibility, withheld: Visibility
    ) -> SearchResult:
        """Rank in a worker thread; the query is encoded there too, before the lock is taken.

        Encoding and ranking are a span each (R-14.2; the worker thread runs in the caller's
        context, so they are the search's children). Ranking holds the visibility gates of the
        resolver and the answer-or-empty gate: the span says how many tools it answered with."""

        def run() -> SearchResult:
            vector = None
            if self._index.semantic:
                with tracing.span("search.encode"):
                    with self._lock:  # the typo corrections the encoder reads come from the index
                        text = self._index.encoding_text(query)
                    vector = self._index.encode([text])[0]
            with tracing.span("search.rank") as span, self._lock:
                found = self._index.search(
                    query, limit=limit, visible=visible, withheld=withheld, query_vector=vector
                )
                span.set("toolcrib.search.hits", len(found.hits))
                span.set("toolcrib.search.restricted", len(found.restricted))
                span.set("toolcrib.search.answered", bool(found.hits))
            return replace(found, query_vector=vector)

        return await anyio.to_thread.run_sync(run)

    async def learn(self, public_name: str, past: Sequence[PastSearch], now: float) -> None:
        """Make ``past`` the tool's examples in the usage channel (R-5.12)."""

        def run() -> None:
            with self._lock:
                self._index.learn(public_name, past, now)

        await anyio.to_thread.run_sync(run)

    async def forget(self, public_name: str | None = None) -> None:
        """Drop one tool's examples, or every tool's, from the usage channel."""

        def run() -> None:
            with self._lock:
                self._index.forget(public_name)

        await anyio.to_thread.run_sync(run)

    @property
    def examples(self) -> int:
        return 0 if self._built is None else self._built.examples

    async def replace(self, account: str, docs: Sequence[SearchDoc], vectors: Matrix | None) -> None:
        def run() -> None:
            with self._lock:
                self._index.replace_account(account, docs, vectors)

        await anyio.to_thread.run_sync(run)

    async def remove(self, account: str) -> None:
        def run() -> None:
            with self._lock:
                self._index.remove_account(account)

        await anyio.to_thread.run_sync(run)

    async def tool_vectors(self, db: Database, docs: Sequence[SearchDoc]) -> Matrix | None:
        """The unit vectors of ``docs``: cached ones from the store, the rest encoded and cached."""
        if not self.semantic or not docs:
            return None
        from toolcrib.search.semantic import DIMENSIONS
        from toolcrib.search.vectors import MODEL_ID
        from toolcrib.store import vectors as vector_store

        texts, keys = await anyio.to_thread.run_sync(_texts_and_keys, docs)
        loaded = await vector_store.load_vectors(db, MODEL_ID, keys)
        cached = {key: blob for key, blob in loaded.items() if len(blob) == DIMENSIONS * 4}
        missing = {key: text for key, text in zip(keys, texts, strict=True) if key not in cached}
        if missing:
            encoded = await anyio.to_thread.run_sync(self._encode_catalog, list(missing.values()))
            self.encoded += len(missing)
            fresh = {key: row.astype("<f4").tobytes() for key, row in zip(missing, encoded, strict=True)}
            await vector_store.save_vectors(db, MODEL_ID, fresh)
            cached.update(fresh)
        return await anyio.to_thread.run_sync(_matrix, keys, cached)

    def _encode_catalog(self, texts: list[str]) -> Matrix:
        """``texts`` encoded by the background threads, in chunks of ``_CHUNK``, the longest first
        (worker-thread work: this thread only waits for them). Small chunks keep the threads
        evenly busy, and a closing gateway waits for one chunk at most, not a catalog."""
        import numpy as np

        from toolcrib.search.semantic import DIMENSIONS

        load = getattr(self._encoder, "load", None)
        if load is not None:  # here, at this thread's priority: a search waits for the model too
            load()
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        chunks = [order[start : start + _CHUNK] for start in range(0, len(order), _CHUNK)]
        pool = self._pool_of()
        futures = [pool.submit(self._index.encode, [texts[i] for i in chunk]) for chunk in chunks]
        out = np.empty((len(texts), DIMENSIONS), dtype=np.float32)
        for chunk, future in zip(chunks, futures, strict=True):
            out[chunk] = future.result()
        return out

    def _pool_of(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(
                    self._threads, thread_name_prefix="toolcrib-encoder", initializer=_lower_priority
                )
            return self._pool


def _usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _lower_priority() -> None:
    """This thread at the lowest CPU priority (on Linux the nice value is per thread; elsewhere the
    thread keeps its priority, which is what it had before)."""
    if sys.platform == "linux":
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), _BACKGROUND_NICE)
        except OSError:  # pragma: no cover - a sandbox that refuses it: normal priority
            logger.info("the catalog encoder runs at normal priority: setpriority was refused")


def _texts_and_keys(docs: Sequence[SearchDoc]) -> tuple[list[str], list[str]]:
    from toolcrib.search.semantic import doc_text

    texts = [doc_text(doc) for doc in docs]
    return texts, [hashlib.sha256(text.encode()).hexdigest() for text in texts]


def _matrix(keys: list[str], blobs: dict[str, bytes]) -> Matrix:
    import numpy as np

    from toolcrib.search.semantic import DIMENSIONS

    out = np.empty((len(keys), DIMENSIONS), dtype=np.float32)
    for row, key in enumerate(keys):
        out[row] = np.frombuffer(blobs[key], dtype="<f4")
    return out
