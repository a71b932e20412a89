"""The real MCP SDK client speaking the tasks extension (`io.modelcontextprotocol/tasks`), which the SDK leaves to
extensions: it declares the extension, takes a `tools/call` answered with a task (`resultType: "task"`), and reads
the task with `tasks/get`, from the server it called or from another (a bridge process sharing its tasks)."""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from mcp import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp_types import CallToolResult, Request, RequestParams, Result
from pydantic import ConfigDict

TASKS = "io.modelcontextprotocol/tasks"
TERMINAL = ("completed", "failed", "cancelled")


class CreatedTask(Result):
    """A `tools/call` answered with a task."""

    model_config = ConfigDict(extra="allow")
    result_type: Literal["task"]
    task_id: str
    status: str


class TaskState(Result):
    """A task as `tasks/get` shows it: its status, and its result or error once it has one."""

    model_config = ConfigDict(extra="allow")
    task_id: str
    status: str
    status_message: str | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


class TaskParams(RequestParams):
    task_id: str


class GetTask(Request[TaskParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskParams
    name_param = "taskId"  # the extension asks for the task's id in the Mcp-Name header


class CancelTask(Request[TaskParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: TaskParams
    name_param = "taskId"


async def cancel_task(client: Client, task_id: str) -> None:
    await client.session.send_request(CancelTask(params=TaskParams(task_id=task_id)), Result)


async def get_task(client: Client, task_id: str) -> TaskState:
    return await client.session.send_request(GetTask(params=TaskParams(task_id=task_id)), TaskState)


async def task_ending(client: Client, task_id: str, timeout: float = 30) -> TaskState:
    """The task once it has ended (polled through `client`, bounded)."""
    async def poll() -> TaskState:
        while (state := await get_task(client, task_id)).status not in TERMINAL:
            await asyncio.sleep(0.05)
        return state
    return await asyncio.wait_for(poll(), timeout)


class Tasks(ClientExtension):
    """The client's side of the extension: declared in every request, and a task answering `call_tool` is read
    with `tasks/get` until it ends (its result is the call's)."""

    identifier = TASKS

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreatedTask, resolve=self._resolve)]

    async def _resolve(self, created: CreatedTask, context: ClaimContext) -> CallToolResult:
        async def poll() -> TaskState:
            request = GetTask(params=TaskParams(task_id=created.task_id))
            while (state := await context.session.send_request(request, TaskState)).status not in TERMINAL:
                await asyncio.sleep(0.05)
            return state
        state = await poll()
        if state.result is None:
            raise RuntimeError(f"task {state.status}: {state.error or state.status_message}")
        return CallToolResult.model_validate(state.result)


async def start_task(client: Client, name: str, arguments: dict[str, Any]) -> CreatedTask:
    """`tools/call` of `name`, answered with a task (not waited for)."""
    created = await client.session.call_tool(name, arguments, allow_claimed=True)
    assert isinstance(created, CreatedTask), created
    return created
