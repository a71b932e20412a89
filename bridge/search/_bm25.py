"""Okapi BM25 over a corpus that changes in place (`LiveBM25`), with a squared idf.

rank_bm25's BM25Okapi formula, updated by put() and clear() rather than rebuilt;
tests/search/test_index.py checks its scores against BM25Okapi's own. bridge.search.index ranks
tools with it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping

import numpy as np

__all__ = ["B", "K1", "Change", "LiveBM25", "squared_idf"]

# Tool documents are short and a repeated word means something: tf saturates late (k1) and
# length matters little (b). Chosen on the dev half of MetaTool, checked on the test half
# (bench/search_quality.py).
K1 = 5.0
B = 0.3


def squared_idf(corpus_size: int, df: int) -> float:
    """idf(t)² with idf(t) = ln((N + 0.5) / (df(t) + 0.5)).

    Positive for a term some tools lack, exactly zero for a term every tool has (so such a
    term cannot rank anything: search() falls back to names), never negative -- BM25Okapi's
    own idf gives nothing above zero in a two-tool room and less than zero in a one-tool
    room. Squared because a long request is mostly common words and the rare ones should
    decide (bench/README.md has what it gained on MetaTool).
    """
    return math.log((corpus_size + 0.5) / (df + 0.5)) ** 2


Change = tuple[int, int, dict[str, int]]  # +1 (put) or -1 (clear), the slot, the document's term counts


class LiveBM25:
    """Okapi BM25 over a corpus that changes in place: rank_bm25's BM25Okapi formula,

        score(d, q) = sum over terms t of q:  idf(t) x tf(t, d) (k1 + 1) / (tf(t, d) + k1 (1 - b + b |d| / avgdl))

    with the idf given (tests/search/test_index.py checks the scores against BM25Okapi's own on a
    small corpus, given its idf). Documents live in slots; put() and clear() keep the term
    counts, lengths and postings current, and nothing is rebuilt.

    What a query needs per term is kept at two levels:

    - the term's slots and counts there (the Python part: one dict lookup per document
      holding the term). A change is logged, and the next query brings the kept arrays up
      to date with it (sync()), so a tool coming or going costs the terms it holds a few
      array operations, not a recount; after more than _LOG_KEPT changes at once (a page
      bringing many tools) they are all dropped and recounted when next asked for;
    - the term's scores over those slots, dropped at any change (N and avgdl move every
      score) and recomputed from the kept counts with a few array operations.

    So the first query after a change costs about what a query on an unchanged catalog
    does, plus the terms of the tools that changed.

    What lives as long as the documents is kept where the garbage collector does not look,
    so that a full collection does not walk every document: a document's counts are a
    plain dict of strings to ints, and a term's postings a dict of slots to the term's count
    there (CPython tracks every set, and a dict only once it holds an object it tracks);
    counting a term again after many changes reads them straight into arrays.
    """

    def __init__(self, k1: float = K1, b: float = B, idf: Callable[[int, int], float] = squared_idf) -> None:
        self.k1, self.b, self._idf = k1, b, idf
        self.doc_freqs: list[dict[str, int]] = []  # term counts of the document in each slot
        self.doc_len = np.zeros(64)  # grown by doubling; only the first len(doc_freqs) count
        self.corpus_size = 0
        self.postings: dict[str, dict[int, int]] = {}  # term -> slot of each document that has it -> its count
        self._total_len = 0
        # term -> (its slots, its counts there) as of the last sync().
        self._term_counts: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._term_counts_held = 0  # slots in it
        self._log: list[Change] | None = []  # changes since the last sync(); None: too many
        # term -> (slots, BM25 contribution) for the corpus as it is; emptied by any change.
        self._contributions: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._saturation: np.ndarray | None = None  # k1 (1 - b + b |d| / avgdl) by slot, likewise

    @property
    def avgdl(self) -> float:
        return self._total_len / self.corpus_size if self.corpus_size else 0.0

    def put(self, slot: int, term_counts: Mapping[str, int]) -> list[str]:
        """Store a document, as its term counts, in the free `slot` (at most one past the
        last); the terms no other document has."""
        counts = dict(term_counts.items())  # copied whole, a Counter would pass on being tracked
        if slot == len(self.doc_freqs):
            self.doc_freqs.append(counts)
            if slot == len(self.doc_len):
                self.doc_len = np.concatenate([self.doc_len, np.zeros(len(self.doc_len))])
        else:
            self.doc_freqs[slot] = counts
        postings, new = self.postings, []
        for term, count in counts.items():
            if term in postings:
                postings[term][slot] = count
            else:
                postings[term] = {slot: count}
                new.append(term)
        length = sum(counts.values())
        self.doc_len[slot] = length
        self._adjust_totals(+1, length)
        self._logged((+1, slot, counts))
        return new

    def clear(self, slot: int) -> list[str]:
        """Empty `slot`; the terms no document has any more."""
        counts, self.doc_freqs[slot] = self.doc_freqs[slot], {}
        postings, gone = self.postings, []
        for term in counts:
            slots = postings[term]
            del slots[slot]
            if not slots:
                del postings[term]
                gone.append(term)
        self._adjust_totals(-1, -int(self.doc_len[slot]))
        self.doc_len[slot] = 0
        self._logged((-1, slot, counts))
        return gone

    def _adjust_totals(self, documents: int, length: int) -> None:
        self.corpus_size += documents
        self._total_len += length
        self._contributions.clear()
        self._saturation = None

    def _logged(self, change: Change) -> None:
        log = self._log
        if log is not None:
            if len(log) < _LOG_KEPT:
                log.append(change)
            else:
                self._log = None

    def sync(self) -> list[Change] | None:
        """Bring the kept per-term counts up to date; the changes that were applied ([]: none
        since the last call), or None when there were too many and all were dropped instead."""
        log = self._log
        if log is None:
            self._log = []
            self._term_counts.clear()
            self._term_counts_held = 0
            return None
        if not log:
            return log
        self._log = []
        kept = self._term_counts
        if kept:
            # term -> (slots it left, slot -> count where it came), replayed in order: a slot
            # emptied and filled again is both dropped from the kept arrays and added back.
            edits: dict[str, tuple[set[int], dict[int, int]]] = {}
            for sign, slot, counts in log:
                for term in counts.keys() & kept.keys():
                    left, came = edits.setdefault(term, (set(), {}))
                    if sign > 0:
                        came[slot] = counts[term]
                    else:
                        came.pop(slot, None)
                        left.add(slot)
            for term, (left, came) in edits.items():
                slots, tf = kept[term]
                held = len(slots)
                if left:
                    staying = ~np.isin(slots, np.fromiter(left, dtype=np.intp, count=len(left)))
                    slots, tf = slots[staying], tf[staying]
                if came:
                    slots = np.concatenate([slots, np.fromiter(came, dtype=np.intp, count=len(came))])
                    tf = np.concatenate([tf, np.fromiter(came.values(), dtype=float, count=len(came))])
                if len(slots):
                    kept[term] = slots, tf
                else:
                    del kept[term]
                self._term_counts_held += len(slots) - held
        return log

    def totals(self, query_terms: Iterable[str], size: int) -> np.ndarray:
        """BM25 score of slots 0 .. size - 1 (at least len(doc_freqs)) for the query terms:
        zero for a document no term matches, and for an empty slot."""
        self.sync()
        totals = np.zeros(size)
        for term, count in Counter(query_terms).items():
            if term in self.postings:
                slots, contribution = self._contribution(term)
                totals[slots] += count * contribution
        return totals

    def _contribution(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """The slots of the documents holding `term` (which some document has), and what the
        term adds to the score of each. Call sync() first."""
        found = self._contributions.get(term)
        if found is None:
            slots, tf = self._counts(term)
            if self._saturation is None:
                used = self.doc_len[:len(self.doc_freqs)]
                self._saturation = self.k1 * (1 - self.b + self.b * used / self.avgdl)
            weight = self._idf(self.corpus_size, len(slots))
            found = self._contributions[term] = slots, weight * (tf * (self.k1 + 1) / (tf + self._saturation[slots]))
        return found

    def _counts(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        found = self._term_counts.get(term)
        if found is None:
            held = self.postings[term]
            found = (np.fromiter(held.keys(), dtype=np.intp, count=len(held)),
                     np.fromiter(held.values(), dtype=float, count=len(held)))
            if self._term_counts_held + len(held) > _COUNTS_KEPT:
                self._term_counts.clear()
                self._term_counts_held = 0
            self._term_counts[term] = found
            self._term_counts_held += len(held)
        return found


# Slots kept in the per-term counts (two arrays of that many numbers): ~16 MB. The scores
# computed from them hold as many again, and go at the next change.
_COUNTS_KEPT = 1_000_000
# Changes replayed onto the kept counts by the next query; past this many (a page's tools
# arriving or leaving together), the kept counts are dropped and recounted as asked for.
_LOG_KEPT = 64
