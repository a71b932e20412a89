"""The core's defaults written as plain numbers agree with the parts they stand for."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bridge.core.defaults import HubConfig
from bridge.schemas import SchemaLimits

ROOT = Path(__file__).resolve().parents[2]


def test_the_schema_limits_are_the_schema_checks():
    assert (HubConfig().max_schema_bytes, HubConfig().max_schema_depth) == (
        SchemaLimits().max_bytes, SchemaLimits().max_depth)


def test_the_settings_import_no_schema_checks():
    code = ("import sys, bridge.config\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('jsonschema', 're2', 'referencing')"
            " or m.startswith('bridge.schemas')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_cores_exports_are_the_names_it_imports_on_first_use():
    """`bridge.core.__all__` stays a literal list (type checkers read no other), kept to `_HOMES`' keys."""
    import bridge.core as core

    assert sorted(core.__all__) == sorted(core._HOMES)
