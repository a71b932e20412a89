"""Each tool's Python signature, made from its JSON input schema.

Inside a program a tool is an async function of the same name taking keyword arguments, so its signature is
what an agent needs to call it (`tool_describe` can show it) and what the sandbox's type checker checks a program
against before running it: a wrong argument name fails before any tool is called.

    async def get_order(*, order_id: int, verbose: bool = False) -> Any

A tool whose name cannot be a Python function name (not an identifier, a keyword, a builtin such as `print`, or
`call_tool` itself) is reached with `await call_tool(name, arguments)`; its signature says so. Parameters whose
names cannot be keyword arguments are passed through `**`, and the signature takes them as `**more`.
"""

from __future__ import annotations

import builtins
import keyword
import math
from collections.abc import Mapping
from typing import Any

CALL_TOOL = "call_tool"
CALL_TOOL_SIGNATURE = "async def call_tool(name: str, arguments: dict[str, Any] | None = None) -> Any"
STUBS_HEADER = "from typing import Any, Literal\n\n"
LITERAL_MAX_VALUES = 30  # a longer enum is shown as its values' types
DEFAULT_SHOWN_CHARS = 60  # a longer default is shown as `...`
NESTING_READ = 6  # schema levels read for a type; deeper is `Any`
BUILTIN_NAMES = frozenset(dir(builtins))  # Python's builtins: no tool is a function of such a name
_SIMPLE_TYPES = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}
_VAR_KEYWORD_NAMES = ("more", "extra", "other_arguments")


def is_function_name(name: str) -> bool:
    """Whether a tool of this name is a function in programs (else only `call_tool` reaches it)."""
    return _is_keyword_argument(name) and name not in BUILTIN_NAMES and name != CALL_TOOL


def python_signature(name: str, input_schema: Mapping[str, Any] | None) -> str:
    """The tool's signature as a program calls it: `async def name(*, ...) -> Any`, or, for a name that cannot be
    a function, `await call_tool('name', arguments)` followed by the arguments it takes."""
    parameters = _parameters(input_schema)
    if is_function_name(name):
        return _function_line(name, parameters)
    return f"await {CALL_TOOL}({name!r}, arguments)  # arguments: " + (", ".join(parameters) or "none")


def function_signatures(tools: Mapping[str, Mapping[str, Any] | None]) -> dict[str, str]:
    """The signature of each tool that is a function in programs, by name."""
    return {name: _function_line(name, _parameters(schema)) for name, schema in tools.items()
            if is_function_name(name)}


def tool_stubs(tools: Mapping[str, Mapping[str, Any] | None]) -> str:
    """The stub module the type checker reads: `call_tool` and one function per tool that can be one."""
    return stubs_module(function_signatures(tools))


def stubs_module(signatures: Mapping[str, str]) -> str:
    """The stub module for these tools' signatures (`function_signatures`), `call_tool`'s first. Each signature
    is valid Python by construction (names checked, types from a fixed grammar, values as their repr): the
    tests parse the stubs of any schema."""
    return STUBS_HEADER + "".join(f"{line}: ...\n" for line in [CALL_TOOL_SIGNATURE, *signatures.values()])


def _is_keyword_argument(name: str) -> bool:
    """ASCII only: Python folds other identifiers (NFKC), so the name the program gives is not the schema's."""
    return name.isascii() and name.isidentifier() and not keyword.iskeyword(name)


def _function_line(name: str, parameters: list[str]) -> str:
    return f"async def {name}({_parameter_list(parameters)}) -> Any"


def _parameter_list(parameters: list[str]) -> str:
    keyword_only = [p for p in parameters if not p.startswith("**")]
    rest = [p for p in parameters if p.startswith("**")]
    return ", ".join((["*"] if keyword_only else []) + keyword_only + rest)


def _parameters(schema: Mapping[str, Any] | None) -> list[str]:
    """Keyword-only parameters, the required ones first, then `**more` when some arguments cannot be keywords."""
    if not isinstance(schema, Mapping):
        return ["**more: Any"]
    properties = schema.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    required_list = schema.get("required")
    required = {n for n in required_list if isinstance(n, str)} if isinstance(required_list, list) else set()
    plain = [name for name in properties if isinstance(name, str) and _is_keyword_argument(name)]
    ordered = [n for n in plain if n in required] + [n for n in plain if n not in required]
    parameters = [_parameter(name, properties[name], name in required) for name in ordered]
    additional = schema.get("additionalProperties")
    if len(plain) < len(properties) or additional is True or isinstance(additional, Mapping) and additional:
        parameters.append(f"**{_unused(_VAR_KEYWORD_NAMES, properties)}: Any")
    return parameters


