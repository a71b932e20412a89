"""Page schemas (bridge.schemas.page_schemas): the quick check, and what registration refuses.

The quick schema check may only say "surely valid" of what jsonschema finds valid.

`SchemaCheck` answers valid instances of plain schemas without jsonschema; anything it is not
sure of goes to jsonschema, which writes the reasons. A wrong "valid" would let bad arguments
reach a page, so the property is checked on random schemas of the keywords it handles, with
random instances, many of them near the schema's edges (bool for number, 1.0 for integer, ...).

A definition whose schemas (or free JSON: examples, annotations) would blow up the validator is refused
when it registers, with the limit and the field named.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from validation_support import RECURSIVE_BOMB, deep, nested_any_of

from bridge.core.catalog import check_definition
from bridge.schemas.page_schemas import SchemaCheck, Validator, quick_check, unfolded_size

PROPERTY = settings(max_examples=400, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
NAMES = st.sampled_from(["a", "b", "text", "n"])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([0.0, 1.0, 1.5, -2.5]),
                    st.sampled_from(["", "a", "text", "ab", "é"]))
TYPES = st.sampled_from(["string", "integer", "number", "boolean", "null", "object", "array"])

json_values = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                            st.dictionaries(NAMES, inner, max_size=3)),
                           max_leaves=8)


def schemas_of(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[dict]:
    keyword = st.one_of(
        st.tuples(st.just("type"), st.one_of(TYPES, st.lists(TYPES, min_size=1, max_size=3, unique=True))),
        st.tuples(st.just("properties"), st.dictionaries(NAMES, inner, max_size=3)),
        st.tuples(st.just("required"), st.lists(NAMES, max_size=2, unique=True)),
        st.tuples(st.just("additionalProperties"), st.one_of(st.booleans(), inner)),
        st.tuples(st.just("items"), st.one_of(st.booleans(), inner)),
        st.tuples(st.just("enum"), st.lists(SCALARS, min_size=1, max_size=3)),
        st.tuples(st.just("const"), SCALARS),
        st.tuples(st.sampled_from(["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"]),
                  st.sampled_from([0, 1, 1.5, -1])),
        st.tuples(st.sampled_from(["minLength", "maxLength", "minItems", "maxItems"]), st.integers(0, 2)),
        st.tuples(st.sampled_from(["description", "title", "format"]), st.just("email")),
        st.tuples(st.just("pattern"), st.sampled_from(["^a", "b$", "t", "^$", "é"])),
    )
    return st.lists(keyword, max_size=4).map(dict)


schemas = st.recursive(st.just({}), schemas_of, max_leaves=6)


@PROPERTY
@given(schemas, json_values)
def test_never_vouches_for_an_invalid_instance(schema, instance):
    check = quick_check(schema)
    assert check is not None  # every keyword drawn is one it handles
    if check(instance):
        assert Validator(schema).is_valid(instance), (schema, instance)


@PROPERTY
@given(schemas, json_values)
def test_errors_agree_with_jsonschema(schema, instance):
    found = SchemaCheck(schema).errors(instance, "(arguments)")
    assert (found is None) == Validator(schema).is_valid(instance)


def test_vouches_for_plain_valid_arguments():
    schema = {"type": "object", "required": ["text"], "additionalProperties": False,
              "properties": {"text": {"type": "string", "minLength": 1, "description": "what to say"},
                             "level": {"type": "integer", "minimum": 0, "maximum": 5},
                             "mode": {"enum": ["short", "long"]},
                             "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
                             "ratio": {"type": ["number", "null"]}}}
    check = quick_check(schema)
    assert check is not None
    assert check({"text": "hi", "level": 2, "mode": "long", "tags": ["a"], "ratio": 0.5})
    assert check({"text": "hi", "ratio": None})
    for bad in ({}, {"text": ""}, {"text": "hi", "level": 9}, {"text": "hi", "mode": "medium"},
                {"text": "hi", "tags": ["a", "b", "c", "d"]}, {"text": "hi", "extra": 1}, {"text": 1},
                {"text": "hi", "level": True}, {"text": "hi", "ratio": "x"}):
        assert not check(bad), bad
    # Not sure, so jsonschema decides: 2.0 is an integer to JSON Schema.
    assert not check({"text": "hi", "level": 2.0})
    assert SchemaCheck(schema).errors({"text": "hi", "level": 2.0}, "(arguments)") is None
    assert 'is not of type "integer"' in SchemaCheck(schema).errors({"text": "hi", "level": 2.5}, "(arguments)")


def test_true_is_not_one_and_keywords_it_does_not_handle_go_to_jsonschema():
    assert not quick_check({"enum": [1]})(True)
    assert not quick_check({"const": 0})(False)
    assert not quick_check({"type": "number"})(True)
    for schema in ({"$ref": "#/$defs/x", "$defs": {"x": {}}}, {"anyOf": [{"type": "string"}]},
                   {"uniqueItems": True}, {"properties": {"a": {"not": {}}}}, {"enum": [[1]]},
                   {"prefixItems": [{}], "items": False}, {"type": "strange"}):
        assert quick_check(schema) is None, schema
    assert SchemaCheck({"pattern": "^a"}).errors("b", "(arguments)") == '(arguments): "b" does not match "^a"'
    assert quick_check({"pattern": "^a"})("abc") and not quick_check({"pattern": "^a"})("b")


# --- what registration refuses ---------------------------------------------------------------------


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
