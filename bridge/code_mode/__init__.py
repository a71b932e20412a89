"""Code mode: an agent's short Python program calls the room's tools in a sandbox, and only its final value comes
back.

The program runs in pydantic-monty's sandbox (a Python subset, in worker processes: no files, network or
environment). Each tool is an async function of the same name taking keyword arguments, `call_tool(name,
arguments)` reaches any tool, and the value of the last expression is the result::

    from bridge.code_mode import CodeMode, ToolError

    async def call(name: str, arguments: dict) -> object:  # through the hub's checks, in the bridge
        if name != "get_order":
            raise ToolError(f"Unknown tool: {name}")
        return {"id": arguments["order_id"], "status": "open", "total": 12.5}

    tools = {"get_order": {"type": "object", "properties": {"order_id": {"type": "integer"}},
                           "required": ["order_id"]}}  # name -> input schema
    program = '''
    import asyncio
    orders = await asyncio.gather(*[get_order(order_id=i) for i in range(40)])
    sum(o["total"] for o in orders if o["status"] == "open")
    '''
    async with CodeMode() as code_mode:
        result = await code_mode.run(program, tools, call)
    result.value  # 500.0; or result.error (a RunError: kind, message, line)

A program waiting on tool calls holds no worker: it is parked (`on_park` gets the record, `ParkedProgram`, plain
data) and resumed when an answer arrives, here or in another process (`CodeMode.resume`). `python_signature`
gives a tool's signature as programs call it; `run_code_description` teaches an agent the tool.

The package imports neither starlette nor mcp: it belongs with the core.
"""

from bridge.code_mode.description import run_code_description
from bridge.code_mode.engine import CodeMode, ToolSchemas
from bridge.code_mode.limits import Limits
from bridge.code_mode.parked import ParkedProgram, PendingCall
from bridge.code_mode.run_result import ErrorKind, RunError, RunResult
from bridge.code_mode.signatures import CALL_TOOL, is_function_name, python_signature, tool_stubs
from bridge.code_mode.tool_calls import CALL_ID, AnswerLost, CallFinished, CallFinishedSink, ToolCaller, ToolError

__all__ = [
    "CALL_ID",
    "CALL_TOOL",
    "AnswerLost",
    "CallFinished",
    "CallFinishedSink",
    "CodeMode",
    "ErrorKind",
    "Limits",
    "ParkedProgram",
    "PendingCall",
    "RunError",
    "RunResult",
    "ToolCaller",
    "ToolError",
    "ToolSchemas",
    "is_function_name",
    "python_signature",
    "run_code_description",
    "tool_stubs",
]