def _unused(names: tuple[str, ...], taken: Mapping[str, Any]) -> str:
    return next((name for name in names if name not in taken), names[0] + "_" * (1 + max(map(len, taken), default=0)))


def _parameter(name: str, schema: Any, required: bool) -> str:
    text = f"{name}: {_annotation(schema)}"
    if required:
        return text
    return f"{text} = {_default(schema)}"


def _default(schema: Any) -> str:
    if not isinstance(schema, Mapping) or "default" not in schema:
        return "..."
    value = schema["default"]
    if not isinstance(value, (str, int, float, bool)) and value is not None or not _accepts(schema, value):
        return "..."
    if isinstance(value, float) and not math.isfinite(value):  # `nan` is no Python literal
        return "..."
    shown = repr(value)
    return shown if len(shown) <= DEFAULT_SHOWN_CHARS else "..."


def _annotation(schema: Any, depth: int = 0) -> str:
    """A JSON schema as a Python type: `int`, `list[str]`, `Literal['eur', 'usd']`, `str | None`, `Any`."""
    if not isinstance(schema, Mapping) or depth > NESTING_READ:
        return "Any"
    if "const" in schema:
        return _literal([schema["const"]])
    values = schema.get("enum")
    if isinstance(values, list) and values:
        return _literal(values)
    kind = schema.get("type")
    if isinstance(kind, list):
        return _union([_annotation({**schema, "type": k}, depth) for k in kind if isinstance(k, str)])
    if isinstance(kind, str) and kind in _SIMPLE_TYPES:
        return _SIMPLE_TYPES[kind]
    if kind == "array":
        return f"list[{_annotation(schema.get('items'), depth + 1)}]"
    if kind == "object" or "properties" in schema:
        return "dict[str, Any]"
    for combinator in ("anyOf", "oneOf"):
        options = schema.get(combinator)
        if isinstance(options, list) and options:
            return _union([_annotation(option, depth + 1) for option in options])
    return "Any"


def _literal(values: list[Any]) -> str:
    """`Literal[...]` of the values a type checker takes as literals (str, int, bool), `| None` for null; other
    values (floats, objects) or too many: the union of their types."""
    literal = [v for v in values if isinstance(v, (str, int, bool)) and not isinstance(v, float)]
    if len(literal) + values.count(None) == len(values) and len(values) <= LITERAL_MAX_VALUES:
        parts = [f"Literal[{', '.join(repr(v) for v in literal)}]"] if literal else []
        return _union(parts + (["None"] if None in values else []))
    return _union([_python_type(v) for v in values])


def _python_type(value: Any) -> str:
    if value is None:
        return "None"
    if isinstance(value, (bool, int, float, str)):
        return type(value).__name__
    return "list[Any]" if isinstance(value, list) else "dict[str, Any]" if isinstance(value, dict) else "Any"


def _union(parts: list[str]) -> str:
    unique = list(dict.fromkeys(parts))
    if not unique or "Any" in unique:
        return "Any"
    return " | ".join(unique)


def _accepts(schema: Mapping[str, Any], value: Any) -> bool:
    """Whether a default fits its schema's types and values (a stub's default must match its annotation)."""
    values = schema.get("enum")
    if isinstance(values, list) and value not in values:
        return False
    if "const" in schema:
        return bool(schema["const"] == value)
    kinds = _json_kinds(schema)
    if kinds is None:
        return True
    kind = _json_kind(value)
    return kind in kinds or kind == "integer" and "number" in kinds


def _json_kinds(schema: Any) -> set[str] | None:
    """The JSON types a schema names, or None when it does not restrict them."""
    if not isinstance(schema, Mapping):
        return None
    kind = schema.get("type")
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list):
        return {k for k in kind if isinstance(k, str)}
    values = schema.get("enum")
    if isinstance(values, list) and values:
        return {_json_kind(v) for v in values}
    for combinator in ("anyOf", "oneOf"):
        options = schema.get(combinator)
        if isinstance(options, list) and options:
            kinds = [_json_kinds(option) for option in options]
            return None if any(k is None for k in kinds) else set().union(*[k for k in kinds if k is not None])
    return None


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return "string" if isinstance(value, str) else "array" if isinstance(value, list) else "object"
