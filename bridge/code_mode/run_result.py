"""What a run ends with: the program's value (JSON-able, cut past the value limit), what it printed, or an error
naming what happened and where."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

# syntax: the program does not parse, or uses what the sandbox's Python lacks (no line ran);
# type_check: a tool called with wrong arguments, an unknown name, a missing await (no line ran);
# exception: an exception the program did not catch; limit: a limit of `Limits` (its name in `limit`);
# value: the value cannot be returned (nested too deep); invalid: the run could not start (program too long, a
# parked record from another Monty version); crashed: the sandbox's worker died; closed: the sandbox was closed.
ErrorKind = Literal["syntax", "type_check", "exception", "limit", "value", "invalid", "crashed", "closed"]


@dataclass(frozen=True)
class RunError:
    kind: ErrorKind
    message: str  # one line: "ValueError: no such order", "compute time limit reached (5 s)"
    line: int | None = None  # in the program, 1-based, where known
    details: str = ""  # the traceback, or the type checker's diagnostics
    limit: str | None = None  # for kind "limit": the `Limits` field reached

    def text(self) -> str:
        """What the agent reads."""
        where = f" (line {self.line})" if self.line is not None else ""
        head = f"The program stopped{where}: {self.message}"
        return f"{head}\n{self.details}" if self.details else head


@dataclass(frozen=True)
class RunResult:
    value: Any = None  # the program's value as JSON-able data; when cut, the cut JSON text and the note
    value_text: str = "null"  # the value's JSON text, cut past `Limits.max_value_chars` with a note
    value_chars: int = 4  # the length of the value's whole JSON text
    cut: bool = False
    printed: str = ""  # what the program printed, up to `Limits.max_printed_chars`
    error: RunError | None = None
    calls: int = 0  # tool calls the program started

    @property
    def ok(self) -> bool:
        return self.error is None

    def text(self) -> str:
        """What the agent reads: the value's JSON text or the error, then what the program printed."""
        text = self.value_text if self.error is None else self.error.text()
        return f"{text}\n\nPrinted:\n{self.printed}" if self.printed else text
