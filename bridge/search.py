"""Tool search for one room: rank_bm25's BM25Okapi over what pages say about their tools.

Updated in place, never rebuilt: add() and remove() adjust postings, document lengths and
document frequencies, idf is read from those counts, and a query asks get_batch_scores only
for the tools holding each of its terms, cached until the next change. The best word
matches are then reordered by the letter trigrams of their stems (see RERANK_DEPTH), which
costs nothing at add time. Measured at 10,000 tools (bench/search_latency.py): one add or
remove ~0.03 ms, a page's 1,000 tools ~35-40 ms plus ~2 ms for the first search, a query
~0.5-0.8 ms (p50; ~3 ms right after a change); a rebuild, debounced or not, ~220 ms.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain
from typing import Any

import numpy as np
from rank_bm25 import BM25Okapi

__all__ = ["IndexedTool", "SearchHit", "ToolIndex"]


@dataclass(frozen=True, slots=True)
class IndexedTool:
    """What the index knows about one tool."""

    key: str  # unique id of the tool in its room (its MCP name)
    name: str  # the name the page gave it
    description: str = ""
    title: str | None = None
    app: str | None = None  # the registering page's title / app name
    input_schema: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class SearchHit:
    key: str
    score: float


# --- words and terms ---------------------------------------------------------------------

# A word: an optionally capitalised run of lower-case letters and digits, or a capital run
# that leaves the capital of the next word alone ("HTTPServer" -> HTTP, Server). Anything
# else separates words: "_ - . :" and spaces alike. Digits stay with the letters before them
# so "s3", "v2", "base64" survive. Letters outside ASCII count (upper-case: Latin-1 only).
_UPPER = "A-ZÀ-ÖØ-Þ"
_WORD = re.compile(rf"[{_UPPER}]?[^\W_{_UPPER}]+|[{_UPPER}0-9]+(?![^\W\d_{_UPPER}])")
_LETTERS_AND_DIGITS = re.compile(r"[^\W_]+")
_MIN_STEM = 3
_VOWEL = re.compile(r"[aeiouy]")
# Besides its stem, each word of four letters or more is indexed by its first four letters,
# marked "*": "financial" and "finance" meet at "fina*", which no suffix rule joins.
_TRUNCATE = 4


def split_words(text: str) -> list[str]:
    """Lower-case words of `text`, split on anything but letters/digits and on camelCase."""
    return [word.lower() for word in _WORD.findall(text)]


@lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """Fold plural and verb endings so "files", "filed", "filing" and "file" meet.

    Rules, each kept only if at least three letters remain: -ies/-ied -> -y; a final -s
    (not -ss, -us, -is); then -ing/-ed if a vowel remains ("string" stays), undoubling
    "runn" -> "run" except l, s, z; then a final -e (not -ee), which makes "creates",
    "created", "creating" and "create" all "creat".
    """
    if len(word) <= _MIN_STEM or not word.isalpha():
        return word
    if word.endswith(("ies", "ied")) and len(word) > _MIN_STEM + 2:
        return word[:-3] + "y"
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if word.endswith(("ing", "ed")) and not word.endswith("eed"):
        base = word[:-3] if word.endswith("ing") else word[:-2]
        if len(base) >= _MIN_STEM and _VOWEL.search(base):
            if len(base) > _MIN_STEM and base[-1] == base[-2] and base[-1] not in "aeiouylsz":
                base = base[:-1]
            word = base
    if word.endswith("e") and not word.endswith("ee") and len(word) > _MIN_STEM:
        word = word[:-1]
    return word


def tokenize(text: str) -> list[str]:
    """The words of `text` as the index sees them: split, lower-case, stemmed, one-letter
    words dropped."""
    return [stem(word) for word in split_words(text) if len(word) > 1]


@lru_cache(maxsize=1 << 16)
def _word_terms(word: str) -> tuple[str, ...]:
    if len(word) < _TRUNCATE:
        return (stem(word),)
    return (stem(word), word[:_TRUNCATE] + "*")


def _compact(text: str) -> str:
    """"user_confirm", "userConfirm" and "User Confirm" all become "userconfirm"."""
    return "".join(_LETTERS_AND_DIGITS.findall(text)).lower()


@lru_cache(maxsize=1 << 16)
def _letter_trigrams(term: str) -> tuple[str, ...]:
    """The letter trigrams of a stem padded with a space each side: "creat" -> " cr", "cre",
    "rea", "eat", "at "; none for a truncation ("crea*"), which its stem already covers."""
    if term.endswith("*"):
        return ()
    padded = f" {term} "
    return tuple(padded[start:start + 3] for start in range(len(term)))


# Text is cut at white space first, which str.split does ~7 times faster than _WORD finds
# words (no word spans white space, so the words are the same), and what the index makes
# of each piece as written ("Exports", "spreadsheet.", "getWeather") is looked up: the same
# few thousand pieces make up most catalogs and most queries.
_PIECES_REMEMBERED = 1 << 16


class _PerPiece(dict[str, tuple[str, ...]]):
    """piece of text -> `derive(its words, split, lower-cased, one-letter words left out)`,
    computed on first lookup (`memo[piece]`); all forgotten once _PIECES_REMEMBERED are held."""

    def __init__(self, derive: Callable[[list[str]], tuple[str, ...]]) -> None:
        super().__init__()
        self._derive = derive

    def __missing__(self, piece: str) -> tuple[str, ...]:
        if len(self) >= _PIECES_REMEMBERED:
            self.clear()
        found = self[piece] = self._derive([word for word in split_words(piece) if len(word) > 1])
        return found


_WORDS_IN = _PerPiece(tuple)
_TERMS_IN = _PerPiece(lambda words: tuple(chain.from_iterable(map(_word_terms, words))))


def _words(text: str) -> list[str]:
    """The words of `text`, lower-cased, one-letter words dropped: split_words, memoised."""
    return list(chain.from_iterable(map(_WORDS_IN.__getitem__, text.split())))


def terms(text: str) -> list[str]:
    """The BM25 terms of `text`: each word's stem, then its truncation if it has one."""
    return list(chain.from_iterable(map(_TERMS_IN.__getitem__, text.split())))


