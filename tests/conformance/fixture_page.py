"""The MCP conformance suite's fixture tools, offered by a page through the page protocol.

The suite (tests/conformance/node_modules/conformance-*) expects a server to offer tools of exact
names, schemas and behaviour: its "everything server" for the tools-* scenarios, plus the fixtures
its input-required (SEP-2322), tasks (SEP-2663), stateless (SEP-2575) and header (SEP-2243)
scenarios name in their descriptions. Here a page registers them over the WebSocket and answers
their invocations from the event stream, as any page would (docs/protocol.md, "Page messages"):
`agui.tool.return`, `agui.tool.progress`, `agui.tool.log`, `agui.tool.input_request`.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Awaitable, Callable

from support import Page

# A 1x1 PNG and a minimal WAV, the suite's own test data.
IMAGE = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
AUDIO = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="

NO_ARGS: dict[str, Any] = {"type": "object", "properties": {}}
OPTIONAL_TASK = {"taskSupport": "optional"}
REQUIRED_TASK = {"taskSupport": "required"}

# json-schema-2020-12: keywords a server must pass on untouched (SEP-1613, SEP-2106).
JSON_SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {"address": {"$anchor": "addressDef", "type": "object",
                          "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"},
                   "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                   "phone": {"type": "string"}, "email": {"type": "string"}},
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


def _tool(name: str, description: str, schema: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {"name": name, "description": description, "inputSchema": schema or NO_ARGS, **extra}


def _object(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required is not None:
        schema["required"] = required
    return schema


def _elicit(message: str, properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {"method": "elicitation/create",
            "params": {"mode": "form", "message": message, "requestedSchema": _object(properties, required)}}


def _sample(text: str, max_tokens: int) -> dict[str, Any]:
    return {"method": "sampling/createMessage",
            "params": {"messages": [{"role": "user", "content": {"type": "text", "text": text}}],
                       "maxTokens": max_tokens}}


ROOTS = {"method": "roots/list", "params": {}}

TOOLS = [
    # the everything server's tools (tools-*)
    _tool("test_simple_text", "Tests simple text content response"),
    _tool("test_image_content", "Tests image content response"),
    _tool("test_audio_content", "Tests audio content response"),
    _tool("test_embedded_resource", "Tests embedded resource content response"),
    _tool("test_multiple_content_types", "Tests response with multiple content types (text, image, resource)"),
    _tool("test_tool_with_logging", "Tests tool that emits log messages during execution"),
    _tool("test_tool_with_progress", "Tests tool that reports progress notifications"),
    _tool("test_error_handling", "Tests error response handling"),
    _tool("test_sampling", "Tests server-initiated sampling (LLM completion request)",
          _object({"prompt": {"type": "string", "description": "The prompt to send to the LLM"}}, ["prompt"])),
    _tool("test_elicitation", "Tests server-initiated elicitation (user input request)",
          _object({"message": {"type": "string", "description": "The message to show the user"}}, ["message"])),
    # json-schema-2020-12
    _tool("json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features", JSON_SCHEMA_2020_12),
    # http-custom-header-server-validation: a string argument mirrored into an Mcp-Param-* header
    _tool("test_header_parameter", "Echoes a region the client also sends as the Mcp-Param-Region header",
          _object({"region": {"type": "string", "description": "A region name", "x-mcp-header": "Region"}},
                  ["region"])),
    # server-stateless (SEP-2575): asks for sampling, which the probing client never declares; asks
    # for input on the response stream; logs to a client that set no log level; changes the tool list
    _tool("test_missing_capability", "Asks the client for sampling; refused to clients that did not declare it"),
    _tool("test_streaming_elicitation", "Asks the user a question while the call is in progress"),
    _tool("test_logging_tool", "Logs a line while it runs"),
    _tool("test_trigger_tool_change", "Adds or removes the tool test_added_tool"),
    # input-required-result-*
    _tool("test_input_required_result_elicitation", "Asks the user's name (elicitation), then greets"),
    _tool("test_input_required_result_sampling", "Asks the client's model a question (sampling)"),
    _tool("test_input_required_result_list_roots", "Asks the client's roots"),
    _tool("test_input_required_result_request_state", "Asks a confirmation and checks its requestState"),
    _tool("test_input_required_result_multiple_inputs", "Asks elicitation, sampling and roots at once"),
    _tool("test_input_required_result_multi_round", "Asks two questions, one round each"),
    _tool("test_input_required_result_tampered_state", "Asks a confirmation; tampered requestState is refused"),
    _tool("test_input_required_result_capabilities", "Asks only for the input kinds the client declared"),
    # tasks-* (SEP-2663)
    _tool("greet", "Greets someone (synchronous only)", _object({"name": {"type": "string"}}, ["name"])),
    _tool("slow_compute", "Waits the given seconds, then answers",
          _object({"seconds": {"type": "number"}, "label": {"type": "string"}}), execution=OPTIONAL_TASK),
    _tool("failing_job", "Fails after a second (a tool error)", execution=REQUIRED_TASK),
    _tool("protocol_error_job", "Ends without a readable answer (a protocol error)", execution=OPTIONAL_TASK),
    _tool("confirm_delete", "Asks to confirm deleting a file, then deletes it",
          _object({"filename": {"type": "string"}}, ["filename"]), execution=OPTIONAL_TASK),
    _tool("multi_input", "Asks two questions at once, then answers", execution=OPTIONAL_TASK),
    _tool("test_tool_with_task", "Asks a name, then completes as a task", execution=REQUIRED_TASK,
          inputBeforeTask=True),
]


class Invocation:
    """One `agui.tool.invoke` and what the page can say about it."""

    def __init__(self, page: Page, event: dict[str, Any], page_state: dict[str, Any]) -> None:
        self.page = page
        self.page_state = page_state  # what the page keeps across calls
        self.sent = 0
        self.call_id: str = event["call_id"]
        self.tool: str = event["tool"]
        self.params: dict[str, Any] = event.get("params") or {}
        self.responses: dict[str, Any] = event.get("input_responses") or {}
        self.state: str | None = event.get("request_state")
        self.capabilities: dict[str, Any] = event.get("client_capabilities") or {}
        self.cancelled = asyncio.Event()

    async def send(self, message: dict[str, Any]) -> None:
        # The id comes back as `reply_to` on a refusal, which FixturePage turns into the call's error.
        self.sent += 1
        await self.page.send({**message, "call_id": self.call_id, "id": f"{self.call_id} {self.sent}"})

    async def answer(self, result: Any) -> None:
        await self.send({"type": "agui.tool.return", "result": result})

    async def fail(self, message: str) -> None:
        await self.send({"type": "agui.tool.return", "error": {"message": message}})

    async def log(self, data: Any, level: str = "info") -> None:
        await self.send({"type": "agui.tool.log", "level": level, "data": data, "logger": "conformance-page"})

    async def progress(self, progress: float, total: float, message: str) -> None:
        await self.send({"type": "agui.tool.progress", "progress": progress, "total": total, "message": message})

    async def ask(self, requests: dict[str, Any], state: str | None = None) -> None:
        """Ask the agent's side for input; the bridge invokes the tool again with the answers."""
        message: dict[str, Any] = {"type": "agui.tool.input_request", "requests": requests}
        if state is not None:
            message["requestState"] = state
        await self.send(message)

    async def answer_unreadably(self) -> None:
        """An answer the bridge cannot parse (a non-finite number): the call ends without a result,
        which an agent's task sees as `failed`, the suite's "protocol error"."""
        await self.page.send(f'{{"type": "agui.tool.return", "call_id": {json.dumps(self.call_id)}, "result": NaN}}')

    def accepted(self, key: str) -> dict[str, Any] | None:
        """The content of an accepted elicitation answer for `key`, if there is one."""
        response = self.responses.get(key)
        if isinstance(response, dict) and response.get("action") == "accept":
            content = response.get("content")
            return content if isinstance(content, dict) else {}
        return None


