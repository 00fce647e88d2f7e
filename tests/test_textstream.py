"""Stop sequences and UTF-8 across token boundaries."""

from edge_runtime.textstream import TextStream


def run(pieces: list[bytes], stop: list[str]) -> tuple[str, bool]:
    stream = TextStream(stop)
    out = "".join(stream.feed(p) for p in pieces)
    return out + stream.flush(), stream.stopped


def test_text_without_stop_sequences_passes_through():
    assert run([b"Hel", b"lo ", b"world"], []) == ("Hello world", False)


def test_a_stop_sequence_split_across_tokens_is_caught_and_never_sent():
    assert run([b"one, two", b", thr", b"ee, four"], [", three"]) == ("one, two", True)


def test_text_held_back_as_a_possible_stop_is_released_when_it_is_not_one():
    stream = TextStream(["END"])
    assert stream.feed(b"the EN") == "the "
    assert stream.feed(b"D") == ""
    assert stream.stopped
    other = TextStream(["END"])
    assert other.feed(b"the EN") == "the "
    assert other.feed(b"ding") == "ENding"


def test_a_multibyte_character_split_between_tokens_is_decoded_whole():
    euro = "€".encode()
    assert run([b"price: 5", euro[:1], euro[1:], b"!"], []) == ("price: 5€!", False)


def test_the_earliest_of_several_stop_sequences_wins():
    assert run([b"a;b.c"], [".", ";"])[0] == "a"


def test_a_character_cut_in_half_by_max_tokens_is_dropped_not_replaced():
    castle = "🏰".encode()
    stream = TextStream([])
    out = stream.feed(castle) + stream.feed(castle[:2]) + stream.feed(castle[2:]) + stream.feed(castle[:3])
    assert out + stream.flush() == "🏰🏰"


def test_invalid_bytes_inside_the_text_still_read_as_replacement_characters():
    stream = TextStream([])
    assert stream.feed(b"a\xffb") + stream.flush() == "a\ufffdb"
