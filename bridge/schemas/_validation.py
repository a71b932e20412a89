"""Checking a value against a page's JSON Schema, in bounded work.

This is jsonschema's Draft 2020-12 validator, changed wherever a crafted value or schema
could make it run long:

- patterns are matched with RE2, also where jsonschema would use Python's backtracking `re`
  (`additionalProperties` and `unevaluatedProperties` beside `patternProperties`), and a
  subschema naming another draft in `$schema` is still checked by this validator;
- `uniqueItems` and `enum` compare hashable canonical forms (1 == 1.0, true != 1, key order
  irrelevant, as JSON Schema says) instead of every pair;
- every subschema applied, item or key visited, RE2 search and error written is counted
  against the work budget of the validation running in this thread; once it is spent the
  validation stops with `OverBudget`. A budget bounds the time and the memory one validation
  may take, whatever the schema and the value;
- every `CHECKPOINT_STEPS` steps done in a thread, in budgets or not, the thread's checkpoint
  (see `checkpoints`) is called: a thread checking for others can pause there mid-validation.

Nothing here knows where schemas or values come from.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from fractions import Fraction
from typing import Any

import attrs
import jsonschema
import jsonschema_specifications  # type: ignore[import-untyped]
import re2
from jsonschema import ValidationError

_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # a refused pattern is reported to the page, not to stderr

# What one step of work is: the weights make steps of every kind take about as long (applying
# a subschema is jsonschema's costliest operation; bench/validation_cost.py measures them).
DESCEND_STEPS = 40  # applying a subschema, plus KEYWORD_STEPS per keyword in it
KEYWORD_STEPS = 8
REF_STEPS = 40  # resolving a $ref or $dynamicRef
ERROR_STEPS = 24  # writing an error, plus one step per MESSAGE_CHARS characters of its message
MESSAGE_CHARS = 16
SEARCH_STEPS = 12  # an RE2 search, plus one step per MATCH_CHARS characters searched
MATCH_CHARS = 256
COMPILE_CHARS = 2  # compiling a pattern not in the cache: a step per COMPILE_CHARS characters
NODE_STEPS = 4  # an item or key hashed or compared (uniqueItems, enum, const)
# One value against one schema: small enough that checking it keeps no other call waiting
# more than the 50 ms docs/protocol.md promises.
VALIDATION_STEPS = 100_000


class OverBudget(Exception):
    """The work budget of the validation running in this thread is spent."""


# Steps between two calls of a thread's checkpoint: well under a millisecond of work.
CHECKPOINT_STEPS = 2_000
_UNBOUNDED = 1 << 62


class _Meter:
    """One thread's count of steps. Only `left` changes on every charge: the steps until the
    next stop, which is either a checkpoint or the end of the budget, whichever comes first."""

    __slots__ = ("left", "refilled", "budget", "unchecked", "checkpoint")

    def __init__(self) -> None:
        self.left = self.refilled = CHECKPOINT_STEPS  # `refilled`: what `left` was set to at the last stop
        self.budget = _UNBOUNDED  # of the budget in force, what was left at the last stop
        self.unchecked = 0  # steps since the last checkpoint, up to the last stop
        self.checkpoint: Callable[[], None] | None = None

    def settle(self) -> None:
        """Take the steps spent since the last stop out of the budget and the checkpoint's count."""
        spent = self.refilled - self.left
        self.budget -= spent
        self.unchecked += spent
        self.refilled = self.left = 0

    def refill(self) -> None:
        due = CHECKPOINT_STEPS - self.unchecked
        budget = self.budget
        self.refilled = self.left = budget if budget < due else due if due > 0 else 0


class _Meters(threading.local):
    def __init__(self) -> None:
        self.meter = _Meter()  # a plain object: its attributes are quicker to reach than a local's


_meters = _Meters()


def charge(steps: int) -> None:
    meter = _meters.meter
    meter.left -= steps
    if meter.left < 0:
        _stop(meter)


def _stop(meter: _Meter) -> None:
    """`left` ran out: the budget is spent (`OverBudget`), or it is time for a checkpoint."""
    meter.settle()
    if meter.budget < 0:
        raise OverBudget
    if meter.unchecked >= CHECKPOINT_STEPS:
        meter.unchecked = 0
        if meter.checkpoint is not None:
            meter.checkpoint()
    meter.refill()


