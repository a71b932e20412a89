"""A parked program: one waiting on tool calls, held by no sandbox worker.

The record is plain data (JSON through `to_json`/`from_json`), so shared mode can keep it in Redis and any process
can resume it (`CodeMode.resume`) when answers arrive; a pending call whose answer is lost is resumed as "outcome
unknown" in the program. The snapshot is the sandbox's own dump (a few KB for a small program): load only records
this bridge wrote, the sandbox does not authenticate them.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any

import pydantic_monty

from bridge.code_mode.limits import Limits

RECORD_FORMAT = 1


@dataclass(frozen=True)
class PendingCall:
    call_id: int  # the sandbox's id for the call, unique within its run
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class ParkedProgram:
    run_id: str
    code: str
    snapshot: bytes = field(repr=False)
    pending: tuple[PendingCall, ...]
    calls_started: int
    printed: str
    printed_over: bool  # the program printed past its limit: the run ends with that error
    limits: Limits
    monty_version: str  # a snapshot loads only into the version of the sandbox that dumped it

    def version_problem(self) -> str | None:
        """Why this process's sandbox cannot load the snapshot (another version dumped it), or None."""
        if self.monty_version == pydantic_monty.__version__:
            return None
        return f"the program was parked by sandbox version {self.monty_version}, this process runs " \
               f"{pydantic_monty.__version__}"

    def to_json(self) -> str:
        return json.dumps({
            "format": RECORD_FORMAT, "run_id": self.run_id, "code": self.code,
            "snapshot": base64.b64encode(self.snapshot).decode("ascii"),
            "pending": [{"call_id": c.call_id, "name": c.name, "arguments": c.arguments} for c in self.pending],
            "calls_started": self.calls_started, "printed": self.printed, "printed_over": self.printed_over,
            "limits": self.limits.to_dict(), "monty_version": self.monty_version,
        }, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str | bytes) -> ParkedProgram:
        """Raises ValueError, saying what is wrong, for anything but a record `to_json` wrote."""
        try:
            data = json.loads(text)
            if not isinstance(data, dict) or data.get("format") != RECORD_FORMAT:
                raise ValueError(f"format {data.get('format') if isinstance(data, dict) else None!r}, "
                                 f"not {RECORD_FORMAT}")
            pending = tuple(PendingCall(int(c["call_id"]), expect_str(c["name"]), _object(c["arguments"]))
                            for c in data["pending"])
            return cls(run_id=expect_str(data["run_id"]), code=expect_str(data["code"]),
                       snapshot=base64.b64decode(data["snapshot"], validate=True), pending=pending,
                       calls_started=int(data["calls_started"]), printed=expect_str(data["printed"]),
                       printed_over=bool(data["printed_over"]), limits=Limits.from_dict(data["limits"]),
                       monty_version=expect_str(data["monty_version"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"not a parked program record: {exc}") from None


def expect_str(value: Any) -> str:
    """`value`, a string read from JSON; TypeError if it is not one."""
    if not isinstance(value, str):
        raise TypeError(f"expected a string, found {type(value).__name__}")
    return value


def _object(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TypeError(f"expected an object, found {type(value).__name__}")
    return value
