"""Fixtures shared by the tests: one Chromium per module and a fresh bridge per test (browser and example
tests), the English search model laid out as fastembed reads it (semantic tests)."""

from browser_support import bridge, browser  # noqa: F401  (registered as fixtures)
from search_support import minilm, model_dir  # noqa: F401  (registered as fixtures)
