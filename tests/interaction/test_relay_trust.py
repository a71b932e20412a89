"""A stdio process relays its agent only through a bridge that proves it was started by the same user:
the bridge answers a nonce with an HMAC of the secret in its port's claim, a file only the user can read
(bridge._port_claim). A server that squats the port and answers like a bridge gets neither the agent
token nor a call.

Real parts: `agui-mcp-bridge stdio` subprocesses, bridges on real sockets, a fake holder served by uvicorn.
"""

from __future__ import annotations

import asyncio
import json
import socket
import stat
from contextlib import AsyncExitStack

import httpx
import pytest
import uvicorn
from mcp import Client
from starlette.applications import Starlette
from starlette.routing import Mount
from support import free_port, running_bridge
from test_stdio import HANDSHAKE, ended, send, started_stdio, stdio_command, stopped
from test_stdio_sharing import ECHO, answer_next, echoed_by_a_new_page, listed, runtime_dir, stdio_params  # noqa: F401

from bridge import _port_claim as port_claim
from bridge.app import Bridge
from bridge.config import Settings
from bridge.server import HOLDER_WAIT_SECONDS, RunningServer

AGENT_TOKEN = "the-agent-token-a-squatter-wants"


class FakeHolder:
    """Answers GET /api/state as a bridge would (and GET /api/holder with a made-up proof, when given
    one); keeps every request it gets."""

    def __init__(self, proof: str | None) -> None:
        self.proof = proof
        self.requests: list[dict] = []

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        self.requests.append({"method": scope["method"], "path": scope["path"], "body": body.decode(errors="replace"),
                              "headers": {k.decode(): v.decode(errors="replace") for k, v in scope["headers"]}})
        if scope["path"] == "/api/state":
            status, answer = 200, {"version": "0.2.0", "rooms": []}
        elif scope["path"] == "/api/holder" and self.proof is not None:
            status, answer = 200, {"version": "0.2.0", "proof": self.proof}
        else:
            status, answer = 404, {"error": "not here"}
        body = json.dumps(answer).encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


async def served(app, port: int, sock: socket.socket | None = None) -> tuple[uvicorn.Server, asyncio.Task]:
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, log_level="warning"))
    task = asyncio.create_task(server.serve(sockets=[sock] if sock else None))
    while not server.started:
        assert not task.done(), "the server did not start"
        await asyncio.sleep(0.02)
    return server, task


async def refused(port: int) -> str:
    """The stderr of a stdio process started on `port` whose agent sent its handshake and a call; it
    must end by itself with exit 2."""
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {}}}
    process = await asyncio.create_subprocess_exec(*stdio_command(port, "--agent-token", AGENT_TOKEN),
                                                   stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                                                   stderr=asyncio.subprocess.PIPE)
    try:
        # The agent's stdin stays open, as a client's does: the process must end by itself.
        process.stdin.write(b"".join((json.dumps(m) + "\n").encode() for m in [*HANDSHAKE, call]))
        stdout, stderr = await asyncio.wait_for(asyncio.gather(process.stdout.read(), process.stderr.read()), 20)
        await asyncio.wait_for(process.wait(), 5)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    said = stderr.decode()
    assert process.returncode == 2 and stdout == b"", said
    assert "Traceback" not in said and len(said.strip().splitlines()) == 1, said
    return said


# What each squatter answers GET /api/holder with, and why the stdio process says it refuses it.
SQUATTERS = {"answers /api/state only": (None, "answered GET /api/holder with 404"),
             "makes up a proof": ("0" * 64, "no bridge of yours claims port"),
             "makes up a proof, a claim left": ("0" * 64, "does not match the secret"),
             "answers a proof that is no HMAC, a claim left": ("é\u0000" * 40, "does not match the secret")}


@pytest.mark.parametrize("squatter", SQUATTERS)
async def test_a_server_that_cannot_prove_it_is_a_bridge_of_this_user_gets_no_token_and_no_call(squatter, runtime_dir):
    port = free_port()
    proof, why = SQUATTERS[squatter]
    fake = FakeHolder(proof)
    if squatter.endswith("a claim left"):  # as a bridge killed on this port leaves it
        claims = runtime_dir / "agui-mcp-bridge"
        claims.mkdir(mode=0o700)
        (claims / f"port-{port}.json").write_text(json.dumps({"pid": 1, "secret": "ab" * 32}))
    server, task = await served(fake, port)
    try:
        said = await refused(port)
    finally:
        server.should_exit = True
        await task
    assert f"port {port}" in said and "did not prove it is an agui-mcp-bridge started by you" in said, said
    assert "token and calls are not sent" in said and why in said, said
    assert fake.requests, "the stdio process never asked the server on the port"
    for request in fake.requests:
        assert AGENT_TOKEN not in json.dumps(request), request  # neither as a header nor anywhere else
        assert request["path"] not in ("/mcp", "/api/state") and "tools/call" not in request["body"], request


