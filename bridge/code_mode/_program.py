"""One program's run: it drives the sandbox from pause to pause, starts the program's tool calls, answers them,
and parks the program (dumps it and gives its worker back) whenever it has nothing to do but wait.

A run goes in legs: each leg holds one worker, from a fresh start or a loaded snapshot until the program ends or
waits on calls none of which has answered. In a leg, each pause is one of:
- a tool called (`get_order(...)`, `call_tool(...)`): the call starts, and the program gets a future it awaits;
- a name read that is a tool (`f = get_order`): the program gets the function;
- an undefined name called, or the file system, environment, network... asked for: refused, as an exception in
  the program;
- every task of the program waiting on calls: the answers already in go in; if none is, the leg ends, parked.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import cached_property, partial
from typing import Any

import pydantic_monty
from pydantic_monty import (
    FunctionSnapshot,
    FutureSnapshot,
    MontyComplete,
    MontyError,
    MontyRuntimeError,
    MontyTypingError,
    NameLookupSnapshot,
)

from bridge.code_mode import _values
from bridge.code_mode._errors import from_monty, from_type_check
from bridge.code_mode._workers import SandboxClosed, Session, Workers
from bridge.code_mode.limits import Limits
from bridge.code_mode.parked import ParkedProgram, PendingCall
from bridge.code_mode.run_result import RunError, RunResult
from bridge.code_mode.signatures import CALL_TOOL
from bridge.code_mode.tool_calls import CALL_ID, AnswerLost, CallFinished, CallFinishedSink, ToolCaller, ToolError

log = logging.getLogger(__name__)
Snapshot = FunctionSnapshot | NameLookupSnapshot | FutureSnapshot | MontyComplete
ParkSink = Callable[[ParkedProgram], None]
# Checking a program that imports a module the sandbox does not have, the type checker first asks the host for
# its stubs; then it finds the import unresolved.
STUBS_ASKED = "import_stubs"
CLOSED = RunError("closed", "the sandbox is closed (the bridge is stopping)")


class _Stop(Exception):
    """The run ends here, for the reason given (a limit, the type checker's refusal)."""

    def __init__(self, error: RunError) -> None:
        super().__init__(error.message)
        self.error = error


class _PrintedTooMuch(Exception):
    pass


class _Printed:
    """What the program printed, kept up to its limit; printing past it stops the program."""

    def __init__(self, max_chars: int, text: str = "", over: bool = False) -> None:
        self.max_chars = max_chars
        self.text = text
        self.over = over

    def __call__(self, stream: str, text: str) -> None:
        room = self.max_chars - len(self.text)
        if self.over or len(text) > room:
            self.text += text[:max(room, 0)]
            self.over = True
            raise _PrintedTooMuch  # the run's error says so (`Run._printed_error`): this message is never shown
        self.text += text


@dataclass(eq=False)
class _Call:
    call_id: int
    name: str
    arguments: dict[str, Any]
    answer: asyncio.Future[Any]


@dataclass(frozen=True)
class Program:
    """What a run is given: the source, and the signatures (for error messages) of the names that are tools."""

    run_id: str
    code: str
    signatures: Mapping[str, str]  # of the tools that are functions in the program, and of `call_tool`
    limits: Limits

    @cached_property
    def functions(self) -> frozenset[str]:
        """The names that are tools in the program: those of `signatures`."""
        return frozenset(self.signatures)


class Run:
    def __init__(self, workers: Workers, program: Program, caller: ToolCaller, *, park_after: float = 0.0,
                 on_call_finished: CallFinishedSink | None = None, on_park: ParkSink | None = None,
                 calls_started: int = 0, printed: _Printed | None = None) -> None:
        self._workers = workers
        self._park_after = park_after
        self._program = program
        self._limits = program.limits
        self._caller = caller
        self._on_call_finished = on_call_finished
        self._on_park = on_park
        self._source = program.code.encode()
        self._calls: dict[int, _Call] = {}  # started, and not yet answered in the program
        self._started = calls_started
        self._finished = 0
        self._printed = printed or _Printed(self._limits.max_printed_chars)

    @classmethod
    def parked(cls, workers: Workers, program: Program, parked: ParkedProgram, answers: Mapping[int, Awaitable[Any]],
               caller: ToolCaller, **options: Any) -> Run:
        """A parked program, to go on: the answers to its pending calls come from `answers`; a call missing
        there is answered "outcome unknown"."""
        run = cls(workers, program, caller, calls_started=parked.calls_started,
                  printed=_Printed(parked.limits.max_printed_chars, parked.printed, parked.printed_over), **options)
        for pending in parked.pending:
            answer = answers.get(pending.call_id)
            run._track(pending.call_id, pending.name, pending.arguments,
                       asyncio.ensure_future(answer) if answer is not None else _lost())
        return run

    async def from_start(self, type_check_stubs: str | None) -> RunResult:
        limits = {"max_feed_duration_secs": self._limits.compute_seconds, "max_memory": self._limits.memory_bytes,
                  "max_suspensions": self._limits.max_suspensions}
        checkout: dict[str, Any] = {"limits": limits}
        if type_check_stubs is not None:
            checkout |= {"type_check": True, "type_check_stubs": type_check_stubs, "type_check_format": "json"}
        return await self._legs(checkout, self._feed)

    async def from_snapshot(self, snapshot: bytes) -> RunResult:
        return await self._legs({}, partial(self._load, snapshot))

    async def _legs(self, checkout: dict[str, Any], begin: Callable[[Session], Awaitable[Snapshot]]) -> RunResult:
        try:
            while True:
                async with self._workers.session(**checkout) as session:
                    snapshot = await self._advance(session, await begin(session))
                    if isinstance(snapshot, MontyComplete):
                        return self._completed(snapshot.output)
                    dump, pending = await session.run(snapshot.dump), snapshot.pending_call_ids
                self._park(dump)
                await self._any_answer(pending)
                checkout, begin = {}, partial(self._load, dump)
        except _Stop as stop:
            return self._ended(stop.error)
        except SandboxClosed:
            return self._ended(CLOSED)
        except MontyError as error:
            if self._workers.closed:  # its worker stopped with the sandbox
                return self._ended(CLOSED)
            return self._ended(self._printed_error() or from_monty(error, self._limits))
        finally:
            for call in self._calls.values():  # the program is over: nobody reads these answers
                if not call.answer.cancel() and not call.answer.cancelled():
                    call.answer.exception()  # read, so that a failed call is not reported as never read

    async def _feed(self, session: Session) -> Snapshot:
        feed = partial(session.monty.feed_start, self._program.code, print_callback=self._printed)
        try:
            snapshot = await session.run(feed)
            while isinstance(snapshot, FunctionSnapshot) and snapshot.function_name == STUBS_ASKED:
                snapshot = await session.run(snapshot.resume_not_handled)  # no stubs but the tools'
            return snapshot
        except MontyTypingError as error:
            refusal = from_type_check(error, self._program.signatures)
            if refusal is not None:
                raise _Stop(refusal) from None
            return await session.run(partial(feed, skip_type_check=True))

    async def _load(self, snapshot: bytes, session: Session) -> Snapshot:
        try:
            return await session.run(partial(session.monty.load_snapshot, snapshot, print_callback=self._printed))
        except MontyRuntimeError as error:  # a record damaged on its way
            raise _Stop(RunError("invalid", f"the parked program cannot be loaded: {error}")) from None

    async def _advance(self, session: Session, snapshot: Snapshot) -> MontyComplete | FutureSnapshot:
        """Answer the program's pauses until it ends or waits on calls none of which has answered."""
        while True:
            if isinstance(snapshot, MontyComplete):
                return snapshot
            if isinstance(snapshot, FunctionSnapshot):
                if snapshot.is_os_function:  # files, environment, sleeping...: the sandbox's refusal
                    snapshot = await session.run(snapshot.resume_not_handled)
                else:
                    snapshot = await session.run(snapshot.resume, self._call(snapshot))
            elif isinstance(snapshot, NameLookupSnapshot):
                name = snapshot.variable_name
                if name in self._program.functions:
                    snapshot = await session.run(partial(snapshot.resume, value=_function_named(name)))
                else:
                    snapshot = await session.run(snapshot.resume)  # NameError in the program
            else:
                answers = self._answers(snapshot.pending_call_ids)
                if not answers and self._park_after > 0:  # a quick page answers before parking is worth it
                    await self._any_answer(snapshot.pending_call_ids, self._park_after)
                    answers = self._answers(snapshot.pending_call_ids)
                if not answers:
                    return snapshot
                snapshot = await session.run(snapshot.resume, answers)

    def _call(self, snapshot: FunctionSnapshot) -> dict[str, Any]:
        """Start the tool call the program makes: its future, or the exception the program reads instead."""
        name = snapshot.function_name
        if name not in self._program.functions:
            return _values.raised(f"name '{name}' is not defined", "NameError")
        try:
            tool, arguments = self._tool_and_arguments(name, snapshot.args, snapshot.kwargs)
        except TypeError as problem:
            return _values.raised(str(problem), "TypeError")
        line = self._line(snapshot.position.start)
        if self._started >= self._limits.max_calls:
            raise _Stop(RunError("limit", f"calls limit reached: a run starts at most {self._limits.max_calls:,} "
                                 "tool calls", line, limit="max_calls"))
        in_flight = sum(not call.answer.done() for call in self._calls.values())
        if in_flight >= self._limits.max_calls_in_flight:
            raise _Stop(RunError("limit", f"calls in flight limit reached: at most {self._limits.max_calls_in_flight}"
                                 " tool calls wait for their answers at once (gather them in smaller batches)",
                                 line, limit="max_calls_in_flight"))
        self._started += 1
        answer = asyncio.ensure_future(_ask(self._caller, snapshot.call_id, tool, arguments))
        answer.add_done_callback(partial(self._answered, tool))
        self._track(snapshot.call_id, tool, arguments, answer)
        return {"future": ...}

    def _tool_and_arguments(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
                            ) -> tuple[str, dict[str, Any]]:
        if name == CALL_TOOL:
            return _call_tool_arguments(args, kwargs)
        if args:
            shown = self._program.signatures.get(name, f"{name}(...)")
            raise TypeError(f"{name}() takes keyword arguments only: {shown}")
        return name, {key: _values.arguments(value, key) for key, value in kwargs.items()}

    def _track(self, call_id: int, name: str, arguments: dict[str, Any], answer: asyncio.Future[Any]) -> None:
        self._calls[call_id] = _Call(call_id, name, arguments, answer)

    def _answered(self, name: str, answer: asyncio.Future[Any]) -> None:
        if answer.cancelled() or self._on_call_finished is None:
            return
        self._finished += 1
        error = answer.exception()
        ok = error is None and not (isinstance(result := answer.result(), dict) and result.get("isError") is True)
        try:
            self._on_call_finished(CallFinished(name, ok, self._finished, self._started))
        except Exception:
            log.exception("the progress callback of a program failed")

    def _answers(self, pending: list[int]) -> dict[int, dict[str, Any]]:
        """The answers in for the calls the program waits on; a call this run does not know is lost."""
        answers = {}
        for call_id in pending:
            call = self._calls.get(call_id)
            if call is None:
                answers[call_id] = _values.raised(_outcome_unknown(None))
            elif call.answer.done():
                answers[call_id] = _for_program(call)
                del self._calls[call_id]
        return answers

    def _park(self, dump: bytes) -> None:
        if self._on_park is None:
            return
        pending = tuple(PendingCall(c.call_id, c.name, c.arguments) for c in self._calls.values())
        self._on_park(ParkedProgram(
            run_id=self._program.run_id, code=self._program.code, snapshot=dump, pending=pending,
            calls_started=self._started, printed=self._printed.text, printed_over=self._printed.over,
            limits=self._limits, monty_version=pydantic_monty.__version__))

    async def _any_answer(self, pending: list[int], timeout: float | None = None) -> None:
        waiting = [self._calls[call_id].answer for call_id in pending if call_id in self._calls]
        if len(waiting) == len(pending):  # else a lost call is answered at once
            await asyncio.wait(waiting, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)

    def _completed(self, output: Any) -> RunResult:
        if (printed_error := self._printed_error()) is not None:
            return self._ended(printed_error)
        try:
            value, text, chars, cut = _values.returned(output, self._limits.max_value_chars)
        except _values.ValueTooDeep as problem:
            return self._ended(RunError("value", f"the value cannot be returned: {problem}"))
        return RunResult(value=value, value_text=text, value_chars=chars, cut=cut, printed=self._printed.text,
                         calls=self._started)

    def _ended(self, error: RunError) -> RunResult:
        return RunResult(error=error, printed=self._printed.text, calls=self._started)

    def _printed_error(self) -> RunError | None:
        if not self._printed.over:
            return None
        return RunError("limit", f"printed output limit reached ({self._limits.max_printed_chars:,} characters): "
                        "print less, or return what matters as the value", limit="max_printed_chars")

    def _line(self, offset: int) -> int:
        return self._source[:offset].count(b"\n") + 1


def _call_tool_arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """`call_tool(name, arguments=None)`, bound as Python binds it."""
    unknown = set(kwargs) - {"name", "arguments"}
    if unknown:
        raise TypeError(f"call_tool() got an unexpected keyword argument {sorted(unknown)[0]!r}")
    if len(args) > 2:
        raise TypeError(f"call_tool() takes 2 arguments (name, arguments) but {len(args)} were given")
    bound = dict(zip(("name", "arguments"), args))
    for key, value in kwargs.items():
        if key in bound:
            raise TypeError(f"call_tool() got multiple values for argument {key!r}")
        bound[key] = value
    name, arguments = bound.get("name"), bound.get("arguments")
    if not isinstance(name, str):
        raise TypeError(f"call_tool() needs the tool's name as a string, not {type(name).__name__}")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise TypeError(f"call_tool() takes the arguments as a dict, not {type(arguments).__name__}")
    return name, _values.arguments(arguments, "arguments")


def _for_program(call: _Call) -> dict[str, Any]:
    """A call's answer as the program reads it: the page's value, or the exception it raises."""
    answer = call.answer
    if answer.cancelled():
        return _values.raised(f"the call to {call.name} was cancelled")
    error = answer.exception()
    if error is None:
        return _values.from_page(answer.result())
    if isinstance(error, AnswerLost):
        return _values.raised(_outcome_unknown(call.name))
    if isinstance(error, ToolError):
        return _values.raised(str(error))
    log.warning("a tool caller failed on %s", call.name, exc_info=error)
    return _values.raised(f"{type(error).__name__}: {error}")


def _outcome_unknown(name: str | None) -> str:
    call = f"the call to {name}" if name else "a call"
    return f"outcome unknown: the answer to {call} was lost; it may or may not have taken effect"


async def _ask(caller: ToolCaller, call_id: int, name: str, arguments: dict[str, Any]) -> Any:
    CALL_ID.set(call_id)  # in this call's own task (and context) only
    return await caller(name, arguments)  # a caller failing before its first await fails this call only


def _lost() -> asyncio.Future[Any]:
    lost: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    lost.set_exception(AnswerLost())
    lost.exception()  # read: a lost call the program never awaits is not worth a warning
    return lost


def _function_named(name: str) -> Callable[..., Any]:
    """A stand-in the sandbox binds to a tool's name: calling it pauses the program with that name, so the host's
    function never runs."""
    def tool(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("called on the host")
    tool.__name__ = tool.__qualname__ = name
    return tool
