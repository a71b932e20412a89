"""What a full garbage collection walks, for the tests that bound it: the objects it tracks, and the
references it follows. A full collection stops every thread, the event loop too, for as long as it takes
(bench/README.md, "Agents searching at once")."""

from __future__ import annotations

import gc


def tracked() -> int:
    """The objects a full collection walks (after one)."""
    gc.collect()
    return len(gc.get_objects())


def followed() -> int:
    """The references a full collection follows: it visits each reference every tracked object
    holds, and a few objects holding many (a list of 10,000 keys) cost it more than themselves."""
    gc.collect()
    objects = gc.get_objects()
    return sum(len(gc.get_referents(found)) for found in objects if found is not objects)
