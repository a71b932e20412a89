"""No schema, argument, result or registration stalls the bridge: checking a value against a page's
schema has a work budget, schemas that blow up are refused when they register, and definitions
are checked off the loop in fair turns.

First the core (bridge.schemas._validation, bridge.schemas.page_schemas, no server); then each attack of the security
review through a real uvicorn bridge, real websockets pages and the real MCP SDK client, with a
probe task on the bridge's event loop (tests and bridge share one loop) measuring how long the
loop was held, and another room's call or registration timed while the attack runs. The bound
the bridge promises is 50 ms; the tests allow 1 s for this noisy machine (before the budget the
same attacks held the loop for seconds to minutes).
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from contextlib import asynccontextmanager
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from bridge.schemas import definition_checks
from bridge.schemas import page_schemas as schemas
from bridge.schemas import _validation as validation
from bridge.core.catalog import check_definition
from bridge.schemas.definition_checks import IDLE_THREADS, MOST_THREADS, Checks
from bridge.core.messages import ProtocolError, parse_page_message
from bridge.core.meta_tools import QUERY_MAX_CHARS
from bridge.schemas.page_schemas import SchemaCheck, SchemaLimits, schema_problem, unfolded_size
from bridge.schemas._validation import CHECKPOINT_STEPS, VALIDATION_STEPS, Budget, OverBudget
from support import Page, eventually, open_page, page, running_bridge, tool

LAG_BOUND = 1.0  # seconds the loop may be held (the promise is 0.05 s; the machine is shared and noisy)
PROPERTY = settings(max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])


# --- bombs --------------------------------------------------------------------------------------

def nested_any_of(levels: int, leaf: dict | None = None) -> dict:
    """anyOf of two references to the level below, `levels` deep: 2**levels ways to fail, ~1 KB."""
    defs: dict[str, Any] = {f"l{i}": {"anyOf": [{"$ref": f"#/$defs/l{i + 1}"}, {"$ref": f"#/$defs/l{i + 1}"}]}
                            for i in range(levels)}
    defs[f"l{levels}"] = leaf or {"type": "string"}
    return {"type": "object", "properties": {"x": {"$ref": "#/$defs/l0"}}, "$defs": defs}


# Recursive, so it unfolds into few subschemas; each level of the value doubles the work: both
# branches descend into "a" before "required" fails them.
RECURSIVE_BOMB = {"type": "object", "properties": {"x": {"$ref": "#/$defs/n"}}, "$defs": {"n": {"anyOf": [
    {"type": "object", "properties": {"a": {"$ref": "#/$defs/n"}}, "required": ["b"]},
    {"type": "object", "properties": {"a": {"$ref": "#/$defs/n"}}, "required": ["c"]}]}}}


def deep(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = {"a": value}
    return value


# --- the core: values as JSON Schema compares them ----------------------------------------------

def test_unique_items_follows_json_schema_equality():
    check = validation.validator({"uniqueItems": True})
    with Budget(VALIDATION_STEPS):
        assert not check.is_valid([1, 1.0])  # the same number
        assert check.is_valid([True, 1]) and check.is_valid([False, 0]) and check.is_valid([0, None, "", [], {}])
        assert not check.is_valid([{"a": 1, "b": [2, {"c": 3}]}, {"b": [2.0, {"c": 3}], "a": 1}])  # key order
        assert check.is_valid([[1, 2], [2, 1]]) and check.is_valid([{"a": 1}, {"a": True}])
    message = SchemaCheck({"uniqueItems": True}).errors(["x", "y", "x"], "(arguments)")
    assert message is not None and "non-unique elements (items 0 and 2 are equal)" in message


def test_unique_items_of_20000_objects_takes_linear_work():
    items = [{"id": i, "name": f"n{i}"} for i in range(20_000)]
    with Budget(1 << 40) as budget:
        assert validation.validator({"uniqueItems": True}).is_valid(items)
    assert budget.spent < 10 * len(items) * validation.NODE_STEPS  # a few steps an item, not n**2


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-2, 2), st.sampled_from([0.0, 1.0, 1.5]), st.sampled_from(["", "a"])),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["a", "b"]), inner, max_size=2)),
    max_leaves=6)


@PROPERTY
@given(st.lists(json_values, max_size=5), json_values, st.lists(json_values, min_size=1, max_size=4))
def test_unique_items_enum_and_const_agree_with_jsonschema(items, value, members):
    for schema, instance in (({"uniqueItems": True}, items), ({"enum": members}, value), ({"const": members[0]}, value)):
        with Budget(VALIDATION_STEPS):
            ours = validation.validator(schema).is_valid(instance)
        assert ours == jsonschema.Draft202012Validator(schema).is_valid(instance), (schema, instance)


# --- the core: the bounded validator says what jsonschema says -----------------------------------

NAMES = st.sampled_from(["a", "b", "ab"])
PATTERNS = st.sampled_from(["^a", "b$", "a", "^$"])  # plain enough for Python's re, which jsonschema uses


def keyword_sets(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[dict]:
    schema_list = st.lists(inner, min_size=1, max_size=3)
    keyword = st.one_of(
        st.tuples(st.just("type"), st.sampled_from(["string", "integer", "number", "object", "array", "null"])),
        st.tuples(st.sampled_from(["anyOf", "oneOf", "allOf"]), schema_list),
        st.tuples(st.sampled_from(["not", "if", "then", "else", "contains", "items", "propertyNames",
                                   "unevaluatedItems", "unevaluatedProperties", "additionalProperties"]),
                  st.one_of(st.booleans(), inner)),
        st.tuples(st.sampled_from(["properties", "dependentSchemas"]), st.dictionaries(NAMES, inner, max_size=2)),
        st.tuples(st.just("patternProperties"), st.dictionaries(PATTERNS, inner, max_size=2)),
        st.tuples(st.just("prefixItems"), schema_list),
        st.tuples(st.just("pattern"), PATTERNS),
        st.tuples(st.just("uniqueItems"), st.booleans()),
        st.tuples(st.just("enum"), st.lists(json_values, min_size=1, max_size=3)),
        st.tuples(st.just("const"), json_values),
        st.tuples(st.just("required"), st.lists(NAMES, max_size=2, unique=True)),
        st.tuples(st.just("dependentRequired"), st.dictionaries(NAMES, st.lists(NAMES, max_size=2, unique=True),
                                                                max_size=2)),
        st.tuples(st.just("multipleOf"), st.sampled_from([2, 0.5, 1.5])),
        st.tuples(st.sampled_from(["minItems", "maxItems", "minProperties", "maxProperties", "minLength"]),
                  st.integers(0, 2)),
    )
    return st.lists(keyword, max_size=3).map(dict)


any_schemas = st.recursive(st.just({}), keyword_sets, max_leaves=5)
instances = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([0.5, 1.0, 3.0]),
              st.sampled_from(["", "a", "ab", "ba", "b"])),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(NAMES, inner, max_size=3)),
    max_leaves=8)


@PROPERTY
@given(any_schemas, instances)
def test_the_bounded_validator_agrees_with_jsonschema(schema, instance):
    with Budget(1 << 40):
        ours = validation.validator(schema).is_valid(instance)
        assert (schemas.errors(validation.validator(schema), instance, "(x)", 1 << 40) is None) == ours
    assert ours == jsonschema.Draft202012Validator(schema).is_valid(instance), (schema, instance)


REFERENCES = [  # the bounded validator resolves each without building a resource for subschemas with no $id
    ({"$id": "https://x.example/root", "$defs": {"a": {"$id": "a", "$defs": {"b": {"type": "integer"}},
                                                      "$ref": "#/$defs/b"}},
      "properties": {"p": {"$ref": "a"}, "q": {"$ref": "https://x.example/a#/$defs/b"}}},
     [{"p": 1}, {"p": "x"}, {"q": 2}, {"q": "y"}]),
    ({"$defs": {"n": {"$anchor": "node", "type": "object", "properties": {
        "kids": {"type": "array", "items": {"$ref": "#node"}}, "v": {"type": "integer"}}}}, "$ref": "#node"},
     [{"v": 1, "kids": [{"v": 2}]}, {"v": 1, "kids": [{"v": "x"}]}]),
    ({"$id": "https://x.example/strict", "$ref": "https://x.example/tree", "$defs": {
        "node": {"$dynamicAnchor": "node", "$ref": "https://x.example/tree", "unevaluatedProperties": False},
        "tree": {"$id": "https://x.example/tree", "$dynamicAnchor": "node", "type": "object", "properties": {
            "data": True, "children": {"type": "array", "items": {"$dynamicRef": "#node"}}}}}},
     [{"children": [{"data": 1}]}, {"children": [{"daat": 1}]}]),
    ({"type": "object", "properties": {"a": {"$id": "https://y.example/a", "properties": {"b": {"$ref": "#/$defs/c"}},
                                             "$defs": {"c": {"type": "string"}}}}},
     [{"a": {"b": "s"}}, {"a": {"b": 1}}]),
]


@pytest.mark.parametrize("schema, values", REFERENCES, ids=["$id scopes", "$anchor", "$dynamicRef", "nested $id"])
def test_references_resolve_as_jsonschema_resolves_them(schema, values):
    for value in values:
        with Budget(VALIDATION_STEPS):
            ours = validation.validator(schema).is_valid(value)
        assert ours == jsonschema.Draft202012Validator(schema).is_valid(value), value


META_VALUES = st.one_of(st.sampled_from([-1, 0, 2, 1.5, "a", "string", "strin", "(", "^a", True, None]),
                        st.lists(st.sampled_from(["string", "a", 1, "string"]), max_size=3))
META_KEYWORDS = st.sampled_from(["type", "minLength", "required", "pattern", "enum", "items", "properties", "$ref",
                                 "anyOf", "uniqueItems", "title", "$defs", "patternProperties", "x-custom"])


@PROPERTY
@given(st.recursive(st.dictionaries(META_KEYWORDS, META_VALUES, max_size=3),
                    lambda inner: st.dictionaries(META_KEYWORDS, st.one_of(META_VALUES, inner, st.lists(inner,
                                                                                                  max_size=2)),
                                                  max_size=3), max_leaves=6))
def test_the_meta_schema_without_dynamic_references_agrees_with_check_schema(schema):
    with Budget(1 << 40):
        ours = validation.schema_error(schema)
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
        theirs = None
    except jsonschema.SchemaError as exc:
        theirs = exc.message
    assert (ours is None) == (theirs is None), (schema, ours, theirs)


# --- the core: the budget -------------------------------------------------------------------

def test_a_spent_budget_stops_the_validation_and_says_which_limit():
    bomb = SchemaCheck(RECURSIVE_BOMB)
    started = time.perf_counter()
    message = bomb.errors({"x": deep(30)}, "(arguments)")  # 2**30 ways to fail without the budget
    assert time.perf_counter() - started < LAG_BOUND
    assert message == (f"(arguments): validation exceeded its work budget (limit {VALIDATION_STEPS:,} steps): the "
                       "value is too large, or the schema too costly, to check")
    with pytest.raises(OverBudget), Budget(100):
        validation.validator(RECURSIVE_BOMB).is_valid({"x": deep(30)})
    # Budgets nest and end: outside one, validation is unbounded again.
    assert validation.validator(RECURSIVE_BOMB).is_valid({"x": {"b": 1}})


def test_checkpoints_come_every_few_thousand_steps_and_budgets_stay_exact():
    done, checkpoints = 0, []
    with validation.checkpoints(lambda: checkpoints.append(done)):
        with pytest.raises(OverBudget), Budget(10_000) as budget:
            while True:
                validation.charge(1)
                done += 1
        assert done == 10_000 and budget.spent == 10_001  # the same step as without checkpoints
        with Budget(50_000) as outer:
            for _ in range(6_000):  # budgets of their own, each far under a checkpoint's steps
                with Budget(10):
                    validation.charge(1)
                    done += 1
        assert outer.spent == 0  # an inner budget's steps are its own
        for _ in range(5_000):  # outside any budget: no limit, checkpoints all the same
            validation.charge(1)
            done += 1
        seen = len(checkpoints)
        with Budget(10) as budget:  # preparing a schema: steps towards checkpoints, none from the budget
            validation.validator(WIDE)
        assert budget.spent == 0
    validation.charge(CHECKPOINT_STEPS + 1)  # no checkpoint outside `checkpoints`
    assert len(checkpoints) > seen  # WIDE has thousands of subschemas
    del checkpoints[seen:]
    # Every CHECKPOINT_STEPS steps or so (the first sooner: this thread did some before).
    assert done // (CHECKPOINT_STEPS + 1) <= len(checkpoints) <= done // CHECKPOINT_STEPS + 1, checkpoints
    assert all(b - a in (CHECKPOINT_STEPS, CHECKPOINT_STEPS + 1) for a, b in zip(checkpoints, checkpoints[1:])), \
        checkpoints
    assert 0 <= checkpoints[0] <= CHECKPOINT_STEPS + 1


def test_errors_a_value_invites_cost_budget_and_their_messages_are_cut():
    schema = {"type": "object", "properties": {"v": {"anyOf": [{"type": "string", "maxLength": i} for i in range(2000)]}}}
    started = time.perf_counter()
    message = SchemaCheck(schema).errors({"v": {"k": "x" * 1_000_000}}, "(arguments)")
    assert time.perf_counter() - started < LAG_BOUND  # each error quotes the 1 MB value: counted as written
    assert message is not None and "work budget" in message and len(message) < 1000


@pytest.mark.parametrize("schema, instance", [
    # A subschema naming draft-07 would have jsonschema switch to its draft-07 class, and Python's re.
    ({"type": "object", "properties": {"w": {"$schema": "http://json-schema.org/draft-07/schema#",
                                             "pattern": "^(a+)+$"}}}, {"w": "a" * 40 + "!"}),
    # jsonschema matches patternProperties with Python's re when it looks for additional properties.
    ({"type": "object", "patternProperties": {"^(a+)+$": {}}, "additionalProperties": False}, {"a" * 40 + "!": 1}),
    ({"type": "object", "patternProperties": {"^(a+)+$": {}}, "unevaluatedProperties": False}, {"a" * 40 + "!": 1}),
], ids=["$schema draft-07", "additionalProperties", "unevaluatedProperties"])
@pytest.mark.timeout(30)
def test_no_pattern_is_ever_matched_with_a_backtracking_engine(schema, instance):
    assert schema_problem(schema, SchemaLimits()) is None
    started = time.perf_counter()
    assert SchemaCheck(schema).errors(instance, "(arguments)") is not None
    assert time.perf_counter() - started < LAG_BOUND  # Python's re: 2**40 steps


def test_the_quick_check_stays_linear_in_the_value():
    many = {f"p{i}": {"type": "integer"} for i in range(3000)}
    check = SchemaCheck({"type": "object", "properties": {"rows": {"type": "array", "items": {
        "type": "object", "properties": many, "required": ["p1"]}}, "tag": {"enum": [f"t{i}" for i in range(3000)]}}})
    assert check.surely_valid is not None
    started = time.perf_counter()
    assert check.errors({"rows": [{"p1": 1}] * 100_000, "tag": "t2999"}, "(arguments)") is None
    assert time.perf_counter() - started < LAG_BOUND  # 3000 properties x 100,000 rows before


# --- the core: what registration refuses -----------------------------------------------------

def test_schemas_that_blow_up_are_refused_with_the_limit_and_the_field():
    def refused(schema: dict, field: str = "inputSchema") -> str:
        with pytest.raises(ValueError) as error:
            check_definition({"name": "t", field: schema})
        return str(error.value)

    assert unfolded_size(nested_any_of(16), 10**9) > 131_000
    message = refused(nested_any_of(16))
    assert message.startswith("inputSchema is not a usable JSON Schema") and "over 50,000 subschemas" in message
    assert "over 50,000 subschemas" in refused(nested_any_of(16), "outputSchema")
    patterns = {"type": "object", "patternProperties": {f"^k{i}$": {"type": "integer"} for i in range(1500)}}
    message = refused({"type": "object", "properties": {"m": patterns}})
    assert "patternProperties at /properties/m has 1500 patterns, over the limit of 64" in message
    message = refused({"type": "object", "allOf": [{"$ref": "#"}]})
    assert "refers to itself without end" in message
    # Legitimate schemas of the same features pass.
    check_definition({"name": "t", "inputSchema": nested_any_of(10)})
    check_definition({"name": "t", "inputSchema": RECURSIVE_BOMB})
    check_definition({"name": "t", "inputSchema": {"type": "object", "properties": {"children": {
        "type": "array", "items": {"$ref": "#"}}}}})


def test_free_json_in_a_definition_is_bounded_like_a_schema():
    def refused(**fields: Any) -> str:
        with pytest.raises(ValueError) as error:
            check_definition({"name": "t", **fields})
        return str(error.value)

    assert refused(inputExamples=[{}, deep(300)]) == "inputExamples[1]: nests 300 levels deep, over the limit of 32"
    assert refused(annotations={"x-extra": deep(40)}) == "annotations: nests 41 levels deep, over the limit of 32"
    assert refused(annotations={"x-extra": "z" * 70_000}).startswith("annotations: 70")
    message = refused(inputSchema=RECURSIVE_BOMB, inputExamples=[{"x": deep(30)}])
    assert message.startswith("inputExamples[0] does not match the inputSchema: (example): validation exceeded its "
                              "work budget"), message


def test_a_non_finite_number_from_a_page_is_refused_like_nan():
    for text in ("1e400", "-1E+400", "1" * 400 + ".5"):
        with pytest.raises(ProtocolError) as error:
            parse_page_message('{"type": "agui.tool.return", "call_id": "c", "result": {"n": ' + text + "}}")
        assert error.value.code == "bad_json" and "is not a JSON number" in error.value.message
        assert len(error.value.message) < 120
    assert parse_page_message('{"type": "agui.tool.return", "call_id": "c", "result": [1e308, 1e-400, 2]}').result \
        == [1e308, 0.0, 2]


# --- the core: definitions checked in turns ---------------------------------------------------

WIDE = {"type": "object", "properties": {f"p{i}": {"type": "string", "description": "x"} for i in range(1200)}}


class Registrations:
    """Definitions "large" (the meta-schema check of a 62 KiB schema, again and again: seconds of
    work alone) and "small" (at once), checked as the bridge checks them, in `Checks`. The large
    one stops early once a small one is checked (if `large_waits_for_small`), so that which
    finished first is the question."""

    def __init__(self, large_waits_for_small: bool = True) -> None:
        self.large_waits_for_small = large_waits_for_small
        self.finished: list[str] = []
        self.large_started = threading.Event()
        self.small_checked = threading.Event()
        self.large_rounds = 0
        self.large_ended_by: str | None = None

    def check(self, item: str) -> str:
        if item == "large":
            self.large_started.set()
            try:
                while self.large_rounds < 20 and not (self.large_waits_for_small and self.small_checked.is_set()):
                    with Budget(1 << 40):
                        assert validation.schema_error(WIDE) is None
                    self.large_rounds += 1
            except BaseException as exc:
                self.large_ended_by = type(exc).__name__
                raise
        else:
            self.small_checked.set()
        self.finished.append(item)
        return item

    async def start_large(self) -> asyncio.Task:
        large = asyncio.create_task(Checks(["large"], self.check).run())
        while not self.large_started.is_set():  # its definition is being checked
            await asyncio.sleep(0.001)
        return large


async def test_a_small_definition_is_checked_while_a_large_one_is_half_checked():
    registrations = Registrations()
    large = await registrations.start_large()
    assert await Checks(["small"], registrations.check).run() == ["small"]
    assert await large == ["large"]
    # The large definition's turn ended at a checkpoint in the middle of its check; the small one
    # was checked in another thread meanwhile.
    assert registrations.finished == ["small", "large"]
    assert registrations.large_rounds < 20


async def test_definitions_are_checked_only_while_the_loop_waits_between_its_own_work(monkeypatch):
    """A checking thread running beside the loop takes the interpreter from it at every switch
    interval, stalling every page and agent of the process: so the loop hands the checks turns and
    waits for each to end, and does its own work between turns, never during one. (A turn that
    ends late is the next test's: the loop's patience is made long here, so that a turn this
    shared machine delays cannot decide this one.)"""
    monkeypatch.setattr(definition_checks, "LOOP_WAITS_SECONDS", 60.0)
    loop_working = False
    seen_during_loop_work = 0
    loop_steps_during_checks = 0

    def check(item: int) -> int:
        nonlocal seen_during_loop_work
        assert validation.schema_error({"type": "object", "properties": {"n": {"type": "integer"}}}) is None
        busy_until = time.perf_counter() + 0.0003
        while time.perf_counter() < busy_until:
            seen_during_loop_work += loop_working
        return item

    async def loop_work(checks: asyncio.Task) -> None:
        nonlocal loop_working, loop_steps_during_checks
        while not checks.done():
            loop_working = True
            busy_until = time.perf_counter() + 0.02  # longer than the interpreter's switch interval
            while time.perf_counter() < busy_until:
                pass
            loop_working = False
            loop_steps_during_checks += 1
            await asyncio.sleep(0)

    checks = asyncio.create_task(Checks(list(range(400)), check).run())
    await asyncio.gather(checks, loop_work(checks))
    assert checks.result() == list(range(400))
    assert seen_during_loop_work == 0
    assert loop_steps_during_checks >= 2  # the loop was not held for the whole registration either


def sleeping_check(finished: list[str]) -> Any:
    """A check whose "slow" item takes 1.5 s of wall time without a checkpoint, as a checking
    thread does when it waits for a core other threads hold."""
    def check(item: str) -> str:
        if item == "slow":
            time.sleep(1.5)
        finished.append(item)
        return item
    return check


async def test_a_turn_that_ends_late_does_not_hold_the_loop():
    """The loop waits for a turn a few milliseconds at most; a turn still running then is awaited
    while the loop does its other work. No other turn starts before it ends."""
    finished: list[str] = []
    check = sleeping_check(finished)
    async with probed() as probe:
        slow = asyncio.create_task(Checks(["slow", "next"], check).run())
        await asyncio.sleep(0.05)
        small = asyncio.create_task(Checks(["small"], check).run())
        assert await slow == ["slow", "next"] and await small == ["small"]
    assert probe.longest < LAG_BOUND, probe.longest  # 1.5 s when the loop waited for the turn's end
    assert finished.index("slow") < finished.index("small")


async def test_a_registration_dropped_during_a_late_turn_lets_its_thread_go():
    finished: list[str] = []
    check = sleeping_check(finished)
    slow = asyncio.create_task(Checks(["slow", "never"], check).run())
    await asyncio.sleep(0.05)
    slow.cancel()  # its page went away while the turn was late
    with pytest.raises(asyncio.CancelledError):
        await slow
    assert finished == ["slow"]  # the item in hand was finished; the next was not begun
    assert await Checks(["after"], check).run() == ["after"]  # the turn was given back
    await eventually(lambda: sum(t.name == "definition-checks" for t in threading.enumerate()) <= IDLE_THREADS)


async def test_at_most_so_many_registrations_hold_a_definition_paused():
    """Each registration with a definition paused mid-check holds a thread and what it checked so
    far: past MOST_THREADS of them, another registration waits until one finishes."""
    started: set[int] = set()
    finish = [threading.Event() for _ in range(MOST_THREADS + 1)]

    def check(number: int) -> int:
        started.add(number)
        while not finish[number].is_set():  # validator work, with its checkpoints, until told to stop
            with Budget(1 << 40):
                assert validation.schema_error(WIDE) is None
        return number

    registrations = [asyncio.create_task(Checks([number], check).run()) for number in range(MOST_THREADS + 1)]
    await eventually(lambda: len(started) >= MOST_THREADS)
    for _ in range(20):  # turns go round the paused ones; the last registration gets none
        await asyncio.sleep(0.01)
        assert len(started) == MOST_THREADS
    first = min(started)
    finish[first].set()
    assert await registrations[first] == [first]
    await eventually(lambda: len(started) == MOST_THREADS + 1)  # the thread it let go went to the last
    for event in finish:
        event.set()
    assert [await registration for registration in registrations] == [[n] for n in range(MOST_THREADS + 1)]


async def test_a_registration_dropped_in_the_middle_of_a_definition_lets_its_thread_go():
    registrations = Registrations(large_waits_for_small=False)
    large = await registrations.start_large()
    assert await Checks(["small"], registrations.check).run() == ["small"]  # the large is paused for it
    large.cancel()  # its page went away
    with pytest.raises(asyncio.CancelledError):
        await large
    await eventually(lambda: registrations.large_ended_by is not None)
    assert registrations.large_ended_by == "_Dropped" and registrations.large_rounds < 20
    assert registrations.finished == ["small"]
    assert await Checks(["after"], registrations.check).run() == ["after"]  # the turn was given back
    # Threads held by no registration are stopped, but for a few kept idle.
    await eventually(lambda: sum(t.name == "definition-checks" for t in threading.enumerate()) <= IDLE_THREADS)


# --- end to end ----------------------------------------------------------------------------

class LoopProbe:
    """The longest the bridge's loop went without running this task (its 5 ms sleeps, overslept)."""

    def __init__(self) -> None:
        self.longest = 0.0

    async def _run(self) -> None:
        last = time.perf_counter()
        while True:
            await asyncio.sleep(0.005)
            now = time.perf_counter()
            self.longest = max(self.longest, now - last - 0.005)
            last = now