# --- documents -----------------------------------------------------------------------------

# A word of the tool's name or title that its description (or app, or parameters) repeats
# says what the tool is about, so it counts this many times; other name words count once,
# so "what" in "what_to_watch" does not pull every "what ..." question to that tool.
NAME_WEIGHT = 5


def _is_mapping(value: Any) -> bool:
    # A plain dict is checked first: isinstance against the Mapping ABC runs Python code,
    # and most schema nodes are dicts (or None, as a missing "items" is).
    return type(value) is dict or (value is not None and isinstance(value, Mapping))


def _schema_texts(schema: Any) -> list[str]:
    """Property names and descriptions of a JSON Schema object, and of the properties of
    its object-typed properties (arrays of objects included), but no deeper."""
    texts: list[str] = []
    if _is_mapping(schema):
        _add_property_texts(schema.get("properties"), texts, nested=True)
    return texts


def _add_property_texts(properties: Any, texts: list[str], nested: bool) -> None:
    if not _is_mapping(properties):
        return
    for name, prop in properties.items():
        texts.append(str(name))
        if _is_mapping(prop):
            description = prop.get("description")
            if isinstance(description, str):
                texts.append(description)
            if nested:
                _add_property_texts(prop.get("properties"), texts, nested=False)
                items = prop.get("items")
                if _is_mapping(items):
                    _add_property_texts(items.get("properties"), texts, nested=False)


def _body(tool: IndexedTool) -> str:
    """A tool's text besides its name and title."""
    return " ".join([tool.app or "", tool.description or "", *_schema_texts(tool.input_schema)])


def _word_counts(heading_words: list[str], body: str) -> Counter[str]:
    """A tool's word terms, counted: the bag BM25 scores it by. `heading_words`: the words
    of its name and title."""
    counts = Counter(chain.from_iterable(map(_TERMS_IN.__getitem__, body.split())))
    name_terms = list(map(_word_terms, heading_words))
    weights = [1 if counts.keys().isdisjoint(found) else NAME_WEIGHT for found in name_terms]
    for found, weight in zip(name_terms, weights):
        for term in found:
            counts[term] += weight
    return counts


# --- scoring -------------------------------------------------------------------------------

# Tool documents are short and a repeated word means something: tf saturates late (k1) and
# length matters little (b). Chosen on the dev half of MetaTool, checked on the test half.
K1 = 5.0
B = 0.3


