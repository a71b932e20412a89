"""What tool_search and tool_describe answer, as agents receive it: the wire JSON of a meta-tool's
answer in both protocol eras, matches that follow a tool's changed definition, and tools tied on a
query's words coming by name whatever else joins them. Real uvicorn bridge, real pages, real MCP
SDK client (raw HTTP where the wire itself is checked)."""

from __future__ import annotations

import json
import random

import httpx
import pytest
from mcp import Client
from mcp_types import CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, PROTOCOL_VERSION_META_KEY
from search_support import many_tools, match_names, search
from support import page, running_bridge, tool

ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


class HandshakeAgent:
    """A handshake-era agent speaking raw HTTP: initialize, then calls answered as SSE."""

    def __init__(self, http: httpx.AsyncClient, url: str) -> None:
        self.http, self.url, self.headers = http, url, dict(ACCEPT)

    async def start(self) -> None:
        answer = await self.http.post(self.url, headers=self.headers, json={
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "raw", "version": "1"}}})
        assert answer.status_code == 200, answer.text
        self.headers |= {"Mcp-Session-Id": answer.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"}
        await self.http.post(self.url, headers=self.headers,
                             json={"jsonrpc": "2.0", "method": "notifications/initialized"})

    async def call(self, name: str, arguments: dict) -> dict:
        answer = await self.http.post(self.url, headers=self.headers, json={
            "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": name, "arguments": arguments}})
        data = [line.removeprefix("data:").strip() for line in answer.text.splitlines() if line.startswith("data:")]
        return next(m for m in map(json.loads, filter(None, data)) if m.get("id") == 2)["result"]


async def modern_call(http: httpx.AsyncClient, url: str, name: str, arguments: dict) -> dict:
    meta = {PROTOCOL_VERSION_META_KEY: "2026-07-28", CLIENT_CAPABILITIES_META_KEY: {},
            CLIENT_INFO_META_KEY: {"name": "raw", "version": "1"}}
    answer = await http.post(url, headers=ACCEPT | {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call",
                                                    "Mcp-Name": name},
                             json={"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                   "params": {"name": name, "arguments": arguments, "_meta": meta}})
    assert answer.status_code == 200, answer.text
    return answer.json()["result"]


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
async def test_a_meta_tools_answer_on_the_wire_says_whether_it_is_an_error(era):
    async with running_bridge() as b, page(b, *many_tools(60)), httpx.AsyncClient(timeout=10) as http:
        if era == "legacy":
            agent = HandshakeAgent(http, b.mcp_url())
            await agent.start()
            call = agent.call
        else:
            async def call(name: str, arguments: dict) -> dict:
                return await modern_call(http, b.mcp_url(), name, arguments)
        found = await call("tool_search", {"query": "weather forecast"})
        described = await call("tool_describe", {"name": "weather_tool"})
        missing = await call("tool_describe", {"name": "no_such_tool"})
        assert found["isError"] is False and found["structuredContent"]["matches"][0]["name"] == "weather_tool"
        assert described["isError"] is False and described["structuredContent"]["name"] == "weather_tool"
        assert missing["isError"] is True and "no_such_tool" in missing["content"][0]["text"]
        for answer in (found, described, missing):
            assert ("resultType" in answer) == (era != "legacy")  # 2026-07-28 says what a result is
            if era != "legacy":
                assert answer["resultType"] == "complete"


async def test_a_tools_changed_definition_shows_in_the_matches_that_find_it():
    before = tool("ship_parcel", "Ship a parcel\nwith tracking", {"address": {"type": "string"}}, ["address"])
    after = tool("ship_parcel", "Ship a parcel abroad", {"country": {"type": "integer"}, "note": {"type": "string"}},
                 ["country"], inputExamples=[{"country": 33}])
    async with running_bridge() as b, page(b, *many_tools(60)) as p, Client(b.mcp_url(), mode="legacy") as client:
        await p.register(before)
        first = (await search(client, "ship parcel")).structured_content["matches"][0]
        assert first == {"name": "ship_parcel", "tool": "ship_parcel", "description": "Ship a parcel",
                         "required": {"address": "string"}}
        await p.register(after)
        again = (await search(client, "ship parcel")).structured_content["matches"][0]
        assert again == {"name": "ship_parcel", "tool": "ship_parcel", "description": "Ship a parcel abroad",
                         "required": {"country": "integer"}, "optional": ["note"], "examples": [{"country": 33}]}


async def test_tools_tied_on_the_words_come_by_name_and_one_registered_later_takes_its_place():
    # A hundred tools a query's words score alike (other tools lack those words): the first by
    # name are found, in name order, whatever order they came in, and so is one that comes later
    # with a name before theirs.
    tied = [tool(f"export_record_{n:03}", f"Export a record of kind {n:03}") for n in range(100)]
    async with running_bridge() as b, page(b, *many_tools(60)), page(b, *random.Random(5).sample(tied, len(tied))), \
            Client(b.mcp_url(), mode="legacy") as client:
        assert match_names(await search(client, "export record")) == [f"export_record_{n:03}" for n in range(5)]
        async with page(b, tool("export_record_0000", "Export a record of kind 0000")):
            assert match_names(await search(client, "export record")) == [
                "export_record_000", "export_record_0000", "export_record_001", "export_record_002",
                "export_record_003"]
        assert match_names(await search(client, "export record")) == [f"export_record_{n:03}" for n in range(5)]