@asynccontextmanager
async def probed():
    probe = LoopProbe()
    task = asyncio.create_task(probe._run())
    await asyncio.sleep(0.02)
    try:
        yield probe
    finally:
        task.cancel()


async def round_trip(agent: Client, other: Page, arguments: dict | None = None) -> float:
    """Seconds for an agent's call of `echo` in another room, answered at once by its page."""
    started = time.perf_counter()
    call = asyncio.create_task(agent.call_tool("echo", arguments or {"text": "hi"}))
    invoke = await other.event()
    await other.answer(invoke["call_id"], result="answered")
    assert (await asyncio.wait_for(call, 10)).content[0].text == "answered"
    return time.perf_counter() - started


async def while_calling(agent: Client, name: str, arguments: dict, other_agent: Client, other: Page,
                        page_answers: tuple[Page, Any] | None = None) -> tuple[Any, float, float]:
    """Call `name` with `arguments`; meanwhile, another room's call. Its result, the other call's
    round trip, and the longest the loop was held."""
    async with probed() as probe:
        offending = asyncio.create_task(agent.call_tool(name, arguments))
        await asyncio.sleep(0)
        other_took = await round_trip(other_agent, other)
        if page_answers is not None:
            answering, result = page_answers
            invoke = await answering.event()
            await answering.answer(invoke["call_id"], result=result)
        result = await asyncio.wait_for(offending, 30)
    return result, other_took, probe.longest


