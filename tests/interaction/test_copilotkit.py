"""CopilotKit's frontend tools reach MCP agents through the bridge's WebMCP support.

@copilotkit/react-core (pinned in tests/copilotkit_app/package.json) puts a `useFrontendTool` tool on
`document.modelContext` when the tool says `webmcp: true` (its core's WebMCPRegistry calls
`registerTool(tool, {signal})` and aborts the signal when the tool goes). The app in tests/copilotkit_app
uses CopilotKit as its docs say (CopilotKitProvider, useFrontendTool with a zod schema), a WebMCP
polyfill for Chromium's missing `document.modelContext`, and `bridgeWebMCP()` from the packed
agui-mcp-bridge; it is built by Vite, opened in Chromium and driven by the MCP SDK client.

CopilotKit's provider wants a runtime URL; the app is given one where nothing listens, since a WebMCP call
runs the tool's handler in the page and needs no CopilotKit runtime.

`scripts/setup --test` installs the app's dependencies from its package-lock.json. The Vite build is kept
in the app's node_modules under a digest of what it is built from, so only a change rebuilds it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from browser_support import mcp_client, open_page, static_server, text_of, wait_for_tools
from support import free_port, running_bridge

import bridge

ROOT = Path(__file__).resolve().parents[2]
APP = Path(__file__).resolve().parents[1] / "copilotkit_app"
NPM_TIMEOUT = 300


def run(*command: str | Path, cwd: Path) -> str:
    done = subprocess.run([str(c) for c in command], cwd=cwd, capture_output=True, text=True, timeout=NPM_TIMEOUT,
                          env={**os.environ, "NO_UPDATE_NOTIFIER": "1", "npm_config_fund": "false",
                               "npm_config_audit": "false"})
    assert done.returncode == 0, f"{command} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def installed_is_current(package: Path) -> bool:
    """Whether the app's agui-mcp-bridge holds exactly the files `npm pack` of web_client/ would, byte for byte."""
    if not package.is_dir():
        return False
    manifest = json.loads((ROOT / "web_client" / "package.json").read_text(encoding="utf-8"))
    packed = {*manifest["files"], "package.json", "README.md"}
    installed = {p.name for p in package.iterdir()}
    return installed == packed and all(
        (package / name).read_bytes() == (ROOT / "web_client" / name).read_bytes() for name in packed)


@pytest.fixture(scope="module")
def app(tmp_path_factory) -> Path:
    """tests/copilotkit_app with `npm pack` of web_client/ installed, as `npm install agui-mcp-bridge` would
    (again only when web_client/ changed since)."""
    assert (APP / "node_modules" / "@copilotkit" / "react-core").is_dir(), \
        f"{APP}/node_modules is missing: run scripts/setup --test"
    package = APP / "node_modules" / "agui-mcp-bridge"
    if not installed_is_current(package):
        out = tmp_path_factory.mktemp("npm-pack")
        (packed,) = json.loads(run("npm", "pack", "--json", "--pack-destination", out, cwd=ROOT / "web_client"))
        run("npm", "install", "--no-save", "--offline", "--loglevel=error", out / packed["filename"], cwd=APP)
        assert installed_is_current(package), "the installed package differs from web_client/"
    assert json.loads((package / "package.json").read_text())["version"] == bridge.__version__
    return APP


def build_inputs(app: Path) -> list[Path]:
    sources = [app / "package-lock.json", app / "index.html", app / "vite.config.js", *sorted((app / "src").iterdir())]
    package = app / "node_modules" / "agui-mcp-bridge"
    return sources + sorted(p for p in package.iterdir() if p.is_file())


@pytest.fixture(scope="module")
def built(app) -> Path:
    """The app built by `vite build`, rebuilt only when its sources, lock file or the packed client change."""
    digest = hashlib.sha256()
    for path in build_inputs(app):
        digest.update(str(path.relative_to(app)).encode() + b"\0" + path.read_bytes() + b"\0")
    cache = app / "node_modules" / ".builds"
    target = cache / digest.hexdigest()[:16]
    if not (target / "index.html").is_file():
        shutil.rmtree(cache, ignore_errors=True)  # older builds: one is enough
        partial = cache / f"partial-{os.getpid()}"
        run(app / "node_modules" / ".bin" / "vite", "build", "--outDir", partial, "--emptyOutDir", cwd=app)
        partial.rename(target)
    return target


async def notes(page) -> list[str]:
    return await page.eval_on_selector_all("#notes li", "items => items.map((li) => li.textContent)")


async def test_a_copilotkit_frontend_tool_reaches_an_mcp_agent(browser, built):
    runtime = f"http://127.0.0.1:{free_port()}/api/copilotkit"  # nothing listens there
    with static_server(built) as site:
        async with running_bridge() as b, \
                open_page(browser, f"{site}/?bridge={b.url}/&runtime={runtime}",
                          ready="document.querySelector('#bridge')?.textContent === 'open'") as page, \
                mcp_client(b) as agent:
            await use_the_notes_tool(page, agent)


async def use_the_notes_tool(page, agent) -> None:
    # Registered by CopilotKit before the bridge connected: mirrored from document.modelContext.
    await wait_for_tools(agent, "add_note", "read_page_title")
    listed = {t.name: t for t in (await agent.list_tools(cache_mode="bypass")).tools}
    schema = listed["add_note"].input_schema
    assert listed["add_note"].description == "Add a note to the list the page shows."
    assert schema["properties"]["text"] == {"type": "string", "description": "The note's text"}
    assert sorted(schema["required"]) == ["pinned", "text"]
    # WebMCP annotations given to CopilotKit reach the agent.
    assert listed["read_page_title"].annotations.read_only_hint is True
    assert (await agent.call_tool("read_page_title", {})).structured_content == {
        "title": "Notes (CopilotKit + agui-mcp-bridge)"}

    # The agent's call runs CopilotKit's handler with its arguments: React state, shown on the page.
    result = await agent.call_tool("add_note", {"text": "buy tea", "pinned": False})
    assert not result.is_error and text_of(result) == "noted: buy tea"
    result = await agent.call_tool("add_note", {"text": "call Ada", "pinned": True})
    assert not result.is_error and text_of(result) == "noted: call Ada"
    await page.wait_for_function("document.querySelectorAll('#notes li').length === 2")
    assert await notes(page) == ["call Ada", "buy tea"]

    # Arguments CopilotKit's schema rejects never reach the handler.
    refused = await agent.call_tool("add_note", {"text": "no flag"})
    assert refused.is_error and "pinned" in text_of(refused), text_of(refused)
    assert await notes(page) == ["call Ada", "buy tea"]

    # Unmounting the component takes the tool away from the agent too (CopilotKit aborts its registration).
    await page.uncheck("#show-notes")
    await wait_for_tools(agent, "read_page_title", absent=("add_note",))
    # Mounted again, now that the bridge is up: registered through the bridged registerTool.
    await page.check("#show-notes")
    await wait_for_tools(agent, "add_note")
    result = await agent.call_tool("add_note", {"text": "fresh", "pinned": False})
    assert not result.is_error and text_of(result) == "noted: fresh"
    await page.wait_for_function("document.querySelectorAll('#notes li').length === 1")
    assert await notes(page) == ["fresh"]
    assert not [line for line in page.console if line.startswith("pageerror")], page.console
