"""Real parts for shared-mode tests: a redis-server, and a bridge as a separate OS process (to kill or stop)."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
import time

import httpx
import pytest
import redis
from support import free_port


def start_redis(port: int) -> subprocess.Popen:
    """A redis-server on 127.0.0.1:`port`, without persistence, once it answers. Missing redis-server fails
    the test rather than skipping it: scripts/setup --test installs it."""
    assert shutil.which("redis-server"), "no redis-server: run scripts/setup --test (apt-get install redis-server)"
    server = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                               "--appendonly", "no"], stdout=subprocess.DEVNULL)
    client = redis.Redis(port=port)
    for _ in range(200):
        try:
            client.ping()
            return server
        except redis.ConnectionError:
            time.sleep(0.02)
    server.kill()
    raise AssertionError("redis-server did not start")


def stop(process: subprocess.Popen) -> None:
    process.kill()
    process.wait(5)


def start_bridge_process(port: int, redis_url: str, heartbeat: float, *options: str) -> subprocess.Popen:
    """`agui-mcp-bridge serve` in its own process, joined to `redis_url` (`options`: more of its options)."""
    return subprocess.Popen([sys.executable, "-m", "bridge.cli", "serve", "--port", str(port), "--redis-url", redis_url,
                             "--redis-heartbeat", str(heartbeat), "--log-level", "warning", *options],
                            stderr=subprocess.DEVNULL)


async def wait_for_port(port: int) -> None:
    async with httpx.AsyncClient() as http:
        for _ in range(200):
            try:
                await http.get(f"http://127.0.0.1:{port}/api/state")
                return
            except httpx.HTTPError:
                await asyncio.sleep(0.05)
    raise AssertionError(f"no bridge came up on port {port}")


@pytest.fixture(scope="module")
def redis_server():
    """A redis-server of the test module's own, on a free port."""
    port = free_port()
    server = start_redis(port)
    yield f"redis://127.0.0.1:{port}/0"
    stop(server)


@pytest.fixture
def redis_url(redis_server):
    """The module's redis-server, emptied for each test."""
    redis.Redis.from_url(redis_server).flushall()
    return redis_server