async def refused(p: Page, definition: dict) -> dict:
    """Register one tool the bridge refuses; the `invalid_tool` error it answers with."""
    await p.send({"type": "agui.tools.register", "id": "r", "tools": [definition]})
    assert (await p.reply())["tools"] == []
    return await p.reply()


@asynccontextmanager
async def two_rooms(*tools: dict):
    """A bridge; a page of `tools` and its agent in room "default"; an echo page and its agent in "other"."""
    async with running_bridge() as b, page(b, *tools) as p, page(b, ECHO, room="other") as other, \
            Client(b.mcp_url(), mode="legacy") as agent, Client(b.mcp_url("other"), mode="legacy") as other_agent:
        yield b, p, agent, other, other_agent


ECHO = tool("echo", "Echo.", {"text": {"type": "string"}})


@pytest.mark.timeout(60)
async def test_unique_items_of_many_objects_is_checked_in_linear_time_within_the_budget():
    store = tool("store", "Store rows.", {"rows": {"type": "array", "uniqueItems": True}})
    rows = [{"id": i, "v": "x"} for i in range(4_000)]  # 49 KiB: 13 s of pairwise comparisons before
    async with two_rooms(store) as (b, p, agent, other, other_agent):
        result, other_took, held = await while_calling(agent, "store", {"rows": rows}, other_agent, other,
                                                       page_answers=(p, "stored"))
        assert result.content[0].text == "stored"
        assert held < LAG_BOUND and other_took < LAG_BOUND, (held, other_took)
        duplicate = await agent.call_tool("store", {"rows": rows + [{"v": "x", "id": 7.0}]})
        assert duplicate.is_error and "non-unique elements (items 7 and 4000 are equal)" in duplicate.content[0].text
        many = [{"id": i, "v": "x"} for i in range(20_000)]  # over 5 minutes before
        result, other_took, held = await while_calling(agent, "store", {"rows": many}, other_agent, other)
        assert result.is_error and "(arguments): validation exceeded its work budget (limit 100,000 steps)" \
            in result.content[0].text
        assert held < LAG_BOUND and other_took < LAG_BOUND, (held, other_took)
        assert p.events.empty()


