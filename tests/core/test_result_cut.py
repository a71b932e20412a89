"""bridge.core.results.cut: a direct call's answer past --result-max-chars reaches the agent cut, with a note saying
how large it was; what is not text is kept, structured content (which cannot be cut) goes."""

from __future__ import annotations

import json

from bridge.core.results import cut


def text(value: str) -> dict:
    return {"type": "text", "text": value}


def test_an_answer_within_the_limit_is_left_as_it_is():
    result = {"content": [text("x" * 100)], "structuredContent": {"a": 1}}
    assert cut(result, 100, structured_repeats_text=True) is result
    assert cut({"content": "not a list"}, 1, structured_repeats_text=False) == {"content": "not a list"}


def test_a_long_answer_is_cut_across_its_text_blocks_with_a_note():
    image = {"type": "image", "data": "AAAA", "mimeType": "image/png"}
    result = {"content": [text("a" * 60), image, text("b" * 60), text("c" * 60)], "isError": False}
    shown = cut(result, 100, structured_repeats_text=False, code_tool="run_code")
    assert shown["content"][:3] == [text("a" * 60), image, text("b" * 40)]
    assert shown["content"][3]["text"] == ("[cut: the answer is 180 characters, over the 100 this bridge returns. Call "
                                           "the tool inside run_code to filter or total it: a program gets the whole "
                                           "answer.]")
    assert len(shown["content"]) == 4 and shown["isError"] is False


def test_structured_content_counts_unless_it_repeats_the_text_and_goes_when_cut():
    value = {"orders": ["o" * 50]}
    written = {"content": [text(json.dumps(value))], "structuredContent": value}  # the bridge wrote the text from it
    assert cut(written, 70, structured_repeats_text=True) is written
    own = {"content": [text("40 orders")], "structuredContent": value}  # the page's own result: both are read
    shown = cut(own, 60, structured_repeats_text=False)
    assert "structuredContent" not in shown and shown["content"][0] == text("40 orders")
    assert shown["content"][1]["text"].startswith("[cut: the answer is 75 characters, over the 60")
    assert "run_code" not in shown["content"][1]["text"]  # code mode off: no program to offer


def test_a_cut_answer_of_a_tool_with_an_output_schema_is_an_error_result():
    result = {"content": [text("x" * 50)], "structuredContent": {"text": "x" * 40}}
    shown = cut(result, 10, structured_repeats_text=False, needs_structured=True)
    assert shown["isError"] is True and "structuredContent" not in shown
    assert shown["content"][-1]["text"].endswith("Its structured content cannot be cut, so this is an error result.]")
