"""The package's layout keeps one import direction, lowest layer first:

- `bridge.search`, `bridge.schemas`, `bridge.code_mode`: each imports no other part of bridge;
- `bridge.core`: itself, search and schemas;
- `bridge.config`, `bridge.access`: the core (and the package itself, for `__version__`);
- the edges, `bridge.mcp_edge`, `bridge.page_edge`, `bridge.shared_mode`: the layers below them (and the
  package itself, for `__version__`), never each other;
- `bridge.app`, `bridge.server`, `bridge.cli` (what puts the parts together and runs them): imported by none
  but each other and the package's lazy API (`bridge/__init__.py`).

The imports are read from the source (ast), not imported: every `import` and `from ... import` of a module,
in functions and under `TYPE_CHECKING` too. Then, in fresh processes: the core's layers import neither
starlette nor mcp, and the settings import neither numpy, the hub, nor search.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "bridge"
LOWEST = ("bridge.search", "bridge.schemas", "bridge.code_mode")
EDGES = ("bridge.mcp_edge", "bridge.page_edge", "bridge.shared_mode")
ASSEMBLY = ("bridge.app", "bridge.server", "bridge.cli")

# The parts each part may import, besides itself. A part is a subpackage or a module at the package's top;
# "bridge" is the package's own __init__ (its __version__ and lazy API). Parts not named here are free, but
# for the assembly rule below.
MAY_IMPORT: dict[str, set[str]] = {
    **{part: set() for part in LOWEST},
    "bridge.core": {"bridge.search", "bridge.schemas", "bridge.code_mode"},
    "bridge.config": {"bridge.core", "bridge"},
    "bridge.access": {"bridge.core", "bridge.config", "bridge"},  # who may talk to the bridge: by the settings
    **{edge: {"bridge.core", *LOWEST, "bridge.config", "bridge.access", "bridge"} for edge in EDGES},
}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_module(name: str) -> bool:
    folder = ROOT.joinpath(*name.split("."))
    return folder.with_suffix(".py").is_file() or (folder / "__init__.py").is_file()


def lazy_homes() -> dict[str, str]:
    """The names the package's lazy API imports on first use, and the modules they come from."""
    tree = ast.parse((PACKAGE / "__init__.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "_HOMES" for t in node.targets):
            return ast.literal_eval(node.value)
    return {}


def imports_of(path: Path) -> list[tuple[str, int]]:
    return imports_in(path.read_text(), module_name(path), is_package=path.name == "__init__.py")


def imports_in(source: str, this: str, is_package: bool = False) -> list[tuple[str, int]]:
    """The bridge modules module `this` (of `source`) imports, each with the line that imports it.
    `from bridge.x import y` is the submodule bridge.x.y if there is one, else bridge.x; and for a name
    of the package's lazy API, `from bridge import Bridge`, the name's home."""
    package = this if is_package else this.rpartition(".")[0]
    homes = lazy_homes()
    found: list[tuple[str, int]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names if alias.name.split(".")[0] == "bridge"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from the package `level` - 1 steps up
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                source_module = f"{base}.{node.module}" if node.module else base
            else:
                source_module = node.module or ""
            if source_module.split(".")[0] != "bridge":
                continue
            for alias in node.names:
                if is_module(f"{source_module}.{alias.name}"):
                    found.append((f"{source_module}.{alias.name}", node.lineno))
                elif source_module == "bridge" and alias.name in homes:
                    found.append((homes[alias.name], node.lineno))
                else:
                    found.append((source_module, node.lineno))
    return found


def part_of(module: str) -> str:
    """The part a module belongs to: its subpackage, or itself at the package's top."""
    return ".".join(module.split(".")[:2])


def test_the_parts_import_one_way():
    broken = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = module_name(path)
        part = part_of(module)
        for imported, line in imports_of(path):
            other = part_of(imported)
            if other == part:
                continue
            where = f"{path.relative_to(ROOT)}:{line}: {module} imports {imported}"
            if part in MAY_IMPORT and other not in MAY_IMPORT[part]:
                allowed = ", ".join(sorted(MAY_IMPORT[part])) or "no other part of bridge"
                broken.append(f"{where} ({part} may import {allowed})")
            if other in ASSEMBLY and part not in ASSEMBLY and module != "bridge":
                broken.append(f"{where} (only {', '.join(ASSEMBLY)} and the lazy API in bridge/__init__.py "
                              f"import {other})")
    broken = list(dict.fromkeys(broken))  # one line importing two names of a module: said once
    assert not broken, "imports against the layers:\n" + "\n".join(broken)


def test_the_reading_of_imports_sees_every_kind_of_import():
    """The checker itself, on a module that imports in every way it reads (a rule must not pass by not
    seeing an import)."""
    source = """
from __future__ import annotations
from typing import TYPE_CHECKING
import bridge.core.hub
from bridge import __version__, client_config, Bridge
from bridge.core import messages, Hub
from . import rooms
from ..core.calls import Outcome
import starlette
if TYPE_CHECKING:
    from bridge.server import RunningServer

def later():
    import bridge.search.index as index
"""
    assert imports_in(source, "bridge.mcp_edge.room_server") == [
        ("bridge.core.hub", 4), ("bridge", 5), ("bridge.client_config", 5), ("bridge.app", 5),
        ("bridge.core.messages", 6), ("bridge.core", 6), ("bridge.mcp_edge.rooms", 7), ("bridge.core.calls", 8),
        ("bridge.server", 11), ("bridge.search.index", 14)]
    assert [part_of(m) for m in ("bridge", "bridge.config", "bridge.core.hub", "bridge.search")] == [
        "bridge", "bridge.config", "bridge.core", "bridge.search"]


def modules_under(*packages: str) -> list[str]:
    return sorted(module_name(path) for package in packages
                  for path in ROOT.joinpath(*package.split(".")).rglob("*.py"))


def imported_in_a_fresh_process(modules: list[str], watched: set[str]) -> list[str]:
    """The modules of `watched` (packages, or modules), or in them, that a fresh interpreter has imported
    once it has imported `modules`."""
    code = (f"import importlib, sys\nfor name in {modules!r}:\n    importlib.import_module(name)\n"
            f"print(sorted(m for m in sys.modules if any(m == w or m.startswith(w + '.') for w in {watched!r})))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return ast.literal_eval(done.stdout.strip())


def test_core_imports_neither_starlette_nor_mcp():
    core = modules_under("bridge.core", "bridge.search", "bridge.schemas", "bridge.code_mode") + ["bridge.config"]
    assert "bridge.core.hub" in core and "bridge.search.index" in core and "bridge.code_mode.engine" in core
    web = {"mcp", "mcp_types", "starlette", "uvicorn", "sse_starlette", "websockets"}
    assert sorted({m.split(".")[0] for m in imported_in_a_fresh_process(core, web)}) == []


def test_the_settings_import_neither_numpy_nor_the_hub_nor_search():
    heavy = {"numpy", "bridge.core.hub", "bridge.search"}
    assert imported_in_a_fresh_process(["bridge.config"], heavy) == []
