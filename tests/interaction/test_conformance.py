"""The official MCP conformance suite against a real bridge whose tools come from a page.

`@modelcontextprotocol/conformance` (pinned in tests/conformance/package.json: 0.2.0-alpha.12 for the
2026-07-28 revision, 0.1.16 for handshake-era clients, Node 22 from npm to run them) is run once per
era against a bridge on 127.0.0.1, while tests/conformance/fixture_page.py registers the suite's
fixture tools through the page protocol and answers their calls. Each scenario that applies to a
server of page tools is one test, passing when none of its checks fails (the suite's own verdict:
warnings and skips are not failures). Resources, prompts and completion do not apply: pages offer
only tools.
"""

from __future__ import annotations

import asyncio
import json
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
from conformance.fixture_page import FixturePage
from support import Page, running_bridge

HERE = Path(__file__).resolve().parents[1] / "conformance"
NODE = HERE / "node_modules" / "node22" / "bin" / "node"
SUITES = {
    "2026-07-28": HERE / "node_modules" / "conformance-2026" / "dist" / "index.js",
    "handshake": HERE / "node_modules" / "conformance-handshake" / "dist" / "index.js",
}
# One suite invocation per era: every scenario of the revision (2026-07-28) or of the active suite
# (0.1.16), each writing its checks to <output>/server-<scenario>-<timestamp>/checks.json.
ARGUMENTS = {
    "2026-07-28": ["--requirements", "2026-07-28", "--timeout", "20000"],  # ms per scenario; the slowest takes ~5 s
    "handshake": [],
}
SUITE_TIMEOUT = 600  # seconds for a whole era; ~20 s when the scenarios pass

TOOLS_SCENARIOS = ["tools-list", "tools-call-simple-text", "tools-call-image", "tools-call-audio",
                   "tools-call-embedded-resource", "tools-call-mixed-content", "tools-call-error",
                   "tools-call-with-progress"]
APPLICABLE = {
    "2026-07-28": [
        *TOOLS_SCENARIOS,
        "server-stateless", "json-schema-2020-12", "caching", "http-header-validation",
        "http-custom-header-server-validation", "dns-rebinding-protection", "server-sse-multiple-streams",
        "tasks-lifecycle", "tasks-capability-negotiation", "tasks-wire-fields", "tasks-request-state-removal",
        "tasks-mrtr-input", "tasks-request-headers", "tasks-dispatch-and-envelope", "tasks-status-notifications",
        "tasks-required-task-error", "tasks-mrtr-composition",
        # all input-required-result-* but input-required-result-non-tool-request (prompts/get)
        "input-required-result-basic-elicitation", "input-required-result-basic-sampling",
        "input-required-result-basic-list-roots", "input-required-result-request-state",
        "input-required-result-multiple-input-requests", "input-required-result-multi-round",
        "input-required-result-missing-input-response", "input-required-result-result-type",
        "input-required-result-unsupported-methods", "input-required-result-tampered-state",
        "input-required-result-capability-check", "input-required-result-ignore-extra-params",
        "input-required-result-validate-input",
    ],
    "handshake": [*TOOLS_SCENARIOS, "tools-call-sampling", "tools-call-elicitation", "tools-call-with-logging",
                  "logging-set-level"],
}
# Checks of an applicable scenario that are about prompts or resources, which pages do not offer.
NOT_APPLICABLE_CHECKS = {
    "caching": {"sep-2549-prompts-list-caching-hints", "sep-2549-resources-list-caching-hints",
                "sep-2549-resources-templates-list-caching-hints", "sep-2549-resources-read-caching-hints"},
}
RESULT_DIR = re.compile(r"^server-(?P<scenario>.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$")


class SuiteRun:
    def __init__(self, checks: dict[str, list[dict[str, Any]]], output: str, fixtures: FixturePage) -> None:
        self.checks = checks  # scenario → the suite's checks
        self.output = output  # the suite's console output, for scenarios that produced no checks
        self.page_failures = fixtures.failures
        self.refused_tools = fixtures.refused


async def run_suite(era: str) -> SuiteRun:
    async with running_bridge() as bridge:
        page = Page(bridge, title="Conformance fixtures")
        await page.connect()
        fixtures = FixturePage(page)
        await fixtures.start()
        try:
            with tempfile.TemporaryDirectory(prefix="mcp-conformance-") as output:
                process = await asyncio.create_subprocess_exec(
                    str(NODE), str(SUITES[era]), "server", "--url", bridge.mcp_url(), *ARGUMENTS[era],
                    "--output-dir", output,
                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
                try:
                    console, _ = await asyncio.wait_for(process.communicate(), SUITE_TIMEOUT)
                except TimeoutError:  # the scenarios that finished keep their results
                    process.kill()
                    await process.wait()
                    console = f"(the suite did not finish within {SUITE_TIMEOUT} s)".encode()
                checks: dict[str, list[dict[str, Any]]] = {}
                for result in Path(output).iterdir():
                    named = RESULT_DIR.match(result.name)
                    if named and (result / "checks.json").is_file():
                        checks[named["scenario"]] = json.loads((result / "checks.json").read_text())
        finally:
            await fixtures.stop()
            await page.close()
    return SuiteRun(checks, console.decode(errors="replace"), fixtures)


@pytest.fixture(scope="module")
def suite():
    """The suite's results per era, each era run once, when its first scenario is asked for."""
    runs: dict[str, SuiteRun | str] = {}  # a run, or why there is none (every scenario of the era fails with it)

    def results(era: str) -> SuiteRun:
        if era not in runs:
            missing = [str(path) for path in (NODE, SUITES[era]) if not path.is_file()]
            if missing:
                runs[era] = (f"The MCP conformance suite is not installed ({', '.join(missing)} missing): "
                             "run scripts/setup --test (it runs npm ci --prefix tests/conformance).")
            else:
                try:
                    runs[era] = asyncio.run(run_suite(era))
                except Exception as exc:
                    runs[era] = f"The {era} run could not be made: {exc!r}"
        run = runs[era]
        if isinstance(run, str):
            pytest.fail(run)
        return run

    return results


@pytest.mark.parametrize(("era", "scenario"), [(era, scenario) for era, scenarios in APPLICABLE.items()
                                               for scenario in scenarios],
                         ids=lambda value: value)
def test_scenario_passes(suite, era: str, scenario: str):
    run = suite(era)
    assert not run.page_failures, f"the fixture page failed: {run.page_failures}"
    if scenario not in run.checks:
        pytest.fail(f"the suite reported nothing for {scenario}; its output ended with:\n{run.output[-3000:]}")
    skipped = NOT_APPLICABLE_CHECKS.get(scenario, set())
    failed = [check for check in run.checks[scenario]
              if check["status"] == "FAILURE" and check["id"] not in skipped]
    refused = f"\n(the bridge refused fixture tools: {run.refused_tools})" if run.refused_tools else ""
    assert not failed, "\n".join(f"{check['id']}: {check.get('errorMessage', '')}" for check in failed) + refused