def _text(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}]}


async def _simple_text(call: Invocation) -> None:
    await call.answer(_text("This is a simple text response for testing."))


async def _image(call: Invocation) -> None:
    await call.answer({"content": [{"type": "image", "data": IMAGE, "mimeType": "image/png"}]})


async def _audio(call: Invocation) -> None:
    await call.answer({"content": [{"type": "audio", "data": AUDIO, "mimeType": "audio/wav"}]})


async def _embedded_resource(call: Invocation) -> None:
    await call.answer({"content": [{"type": "resource", "resource": {
        "uri": "test://embedded-resource", "mimeType": "text/plain",
        "text": "This is an embedded resource content."}}]})


async def _multiple_content(call: Invocation) -> None:
    await call.answer({"content": [
        {"type": "text", "text": "Multiple content types test:"},
        {"type": "image", "data": IMAGE, "mimeType": "image/png"},
        {"type": "resource", "resource": {"uri": "test://mixed-content-resource", "mimeType": "application/json",
                                          "text": json.dumps({"test": "data", "value": 123})}}]})


async def _with_logging(call: Invocation) -> None:
    for line in ("Tool execution started", "Tool processing data", "Tool execution completed"):
        await call.log(line)
        await asyncio.sleep(0.05)
    await call.answer(_text("Tool with logging executed successfully"))


