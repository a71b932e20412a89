"""Values crossing the sandbox's edge: a page's answer into the program, the program's arguments out to a tool,
the program's value out to the agent (as JSON, cut past its limit with a note)."""

from __future__ import annotations

import datetime
import decimal
import json
import math
from typing import Any

from pydantic_monty import MontyClassProxy

MAX_DEPTH = 100  # a value nested deeper cannot be returned (a program can nest lists without bound)
MAX_INT_BITS = 10_000  # a larger int is shown as its size (CPython refuses to print ints past 4300 digits)


class ValueTooDeep(ValueError):
    def __init__(self) -> None:
        super().__init__(f"the value nests deeper than {MAX_DEPTH} levels")


class NotJSON(TypeError):
    pass


def settled(value: Any) -> dict[str, Any]:
    return {"return_value": value}


def raised(message: str, exc_type: str = "RuntimeError") -> dict[str, Any]:
    return {"exc_type": exc_type, "message": message}


def from_page(answer: Any) -> dict[str, Any]:
    """A page's answer as the program sees it: the JSON value it returned; for an MCP-shaped answer its
    `structuredContent`, else the text of its text blocks; an error answer raises in the program."""
    answer = _whole_characters(answer)
    if not (isinstance(answer, dict) and isinstance(answer.get("content"), list)):
        return settled(answer)
    blocks = answer["content"]
    texts = [block["text"] for block in blocks
             if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)]
    if answer.get("isError") is True:
        return raised("\n".join(texts) or "The tool reported an error.")
    if "structuredContent" in answer:
        return settled(answer["structuredContent"])
    return settled("\n".join(texts) if texts or not blocks else blocks)


def _whole_characters(value: Any, depth: int = 0) -> Any:
    """The value with each lone surrogate replaced by U+FFFD: JSON can carry one (a page's text cut inside an
    emoji), the sandbox's strings cannot."""
    if isinstance(value, str):
        if value.isascii():
            return value
        try:
            value.encode()
            return value
        except UnicodeEncodeError:
            return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if depth > MAX_DEPTH:
        return value
    if isinstance(value, list):
        return [_whole_characters(item, depth + 1) for item in value]
    if isinstance(value, dict):
        return {_whole_characters(key, depth + 1): _whole_characters(item, depth + 1) for key, item in value.items()}
    return value


def to_json(value: Any, depth: int = 0) -> Any:
    """The program's value as JSON-able data: tuples and sets become lists, bytes and dates text, a dataclass
    instance its attributes, anything else its repr."""
    if depth > MAX_DEPTH:
        raise ValueTooDeep()
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value if value.bit_length() <= MAX_INT_BITS else f"<an integer of {value.bit_length()} bits>"
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, (list, tuple)):
        return [to_json(item, depth + 1) for item in value]
    if isinstance(value, (set, frozenset)):
        items = [to_json(item, depth + 1) for item in value]
        try:
            return sorted(items)
        except TypeError:
            return items
    if isinstance(value, dict):
        return {_key(key): to_json(item, depth + 1) for key, item in value.items()}
    if isinstance(value, bytes):
        return value.decode("utf-8", "backslashreplace")
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, MontyClassProxy):
        return to_json(value.attributes, depth + 1)
    return repr(value)


def _key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, (bool, int, float)):
        return json.dumps(key)  # as json.dumps writes such keys
    return repr(key)


def arguments(value: Any, where: str, depth: int = 0) -> Any:
    """A tool's arguments from the program as JSON: tuples become lists; what JSON cannot say raises `NotJSON`
    naming where it is (`order_id`, `items[2]`), for the program to read as a TypeError."""
    if depth > MAX_DEPTH:
        raise NotJSON(f"{where} nests deeper than {MAX_DEPTH} levels")
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise NotJSON(f"{where} is {value!r}, which JSON cannot carry")
        return value
    if isinstance(value, (list, tuple)):
        return [arguments(item, f"{where}[{index}]", depth + 1) for index, item in enumerate(value)]
    if isinstance(value, dict):
        for key in value:
            if not isinstance(key, str):
                raise NotJSON(f"{where} has the key {key!r}: JSON object keys are strings")
        return {key: arguments(item, f"{where}[{key!r}]", depth + 1) for key, item in value.items()}
    raise NotJSON(f"{where} is a {type(value).__name__}: tools take JSON values (str, int, float, bool, None, "
                  "lists and dicts)")


def returned(value: Any, max_chars: int) -> tuple[Any, str, int, bool]:
    """The program's value for the agent: (JSON-able value, its JSON text, the text's whole length, cut?). Past
    `max_chars` the text is cut with a note, and the value is that text."""
    data = to_json(value)
    text = json.dumps(data, ensure_ascii=False)
    if len(text) <= max_chars:
        return data, text, len(text), False
    cut = (f"{text[:max_chars]}… [cut: the value's JSON is {len(text):,} characters, over the {max_chars:,} "
           "returned. Return less: aggregate, filter or slice inside the program.]")
    return cut, cut, len(text), True
