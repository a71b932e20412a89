"""What the work budget costs an ordinary call, and how long a bomb takes to be refused.

Three tables, all in this one process:

1. Checking arguments of a few typical tool schemas: the quick predicate (`SchemaCheck`'s
   first step, which ordinary calls take), jsonschema as the bridge used it before the
   budget (Draft 2020-12 with RE2 patterns: the baseline), and the bounded validator
   (`bridge.schemas._validation`) on the same schema and value; the ratio is bounded / baseline.
2. Each attack of the security review: how long the bridge takes to refuse it, and how long
   the baseline takes on it (run in a child process, given up after `--give-up` seconds).
3. Registration: a schema checked against the 2020-12 meta-schema by jsonschema's
   `check_schema` (the baseline) and by the bridge's static copy of it.
4. Registration: how long the schemas that blow up take to be refused.

    python bench/validation_cost.py
    python bench/validation_cost.py --repeat 5 --give-up 20
"""

from __future__ import annotations

import argparse
import multiprocessing
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import jsonschema  # noqa: E402
from jsonschema import ValidationError  # noqa: E402

from bridge import schemas, validation  # noqa: E402
from bridge.schemas._validation import VALIDATION_STEPS, Budget, OverBudget  # noqa: E402
from bridge.schemas.page_schemas import SchemaCheck, quick_check  # noqa: E402

COUNTED_STEPS = 10_000_000


# --- the baseline: jsonschema as the bridge used it before the budget -----------------------------