async def _with_progress(call: Invocation) -> None:
    for step in (0, 50, 100):
        await call.progress(step, 100, f"Completed step {step} of 100")
        await asyncio.sleep(0.05)
    await call.answer(_text("Progress reported"))


async def _error(call: Invocation) -> None:
    await call.fail("This tool intentionally returns an error for testing")


async def _sampling(call: Invocation) -> None:
    answer = call.responses.get("llm")
    if answer is None:
        await call.ask({"llm": _sample(str(call.params.get("prompt", "")), 100)})
        return
    content = answer.get("content") if isinstance(answer, dict) else None
    text = content.get("text") if isinstance(content, dict) else None
    await call.answer(_text(f"LLM response: {text or 'No response'}"))


async def _elicitation(call: Invocation) -> None:
    answer = call.responses.get("response")
    if answer is None:
        await call.ask({"response": _elicit(str(call.params.get("message", "")),
                                            {"response": {"type": "string", "description": "User's response"}},
                                            ["response"])})
        return
    await call.answer(_text(f"User response: action={answer.get('action')}, "
                            f"content={json.dumps(answer.get('content') or {})}"))


async def _header_parameter(call: Invocation) -> None:
    await call.answer(_text(f"Region: {call.params.get('region')}"))


async def _json_schema(call: Invocation) -> None:
    await call.answer(_text(json.dumps(call.params)))


async def _missing_capability(call: Invocation) -> None:
    if "capability" not in call.responses:
        await call.ask({"capability": _sample("Say anything", 10)})
        return
    await call.answer(_text("The client answered a sampling request"))


async def _streaming_elicitation(call: Invocation) -> None:
    answer = call.accepted("answer")
    if answer is None:
        await call.ask({"answer": _elicit("Anything to add?", {"text": {"type": "string"}})})
        return
    await call.answer(_text(f"You said: {answer.get('text')}"))


async def _logging_tool(call: Invocation) -> None:
    await call.log("A line only clients that asked for logs get")
    await call.answer(_text("Logged one line"))


ADDED_TOOL = _tool("test_added_tool", "A tool test_trigger_tool_change adds and removes")


async def _trigger_tool_change(call: Invocation) -> None:
    # Not waiting for the bridge's reply: the page's reader is busy serving calls, and the reply is
    # only an acknowledgement; the agents' tools/list shows the change either way.
    added = not call.page_state.get("added", False)
    call.page_state["added"] = added
    if added:
        await call.page.send({"type": "agui.tools.register", "tools": [ADDED_TOOL]})
    else:
        await call.page.send({"type": "agui.tools.unregister", "tools": [ADDED_TOOL["name"]]})
    await call.answer(_text("Added test_added_tool" if added else "Removed test_added_tool"))


async def _ir_elicitation(call: Invocation) -> None:
    name = call.accepted("user_name")
    if name is None:  # first round, or the answer for user_name is missing: ask (again)
        await call.ask({"user_name": _elicit("What is your name?", {"name": {"type": "string"}}, ["name"])})
        return
    await call.answer(_text(f"Hello, {name.get('name')}!"))


async def _ir_sampling(call: Invocation) -> None:
    answer = call.responses.get("capital_question")
    if answer is None:
        await call.ask({"capital_question": _sample("What is the capital of France?", 100)})
        return
    content = answer.get("content") if isinstance(answer, dict) else None
    await call.answer(_text(f"Sampled: {content.get('text') if isinstance(content, dict) else None}"))


