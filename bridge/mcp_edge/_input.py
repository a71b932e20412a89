"""What a page's call asks of the agent's side, over MCP: input requests and log messages.

A page's handler may need input only the agent's side has (the user's answer to
an elicitation, a sampled completion, the client's roots). Its
`agui.tool.input_request` ends the page's call; the agent's answers reach the
page in a new invoke of the same tool (`input_responses`, with the page's own
`request_state`). In the 2026-07-28 era the agent gets an `input_required`
result and retries the call with `inputResponses` and the request state (sealed by
the SDK's RequestStateBoundary, bound to the tool and its arguments; within it the
bridge binds the room, the agent's credential and the keys asked, and the state is
good for one retry); in the handshake era the bridge sends the requests to the
client on the call's stream itself. Log lines (`agui.tool.log`) reach agents at the
level they asked for: handshake clients with `logging/setLevel`, 2026-07-28 clients
per request.
"""

from __future__ import annotations

import json
import secrets
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Final, get_args
from weakref import WeakKeyDictionary

import mcp_types as types
from mcp.server.connection import allowed_log_levels
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types import CLIENT_CAPABILITIES_META_KEY
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from bridge.core.used_states import UsedStates

INPUT_ROUNDS_MAX = 8  # input requests one call may make before the bridge gives up on the page
_LEVELS: Final = get_args(types.LoggingLevel)
_REQUEST_TYPES: Final[dict[str, tuple[type[Any], type[Any]]]] = {
    "elicitation/create": (types.ElicitRequest, types.ElicitResult),
    "sampling/createMessage": (types.CreateMessageRequest, types.CreateMessageResult),
    "roots/list": (types.ListRootsRequest, types.ListRootsResult),
}


def modern(ctx: ServerRequestContext) -> bool:
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


def client_capabilities(ctx: ServerRequestContext) -> dict[str, Any]:
    """What the agent's client declared it can do: per request in the 2026-07-28 era, at initialize before."""
    if modern(ctx):
        declared = ((ctx.params or {}).get("_meta") or {}).get(CLIENT_CAPABILITIES_META_KEY)
        return declared if isinstance(declared, dict) else {}
    params = ctx.session.client_params
    if params is None:
        return {}
    dumped = _declared.get(ctx.session)
    if dumped is None:  # dumped once per session rather than per call; forgotten with the session
        dumped = _declared[ctx.session] = params.capabilities.model_dump(by_alias=True, exclude_none=True,
                                                                          mode="json")
    return dumped


_declared: WeakKeyDictionary[Any, dict[str, Any]] = WeakKeyDictionary()  # handshake session -> its capabilities


@dataclass(frozen=True, slots=True)
class Retry:
    """A 2026-07-28 call answering a page's input request: what the page is told (`input_responses`,
    `request_state`), and the id of the state it came with, which one retry spends."""

    asked: dict[str, Any]
    state_id: str


def answers_in(ctx: ServerRequestContext, *, room: str, agent: str) -> Retry | None:
    """The retry a call is, if it comes with a request state: read from the request as sent (the SDK's
    typed params reshape the answers). The state must have been issued in `room` to `agent` (a digest
    of its credential); only answers to the keys it asked pass. Answers without a state are nobody's
    to give: dropped, the call is a first call and the page asks again."""
    params = ctx.params or {}
    responses, sealed = params.get("inputResponses"), params.get("requestState")
    responses = checked_responses({} if responses is None else responses)
    if sealed is None:
        return None
    try:  # the SDK's boundary verified the seal and put back the plaintext the bridge minted
        state = json.loads(sealed) if isinstance(sealed, str) else {}
    except ValueError:
        state = None
    if not (isinstance(state, dict) and isinstance(state.get("id"), str) and isinstance(state.get("keys"), list)):
        raise MCPError(types.INVALID_PARAMS, "Invalid requestState.")
    if state.get("room") != room or state.get("agent") != agent:
        raise MCPError(types.INVALID_PARAMS, "This requestState was issued in another room or to an agent with "
                                             "another credential.")
    answers = {key: responses[key] for key in state["keys"] if key in responses}
    return Retry({"input_responses": answers, "request_state": state.get("page")}, state["id"])