async def test_a_bridge_embedded_in_an_app_proves_itself_and_serves_a_relayed_agent(runtime_dir):
    port = free_port()
    bridge = Bridge(Settings(port=port, log_level="warning"))
    app = Starlette(routes=[Mount("/", app=bridge)], lifespan=bridge.lifespan)
    server, task = await served(app, port)
    claim = runtime_dir / "agui-mcp-bridge" / f"port-{port}.json"
    try:
        async with AsyncExitStack() as stack:
            agent = await stack.enter_async_context(Client(stdio_params(port), mode="legacy"))
            await echoed_by_a_new_page(stack, port, agent, "through the app")
            # The claim the bridge proved itself with: readable by this user only.
            assert stat.S_IMODE(claim.stat().st_mode) == 0o600
            assert stat.S_IMODE(claim.parent.stat().st_mode) == 0o700
    finally:
        server.should_exit = True
        await task
    assert not claim.exists()  # removed when the bridge stopped


async def test_the_challenge_refuses_a_malformed_nonce_and_proves_a_good_one(runtime_dir):
    async with running_bridge() as bridge, httpx.AsyncClient() as http:
        for params in ({}, {"nonce": "too-short"}, {"nonce": "n" * 129}, {"nonce": "a" * 20 + "/../x"},
                       {"nonce": "é" * 20}):
            response = await http.get(bridge.url + "/api/holder", params=params)
            assert response.status_code == 400 and "nonce" in response.json()["error"], (params, response.text)
        nonce = port_claim.new_nonce()
        response = await http.get(bridge.url + "/api/holder", params={"nonce": nonce})
        assert response.status_code == 200
        proof, port = response.json()["proof"], bridge.server.port
        secret = port_claim.claimed_secret(port)  # what a stdio process checks the proof with
        assert port_claim.proves(secret, nonce, "127.0.0.1", port, proof)
        assert not port_claim.proves(secret, port_claim.new_nonce(), "127.0.0.1", port, proof)  # this nonce only
        assert not port_claim.proves(secret, nonce, "127.0.0.2", port, proof)  # and the address it was asked at
        assert (await http.get(bridge.url + "/api/state")).json()["rooms"] is not None  # the bridge serves on


async def test_a_claims_directory_others_could_use_is_refused_on_both_sides(runtime_dir):
    claims = runtime_dir / "agui-mcp-bridge"
    claims.mkdir()
    claims.chmod(0o755)
    async with running_bridge() as bridge, httpx.AsyncClient() as http:
        response = await http.get(bridge.url + "/api/holder", params={"nonce": port_claim.new_nonce()})
        assert response.status_code == 503 and "mode 0700" in response.json()["error"], response.text
        said = await refused(bridge.server.port)
    assert "mode 0700" in said and str(claims) in said, said
    assert list(claims.iterdir()) == []  # nothing was written where others could read or replace it


def test_a_claim_is_written_whole_and_private_and_removed_only_by_its_bridge(runtime_dir):
    first, second = port_claim.PortClaim(), port_claim.PortClaim()
    first.prove(port_claim.new_nonce(), "127.0.0.1", 1234)
    path = port_claim.claim_path(1234)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    second.prove(port_claim.new_nonce(), "127.0.0.1", 1234)  # the port's next bridge claims it
    first.release()
    assert path.exists()  # not the first's any more
    second.release()
    assert not path.exists() and list(path.parent.iterdir()) == []


def shared_port(port: int) -> socket.socket:
    """A socket bound to 127.0.0.1:port that another such socket may share (SO_REUSEPORT): one bound
    and not listening keeps the port from anyone else once the listening one closes."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(("127.0.0.1", port))
    return sock


async def test_a_server_that_takes_the_port_after_the_holder_gets_nothing_and_the_agent_keeps_its_session():
    port = free_port()
    holder_socket, squatter_socket = shared_port(port), shared_port(port)
    holder_socket.listen()
    holder = RunningServer(Bridge(Settings(port=port, agent_token=AGENT_TOKEN, log_level="warning")), holder_socket)
    await holder.start()
    fake = FakeHolder("0" * 64)
    process = await started_stdio(port, "--agent-token", AGENT_TOKEN)
    try:
        await send(process, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        assert "result" in json.loads(await asyncio.wait_for(process.stdout.readline(), 10))
        await holder.stop()
        squatter_socket.listen()  # the port is the squatter's the moment the bridge lets it go
        server, task = await served(fake, port, squatter_socket)
        try:
            while b"stopped" not in (line := await asyncio.wait_for(process.stderr.readline(), 10)):
                assert line, "the stdio process never noticed its bridge stopped"
            call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "echo", "arguments": {}}}
            await send(process, call)  # answered once the wait for a new bridge is over
            answer = json.loads(await asyncio.wait_for(process.stdout.readline(), HOLDER_WAIT_SECONDS + 20))
            assert answer["id"] == 3 and answer["result"]["isError"], answer
            text = answer["result"]["content"][0]["text"]
            assert "No bridge serves this agent now" in text and "did not prove" in text, text
        finally:
            server.should_exit = True
            await task
        for request_id in range(4, 100):  # the port is free: the stdio process takes it and serves its agent
            await send(process, {"jsonrpc": "2.0", "id": request_id, "method": "tools/list"})
            answer = json.loads(await asyncio.wait_for(process.stdout.readline(), 20))
            if "result" in answer:
                break
            await asyncio.sleep(0.1)
        assert "result" in answer, answer
        said = await ended(process)
        assert f"now serves port {port}" in said and "Traceback" not in said, said
    finally:
        await stopped(process)
        squatter_socket.close()
    assert fake.requests, "the squatter was never challenged"
    for request in fake.requests:
        assert AGENT_TOKEN not in json.dumps(request), request
        assert request["path"] == "/api/holder" and "tools/call" not in request["body"], request
