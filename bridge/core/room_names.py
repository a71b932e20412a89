"""What may name a room: pages join one in their hello, agents reach one by its URL or `--room`."""

from __future__ import annotations

import re

ROOM_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
ROOM_NAME_RULE = "1 to 64 letters, digits, '_' or '-'"  # what ROOM_NAME takes, as errors say it


def room_name_problem(room: str) -> str | None:
    """Why `room` cannot name a room (an agent's URL, an AG-UI run's), or None."""
    return None if ROOM_NAME.fullmatch(room) else f"A room name is {ROOM_NAME_RULE}."
