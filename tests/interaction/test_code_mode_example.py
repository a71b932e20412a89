"""examples/code_mode: the agent script as a user runs it, against the demo page in Chromium."""

from __future__ import annotations

import json

from browser_support import open_page
from code_mode_support import code_bridge
from test_examples import finish, start_agent


async def test_code_mode_example_totals_the_orders_and_reads_only_the_total(browser):
    async with code_bridge() as bridge, open_page(browser, bridge.url + "/"):
        agent = await start_agent("code_mode/agent.py", "--bridge", bridge.url)
        code, out = await finish(agent)
    assert code == 0, out
    direct = int(out.split("40 orders, ", 1)[1].split(" characters", 1)[0].replace(",", ""))
    inside = int(out.split("inside a program: ", 1)[1].split(" characters", 1)[0].replace(",", ""))
    assert inside * 20 < direct
    value = json.loads(out.split("value: ", 1)[1].splitlines()[0])
    assert (value["open_orders"], value["total_eur"]) == (16, 2121.2)
    assert round(sum(value["by_customer"].values()), 2) == 2121.2
