"""How a stdio process reads a server's answer to its challenge (bridge._proven_client): an answer framed
in any way but one HTTP/1.1 response with one Content-Length, no longer than MAX_PROOF_BYTES and ending
where it says, is not a bridge's, even when it carries a good proof; and a holder that answers slowly is
not taken for gone.

Real parts: TCP servers on 127.0.0.1 (asyncio) that answer the challenge with a true proof (a `PortClaim`'s,
its claim written to this test's runtime directory), framed as each test says; `holder_of` and `holder_gone`
against them.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import anyio
import pytest

from bridge import _proven_client as proven_client
from bridge._port_claim import PortClaim
from bridge._proven_client import MAX_PROOF_BYTES, Holder, holder_gone
from bridge.stdio_relay import UpstreamRefused, holder_of

VERSION = "9.9.9"
STATE = json.dumps({"version": VERSION, "rooms": []}).encode()


@pytest.fixture(autouse=True)
def runtime_dir(tmp_path, monkeypatch):
    """This test's XDG_RUNTIME_DIR, where the claims of its servers are written and read."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    return tmp_path


def response(body: bytes, *headers: str) -> bytes:
    return ("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + "".join(f"{h}\r\n" for h in headers)
            + "\r\n").encode("latin-1") + body


def well_formed(body: bytes) -> bytes:
    return response(body, f"Content-Length: {len(body)}")


class RawHolder:
    """Answers GET /api/holder with a true proof of its claim, as `frame` frames it (then closes the
    connection if `close`), and GET /api/state as a bridge does; keeps the requests it gets."""

    def __init__(self, frame: Callable[[bytes], bytes], close: bool = False) -> None:
        self.frame, self.close = frame, close
        self.claim = PortClaim()
        self.requests: list[bytes] = []
        self.writers: set[asyncio.StreamWriter] = set()

    async def __call__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.writers.add(writer)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                self.requests.append(head)
                target = head.split(b" ")[1].decode()
                if target.startswith("/api/holder?nonce="):
                    host, port = writer.get_extra_info("sockname")[:2]
                    proof = self.claim.prove(target.partition("=")[2], host, port)
                    writer.write(self.frame(json.dumps({"version": VERSION, "proof": proof}).encode()))
                    await writer.drain()
                    if self.close:
                        return
                else:
                    writer.write(well_formed(STATE))
                    await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the client closed the connection
        finally:
            self.writers.discard(writer)
            writer.close()


@asynccontextmanager
async def listening(handler: Callable) -> AsyncIterator[int]:
    """The port of a server on 127.0.0.1 whose connections `handler` serves, open in the block."""
    server = await asyncio.start_server(handler, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        for writer in list(getattr(handler, "writers", ())):
            writer.close()
        await server.wait_closed()


async def refusal(frame: Callable[[bytes], bytes], close: bool = False) -> str:
    """Why `holder_of` refuses a server whose true proof is framed by `frame`."""
    holder = RawHolder(frame, close)
    try:
        async with listening(holder) as port:
            with anyio.fail_after(10), pytest.raises(UpstreamRefused) as refused:
                await holder_of(f"http://127.0.0.1:{port}", "the-token")
    finally:
        holder.claim.release()
    assert not any(b"the-token" in request for request in holder.requests)  # the token was never sent
    return str(refused.value)


async def test_a_true_proof_well_framed_is_a_bridge():
    """The servers below differ from this one only in how they frame their answer."""
    holder = RawHolder(well_formed)
    try:
        async with listening(holder) as port:
            with anyio.fail_after(10):
                found = await holder_of(f"http://127.0.0.1:{port}", "the-token")
    finally:
        holder.claim.release()
    assert found is not None and found.version == VERSION and found.secret is not None
    assert [r.split(b" ")[1].split(b"?")[0] for r in holder.requests] == [b"/api/holder", b"/api/state"]
    assert b"authorization: bearer the-token" in holder.requests[1].lower()


# How each server frames its (true) proof, and why it is refused.
FRAMINGS: dict[str, tuple[Callable[[bytes], bytes], str]] = {
    "no Content-Length": (lambda body: response(body), "no Content-Length"),
    "two Content-Lengths": (lambda body: response(body, f"Content-Length: {len(body)}",
                                                  f"Content-Length: {len(body)}"), "no Content-Length"),
    "bytes past its Content-Length": (lambda body: well_formed(body) + b"HTTP/1.1 200 OK\r\n",
                                      "more than its Content-Length"),
    # Only the head: the client must not wait for a body that long.
    "a Content-Length over MAX_PROOF_BYTES": (lambda body: response(b"", f"Content-Length: {MAX_PROOF_BYTES + 1}"),
                                              "too long"),
    # A head that never ends, then nothing: the client must not read on.
    "a head over MAX_PROOF_BYTES": (lambda body: b"HTTP/1.1 200 OK\r\nX-Pad: " + b"a" * (2 * MAX_PROOF_BYTES),
                                    "too long"),
}


@pytest.mark.parametrize("framing", FRAMINGS)
async def test_a_true_proof_framed_otherwise_is_not_a_bridges(framing):
    frame, why = FRAMINGS[framing]
    said = await refusal(frame)
    assert f"its answer to GET /api/holder is not a bridge's ({why})" in said, said


async def test_an_answer_cut_short_by_the_connection_closing_is_not_a_bridges():
    said = await refusal(lambda body: well_formed(body)[:-10], close=True)
    assert "its answer to GET /api/holder is not a bridge's (the connection closed)" in said, said


async def test_holder_gone_takes_a_slow_answer_for_a_holder_still_there(monkeypatch):
    """A listener that accepts and never answers is checked again and again, never taken for gone; once
    nothing listens, the holder is gone."""
    monkeypatch.setattr(proven_client, "HOLDER_CHECK_SECONDS", 0.01)
    monkeypatch.setattr(proven_client, "HOLDER_CHECK_TIMEOUT", 0.1)
    accepted: list[asyncio.StreamWriter] = []

    async def stall(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(writer)
        try:
            await reader.read()  # until the client gives up and closes
        finally:
            writer.close()

    holder = Holder()
    holder.secret = b"s" * 32  # a holder proven once: its secret is known
    async with listening(stall) as port:
        url = f"http://127.0.0.1:{port}"
        with anyio.move_on_after(1.5) as waited:
            await holder_gone(holder, url)
        assert waited.cancelled_caught, "a slow answer was taken for the holder's absence"
        assert len(accepted) >= 3  # it checked, and checked again after each slow answer
        for writer in accepted:
            writer.close()
    with anyio.fail_after(5):
        await holder_gone(holder, url)  # refused: gone
