"""Each tool's Python signature, from its JSON input schema: what `tool_describe` shows and what programs are
type-checked against. Any schema a page sends gives a signature that parses."""

from __future__ import annotations

import ast
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bridge.code_mode import is_function_name, python_signature, tool_stubs


@pytest.mark.parametrize(("schema", "signature"), [
    ({"type": "object", "properties": {"verbose": {"type": "boolean", "default": False},
                                       "order_id": {"type": "integer"}}, "required": ["order_id"]},
     "async def get_order(*, order_id: int, verbose: bool = False) -> Any"),
    ({"type": "object", "properties": {}}, "async def get_order() -> Any"),
    ({"type": "object", "properties": {"status": {"enum": ["open", "closed"]}, "limit": {"type": "integer"}}},
     "async def get_order(*, status: Literal['open', 'closed'] = ..., limit: int = ...) -> Any"),
    ({"type": "object", "properties": {"note": {"type": ["string", "null"], "default": None},
                                       "tags": {"type": "array", "items": {"type": "string"}},
                                       "matrix": {"type": "array", "items": {"type": "array", "items": {}}},
                                       "where": {"type": "object", "properties": {"a": {"type": "string"}}},
                                       "price": {"type": "number", "default": 2},
                                       "id": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
                                       "flag": {"const": True}, "anything": {}},
      "required": ["tags", "id"]},
     "async def get_order(*, tags: list[str], id: int | str, note: str | None = None, matrix: list[list[Any]] = ..., "
     "where: dict[str, Any] = ..., price: float = 2, flag: Literal[True] = ..., anything: Any = ...) -> Any"),
    ({"type": "object", "properties": {"level": {"enum": [1, 2.5, None]}, "mode": {"enum": ["a", None]}}},
     "async def get_order(*, level: int | float | None = ..., mode: Literal['a'] | None = ...) -> Any"),
    ({"type": "object", "properties": {"count": {"type": "integer", "default": "three"},
                                       "kind": {"enum": ["x", "y"], "default": "z"},
                                       "text": {"type": "string", "default": "x" * 100}}},
     "async def get_order(*, count: int = ..., kind: Literal['x', 'y'] = ..., text: str = ...) -> Any"),
    ({"type": "object", "properties": {"order-id": {"type": "integer"}, "from": {"type": "string"},
                                       "more": {"type": "string"}}, "required": ["order-id"]},
     "async def get_order(*, more: str = ..., **extra: Any) -> Any"),
    ({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": True},
     "async def get_order(*, a: str = ..., **more: Any) -> Any"),
    ({"type": "object", "properties": {"more": {}, "extra": {}, "other_arguments": {}, "a-b": {}}},
     "async def get_order(*, more: Any = ..., extra: Any = ..., other_arguments: Any = ..., "
     "**more________________: Any) -> Any"),
    ({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": False},
     "async def get_order(*, a: str = ...) -> Any"),
    ({"type": "object", "properties": {"quote": {"enum": ["a'b", 'c"d', "e\\f\n"]}}},
     """async def get_order(*, quote: Literal["a'b", 'c"d', 'e\\\\f\\n'] = ...) -> Any"""),
    ({"type": "object", "properties": {"ratio": {"type": "number", "default": float("nan")}}},
     "async def get_order(*, ratio: float = ...) -> Any"),
    (None, "async def get_order(**more: Any) -> Any"),
])
def test_a_schema_gives_the_signature_an_agent_calls(schema: Any, signature: str):
    assert python_signature("get_order", schema) == signature


@pytest.mark.parametrize(("name", "function"), [
    ("get_order", True), ("_private", True), ("match", True),  # a soft keyword is a fine name
    ("read-file", False), ("3d_view", False), ("class", False), ("print", False), ("open", False),
    ("call_tool", False), ("", False), ("ﬁle", False),  # Python would read this one as `file`
])
def test_which_tool_names_are_functions_in_programs(name: str, function: bool):
    assert is_function_name(name) is function


def test_a_name_that_cannot_be_a_function_is_shown_through_call_tool():
    schema = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
    assert python_signature("read-file", schema) == "await call_tool('read-file', arguments)  # arguments: path: str"
    assert python_signature("print", {"type": "object"}) == "await call_tool('print', arguments)  # arguments: none"


def test_the_stubs_hold_call_tool_and_each_function_tool():
    stubs = tool_stubs({"get_order": {"type": "object", "properties": {"order_id": {"type": "integer"}},
                                      "required": ["order_id"]},
                        "read-file": {"type": "object"}, "print": None})
    assert stubs == ("from typing import Any, Literal\n\n"
                     "async def call_tool(name: str, arguments: dict[str, Any] | None = None) -> Any: ...\n"
                     "async def get_order(*, order_id: int) -> Any: ...\n")


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                                      max_size=3), max_leaves=8)
schemas = st.recursive(
    st.fixed_dictionaries({}, optional={
        "type": st.sampled_from(["string", "integer", "number", "boolean", "null", "array", "object", "weird"])
        | st.lists(st.sampled_from(["string", "null", "integer", 3]), max_size=3),
        "enum": st.lists(json_values, max_size=4), "const": json_values, "default": json_values}),
    lambda inner: st.fixed_dictionaries({}, optional={
        "items": inner, "anyOf": st.lists(inner, max_size=3), "oneOf": st.lists(inner, max_size=3),
        "properties": st.dictionaries(st.text(max_size=12), inner, max_size=4),
        "required": st.lists(st.text(max_size=12), max_size=3) | json_values,
        "additionalProperties": st.booleans() | inner}),
    max_leaves=12)


@settings(max_examples=150, deadline=None)
@given(schema=schemas, name=st.text(max_size=20))
def test_any_schema_gives_a_signature_and_stubs_that_parse(schema: dict[str, Any], name: str):
    signature = python_signature(name, schema)
    if is_function_name(name):
        ast.parse(signature + ": ...")
    ast.parse(tool_stubs({name: schema, "other": schema}))