async def _ir_roots(call: Invocation) -> None:
    answer = call.responses.get("client_roots")
    if answer is None:
        await call.ask({"client_roots": ROOTS})
        return
    roots = answer.get("roots") if isinstance(answer, dict) else None
    await call.answer(_text("Roots: " + ", ".join(str(r.get("uri")) for r in roots or [] if isinstance(r, dict))))


CONFIRM = _elicit("Please confirm", {"ok": {"type": "boolean"}}, ["ok"])


async def _ir_request_state(call: Invocation) -> None:
    if call.accepted("confirm") is None:
        await call.ask({"confirm": CONFIRM}, state="confirm-asked")
        return
    if call.state != "confirm-asked":
        await call.fail(f"Unexpected requestState {call.state!r}")
        return
    await call.answer(_text("state-ok: the requestState came back"))


async def _ir_multiple(call: Invocation) -> None:
    keys = ("user_name", "greeting", "client_roots")
    if not all(key in call.responses for key in keys):
        await call.ask({"user_name": _elicit("What is your name?", {"name": {"type": "string"}}, ["name"]),
                        "greeting": _sample("Generate a greeting", 50),
                        "client_roots": ROOTS}, state="multiple-asked")
        return
    await call.answer(_text("All three answers received"))


async def _ir_multi_round(call: Invocation) -> None:
    if call.state == "round-2" and call.accepted("step2") is not None:
        await call.answer(_text(f"Multi-round complete: {call.accepted('step2')}"))
    elif call.state == "round-1" and call.accepted("step1") is not None:
        await call.ask({"step2": _elicit("Step 2: What is your favorite color?", {"color": {"type": "string"}},
                                         ["color"])}, state="round-2")
    else:
        await call.ask({"step1": _elicit("Step 1: What is your name?", {"name": {"type": "string"}}, ["name"])},
                       state="round-1")


async def _ir_tampered(call: Invocation) -> None:
    # The bridge seals the requestState it gives agents: a tampered one never reaches the page.
    if call.accepted("confirm") is None:
        await call.ask({"confirm": CONFIRM}, state="tamper-proof")
        return
    await call.answer(_text("The requestState was intact"))


async def _ir_capabilities(call: Invocation) -> None:
    if call.responses:
        await call.answer(_text("Answered: " + ", ".join(sorted(call.responses))))
        return
    requests: dict[str, Any] = {}
    if "sampling" in call.capabilities:
        requests["sampling"] = _sample("Capability test", 10)
    if "elicitation" in call.capabilities:
        requests["elicitation"] = _elicit("Capability test", {"ok": {"type": "boolean"}})
    if "roots" in call.capabilities:
        requests["roots"] = ROOTS
    if requests:
        await call.ask(requests)
    else:
        await call.answer(_text("The client declared no input capability"))


async def _greet(call: Invocation) -> None:
    await call.answer(_text(f"Hello, {call.params.get('name')}!"))


async def _slow_compute(call: Invocation) -> None:
    seconds = float(call.params.get("seconds", 1))
    try:
        await asyncio.wait_for(call.cancelled.wait(), seconds)
        return  # cancelled: the bridge already ended the call
    except asyncio.TimeoutError:
        pass
    await call.answer(_text(f"Computed {call.params.get('label', '')} after {seconds:g}s"))


async def _failing_job(call: Invocation) -> None:
    await asyncio.sleep(1)
    await call.fail("The job failed")


async def _protocol_error_job(call: Invocation) -> None:
    await call.answer_unreadably()


async def _confirm_delete(call: Invocation) -> None:
    if "confirm" not in call.responses:
        await call.ask({"confirm": _elicit(f"Delete {call.params.get('filename')}?", {"confirm": {"type": "boolean"}},
                                           ["confirm"])})
        return
    confirmed = call.accepted("confirm")
    await call.answer(_text(f"Deleted {call.params.get('filename')}" if confirmed else "Kept the file"))


async def _multi_input(call: Invocation) -> None:
    if not {"first", "second"} <= set(call.responses):
        await call.ask({"first": _elicit("First name?", {"name": {"type": "string"}}),
                        "second": _elicit("Second name?", {"name": {"type": "string"}})})
        return
    names = [(call.accepted(key) or {}).get("name") for key in ("first", "second")]
    await call.answer(_text(f"Got {names[0]} and {names[1]}"))


async def _tool_with_task(call: Invocation) -> None:
    name = call.accepted("user_name")
    if name is None:
        await call.ask({"user_name": _elicit("What is your name?", {"name": {"type": "string"}}, ["name"])})
        return
    await call.answer(_text(f"Hello, {name.get('name')}!"))


