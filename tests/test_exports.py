"""What the package exports: the lazy top-level API, and each subpackage's `__all__`.

`from bridge import Bridge, Settings, serve, serve_stdio, __version__` is the public API; each name comes
from its home module on first use. Each subpackage names what it re-exports in `__all__`: every name there
must be an attribute of the package (for `bridge.core`, imported on first use as well).
"""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import bridge

SUBPACKAGES = sorted(f"bridge.{info.name}" for info in pkgutil.iter_modules(bridge.__path__) if info.ispkg)


def test_the_top_level_api_is_unchanged_and_every_name_resolves():
    assert bridge.__all__ == ["Bridge", "Settings", "serve", "serve_stdio", "__version__"]
    from bridge import Bridge, Settings, __version__, serve, serve_stdio
    from bridge.app import Bridge as AppBridge
    from bridge.config import Settings as ConfigSettings
    from bridge.server import serve as server_serve
    from bridge.server import serve_stdio as server_serve_stdio

    assert (Bridge, Settings, serve, serve_stdio) == (AppBridge, ConfigSettings, server_serve, server_serve_stdio)
    assert isinstance(__version__, str) and __version__
    assert all(getattr(bridge, name) is not None for name in bridge.__all__)


def test_a_name_the_lazy_api_does_not_have_is_an_attribute_error():
    with pytest.raises(AttributeError, match="'bridge' has no attribute 'Brige'"):
        _ = bridge.Brige
    core = importlib.import_module("bridge.core")
    with pytest.raises(AttributeError, match="'bridge.core' has no attribute 'Hubb'"):
        _ = core.Hubb


def test_the_subpackages_are_those_of_the_layout():
    assert SUBPACKAGES == ["bridge.code_mode", "bridge.core", "bridge.mcp_edge", "bridge.page_edge",
                           "bridge.schemas", "bridge.search", "bridge.shared_mode"]


@pytest.mark.parametrize("name", SUBPACKAGES)
def test_every_name_a_subpackage_exports_resolves(name):
    package = importlib.import_module(name)
    assert package.__doc__ and package.__doc__.strip(), f"{name} has no docstring"
    exported = package.__all__
    assert exported and len(set(exported)) == len(exported), f"{name}.__all__ is empty or names a name twice"
    missing = [item for item in exported if not hasattr(package, item)]
    assert not missing, f"{name}.__all__ names what {name} does not have: {missing}"
