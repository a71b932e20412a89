"""What the sandbox's errors mean for the agent: a syntax error, an uncaught exception, a limit reached (the sandbox
raises those as TimeoutError, MemoryError or RuntimeError, which the program cannot catch), the type checker's
verdict, a worker that died."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from pydantic_monty import MontyCrashedError, MontyError, MontyRuntimeError, MontySyntaxError, MontyTypingError

from bridge.code_mode.limits import Limits
from bridge.code_mode.run_result import RunError
from bridge.code_mode.signatures import BUILTIN_NAMES

_INPUT_NAME = re.compile(r"<python-input-\d+>")  # how the sandbox names the fed source in tracebacks
UNSUPPORTED = "The monty syntax parser does not yet support "
# The type checker's verdicts that stop a program before it runs: a tool called with arguments it does not take,
# a name that is not defined, a call's result used without `await`. Its other findings (a value possibly None, a
# module name rebound) are often wrong about a dynamic program and are not shown.
CALL_RULES = frozenset({"missing-argument", "unknown-argument", "invalid-argument-type",
                        "too-many-positional-arguments", "parameter-already-assigned"})
_FUNCTION_NAMED = re.compile(r"function `([^`]+)`")
_NAME_UNDEFINED = re.compile(r"Name `([^`]+)` used when not defined")
TYPE_DIAGNOSTICS_SHOWN = 10


def _program_text(text: str) -> str:
    return _INPUT_NAME.sub("program", text)


def from_monty(error: MontyError, limits: Limits) -> RunError:
    if isinstance(error, MontySyntaxError):
        frames = error.traceback()
        return RunError("syntax", _program_text(error.display("type-msg")), frames[-1].line if frames else None,
                        _program_text(error.display()))
    if isinstance(error, MontyRuntimeError):
        return _runtime(error, limits)
    if isinstance(error, MontyCrashedError):
        why = "did not answer in time" if error.timed_out else "died"
        return RunError("crashed", f"the sandbox's worker {why} ({error})")
    return RunError("exception", _program_text(str(error)))


def _runtime(error: MontyRuntimeError, limits: Limits) -> RunError:
    frames = error.traceback()
    line = frames[-1].line if frames else None
    inner = error.exception()
    message = _program_text(error.display("msg"))
    if isinstance(inner, TimeoutError) and "time limit exceeded" in message:
        return RunError("limit", f"compute time limit reached ({limits.compute_seconds:g} s of computing; time "
                        "waiting on tools does not count)", line, limit="compute_seconds")
    if isinstance(inner, MemoryError) and "memory limit exceeded" in message:
        return RunError("limit", f"memory limit reached ({limits.memory_bytes:,} bytes)", line, limit="memory_bytes")
    if isinstance(inner, RuntimeError) and "suspension limit" in message:
        return RunError("limit", f"the program called out of the sandbox too often (over {limits.max_suspensions:,} "
                        "times: tool calls, refused file or module accesses, tools read as values)", line,
                        limit="max_calls")
    if isinstance(inner, NotImplementedError) and message.startswith(UNSUPPORTED):
        feature = message.removeprefix(UNSUPPORTED)
        return RunError("syntax", f"the sandbox's Python has no {feature}", line, _program_text(error.display()))
    return RunError("exception", _program_text(error.display("type-msg")), line, _program_text(error.display()))


def from_type_check(error: MontyTypingError, signatures: Mapping[str, str]) -> RunError | None:
    """The type checker's verdicts that stop the program (see CALL_RULES), or None when it may run. `error`'s
    diagnostics are in ty's JSON format; `signatures`: of the names that are tools in the program."""
    try:
        diagnostics = json.loads(error.display())
    except ValueError:
        return None
    blocking = [d for d in diagnostics if isinstance(d, dict) and _blocks(d, signatures)]
    if not blocking:
        return None
    lines, named = [], []
    for diagnostic in blocking[:TYPE_DIAGNOSTICS_SHOWN]:
        lines.append(f"line {_row(diagnostic)}: {diagnostic.get('message', '')}")
        found = _FUNCTION_NAMED.search(str(diagnostic.get("message", "")))
        if found and found.group(1) in signatures and found.group(1) not in named:
            named.append(found.group(1))
    lines += [signatures[name] for name in named]
    first = blocking[0]
    return RunError("type_check", str(first.get("message", "")), _row(first), "\n".join(lines))


def _blocks(diagnostic: dict[str, object], signatures: Mapping[str, str]) -> bool:
    if diagnostic.get("severity") != "error" or diagnostic.get("filename") not in ("/main.py", "main.py"):
        return False
    rule, message = diagnostic.get("code"), str(diagnostic.get("message", ""))
    if rule == "unresolved-reference":  # but Python's builtins, which the checker may not know all of (`open`)
        undefined = _NAME_UNDEFINED.search(message)
        return undefined is None or undefined.group(1) not in BUILTIN_NAMES
    if "CoroutineType[" in message:
        return True
    found = _FUNCTION_NAMED.search(message)
    return rule in CALL_RULES and found is not None and found.group(1) in signatures


def _row(diagnostic: dict[str, object]) -> int | None:
    location = diagnostic.get("location")
    row = location.get("row") if isinstance(location, dict) else None
    return row if isinstance(row, int) else None
