"""The `run_code` tool as agents see it: its definition (listed beside the meta-tools), the route a call of it
takes (`RunProgram`), and the limits its programs run with. Running them is `bridge.core.programs`'s.

Its name is reserved as the meta-tools' are: a page cannot register it (`--code-mode off` frees it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bridge.code_mode import Limits, run_code_description
from bridge.core.defaults import CodeConfig

# How an agent's program travels: `code`, at most as long as a program may be (the engine says so when longer).
CODE_DESCRIPTION = "Python source: the value of its last expression (or a top-level `return`) is the result"
# The value comes back as structuredContent.result (and as JSON text in the first content block); what the
# program printed as structuredContent.printed (and in a second text block).
OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"result": {"description": "the program's value, as JSON"},
                   "printed": {"type": "string", "description": "what the program printed, if anything"}},
    "required": ["result"],
}


@dataclass(frozen=True)
class RunProgram:
    """The call runs an agent's program in its room."""

    code: str


def code_limits(config: CodeConfig) -> Limits:
    """What one program may use, from the bridge's settings."""
    return Limits(compute_seconds=config.compute_seconds, memory_bytes=config.memory_mb * 1024 * 1024,
                  max_calls=config.max_calls, max_calls_in_flight=config.max_calls_in_flight,
                  max_printed_chars=config.max_printed_chars, max_value_chars=config.max_value_chars)


def run_code_definition(config: CodeConfig, *, search: str, describe: str) -> dict[str, Any]:
    """The tool's MCP definition: the engine's description of programs, and where a program finds tools (the
    meta-tools, named as configured, are callable from programs too)."""
    description = (run_code_description(code_limits(config))
                   + f"\n- `await {search}(query=...)` finds tools and `await {describe}(name=...)` shows a tool's "
                     "Python signature, here and inside a program.")
    return {
        "name": config.tool_name,
        "description": description,
        "inputSchema": {"type": "object", "properties": {"code": {"type": "string", "description": CODE_DESCRIPTION}},
                        "required": ["code"]},
        "outputSchema": OUTPUT_SCHEMA,
        # A program waiting on a person may run as an MCP task (io.modelcontextprotocol/tasks).
        "execution": {"taskSupport": "optional"},
    }