async def spend(retry: Retry, used: UsedStates) -> None:
    """The retry takes its state: a state is good for one retry that reaches the page."""
    if not await used.spend(retry.state_id):
        raise MCPError(types.INVALID_PARAMS, "This requestState was already used: each is good for one retry. "
                                             "Call the tool again without it to start over.")


def checked_responses(responses: Any) -> dict[str, Any]:
    """An agent's `inputResponses`, refused (-32602) unless an object of objects."""
    if not isinstance(responses, dict) or not all(isinstance(answer, dict) for answer in responses.values()):
        raise MCPError(types.INVALID_PARAMS, "inputResponses must be an object whose values are objects.")
    return responses


def declares_extension(ctx: ServerRequestContext, extension: str) -> bool:
    return isinstance((client_capabilities(ctx).get("extensions") or {}).get(extension), dict)


def input_required(asked: dict[str, Any], *, room: str, agent: str) -> dict[str, Any]:
    """The 2026-07-28 answer to a call whose page needs input; the SDK seals `requestState`, in which
    the bridge binds the room, the agent (a digest of its credential) and the keys asked, and names
    the state so that one retry spends it."""
    state = {"page": asked["requestState"], "room": room, "agent": agent, "keys": list(asked["inputRequests"]),
             "id": secrets.token_urlsafe(16)}
    return {"resultType": "input_required", "inputRequests": asked["inputRequests"], "requestState": json.dumps(state)}


async def ask_client(ctx: ServerRequestContext, requests: dict[str, Any]) -> dict[str, Any]:
    """Handshake era: each input request goes to the client on the call's stream; the answers by key."""
    related = ServerMessageMetadata(related_request_id=ctx.request_id)
    answers: dict[str, Any] = {}
    for key, request in requests.items():
        request_type, result_type = _REQUEST_TYPES[request["method"]]
        typed = request_type.model_validate({"method": request["method"], "params": request["params"] or None})
        answer = await ctx.session.send_request(typed, result_type, metadata=related)
        answers[key] = answer.model_dump(by_alias=True, exclude_none=True, mode="json")
    return answers


class LogLevels:
    """The least level of log message each handshake session asked for (`logging/setLevel`)."""

    def __init__(self, bound: int) -> None:
        self._by_session: OrderedDict[str, str] = OrderedDict()
        self._bound = bound

    async def set_level(self, ctx: ServerRequestContext, params: types.SetLevelRequestParams) -> types.EmptyResult:
        key = _session_key(ctx)
        self._by_session[key] = params.level
        self._by_session.move_to_end(key)
        if len(self._by_session) > self._bound:
            self._by_session.popitem(last=False)
        return types.EmptyResult()

    def forget(self, session_id: str) -> None:
        self._by_session.pop(session_id, None)

    def allowed(self, ctx: ServerRequestContext) -> frozenset[str]:
        """The levels this call's agent takes; none unless it asked."""
        if modern(ctx):
            return frozenset(allowed_log_levels(ctx.protocol_version, (ctx.params or {}).get("_meta")))
        least = self._by_session.get(_session_key(ctx))
        return frozenset(_LEVELS[_LEVELS.index(least):]) if least in _LEVELS else frozenset()


async def send_log(ctx: ServerRequestContext, log: dict[str, Any]) -> None:
    await ctx.session.send_notification(
        types.LoggingMessageNotification(params=types.LoggingMessageNotificationParams(
            level=log["level"], data=log["data"], logger=log.get("logger"))),
        related_request_id=ctx.request_id)


def _session_key(ctx: ServerRequestContext) -> str:
    return (ctx.request.headers.get("mcp-session-id") or "") if ctx.request is not None else ""
