"""JSON with comments (JSONC, as VS Code writes its config files): read it, and set one member of it
while keeping every other character — the user's comments, order, layout and trailing commas.

Comments and trailing commas are blanked (turned into spaces, line breaks kept) rather than cut, so
an offset into the blanked text is the same offset into the user's, and `json`'s error messages
name the user's line and column.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

BLANKS = re.compile(r"[ \t\r\n]*")
_DECODER = json.JSONDecoder()


def blanked(text: str, trailing_commas: bool = True) -> str:
    """`text` with its // and /* */ comments (and, unless told not to, its trailing commas) made spaces.

    One pass, no recursion (a deeply nested file costs nothing here); strings are left as they are,
    escapes included, so a "//" or "/*" inside one is not a comment.
    """
    out = list(text)
    i, end = 0, len(text)
    comma = -1  # the last comma seen with nothing but blanks after it
    while i < end:
        c = text[i]
        if c == '"':
            i += 1
            while i < end and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            comma = -1
        elif text.startswith("//", i):
            stop = _line_end(text, i)
            _blank(out, text, i, stop)
            i = stop - 1
        elif text.startswith("/*", i):
            stop = text.find("*/", i + 2)
            if stop < 0:
                line, column = text.count("\n", 0, i) + 1, i - text.rfind("\n", 0, i)
                raise ValueError(f"a /* comment is never closed: line {line} column {column}")
            _blank(out, text, i, stop + 2)
            i = stop + 1
        elif c == ",":
            comma = i
        elif c in "}]":
            if comma >= 0 and trailing_commas:
                out[comma] = " "
            comma = -1
        elif c not in " \t\r\n":
            comma = -1
        i += 1
    return "".join(out)


def loads(text: str) -> Any:
    """The value of a JSONC text; ValueError (json's, naming line and column) when it is not one."""
    return json.loads(blanked(text))


@dataclass(frozen=True)
class _Member:
    key: str
    key_start: int
    value_start: int
    value_end: int


def with_member(text: str, path: Sequence[str], value: Any) -> str:
    """`text`, a JSONC object, with the member at `path` (keys from the top) set to `value`: objects on
    the way that are missing are added; nothing else in the text changes. ValueError when `text` is not
    JSONC, an object on the way is not one, or the result would not read back as the same data with that
    one member set (the edit checks itself, so a text it misunderstood is never written)."""
    plain = blanked(text)
    if not plain.strip():  # nothing but comments, if anything: they stay above the new object
        return text + ("\n" if text and not text.endswith("\n") else "") + _dumps(_nested(path, value), "") + "\n"
    expected = json.loads(plain)
    _set(expected, path, value)
    start = _skip(plain, 0)
    for depth, key in enumerate(path):
        members = _members(plain, start)
        found = [m for m in members if m.key == key]  # the last of duplicate keys is the one JSON reads
        rest = _nested(path[depth + 1:], value)
        if not found:
            edited = _insert(text, start, members, key, rest)
            break
        member = found[-1]
        if depth == len(path) - 1:
            layout = _indent(text, member.key_start), _newline(text)
            edited = text[:member.value_start] + _dumps(rest, *layout) + text[member.value_end:]
            break
        start = member.value_start
    if loads(edited) != expected:
        raise ValueError("the edited text does not read back as the data it should hold")
    return edited


def _set(data: Any, path: Sequence[str], value: Any) -> None:
    for key in path[:-1]:
        data = data.setdefault(key, {})
        if not isinstance(data, dict):
            raise ValueError(f"{key!r} is not an object")
    data[path[-1]] = value


def _nested(path: Sequence[str], value: Any) -> Any:
    for key in reversed(path):
        value = {key: value}
    return value


def _members(plain: str, start: int) -> list[_Member]:
    """The members of the object whose `{` is at `start` in the blanked text (which json has read whole)."""
    if plain[start:start + 1] != "{":
        raise ValueError("not an object")
    members, i = [], _skip(plain, start + 1)
    while plain[i] != "}":
        key, colon = _DECODER.raw_decode(plain, i)
        value_start = _skip(plain, _skip(plain, colon) + 1)
        _, value_end = _DECODER.raw_decode(plain, value_start)
        members.append(_Member(key, i, value_start, value_end))
        i = _skip(plain, value_end)
        if plain[i] == ",":
            i = _skip(plain, i + 1)
    return members


def _skip(text: str, at: int) -> int:
    """The first position from `at` on that is not a JSON blank."""
    blanks = BLANKS.match(text, at)
    assert blanks is not None  # a pattern of `*` matches everywhere
    return blanks.end()


def _insert(text: str, opening: int, members: list[_Member], key: str, value: Any) -> str:
    """`text` with `"key": value` added as the object's last member, on a line of its own."""
    newline = _newline(text)
    if not members:
        outer = _indent(text, opening)
        inner = outer + ("\t" if "\t" in outer else "  ")
        rest = text[opening + 1:].lstrip(" \t")
        if not rest.startswith(("\n", "\r")):  # the brace closes (or a comment follows) on the same line
            rest = newline + (outer if rest.startswith("}") else inner) + rest
        return text[:opening + 1] + newline + inner + _member(key, value, inner, newline) + rest
    last = members[-1]
    indent = _indent(text, last.key_start)
    comments_only = blanked(text, trailing_commas=False)
    after = _skip(comments_only, last.value_end)
    trailing_comma = comments_only[after] == ","
    # After the last member's line, so a comment that ends that line stays with it.
    cut = after + 1 if trailing_comma else last.value_end
    line_end = _line_end(text, cut)
    if comments_only[cut:line_end].strip():
        line_end = cut  # something else follows on that line (the closing brace): cut right there
    return (text[:last.value_end] + ("" if trailing_comma else ",") + text[last.value_end:line_end] + newline +
            indent + _member(key, value, indent, newline) + ("," if trailing_comma else "") + text[line_end:])


def _member(key: str, value: Any, indent: str, newline: str) -> str:
    return f"{json.dumps(key)}: {_dumps(value, indent, newline)}"


def _dumps(value: Any, indent: str, newline: str = "\n") -> str:
    """`value` as JSON laid out to sit at `indent` (tabs if the file indents with tabs)."""
    return json.dumps(value, indent="\t" if "\t" in indent else 2).replace("\n", newline + indent)


def _newline(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def _indent(text: str, at: int) -> str:
    """The blanks that start the line holding `at`, or nothing when something else comes first on it."""
    start = max(text.rfind("\n", 0, at), text.rfind("\r", 0, at)) + 1
    head = text[start:at]
    return head if not head.strip(" \t") else head[:len(head) - len(head.lstrip(" \t"))]


def _line_end(text: str, at: int) -> int:
    ends = [i for i in (text.find("\n", at), text.find("\r", at)) if i >= 0]
    return min(ends, default=len(text))


def _blank(out: list[str], text: str, start: int, stop: int) -> None:
    for i in range(start, stop):
        if text[i] not in "\r\n":
            out[i] = " "
