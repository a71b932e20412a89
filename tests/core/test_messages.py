"""The page protocol's messages (bridge.core.messages): parsing refuses with a code and keeps what a reply
needs; a number JSON cannot hold is refused like NaN."""

from __future__ import annotations

import pytest

from bridge.core.messages import ProtocolError, ToolReturn, parse_page_message


@pytest.mark.parametrize("frame, code", [
    ("{", "bad_json"), ("3", "bad_message"), ('{"type": 1}', "unknown_type"),
    ('{"type": "agui.tool.return", "call_id": 5}', "bad_message"),
])
def test_parse_rejects_with_codes(frame, code):
    with pytest.raises(ProtocolError) as caught:
        parse_page_message(frame)
    assert caught.value.code == code
    assert caught.value.to_message()["type"] == "agui.error"


def test_parse_keeps_the_message_id_for_replies():
    with pytest.raises(ProtocolError) as caught:
        parse_page_message('{"type": "agui.tool.progress", "id": 9}')
    assert caught.value.to_message()["reply_to"] == 9
    msg = parse_page_message('{"type": "agui.tool.return", "call_id": "c", "result": [1], "extra": true}')
    assert isinstance(msg, ToolReturn) and msg.result == [1]


def test_a_non_finite_number_from_a_page_is_refused_like_nan():
    for text in ("1e400", "-1E+400", "1" * 400 + ".5"):
        with pytest.raises(ProtocolError) as error:
            parse_page_message('{"type": "agui.tool.return", "call_id": "c", "result": {"n": ' + text + "}}")
        assert error.value.code == "bad_json" and "is not a JSON number" in error.value.message
        assert len(error.value.message) < 120
    assert parse_page_message('{"type": "agui.tool.return", "call_id": "c", "result": [1e308, 1e-400, 2]}').result \
        == [1e308, 0.0, 2]
