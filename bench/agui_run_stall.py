"""How long the event loop stalls while the bridge reads a large AG-UI run (POST /agui/run).

A bridge served in this process (uvicorn, as `serve` runs it) with a ticker task on its loop measuring
the longest gap between its 1 ms wake-ups; the runs are posted by another process (`python
bench/agui_run_stall.py post URL FILE`, with http.client; started and connected before the timing
starts), so the loop and its process hold the bridge's work only. Each row is one run, timed from
its request to its answer's first line (RUN_STARTED, or the refusal); "gc ms" is the longest garbage
collection meanwhile (it stops the loop too); the baseline row is the ticker on the idle loop. Rows:
chat histories of 1,000 and 10,000 messages (the default --max-run-messages), 240,000 messages in a
13 MiB body (refused at the default limit; then let in with the limit raised, to time reading them
all), and runs of 1,000 tools (registered) and 60,000 tools (refused: --max-tools-per-page).

    python bench/agui_run_stall.py
"""

from __future__ import annotations

import asyncio
import gc
import http.client
import json
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import longest_stall  # noqa: E402

from bridge.config import Settings  # noqa: E402
from bridge.server import RunningServer  # noqa: E402


def messages(count: int) -> list[dict]:
    """A chat history of short messages: many to a MiB."""
    return [{"id": f"m{n}", "role": "user" if n % 2 else "assistant", "content": f"#{n}"} for n in range(count)]


def tools(count: int) -> list[dict]:
    return [{"name": f"tool_{n}", "description": f"Tool number {n}.",
             "parameters": {"type": "object", "properties": {"id": {"type": "string", "description": f"#{n}"}}}}
            for n in range(count)]


def body(n: int, **fields: list[dict]) -> bytes:
    return json.dumps({"threadId": f"thread-{n}", "runId": "run-1", "state": {}, "context": [],
                       "forwardedProps": {}, "messages": [], "tools": [], **fields}).encode()


def post(url: str, path: str) -> None:
    """(In the posting process) once told to go (a line on stdin), POST the run in the file and print its
    answer's first line, then leave (the bridge ends the run)."""
    where, content = urlsplit(url), Path(path).read_bytes()
    connection = http.client.HTTPConnection(where.hostname, where.port, timeout=120)
    connection.connect()
    print("ready", flush=True)
    sys.stdin.readline()
    connection.request("POST", where.path, body=content, headers={"Content-Type": "application/json"})
    response = connection.getresponse()
    if response.status != 200:
        print(response.status, json.loads(response.read())["code"], flush=True)
    else:
        print(next(line for line in response if line.strip()).decode()[:40].strip(), flush=True)


class Poster:
    """A posting process, started and connected before the run is timed."""

    async def start(self, url: str, content: bytes) -> None:
        self.file = tempfile.NamedTemporaryFile(suffix=".json")
        self.file.write(content)
        self.file.flush()
        self.process = await asyncio.create_subprocess_exec(sys.executable, __file__, "post", url, self.file.name,
                                                            stdin=asyncio.subprocess.PIPE,
                                                            stdout=asyncio.subprocess.PIPE)
        assert self.process.stdin is not None and self.process.stdout is not None
        assert await self.process.stdout.readline() == b"ready\n"

    async def post(self) -> str:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(b"go\n")
        answer = (await self.process.stdout.readline()).decode().strip()
        await self.process.wait()
        self.file.close()
        return answer


async def posted(url: str, content: bytes) -> str:
    poster = Poster()
    await poster.start(url, content)
    return await poster.post()


class CollectorPauses:
    """The longest pause of Python's garbage collector (it stops the loop too) since `reset`."""

    def __init__(self) -> None:
        self.longest = 0.0
        self._started = 0.0
        gc.callbacks.append(self._note)

    def reset(self) -> None:
        self.longest = 0.0

    def _note(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.longest = max(self.longest, time.perf_counter() - self._started)


async def main() -> None:
    rows = [("1,000 messages", {}, {"messages": messages(1_000)}),
            ("10,000 messages", {}, {"messages": messages(10_000)}),
            ("240,000 messages", {}, {"messages": messages(240_000)}),
            ("240,000 messages, let in", {"max_run_messages": 240_000}, {"messages": messages(240_000)}),
            ("1,000 tools", {}, {"tools": tools(1_000)}),
            ("60,000 tools", {}, {"tools": tools(60_000)})]
    print(f"{'run':<26} {'MiB':>6} {'took ms':>9} {'longest stall ms':>17} {'gc ms':>7}  answer")
    pauses = CollectorPauses()
    _, idle, _ = await longest_stall(lambda: asyncio.sleep(0.2))
    print(f"{'idle loop (baseline)':<26} {'':>6} {'':>9} {idle * 1e3:17.2f} {pauses.longest * 1e3:7.2f}")
    for n, (label, settings, fields) in enumerate(rows):
        content = body(n, **fields)
        server = await RunningServer.started(Settings(port=0, log_level="warning", **settings), None)
        try:
            await posted(server.url + "/agui/run", body(-1, tools=tools(1)))  # schema checks' first use, not timed
            gc.collect()
            pauses.reset()
            poster = Poster()
            await poster.start(server.url + "/agui/run", content)
            took, stall, answer = await longest_stall(poster.post)
        finally:
            await server.stop()
        print(f"{label:<26} {len(content) / 2 ** 20:6.1f} {took * 1e3:9.1f} {stall * 1e3:17.2f} "
              f"{pauses.longest * 1e3:7.2f}  {answer}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["post"]:
        post(*sys.argv[2:4])
    else:
        asyncio.run(main())
