"""JSON Schemas from pages: checked once when a tool registers, then used to check the
arguments agents send and the results pages return.

Pages are not trusted. A schema is refused when it is too large or too deep, is not valid
JSON Schema 2020-12, has a `pattern` that cannot be matched in linear time, has more patterns
in one `patternProperties` than the limit, unfolds into more subschemas than the limit once
its `$ref`s are followed (combinators nested through references multiply the work of every
check), or cannot check even `{}` within the work budget (it refers to itself without end).
Values are checked with `bridge.schemas._validation`: patterns matched with RE2, and a work budget for
each value, so no argument or result, however crafted, can stall the event loop.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sized
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

import re2
from referencing.exceptions import Unresolvable

from bridge.schemas import _validation as validation
from bridge.schemas._validation import VALIDATION_STEPS, Budget, OverBudget, Validator, charge, charge_error

__all__ = ["VALIDATION_STEPS", "SchemaCheck", "SchemaLimits", "Validator", "errors", "nesting", "quick_check",
           "schema_problem"]

# Checking a schema against the meta-schema is linear in its size: this many steps a byte
# covers the costliest shape (thousands of `{}`, ~50 steps a byte) twice over.
META_STEPS_PER_BYTE = 100
ERRORS_SHOWN = 5
ERRORS_SORTED = 50  # errors found before the first ERRORS_SHOWN (by path) are picked
ERROR_CHARS = 300  # of each error's message (it quotes the value, which may be large)


@dataclass(frozen=True)
class SchemaLimits:
    max_bytes: int = 64 * 1024  # of the schema's JSON
    max_depth: int = 32  # nested objects and arrays
    max_pattern_properties: int = 64  # patterns in one patternProperties: each is searched in every key
    max_subschemas: int = 50_000  # once $refs are followed; 2-way anyOf nested 16 deep is 131,071


def schema_problem(schema: dict[str, Any], limits: SchemaLimits) -> str | None:
    """Why the bridge will not use this schema, or None."""
    text = json.dumps(schema, separators=(",", ":"), sort_keys=True)
    size = len(text.encode())
    if size > limits.max_bytes:
        return f"it is {size} bytes, over the limit of {limits.max_bytes}"
    depth = nesting(schema)
    if depth > limits.max_depth:
        return f"it nests {depth} levels deep, over the limit of {limits.max_depth}"
    return _problems.get(text, limits)


class _ProblemCache:
    """What `_problem` said of recent schemas (checking one costs up to ~0.1 s, and pages
    re-register the same schemas often), keyed by a digest so that memory stays small."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._found: OrderedDict[bytes, str | None] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, text: str, limits: SchemaLimits) -> str | None:
        key = hashlib.blake2b(f"{limits!r}\n{text}".encode(), digest_size=16).digest()
        with self._lock:
            if key in self._found:
                self._found.move_to_end(key)
                return self._found[key]
        problem = _problem(json.loads(text), len(text), limits)
        with self._lock:
            self._found[key] = problem
            while len(self._found) > self._size:
                self._found.popitem(last=False)
        return problem


_problems = _ProblemCache(4096)


def _problem(schema: Any, size: int, limits: SchemaLimits) -> str | None:
    # The counts first: they cost a walk of the schema, the meta-schema and RE2 much more.
    for where, node in _subschemas(schema):
        patterns = node.get("patternProperties")
        if isinstance(patterns, dict) and len(patterns) > limits.max_pattern_properties:
            return (f"patternProperties at {where or '/'} has {len(patterns)} patterns, over the limit of "
                    f"{limits.max_pattern_properties} (each is searched in every key of every object)")
    unfolded = unfolded_size(schema, limits.max_subschemas)
    if unfolded > limits.max_subschemas:
        return (f"once its $refs are followed it has over {limits.max_subschemas:,} subschemas, the limit "
                "(anyOf, oneOf or allOf nested through $refs multiply the work of every check)")
    try:
        with Budget(META_STEPS_PER_BYTE * size + 10_000):
            problem = validation.schema_error(schema)
    except OverBudget:
        return "it is too costly to check against the JSON Schema 2020-12 meta-schema"
    if problem is not None:
        return problem
    for pattern in _patterns(schema):
        try:
            validation.regex(pattern)
        except re2.error:
            return (f"pattern {pattern!r} cannot be matched in linear time (lookaround, backreferences and "
                    "possessive forms are not supported); simplify it")
    try:  # a schema whose every check leads back to itself ({"allOf": [{"$ref": "#"}]}) never ends
        with Budget(VALIDATION_STEPS):
            next(validation.validator(schema).iter_errors({}), None)
    except RecursionError:
        return "it refers to itself without end"
    except OverBudget:
        return (f"checking even {{}} against it takes more than the work budget of {VALIDATION_STEPS:,} steps "
                "(it refers to itself without end, or nests anyOf, oneOf or allOf too deeply)")
    except Unresolvable:
        pass  # reported when an instance reaches the broken $ref
    return None


