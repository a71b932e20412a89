"""The MCP tasks extension (`io.modelcontextprotocol/tasks`) for page tools.

An agent that declares the extension on a `tools/call` of a tool the page marked
`execution.taskSupport` "optional" or "required" gets a task at once; the page
call runs on, beyond the HTTP request and the client's timeout, and the agent
reads its outcome with `tasks/get`, answers its input requests with
`tasks/update`, or stops it with `tasks/cancel` (the page's handler is aborted).
The SDK has the seam (`mcp.server.extension`) but not the extension; this is
the thin edge, the state is `bridge.tasks.TaskTable`.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.extension import Extension, MethodBinding
from mcp.shared.exceptions import MCPError
from mcp_types import CLIENT_CAPABILITIES_META_KEY
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ConfigDict

from bridge.mcp_input import INPUT_ROUNDS_MAX
from bridge.tasks import Task, TaskTable, TooManyTasks

log = logging.getLogger("bridge.mcp")

TASKS = "io.modelcontextprotocol/tasks"
MISSING_CAPABILITY = -32021
HEADER_MISMATCH = -32020

# One round of the page call, given the agent's answers so far: a CallToolResult (wire JSON), or InputNeeded.
RunCall = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


class InputNeeded(Exception):
    """The page asked for input: the task waits for the agent's tasks/update, then calls the page again."""

    def __init__(self, requests: dict[str, Any], page_state: Any) -> None:
        super().__init__("input needed")
        self.requests, self.page_state = requests, page_state


class _TaskParams(BaseModel):
    model_config = ConfigDict(extra="allow")
    taskId: str


class _UpdateParams(_TaskParams):
    inputResponses: dict[str, Any] = {}


def declares(params: Mapping[str, Any] | None, capability: str, *, extension: bool = False) -> bool:
    """Whether a request's `_meta` client capabilities declare `capability` (an extension's id when `extension`)."""
    declared = ((params or {}).get("_meta") or {}).get(CLIENT_CAPABILITIES_META_KEY)
    if not isinstance(declared, dict):
        return False
    if extension:
        declared = declared.get("extensions")
    return isinstance(declared, dict) and isinstance(declared.get(capability), dict)


def missing_capability(required: dict[str, Any], message: str) -> MCPError:
    return MCPError(MISSING_CAPABILITY, message, {"requiredCapabilities": required})


def owner_of(ctx: ServerRequestContext) -> str:
    """Who a task belongs to: a digest of the credential its agent presented, never the credential."""
    headers = ctx.request.headers if ctx.request is not None else {}
    credential = headers.get("authorization", "")
    return hashlib.sha256(credential.encode()).hexdigest() if credential else ""


