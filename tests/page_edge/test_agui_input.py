"""An AG-UI run's input read in slices (bridge/page_edge/_agui_input.py), without a server: the same input as
in one go, and the same refusals (bad JSON, the fields validation names, a later member of the same name).
(Large runs through a real bridge: tests/interaction/test_agui_limits.py.)"""

from __future__ import annotations

import json

import pytest
from ag_ui.core import RunAgentInput
from agui_support import ADD, chat_messages, run_input

from bridge.page_edge._agui_input import Limit, Unreadable, read_run_input

FULL = run_input(
    tools=[ADD, {**ADD, "name": "näme \"quoted\"", "metadata": {"agui-mcp-bridge": {"interrupt": True}}}],
    messages=[*chat_messages(5),
              {"id": "t", "role": "tool", "toolCallId": "c1", "content": [{"type": "text", "text": "5"}]}],
    state={"cart": [1, 2.5, None, True, {"deep": ["é", "\u2028"]}], "": {}},
    context=[{"description": "d", "value": "v"}],
    resume=[{"interruptId": "i", "status": "resolved", "payload": {"ok": True}}], forwardedProps=[1, {"a": []}],
    parentRunId=None, extraMember={"kept": True})


@pytest.mark.parametrize("body", [
    FULL,
    {**FULL, "messages": [], "tools": [], "context": [], "resume": None, "state": [], "forwardedProps": {}},
    run_input(),
])
async def test_a_body_read_in_slices_is_the_input_read_in_one_go(body):
    text = json.dumps(body, indent=1)  # whitespace between every token
    for encoded in (text.encode(), text.encode("utf-16"), json.dumps(body, ensure_ascii=False).encode(),
                    bytearray(text.encode("utf-16-le"))):  # the edge hands over the bytearray it read into
        got = await read_run_input(encoded, {"messages": Limit(100, "max_run_messages", "")})
        assert got == RunAgentInput.model_validate(json.loads(encoded))
        assert got.model_dump() == RunAgentInput.model_validate(body).model_dump()


@pytest.mark.parametrize("text, problem", [
    ('{"threadId": "t", "runId": "r", "messages": [{"id": "1", "role": "user", "content": "x"} {"id": "2"}]}',
     "Expecting ',' delimiter"),
    ('{"threadId": "t", "runId": "r", "messages": []} []', "Extra data"),
    ('{"threadId": "t", "runId": "r", "messages": [], }', "Expecting property name"),
    ('{"threadId": "t" "runId": "r"}', "Expecting ',' delimiter"),
    ('{"threadId" "t"}', "Expecting ':' delimiter"),
    ('{"threadId": "t", "state": {"a": 1,}}', "Expecting property name"),
    ('{"threadId": "t", "messages": [', "Expecting value"),
    ('{"threadId": "t", "messages": [1, 2', "Expecting ',' delimiter"),
    ('{"threadId": "t', "Unterminated string"),
    ("", "Expecting value"),
    ('{"state": ' + "[" * 100_000 + "]" * 100_000 + "}", "nests too deeply"),
])
async def test_bad_json_anywhere_in_the_body_is_refused_as_in_one_go(text, problem):
    with pytest.raises(Unreadable) as refused:
        await read_run_input(text.encode(), {})
    assert (refused.value.status, refused.value.code) == (400, "bad_json")
    assert problem in str(refused.value)
    if "deeply" not in problem:
        with pytest.raises(ValueError) as in_one_go:
            json.loads(text)
        assert str(in_one_go.value) in str(refused.value), "the same words, and the same place"


@pytest.mark.parametrize("body, fields", [
    ({"threadId": "t", "runId": "r", "messages": [*chat_messages(3), {"id": "1", "role": "tool", "content": "x"}]},
     ["messages.3.tool.toolCallId"]),
    ({"runId": 5, "messages": [{"id": "1", "role": "nobody"}], "tools": [{"name": "x"}]},
     ["threadId", "runId", "messages.0", "tools.0.description"]),
    ({"threadId": "t", "runId": "r", "messages": {"not": "a list"}}, ["messages"]),
    ({"threadId": "t", "runId": "r", "messages": [], "resume": [{"interruptId": "i", "status": "maybe"}]},
     ["resume.0.status"]),
    ([{"threadId": "t"}], ["(body)"]),
    ("a string", ["(body)"]),
])
async def test_an_invalid_input_read_in_slices_names_the_fields_validation_in_one_go_names(body, fields):
    with pytest.raises(Unreadable) as refused:
        await read_run_input(json.dumps(body).encode(), {})
    assert (refused.value.status, refused.value.code) == (422, "invalid_input")
    named = [e["field"] for e in refused.value.extra["errors"]]
    assert sorted(named) == sorted(fields), named
    assert all(f in str(refused.value) for f in fields)


async def test_a_later_member_of_the_same_name_replaces_the_earlier_as_in_one_go():
    text = ('{"threadId": "t", "runId": "r", "messages": [{"id": "1", "role": "tool", "content": "x"}], '
            '"messages": [{"id": "2", "role": "user", "content": "y"}], "tools": [{"name": "x"}], "tools": null}')
    got = await read_run_input(text.encode(), {})
    assert got == RunAgentInput.model_validate(json.loads(text))
    assert [m.id for m in got.messages] == ["2"] and got.tools is None
