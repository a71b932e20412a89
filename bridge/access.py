"""Who may talk to the bridge: the Host names it answers, web origins, bearer tokens, room names,
and how fast a guesser may try tokens. Every edge asks here; the Host is checked in front of every
endpoint (`TrustedHosts`).

Two kinds of callers reach the bridge. Pages are browser code from the origins the operator
allows (`--allowed-origins`), so their endpoints answer those origins with CORS. Agents and the
operator (MCP, `/api/*`, `/metrics`, the dashboard) are programs or the bridge's own pages: a
browser request to them from another origin is refused before it acts, unless the operator names
that origin (`--agent-origins`).
"""

from __future__ import annotations

import logging
import re
import secrets
import time
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from starlette.datastructures import Headers
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from bridge.config import LOOPBACK_HOSTS, Settings

log = logging.getLogger(__name__)


def origin_pattern(patterns: str) -> re.Pattern[str]:
    """`http://localhost:*,https://app.example` -> one regex. A `:*` port also matches no port
    (a browser omits the default port: http://localhost is port 80); any other `*` matches anything."""
    alternatives = []
    for pattern in (p.strip() for p in patterns.split(",")):
        if not pattern:
            continue
        port = pattern.endswith(":*")
        pattern = re.escape(pattern[:-2] if port else pattern).replace(r"\*", ".*")
        alternatives.append(pattern + ("(?::[0-9]{1,5})?" if port else ""))
    return re.compile("|".join(alternatives) or "(?!)")


class TrustedHosts:
    """The Host headers the bridge answers: loopback, the address it listens on and `--public-hosts`.

    A page on another site whose name an attacker re-points at the bridge (DNS rebinding) reaches it
    with its own Host: refused, on every address and every endpoint, before anything else is read.
    Patterns are `name`, `name:port` or `name:*`; a name without a port admits any port and none (a
    browser omits the default port), and `*` in a name matches anything, as in origin patterns.
    """

    def __init__(self, settings: Settings) -> None:
        addresses = [*LOOPBACK_HOSTS, *(() if settings.loopback_only or settings.host in ("0.0.0.0", "::")
                                       else (settings.host,))]
        names = [f"[{address}]" if ":" in address else address for address in addresses]  # as a Host names them
        names += [h.strip() for h in settings.public_hosts.split(",") if h.strip()]
        self.patterns = [name if _has_port(name) else f"{name}:*" for name in names]
        self.pattern = origin_pattern(",".join(self.patterns).lower())
        self._refused: set[str] = set()

    def admits(self, host: str | None) -> bool:
        return host is not None and self.pattern.fullmatch(host.lower()) is not None

    def refusal(self, scope: Scope) -> PlainTextResponse | None:
        """400 unless the request's Host is one the bridge answers (logged once a host)."""
        host = next((value.decode("latin-1") for name, value in scope["headers"] if name == b"host"), None)
        if self.admits(host):
            return None
        name = (host or "").rpartition(":")[0] if _has_port(host or "") else host
        if host is not None and host not in self._refused and len(self._refused) < 100:
            self._refused.add(host)
            log.warning("refused a request for Host %s; if clients reach the bridge by that name, start it with "
                             "--public-hosts %s", host, name)
        what = f"the Host {host}" if host is not None else "a request without a Host header"
        return PlainTextResponse(f"This bridge does not answer {what}. If clients reach it by that name, start "
                                 f"the bridge with --public-hosts {name or '<name>'} (besides the names it has).",
                                 400)


def _has_port(host: str) -> bool:
    return ":" in host.rpartition("]")[2]


class PageOrigins:
    """The origins pages may connect from (`--allowed-origins`): the page endpoints and AG-UI runs ask."""

    def __init__(self, allowed_origins: str) -> None:
        self.allowed_origins = allowed_origins
        self.pattern = origin_pattern(allowed_origins)
        self._refused: set[str] = set()

    def refusal(self, origin: str | None) -> str | None:
        """Why a browser page from `origin` may not connect (logged once an origin), or None.

        Browsers always send Origin; other clients (agents' tooling, tests) may not.
        """
        if origin is None or self.pattern.fullmatch(origin) is not None:
            return None
        # The --allowed-origins value that would admit it too (file:// pages send "null").
        admitting = ",".join(p for p in (self.allowed_origins, origin) if p)
        if origin not in self._refused and len(self._refused) < 100:
            self._refused.add(origin)
            log.warning("refused a page from origin %s; to admit it, start the bridge with --allowed-origins %s",
                        origin, admitting)
        return (f"This page's origin, {origin}, may not connect to the bridge. To admit it, start the bridge with "
                f"--allowed-origins '{admitting}' (embedded: Settings(allowed_origins={admitting!r})).")