class SchemaCheck:
    """One schema, ready to check instances against.

    jsonschema takes 30-70 us even for `{"type": "object", "properties": {"text": {"type":
    "string"}}}`, on every call. Most tools' schemas use only a few plain keywords; for those a
    predicate built here once vouches for a valid instance in a few microseconds, in time
    linear in the instance. It only ever answers "surely valid" or "not sure": whatever it is
    not sure of goes through the budgeted validator, which has the last word and writes the
    reasons.
    """

    def __init__(self, schema: Any, steps: int = VALIDATION_STEPS) -> None:
        self.validator = validation.validator(schema)
        self.surely_valid = quick_check(schema)
        self.steps = steps

    def errors(self, instance: Any, whole: str) -> str | None:
        if self.surely_valid is not None and self.surely_valid(instance):
            return None
        return errors(self.validator, instance, whole, self.steps)


Predicate = Callable[[Any], bool]
# Keywords with no say on validity here: annotations, and `format`, which jsonschema only
# asserts when given a format checker (the bridge gives none).
_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "$comment", "deprecated", "readOnly",
                          "writeOnly", "$schema", "format", "contentMediaType", "contentEncoding"})
_SCALARS = (str, int, float, bool, type(None))
_SCALAR_TYPES = frozenset(_SCALARS)
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
    schema uses a keyword this does not handle (`$ref`, `anyOf`, `uniqueItems`, ...). Its work
    is linear in the instance: each value is checked by one predicate, of a bounded number of
    keywords, each of them linear in that value."""
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
    checks: dict[str, Predicate] = {}
    for name, sub in value.items():
        check = quick_check(sub)
        if check is None:
            return None
        checks[name] = check

    def within(x: Any) -> bool:
        if type(x) is not dict:
            return True
        if len(x) < len(checks):  # the smaller side, so the work stays linear in the instance
            return all(check(x[name]) for name in x if (check := checks.get(name)) is not None)
        return all(name not in x or check(x[name]) for name, check in checks.items())
    return within


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
    # An object with fewer keys than names misses one: not vouched for (and never more work than its keys).
    return lambda x: type(x) is not dict or (len(x) >= len(value) and all(name in x for name in value))


def _quick_items(value: Any, schema: dict) -> Predicate | None:
    check = quick_check(value)
    if check is None or "prefixItems" in schema:
        return None
    return lambda x: type(x) is not list or all(check(item) for item in x)


def _quick_enum(value: Any, schema: dict) -> Predicate | None:
    if not isinstance(value, list) or not all(isinstance(v, _SCALARS) for v in value):
        return None
    # Same type and equal: Python's True == 1, JSON Schema's true is not 1. One lookup, however many values.
    allowed = frozenset((type(v), v) for v in value)
    return lambda x: type(x) in _SCALAR_TYPES and (type(x), x) in allowed


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


def _quick_pattern(value: Any, schema: dict) -> Predicate | None:
    if not isinstance(value, str):
        return None
    try:
        compiled = validation.regex(value)
    except re2.error:
        return None
    return lambda x: type(x) is not str or compiled.search(x) is not None


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
    "pattern": _quick_pattern,
}


def errors(validator: Any, instance: Any, whole: str, steps: int = VALIDATION_STEPS) -> str | None:
    """A readable reason `instance` breaks the schema, or None; never raises. `whole` names
    the instance where an error has no path ("(arguments)"). The work is at most `steps`, or
    1.25 times that when the value breaks the schema and the reasons are worked out."""
    try:
        with Budget(steps) as budget:
            first = next(validator.iter_errors(instance), None)  # the common case: no errors to build or sort
        if first is None:
            return None
        found = [first]
        try:  # more reasons, and the first by path: with what is left, or a quarter more
            with Budget(max(steps - budget.spent, steps // 4)):
                more: list[Any] = []
                for error in validator.iter_errors(instance):
                    charge_error(error)
                    more.append(error)
                    if len(more) == ERRORS_SORTED:
                        break
                found = more or found
        except OverBudget:
            pass
    except OverBudget:
        return (f"{whole}: validation exceeded its work budget (limit {steps:,} steps): the value is too large, "
                "or the schema too costly, to check")
    except Unresolvable as exc:  # a $ref that points nowhere: nothing to check against
        return f"the schema cannot be used: {exc}"
    except RecursionError:
        return "the schema refers to itself too deeply to check this value"
    found.sort(key=lambda e: [str(p) for p in e.path])
    return "; ".join(f"{'/'.join(map(str, e.path)) or whole}: {_cut(in_json(e))}" for e in found[:ERRORS_SHOWN])


QUOTED_VALUES_MAX = 64  # of a value's items or keys, those an error's message may quote


def in_json(error: Any) -> str:
    """The error's message with the values it quotes written as JSON (`null`, `true`, `"a"`,
    `{"k": 1}`), not as Python writes them (`None`, `True`, `'a'`, `{'k': 1}`): agents and pages
    speak JSON. The values are the error's own: the instance (most messages begin with it), the
    schema keyword's value, and their items or keys (required names, unexpected properties)."""
    message: str = error.message
    instance, expected = error.instance, error.validator_value
    head = ""
    if message.startswith(quoted := repr(instance)):  # the instance may be large: matched once, not searched
        head, message = json.dumps(instance, ensure_ascii=False), message[len(quoted):]
    as_json: dict[str, str] = {}
    for value in _quoted_values(instance, expected):
        if isinstance(value, int | float) and not isinstance(value, bool):
            continue  # written alike
        try:
            quoted = repr(value)
            if len(quoted) <= ERROR_CHARS:
                as_json.setdefault(quoted, json.dumps(value, ensure_ascii=False))
        except (TypeError, ValueError, RecursionError):
            continue
    if as_json:  # in one pass, longest first, so that no value's JSON is rewritten again
        pattern = "|".join(map(re.escape, sorted(as_json, key=len, reverse=True)))
        message = re.sub(pattern, lambda found: as_json[found.group()], message)
    return head + message


