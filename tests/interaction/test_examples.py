"""Run every example as a user would: the agent script as a subprocess, the page in Chromium, against a test bridge."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest
from browser_support import ROOT, open_page, static_server
from support import running_bridge

EXAMPLES = ROOT / "examples"


async def start_agent(script: str, *args: str, stderr_to_stdout: bool = False) -> asyncio.subprocess.Process:
    """An example agent as a subprocess; the bridge keeps running in this event loop meanwhile."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    stderr = asyncio.subprocess.STDOUT if stderr_to_stdout else asyncio.subprocess.PIPE
    return await asyncio.create_subprocess_exec(sys.executable, str(EXAMPLES / script), *args, cwd=str(ROOT), env=env,
                                                stdout=asyncio.subprocess.PIPE, stderr=stderr)


async def finish(agent: asyncio.subprocess.Process, timeout: float = 20) -> tuple[int, str]:
    try:
        stdout, stderr = await asyncio.wait_for(agent.communicate(), timeout)
    except TimeoutError:
        agent.kill()
        stdout, stderr = await agent.communicate()
        raise AssertionError(f"the agent did not finish:\n{stdout.decode()}\n{stderr.decode()}") from None
    out = stdout.decode()
    assert agent.returncode is not None
    print(out, (stderr or b"").decode(), sep="\n")  # shown when a test fails
    return agent.returncode, out


@pytest.mark.parametrize("button, expected", [
    ("Transfer", "The user confirmed. Transferred 250.00 EUR to Bob Stone (simulated)."),
    ("Don't transfer", "The user declined (cancel). Nothing was transferred."),
], ids=["confirmed", "declined"])
async def test_confirm_dialog_example(browser, bridge, button, expected):
    with static_server(EXAMPLES / "confirm_dialog") as site:
        async with open_page(browser, f"{site}/?bridge={bridge.url}") as page:
            agent = await start_agent("confirm_dialog/agent.py", "--bridge", bridge.url, "--amount", "250",
                                      "--to", "Bob Stone")
            dialog = page.get_by_role("dialog", name="Transfer 250.00 € to Bob Stone?")
            await dialog.wait_for(timeout=15000)
            assert "from your checking account to Bob Stone" in await dialog.text_content()
            await dialog.get_by_role("button", name=button, exact=True).click()
            code, out = await finish(agent)
    assert code == 0
    assert out.strip() == expected


async def test_confirm_dialog_agent_waits_for_the_page(browser, bridge):
    """The agent may start first: it waits until a page offers the tool."""
    agent = await start_agent("confirm_dialog/agent.py", "--bridge", bridge.url)
    await asyncio.sleep(1.0)
    assert agent.returncode is None
    async with open_page(browser, bridge.url + "/") as page:  # the demo page offers the tool too
        await page.get_by_role("dialog", name="Transfer 100.00 € to Alice Martin?").get_by_role(
            "button", name="Transfer", exact=True).click()
        code, out = await finish(agent)
    assert (code, out.strip()) == (0, "The user confirmed. Transferred 100.00 EUR to Alice Martin (simulated).")


async def test_agent_user_tools_example(browser):
    async with running_bridge(meta_tools="always") as bridge, open_page(browser, bridge.url + "/") as page:
        await page.evaluate("""() => {
            const range = document.createRange();
            range.selectNodeContents(document.getElementById("selectable"));
            getSelection().removeAllRanges(); getSelection().addRange(range);
        }""")
        agent = await start_agent("agent_user_tools.py", "--bridge", bridge.url, stderr_to_stdout=True)
        code, out = await finish(agent)
    assert code == 0
    assert "not listed by server" not in out  # the SDK's warning when an agent calls what was not listed
    assert "tools listed:" in out and "  - agui_user_confirm: " in out
    assert "tool_search 'read the text the user selected on the page' -> page_get_selected_text" in out
    assert "page_get_selected_text returned: Select some of this text" in out
    assert "revenue grew 12 %" in out


async def test_agent_user_tools_example_calls_a_dialog(browser, bridge):
    async with open_page(browser, bridge.url + "/") as page:
        agent = await start_agent("agent_user_tools.py", "--bridge", bridge.url, "--query",
                                  "ask the user to choose one of several options",
                                  "--arguments", json.dumps({"title": "Which plan?", "options": ["Basic", "Pro"]}))
        await page.get_by_role("dialog", name="Which plan?").get_by_role("button", name="Pro").click()
        code, out = await finish(agent)
    assert code == 0
    assert "agui_user_choose returned: Pro" in out


async def test_many_tools_example(browser, bridge):
    with static_server(EXAMPLES / "many_tools") as site:
        async with open_page(browser, f"{site}/?bridge={bridge.url}") as page:
            assert await page.text_content("#count") == "300"
            agent = await start_agent("many_tools/agent.py", "--bridge", bridge.url)
            code, out = await finish(agent)
            assert "finance_convert_exchange_rate" in await page.text_content("#last")
    assert code == 0, out
    assert "including tool_search, tool_describe, call_tool" in out
    assert "best match: finance_convert_exchange_rate" in out
    returned = json.loads(out.split("finance_convert_exchange_rate returned: ", 1)[1].splitlines()[0])
    assert returned["converted"] == 92.0 and returned["simulated"] is True
    listed = len(bridge.hub.room("default").listing().tools)
    assert listed < 40, "most of the 300 tools stayed deferred"


CONFIGS = {
    "claude_desktop_config.json": ("mcpServers", None),
    "cursor_mcp.json": ("mcpServers", None),
    "vscode_mcp.json": ("servers", "stdio"),
}


async def test_mcp_client_configs():
    from mcp import Client, StdioServerParameters

    directory = EXAMPLES / "mcp_client_configs"
    for name, (key, kind) in CONFIGS.items():
        server = json.loads((directory / name).read_text())[key]["agui-bridge"]
        # An absolute path: GUI clients do not read the shell's PATH (a placeholder; `config <client>` writes yours).
        command = Path(server["command"])
        assert command.is_absolute() and command.name == "agui-mcp-bridge" and server["args"] == ["stdio"], name
        assert server.get("type") == kind, name
    for name in ("cursor_mcp_http.json", "vscode_mcp_http.json"):
        server = next(iter(json.loads((directory / name).read_text()).values()))["agui-bridge"]
        assert server["url"] == "http://127.0.0.1:8765/mcp"

    # What the clients run: `agui-mcp-bridge stdio` (here through this interpreter, on a free port for pages).
    params = StdioServerParameters(command=sys.executable, args=["-m", "bridge.cli", "stdio", "--port", "0"],
                                   cwd=str(ROOT), env={"PYTHONPATH": str(ROOT)})
    async with Client(params) as client:
        assert client.server_info.name == "agui-mcp-bridge"
        listing = await client.list_tools()  # no page yet: the meta-tools, to reach pages that come later
        assert [t.name for t in listing.tools] == ["tool_search", "tool_describe", "call_tool", "run_code"]
