"""Tool search for one room: the ranking of a query's hits (`ToolIndex`, `SearchHit`).

Words first: Okapi BM25 (bridge.search._bm25, updated in place as tools come and go) over what pages
say about their tools (bridge.search._tool_text), then the best word matches reordered by the letter
trigrams of their stems (see RERANK_DEPTH), cut where the scores fall steeply (AutoCut),
near-duplicates after the rest, and exact names first. A query word no tool has is also looked
for as a compound's last part (see FIRST_PART); a query no word matches falls back to the tools
whose names contain its words.

With an embedder (ToolIndex(embedder=...), bridge.search.semantic; the `semantic` extra) and a query
vector given to search(), the lexical candidates are fused with the tools nearest the query
("hybrid" tier, see FUSION_WEIGHT). Nothing here runs the model: tools are embedded off the
event loop (embedding_job / store_embeddings, bridge.search._vectors) and searchable lexically until
then, and the caller embeds the query off the loop too (bridge.search.semantic.embed_query).
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from itertools import chain

import numpy as np

from bridge.search._bm25 import K1, B, LiveBM25
from bridge.search._tool_text import IndexedTool, body, embedding_texts, word_counts
from bridge.search._vectors import ToolVectors
from bridge.search.semantic import Embedder, EmbeddingJob, covered_scripts, similarity_floor
from bridge.search.tokenizer import (
    MIN_STEM,
    QUERY_STOP_WORDS,
    compact,
    distinct_trigrams,
    letter_trigrams,
    letters_and_digits,
    mostly_in,
    query_terms,
    query_words,
    stem,
    terms,
    tokenize,
    words,
)

__all__ = ["IndexedTool", "SearchHit", "ToolIndex"]


@dataclass(frozen=True, slots=True)
class SearchHit:
    key: str
    score: float
    tier: str = "lexical"  # "hybrid" when the query's vector took part


# A second opinion on the best word matches: the same Okapi formula (K1, B, idf not squared)
# over the letter trigrams of the tools' stems, which say how much of a word two stems
# share where stems and 4-letter truncations only say same or not ("weathermen" is nearer
# "weatherman" than "weather"; "crypto" is inside "cryptocurrency"). The best RERANK_DEPTH
# word matches are re-scored as (both chosen on the dev half of MetaTool)
#     word score / best word score + TRIGRAM_WEIGHT x trigram score / best trigram score.
# Nothing is counted per tool at add time, so registering stays cheap: a tool's trigrams are
# read off its stems when a query first reranks it, its length is its word length, and a
# trigram's document frequency is the sum of the postings of the stems holding it, at most N
# (a tool with two such stems counts twice).
RERANK_DEPTH = 10
TRIGRAM_WEIGHT = 0.4
# Tools' counted trigrams kept for reranking, least recently used dropped first: ~5 KB each.
_TRIGRAM_BAGS_KEPT = 2048


# Near-duplicates (the same tool from two tabs, v1 and v2 of one tool) would fill the top
# with one answer: a hit whose term counts overlap a better hit's this much (weighted
# Jaccard: sum of the smaller count of each term / sum of the larger) and that scores at
# least DUPLICATE_SCORE_RATIO of it goes after every hit that is not such a copy. Only
# reorders the hits; a different tool is never added. Name words weigh most
# (bridge.search._tool_text.NAME_WEIGHT), so two tools that say the same of different things
# ("information about house renting" / "... purchasing") stay below the threshold, while a
# copy is at 1 and a second version adding a few words to its description well above it.
NEAR_DUPLICATE = 0.8
DUPLICATE_SCORE_RATIO = 0.95
_OVERLAPS_KEPT = 100_000

# German, Dutch and the Nordic languages write a compound as one word whose last part says
# what it is: a request for the "Terminkalender" means a "Kalender", "Wettervorhersage" a
# "Vorhersage". A query word no tool has is also looked for as its last part, the longest that
# leaves a first part of FIRST_PART letters and is itself a word of some tool (stemmed) of
# LAST_PART letters or more. Its beginning already meets its first part at the 4-letter
# truncation ("Termin": "term*").
FIRST_PART = 3
LAST_PART = 5


def _overlap(first: Mapping[str, int], second: Mapping[str, int]) -> float:
    """Weighted Jaccard of two term bags."""
    shared = sum(min(count, second[term]) for term, count in first.items() if term in second)
    return shared / (sum(first.values()) + sum(second.values()) - shared) if shared else 0.0


# Fusion of the two rankings (chosen on the dev half of MetaTool, bench/README.md): the lexical
# score over the best one, and the similarity rescaled so SIMILARITY_FLOOR is 0 and the best
# tool's is 1.
FUSION_WEIGHT = 0.3
SIMILARITY_FLOOR = 0.0


# --- the index -----------------------------------------------------------------------------

# AutoCut: the list stops at the first hit scoring less than AUTOCUT_RATIO of the hit before
# it: low, because on MetaTool the right tool often follows a drop (bench/README.md).
AUTOCUT_RATIO = 0.25


class ToolIndex:
    """Search over the tools of one room. Not thread-safe: use it from one event loop."""

    def __init__(self, tools: Iterable[IndexedTool] = (), embedder: Embedder | None = None) -> None:
        """`embedder` (see bridge.search.semantic): with one, tools are also found by meaning once
        embedded (embedding_job / store_embeddings, or bridge.search.semantic.embed_pending);
        without, search is lexical only (until use_embedder).

        What lives as long as the tools is kept where the garbage collector does not look,
        so that a full collection does not walk the index (see bridge.search._bm25): what a slot holds
        in dicts by slot, of strings and tuples of strings, a name's slots as a tuple, sets of
        stems as dicts to None. A list is walked item by item at every full collection, as is
        a dict or tuple holding a dict; a dict or tuple holding only strings, numbers and
        such tuples is not tracked."""
        self._vectors = ToolVectors(embedder) if embedder is not None else None
        self._bm25 = LiveBM25()
        self._slot_of: dict[str, int] = {}
        self._key_at: dict[int, str] = {}  # of the slots in use (not free, not retired)
        self._slot_count = 0  # slots used so far, free ones included
        self._free_slots: list[int] = []
        # Exact-name lookup: compact name or key, and stemmed name words -> slots.
        self._by_name: dict[str, tuple[int, ...]] = {}
        self._name_forms_at: dict[int, tuple[str, ...]] = {}
        # The substring fallback searches all compact names at once, joined into one string
        # that is rebuilt on the first fallback after a change.
        self._compact_name_at: dict[int, str] = {}
        self._joined_names: tuple[str, tuple[int, ...], tuple[int, ...]] | None = None
        # Trigram rerank: trigram -> stems holding it (changes only with the vocabulary),
        # trigram document frequencies computed since the last change, and the counted
        # trigrams of recently reranked tools by slot.
        self._stems_with: dict[str, dict[str, None]] = {}
        self._trigram_df: dict[str, int] = {}  # before the cap at N, as of the last _sync()
        self._trigram_bags: dict[int, dict[str, int]] = {}
        self._overlaps: dict[tuple[int, int], float] = {}  # near-duplicate test, until a change
        self._retired: list[int] = []  # slots of tools found no more, whose entries sweep() frees
        self.add(tools)

    def __len__(self) -> int:
        return len(self._slot_of)

    def __contains__(self, key: object) -> bool:
        return key in self._slot_of

    def use_embedder(self, embedder: Embedder, read: Callable[[str], IndexedTool]) -> None:
        """Find tools by meaning too from now on, as if made with `embedder`: the tools indexed
        so far wait for their vectors, each read with `read(key)` (the tool as add() took it)
        only when an embedding job takes it, and are found by words meanwhile as before (what
        finds them by words is left as it is). An index keeps the one embedder it is given, so
        a query's vector is always by its model: the same again does nothing, another is a
        ValueError."""
        if self._vectors is not None:
            if self._vectors.embedder is not embedder:
                raise ValueError("the index already searches with another embedder")
            return

        def texts(slot: int) -> tuple[str, str]:
            key = self._key_at.get(slot)
            assert key is not None, "a tool leaving leaves the unread slots (ToolVectors.remove)"
            tool = read(key)
            return embedding_texts(tool, words(tool.name))

        self._vectors = ToolVectors(embedder, unread=self._slot_of.values(), read=texts)

    def add(self, tools: Iterable[IndexedTool]) -> None:
        """Index `tools`; a key already present is replaced."""
        self._changed()
        by_name = self._by_name
        for tool in tools:
            if tool.key in self._slot_of:
                self.remove((tool.key,))
            if self._free_slots:
                slot = self._free_slots.pop()
            else:
                slot, self._slot_count = self._slot_count, self._slot_count + 1
            self._key_at[slot] = tool.key
            self._slot_of[tool.key] = slot
            name_words = words(tool.name)
            heading_words = name_words + words(tool.title) if tool.title else name_words
            for term in self._bm25.put(slot, word_counts(heading_words, body(tool))):
                for trigram in letter_trigrams(term):  # a stem new to the room: rare once warm
                    self._stems_with.setdefault(trigram, {})[term] = None
            self._compact_name_at[slot] = compact_name = compact(tool.name)
            self._name_forms_at[slot] = forms = _name_forms(tool, compact_name, name_words)
            if self._vectors is not None:
                self._vectors.add(slot, embedding_texts(tool, name_words))
            for form in forms:
                by_name[form] = by_name.get(form, ()) + (slot,)

    def remove(self, keys: Iterable[str]) -> None:
        """Drop the tools with these keys; unknown keys are ignored."""
        self._changed()
        for key in keys:
            slot = self._hide(key)
            if slot is not None:
                self._free(slot)

    def retire(self, keys: Iterable[str]) -> None:
        """The tools with these keys are found no more from now on (unknown keys are ignored);
        their word entries, the costly part, stay until sweep() frees them, so that a page
        leaving with many tools can be swept a slice at a time. Until then the word statistics
        (tools, lengths, document frequencies) still count them, as during a registration
        they count the slices already added."""
        self._changed()
        for key in keys:
            slot = self._hide(key)
            if slot is not None:
                self._retired.append(slot)

    def sweep(self, limit: int | None = None) -> int:
        """Free the entries of up to `limit` retired tools (all when None); how many are left."""
        retired = self._retired
        for _ in range(len(retired) if limit is None else min(limit, len(retired))):
            self._free(retired.pop())
        return len(retired)

    def _hide(self, key: str) -> int | None:
        """The tool's slot, which no query finds from now on; None for an unknown key."""
        slot = self._slot_of.pop(key, None)
        if slot is None:
            return None
        if self._vectors is not None:
            self._vectors.remove(slot)
        by_name = self._by_name
        for form in self._name_forms_at.pop(slot):
            slots = by_name[form]
            at = slots.index(slot)
            others = slots[:at] + slots[at + 1:]
            if others:
                by_name[form] = others
            else:
                del by_name[form]
        del self._compact_name_at[slot], self._key_at[slot]
        return slot

    def _free(self, slot: int) -> None:
        """The hidden slot's word entries dropped, the slot free for another tool."""
        for term in self._bm25.clear(slot):
            for trigram in distinct_trigrams(term):  # "10000" has "000" twice
                _discard(self._stems_with, trigram, term)
        self._trigram_bags.pop(slot, None)
        self._free_slots.append(slot)

    def _changed(self) -> None:
        """Forget what was computed for the catalog as it was (search runs between calls)."""
        self._joined_names = None
        self._overlaps.clear()

    def _sync(self) -> None:
        """Bring what queries keep across changes (per-term counts, trigram document
        frequencies) up to the adds and removes since the last query."""
        changes = self._bm25.sync()
        trigram_df = self._trigram_df
        if changes is None:
            trigram_df.clear()
        elif changes and trigram_df:
            for sign, _, counts in changes:
                for term in counts:
                    for trigram in distinct_trigrams(term):
                        if trigram in trigram_df:
                            trigram_df[trigram] += sign

    def search(self, query: str, limit: int = 5, *, query_vector: np.ndarray | None = None) -> list[SearchHit]:
        """The best `limit` tools for `query`, best first; [] when nothing matches.

        Given the query's vector, by the model query_embedder(query) named (asked once, before
        the query is embedded: an index's model never changes), and with at least one tool
        embedded, the lexical candidates and the tools nearest the query are fused (see
        FUSION_WEIGHT): tier "hybrid"; else "lexical". The model never runs here."""
        if limit <= 0 or not self._slot_of:
            return []
        self._sync()
        query_terms = self._query_terms(query)
        totals = self._bm25_totals(query_terms + self._last_parts(query))
        named = self._name_matches(query)
        scores = self._best(totals, max(limit, RERANK_DEPTH))
        if scores:
            for slot in named:
                scores.setdefault(slot, float(totals[slot]))
            # AutoCut judges the word scores, before the trigrams (which give every
            # candidate some score) reorder what it kept.
            best_first = sorted(scores.items(), key=lambda item: -item[1])
            kept = best_first[:self._cut([score for _, score in best_first])]
            scores = self._demote_duplicates(self._rerank(query_terms, dict(kept)))
        else:
            scores = (self._name_substring_scores(query) or self._asking_word_scores(query, query_terms, limit)
                      or self._common_word_scores(query_terms))
        tier = "lexical"
        if query_vector is not None and self._vectors is not None and self._vectors.count:
            similarity = self._vectors.similarities(query_vector, self._slot_count)
            scores = self._fuse(scores, similarity, max(limit, RERANK_DEPTH))
            tier = "hybrid"
        if named:
            # An exact name match goes first whatever the scores say (on a tie as well).
            lead = max(scores.values(), default=0.0) or 1.0
            for slot in named:
                scores[slot] = scores.get(slot, 0.0) + lead
        key_at = self._key_at
        ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0] not in named, key_at.get(item[0], "")))
        ranked = ranked[:limit]
        ranked = ranked[:self._cut([score for _, score in ranked])]
        return [SearchHit(key, score, tier) for slot, score in ranked if (key := self._key_at.get(slot)) is not None]

    def query_embedder(self, query: str) -> Embedder | None:
        """The model whose vector of `query` search() would fuse in; None when it would search
        by words only: no embedder, no tool embedded yet, a blank query, or a query mostly in
        scripts the model was not trained on (bridge.search.semantic.covered_scripts), whose vector
        would be noise that moves the words' hits down."""
        vectors = self._vectors
        if vectors is None or not vectors.count or not query.strip():
            return None
        scripts = covered_scripts(vectors.embedder)
        return vectors.embedder if scripts is None or mostly_in(query, scripts) else None

    def _fuse(self, lexical: dict[int, float], similarity: np.ndarray, depth: int) -> dict[int, float]:
        """FUSION_WEIGHT x lexical score / best lexical score + (1 - FUSION_WEIGHT) x the
        similarity (see NAME_SHARE) rescaled to 0..1 between the model's floor and the best, over the lexical
        candidates and the `depth` most similar embedded tools. The floor is the cosine the model gives
        unrelated texts (bridge.search.semantic.similarity_floor; SIMILARITY_FLOOR unless it says otherwise).
        A lexical candidate not yet embedded counts its lexical share twice (as if meaning agreed with words)."""
        semantic = self._vectors
        assert semantic is not None
        nearest = self._nearest(semantic.embedded_slots(), similarity, depth)
        best = float(similarity[nearest[0]]) if len(nearest) else 1.0
        floor = similarity_floor(semantic.embedder, SIMILARITY_FLOOR)
        span = max(best - floor, 1e-9)
        best_lexical = max(lexical.values(), default=0.0) or 1.0
        fused = {}
        for slot in set(lexical).union(nearest.tolist()):
            words = lexical.get(slot, 0.0) / best_lexical
            if semantic.has_vector(slot):
                meaning = max(0.0, float(similarity[slot]) - floor) / span
            else:
                meaning = words
            score = FUSION_WEIGHT * words + (1 - FUSION_WEIGHT) * meaning
            if score > 0:
                fused[slot] = score
        return fused

    @staticmethod
    def _nearest(slots: np.ndarray, similarity: np.ndarray, depth: int) -> np.ndarray:
        """The `depth` of `slots` most similar, best first (the lower slot first on a tie):
        a partition, then a sort of those only."""
        if len(slots) > depth:
            slots = slots[np.argpartition(-similarity[slots], depth - 1)[:depth]]
        return slots[np.lexsort((slots, -similarity[slots]))]

    # --- the semantic tier's embedding step (see bridge.search.semantic for the hub's side) -----------

    def embedding_job(self, limit: int = 256) -> EmbeddingJob | None:
        """Up to `limit` texts of tools not embedded yet and not in another job, to embed off
        the loop (EmbeddingJob.compute) and hand back with store_embeddings; None when there
        are none (or the index has no embedder). A job has no texts when the tools it read
        (see use_embedder) all had theirs cached and more wait to be read."""
        return self._vectors.job(limit) if self._vectors is not None else None

    def store_embeddings(self, job: EmbeddingJob) -> None:
        """Take the vectors of a computed job (on the index's loop). Tools removed or changed
        since the job was taken are left alone; a job that failed (no vectors) frees its
        texts for the next job."""
        if self._vectors is not None:
            self._vectors.store(job)

    @property
    def pending_embeddings(self) -> int:
        """Tools (slots) still waiting for their vector."""
        return self._vectors.pending_slots if self._vectors is not None else 0

    @staticmethod
    def _query_terms(query: str) -> list[str]:
        """The query's terms, less the words of asking (bridge.search.tokenizer.QUERY_STOP_WORDS)."""
        return query_terms(query)

    def _last_parts(self, query: str) -> list[str]:
        """The last parts of the query's compound words that the tools have (see FIRST_PART)."""
        postings = self._bm25.postings
        found = []
        for word in query_words(query):
            # (A stem of a script written with spaces is what has letter trigrams.) A word inside a
            # tool's name is left to the names' fallback: "esearchhelper" is ResearchHelper's name
            # less a letter, not a compound of "helper".
            if (len(word) >= FIRST_PART + LAST_PART and word.isalpha() and stem(word) not in postings
                    and letter_trigrams(word) and word not in self._names_joined()[0]):
                last = next((part for start in range(FIRST_PART, len(word) - LAST_PART + 1)
                             if (part := stem(word[start:])) in postings), None)
                if last is not None:
                    found.append(last)
        return found

    @staticmethod
    def _cut(scores: list[float]) -> int:
        """AutoCut: how many of `scores` (best first) come before the first steep fall."""
        for index in range(1, len(scores)):
            if scores[index] < AUTOCUT_RATIO * scores[index - 1]:
                return index
        return len(scores)

    def _bm25_totals(self, query_terms: list[str]) -> np.ndarray:
        """BM25 score of every slot (zero for the tools no term matches, free slots and retired ones)."""
        totals = self._bm25.totals(query_terms, self._slot_count)
        totals[self._retired] = 0.0
        return totals

    def _best(self, totals: np.ndarray, limit: int) -> dict[int, float]:
        """slot -> score of the `limit` best positive scores; of those tied with the last, the
        first by key (so which of them is returned depends on keys, not on slots). Never more:
        a word hundreds of tools share ties them all, and what follows is quadratic in them."""
        positive = np.flatnonzero(totals > 0)
        if len(positive) <= limit:
            return dict(zip(positive.tolist(), totals[positive].tolist()))
        floor = np.partition(totals[positive], len(positive) - limit)[len(positive) - limit]
        above = positive[totals[positive] > floor]
        best = dict(zip(above.tolist(), totals[above].tolist()))
        tied = positive[totals[positive] == floor].tolist()
        for slot in heapq.nsmallest(limit - len(best), tied, key=self._key_at.__getitem__):  # scored: in use
            best[slot] = float(floor)
        return best

    def _overlap(self, first: int, second: int) -> float:
        """_overlap of two tools' term bags, kept until the next change."""
        pair = (first, second) if first < second else (second, first)
        found = self._overlaps.get(pair)
        if found is None:
            if len(self._overlaps) >= _OVERLAPS_KEPT:
                self._overlaps.clear()
            documents = self._bm25.doc_freqs
            found = self._overlaps[pair] = _overlap(documents[first], documents[second])
        return found

    def _rerank(self, query_terms: list[str], word_scores: dict[int, float]) -> dict[int, float]:
        """The word matches re-scored with their letter trigrams (see RERANK_DEPTH)."""
        trigram_scores = self._trigram_scores(query_terms, word_scores)
        best_words = max(word_scores.values())
        best_trigrams = max(trigram_scores.values()) or 1.0
        return {slot: score / best_words + TRIGRAM_WEIGHT * trigram_scores[slot] / best_trigrams
                for slot, score in word_scores.items()}

    def _demote_duplicates(self, scores: dict[int, float]) -> dict[int, float]:
        """`scores` with each near-duplicate of a better hit (see NEAR_DUPLICATE) moved after
        the hits that are not, its score lowered to keep the list best first."""
        if len(scores) < 2:
            return scores
        lengths = self._bm25.doc_len
        order = sorted(scores, key=lambda slot: (-scores[slot], self._key_at.get(slot, "")))
        leaders: list[int] = []
        duplicates: list[int] = []
        for slot in order:
            score, length = scores[slot], lengths[slot]
            # Cheap tests first: copies score alike, and the overlap cannot reach
            # NEAR_DUPLICATE unless the lengths are within that ratio.
            if any(score >= DUPLICATE_SCORE_RATIO * scores[leader]
                   and NEAR_DUPLICATE * lengths[leader] <= length <= lengths[leader] / NEAR_DUPLICATE
                   and self._overlap(slot, leader) >= NEAR_DUPLICATE for leader in leaders):
                duplicates.append(slot)
            else:
                leaders.append(slot)
        if not duplicates:
            return scores
        ranked, floor = {}, math.inf
        for slot in leaders + duplicates:
            floor = ranked[slot] = min(scores[slot], math.nextafter(floor, 0.0))
        return ranked

    def _trigram_scores(self, query_terms: list[str], slots: Iterable[int]) -> dict[int, float]:
        """Okapi BM25 of the letter trigrams of the query's stems, for each of `slots`."""
        tools, postings, avgdl = len(self._slot_of), self._bm25.postings, self._bm25.avgdl
        weights = {}  # trigram -> its count in the query x its idf, for those some tool has
        for trigram, count in Counter(chain.from_iterable(map(letter_trigrams, query_terms))).items():
            df = self._trigram_df.get(trigram)
            if df is None:
                held_by = self._stems_with.get(trigram, ())
                df = self._trigram_df[trigram] = sum(map(len, map(postings.__getitem__, held_by)))
            df = min(df, tools)
            if df:
                weights[trigram] = count * math.log((tools + 0.5) / (df + 0.5))
        scores = {}
        for slot in slots:
            bag = self._trigram_bag(slot)
            saturation = K1 * (1 - B + B * float(self._bm25.doc_len[slot]) / avgdl)
            scores[slot] = sum(weights[trigram] * bag[trigram] * (K1 + 1) / (bag[trigram] + saturation)
                               for trigram in bag.keys() & weights.keys())
        return scores

    def _trigram_bag(self, slot: int) -> dict[str, int]:
        """The counted trigrams of the stems of the tool in `slot` (kept for the next query)."""
        bags = self._trigram_bags
        bag = bags.pop(slot, None)
        if bag is None:
            # Each stem counted as for BM25 (name words weighted): once for every stem in one
            # pass, then the rest for the few that repeat, instead of expanding every count.
            counts = self._bm25.doc_freqs[slot]
            counted = Counter(chain.from_iterable(map(letter_trigrams, counts)))
            for term, count in counts.items():
                if count > 1:
                    for trigram in letter_trigrams(term):
                        counted[trigram] += count - 1
            bag = dict(counted.items())  # untracked, as bridge.search._bm25 keeps its documents' counts
            if len(bags) >= _TRIGRAM_BAGS_KEPT:
                del bags[next(iter(bags))]  # the least recently used: dicts keep insertion order
        bags[slot] = bag  # (re)inserted last: the most recently used
        return bag

    def _name_matches(self, query: str) -> set[int]:
        found: set[int] = set()
        for form in _query_name_forms(query):
            found.update(self._by_name.get(form, ()))
        return found

    def _common_word_scores(self, query_terms: list[str]) -> dict[int, float]:
        """Last resort, when the query's words are all words every tool has (their idf is zero) and
        no name contains them: the tools that have them, by how many (a room of one or two tools
        is still found by its words)."""
        scores: Counter[int] = Counter()
        for term in set(query_terms):
            for slot in self._bm25.postings.get(term, ()):
                if slot in self._key_at:  # not retired
                    scores[slot] += 1
        return {slot: float(count) for slot, count in scores.items()}

    def _asking_word_scores(self, query: str, query_terms: list[str], limit: int) -> dict[int, float]:
        """Next fallback, when the query's other words match nothing: its words of asking
        count too ("make a bill for a client" still finds the tool that makes one "for a
        customer"), as BM25 scores them."""
        every = terms(query)
        return self._best(self._bm25_totals(every), max(limit, RERANK_DEPTH)) if every != query_terms else {}

    def _name_substring_scores(self, query: str) -> dict[int, float]:
        """Fallback when no word term scores: tools whose name contains a word of the
        query, scored by the share of the name those words cover ("calc" -> calculator).
        Words of asking are not looked for ("for" is in "format" and "platform")."""
        needles = {word.lower() for word in letters_and_digits(query) if len(word) >= MIN_STEM} - QUERY_STOP_WORDS
        if not needles:
            return {}
        joined, starts, slots = self._names_joined()
        covered: dict[int, int] = {}  # index of a name -> letters of it the needles cover
        for needle in needles:
            position = joined.find(needle)
            while position >= 0:
                name = bisect_right(starts, position) - 1
                covered[name] = covered.get(name, 0) + len(needle)
                # Count a needle once per name: go on after the name it was found in.
                position = joined.find(needle, starts[name + 1])
        return {slots[name]: letters / (starts[name + 1] - starts[name] - 1) for name, letters in covered.items()}

    def _names_joined(self) -> tuple[str, tuple[int, ...], tuple[int, ...]]:
        """All compact names in one string, each followed by a space (which no needle has),
        where each name starts (plus where the string ends), and the slot of each name; made
        again after a change."""
        if self._joined_names is None:
            names, starts = [], []
            position = 0
            for name in self._compact_name_at.values():
                names.append(name + " ")
                starts.append(position)
                position += len(name) + 1
            starts.append(position)
            self._joined_names = "".join(names), tuple(starts), tuple(self._compact_name_at)
        return self._joined_names


def _name_forms(tool: IndexedTool, compact_name: str, name_words: list[str]) -> tuple[str, ...]:
    """What an exact-name query is compared with: compact name and key, stemmed name words
    (tokenize(tool.name), from `name_words`)."""
    compact_key = compact_name if tool.key == tool.name else compact(tool.key)
    stems = " ".join(map(stem, name_words))
    forms = dict.fromkeys((compact_name, compact_key, stems))
    forms.pop("", None)
    return tuple(forms)


def _query_name_forms(query: str) -> set[str]:
    return {compact(query), " ".join(tokenize(query))} - {""}


def _discard(index: dict[str, dict[str, None]], key: str, member: str) -> None:
    members = index[key]
    members.pop(member, None)
    if not members:
        del index[key]