def _quoted_values(instance: Any, expected: Any) -> Iterator[Any]:
    yield instance
    yield expected
    for value in (instance, expected):
        if isinstance(value, list):
            yield from value[:QUOTED_VALUES_MAX]
        elif isinstance(value, dict):
            keys = list(value)[:QUOTED_VALUES_MAX]
            yield from keys
            if value is expected:  # dependentRequired: {name: [names it needs]}
                yield from (item for key in keys if isinstance(value[key], list)
                            for item in value[key][:QUOTED_VALUES_MAX])


def _cut(text: str) -> str:
    """The middle of a long message goes: it is the value quoted, the reason is at the end."""
    if len(text) <= ERROR_CHARS:
        return text
    half = ERROR_CHARS // 2
    return f"{text[:half]}…{text[-half:]}"


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
        charge(1 + len(children))  # steps of work, as in validation: they count towards checkpoints
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children)
    return deepest


# Keywords whose values are data, not subschemas: their keys are never keywords.
_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples", "required", "dependentRequired", "$comment",
                            "title", "description"})


def _subschemas(schema: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every object in `schema` that may be a subschema, with its JSON pointer."""
    stack: list[tuple[str, Any]] = [("", schema)]
    while stack:
        where, node = stack.pop()
        if isinstance(node, (dict, list)):
            charge(1 + len(node))
        if isinstance(node, dict):
            yield where, node
            stack.extend((f"{where}/{_escaped(key)}", value) for key, value in node.items()
                         if key not in _DATA_KEYWORDS and isinstance(value, (dict, list)))
        elif isinstance(node, list):
            stack.extend((f"{where}/{index}", value) for index, value in enumerate(node)
                         if isinstance(value, (dict, list)))


def _escaped(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _patterns(schema: Any) -> Iterator[str]:
    for _, node in _subschemas(schema):
        if isinstance(node.get("pattern"), str):
            yield node["pattern"]
        if isinstance(node.get("patternProperties"), dict):
            yield from node["patternProperties"]


def unfolded_size(schema: Any, cap: int) -> int:
    """How many subschemas `schema` has once each local `$ref` ("#", "#/...") is replaced by
    what it points to; a reference back into its own chain counts once. Counting stops past
    `cap`. References this cannot follow (anchors, other documents, `$id` scopes) count once:
    this bounds the schemas a page registers, the work budget bounds every check."""
    done: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[Any, Iterator[Any], int]] = [(schema, _unfolding(schema, schema), 1)]
    on_path.add(id(schema))
    while True:
        node, children, total = stack[-1]
        child = next(children, None)
        if child is None:
            stack.pop()
            on_path.discard(id(node))
            done[id(node)] = total
            if not stack:
                return total
            parent, siblings, so_far = stack[-1]
            stack[-1] = (parent, siblings, min(so_far + total, cap + 1))
        elif id(child) in done or id(child) in on_path:
            stack[-1] = (node, children, min(total + done.get(id(child), 1), cap + 1))
        else:
            on_path.add(id(child))
            stack.append((child, _unfolding(child, schema), 1 if isinstance(child, dict) else 0))


def _unfolding(node: Any, root: Any) -> Iterator[Any]:
    """The children of `node` in the unfolded schema: its subschemas, and what its `$ref` names."""
    charge(1 + len(node))
    if isinstance(node, list):
        yield from (item for item in node if isinstance(item, (dict, list)))
        return
    for key, value in node.items():
        if key == "$ref" and isinstance(value, str):
            target = _local_target(root, value)
            if target is not None:
                yield target
        elif key not in _DATA_KEYWORDS and isinstance(value, (dict, list)):
            yield value


def _local_target(root: Any, ref: str) -> Any:
    if ref != "#" and not ref.startswith("#/"):
        return None
    node = root
    for part in ref[2:].split("/") if ref != "#" else ():
        part = unquote(part).replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node if isinstance(node, (dict, list)) else None