@pytest.mark.timeout(60)
async def test_many_patterns_by_many_keys_are_refused_at_registration_or_within_the_budget():
    many = {"type": "object", "properties": {"m": {"type": "object", "patternProperties": {
        f"^k{i}$": {"type": "integer"} for i in range(1500)}}}}
    most = {"type": "object", "properties": {"m": {"type": "object", "patternProperties": {
        f"^k{i}x$": {"type": "integer"} for i in range(64)}}}}
    async with two_rooms({"name": "most", "inputSchema": most}) as (b, p, agent, other, other_agent):
        error = await refused(p, {"name": "many", "inputSchema": many})
        assert error["code"] == "invalid_tool" and error["tool"] == "many"
        assert "patternProperties at /properties/m has 1500 patterns, over the limit of 64" in error["message"]
        keys = {f"k{i}": i for i in range(20_000)}  # 64 x 20,000 searches
        result, other_took, held = await while_calling(agent, "most", {"m": keys}, other_agent, other)
        assert result.is_error and "validation exceeded its work budget" in result.content[0].text
        assert held < LAG_BOUND and other_took < LAG_BOUND, (held, other_took)
        assert p.events.empty()


@pytest.mark.timeout(60)
async def test_nested_any_of_in_an_input_schema_is_refused_at_registration_or_within_the_budget():
    async with two_rooms({"name": "bomb", "inputSchema": RECURSIVE_BOMB}) as (b, p, agent, other, other_agent):
        error = await refused(p, {"name": "nested", "inputSchema": nested_any_of(16)})
        assert error["tool"] == "nested" and "over 50,000 subschemas" in error["message"]
        result, other_took, held = await while_calling(agent, "bomb", {"x": deep(40)}, other_agent, other)
        assert result.is_error and "(arguments): validation exceeded its work budget (limit 100,000 steps)" \
            in result.content[0].text
        assert held < LAG_BOUND and other_took < LAG_BOUND, (held, other_took)
        assert p.events.empty()


