"""A room's catalog (bridge.core.catalog): the names agents see, definitions checked, the listing and search
mode, names that stay through any order of pages coming and going, and what a full garbage collection walks
of a room's tools."""

from __future__ import annotations

import random

import pytest
from gc_support import tracked

from bridge.core import messages
from bridge.core.catalog import ListingPolicy, Room, check_definition, mcp_safe_name


def definition(name: str, description: str = "does things", **schema_properties) -> messages.ToolDefinition:
    return check_definition({"name": name, "description": description,
                             "inputSchema": {"type": "object", "properties": schema_properties}})


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


# --- what a full garbage collection walks ---------------------------------------------------------


def rich_definition(n: int) -> dict:
    return {"name": f"t{n}", "description": f"Tool number {n}", "annotations": {"readOnlyHint": True},
            "inputSchema": {"type": "object", "required": ["rows"], "properties": {
                "rows": {"type": "array", "items": {"type": "object", "properties": {"cell": {"type": "string"}}}},
                "mode": {"enum": ["a", "b"]}}},
            "outputSchema": {"type": "object", "properties": {"count": {"type": "integer"}}}}


def test_a_rooms_tools_are_not_walked_by_the_garbage_collector():
    """Every full collection walks every tracked object, with the event loop stopped: a room's
    tools must cost it one object each, however rich their definitions, and read back unchanged."""
    import gc

    def definitions(count: int) -> list:
        return [check_definition(rich_definition(n)) for n in range(count)]

    room = Room("r", ListingPolicy())
    gc.collect()
    before = len(gc.get_objects())
    room.register("S", None, definitions(3000))
    gc.collect()
    assert (len(gc.get_objects()) - before) / 3000 < 1.5
    tool = room.get("t2999")
    assert tool.definition == definitions(3000)[2999] and tool.description == "Tool number 2999"
    assert tool.argument_errors({"rows": [{"cell": 1}]}) is not None and tool.argument_errors({"rows": []}) is None


def test_reading_and_checking_every_tool_of_a_room_keeps_few_objects():
    # Definitions parsed and schemas' checks made for the tools read and called: those kept are the
    # last few, not one of each for every tool ever read or called.
    room = Room("r", ListingPolicy())
    before = tracked()
    room.register("S", None, (check_definition(rich_definition(n)) for n in range(6000)))
    for t in room.tools_of("S"):
        assert room.describe(t)["outputSchema"] == rich_definition(0)["outputSchema"]
        assert t.argument_errors({"rows": [{"cell": "a"}], "mode": "b"}) is None
        assert t.result_errors({"structuredContent": {"count": 1}}) is None
    assert (tracked() - before) / 6000 < 2
    last = room.get("t5999")
    assert "rows" in last.argument_errors({"rows": [{"cell": 1}]})
    assert "count" in last.result_errors({"structuredContent": {"count": "many"}})


# --- the names under any order of registrations, changes and departures ---------------------------

APP = "http://localhost:5555"  # the Origin header a browser tab of this app sends
OTHER_APP = "http://127.0.0.1:6666"


def test_names_stay_consistent_through_any_order_of_tabs_coming_changing_and_leaving():
    rng = random.Random(11)
    room = Room("r", ListingPolicy(inline_max=8, meta_tools=3, reserved_names=frozenset({"tool_search"})))
    versions = [check_definition({"name": name, "description": f"version {v}"})
                for name in ("confirm", "read", "tool_search") for v in (1, 2)]
    sessions, origins = [f"S{n}xxxxxxx" for n in range(6)], [None, APP, OTHER_APP]
    origin_of = {sid: rng.choice(origins) for sid in sessions}
    reached: dict[str, str] = {}  # a name agents were given -> the page's name for the tool
    for step in range(600):
        sid = rng.choice(sessions)
        if rng.random() < 0.6:
            room.register(sid, None, rng.sample(versions, rng.randint(1, 3)), origin=origin_of[sid])
        else:
            room.unregister(sid, rng.sample(["confirm", "read", "tool_search"], rng.randint(1, 3)))
        tools = [t for s in sessions for t in room.tools_of(s)]
        for t in tools:
            listed_tool = room.get(t.key)
            assert listed_tool is not None and t in room.offering(listed_tool), step
            assert all(o.definition_json == t.definition_json and o.origin == t.origin for o in room.offering(t))
            assert t.key != "tool_search", step  # a meta-tool's name is never a page's
        keys = {t.key for t in tools}
        assert room.page_tools == len(tools) and len(room) == len(keys), step
        assert len(room.index) == len(keys) and all(key in room.index for key in keys), step
        # A name agents were given reaches a tool of that name for as long as a page offers one.
        for name, page_name in list(reached.items()):
            now = room.named(name)
            if now is None:
                del reached[name]
            else:
                assert now.page_name == page_name, f"{step}: {name} now reaches another tool"
        for t in tools:
            reached.setdefault(t.key, t.page_name)


async def test_the_index_reads_again_only_the_tools_newly_listed_and_in_one_batch():
    room = Room("r", ListingPolicy())
    room.register("AAAAAAAA", "Shop", [definition("a"), definition("b")], origin="https://shop")
    room.register("BBBBBBBB", "Shop 2", [definition("a"), definition("b")], origin="https://shop")  # tabs sharing
    room.register("CCCCCCCC", None, [definition("c")])
    added: list[list[str]] = []
    index_add = room._index.add

    def add(tools):
        tools = list(tools)
        added.append([tool.key for tool in tools])
        index_add(tools)

    room._index.add = add
    room.unregister("CCCCCCCC")  # nobody's heir: nothing indexed again
    assert added == []
    room.unregister("AAAAAAAA")  # the other tab's tools take both names, read again at once
    assert added == [["a", "b"]]
    assert [tool.session_id for tool, _ in await room.search("b", 1)] == ["BBBBBBBB"]