class _SquaredIdf(Mapping[str, float]):
    """idf(t)² with idf(t) = ln((N + 0.5) / (df(t) + 0.5)), read live from the postings.

    Positive for a term some tools lack, exactly zero for a term every tool has (so such a
    term cannot rank anything: search() falls back to names), never negative -- BM25Okapi's
    own idf gives nothing above zero in a two-tool room and less than zero in a one-tool
    room. Squared because a long request is mostly common words and the rare ones should
    decide (measured: +1.8 points R@5 on MetaTool).
    """

    def __init__(self, bm25: _LiveBM25) -> None:
        self._bm25 = bm25

    def __getitem__(self, term: str) -> float:
        df = len(self._bm25.postings.get(term, ()))
        return math.log((self._bm25.corpus_size + 0.5) / (df + 0.5)) ** 2

    def __iter__(self) -> Iterator[str]:
        return iter(self._bm25.postings)

    def __len__(self) -> int:
        return len(self._bm25.postings)


class _LiveBM25(BM25Okapi):
    """rank_bm25's BM25Okapi scoring over a corpus that changes in place.

    BM25Okapi.__init__ computes its statistics once over a fixed corpus (and divides by zero
    on an empty one), so it is not called: put() and clear() keep the attributes that
    BM25Okapi.get_batch_scores reads (doc_freqs, doc_len, avgdl, idf, k1, b) current, and
    the postings, whose sizes are the document frequencies idf reads.
    Documents live in slots; a cleared slot holds an empty document until it is reused.
    """

    def __init__(self) -> None:  # BM25Okapi.__init__ deliberately not called, see above
        self.k1 = K1
        self.b = B
        self.doc_freqs: list[Counter[str]] = []
        self.doc_len = np.zeros(64)  # grown by doubling; only the first len(doc_freqs) count
        self.corpus_size = 0
        self.avgdl = 0.0
        self.postings: dict[str, set[int]] = {}  # term -> slots of the documents that have it
        self.idf = _SquaredIdf(self)
        self._total_len = 0

    def put(self, slot: int, counts: Counter[str]) -> list[str]:
        """Store a document, as its term counts, in the free `slot` (at most one past the
        last); the terms no other document has."""
        if slot == len(self.doc_freqs):
            self.doc_freqs.append(counts)
            if slot == len(self.doc_len):
                self.doc_len = np.concatenate([self.doc_len, np.zeros(len(self.doc_len))])
        else:
            self.doc_freqs[slot] = counts
        postings, new = self.postings, []
        for term in counts:
            if term in postings:
                postings[term].add(slot)
            else:
                postings[term] = {slot}
                new.append(term)
        length = sum(counts.values())
        self.doc_len[slot] = length
        self._adjust_totals(+1, length)
        return new

    def clear(self, slot: int) -> list[str]:
        """Empty `slot`; the terms no document has any more."""
        counts, self.doc_freqs[slot] = self.doc_freqs[slot], Counter()
        postings, gone = self.postings, []
        for term in counts:
            slots = postings[term]
            slots.discard(slot)
            if not slots:
                del postings[term]
                gone.append(term)
        self._adjust_totals(-1, -int(self.doc_len[slot]))
        self.doc_len[slot] = 0
        return gone

    def _adjust_totals(self, documents: int, length: int) -> None:
        self.corpus_size += documents
        self._total_len += length
        self.avgdl = self._total_len / self.corpus_size if self.corpus_size else 0.0


# A second opinion on the best word matches: the same Okapi formula (K1, B, idf not squared)
# over the letter trigrams of the tools' stems, which say how much of a word two stems
# share where stems and 4-letter truncations only say same or not ("weathermen" is nearer
# "weatherman" than "weather"; "crypto" is inside "cryptocurrency"). The best RERANK_DEPTH
# word matches are re-scored as (both chosen on the dev half of MetaTool)
#     word score / best word score + TRIGRAM_WEIGHT x trigram score / best trigram score.
# Nothing is counted per tool at add time (counting each tool's ~100 distinct trigrams cost
# ~20 ms per 1,000 tools): a tool's trigrams are read off its stems when a query first
# reranks it, its length is its word length, and a trigram's document frequency is the sum
# of the postings of the stems holding it, at most N (a tool with two such stems counts
# twice). On MetaTool's dev half that gives up 0.2-0.3 points R@5 of the +0.8-0.9 exact
# counts over the words' own trigrams gave (bench/README.md). Reranking 20 instead of 10
# gains R@10, not R@5, and doubles the cost.
RERANK_DEPTH = 10
TRIGRAM_WEIGHT = 0.4
# Tools' counted trigrams kept for reranking, least recently used dropped first: ~5 KB each.
_TRIGRAM_BAGS_KEPT = 2048


