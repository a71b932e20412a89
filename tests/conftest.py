"""Fixtures shared by the tests: one Chromium per module and a fresh bridge per test (browser and example
tests), a redis-server per module emptied for each test (shared-mode tests), the English search model laid
out as fastembed reads it, and the network shut (semantic tests)."""

from browser_support import bridge, browser  # noqa: F401  (registered as fixtures)
from redis_support import redis_server, redis_url  # noqa: F401  (registered as fixtures)
from search_support import minilm, model_dir, offline  # noqa: F401  (registered as fixtures)
