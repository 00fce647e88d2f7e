"""What a container splits is read whole: the decisions of `classifiers.reassembled`, on texts.

The end-to-end cases (a card over three turns, in an array, between a key and its value, kept
local and masked) are in test_privacy_invariant.py."""

from __future__ import annotations

from classifiers import Scorer
from classifiers.reassembled import JOIN_CHARS, chained, in_array, in_conversation, in_fields, joiner, key_and_value

CARD = "4111 1111 1111 1111"


def test_texts_meet_between_digits_with_a_space_and_at_an_at_sign_as_they_stand():
    assert joiner("my card is 4111", "1111 1111") == " "
    assert joiner("write to jane.roe@", "example.com") == ""
    assert joiner("write to jane.roe", "@example.com") == ""
    assert joiner("It costs 40", "Thanks!") is None
    assert joiner("Hello", "world") is None


def test_a_joined_text_locates_what_crosses_in_each_piece_it_crosses():
    joined = key_and_value(((("k",)), "card 4111 1111"), ((("v",)), "1111 1111 ok"))
    assert joined is not None and joined.text == "card 4111 1111 1111 1111 ok"
    start = joined.text.index("4111")
    shares = joined.located(start, start + len(CARD))
    assert shares == [(("k",), 5, 14), (("v",), 0, 9)]
    assert joined.located(0, 4) == []  # within one piece: its own scan finds it


def test_a_run_of_turns_grows_through_a_short_text_and_stops_at_a_long_one():
    texts = [(("a",), "card 4111"), (("b",), "1111 1111"), (("c",), "1111 thanks")]
    (run,) = chained(texts)
    assert run.text == "card 4111 1111 1111 1111 thanks"
    long_middle = "1" + " " * (JOIN_CHARS + 1) + "1"
    texts = [(("a",), "card 4111"), (("b",), long_middle), (("c",), "1111")]
    assert [len(r.pieces) for r in chained(texts)] == [2, 2]


def test_the_user_is_read_across_one_reply_of_the_assistant():
    messages = [
        {"role": "user", "content": "my card is 4111 1111"},
        {"role": "assistant", "content": "Go on."},
        {"role": "user", "content": "1111 1111"},
    ]
    (joined,) = in_conversation({"messages": messages})
    assert joined.text == "my card is 4111 1111 1111 1111"
    assert [p.path for p in joined.pieces] == [("messages", 0, "content"), ("messages", 2, "content")]


def test_tool_call_arguments_are_turns():
    messages = [
        {"role": "assistant", "content": None, "tool_calls": [{"function": {"name": "f", "arguments": "n 4111"}}]},
        {"role": "tool", "content": "1111 1111 1111"},
    ]
    (joined,) = in_conversation({"messages": messages})
    assert joined.pieces[0].path == ("messages", 0, "tool_calls", 0, "function", "arguments")


def test_an_array_of_characters_is_read_side_by_side_and_of_groups_spaced():
    chars = in_array([((i,), c) for i, c in enumerate("4111111111111111")])
    assert chars is not None and chars.text == "4111111111111111"
    groups = in_array([((i,), g) for i, g in enumerate(["4111", "1111", "1111", "1111"])])
    assert groups is not None and groups.text == CARD


def test_arrays_no_value_can_cross_are_not_read_again():
    assert in_array([((0,), "celsius"), ((1,), "fahrenheit")]) is None
    assert in_array([((0,), "4111")]) is None
    assert in_array([((i,), "x" * 30) for i in range(3)]) is None


def test_the_scorer_finds_a_card_split_three_ways_in_every_piece():
    scorer = Scorer()
    messages = [
        {"role": "user", "content": "card 4111"},
        {"role": "assistant", "content": "1111 1111"},
        {"role": "user", "content": "1111"},
    ]
    found = {(f.type, f.path) for f in scorer.signals(messages).privacy if f.detector.endswith("+joined")}
    assert found == {("CREDIT_CARD", ("messages", i, "content")) for i in range(3)}


def test_an_objects_consecutive_values_in_a_json_text_are_read_whole():
    """A tool call's arguments: `{"card_first8": ..., "card_last8": ...}` is one card to a model."""
    arguments = '{"card_first8": "54127534", "card_last8": "29016889", "note": "ok"}'
    (joined,) = in_fields(("arguments",), arguments)
    assert joined.text == "54127534 29016889"
    assert joined.located(0, len(joined.text)) == [(("arguments",), 17, 25), (("arguments",), 43, 51)]
    assert in_fields(("arguments",), '{"a": 12345678, "b": 87654321}')[0].text == "12345678 87654321"


def test_a_tables_consecutive_cells_of_digits_in_one_row_are_read_whole():
    assert [j.text for j in in_fields(("t",), "id,first,last\n1,54127534,29016889\n")] == ["54127534 29016889"]
    assert [j.text for j in in_fields(("t",), "a\t5412 7534\t2901 6889")] == ["5412 7534 2901 6889"]
    # a number's thousands, cells in two rows, cells of one or two digits: no value crosses them
    assert in_fields(("t",), "it grew to 4,111,111,111,111,111 in 2024") == []
    assert in_fields(("t",), "first\n54127534\n29016889") == []
    assert in_fields(("t",), "1,2,3,4\n5,6,7,8") == []


def test_the_scorer_masks_every_piece_of_a_card_in_sibling_fields():
    """Each piece is found, so each is masked: not a neighbour that happened to be found."""
    scorer = Scorer()
    arguments = '{"card_first8": "54127534", "card_last8": "29016889"}'
    messages = [
        {"role": "user", "content": "Charge it."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "pay", "arguments": arguments}}]},
    ]  # fmt: skip
    path = ("messages", 1, "tool_calls", 0, "function", "arguments")
    found = [(f.type, f.path, arguments[f.start : f.end]) for f in scorer.signals(messages).privacy]
    assert found == [("CREDIT_CARD", path, "54127534"), ("CREDIT_CARD", path, "29016889")]
    body = {"messages": [{"role": "user", "content": "x"}], "metadata": {"first": "54127534", "last": "29016889"}}
    found = [(f.type, f.path) for f in scorer.signals(body["messages"], body=body).privacy]
    assert found == [("CREDIT_CARD", ("metadata", "first")), ("CREDIT_CARD", ("metadata", "last"))]
    table = "patient\tcard_a\tcard_b\n884120\t54127534\t29016889"
    found = [table[f.start : f.end] for f in scorer.signals([{"role": "user", "content": table}]).privacy]
    assert found == ["54127534", "29016889"]