def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Any:
    if validator.is_type(instance, "string") and not validation.regex(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, patterns: dict, instance: Any, schema: Any) -> Any:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if validation.regex(pattern).search(key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


Baseline = jsonschema.validators.extend(jsonschema.Draft202012Validator,
                                        {"pattern": _pattern, "patternProperties": _pattern_properties})


def baseline_errors(validator: Any, instance: Any) -> str | None:
    if validator.is_valid(instance):
        return None
    found = sorted(validator.iter_errors(instance), key=lambda e: [str(p) for p in e.path])
    return "; ".join(e.message for e in found[:5])


# --- ordinary calls -------------------------------------------------------------------------------

ORDINARY: list[tuple[str, dict, Any]] = [
    ("echo {text}", {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
     {"text": "hello from the agent"}),
    ("form: 6 fields, enum, pattern", {"type": "object", "required": ["iban", "amount"], "additionalProperties": False,
                                       "properties": {
                                           "iban": {"type": "string", "pattern": "^[A-Z]{2}[0-9]{2}[A-Z0-9]{10,30}$"},
                                           "amount": {"type": "number", "exclusiveMinimum": 0},
                                           "currency": {"enum": ["EUR", "USD", "GBP", "CHF"]},
                                           "note": {"type": "string", "maxLength": 140},
                                           "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 5},
                                           "urgent": {"type": "boolean"}}},
     {"iban": "DE89370400440532013000", "amount": 12.5, "currency": "EUR", "note": "rent", "tags": ["home"],
      "urgent": False}),
    ("union: anyOf string|integer|null", {"type": "object", "properties": {
        "id": {"anyOf": [{"type": "string", "minLength": 1}, {"type": "integer"}, {"type": "null"}]}}},
     {"id": 42}),
    ("20 rows, uniqueItems tags", {"type": "object", "properties": {"rows": {"type": "array", "items": {
        "type": "object", "required": ["id", "name"], "properties": {
            "id": {"type": "integer"}, "name": {"type": "string", "minLength": 1},
            "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True}}}}}},
     {"rows": [{"id": i, "name": f"n{i}", "tags": ["a", "b"]} for i in range(20)]}),
    ("$ref'd address, oneOf", {"type": "object", "$defs": {"address": {"type": "object", "required": ["city"],
                                                                      "properties": {"city": {"type": "string"},
                                                                                     "zip": {"type": "string"}}}},
                               "properties": {"ship": {"$ref": "#/$defs/address"}, "bill": {"$ref": "#/$defs/address"},
                                              "mode": {"oneOf": [{"const": "air"}, {"const": "sea"}]}}},
     {"ship": {"city": "Lyon", "zip": "69001"}, "bill": {"city": "Paris"}, "mode": "sea"}),
]


def per_call(check: Callable[[], Any], repeat: int) -> float:
    """Microseconds a call: the best of `repeat` timed runs of enough calls to take ~0.2 s."""
    calls = 1
    while True:
        started = time.perf_counter()
        for _ in range(calls):
            check()
        took = time.perf_counter() - started
        if took > 0.05:
            break
        calls *= 4
    calls = max(1, int(calls * 0.2 / took))
    best = []
    for _ in range(repeat):
        started = time.perf_counter()
        for _ in range(calls):
            check()
        best.append((time.perf_counter() - started) / calls)
    return min(best) * 1e6


def ordinary_table(repeat: int) -> None:
    print("1. Ordinary calls: checking one call's arguments (us, best of", repeat, "runs)")
    header = (f"{'schema':34} {'path':>6} {'quick':>7} {'baseline':>9} {'bounded':>8} {'ratio':>6} "
              f"{'SchemaCheck':>12}")
    print(header)
    print("-" * len(header))
    for name, schema, instance in ORDINARY:
        quick = quick_check(schema)
        baseline = Baseline(schema)
        bounded = validation.validator(schema)
        check = SchemaCheck(schema)
        assert baseline_errors(baseline, instance) is None and schemas.errors(bounded, instance, "(x)") is None
        quick_us = per_call(lambda: quick(instance), repeat) if quick is not None else None
        baseline_us = per_call(lambda: baseline_errors(baseline, instance), repeat)
        bounded_us = per_call(lambda: schemas.errors(bounded, instance, "(x)"), repeat)
        check_us = per_call(lambda: check.errors(instance, "(x)"), repeat)
        print(f"{name:34} {'quick' if quick else 'full':>6} {f'{quick_us:.1f}' if quick_us else '-':>7} "
              f"{baseline_us:9.1f} {bounded_us:8.1f} {bounded_us / baseline_us:6.2f} {check_us:12.1f}")
    print("quick: the predicate alone; baseline / bounded: the full validator, valid value (is_valid);")
    print("SchemaCheck: what a call pays (the quick predicate when it vouches, else the bounded validator).\n")


# --- attacks --------------------------------------------------------------------------------------

def nested_any_of(levels: int) -> dict:
    defs: dict[str, Any] = {f"l{i}": {"anyOf": [{"$ref": f"#/$defs/l{i + 1}"}] * 2} for i in range(levels)}
    defs[f"l{levels}"] = {"type": "string"}
    return {"type": "object", "properties": {"x": {"$ref": "#/$defs/l0"}}, "$defs": defs}


RECURSIVE = {"type": "object", "properties": {"x": {"$ref": "#/$defs/n"}}, "$defs": {"n": {"anyOf": [
    {"type": "object", "properties": {"a": {"$ref": "#/$defs/n"}}, "required": ["b"]},
    {"type": "object", "properties": {"a": {"$ref": "#/$defs/n"}}, "required": ["c"]}]}}}


def deep(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = {"a": value}
    return value


def attacks() -> list[tuple[str, dict, Any]]:
    patterns = {"type": "object", "properties": {"m": {"type": "object", "patternProperties": {
        f"^k{i}x$": {"type": "integer"} for i in range(64)}}}}
    return [
        ("uniqueItems, 4,000 objects (valid)", {"type": "object", "properties": {"v": {"type": "array",
                                                                                    "uniqueItems": True}}},
         {"v": [{"id": i, "s": "x"} for i in range(4_000)]}),
        ("uniqueItems, 20,000 objects", {"type": "object", "properties": {"v": {"type": "array", "uniqueItems": True}}},
         {"v": [{"id": i, "s": "x"} for i in range(20_000)]}),
        ("patternProperties 64 x 100,000 keys", patterns, {"m": {f"k{i}": i for i in range(100_000)}}),
        ("anyOf nested 12 levels (registers)", nested_any_of(12), {"x": 1}),
        ("anyOf recursive, value 40 deep", RECURSIVE, {"x": deep(40)}),
        ("a 1 MB value quoted by 2,000 errors", {"type": "object", "properties": {"v": {"anyOf": [
            {"type": "string", "maxLength": i} for i in range(2000)]}}}, {"v": {"k": "x" * 1_000_000}}),
        ("draft-07 $schema, ^(a+)+$ on 28 a's", {"type": "object", "properties": {"w": {
            "$schema": "http://json-schema.org/draft-07/schema#", "pattern": "^(a+)+$"}}}, {"w": "a" * 28 + "!"}),
        ("additionalProperties, ^(a+)+$ key", {"type": "object", "patternProperties": {"^(a+)+$": {}},
                                              "additionalProperties": False}, {"a" * 28 + "!": 1}),
    ]


def _baseline_run(schema: dict, instance: Any) -> None:
    baseline_errors(Baseline(schema), instance)


def baseline_seconds(schema: dict, instance: Any, give_up: float) -> str:
    child = multiprocessing.get_context("fork").Process(target=_baseline_run, args=(schema, instance))
    started = time.perf_counter()
    child.start()
    child.join(give_up)
    if child.is_alive():
        child.kill()
        child.join()
        return f"> {give_up:.0f} s"
    return f"{time.perf_counter() - started:.2f} s"


def attack_table(give_up: float) -> None:
    print(f"2. Attacks: refused by the bridge (budget {VALIDATION_STEPS:,} steps) vs the baseline")
    header = f"{'attack (bridge: best of 3)':42} {'bridge ms':>10} {'steps':>11}  {'answer':34} {'baseline':>10}"
    print(header)
    print("-" * len(header))
    for name, schema, instance in attacks():
        check = SchemaCheck(schema)
        took = min(timed(lambda: check.errors(instance, "(arguments)")) for _ in range(3))
        answer = check.errors(instance, "(arguments)")
        with Budget(COUNTED_STEPS) as budget:  # how much work the whole check is, up to a point
            try:
                validation.validator(schema).is_valid(instance)
            except (OverBudget, RecursionError):
                pass
        shown = "accepted" if answer is None else ("over budget" if "work budget" in answer else answer[:34])
        spent = f"{budget.spent:,}" if budget.spent < COUNTED_STEPS else f"> {COUNTED_STEPS:,}"
        baseline = baseline_seconds(schema, instance, give_up)
        print(f"{name:42} {took * 1000:10.1f} {spent:>11}  {shown:34} {baseline:>10}")
    print("steps: the work the whole check is (counted up to 10 million); the bridge stops at its budget.\n")


# --- registration ---------------------------------------------------------------------------------

def registration_table(repeat: int) -> None:
    print("3. Registration: one schema against the 2020-12 meta-schema (ms)")
    wide = {"type": "object", "properties": {f"p{i}": {"type": "string", "description": "x"} for i in range(1400)}}
    unions = {"type": "object", "properties": {f"p{i}": {"anyOf": [{"type": "string"}, {"type": "null"}]}
                                               for i in range(1000)}}
    rows = [("echo {text}", ORDINARY[0][1]), ("form: 6 fields", ORDINARY[1][1]),
            ("1,400 properties (63 KiB)", wide), ("1,000 anyOf properties (58 KiB)", unions)]
    header = f"{'schema':34} {'check_schema':>13} {'static copy':>12} {'ratio':>6}"
    print(header)
    print("-" * len(header))
    for name, schema in rows:
        def theirs() -> None:
            jsonschema.Draft202012Validator.check_schema(schema)

        def ours() -> None:
            with Budget(1 << 40):
                assert validation.schema_error(schema) is None
        theirs_ms = min(timed(theirs) for _ in range(repeat)) * 1000
        ours_ms = min(timed(ours) for _ in range(repeat)) * 1000
        print(f"{name:34} {theirs_ms:13.2f} {ours_ms:12.2f} {ours_ms / theirs_ms:6.2f}")
    print()


def refusal_table() -> None:
    print("4. Registration: schemas refused before any call (ms to refuse, uncached)")
    bombs = [("anyOf nested 16 levels (1.2 KB)", nested_any_of(16)),
             ("1,500 patternProperties", {"type": "object", "patternProperties": {
                 f"^k{i}$": {"type": "integer"} for i in range(1500)}}),
             ("allOf: [{$ref: #}]", {"type": "object", "allOf": [{"$ref": "#"}]})]
    header = f"{'schema':34} {'ms':>6}  refused with"
    print(header)
    print("-" * 100)
    for name, schema in bombs:
        limits = schemas.SchemaLimits(max_bytes=schemas.SchemaLimits().max_bytes + 1)  # a limit the cache has not seen
        started = time.perf_counter()
        problem = schemas.schema_problem(schema, limits)
        took = time.perf_counter() - started
        print(f"{name:34} {took * 1000:6.1f}  {(problem or 'accepted')[:90]}")
    print()


def timed(work: Callable[[], Any]) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per measurement (the best is shown)")
    parser.add_argument("--give-up", type=float, default=10.0, help="seconds before the baseline's run is stopped")
    args = parser.parse_args()
    print(f"{time.strftime('%Y-%m-%d %H:%M')}; Python {platform.python_version()}; jsonschema "
          f"{_version('jsonschema')}; {multiprocessing.cpu_count()} CPUs\n")
    ordinary_table(args.repeat)
    attack_table(args.give_up)
    registration_table(args.repeat)
    refusal_table()


def _version(package: str) -> str:
    from importlib import metadata
    return metadata.version(package)


if __name__ == "__main__":
    main()