def credential(headers: Mapping[str, str]) -> str:
    """The `Authorization` header's credential as `<scheme> <value>`, the scheme in lower case (schemes
    are case-insensitive, RFC 9110 11.1) and spaces trimmed: one string however an agent spells it;
    "" without the header."""
    scheme, _, value = headers.get("authorization", "").strip().partition(" ")
    return f"{scheme.lower()} {value.strip()}" if scheme else ""


def bearer_token(headers: Headers) -> str | None:
    """The token of an `Authorization: Bearer <token>` header, or None."""
    scheme, _, token = credential(headers).partition(" ")
    return token if scheme == "bearer" else None


def tokens_match(presented: str | None, token: str) -> bool:
    """In constant time, so the comparison tells nothing of how much of a guess was right."""
    return presented is not None and secrets.compare_digest(presented.encode(), token.encode())


def missing_agent_token(scope: Scope, token: str) -> PlainTextResponse | None:
    """401 unless no token is set or the request presents it."""
    if not token or tokens_match(bearer_token(Headers(scope=scope)), token):
        return None
    return PlainTextResponse("This bridge needs 'Authorization: Bearer <agent token>'.", 401,
                             headers={"WWW-Authenticate": 'Bearer realm="agui-mcp-bridge"'})


def is_same_origin(origin: str, host: str | None) -> bool:
    """The bridge's own pages (the dashboard) send their Origin on POSTs: its host and port are the
    request's Host (already checked against the trusted hosts). The scheme is not compared: behind a
    TLS-terminating proxy the page is https and the request reaching the bridge http."""
    scheme, sep, netloc = origin.partition("://")
    return bool(sep) and scheme in ("http", "https") and host is not None and netloc.lower() == host.lower()


class AgentOrigins:
    """Guards an agent or operator endpoint against browser pages of other origins.

    A request without Origin (MCP clients, curl) or from the bridge's own origin passes; one from an
    origin the operator opted in gets CORS; any other is refused with 403 before the endpoint acts,
    preflights included, so a page on another local port can neither read nor change anything.
    """

    def __init__(self, app: ASGIApp, opted_in: re.Pattern[str]) -> None:
        self.app = app
        self.opted_in = opted_in
        self._cors = CORSMiddleware(app, allow_origin_regex=opted_in.pattern, allow_methods=["GET", "POST", "DELETE"],
                                    allow_headers=["*"], expose_headers=["Mcp-Session-Id"])

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = Headers(scope=scope)
        origin = headers.get("origin")
        if origin is None or is_same_origin(origin, headers.get("host")):
            await self.app(scope, receive, send)
        elif self.opted_in.fullmatch(origin):
            await self._cors(scope, receive, send)
        else:
            await forbidden_agent_origin(origin)(scope, receive, send)


def forbidden_agent_origin(origin: str) -> PlainTextResponse:
    return PlainTextResponse(
        f"Origin {origin} may not use the bridge's agent and operator endpoints: browser pages of other origins "
        f"are refused. To let a web-based agent of that origin in, start the bridge with --agent-origins {origin}.",
        403)


class FailedAttempts:
    """Slows down token guessing: each address may fail `burst` times, then once per `interval`
    seconds (a token bucket). Remembers the `max_addresses` most recent failing addresses."""

    def __init__(self, burst: int = 10, interval: float = 1.0, max_addresses: int = 10_000,
                 clock: Any = time.monotonic) -> None:
        self.burst, self.interval, self.max_addresses, self._clock = burst, interval, max_addresses, clock
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # address -> (tokens, at)

    def _tokens(self, address: str) -> float:
        tokens, at = self._buckets.get(address, (self.burst, 0.0))
        return min(self.burst, tokens + (self._clock() - at) / self.interval)

    def retry_after(self, address: str) -> float | None:
        """Seconds until `address` may try again, or None if it may now."""
        if address not in self._buckets:
            return None
        tokens = self._tokens(address)
        return None if tokens >= 1 else (1 - tokens) * self.interval

    def failed(self, address: str) -> None:
        self._buckets[address] = (max(self._tokens(address) - 1, 0.0), self._clock())
        self._buckets.move_to_end(address)
        if len(self._buckets) > self.max_addresses:
            self._buckets.popitem(last=False)


def client_address(scope: Scope) -> str:
    client = scope.get("client")
    return client[0] if client else ""
