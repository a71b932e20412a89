"""Requests in the languages of the search catalogs, through a real bridge: an agent's Chinese or Hindi
request finds the page's deferred tool of that language with tool_search (the real MCP SDK client, a
websockets page). The tokenizer rules and the catalogs as a whole are tested in the index, without a
server: tests/search/test_multilingual_search.py and tests/search/test_world_scripts.py."""

from __future__ import annotations

from search_support import MULTILINGUAL_ENTRIES, WORLD_ENTRIES, first_matches_through_a_bridge


async def test_an_agent_finds_a_chinese_tool_with_a_chinese_query() -> None:
    listed, first = await first_matches_through_a_bridge(
        [entry for entry in MULTILINGUAL_ENTRIES if entry["lang"] == "zh"], ["确认转账", "天气"])
    assert "confirm_transfer" not in listed  # deferred
    assert first == ["confirm_transfer", "get_weather_forecast"]


async def test_an_agent_finds_a_hindi_tool_with_a_hindi_request() -> None:
    listed, first = await first_matches_through_a_bridge(
        [entry for entry in WORLD_ENTRIES if entry["lang"] == "hi"], ["मेरे खाते में कितना बैलेंस है", "गैस बिल का भुगतान करो"])
    assert "account_balance_hi" not in listed  # deferred
    assert first == ["account_balance_hi", "pay_bill_hi"]