HANDLERS: dict[str, Callable[[Invocation], Awaitable[None]]] = {
    "test_simple_text": _simple_text,
    "test_image_content": _image,
    "test_audio_content": _audio,
    "test_embedded_resource": _embedded_resource,
    "test_multiple_content_types": _multiple_content,
    "test_tool_with_logging": _with_logging,
    "test_tool_with_progress": _with_progress,
    "test_error_handling": _error,
    "test_sampling": _sampling,
    "test_elicitation": _elicitation,
    "json_schema_2020_12_tool": _json_schema,
    "test_header_parameter": _header_parameter,
    "test_missing_capability": _missing_capability,
    "test_streaming_elicitation": _streaming_elicitation,
    "test_logging_tool": _logging_tool,
    "test_trigger_tool_change": _trigger_tool_change,
    "test_input_required_result_elicitation": _ir_elicitation,
    "test_input_required_result_sampling": _ir_sampling,
    "test_input_required_result_list_roots": _ir_roots,
    "test_input_required_result_request_state": _ir_request_state,
    "test_input_required_result_multiple_inputs": _ir_multiple,
    "test_input_required_result_multi_round": _ir_multi_round,
    "test_input_required_result_tampered_state": _ir_tampered,
    "test_input_required_result_capabilities": _ir_capabilities,
    "greet": _greet,
    "slow_compute": _slow_compute,
    "failing_job": _failing_job,
    "protocol_error_job": _protocol_error_job,
    "confirm_delete": _confirm_delete,
    "multi_input": _multi_input,
    "test_tool_with_task": _tool_with_task,
}
assert set(HANDLERS) == {t["name"] for t in TOOLS}


class FixturePage:
    """Registers TOOLS and serves their invocations until stopped."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.calls: dict[str, Invocation] = {}  # every invocation, by call_id (a test run makes a few hundred)
        self.state: dict[str, Any] = {}
        self.failures: list[str] = []  # handler crashes (fixture bugs), to report rather than hang a scenario
        self.refused: list[str] = []  # fixture tools the bridge would not register
        self._tasks: set[asyncio.Task] = set()

    async def start(self) -> None:
        await self.page.send({"type": "agui.tools.register", "tools": TOOLS})
        reply = await self.page.reply()
        while reply["type"] == "agui.error":  # a tool the bridge refuses: the rest are registered
            self.refused.append(f"{reply.get('tool')}: {reply.get('message')}")
            reply = await self.page.reply()
        assert reply["type"] == "agui.tools.registered", reply
        renamed = {entry["tool"]: entry["name"] for entry in reply["tools"] if entry["tool"] != entry["name"]}
        assert not renamed, f"the bridge renamed fixture tools: {renamed}"
        self._serving = [asyncio.create_task(self._serve()), asyncio.create_task(self._read_replies())]

    async def stop(self) -> None:
        for task in [*self._serving, *self._tasks]:
            task.cancel()

    async def _serve(self) -> None:
        while True:
            event = await self.page.events.get()
            if event["type"] == "agui.tool.invoke":
                call = Invocation(self.page, event, self.state)
                self.calls[call.call_id] = call
                task = asyncio.create_task(self._run(call))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
            elif event["type"] == "agui.tool.cancel" and event["call_id"] in self.calls:
                self.calls[event["call_id"]].cancelled.set()

    async def _read_replies(self) -> None:
        """A message of a call the bridge refuses (a bridge without that message type, say) ends the
        call with the refusal as its error, so the suite reports it rather than waiting for a timeout."""
        while True:
            reply = await self.page.replies.get()
            if reply["type"] != "agui.error" or not isinstance(reply.get("reply_to"), str):
                continue
            call = self.calls.get(reply["reply_to"].split(" ")[0])
            if call is not None and reply.get("code") != "unknown_call":
                await call.fail(f"The bridge refused the page's message: {reply.get('code')}: {reply.get('message')}")

    async def _run(self, call: Invocation) -> None:
        try:
            await HANDLERS[call.tool](call)
        except Exception as exc:  # a fixture bug: say so in the call's answer and in the report
            self.failures.append(f"{call.tool}: {exc!r}")
            await call.fail(f"fixture page error: {exc!r}")
