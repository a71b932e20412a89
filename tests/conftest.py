"""Fixtures shared by the browser and example tests: one Chromium per module, a fresh bridge per test."""

from browser_support import bridge, browser  # noqa: F401  (registered as fixtures)
