"""JSON Schemas from pages: checked once when a tool registers, then used to check the
arguments agents send and the results pages return.

Pages are not trusted. A schema is refused when it is too large or too deep, is not valid
JSON Schema 2020-12, refers to itself without end, or has a `pattern` that cannot be matched
in linear time. Patterns are matched with RE2, so no argument or result, however crafted,
can stall the event loop on a backtracking regular expression.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sized
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


class SchemaCheck:
    """One schema, ready to check instances against.

    jsonschema takes 30-70 us even for `{"type": "object", "properties": {"text": {"type":
    "string"}}}`, on every call. Most tools' schemas use only a few plain keywords; for those a
    predicate built here once vouches for a valid instance in a few microseconds. It only ever
    answers "surely valid" or "not sure": whatever it is not sure of goes through jsonschema,
    which has the last word and writes the reasons.
    """

    def __init__(self, schema: Any) -> None:
        self.validator = Validator(schema)
        self.surely_valid = quick_check(schema)

    def errors(self, instance: Any, whole: str) -> str | None:
        if self.surely_valid is not None and self.surely_valid(instance):
            return None
        return errors(self.validator, instance, whole)


Predicate = Callable[[Any], bool]
# Keywords with no say on validity here: annotations, and `format`, which jsonschema only
# asserts when given a format checker (the bridge gives none).
_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "$comment", "deprecated", "readOnly",
                          "writeOnly", "$schema", "format", "contentMediaType", "contentEncoding"})
_SCALARS = (str, int, float, bool, type(None))
_IS_TYPE: dict[str, Predicate] = {
    "string": lambda x: type(x) is str,
    "integer": lambda x: type(x) is int,  # 1.0 is an integer to JSON Schema: not vouched for, jsonschema decides
    "number": lambda x: type(x) is int or type(x) is float,  # never bool: JSON Schema's true is no number
    "boolean": lambda x: type(x) is bool,
    "null": lambda x: x is None,
    "object": lambda x: type(x) is dict,
    "array": lambda x: type(x) is list,
}


def quick_check(schema: Any) -> Predicate | None:
    """A predicate true only of instances valid against `schema` (2020-12), or None when the
    schema uses a keyword this does not handle (`$ref`, `anyOf`, `pattern`, ...)."""
    if schema is True or schema == {}:
        return lambda x: True
    if schema is False:
        return lambda x: False
    if not isinstance(schema, dict):
        return None
    checks: list[Predicate] = []
    for keyword, value in schema.items():
        if keyword in _ANNOTATIONS:
            continue
        make = _QUICK_KEYWORDS.get(keyword)
        check = make(value, schema) if make is not None else None
        if check is None:
            return None
        checks.append(check)
    if len(checks) == 1:
        return checks[0]
    return lambda x: all(check(x) for check in checks)


def _quick_type(value: Any, schema: dict) -> Predicate | None:
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not names or not all(n in _IS_TYPE for n in names):
        return None
    tests = [_IS_TYPE[n] for n in names]
    return tests[0] if len(tests) == 1 else lambda x: any(t(x) for t in tests)


def _quick_properties(value: Any, schema: dict) -> Predicate | None:
    if not isinstance(value, dict):
        return None
    pairs: list[tuple[str, Predicate]] = []
    for name, sub in value.items():
        check = quick_check(sub)
        if check is None:
            return None
        pairs.append((name, check))
    return lambda x: type(x) is not dict or all(name not in x or check(x[name]) for name, check in pairs)


def _quick_additional(value: Any, schema: dict) -> Predicate | None:
    named = schema.get("properties", {})
    if not isinstance(named, dict) or "patternProperties" in schema:
        return None
    if value is False:
        return lambda x: type(x) is not dict or all(name in named for name in x)
    check = quick_check(value)
    if check is None:
        return None
    return lambda x: type(x) is not dict or all(check(v) for name, v in x.items() if name not in named)


def _quick_required(value: Any, schema: dict) -> Predicate | None:
    if not isinstance(value, list):
        return None
    return lambda x: type(x) is not dict or all(name in x for name in value)


def _quick_items(value: Any, schema: dict) -> Predicate | None:
    check = quick_check(value)
    if check is None or "prefixItems" in schema:
        return None
    return lambda x: type(x) is not list or all(check(item) for item in x)


def _quick_enum(value: Any, schema: dict) -> Predicate | None:
    if not isinstance(value, list) or not all(isinstance(v, _SCALARS) for v in value):
        return None
    # Same type and equal: Python's True == 1, JSON Schema's true is not 1.
    return lambda x: any(type(x) is type(v) and x == v for v in value)


def _quick_bound(compare: Callable[[Any, Any], bool]) -> Callable[[Any, dict], Predicate | None]:
    def make(value: Any, schema: dict) -> Predicate | None:
        if type(value) not in (int, float):
            return None
        return lambda x: (type(x) is not int and type(x) is not float) or compare(x, value)
    return make


def _quick_length(compare: Callable[[int, int], bool], kind: type[Sized]) -> Callable[[Any, dict], Predicate | None]:
    def make(value: Any, schema: dict) -> Predicate | None:
        if type(value) is not int:
            return None
        def within(x: Any) -> bool:
            return type(x) is not kind or compare(len(x), value)
        return within
    return make


_QUICK_KEYWORDS: dict[str, Callable[[Any, dict], Predicate | None]] = {
    "type": _quick_type,
    "properties": _quick_properties,
    "additionalProperties": _quick_additional,
    "required": _quick_required,
    "items": _quick_items,
    "enum": _quick_enum,
    "const": lambda value, schema: _quick_enum([value], schema),
    "minimum": _quick_bound(lambda x, v: x >= v),
    "maximum": _quick_bound(lambda x, v: x <= v),
    "exclusiveMinimum": _quick_bound(lambda x, v: x > v),
    "exclusiveMaximum": _quick_bound(lambda x, v: x < v),
    "minLength": _quick_length(lambda n, v: n >= v, str),
    "maxLength": _quick_length(lambda n, v: n <= v, str),
    "minItems": _quick_length(lambda n, v: n >= v, list),
    "maxItems": _quick_length(lambda n, v: n <= v, list),
}


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
