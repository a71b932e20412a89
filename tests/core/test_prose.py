"""The bridge's own wording (bridge.core.prose): text cut to a length, names listed in a sentence."""

from __future__ import annotations

from bridge.core.prose import cut_text, prose_list


def test_text_is_cut_to_its_length_with_an_ellipsis():
    assert cut_text("abcdef", 6) == "abcdef"
    assert cut_text("abcdefg", 6) == "abcde…"
    assert cut_text("abc   defg", 7) == "abc   …" and cut_text("abc   defg", 7, rstrip=True) == "abc…"


def test_names_are_listed_as_a_sentence_lists_them():
    assert [prose_list(items, "and") for items in ([], ["a"], ["a", "b"], ["a", "b", "c"])] == [
        "", "a", "a and b", "a, b and c"]
    assert prose_list(['"x"', '"y"', '"z"'], "or") == '"x", "y" or "z"'