class checkpoints:
    """`with checkpoints(pause):` the validations inside, in this thread, call `pause()` every
    `CHECKPOINT_STEPS` steps, where it may block (the thread is paused mid-validation, holding
    no lock) or raise (which ends the validation as any error would)."""

    def __init__(self, pause: Callable[[], None]) -> None:
        self.pause = pause

    def __enter__(self) -> None:
        meter = _meters.meter
        self._saved = meter.checkpoint
        meter.checkpoint = self.pause

    def __exit__(self, *exc_info: object) -> None:
        _meters.meter.checkpoint = self._saved


def charge_error(error: ValidationError) -> None:
    charge(ERROR_STEPS + len(error.message) // MESSAGE_CHARS)


def _applying(schema: Any) -> int:
    return DESCEND_STEPS + KEYWORD_STEPS * len(schema) if isinstance(schema, dict) else DESCEND_STEPS


class Budget:
    """`with Budget(steps):` the validations inside may do `steps` steps of work in all; past
    that `charge` raises `OverBudget`. `spent` says how much they did. A budget inside another
    stands for itself: what it spends is not taken from the outer one."""

    __slots__ = ("steps", "spent", "_saved")

    def __init__(self, steps: int) -> None:
        self.steps = steps
        self.spent = 0

    # Entering and leaving settle and refill the meter (inline: a call checking a value goes through both).

    def __enter__(self) -> Budget:
        meter = _meters.meter
        spent = meter.refilled - meter.left
        meter.unchecked = unchecked = meter.unchecked + spent
        self._saved = meter.budget - spent
        meter.budget = steps = self.steps
        due = CHECKPOINT_STEPS - unchecked
        meter.refilled = meter.left = steps if steps < due else due if due > 0 else 0
        return self

    def __exit__(self, *exc_info: object) -> None:
        meter = _meters.meter
        spent = meter.refilled - meter.left
        meter.unchecked = unchecked = meter.unchecked + spent
        self.spent = self.steps - meter.budget + spent  # past `steps` by the charge that spent it
        meter.budget = budget = self._saved
        due = CHECKPOINT_STEPS - unchecked
        meter.refilled = meter.left = budget if budget < due else due if due > 0 else 0


# --- values as JSON Schema compares them --------------------------------------------------

_TRUE, _FALSE = object(), object()  # true and false are not the numbers 1 and 0


def canonical(value: Any) -> Any:
    """A hashable form of a JSON value, equal for values JSON Schema calls equal."""
    if value is True:
        return _TRUE
    if value is False:
        return _FALSE
    if isinstance(value, dict):
        charge(NODE_STEPS * (1 + len(value)))
        return frozenset((key, canonical(item)) for key, item in value.items())
    if isinstance(value, list):
        charge(NODE_STEPS * (1 + len(value)))
        return tuple(canonical(item) for item in value)
    return value  # str, int, float, None: 1 == 1.0 and hash(1) == hash(1.0)


def equal(one: Any, two: Any) -> bool:
    """JSON Schema equality; the work is bounded by the smaller value."""
    pairs = [(one, two)]
    while pairs:
        a, b = pairs.pop()
        if isinstance(a, dict):
            if not isinstance(b, dict) or len(a) != len(b):
                return False
            charge(NODE_STEPS * (1 + len(a)))
            for key, item in a.items():
                if key not in b:
                    return False
                pairs.append((item, b[key]))
        elif isinstance(a, list):
            if not isinstance(b, list) or len(a) != len(b):
                return False
            charge(NODE_STEPS * (1 + len(a)))
            pairs.extend(zip(a, b))
        elif isinstance(b, (dict, list)):
            return False
        elif isinstance(a, bool) or isinstance(b, bool):
            if a is not b:
                return False
        elif a != b:
            return False
    return True


class Enum(list[Any]):
    """An `enum` list with its scalar members hashed once, so a value is one lookup away."""

    __slots__ = ("scalars", "containers")

    def __init__(self, values: Iterable[Any]) -> None:
        super().__init__(values)
        self.scalars = frozenset(canonical(v) for v in self if not isinstance(v, (dict, list)))
        self.containers = [v for v in self if isinstance(v, (dict, list))]


def prepared(schema: Any) -> Any:
    """A copy of `schema` to validate with: each `enum` list becomes an `Enum`. Its steps count
    towards checkpoints, not towards the budget in force (bounded by the schema's size, checked
    before)."""
    with Budget(_UNBOUNDED):
        return _prepared(schema)


def _prepared(schema: Any) -> Any:
    if isinstance(schema, dict):
        charge(1 + len(schema))
        copy = {key: _prepared(value) for key, value in schema.items()}
        if isinstance(copy.get("enum"), list):
            copy["enum"] = Enum(copy["enum"])
        return copy
    if isinstance(schema, list):
        charge(1 + len(schema))
        return [_prepared(item) for item in schema]
    return schema


# --- patterns --------------------------------------------------------------------------------

_REGEX_CACHE_SIZE = 4096
_regexes: dict[str, Any] = {}
_regexes_lock = threading.Lock()


def regex(pattern: str) -> Any:
    """The pattern compiled by RE2 (cached); re2.error if RE2 cannot match it in linear time."""
    found = _regexes.get(pattern)
    if found is not None:
        return found
    charge(SEARCH_STEPS + len(pattern) // COMPILE_CHARS)
    compiled = re2.compile(pattern, options=_RE2_OPTIONS)
    with _regexes_lock:
        while len(_regexes) >= _REGEX_CACHE_SIZE:
            del _regexes[next(iter(_regexes))]
        _regexes[pattern] = compiled
    return compiled


def _search(compiled: Any, text: str) -> bool:
    charge(SEARCH_STEPS + len(text) // MATCH_CHARS)
    return compiled.search(text) is not None


# --- keywords ------------------------------------------------------------------------------
# Each has jsonschema's signature and messages; see jsonschema/_keywords.py for the originals.

Errors = Iterator[ValidationError]
_UPSTREAM = jsonschema.Draft202012Validator.VALIDATORS


def _collected(errors: Iterator[ValidationError]) -> list[ValidationError]:
    found = []
    for error in errors:
        charge_error(error)
        found.append(error)
    return found


def _passes(errors: Iterator[ValidationError]) -> bool:
    error = next(errors, None)
    if error is None:
        return True
    charge_error(error)
    return False


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Errors:
    if isinstance(instance, str) and not _search(regex(pattern), instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, patterns: dict[str, Any], instance: Any, schema: Any) -> Errors:
    if not isinstance(instance, dict):
        return
    for pattern, subschema in patterns.items():
        compiled = regex(pattern)
        for key, value in instance.items():
            if _search(compiled, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _not_named(instance: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    """The keys of `instance` neither `properties` nor `patternProperties` name."""
    named = schema.get("properties", {})
    patterns = [regex(p) for p in schema.get("patternProperties", {})]
    charge(NODE_STEPS * len(instance))
    return [key for key in instance
            if key not in named and not any(_search(compiled, key) for compiled in patterns)]


def _additional_properties(validator: Any, extra_schema: Any, instance: Any, schema: Any) -> Errors:
    if not isinstance(instance, dict):
        return
    extras = _not_named(instance, schema)
    if isinstance(extra_schema, dict):
        for extra in extras:
            yield from validator.descend(instance[extra], extra_schema, path=extra)
    elif not extra_schema and extras:
        if "patternProperties" in schema:
            verb = "does" if len(extras) == 1 else "do"
            joined = ", ".join(repr(each) for each in sorted(extras))
            patterns = ", ".join(repr(each) for each in sorted(schema["patternProperties"]))
            yield ValidationError(f"{joined} {verb} not match any of the regexes: {patterns}")
        else:
            yield ValidationError("Additional properties are not allowed (%s %s unexpected)"
                                  % _extras_message(sorted(extras, key=str)))


def _extras_message(extras: list[Any]) -> tuple[str, str]:
    return ", ".join(repr(extra) for extra in extras), "was" if len(extras) == 1 else "were"


def _properties(validator: Any, properties: dict[str, Any], instance: Any, schema: Any) -> Errors:
    if not isinstance(instance, dict):
        return
    if len(instance) < len(properties):  # the smaller side: an object of few keys, a schema of many
        charge(NODE_STEPS * len(instance))
        for name, value in instance.items():
            if name in properties:
                yield from validator.descend(value, properties[name], path=name, schema_path=name)
    else:
        charge(NODE_STEPS * len(properties))
        for name, subschema in properties.items():
            if name in instance:
                yield from validator.descend(instance[name], subschema, path=name, schema_path=name)


def _unique_items(validator: Any, unique: Any, instance: Any, schema: Any) -> Errors:
    if not unique or not isinstance(instance, list):
        return
    seen: dict[Any, int] = {}
    for index, item in enumerate(instance):
        first = seen.setdefault(canonical(item), index)
        if first != index:
            yield ValidationError(f"{instance!r} has non-unique elements (items {first} and {index} are equal)")
            return


def _enum(validator: Any, enums: Any, instance: Any, schema: Any) -> Errors:
    if not isinstance(enums, Enum):  # reached without `prepared` (a $ref into another document)
        charge(NODE_STEPS * len(enums))
        enums = Enum(enums)
    if isinstance(instance, (dict, list)):
        charge(NODE_STEPS * len(enums.containers))
        if any(equal(instance, member) for member in enums.containers):
            return
    elif canonical(instance) in enums.scalars:
        return
    yield ValidationError(f"{instance!r} is not one of {enums!r}")


def _const(validator: Any, const: Any, instance: Any, schema: Any) -> Errors:
    if not equal(instance, const):
        yield ValidationError(f"{const!r} was expected")


def _any_of(validator: Any, any_of: list[Any], instance: Any, schema: Any) -> Errors:
    all_errors = []
    for index, subschema in enumerate(any_of):
        errors = _collected(validator.descend(instance, subschema, schema_path=index))
        if not errors:
            break
        all_errors.extend(errors)
    else:
        yield ValidationError(f"{instance!r} is not valid under any of the given schemas", context=all_errors)


def _one_of(validator: Any, one_of: list[Any], instance: Any, schema: Any) -> Errors:
    subschemas = enumerate(one_of)
    all_errors = []
    for index, subschema in subschemas:
        errors = _collected(validator.descend(instance, subschema, schema_path=index))
        if not errors:
            first_valid = subschema
            break
        all_errors.extend(errors)
    else:
        yield ValidationError(f"{instance!r} is not valid under any of the given schemas", context=all_errors)
    more_valid = [each for _, each in subschemas if validator.evolve(schema=each).is_valid(instance)]
    if more_valid:
        more_valid.append(first_valid)
        reprs = ", ".join(repr(each) for each in more_valid)
        yield ValidationError(f"{instance!r} is valid under each of {reprs}")


def _multiple_of(validator: Any, divisor: Any, instance: Any, schema: Any) -> Errors:
    if not validator.is_type(instance, "number"):
        return
    if isinstance(divisor, float):
        try:  # a huge integer divided by a float overflows: exact arithmetic then
            quotient = instance / divisor
            failed = int(quotient) != quotient
        except OverflowError:
            failed = (Fraction(instance) / Fraction(divisor)).denominator != 1
    else:
        failed = bool(instance % divisor)
    if failed:
        yield ValidationError(f"{instance!r} is not a multiple of {divisor}")


def _evaluated_indexes(validator: Any, instance: list[Any], schema: Any) -> set[int]:
    """The items some keyword of `schema` evaluated (for unevaluatedItems)."""
    charge(_applying(schema))
    if not isinstance(schema, dict):
        return set()
    if "items" in schema:
        charge(NODE_STEPS * len(instance))
        return set(range(len(instance)))
    evaluated: set[int] = _evaluated_through_applicators(validator, instance, schema, _evaluated_indexes)
    if "prefixItems" in schema:
        evaluated.update(range(min(len(schema["prefixItems"]), len(instance))))
    for keyword in ("contains", "unevaluatedItems"):
        if keyword in schema:
            check = validator.evolve(schema=schema[keyword])
            evaluated.update(index for index, item in enumerate(instance) if check.is_valid(item))
    return evaluated


def _evaluated_keys(validator: Any, instance: dict[str, Any], schema: Any) -> set[str]:
    """The keys some keyword of `schema` evaluated (for unevaluatedProperties)."""
    charge(_applying(schema))
    if not isinstance(schema, dict):
        return set()
    evaluated: set[str] = _evaluated_through_applicators(validator, instance, schema, _evaluated_keys)
    properties = schema.get("properties")
    if isinstance(properties, dict):
        charge(NODE_STEPS * min(len(properties), len(instance)))
        evaluated |= properties.keys() & instance.keys()
    for keyword in ("additionalProperties", "unevaluatedProperties"):
        if keyword in schema:
            evaluated.update(key for key, value in instance.items()
                             if _passes(validator.descend(value, schema[keyword])))
    if "patternProperties" in schema:
        for pattern in schema["patternProperties"]:
            compiled = regex(pattern)
            evaluated.update(key for key in instance if _search(compiled, key))
    for name, subschema in schema.get("dependentSchemas", {}).items():
        if name in instance:
            evaluated |= _evaluated_keys(validator, instance, subschema)
    return evaluated


def _evaluated_through_applicators(validator: Any, instance: Any, schema: dict[str, Any],
                                   evaluated_by: Callable[[Any, Any, Any], set[Any]]) -> set[Any]:
    """What the subschemas `schema` applies to the whole instance evaluated ($ref, if/then/else,
    allOf/oneOf/anyOf), as `evaluated_by` (items or keys) finds in each."""
    evaluated: set[Any] = set()
    for keyword in ("$ref", "$dynamicRef"):
        if keyword in schema:
            resolved = validator._resolver.lookup(schema[keyword])
            evaluated |= evaluated_by(validator.evolve(schema=resolved.contents, _resolver=resolved.resolver),
                                      instance, resolved.contents)
    if "if" in schema:
        if validator.evolve(schema=schema["if"]).is_valid(instance):
            evaluated |= evaluated_by(validator, instance, schema["if"])
            if "then" in schema:
                evaluated |= evaluated_by(validator, instance, schema["then"])
        elif "else" in schema:
            evaluated |= evaluated_by(validator, instance, schema["else"])
    for keyword in ("allOf", "oneOf", "anyOf"):
        for subschema in schema.get(keyword, ()):
            if _passes(validator.descend(instance, subschema)):
                evaluated |= evaluated_by(validator, instance, subschema)
    return evaluated


def _unevaluated_items(validator: Any, unevaluated: Any, instance: Any, schema: Any) -> Errors:
    if not isinstance(instance, list):
        return
    evaluated = _evaluated_indexes(validator, instance, schema)
    charge(NODE_STEPS * len(instance))
    rest = [item for index, item in enumerate(instance) if index not in evaluated]
    if rest:
        yield ValidationError("Unevaluated items are not allowed (%s %s unexpected)" % _extras_message(rest))


def _unevaluated_properties(validator: Any, unevaluated: Any, instance: Any, schema: Any) -> Errors:
    if not isinstance(instance, dict):
        return
    evaluated = _evaluated_keys(validator, instance, schema)
    refused = []
    for name in instance:
        if name not in evaluated:
            for error in validator.descend(instance[name], unevaluated, path=name, schema_path=name):
                charge_error(error)
                refused.append(name)
    if refused:
        if unevaluated is False:
            yield ValidationError("Unevaluated properties are not allowed (%s %s unexpected)"
                                  % _extras_message(sorted(refused, key=str)))
        else:
            yield ValidationError("Unevaluated properties are not valid under the given schema (%s %s unevaluated "
                                  "and invalid)" % _extras_message(refused))


def _charged(keyword: str, cost: Callable[[Any, Any], int]) -> Callable[..., Any]:
    """jsonschema's own `keyword`, charged `cost(value, instance)` steps before it runs."""
    upstream = _UPSTREAM[keyword]

    def checked(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        charge(cost(value, instance))
        return upstream(validator, value, instance, schema)
    return checked


_KEYWORDS: dict[str, Callable[..., Any]] = {
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
    "properties": _properties,
    "uniqueItems": _unique_items,
    "enum": _enum,
    "const": _const,
    "anyOf": _any_of,
    "oneOf": _one_of,
    "multipleOf": _multiple_of,
    "unevaluatedItems": _unevaluated_items,
    "unevaluatedProperties": _unevaluated_properties,
    # jsonschema's own, charged for their own work first (what they apply is charged by _descend).
    "$ref": _charged("$ref", lambda value, instance: REF_STEPS),
    "$dynamicRef": _charged("$dynamicRef", lambda value, instance: REF_STEPS),
    "dependentSchemas": _charged("dependentSchemas", lambda value, instance: NODE_STEPS * len(value)),
    "required": _charged("required", lambda value, instance: NODE_STEPS * len(value)),
    "dependentRequired": _charged("dependentRequired", lambda value, instance: NODE_STEPS * (len(value) + sum(
        len(names) for names in value.values() if isinstance(names, list)))),
}

# JSON Schema 2020-12 as jsonschema checks it, with the keywords above.
Validator: Any = jsonschema.validators.extend(jsonschema.Draft202012Validator, _KEYWORDS)
_upstream_descend = Validator.descend
_EVOLVE_FIELDS = [(f.name, f.alias) for f in attrs.fields(Validator) if f.init]


def _descend(self: Any, instance: Any, schema: Any, path: Any = None, schema_path: Any = None,
             resolver: Any = None) -> Any:
    meter = _meters.meter  # charge(_applying(schema)), inline: this runs for every subschema applied
    meter.left -= DESCEND_STEPS + KEYWORD_STEPS * len(schema) if type(schema) is dict else DESCEND_STEPS
    if meter.left < 0:
        _stop(meter)
    if resolver is None and type(schema) is dict and "$id" not in schema:
        # What jsonschema's `in_subresource` answers for a subschema without $id, without building
        # a resource to ask it (a good part of what applying a subschema costs).
        resolver = self._resolver
    return _upstream_descend(self, instance, schema, path, schema_path, resolver)


def _is_valid(self: Any, instance: Any) -> bool:
    charge(_applying(self.schema))
    return _passes(self.iter_errors(instance))


def _evolve(self: Any, **changes: Any) -> Any:
    # jsonschema's evolve picks the validator class a subschema's `$schema` names; this one
    # stays, so every subschema is checked with RE2 and within the budget.
    changes.setdefault("schema", self.schema)
    for name, alias in _EVOLVE_FIELDS:
        if alias not in changes:
            changes[alias] = getattr(self, name)
    return Validator(**changes)


Validator.descend = _descend
Validator.is_valid = _is_valid
Validator.evolve = _evolve


def validator(schema: Any) -> Any:
    """A validator of `schema` (a copy `prepared` for it)."""
    return Validator(prepared(schema))


# --- the 2020-12 meta-schema, without $dynamicRef ------------------------------------------

def _static_meta_schema() -> dict[str, Any]:
    """The 2020-12 meta-schema as one document, its vocabularies merged and `$dynamicRef:
    "#meta"` made `$ref: "#"`: where it checks a schema (whose own keywords are data here),
    the dynamic scope always ends at the meta-schema itself, so the two say the same, but
    resolving the dynamic references costs jsonschema about ten times the check itself."""
    base = "https://json-schema.org/draft/2020-12/"
    registry = jsonschema_specifications.REGISTRY
    top = registry.contents(base + "schema")

    def rewrite(node: Any, vocabulary: str) -> Any:
        if isinstance(node, list):
            return [rewrite(item, vocabulary) for item in node]
        if not isinstance(node, dict):
            return node
        out = {}
        for key, value in node.items():
            if key == "$dynamicRef" and isinstance(value, str):  # (a property named so is a dict)
                out["$ref"] = "#"
            elif key == "$ref" and isinstance(value, str):
                document, _, pointer = value.partition("#/$defs/")
                out["$ref"] = f"#/$defs/{document.removeprefix('meta/') or vocabulary}.{pointer}"
            else:
                out[key] = rewrite(value, vocabulary)
        return out

    properties: dict[str, Any] = {}
    definitions: dict[str, Any] = {}
    for part in top["allOf"]:
        vocabulary = part["$ref"].removeprefix("meta/")
        contents = registry.contents(base + part["$ref"])
        properties |= {k: rewrite(v, vocabulary) for k, v in contents.get("properties", {}).items()}
        definitions |= {f"{vocabulary}.{k}": rewrite(v, vocabulary) for k, v in contents.get("$defs", {}).items()}
    properties |= {k: rewrite(v, "") for k, v in top["properties"].items()}
    return {"type": ["object", "boolean"], "properties": properties, "$defs": definitions}


META_VALIDATOR = Validator(prepared(_static_meta_schema()),
                           format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


def schema_error(schema: Any) -> str | None:
    """Why `schema` is not valid JSON Schema 2020-12 (as `check_schema` says it), or None."""
    error = next(META_VALIDATOR.iter_errors(schema), None)
    return None if error is None else error.message

