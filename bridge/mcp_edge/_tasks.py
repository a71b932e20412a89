"""The MCP tasks extension (`io.modelcontextprotocol/tasks`) for page tools.

An agent that declares the extension on a `tools/call` of a tool the page marked
`execution.taskSupport` "optional" or "required" gets a task at once; the page
call runs on, beyond the HTTP request and the client's timeout, and the agent
reads its outcome with `tasks/get`, answers its input requests with
`tasks/update`, or stops it with `tasks/cancel` (the page's handler is aborted).
The SDK has the seam (`mcp.server.extension`) but not the extension; this is
the thin edge, the state is `bridge.core.tasks.TaskTable`.

A task belongs to the credential its agent presented: agents presenting the same one
(or none) are one agent here, who may read each other's tasks and share one bound.

In shared mode a task's run may outlive its process (`SurvivingRuns`: an agent's program): a
process finding a task whose process stopped claims its run, and the task goes on here.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Protocol

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.extension import Extension, MethodBinding
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ConfigDict

from bridge.access import credential
from bridge.core.messages import CancelReason
from bridge.core.tasks import Task, TaskTable, TooManyTasks
from bridge.mcp_edge._input import INPUT_ROUNDS_MAX, checked_responses, declares_extension

log = logging.getLogger(__name__)

TASKS = "io.modelcontextprotocol/tasks"
MISSING_CAPABILITY = -32021
HEADER_MISMATCH = -32020
TASK_EXPIRED = CancelReason("the task expired")  # what the page is told when a task's time to live runs out
PROCESS_STOPPED = ("The bridge process that ran this task stopped, and its page call ended with it; "
                   "call the tool again.")
NOT_HEARD = ("The bridge process that runs this task did not hear that (it may be reconnecting to Redis); "
             "send it again.")

# One round of a task's call, given its task and the agent's answers so far: a CallToolResult (wire JSON), or
# InputNeeded.
RunCall = Callable[[Task, dict[str, Any]], Coroutine[Any, Any, dict[str, Any]]]


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


def missing_capability(required: dict[str, Any], message: str) -> MCPError:
    return MCPError(MISSING_CAPABILITY, message, {"requiredCapabilities": required})


def owner_of(ctx: ServerRequestContext) -> str:
    """Who a task belongs to: a digest of the credential its agent presented (however it spells the
    scheme), never the credential."""
    presented = credential(ctx.request.headers) if ctx.request is not None else ""
    return hashlib.sha256(presented.encode()).hexdigest() if presented else ""


class SharedTasks(Protocol):
    """Tasks kept where every bridge process sharing rooms reads them (Redis): a task is saved at each
    change by the process running its call; a cancel or answers for it are sent to that process."""

    async def save(self, task: Task) -> None: ...

    async def forget(self, task_ids: list[str]) -> None: ...

    async def load(self, task_id: str) -> tuple[Task, bool] | None: ...  # and whether its call's process lives

    # {"cancel": true} | {"answers": {...}}, to the process running the task's call; whether it heard it.
    async def send(self, task_id: str, order: dict[str, Any]) -> bool: ...

    async def shared_secret(self) -> str | None: ...  # seals input requests' state for every process

    def listen(self, orders: Callable[[str, dict[str, Any]], Awaitable[None]]) -> None: ...

    async def close(self) -> None: ...


class Resumed(Protocol):
    """A run claimed from a stopped process: go on with it as its task's (`run`), or let it go (`drop`)."""

    async def run(self, room: str) -> dict[str, Any]: ...  # the CallToolResult (wire JSON)

    async def drop(self) -> None: ...


class SurvivingRuns(Protocol):
    """Task runs that outlive their process (an agent's program, in shared mode)."""

    async def orphans(self) -> list[str]: ...  # the tasks whose run's process stopped, not yet claimed

    # Take the task's run over if its process stopped (one process wins); else True when a living process
    # holds it, False when it has no run that survives.
    async def claim(self, task_id: str) -> Resumed | bool: ...


