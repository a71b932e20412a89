"""JSON Schemas from pages: checked once when a tool registers, then used to check the
arguments agents send and the results pages return.

Pages are not trusted. A schema is refused when it is too large or too deep, is not valid
JSON Schema 2020-12, refers to itself without end, or has a `pattern` that cannot be matched
in linear time. Patterns are matched with RE2, so no argument or result, however crafted,
can stall the event loop on a backtracking regular expression.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import jsonschema
import re2
from jsonschema import ValidationError
from referencing.exceptions import Unresolvable

_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # a refused pattern is reported to the page, not to stderr


@dataclass(frozen=True)
class SchemaLimits:
    max_bytes: int = 64 * 1024  # of the schema's JSON
    max_depth: int = 32  # nested objects and arrays


def schema_problem(schema: dict[str, Any], limits: SchemaLimits) -> str | None:
    """Why the bridge will not use this schema, or None."""
    size = len(json.dumps(schema, separators=(",", ":")).encode())
    if size > limits.max_bytes:
        return f"it is {size} bytes, over the limit of {limits.max_bytes}"
    depth = nesting(schema)
    if depth > limits.max_depth:
        return f"it nests {depth} levels deep, over the limit of {limits.max_depth}"
    return _problem(json.dumps(schema, sort_keys=True))


@lru_cache(maxsize=4096)
def _problem(schema_json: str) -> str | None:
    """Costs ~1 ms (the 2020-12 meta-schema); pages re-register the same schemas often."""
    schema = json.loads(schema_json)
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        return exc.message
    for pattern in _patterns(schema):
        try:
            _regex(pattern)
        except re2.error:
            return (f"pattern {pattern!r} cannot be matched in linear time (lookaround, backreferences and "
                    "possessive forms are not supported); simplify it")
    try:  # a schema whose every check leads back to itself ({"allOf": [{"$ref": "#"}]}) never ends
        any(Validator(schema).iter_errors({}))
    except RecursionError:
        return "it refers to itself without end"
    except Unresolvable:
        pass  # reported when an instance reaches the broken $ref
    return None


def errors(validator: Any, instance: Any, whole: str) -> str | None:
    """A readable reason `instance` breaks the schema, or None; never raises."""
    try:
        if validator.is_valid(instance):  # the common case, without building and sorting errors
            return None
        found = sorted(validator.iter_errors(instance), key=lambda e: [str(p) for p in e.path])
    except Unresolvable as exc:  # a $ref that points nowhere: nothing to check against
        return f"the schema cannot be used: {exc}"
    except RecursionError:
        return "the schema refers to itself too deeply to check this value"
    if not found:
        return None
    return "; ".join(f"{'/'.join(map(str, e.path)) or whole}: {e.message}" for e in found[:5])


def nesting(value: Any) -> int:
    """How deeply objects and arrays nest; iterative, so no input can exhaust the stack."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = list(item.values())
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children)
    return deepest


def _patterns(schema: Any) -> Iterator[str]:
    stack = [schema]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if isinstance(item.get("pattern"), str):
                yield item["pattern"]
            if isinstance(item.get("patternProperties"), dict):
                yield from item["patternProperties"]
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


@lru_cache(maxsize=1024)
def _regex(pattern: str) -> Any:
    return re2.compile(pattern, options=_RE2_OPTIONS)


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not _regex(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, patterns: dict[str, Any], instance: Any, schema: Any
                        ) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if _regex(pattern).search(key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


# JSON Schema 2020-12 with RE2 in place of Python's backtracking `re`.
Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator, {"pattern": _pattern, "patternProperties": _pattern_properties})
