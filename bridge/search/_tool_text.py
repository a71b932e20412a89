"""What tool search reads of a tool: its words, as BM25 counts them, and its texts, as a model embeds them.

`word_counts(heading_words, body(tool))` is the bag of terms the lexical index (bridge.search._bm25)
scores a tool by; `embedding_texts` the two texts the semantic tier (bridge.search._vectors) embeds.
Words and terms come from bridge.search.tokenizer.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import chain
from typing import Any

from bridge.search.tokenizer import piece_terms, word_terms, words

__all__ = ["IndexedTool", "NAME_WEIGHT", "body", "embedding_texts", "is_mapping", "schema_texts", "word_counts"]


@dataclass(frozen=True, slots=True)
class IndexedTool:
    """What the index knows about one tool."""

    key: str  # unique id of the tool in its room (its MCP name)
    name: str  # the name the page gave it
    description: str = ""
    title: str | None = None
    app: str | None = None  # the registering page's title / app name
    input_schema: Mapping[str, Any] | None = None


# A word of the tool's name or title that its description (or app, or parameters) repeats
# says what the tool is about, so it counts this many times; other name words count once,
# so "what" in "what_to_watch" does not pull every "what ..." question to that tool.
NAME_WEIGHT = 5


def is_mapping(value: Any) -> bool:
    # A plain dict is checked first: isinstance against the Mapping ABC runs Python code,
    # and most schema nodes are dicts (or None, as a missing "items" is).
    return type(value) is dict or (value is not None and isinstance(value, Mapping))


def schema_texts(schema: Any) -> list[str]:
    """Property names and descriptions of a JSON Schema object, and of the properties of
    its object-typed properties (arrays of objects included), but no deeper."""
    texts: list[str] = []
    if is_mapping(schema):
        _add_property_texts(schema.get("properties"), texts, nested=True)
    return texts


def _add_property_texts(properties: Any, texts: list[str], nested: bool) -> None:
    if not is_mapping(properties):
        return
    for name, prop in properties.items():
        texts.append(str(name))
        if is_mapping(prop):
            description = prop.get("description")
            if isinstance(description, str):
                texts.append(description)
            _add_enum_texts(prop, texts)
            items = prop.get("items")
            if is_mapping(items):
                _add_enum_texts(items, texts)
            if nested:
                _add_property_texts(prop.get("properties"), texts, nested=False)
                if is_mapping(items):
                    _add_property_texts(items.get("properties"), texts, nested=False)


def _add_enum_texts(schema: Mapping[str, Any], texts: list[str]) -> None:
    """The string values of `schema`'s enum: the word a request names is often one of them
    ("celsius", "EUR", "pdf") and in no description."""
    values = schema.get("enum")
    if type(values) is list:
        texts.extend(value for value in values if isinstance(value, str))


def body(tool: IndexedTool) -> str:
    """A tool's text besides its name and title."""
    return " ".join([tool.app or "", tool.description or "", *schema_texts(tool.input_schema)])


def word_counts(heading_words: list[str], body: str) -> Counter[str]:
    """A tool's word terms, counted: the bag BM25 scores it by. `heading_words`: the words
    of its name and title."""
    counts = Counter(chain.from_iterable(map(piece_terms, body.split())))
    name_terms = list(map(word_terms, heading_words))
    weights = [1 if counts.keys().isdisjoint(found) else NAME_WEIGHT for found in name_terms]
    for found, weight in zip(name_terms, weights):
        for term in found:
            counts[term] += weight
    return counts


def embedding_texts(tool: IndexedTool, name_words: list[str]) -> tuple[str, str]:
    """What the model reads of a tool, as two texts (see bridge.search._vectors.NAME_SHARE): its name as
    words and its title; and its description, app and the names of its parameters (the name
    again when it has none of these)."""
    name = ". ".join(part.strip() for part in (" ".join(name_words), tool.title or "") if part.strip())
    parts = [tool.description]
    if tool.app:
        parts.append(f"({tool.app})")
    schema = tool.input_schema
    properties = schema.get("properties") if schema is not None and is_mapping(schema) else None
    if properties is not None and is_mapping(properties):
        parameters = [" ".join(words(str(name))) for name in properties]
        if parameters:
            parts.append("Parameters: " + ", ".join(parameters) + ".")
    about = " ".join(part.strip() for part in parts if part.strip())
    return name or about, about or name