@pytest.mark.timeout(60)
async def test_nested_any_of_in_an_output_schema_set_off_by_the_pages_result():
    bomb = {"name": "bomb", "outputSchema": RECURSIVE_BOMB}
    async with two_rooms(bomb) as (b, p, agent, other, other_agent):
        assert "outputSchema is not a usable JSON Schema" in (await refused(p, {"name": "nested",
                                                                               "outputSchema": nested_any_of(16)}))["message"]
        result, other_took, held = await while_calling(agent, "bomb", {}, other_agent, other,
                                                       page_answers=(p, {"x": deep(40)}))
        assert result.is_error and "does not match its output schema: (result): validation exceeded its work budget" \
            in result.content[0].text
        assert held < LAG_BOUND and other_took < LAG_BOUND, (held, other_took)


def resident_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.timeout(90)
async def test_input_examples_bombs_from_six_pages_hold_up_no_other_room():
    bombs = [{"name": f"bomb{i}", "inputSchema": RECURSIVE_BOMB, "inputExamples": [{"x": deep(30)}] * 5}
             for i in range(20)]
    async with running_bridge() as b, page(b, ECHO, room="other") as other, \
            Client(b.mcp_url("other"), mode="legacy") as other_agent:
        before = resident_bytes()
        pages = [await open_page(b, room=f"attack{i}") for i in range(6)]
        try:
            async with probed() as probe:
                for attacker in pages:
                    await attacker.send({"type": "agui.tools.register", "id": "r", "tools": bombs})
                await asyncio.sleep(0.05)  # the attacks are being checked
                newcomer = await open_page(b, room="newcomer")
                started = time.perf_counter()
                await newcomer.register(tool("plain"))
                registered_in = time.perf_counter() - started
                other_took = await round_trip(other_agent, other)
                for attacker in pages:
                    assert (await attacker.reply(timeout=60))["tools"] == []
                    for _ in bombs:
                        error = await attacker.reply(timeout=60)
                        assert error["code"] == "invalid_tool" and "validation exceeded its work budget (limit " \
                            "20,000 steps)" in error["message"], error
                await newcomer.close()
            assert registered_in < LAG_BOUND and other_took < LAG_BOUND, (registered_in, other_took)
            assert probe.longest < LAG_BOUND, probe.longest
            assert resident_bytes() - before < 300 * 2**20
        finally:
            for attacker in pages:
                await attacker.close()


