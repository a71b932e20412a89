"""The core without a server: messages, catalog, calls, results, sessions, hub."""

from __future__ import annotations

import asyncio
import random
from dataclasses import replace

import pytest

from bridge.core import messages
from bridge.core.calls import CallTable, MonotonicProgress, Outcome
from bridge.core.catalog import ListingPolicy, Room, check_definition, mcp_safe_name
from bridge.config import Settings
from bridge.core.hub import CATALOG_SLICE, PAGE_GONE, Hub
from bridge.core.messages import Hello, PageInfo, ProtocolError, ToolReturn, parse_page_message
from bridge.core.results import to_call_tool_result
from bridge.core.sessions import PageEvent, PageSession


def definition(name: str, description: str = "does things", **schema_properties) -> messages.ToolDefinition:
    return check_definition({"name": name, "description": description,
                             "inputSchema": {"type": "object", "properties": schema_properties}})


# --- messages ----------------------------------------------------------------------------------


@pytest.mark.parametrize("frame, code", [
    ("{", "bad_json"), ("3", "bad_message"), ('{"type": 1}', "unknown_type"),
    ('{"type": "agui.tool.return", "call_id": 5}', "bad_message"),
])
def test_parse_rejects_with_codes(frame, code):
    with pytest.raises(ProtocolError) as caught:
        parse_page_message(frame)
    assert caught.value.code == code
    assert caught.value.to_message()["type"] == "agui.error"


def test_parse_keeps_the_message_id_for_replies():
    with pytest.raises(ProtocolError) as caught:
        parse_page_message('{"type": "agui.tool.progress", "id": 9}')
    assert caught.value.to_message()["reply_to"] == 9
    msg = parse_page_message('{"type": "agui.tool.return", "call_id": "c", "result": [1], "extra": true}')
    assert isinstance(msg, ToolReturn) and msg.result == [1]


# --- catalog -----------------------------------------------------------------------------------


def test_mcp_safe_name():
    assert mcp_safe_name("files.read:all") == "files_read_all"
    assert mcp_safe_name("ü" * 70) == "_" * 64
    assert mcp_safe_name("") == "tool"


def test_names_are_disambiguated_stably():
    room = Room("r", ListingPolicy(reserved_names=frozenset({"tool_search"})))
    (a,) = room.register("AAAAAAAA", None, [definition("confirm")])
    (b,) = room.register("BBBBBBBB", None, [definition("confirm", "confirms otherwise")])
    (c,) = room.register("CCCCCCCC", None, [definition("tool_search")])
    assert (a.key, b.key, c.key) == ("confirm", "confirm__BBBBBB", "tool_search__CCCCCC")
    room.unregister("AAAAAAAA")
    assert room.get("confirm__BBBBBB") is b  # another definition's name does not change when the first leaves
    (d,) = room.register("DDDDDDDD", None, [definition("confirm")])
    assert d.key == "confirm"


def test_same_page_names_that_sanitize_alike_stay_distinct():
    room = Room("r", ListingPolicy())
    tools = room.register("SESSION1", None, [definition("a.b"), definition("a:b"), definition("a b")])
    assert [t.key for t in tools] == ["a_b", "a_b__SESSIO", "a_b__SESSIO_2"]


def test_long_names_with_suffix_fit_64():
    room = Room("r", ListingPolicy())
    room.register("S1xxxxxx", None, [definition("n" * 100)])
    (second,) = room.register("S2xxxxxx", None, [definition("n" * 100, "another")])
    assert len(second.key) == 64 and second.key.endswith("__S2xxxx")


def test_reregistering_replaces_the_definition_and_keeps_the_name():
    room = Room("r", ListingPolicy())
    changes = []
    room.subscribe(changes.append)
    (first,) = room.register("S", None, [definition("t", "old")])
    (again,) = room.register("S", None, [definition("t", "new")])
    assert again is first and room.get("t").definition.description == "new"
    assert len(room) == 1 and len(changes) == 2


