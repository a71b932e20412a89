"""Real parts for shared-mode tests: a redis-server."""

from __future__ import annotations

import subprocess
import time

import redis


def start_redis(port: int) -> subprocess.Popen:
    """A redis-server on 127.0.0.1:`port`, without persistence, once it answers."""
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
