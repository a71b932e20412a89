"""The request states a process has spent (bridge.core.used_states): each taken once, remembered up to a
bound, the oldest forgotten first (shared mode keeps them in Redis: tests/interaction/test_input_security.py)."""

from __future__ import annotations

from bridge.core.used_states import UsedStates


async def test_a_process_remembers_the_states_spent_up_to_its_bound():
    used = UsedStates(ttl=3600, bound=2)
    assert [await used.spend(state) for state in ("a", "b", "a", "c")] == [True, True, False, True]
    assert await used.spend("c") is False and await used.spend("b") is False
    assert await used.spend("a") is True  # the oldest, forgotten past the bound (shared mode keeps it in Redis)
