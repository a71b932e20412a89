"""Small pieces of the bridge's own wording: text cut to a length, names listed in a sentence. Imports
nothing, so any part of the core may use it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

ELLIPSIS = "…"


def cut_text(text: str, max_chars: int, *, rstrip: bool = False) -> str:
    """`text` when at most `max_chars` long; else its first `max_chars - 1` characters and "…" (`rstrip`:
    without the spaces the cut left before it)."""
    if len(text) <= max_chars:
        return text
    head = text[: max_chars - 1]
    return (head.rstrip() if rstrip else head) + ELLIPSIS


def prose_list(items: Sequence[str], conjunction: Literal["and", "or"]) -> str:
    """`items` as a sentence lists them: "a", "a and b", "a, b and c" (no serial comma)."""
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} {conjunction} {items[-1]}"
