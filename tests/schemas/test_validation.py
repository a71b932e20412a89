"""The bounded validator (bridge.schemas._validation): it compares values as JSON Schema does, says what
jsonschema says of random schemas and instances, and works within a budget of steps that stops a schema or a
value that would blow up, and says which limit it hit."""

from __future__ import annotations

import time
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from validation_support import LAG_BOUND, RECURSIVE_BOMB, WIDE, deep

from bridge.schemas import _validation as validation
from bridge.schemas import page_schemas as schemas
from bridge.schemas._validation import CHECKPOINT_STEPS, VALIDATION_STEPS, Budget, OverBudget
from bridge.schemas.page_schemas import SchemaCheck, SchemaLimits, schema_problem

PROPERTY = settings(max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])


# --- values as JSON Schema compares them ----------------------------------------------------------


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
    st.one_of(st.none(), st.booleans(), st.integers(-2, 2), st.sampled_from([0.0, 1.0, 1.5]),
              st.sampled_from(["", "a"])),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.sampled_from(["a", "b"]), inner, max_size=2)),
    max_leaves=6)


@PROPERTY
@given(st.lists(json_values, max_size=5), json_values, st.lists(json_values, min_size=1, max_size=4))
def test_unique_items_enum_and_const_agree_with_jsonschema(items, value, members):
    for schema, instance in (({"uniqueItems": True}, items), ({"enum": members}, value),
                             ({"const": members[0]}, value)):
        with Budget(VALIDATION_STEPS):
            ours = validation.validator(schema).is_valid(instance)
        assert ours == jsonschema.Draft202012Validator(schema).is_valid(instance), (schema, instance)


# --- the bounded validator says what jsonschema says ----------------------------------------------

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


# --- the budget -----------------------------------------------------------------------------------


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
    schema = {"type": "object",
              "properties": {"v": {"anyOf": [{"type": "string", "maxLength": i} for i in range(2000)]}}}
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