class PageTasks(Extension):
    """Serves one room's tasks: decides which calls become tasks, runs them, answers tasks/*."""

    identifier = TASKS

    def __init__(self, table: TaskTable, room: str, running: dict[str, asyncio.Task[None]]) -> None:
        self.table, self.room = table, room
        self._running = running  # the page calls of tasks still working, bridge-wide, by task id
        self._answers: dict[str, tuple[dict[str, Any], asyncio.Event]] = {}  # for tasks waiting on input

    def methods(self) -> list[MethodBinding]:
        return [MethodBinding("tasks/get", _TaskParams, self._get),
                MethodBinding("tasks/update", _UpdateParams, self._update),
                MethodBinding("tasks/cancel", _TaskParams, self._cancel)]

    # --- tools/call ------------------------------------------------------------------------

    def wants_task(self, ctx: ServerRequestContext, task_support: str) -> bool:
        """Whether this call becomes a task; -32021 for a tool that needs one from an agent that cannot."""
        if task_support == "forbidden":
            return False
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS and declares(ctx.params, TASKS, extension=True):
            return True
        if task_support == "required":
            raise missing_capability({"extensions": {TASKS: {}}},
                                     "This tool runs only as a task: declare the io.modelcontextprotocol/tasks "
                                     "extension in the request's client capabilities.")
        return False

    async def start(self, ctx: ServerRequestContext, tool: str, run: RunCall) -> dict[str, Any]:
        """Creates the task, starts the call, and answers with the task (CreateTaskResult)."""
        try:
            task = self.table.create(owner=owner_of(ctx), room=self.room, tool=tool)
        except TooManyTasks as exc:
            raise MCPError(types.INTERNAL_ERROR, str(exc)) from None
        runner = asyncio.get_running_loop().create_task(self._run(task, run), name=f"task {task.task_id}")
        self._running[task.task_id] = runner
        runner.add_done_callback(lambda _: self._running.pop(task.task_id, None))
        return {"resultType": "task", **task.detailed()}

    async def _run(self, task: Task, run: RunCall) -> None:
        try:
            async with asyncio.timeout(task.ttl):
                result = await self._rounds(task, run)
        except TimeoutError:
            self.table.failed(task, types.INTERNAL_ERROR, "The task's time to live ran out before the page answered.")
        except asyncio.CancelledError:
            self.table.cancelled(task, "Cancelled by the agent.")
            raise
        except MCPError as exc:
            self.table.failed(task, exc.error.code, exc.error.message)
        except Exception:
            log.exception("task %s failed", task.task_id)
            self.table.failed(task, types.INTERNAL_ERROR, "The bridge failed to run the call.")
        else:
            self.table.completed(task, result)
        finally:
            self._answers.pop(task.task_id, None)

    async def _rounds(self, task: Task, run: RunCall) -> dict[str, Any]:
        answers: dict[str, Any] = {}
        for _ in range(INPUT_ROUNDS_MAX):
            try:
                return await run(answers)
            except InputNeeded as needed:
                given: dict[str, Any] = {}
                answered = asyncio.Event()
                self._answers[task.task_id] = (given, answered)
                if self.table.ask(task, needed.requests):
                    raise MCPError(types.INTERNAL_ERROR, "The page asked again under a key it used before.") from None
                await answered.wait()
                answers = {"input_responses": given, "request_state": needed.page_state}
        raise MCPError(types.INTERNAL_ERROR, f"The page asked for input more than {INPUT_ROUNDS_MAX} times.")

    # --- tasks/get, tasks/update, tasks/cancel -----------------------------------------------

    def _task(self, ctx: ServerRequestContext, params: _TaskParams) -> Task:
        if not declares(ctx.params, TASKS, extension=True):
            raise missing_capability({"extensions": {TASKS: {}}},
                                     f"{ctx.method} needs the io.modelcontextprotocol/tasks extension declared "
                                     "in the request's client capabilities.")
        named = ctx.request.headers.get("mcp-name") if ctx.request is not None else None
        if ctx.request is not None and named != params.taskId:
            raise MCPError(HEADER_MISMATCH, "The Mcp-Name header must equal params.taskId.")
        task = self.table.get(params.taskId, owner=owner_of(ctx), room=self.room)
        if task is None:
            raise MCPError(types.INVALID_PARAMS, f"Unknown task {params.taskId!r} (never created, or expired).")
        return task

    async def _get(self, ctx: ServerRequestContext, params: _TaskParams) -> dict[str, Any]:
        return self._task(ctx, params).detailed()

    async def _update(self, ctx: ServerRequestContext, params: _UpdateParams) -> dict[str, Any]:
        task = self._task(ctx, params)
        self.answer(task, params.inputResponses)
        return {}

    async def _cancel(self, ctx: ServerRequestContext, params: _TaskParams) -> dict[str, Any]:
        task = self._task(ctx, params)
        runner = self._running.get(task.task_id)
        if runner is not None:
            runner.cancel()  # the page call's cancel tells the page (agui.tool.cancel): its dialog closes
        else:
            self.table.cancelled(task, "Cancelled by the agent.")
        return {}

    def answer(self, task: Task, responses: dict[str, Any]) -> None:
        """Answers to the task's outstanding input requests; others are ignored. Once all are in, the
        page is called again with them."""
        if not all(isinstance(response, dict) for response in responses.values()):
            raise MCPError(types.INVALID_PARAMS, "inputResponses must be an object whose values are objects.")
        waiting = self._answers.get(task.task_id)
        taken = self.table.answered(task, list(responses))
        if waiting is None:
            return
        given, answered = waiting
        given.update({key: responses[key] for key in taken})
        if task.status == "working":
            answered.set()