def costliest_definition(name: str) -> dict:
    """Under 64 KiB, about the costliest definition to check (~1 s: 20,000 subschemas against the
    meta-schema, then {} against them, past the budget)."""
    return {"name": name, "inputSchema": {"type": "object", "allOf": [{}] * 20_000}}


@pytest.mark.timeout(60)
async def test_a_registration_waits_for_no_other_pages_large_definition():
    async with running_bridge() as b, page(b, room="attack") as attacker, page(b, room="newcomer") as newcomer:
        await attacker.send({"type": "agui.tools.register", "id": "r", "tools": [costliest_definition("costly")]})
        await asyncio.sleep(0.05)  # its one definition is being checked
        await newcomer.register(tool("plain"))
        # Registered while the attacker's definition is still being checked, not after it.
        assert attacker.replies.empty()
        assert (await attacker.reply(timeout=30))["tools"] == []
        assert "work budget" in (await attacker.reply())["message"]


async def test_a_300_deep_example_is_refused_and_the_rooms_listing_still_works():
    async with running_bridge() as b, page(b, ECHO) as p, Client(b.mcp_url(), mode="legacy") as agent:
        await p.send({"type": "agui.tools.register", "id": "r", "tools": [
            {"name": "deep", "inputExamples": [deep(300)]},
            {"name": "deep_annotations", "annotations": {"x-note": deep(300)}}]})
        assert (await p.reply())["tools"] == []
        messages = sorted([(await p.reply())["message"], (await p.reply())["message"]])
        assert messages == ["Tool 'deep' was not registered: inputExamples[0]: nests 300 levels deep, over the limit "
                            "of 32", "Tool 'deep_annotations' was not registered: annotations: nests 301 levels deep, "
                            "over the limit of 32"], messages
        assert [t.name for t in (await agent.list_tools()).tools] == ["echo"]