# --- the index -----------------------------------------------------------------------------

# AutoCut: the list stops at the first hit scoring less than AUTOCUT_RATIO of the hit before
# it. At the one half it cost 2 points of R@5 on MetaTool, where the right tool often
# follows a drop; at a quarter it costs 0.1 point of R@10 and still trims (bench/README.md).
AUTOCUT_RATIO = 0.25
# The per-term cache is emptied when it holds more (slot, score) pairs than this: ~16 MB.
_CONTRIBUTIONS_KEPT = 1_000_000


class ToolIndex:
    """Search over the tools of one room. Not thread-safe: use it from one event loop."""

    def __init__(self, tools: Iterable[IndexedTool] = ()) -> None:
        self._bm25 = _LiveBM25()
        # Term -> (slots, BM25 contribution) as get_batch_scores computed it for the catalog
        # as it is; any change empties it, since N and avgdl move every score.
        self._contributions: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._contributions_held = 0  # (slot, score) pairs in it
        self._slot_of: dict[str, int] = {}
        self._key_at: list[str | None] = []
        self._free_slots: list[int] = []
        # Exact-name lookup: compact name or key, and stemmed name words -> slots.
        self._by_name: dict[str, set[int]] = {}
        self._name_forms_at: list[tuple[str, ...]] = []
        # The substring fallback searches all compact names at once, joined into one string
        # that is rebuilt on the first fallback after a change.
        self._compact_name_at: list[str] = []
        self._joined_names: tuple[str, list[int], list[int]] | None = None
        # Trigram rerank: trigram -> stems holding it (changes only with the vocabulary),
        # trigram document frequencies computed since the last change, and the counted
        # trigrams of recently reranked tools by slot.
        self._stems_with: dict[str, set[str]] = {}
        self._trigram_df: dict[str, int] = {}
        self._trigram_bags: dict[int, Counter[str]] = {}
        self.add(tools)

    def __len__(self) -> int:
        return len(self._slot_of)

    def __contains__(self, key: object) -> bool:
        return key in self._slot_of

    def add(self, tools: Iterable[IndexedTool]) -> None:
        """Index `tools`; a key already present is replaced."""
        self._changed()
        by_name = self._by_name
        for tool in tools:
            if tool.key in self._slot_of:
                self.remove((tool.key,))
            slot = self._free_slots.pop() if self._free_slots else len(self._key_at)
            if slot == len(self._key_at):
                self._key_at.append(None)
                self._name_forms_at.append(())
                self._compact_name_at.append("")
            self._key_at[slot] = tool.key
            self._slot_of[tool.key] = slot
            name_words = _words(tool.name)
            heading_words = name_words + _words(tool.title) if tool.title else name_words
            for term in self._bm25.put(slot, _word_counts(heading_words, _body(tool))):
                for trigram in _letter_trigrams(term):  # a stem new to the room: rare once warm
                    self._stems_with.setdefault(trigram, set()).add(term)
            self._compact_name_at[slot] = compact_name = _compact(tool.name)
            self._name_forms_at[slot] = forms = _name_forms(tool, compact_name, name_words)
            for form in forms:
                if form in by_name:
                    by_name[form].add(slot)
                else:
                    by_name[form] = {slot}

    def remove(self, keys: Iterable[str]) -> None:
        """Drop the tools with these keys; unknown keys are ignored."""
        self._changed()
        for key in keys:
            slot = self._slot_of.pop(key, None)
            if slot is None:
                continue
            for term in self._bm25.clear(slot):
                for trigram in set(_letter_trigrams(term)):  # "10000" has "000" twice
                    _discard(self._stems_with, trigram, term)
            self._trigram_bags.pop(slot, None)
            for form in self._name_forms_at[slot]:
                _discard(self._by_name, form, slot)
            self._name_forms_at[slot] = ()
            self._compact_name_at[slot] = ""
            self._key_at[slot] = None
            self._free_slots.append(slot)

    def _changed(self) -> None:
        """Forget what was computed for the catalog as it was (search runs between calls)."""
        self._contributions.clear()
        self._contributions_held = 0
        self._joined_names = None
        self._trigram_df.clear()

    def search(self, query: str, limit: int = 5) -> list[SearchHit]:
        """The best `limit` tools for `query`, best first; [] when nothing matches."""
        if limit <= 0 or not self._slot_of:
            return []
        query_terms = terms(query)
        totals = self._bm25_totals(query_terms)
        named = self._name_matches(query)
        scores = self._best(totals, max(limit, RERANK_DEPTH))
        if scores:
            for slot in named:
                scores.setdefault(slot, float(totals[slot]))
            # AutoCut judges the word scores, before the trigrams (which give every
            # candidate some score) reorder what it kept.
            best_first = sorted(scores.items(), key=lambda item: -item[1])
            kept = best_first[:self._cut([score for _, score in best_first])]
            scores = self._rerank(query_terms, dict(kept))
        else:
            scores = self._name_substring_scores(query)
        if named:
            # An exact name match goes first whatever the scores say (on a tie as well).
            lead = max(scores.values(), default=0.0) or 1.0
            for slot in named:
                scores[slot] = scores.get(slot, 0.0) + lead
        ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0] not in named, self._key_at[item[0]]))
        ranked = ranked[:limit]
        ranked = ranked[:self._cut([score for _, score in ranked])]
        return [SearchHit(self._key_at[slot], score) for slot, score in ranked]

    @staticmethod
    def _cut(scores: list[float]) -> int:
        """AutoCut: how many of `scores` (best first) come before the first steep fall."""
        for index in range(1, len(scores)):
            if scores[index] < AUTOCUT_RATIO * scores[index - 1]:
                return index
        return len(scores)

    def _bm25_totals(self, query_terms: list[str]) -> np.ndarray:
        """BM25 score of every slot (zero for the tools no term matches, and free slots)."""
        totals = np.zeros(len(self._key_at))
        for term, count in Counter(query_terms).items():
            if term in self._bm25.postings:
                slots, contribution = self._contribution(term)
                totals[slots] += count * contribution
        return totals

    def _contribution(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """What `term` adds to the BM25 score of each tool that has it. Scored over those
        tools only, not every candidate: get_batch_scores costs a dict lookup per (term,
        tool) it is given, and the catalog changes far less often than it is searched."""
        found = self._contributions.get(term)
        if found is None:
            slots = np.fromiter(self._bm25.postings[term], dtype=np.intp)
            found = slots, np.asarray(self._bm25.get_batch_scores([term], slots.tolist()))
            if self._contributions_held + len(slots) > _CONTRIBUTIONS_KEPT:
                self._contributions.clear()
                self._contributions_held = 0
            self._contributions[term] = found
            self._contributions_held += len(slots)
        return found

    @staticmethod
    def _best(totals: np.ndarray, limit: int) -> dict[int, float]:
        """slot -> score of the `limit` best positive scores, and of all tied with the last
        (so which of them is returned depends on keys, not on slots)."""
        positive = np.flatnonzero(totals > 0)
        if len(positive) > limit:
            floor = np.partition(totals[positive], len(positive) - limit)[len(positive) - limit]
            positive = positive[totals[positive] >= floor]
        return dict(zip(positive.tolist(), totals[positive].tolist()))

    def _rerank(self, query_terms: list[str], word_scores: dict[int, float]) -> dict[int, float]:
        """The word matches re-scored with their letter trigrams (see RERANK_DEPTH)."""
        trigram_scores = self._trigram_scores(query_terms, word_scores)
        best_words = max(word_scores.values())
        best_trigrams = max(trigram_scores.values()) or 1.0
        return {slot: score / best_words + TRIGRAM_WEIGHT * trigram_scores[slot] / best_trigrams
                for slot, score in word_scores.items()}

    def _trigram_scores(self, query_terms: list[str], slots: Iterable[int]) -> dict[int, float]:
        """Okapi BM25 of the letter trigrams of the query's stems, for each of `slots`."""
        tools, postings = len(self._slot_of), self._bm25.postings
        weights = {}  # trigram -> its count in the query x its idf, for those some tool has
        for trigram, count in Counter(chain.from_iterable(map(_letter_trigrams, query_terms))).items():
            df = self._trigram_df.get(trigram)
            if df is None:
                held_by = self._stems_with.get(trigram, ())
                df = self._trigram_df[trigram] = min(tools, sum(map(len, map(postings.__getitem__, held_by))))
            if df:
                weights[trigram] = count * math.log((tools + 0.5) / (df + 0.5))
        scores = {}
        for slot in slots:
            bag = self._trigram_bag(slot)
            saturation = K1 * (1 - B + B * float(self._bm25.doc_len[slot]) / self._bm25.avgdl)
            scores[slot] = sum(weights[trigram] * bag[trigram] * (K1 + 1) / (bag[trigram] + saturation)
                               for trigram in bag.keys() & weights.keys())
        return scores

    def _trigram_bag(self, slot: int) -> Counter[str]:
        """The counted trigrams of the stems of the tool in `slot` (kept for the next query)."""
        bags = self._trigram_bags
        bag = bags.pop(slot, None)
        if bag is None:
            # Each stem counted as for BM25 (name words weighted): once for every stem in one
            # pass, then the rest for the few that repeat, instead of expanding every count.
            counts = self._bm25.doc_freqs[slot]
            bag = Counter(chain.from_iterable(map(_letter_trigrams, counts)))
            for term, count in counts.items():
                if count > 1:
                    for trigram in _letter_trigrams(term):
                        bag[trigram] += count - 1
            if len(bags) >= _TRIGRAM_BAGS_KEPT:
                del bags[next(iter(bags))]  # the least recently used: dicts keep insertion order
        bags[slot] = bag  # (re)inserted last: the most recently used
        return bag

    def _name_matches(self, query: str) -> set[int]:
        found: set[int] = set()
        for form in _query_name_forms(query):
            found |= self._by_name.get(form, set())
        return found

    def _name_substring_scores(self, query: str) -> dict[int, float]:
        """Fallback when no word term scores: tools whose name contains a word of the
        query, scored by the share of the name those words cover ("calc" -> calculator)."""
        needles = {word.lower() for word in _LETTERS_AND_DIGITS.findall(query) if len(word) >= _MIN_STEM}
        if not needles:
            return {}
        if self._joined_names is None:
            self._joined_names = self._join_names()
        joined, starts, slots = self._joined_names
        covered: dict[int, int] = {}  # index of a name -> letters of it the needles cover
        for needle in needles:
            position = joined.find(needle)
            while position >= 0:
                name = bisect_right(starts, position) - 1
                covered[name] = covered.get(name, 0) + len(needle)
                # Count a needle once per name: go on after the name it was found in.
                position = joined.find(needle, starts[name + 1])
        return {slots[name]: letters / (starts[name + 1] - starts[name] - 1) for name, letters in covered.items()}

    def _join_names(self) -> tuple[str, list[int], list[int]]:
        """All compact names in one string, each followed by a space (which no needle has),
        where each name starts (plus where the string ends), and the slot of each name."""
        names, starts, slots = [], [], []
        position = 0
        for slot, key in enumerate(self._key_at):
            if key is None:
                continue
            name = self._compact_name_at[slot]
            names.append(name + " ")
            starts.append(position)
            slots.append(slot)
            position += len(name) + 1
        starts.append(position)
        return "".join(names), starts, slots


def _name_forms(tool: IndexedTool, compact_name: str, name_words: list[str]) -> tuple[str, ...]:
    """What an exact-name query is compared with: compact name and key, stemmed name words
    (tokenize(tool.name), from `name_words`)."""
    compact_key = compact_name if tool.key == tool.name else _compact(tool.key)
    stems = " ".join(map(stem, name_words))
    forms = dict.fromkeys((compact_name, compact_key, stems))
    forms.pop("", None)
    return tuple(forms)


def _query_name_forms(query: str) -> set[str]:
    return {_compact(query), " ".join(tokenize(query))} - {""}


def _discard(index: dict[str, set[Any]], key: str, member: Any) -> None:
    members = index[key]
    members.discard(member)
    if not members:
        del index[key]