@pytest.mark.parametrize("raw, problem", [
    ({"name": "x", "inputSchema": {"type": "array"}}, '"type": "object"'),
    ({"name": "x", "inputSchema": {"type": "object", "properties": {"a": {"type": 3}}}}, "not a usable JSON Schema"),
    ({"name": "x" * 129}, "at most 128"),
    ({"description": "no name"}, "name"),
])
def test_invalid_definitions(raw, problem):
    with pytest.raises(ValueError, match=problem):
        check_definition(raw)


def test_argument_errors_name_the_problem():
    room = Room("r", ListingPolicy())
    (t,) = room.register("S", None, [check_definition({"name": "t", "inputSchema": {
        "type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}, "required": ["n"]}})])
    assert t.argument_errors({"n": 3}) is None
    assert "n: 0 is less than the minimum of 1" in t.argument_errors({"n": 0})
    assert '"n" is a required property' in t.argument_errors({})


def test_plain_listing_until_count_threshold_then_search_mode():
    room = Room("r", ListingPolicy(inline_max=5, inline_token_budget=10_000, meta_tools=3))
    room.register("S", None, [definition(f"t{i}") for i in range(5)])
    listing = room.listing()
    assert not listing.search_mode and len(listing.tools) == 5 and listing.deferred == 0
    room.register("S", None, [definition("t5")])
    listing = room.listing()
    assert listing.search_mode
    assert [t["name"] for t in listing.tools] == ["t0", "t1"]  # 5 minus the 3 meta-tools, in registration order
    assert listing.deferred == 4
    room.unregister("S", ["t5", "t4"])
    assert not room.listing().search_mode  # back under the threshold: plain again


def test_token_budget_threshold_and_description_cut():
    long = "word " * 100
    room = Room("r", ListingPolicy(inline_max=40, inline_token_budget=250, description_max_chars=50))
    room.register("S", None, [definition("a", long), definition("b", long)])
    listing = room.listing()
    assert listing.search_mode  # two tools, but over the token budget
    assert listing.tools[0]["description"].endswith("…") and len(listing.tools[0]["description"]) == 50
    assert room.get("a").describe()["description"] == long  # the full text is kept for describe


def test_activation_is_idempotent_and_lists_the_tool():
    room = Room("r", ListingPolicy(inline_max=4, meta_tools=3))
    room.register("S", None, [definition(f"t{i}") for i in range(6)])
    changes = []
    room.subscribe(changes.append)
    assert room.is_deferred("t4")
    assert room.activate(["t4", "t4"]) is True
    assert room.activate(["t4"]) is False and room.activate(["t0"]) is False and room.activate(["ghost"]) is False
    assert [t["name"] for t in room.listing().tools] == ["t0", "t4"]
    assert len(changes) == 1


def test_what_is_deferred_agrees_with_the_listing_through_registrations_activations_and_evictions():
    # A search asks after each activation, before any listing is built: the answers must be the
    # listing's own, whatever happened since.
    rng = random.Random(7)
    room = Room("r", ListingPolicy(inline_max=6, meta_tools=3, max_activated=4))
    names = [f"t{i}" for i in range(14)]
    for step in range(400):
        move = rng.random()
        if move < 0.15:
            room.register(rng.choice("ST"), None, [definition(n).model_copy(update={"pinned": rng.random() < 0.2})
                                                   for n in rng.sample(names, rng.randint(1, 4))])
        elif move < 0.25:
            room.unregister(rng.choice("ST"), rng.sample(names, rng.randint(1, 3)))
        else:
            room.activate(rng.sample(names + ["ghost"], rng.randint(1, 3)))
        keys = [f"{n}{suffix}" for n in names for suffix in ("", "__S", "__T")] + ["ghost"]
        answers = room.deferred, {key: room.is_deferred(key) for key in keys}
        listing = room.listing()
        assert answers == (listing.deferred, {key: room.get(key) is not None and key not in listing.keys
                                             for key in keys}), step


def test_pinned_tools_are_listed_in_search_mode_until_unpinned_or_gone():
    room = Room("r", ListingPolicy(inline_max=4, meta_tools=3))
    room.register("S", None, [definition(f"t{i}") for i in range(6)])
    room.register("S", None, [definition("t5").model_copy(update={"pinned": True})])
    assert [t["name"] for t in room.listing().tools] == ["t5"]  # the one slot left went to the pinned tool
    room.register("S", None, [definition("t5")])  # registered again without the pin
    assert [t["name"] for t in room.listing().tools] == ["t0"]
    room.register("S", None, [definition("t3").model_copy(update={"pinned": True})])
    assert [t["name"] for t in room.listing().tools] == ["t3"]
    room.unregister("S", ["t3"])
    assert [t["name"] for t in room.listing().tools] == ["t0"] and not room.is_deferred("t0")


# --- results -----------------------------------------------------------------------------------


@pytest.mark.parametrize("value, modern, expected", [
    ("hi", False, {"content": [{"type": "text", "text": "hi"}]}),
    ({"a": 1}, False, {"content": [{"type": "text", "text": '{"a": 1}'}], "structuredContent": {"a": 1}}),
    (7, False, {"content": [{"type": "text", "text": "7"}]}),
    (7, True, {"content": [{"type": "text", "text": "7"}], "structuredContent": 7}),
    (None, True, {"content": [{"type": "text", "text": "null"}], "structuredContent": None}),
    ({"content": [{"type": "text", "text": "x"}], "isError": True, "other": 1}, False,
     {"content": [{"type": "text", "text": "x"}], "isError": True}),
])
def test_result_conversion(value, modern, expected):
    assert to_call_tool_result(Outcome(result=value), structured_may_be_any_json=modern) == expected


def test_error_outcome_conversion():
    assert to_call_tool_result(Outcome.failure("error", "nope"), structured_may_be_any_json=True) == {
        "content": [{"type": "text", "text": "nope"}], "isError": True}


# --- calls -------------------------------------------------------------------------------------


async def test_call_table_settles_once_and_keeps_history():
    table = CallTable(history=2)
    call = table.open(room="r", session_id="S", tool_key="t", arguments={})
    assert table.settle(call.call_id, Outcome(result=1), session_id="OTHER") is False
    assert table.settle(call.call_id, Outcome(result=1)) is True
    assert table.settle(call.call_id, Outcome(result=2)) is False
    assert (await call.future).result == 1
    table.close(call, call.future.result())
    table.close(call, Outcome(result=3))  # idempotent
    assert len(table) == 0 and len(table.recent) == 1 and table.recent[0]["outcome"] == "result"
    assert table.settle(call.call_id, Outcome(result=1)) is False


async def test_call_table_counts_calls_waiting_per_room_and_page():
    table = CallTable()
    a1 = table.open(room="r", session_id="A", tool_key="t", arguments={})
    a2 = table.open(room="r", session_id="A", tool_key="t", arguments={})
    b1 = table.open(room="q", session_id="B", tool_key="t", arguments={})
    assert (table.waiting_in("r"), table.waiting_for("A")) == (2, 2)
    assert (table.waiting_in("q"), table.waiting_for("B")) == (1, 1)
    table.close(a1, Outcome(result=1))
    table.close(a1, Outcome(result=1))  # closing twice counts once
    assert (table.waiting_in("r"), table.waiting_for("A")) == (1, 1)
    table.close(a2, Outcome(result=1))
    table.close(b1, Outcome(result=1))
    assert table.waiting_in("r") == table.waiting_for("A") == table.waiting_in("q") == table.waiting_in("nowhere") == 0
    assert not table.rooms_with_calls and not table.pages_with_calls  # nothing kept for rooms and pages with no call


async def test_call_ids_are_unique():
    table = CallTable()
    ids = {table.open(room="r", session_id="S", tool_key="t", arguments={}).call_id for _ in range(500)}
    assert len(ids) == 500


async def test_call_table_times_out_each_call_at_its_own_deadline():
    table = CallTable(timeout=0.2)
    loop = asyncio.get_running_loop()
    first = table.open(room="r", session_id="S", tool_key="t", arguments={})
    answered = table.open(room="r", session_id="S", tool_key="t", arguments={})
    await asyncio.sleep(0.1)
    second = table.open(room="r", session_id="S", tool_key="t", arguments={})
    table.settle(answered.call_id, Outcome(result="yes"))
    timed_out = (await asyncio.wait_for(first.future, 1)).kind, loop.time()
    assert timed_out[0] == "timeout" and "0.2 s" in first.future.result().error
    assert timed_out[1] >= first.deadline and not second.future.done()  # the newer call waits on
    table.close(first, first.future.result())
    assert (await asyncio.wait_for(second.future, 1)).kind == "timeout"
    assert loop.time() >= second.deadline >= first.deadline + 0.1
    assert answered.future.result().result == "yes"  # answered in time: never overwritten
    # The timer is set again for a call opened after the table emptied.
    table.close(second, second.future.result())
    third = table.open(room="r", session_id="S", tool_key="t", arguments={})
    assert (await asyncio.wait_for(third.future, 1)).kind == "timeout"


def test_call_table_times_out_on_a_new_event_loop_too():
    """A bridge stopped with a call waiting and run again (a new loop) still times its calls out."""
    table = CallTable(timeout=0.05)

    async def left_waiting():
        table.open(room="r", session_id="S", tool_key="t", arguments={})

    async def timed_out():
        call = table.open(room="r", session_id="S", tool_key="t", arguments={})
        return (await asyncio.wait_for(call.future, 1)).kind

    asyncio.run(left_waiting())  # its loop closes with the timer pending
    assert asyncio.run(timed_out()) == "timeout"


async def test_call_table_without_timeout_sets_no_timer():
    table = CallTable()
    call = table.open(room="r", session_id="S", tool_key="t", arguments={})
    assert not table.timer_set and call.deadline == float("inf")


def test_monotonic_progress():
    p = MonotonicProgress()
    assert p.tick("wait") == (0.0, None, "wait")
    assert p.page(5, 10, "half") == (5, 10, "half")
    assert p.page(3, 10, "back") == (6, None, "back")  # would go backwards: renumbered, no total
    assert p.page(20, 10, "over") == (20, None, "over")  # a total below progress is dropped
    assert p.tick(None) == (21, None, None)


# --- sessions ----------------------------------------------------------------------------------


async def test_session_stream_replays_waiting_invocations_then_follows():
    session = PageSession("r", PageInfo())
    session.push(messages.tool_invoke("c1", "t", "t", {}, 1))
    session.push(messages.tool_invoke("c2", "t", "t", {}, 2))
    session.push(messages.tool_cancel("c2", "timeout"))
    session.settled("c2")
    stream = session.stream(None)
    first = await anext(stream)
    assert first.data["call_id"] == "c1"
    session.push(messages.tool_invoke("c3", "t", "t", {}, 3))
    assert (await anext(stream)).data["call_id"] == "c3"


async def test_session_stream_after_last_event_id_and_superseded():
    session = PageSession("r", PageInfo())
    for i in range(3):
        session.push(messages.tool_invoke(f"c{i}", "t", "t", {}, i))
    old = session.stream(1)
    assert [(await anext(old)).id, (await anext(old)).id] == [2, 3]
    new = session.stream(3)
    waiting = asyncio.create_task(anext(new))
    await asyncio.sleep(0)
    with pytest.raises(StopAsyncIteration):  # only the newest stream is fed
        await asyncio.wait_for(anext(old), 1)
    session.push(messages.tool_cancel("c0", "timeout"))
    assert (await asyncio.wait_for(waiting, 1)).name == "agui.tool.cancel"


async def test_a_resumed_stream_never_gets_an_answered_invocation():
    session = PageSession("r", PageInfo())
    for i in range(4):
        session.push(messages.tool_invoke(f"c{i}", "t", "t", {}, i))
    session.settled("c1")
    session.settled("c2")
    resumed = session.stream(0)
    assert [(await anext(resumed)).data["call_id"] for _ in range(2)] == ["c0", "c3"]


async def test_events_numbered_elsewhere_keep_their_order_and_never_come_back_once_ended():
    session = PageSession("r", PageInfo())

    def numbered(n, data):
        return PageEvent(n, data["type"], data)

    session.deliver(numbered(7, messages.tool_invoke("c7", "t", "t", {}, 7)))  # live, before the backlog
    session.deliver(numbered(5, messages.tool_invoke("c5", "t", "t", {}, 5)))  # the backlog, read later
    session.deliver(numbered(5, messages.tool_invoke("c5", "t", "t", {}, 5)))  # twice: kept once
    session.settled("c6")
    session.deliver(numbered(6, messages.tool_invoke("c6", "t", "t", {}, 6)))  # ended before it was read
    assert session.pending_calls == {"c5", "c7"}
    resumed = session.stream(4)
    assert [(await anext(resumed)).id for _ in range(2)] == [5, 7]
    session.deliver(numbered(9, messages.tool_cancel("c5", "timeout")))
    assert (await anext(resumed)).id == 9


async def test_waiting_invocations_are_never_evicted_by_other_events():
    from bridge.core.sessions import OTHER_EVENTS_KEPT

    session = PageSession("r", PageInfo())
    for i in range(OTHER_EVENTS_KEPT + 300):
        session.push(messages.tool_invoke(f"c{i}", "t", "t", {}, i))
    for i in range(OTHER_EVENTS_KEPT + 50):  # more cancels than the window keeps
        session.push(messages.tool_cancel(f"gone{i}", "timeout"))
    fresh = session.stream(None)
    delivered = [(await anext(fresh)).data["call_id"] for _ in range(OTHER_EVENTS_KEPT + 300)]
    assert delivered == [f"c{i}" for i in range(OTHER_EVENTS_KEPT + 300)]
    others = [e.data["call_id"] for e in session.buffered_events() if e.name != "agui.tool.invoke"]
    assert others == [f"gone{i}" for i in range(50, OTHER_EVENTS_KEPT + 50)]  # the newest ones, no more


async def test_an_event_pushed_while_the_stream_yields_is_not_lost():
    """The stream's consumer is slow (a full socket): pushes made meanwhile still wake it."""
    session = PageSession("r", PageInfo())
    stream = session.stream(None)
    waiting = asyncio.create_task(anext(stream))
    await asyncio.sleep(0)
    session.push(messages.tool_invoke("a", "t", "t", {}, 1))
    assert (await asyncio.wait_for(waiting, 1)).data["call_id"] == "a"
    # The consumer is busy elsewhere while two more arrive, one at a time.
    session.push(messages.tool_invoke("b", "t", "t", {}, 2))
    await asyncio.sleep(0)
    session.push(messages.tool_invoke("c", "t", "t", {}, 3))
    got = [(await asyncio.wait_for(anext(stream), 1)).data["call_id"] for _ in range(2)]
    assert got == ["b", "c"]


async def test_keep_alive_comes_after_idle_seconds_without_an_event():
    session = PageSession("r", PageInfo())
    loop = asyncio.get_running_loop()
    stream = session.stream(None, idle=0.2)
    started = loop.time()
    assert await asyncio.wait_for(anext(stream), 1) is None  # nothing to send: a keep-alive
    assert loop.time() - started >= 0.19
    # Events every 0.1 s for 0.5 s: no keep-alive among them.
    got = []

    async def pushing():
        for i in range(5):
            await asyncio.sleep(0.1)
            session.push(messages.tool_invoke(f"c{i}", "t", "t", {}, i))

    pusher = asyncio.create_task(pushing())
    while len(got) < 5:
        got.append(await asyncio.wait_for(anext(stream), 1))
    await pusher
    assert all(e is not None for e in got)
    last = loop.time()
    assert await asyncio.wait_for(anext(stream), 1) is None  # silence again: a keep-alive
    assert loop.time() - last >= 0.15
    await stream.aclose()


# --- hub ---------------------------------------------------------------------------------------


def hub(**overrides) -> Hub:
    return Hub(replace(Settings(), **overrides).hub_config())


async def test_hub_call_round_trip_and_page_gone():
    h = hub(page_grace=0.05)
    session, resumed = h.hello(Hello(type="agui.hello"))
    assert not resumed
    await h.handle(session, messages.RegisterTools(type="agui.tools.register", tools=[
        {"name": "t", "inputSchema": {"type": "object"}}]))
    tool = h.room("default").get("t")
    call = asyncio.create_task(h.call(tool, {"x": 1}, mcp_request_id=4))
    await asyncio.sleep(0)
    (invoke,) = [e.data for e in session.buffered_events()]
    assert invoke["params"] == {"x": 1} and invoke["mcp_request_id"] == 4
    await h.handle(session, ToolReturn(type="agui.tool.return", call_id=invoke["call_id"], result="done"))
    assert (await call).result == "done"

    pending = asyncio.create_task(h.call(tool, {}))
    await asyncio.sleep(0)
    h.disconnected(session, session.connection, deliberate=False)
    outcome = await asyncio.wait_for(pending, 1)
    assert outcome.kind == "page_gone" and outcome.error == PAGE_GONE
    assert h.room("default").get("t") is None and session.id not in h.sessions


async def test_hub_resume_within_grace_and_stale_socket_close_is_ignored():
    h = hub(page_grace=0.2)
    session, _ = h.hello(Hello(type="agui.hello"))
    first_connection = session.connection
    h.disconnected(session, first_connection, deliberate=False)
    again, resumed = h.hello(Hello(type="agui.hello", session_id=session.id))
    assert resumed and again is session
    h.disconnected(session, first_connection, deliberate=False)  # the old socket closing late
    await asyncio.sleep(0.3)
    assert session.id in h.sessions
    other_room, resumed = h.hello(Hello(type="agui.hello", session_id=session.id, room="elsewhere"))
    assert not resumed and other_room is not session


async def test_hub_knows_the_pages_of_each_room():
    h = hub(page_grace=0.05)
    a, _ = h.hello(Hello(type="agui.hello", room="a"))
    b1, _ = h.hello(Hello(type="agui.hello", room="b"))
    b2, _ = h.hello(Hello(type="agui.hello", room="b"))
    assert h.pages_in("a") == [a] and h.pages_in("b") == [b1, b2] and h.pages_in("c") == []
    h.drop(b1)
    h.drop(b1)  # twice: nothing more happens
    assert h.pages_in("b") == [b2]
    h.drop(a)
    assert h.pages_in("a") == [] and not h.has_pages("a") and h.has_pages("b")


async def test_hub_refuses_bad_hello():
    h = hub(token="t")
    with pytest.raises(ProtocolError, match="token"):
        h.hello(Hello(type="agui.hello", token="nope"))
    with pytest.raises(ProtocolError) as caught:
        h.hello(Hello(type="agui.hello", token="t", room="a/b"))
    assert caught.value.code == "bad_room"


async def test_hub_timeout_pushes_cancel():
    h = hub(call_timeout=0.05)
    session, _ = h.hello(Hello(type="agui.hello"))
    await h.handle(session, messages.RegisterTools(type="agui.tools.register", tools=[{"name": "t"}]))
    outcome = await h.call(h.room("default").get("t"), {})
    assert outcome.kind == "timeout"
    assert [e.name for e in session.buffered_events()] == ["agui.tool.cancel"]  # the answered invocation is gone
    assert len(h.calls) == 0


# --- settings ----------------------------------------------------------------------------------


def test_settings_from_flags_and_environment(monkeypatch):
    import argparse

    from bridge.config import add_arguments, from_arguments

    monkeypatch.setenv("AGUI_BRIDGE_CALL_TIMEOUT", "12.5")
    monkeypatch.setenv("AGUI_BRIDGE_INLINE_MAX", "7")
    parser = argparse.ArgumentParser()
    add_arguments(parser, "serve")
    settings = from_arguments(parser.parse_args(["--port", "9000", "--inline-max", "9"]))
    assert settings.port == 9000 and settings.call_timeout == 12.5
    assert settings.inline_max == 9  # a flag beats the environment
    assert settings.host == "127.0.0.1" and settings.search_tool_name == "tool_search"


def test_settings_do_not_import_the_hub():
    """The settings and the hub read the core's defaults from one place; neither builds on the other."""
    import subprocess
    import sys

    code = "import sys, bridge.config\nprint(sorted({'bridge.core.hub', 'bridge.core.pages'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_core_imports_neither_starlette_nor_mcp():
    import subprocess
    import sys

    core = "bridge.core.catalog, bridge.core.calls, bridge.core.results, bridge.core.sessions, bridge.core.pages, bridge.core.hub, " \
           "bridge.core.messages, bridge.search.index, bridge.core.meta_tools, bridge.core.defaults, bridge.config"
    code = (f"import sys, {core}\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'mcp', 'mcp_types', 'starlette', 'uvicorn', "
            "'sse_starlette', 'websockets'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# --- a page leaving with many tools ------------------------------------------------------------


async def test_a_page_leaving_with_many_tools_is_gone_at_once_and_its_index_entries_freed_slice_by_slice():
    h = hub(max_tools_per_page=1000)
    resident, _ = h.hello(Hello(type="agui.hello"))
    await h.handle(resident, messages.RegisterTools(type="agui.tools.register", tools=[
        {"name": f"resident_{n}", "description": f"Export the report number {n}"} for n in range(60)]))
    leaving, _ = h.hello(Hello(type="agui.hello"))
    await h.handle(leaving, messages.RegisterTools(type="agui.tools.register", tools=[
        {"name": f"leaving_{n}", "description": f"Export the invoice report number {n}"} for n in range(300)]))
    room = h.room("default")
    found = await room.search("export invoice report", 5)
    assert {tool.session_id for tool, _ in found} == {leaving.id}
    room.activate(tool.key for tool, _ in found)
    gone = room.get("leaving_7")
    pending = asyncio.create_task(h.call(gone, {}))
    await asyncio.sleep(0)

    h.drop(leaving)
    # What agents see changes at once, before the loop turns: no tool of the page is listed, found,
    # named or callable, and its calls have failed; its index entries are only hidden so far.
    assert room.tools_of(leaving.id) == [] and room.get("leaving_7") is None and len(room) == 60
    assert not any(key.startswith("leaving_") for key in room.listing().keys)
    assert room.index.sweep(0) == 300
    found = await room.search("export invoice report", 5)
    assert len(found) == 5 and {tool.session_id for tool, _ in found} == {resident.id}
    assert (await pending).kind == "page_gone"
    assert (await h.call(gone, {})).kind == "page_gone"
    # They are freed a slice at a time, between turns of the loop.
    await asyncio.sleep(0)
    assert 0 < room.index.sweep(0) < 300
    back, _ = h.hello(Hello(type="agui.hello"))  # the page reloaded: its tools get their names back
    await h.handle(back, messages.RegisterTools(type="agui.tools.register", tools=[{"name": "leaving_7"}]))
    assert room.offered_by(back.id, "leaving_7").key == "leaving_7"
    while room.index.sweep(0):
        await asyncio.sleep(0)
    fresh = Room("fresh", room.policy)
    fresh.register(resident.id, None, [t.definition for t in room.tools_of(resident.id)])
    fresh.register(back.id, None, [t.definition for t in room.tools_of(back.id)])
    for query in ("export invoice report", "report 12", "leaving 7"):
        assert [hit for _, hit in await room.search(query, 10)] == [hit for _, hit in await fresh.search(query, 10)]


def test_a_listed_tool_is_listed_anew_when_another_page_offers_its_name_or_its_page_registers_it_again():
    # Search mode keeps each listed tool as listed between activations; a change of tools redoes it.
    room = Room("r", ListingPolicy(inline_max=4, meta_tools=3))
    room.register("S", None, [definition(f"t{i}") for i in range(6)])
    room.activate(["t4"])
    before = room.listing()
    assert [t["description"] for t in before.tools] == ["does things"] * 2
    room.register("OTHER1", None, [definition("t4", "does it otherwise")], page_label="the other tab")
    listing = room.listing()
    assert [t["description"] for t in listing.tools] == ["does things", "does things [from page S]"]
    assert listing.fingerprint != before.fingerprint
    room.register("S", None, [definition("t4", "does other things")])
    assert [t["description"] for t in room.listing().tools] == ["does things", "does other things [from page S]"]
    room.unregister("OTHER1")
    assert [t["description"] for t in room.listing().tools] == ["does things", "does other things"]
    assert room.activate(["t5"]) and [t["name"] for t in room.listing().tools] == ["t0", "t4", "t5"]


async def test_tools_a_page_unregisters_are_gone_at_once_and_their_index_entries_freed_slice_by_slice():
    h = hub(max_tools_per_page=1000)
    page, _ = h.hello(Hello(type="agui.hello"))
    await h.handle(page, messages.RegisterTools(type="agui.tools.register", tools=[
        {"name": f"report_{n}", "description": f"Export the report number {n}"} for n in range(300)]))
    room = h.room("default")
    replies = await h.handle(page, messages.UnregisterTools(
        type="agui.tools.unregister", tools=[f"report_{n}" for n in range(1, 300)]))
    assert len(replies[0]["tools"]) == 299
    assert [tool.key for tool in room.tools_of(page.id)] == ["report_0"] and len(room) == 1
    assert [tool.key for tool, _ in await room.search("export report", 5)] == ["report_0"]
    assert room.index.sweep(0) == 299  # hidden at once, freed between turns of the loop
    await asyncio.sleep(0)
    assert 0 < room.index.sweep(0) < 299
    while room.index.sweep(0):
        await asyncio.sleep(0)


async def test_pages_leaving_a_room_at_once_have_their_index_entries_freed_by_one_sweep():
    # A sweep for each would free a slice each a turn of the loop: the turn grows with the pages.
    h = hub(max_tools_per_page=1000)
    pages = []
    for n in range(3):
        page, _ = h.hello(Hello(type="agui.hello"))
        await h.handle(page, messages.RegisterTools(type="agui.tools.register", tools=[
            {"name": f"page{n}_tool_{i}", "description": f"Export the report number {i}"} for i in range(200)]))
        pages.append(page)
    room = h.room("default")
    for page in pages:
        h.drop(page)
    assert len(room) == 0 and room.index.sweep(0) == 600
    await asyncio.sleep(0)
    assert room.index.sweep(0) == 600 - CATALOG_SLICE
    while room.index.sweep(0):
        await asyncio.sleep(0)


def test_a_rooms_tools_are_not_walked_by_the_garbage_collector():
    """Every full collection walks every tracked object, with the event loop stopped: a room's
    tools must cost it one object each, however rich their definitions, and read back unchanged."""
    import gc

    def definitions(count: int) -> list:
        return [check_definition({
            "name": f"t{n}", "description": f"Tool number {n}", "annotations": {"readOnlyHint": True},
            "inputSchema": {"type": "object", "required": ["rows"], "properties": {
                "rows": {"type": "array", "items": {"type": "object", "properties": {"cell": {"type": "string"}}}},
                "mode": {"enum": ["a", "b"]}}},
            "outputSchema": {"type": "object", "properties": {"count": {"type": "integer"}}}}) for n in range(count)]

    room = Room("r", ListingPolicy())
    gc.collect()
    before = len(gc.get_objects())
    room.register("S", None, definitions(3000))
    gc.collect()
    assert (len(gc.get_objects()) - before) / 3000 < 1.5
    tool = room.get("t2999")
    assert tool.definition == definitions(3000)[2999] and tool.description == "Tool number 2999"
    assert tool.argument_errors({"rows": [{"cell": 1}]}) is not None and tool.argument_errors({"rows": []}) is None