class PageTasks(Extension):
    """The bridge's tasks: decides which calls become tasks, runs them, answers tasks/* for each room."""

    identifier = TASKS

    def __init__(self, table: TaskTable, shared: SharedTasks | None = None,
                 survivors: SurvivingRuns | None = None) -> None:
        self.table, self.shared = table, shared
        self.survivors = survivors if shared is not None else None  # a run outlives its process in shared mode
        self._running: dict[str, asyncio.Task[None]] = {}  # the page calls of tasks still working, by task id
        self._answers: dict[str, tuple[dict[str, Any], asyncio.Event]] = {}  # for tasks waiting on input

    def methods_for(self, room: str) -> list[MethodBinding]:
        async def get(ctx: ServerRequestContext, params: _TaskParams) -> dict[str, Any]:
            return (await self._task(ctx, params, room)).detailed()

        async def update(ctx: ServerRequestContext, params: _UpdateParams) -> dict[str, Any]:
            task = await self._task(ctx, params, room)
            await self._order(task, {"answers": checked_responses(params.inputResponses)})
            return {}

        async def cancel(ctx: ServerRequestContext, params: _TaskParams) -> dict[str, Any]:
            task = await self._task(ctx, params, room)
            await self._order(task, {"cancel": True})
            return {}

        return [MethodBinding("tasks/get", _TaskParams, get), MethodBinding("tasks/update", _UpdateParams, update),
                MethodBinding("tasks/cancel", _TaskParams, cancel)]

    def stop(self) -> None:
        for runner in list(self._running.values()):
            runner.cancel()

    # --- tools/call ------------------------------------------------------------------------

    def wants_task(self, ctx: ServerRequestContext, task_support: str, *, asks_first: bool = False) -> bool:
        """Whether this call becomes a task; -32021 for a tool that needs one from an agent that cannot.
        `asks_first`: the page asks for input before its call is a task (the first round is synchronous)."""
        if task_support == "forbidden":
            return False
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS and declares_extension(ctx, TASKS):
            return not asks_first
        if task_support == "required":
            raise missing_capability({"extensions": {TASKS: {}}},
                                     "This tool runs only as a task: declare the io.modelcontextprotocol/tasks "
                                     "extension in the request's client capabilities.")
        return False

    async def start(self, owner: str, room: str, tool: str, task_support: str,
                    run: RunCall) -> dict[str, Any] | None:
        """Creates the task of `owner` (`owner_of` the call's agent), starts the call, and answers with the
        task (CreateTaskResult) once any process would find it. When no task can be kept now, an "optional"
        tool runs without one (None), a "required" one is refused."""
        try:
            task = self.table.create(owner=owner, room=room, tool=tool)
        except TooManyTasks as exc:
            if task_support == "optional":
                return None
            raise MCPError(types.INTERNAL_ERROR, str(exc)) from None
        await self._saved(task)
        self._start(task, run)
        return {"resultType": "task", **task.detailed()}

    def _start(self, task: Task, run: RunCall) -> None:
        runner = asyncio.get_running_loop().create_task(self._run(task, run), name=f"task {task.task_id}")
        self._running[task.task_id] = runner
        runner.add_done_callback(lambda _: self._running.pop(task.task_id, None))

    async def _run(self, task: Task, run: RunCall) -> None:
        runner, expired = asyncio.current_task(), False
        assert runner is not None

        def expire() -> None:  # the page is told why its call ends (asyncio.timeout would say nothing)
            nonlocal expired
            expired = True
            runner.cancel(TASK_EXPIRED)

        expiry = asyncio.get_running_loop().call_later(max(0.0, task.expires_at() - time.time()), expire)
        try:
            result = await self._rounds(task, run)
        except asyncio.CancelledError:
            if not expired:
                self.table.cancelled(task, "Cancelled by the agent.")
                raise
            runner.uncancel()
            self.table.failed(task, types.INTERNAL_ERROR, "The task's time to live ran out before the page answered.")
        except MCPError as exc:
            self.table.failed(task, exc.error.code, exc.error.message)
        except Exception:
            log.exception("task %s failed", task.task_id)
            self.table.failed(task, types.INTERNAL_ERROR, "The bridge failed to run the call.")
        else:
            self.table.completed(task, result)
        finally:
            expiry.cancel()
            self._answers.pop(task.task_id, None)
            await asyncio.shield(self._saved(task))

    async def _rounds(self, task: Task, run: RunCall) -> dict[str, Any]:
        answers: dict[str, Any] = {}
        for _ in range(INPUT_ROUNDS_MAX):
            try:
                return await run(task, answers)
            except InputNeeded as needed:
                given: dict[str, Any] = {}
                answered = asyncio.Event()
                self._answers[task.task_id] = (given, answered)
                if (problem := self.table.ask(task, needed.requests)) is not None:
                    raise MCPError(types.INTERNAL_ERROR, problem) from None
                await self._saved(task)
                await answered.wait()
                answers = {"input_responses": given, "request_state": needed.page_state}
        raise MCPError(types.INTERNAL_ERROR, f"The page asked for input more than {INPUT_ROUNDS_MAX} times.")

    # --- runs that outlive their process ----------------------------------------------------

    async def adopting(self, interval: float) -> None:
        """Every `interval` seconds, go on here with the runs whose process stopped (until cancelled). Run only
        when runs survive their process (`McpRooms.running`)."""
        survivors = self.survivors
        assert survivors is not None
        failing = False
        while True:
            await asyncio.sleep(interval)
            try:
                for task_id in await survivors.orphans():
                    await self._adopt(task_id)
            except Exception as exc:  # Redis away: tried again at the next round, said once
                if not failing:
                    log.warning("could not take over the runs of stopped processes (trying again): %s", exc)
                failing = True
            else:
                failing = False

    async def _adopt(self, task_id: str, task: Task | None = None) -> bool:
        """Claim the run of a task whose process stopped, and go on with it here; whether it goes on (here, or
        in the living process that claimed it first). `task`: as already read from the shared store, else
        read once its run is claimed."""
        if self.survivors is None:  # then there is no shared store either (__init__)
            return False
        claimed = await self.survivors.claim(task_id)
        if isinstance(claimed, bool):
            return claimed
        if task is None:
            assert self.shared is not None
            stored = await self.shared.load(task_id)
            task = stored[0] if stored is not None else None
        if task is None or task.terminal or task.expires_at() <= time.time():
            await claimed.drop()  # its task ended (or expired) before its process stopped
            return False
        self.table.adopt(task)
        await self._saved(task)  # from now on, orders for it come here
        log.info("task %s: its run goes on in this process (its own stopped)", task_id)
        self._start(task, lambda task, answers: claimed.run(task.room))
        return True

    async def _saved(self, task: Task) -> None:
        """Writes the task where other processes read it, and forgets there the tasks the table
        forgot to make room (every change that may drop some is saved)."""
        dropped = self.table.dropped()
        if self.shared is not None:
            if dropped:
                await self.shared.forget(dropped)
            await self.shared.save(task)

    # --- tasks/get, tasks/update, tasks/cancel -----------------------------------------------

    async def _task(self, ctx: ServerRequestContext, params: _TaskParams, room: str) -> Task:
        if not declares_extension(ctx, TASKS):
            raise missing_capability({"extensions": {TASKS: {}}},
                                     f"{ctx.method} needs the io.modelcontextprotocol/tasks extension declared "
                                     "in the request's client capabilities.")
        named = ctx.request.headers.get("mcp-name") if ctx.request is not None else None
        if ctx.request is not None and named != params.taskId:
            raise MCPError(HEADER_MISMATCH, "The Mcp-Name header must equal params.taskId.")
        owner = owner_of(ctx)
        task = self.table.get(params.taskId, owner=owner, room=room)
        if task is None and self.shared is not None:  # made by another process
            task = await self._stored(self.shared, params.taskId, owner=owner, room=room)
        if task is None:
            raise MCPError(types.INVALID_PARAMS, f"Unknown task {params.taskId!r} (never created, or expired).")
        return task

    async def _stored(self, shared: SharedTasks, task_id: str, *, owner: str, room: str) -> Task | None:
        """A task as another process saved it. One still running when its process stopped goes on here if its
        run survives it (an agent's program), else fails now: no one else would end it."""
        stored = await shared.load(task_id)
        task, running = stored if stored is not None else (None, False)
        task = self.table.readable(task, owner=owner, room=room)
        if task is not None and not running and not task.terminal:
            if await self._adopt(task_id, task):
                return self.table.known(task_id) or task
            self.table.failed(task, types.INTERNAL_ERROR, PROCESS_STOPPED)
            await shared.save(task)
        return task

    async def _order(self, task: Task, order: dict[str, Any]) -> None:
        """An agent's cancel or answers: carried out here when the task's call runs here, else sent to
        the process where it runs (shared mode). A task that ended takes neither."""
        if task.terminal:
            return
        if self.table.known(task.task_id) is not None or self.shared is None:
            await self.carry_out(task.task_id, order)
        elif not await self.shared.send(task.task_id, order):
            raise MCPError(types.INTERNAL_ERROR, NOT_HEARD)

    async def carry_out(self, task_id: str, order: dict[str, Any]) -> None:
        """A cancel or answers for a task whose call runs here; for any other task (ended, or not
        this process's), nothing: an order is never passed on, so none goes round between processes."""
        runner = self._running.get(task_id)
        if runner is None:
            return
        if order.get("cancel"):
            runner.cancel()  # the page call's cancel tells the page (agui.tool.cancel): its dialog closes
        elif isinstance(order.get("answers"), dict):
            self._answer(task_id, order["answers"])
            if (task := self.table.known(task_id)) is not None:
                await self._saved(task)

    def _answer(self, task_id: str, responses: dict[str, Any]) -> None:
        """Answers to the task's outstanding input requests; others are ignored. Once all are in, the
        page is called again with them."""
        task, waiting = self.table.known(task_id), self._answers.get(task_id)
        if task is None or waiting is None:
            return
        taken = self.table.answered(task, list(responses))
        given, answered = waiting
        given.update({key: responses[key] for key in taken})
        if task.status == "working":
            answered.set()
