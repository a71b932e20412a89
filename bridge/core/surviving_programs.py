"""What a task's program that outlives its process is made of (shared mode): the run (`SurvivingRun`), the page
calls its processes sent (`SentCall`), what a process claiming it from a stopped one gets (`ClaimedProgram`), and
where it is kept (`SurvivingPrograms`: Redis, bridge.shared_mode._programs). `bridge.core.programs` runs it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from bridge.code_mode import ParkedProgram


@dataclass(frozen=True)
class SurvivingRun:
    """A task's program that may outlive its process: its run id (the task's), its room, and when its page calls
    time out (seconds since the epoch: every process reads the same clock)."""

    run_id: str
    room: str
    deadline_at: float


@dataclass(frozen=True)
class SentCall:
    """A page call a surviving program's process sent, as marked where every process reads it."""

    call_id: str  # the bridge's (`Call.call_id`)
    session_id: str  # its page's


@dataclass(frozen=True)
class ClaimedProgram:
    """A surviving program this process took over from a stopped one: where to go on from (`run` and `record`),
    or why it cannot (`problem`: its record is unreadable, not sealed by this deployment, of another room or
    sandbox version, or was never written); and the page calls its processes sent, by the sandbox's call id."""

    run_id: str
    run: SurvivingRun | None = None
    record: ParkedProgram | None = None
    problem: str | None = None
    sent: dict[int, SentCall] = field(default_factory=dict)


class SurvivingPrograms(Protocol):
    """Where a task's program is kept so that another process goes on with it when its own dies (shared mode).
    Only the process holding a run writes it: one that lost it (taken for stopped, then claimed) writes nothing."""

    async def started(self, run: SurvivingRun) -> bool:
        """This process holds the run from now on, and its page calls are marked as they are sent; False when it
        cannot be kept (the program then runs as any other)."""

    def parked(self, run: SurvivingRun, record: ParkedProgram) -> None:
        """The run's record, written (sealed) in the order given, replacing the last."""

    async def ended(self, run_id: str) -> None:
        """The run is over here: its record and marks go, once the writes before are done."""

    async def orphans(self) -> list[str]:
        """The runs whose process stopped, not yet claimed."""

    async def claim(self, run_id: str) -> ClaimedProgram | bool:
        """Take the run over if its process stopped (one process wins); else True when a living process holds
        it, False when there is no such run. The calls sent that the claimed record does not wait on are
        cancelled at their pages."""