@pytest.mark.timeout(60)
async def test_a_long_tool_search_query_is_refused_and_never_echoed():
    async with two_rooms(ECHO) as (b, p, agent, other, other_agent):
        query = "weather " * 450_000  # 3.4 MiB
        result, other_took, held = await while_calling(agent, "tool_search", {"query": query}, other_agent, other)
        text = result.content[0].text
        assert result.is_error and f"at most {QUERY_MAX_CHARS} characters; this one has {len(query)}" in text
        assert len(text) < 500
        assert held < LAG_BOUND and other_took < LAG_BOUND, (held, other_took)
        found = await agent.call_tool("tool_search", {"query": "w" * QUERY_MAX_CHARS})  # at the cap: searched
        assert not found.is_error


async def test_a_result_with_1e400_is_refused_like_nan():
    async with running_bridge() as b, page(b, ECHO) as p, Client(b.mcp_url(), mode="legacy") as agent:
        call = asyncio.create_task(agent.call_tool("echo", {"text": "x"}))
        call_id = (await p.event())["call_id"]
        await p.send('{"type": "agui.tool.return", "call_id": "' + call_id + '", "result": {"n": 1e400}}')
        error = await p.reply()
        assert error["code"] == "bad_json" and error["call_id"] == call_id, error
        result = await asyncio.wait_for(call, 10)
        assert result.is_error and result.structured_content is None
        assert "could not be taken: Not valid JSON: 1e400 is not a JSON number" in result.content[0].text
        json.dumps(result.model_dump(), allow_nan=False)  # nothing infinite reached the agent


async def test_a_checking_thread_keeps_nothing_of_the_registration_it_checked():
    """An idle checking thread must not hold its last registration's definitions (a page's 10,000
    tools would stay in memory, and in every full collection, until the next registration)."""
    import weakref

    class Definitions(list):  # a list a weak reference can watch
        pass

    definitions = Definitions([{"name": f"t{i}"} for i in range(3)])
    checks = Checks(definitions, lambda raw: raw["name"])
    assert await checks.run() == ["t0", "t1", "t2"]
    gone = weakref.ref(definitions)
    del definitions, checks
    await asyncio.sleep(0.05)  # the thread has gone back to waiting for its next order
    assert gone() is None
