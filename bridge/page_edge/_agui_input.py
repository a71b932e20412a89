"""A run's `RunAgentInput`, read from its JSON body a slice of the event loop's time at a time.

A run carries the app's history and its tools, in a body of up to 16 x --max-message-bytes: a
quarter of a million messages fit. Decoded (json) and validated (the ag-ui-protocol models) in one
call, such a body held the loop for most of a second, and every page, agent and run waited. A
thread would not help: the json decoder and pydantic-core keep the interpreter for the whole call,
so the loop would wait for it all the same. So the body is read on the loop, in slices of about
`SLICE_SECONDS` with the loop's other work between them:

- the top-level object is taken member by member, and each member that is a list or an object
  item by item; the items of the input's lists (`messages`, `tools`, `context`, `resume`) are
  validated as they come, the rest of the input at the end;
- messages and tools are counted as they come: past their limit the body is refused before the
  rest of it is read.

One item (a message, a tool, an entry of `state`) is decoded in one go; the body limit bounds it.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import typing
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ag_ui.core import RunAgentInput
from pydantic import TypeAdapter, ValidationError

SLICE_SECONDS = 0.005  # of decoding and validating, between two turns of the loop's other work
_SPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


def _item_type(field: str) -> TypeAdapter[Any]:
    """The type of one item of the list field `field` of RunAgentInput (`List[X]` or `Optional[List[X]]`)."""
    annotation = RunAgentInput.model_fields[field].annotation
    if typing.get_origin(annotation) is typing.Union:
        (annotation,) = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
    assert typing.get_origin(annotation) is list, annotation
    return TypeAdapter(typing.get_args(annotation)[0])


LISTS = {name: _item_type(name) for name in ("messages", "tools", "context", "resume")}  # same name in JSON


@dataclass(frozen=True)
class Limit:
    """The most items a run's list may hold, and the setting that says so."""

    most: int
    setting: str  # a Settings field, e.g. "max_run_messages"
    why: str  # what to do about it, for the refusal's message


