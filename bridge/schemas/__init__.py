"""Schema checks: the JSON Schemas pages give their tools, checked once when a tool registers, then
used on every argument an agent sends and every result a page returns.

Pages are not trusted, so every check is bounded: a schema's size, depth and unfolded size, its
patterns matched in linear time (RE2), and a work budget for each value (`validation`); the
registration of many tools checked in threads of their own, in short fair turns the event loop
waits for (`definition_checks`)::

    from bridge.schemas import SchemaCheck, SchemaLimits, schema_problem

    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    assert schema_problem(schema, SchemaLimits()) is None
    check = SchemaCheck(schema)
    check.errors({"n": None}, "arguments")       # 'n: null is not of type "integer"'
"""

from bridge.schemas.definition_checks import Checks
from bridge.schemas.page_schemas import SchemaCheck, SchemaLimits, nesting, quick_check, schema_problem

__all__ = ["Checks", "SchemaCheck", "SchemaLimits", "nesting", "quick_check", "schema_problem"]
