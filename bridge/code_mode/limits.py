"""What one program may use: each limit ends the run with an error naming it (the value's size cuts it instead).

Compute time counts only the time the sandbox spends computing, never the time a program waits on pages (a
person may be deciding for minutes): the sandbox's clock stops while a program is suspended or parked, and its
dumps carry the time used so far.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

# Each tool call suspends a program twice (the call, then the settling of its future); the rest is headroom for
# the other suspensions a program makes (a tool's name read as a value, a refused file or module access).
SUSPENSIONS_PER_CALL = 2
SUSPENSIONS_SPARE = 1000


@dataclass(frozen=True)
class Limits:
    compute_seconds: float = 5.0  # the sandbox's computing time over the whole run
    memory_bytes: int = 64 * 1024 * 1024  # the sandbox's heap
    max_calls: int = 500  # tool calls started by one run
    max_calls_in_flight: int = 50  # tool calls started and not yet answered
    max_printed_chars: int = 20_000  # what `print` wrote
    max_value_chars: int = 20_000  # the value's JSON text: past it the value is cut, with a note
    max_program_chars: int = 100_000  # the program's source

    def __post_init__(self) -> None:
        for field in fields(self):
            value = getattr(self, field.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"Limits.{field.name} must be a positive number, not {value!r}")

    @property
    def max_suspensions(self) -> int:
        """The sandbox's own bound on host round trips, sized so that `max_calls` is always reached first."""
        return SUSPENSIONS_PER_CALL * self.max_calls + SUSPENSIONS_SPARE

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Any) -> Limits:
        if not isinstance(data, dict) or set(data) - {field.name for field in fields(cls)}:
            raise ValueError(f"not a Limits record: {data!r:.200}")
        return cls(**data)