class Unreadable(Exception):
    """A body the endpoint refuses: `status`, `code`, the message, and more fields for the JSON answer."""

    def __init__(self, status: int, code: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status, self.code, self.extra = status, code, extra


async def read_run_input(body: bytes | bytearray, limits: dict[str, Limit]) -> RunAgentInput:
    """The body as a RunAgentInput; `limits` by list name. Raises Unreadable. A bytearray is read as it
    is (json.detect_encoding and decode take one): a body as large as the limit is not copied."""
    try:
        text = body.decode(json.detect_encoding(body), "surrogatepass")
    except UnicodeDecodeError as exc:
        raise Unreadable(400, "bad_json", f"The body is not JSON: {exc}") from None
    return await _Reader(text, limits).read()


class _Reader:
    def __init__(self, text: str, limits: dict[str, Limit]) -> None:
        self.text, self.limits = text, limits
        self.validated: dict[str, list[Any]] = {}  # the input's lists, each item validated as it came
        self.invalid: dict[str, list[tuple[tuple[str | int, ...], str]]] = {}  # by list: (where, what) of its errors
        self._slice_ends = time.perf_counter() + SLICE_SECONDS

    async def read(self) -> RunAgentInput:
        try:
            value, end = await self._body(self._space(0))
            if self._space(end) != len(self.text):
                raise json.JSONDecodeError("Extra data", self.text, self._space(end))
        except json.JSONDecodeError as exc:
            raise Unreadable(400, "bad_json", f"The body is not JSON: {exc}") from None
        except RecursionError:
            raise Unreadable(400, "bad_json", "The body is not JSON: it nests too deeply.") from None
        errors = [error for name in self.validated for error in self.invalid[name]]
        try:  # the rest of the input: the lists read are put in as they are
            run_input = RunAgentInput.model_validate(
                value | dict.fromkeys(self.validated, []) if isinstance(value, dict) else value)
        except ValidationError as exc:
            errors[:0] = [(tuple(e["loc"]), e["msg"]) for e in exc.errors()]
        if errors:
            fields = [{"field": ".".join(map(str, loc)) or "(body)", "message": message} for loc, message in errors]
            summary = "; ".join(f"{f['field']}: {f['message']}" for f in fields)
            raise Unreadable(422, "invalid_input", f"Invalid RunAgentInput: {summary}", errors=fields)
        return run_input.model_copy(update=self.validated)

    # --- decoding, a slice at a time -------------------------------------------------------

    async def _body(self, start: int) -> tuple[Any, int]:
        """The body's value: an object (anything else is refused by validation), read member by member."""
        if self.text.startswith("{", start):
            return await self._members(start + 1, self._member)
        return await self._part(start)

    async def _member(self, name: str, start: int) -> tuple[Any, int]:
        """A member of the body's object; each of the input's lists checked as it is read."""
        self.validated.pop(name, None)  # a later member of the same name replaces the earlier
        if name in LISTS and self.text.startswith("[", start):
            items: list[Any] = []
            invalid: list[tuple[tuple[str | int, ...], str]] = []
            self.validated[name], self.invalid[name] = items, invalid
            return await self._items(start + 1, items, lambda item: self._checked(name, item, items, invalid))
        return await self._part(start)

    async def _part(self, start: int) -> tuple[Any, int]:
        """A value read item by item when it is a list or an object; each item in one go."""
        if self.text.startswith("[", start):
            return await self._items(start + 1, [], lambda item: item)
        if self.text.startswith("{", start):
            return await self._members(start + 1, self._decoded)
        return await self._decoded("", start)

    async def _decoded(self, name: str, start: int) -> tuple[Any, int]:
        value, end = _DECODER.raw_decode(self.text, start)
        await self._pause()
        return value, end

    async def _members(self, start: int, read: Callable[[str, int], Awaitable[tuple[Any, int]]]
                       ) -> tuple[dict[str, Any], int]:
        """An object's members, from after its `{`; each value read by `read(name, where)`."""
        text, members = self.text, dict[str, Any]()
        i = self._space(start)
        if text.startswith("}", i):
            return members, i + 1
        while True:
            if not text.startswith('"', i):
                raise json.JSONDecodeError("Expecting property name enclosed in double quotes", text, i)
            name, i = _DECODER.raw_decode(text, i)  # a string: it starts with '"'
            i = self._space(i)
            if not text.startswith(":", i):
                raise json.JSONDecodeError("Expecting ':' delimiter", text, i)
            members[name], i = await read(name, self._space(i + 1))
            i, ended = self._after_item(i, "}")
            if ended:
                return members, i

    async def _items(self, start: int, items: list[Any], take: Callable[[Any], Any]) -> tuple[list[Any], int]:
        """A list's items, from after its `[`, each decoded in one go and given to `take`, which appends it."""
        text = self.text
        i = self._space(start)
        if text.startswith("]", i):
            return items, i + 1
        while True:
            item, i = _DECODER.raw_decode(text, i)
            items.append(take(item))
            await self._pause()
            i, ended = self._after_item(i, "]")
            if ended:
                return items, i

    def _after_item(self, i: int, closer: str) -> tuple[int, bool]:
        """After a member or an item: where the next one starts, or (True) where the text goes on past the
        container's `closer`."""
        i = self._space(i)
        if self.text.startswith(",", i):
            return self._space(i + 1), False
        if self.text.startswith(closer, i):
            return i + 1, True
        raise json.JSONDecodeError("Expecting ',' delimiter", self.text, i)

    def _checked(self, name: str, item: Any, items: list[Any], invalid: list[tuple[tuple[str | int, ...], str]]
                 ) -> Any:
        """One item of the input's list `name`, validated (None when it is not valid), within its limit."""
        limit = self.limits.get(name)
        if limit is not None and len(items) == limit.most:
            raise _too_many(name, limit)
        try:
            return LISTS[name].validate_python(item)
        except ValidationError as exc:
            invalid += [((name, len(items), *e["loc"]), e["msg"]) for e in exc.errors()]
            return None

    def _space(self, i: int) -> int:
        match = _SPACE.match(self.text, i)
        assert match is not None  # it matches the empty string
        return match.end()

    async def _pause(self) -> None:
        """Let the loop serve others once this slice's time is over."""
        if time.perf_counter() >= self._slice_ends:
            await asyncio.sleep(0)
            self._slice_ends = time.perf_counter() + SLICE_SECONDS


def _too_many(name: str, limit: Limit) -> Unreadable:
    flag = "--" + limit.setting.replace("_", "-")
    return Unreadable(413, f"too_many_{name}", f"A run may carry at most {limit.most} {name}, and this one carries "
                      f"more. {limit.why} The bridge's limit is {flag} (AGUI_BRIDGE_{limit.setting.upper()}).",
                      limit=limit.most, setting=flag)

