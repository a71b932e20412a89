"""What a tool_search answer costs an agent, in tokens (JSON or text characters / 4, as the bridge
estimates its listing): the full-schema matches of search v1 against the compact matches of v2
(name, one-line description, required parameters with their types, optional parameter names).

    python bench/search_tokens.py [--tools 300] [--limit 5]

The catalog is the demo's generated business tools (web_client/demo-tools.js, read with Node:
CRM, billing, support, HR, ... with realistic parameter schemas). Measured with the bridge's own
code: a Room holding the tools, the index answering the queries below, `bridge.core.meta_tools.match`
for v2; v1's entry and text line are rebuilt here as the bridge wrote them before (bridge/core/meta_tools.py
at commit 207d4f7).

Two views: every tool of the catalog as one search result (its structured entry, and its line of
the text content), and whole tool_search answers (text content + structuredContent) for a set of
requests an agent might make, `--limit` matches each.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bridge.core.catalog import ListingPolicy, Room, Tool  # noqa: E402
from bridge.core.messages import ToolDefinition  # noqa: E402
from bridge.core.meta_tools import MetaToolNames, MetaTools, _match_text, match  # noqa: E402

QUERIES = [
    "create an invoice for a customer", "refund a payment", "escalate a support ticket",
    "schedule a meeting with the sales team", "find when people are free tomorrow", "book a hotel in Lisbon",
    "ship an order to a customer", "track a shipment", "add a new employee", "approve a leave request",
    "show revenue for last month", "restart a deployment", "send a newsletter campaign", "merge duplicate contacts",
    "move a deal to won", "low stock items", "upload a document to a folder", "assign an issue to a developer",
    "cancel an order", "convert 100 euros to dollars",
]


def tokens(value: Any) -> int:
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return len(text) // 4


def demo_tools(count: int) -> list[dict[str, Any]]:
    script = (f"import {{ generateTools }} from {json.dumps((ROOT / 'web_client' / 'demo-tools.js').as_uri())};"
              f"console.log(JSON.stringify(generateTools({count})));")
    done = subprocess.run(["node", "--input-type=module", "-e", script], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


# --- search v1, as it was ---------------------------------------------------------------------------


def v1_entry(room: Room, tool: Tool) -> dict[str, Any]:
    described = room.describe(tool)
    return {"name": tool.key, "tool": tool.page_name, "description": described["description"],
            "inputSchema": described["inputSchema"]}


def v1_line(entry: dict[str, Any]) -> str:
    return f"- {entry['name']}: {entry['description']}\n  input: {json.dumps(entry['inputSchema'])}"


def v1_answer(room: Room, found: list[Tool], deferred: int) -> dict[str, Any]:
    matches = [v1_entry(room, t) for t in found]
    text = "\n".join([f"{len(matches)} tool(s) found; call them by name:", *map(v1_line, matches)])
    return {"content": [{"type": "text", "text": text}],
            "structuredContent": {"matches": matches, "deferred": deferred}}


# --- measuring --------------------------------------------------------------------------------------


def summary(values: list[int]) -> str:
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
    return f"{statistics.mean(values):7.1f} {statistics.median(values):7.0f} {p90:7d} {max(values):7d}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tools", type=int, default=300)
    parser.add_argument("--limit", type=int, default=5)
    args = parser.parse_args()

    definitions = [ToolDefinition.model_validate(raw) for raw in demo_tools(args.tools)]
    room = Room("bench", ListingPolicy(inline_max=40, inline_token_budget=5000, meta_tools=3, meta_tool_tokens=400))
    tools = room.register("page-session", "Business app", definitions)
    meta = MetaTools(MetaToolNames())
    print(f"catalog: {len(tools)} demo tools (web_client/demo-tools.js); tokens = characters / 4\n")

    rows = [("structured entry", [tokens(v1_entry(room, t)) for t in tools], [tokens(match(room, t)) for t in tools]),
            ("text line", [tokens(v1_line(v1_entry(room, t))) for t in tools],
             [tokens(_match_text(match(room, t))) for t in tools])]
    print("per search result (every tool as one match)")
    print(f"{'':18} {'v1 mean':>7} {'median':>7} {'p90':>7} {'max':>7} | {'v2 mean':>7} {'median':>7} {'p90':>7} "
          f"{'max':>7} | v2/v1")
    for label, before, after in rows:
        print(f"{label:18} {summary(before)} | {summary(after)} | {sum(after) / sum(before):5.2f}")

    before_answers, after_answers, hits = [], [], []
    for query in QUERIES:
        found = [t for t, _ in asyncio.run(room.search(query, args.limit))]
        hits.append(len(found))
        deferred = room.listing().deferred
        before_answers.append(tokens(v1_answer(room, found, deferred)))
        after = asyncio.run(meta.route(room, "tool_search", {"query": query, "limit": args.limit}, None))
        assert isinstance(after, dict) and not after.get("isError"), after
        after_answers.append(tokens(after))
    print(f"\nwhole tool_search answers (text + structuredContent), {len(QUERIES)} requests, limit {args.limit}, "
          f"{statistics.mean(hits):.1f} matches on average")
    print(f"{'':18} {'mean':>7} {'median':>7} {'p90':>7} {'max':>7}")
    print(f"{'v1 (full schemas)':18} {summary(before_answers)}")
    print(f"{'v2 (compact)':18} {summary(after_answers)}")
    print(f"v2/v1: {sum(after_answers) / sum(before_answers):.2f}")


if __name__ == "__main__":
    main()
