"""PartialJson / parse_partial: best-effort values of incomplete tool input, for display."""

from __future__ import annotations

import contextlib
import copy
import json
import math
import threading
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from toolstitch import (
    Assembler,
    LimitError,
    PartialJson,
    ToolInputError,
    ToolstitchError,
    parse_partial,
)

SAMPLES = [
    '{"city": "Z\\u00fcrich", "days": [1, -2.5e3, 0.125, 1E2], "ok": true, "none": null}',
    '{"emoji": "\\ud83d\\ude00 and 😀", "text": "héllo wörld ✓", "nested": {"a": [[], {}]}}',
    '[true, false, null, -0, 12345678901234567890123, 1.5e-7, "x\\n\\t\\"\\\\\\/"]',
    '  {"a" : "b" , "c" : [ 1 , 2 ] }  ',
    '"just a string with \\u00e9 and \\ud834\\udd1e"',
    '{"code": "def f():\\n    return \\"\\u2603\\"\\n", "lines": 2}',
]


def feed_all(parts: list[bytes], **options: Any) -> PartialJson:
    p = PartialJson(**options)
    for part in parts:
        p.feed(part)
    return p


def consistent(partial: Any, final: Any) -> bool:
    """True when ``partial`` can be what was shown of ``final`` at some prefix."""
    if partial is None:
        return True
    if isinstance(final, bool) or final is None:
        return partial is final
    if isinstance(final, (int, float)):
        # An unfinished number shows its longest valid prefix: 12 for 12.5, 1 for 1e5.
        return isinstance(partial, (int, float)) and not isinstance(partial, bool)
    if isinstance(final, str):
        return isinstance(partial, str) and final.startswith(partial)
    if isinstance(final, list):
        if not isinstance(partial, list) or len(partial) > len(final):
            return False
        done = all(p == f for p, f in zip(partial[:-1], final, strict=False))
        return done and (not partial or consistent(partial[-1], final[len(partial) - 1]))
    if isinstance(final, dict):
        if not isinstance(partial, dict) or list(partial) != list(final)[: len(partial)]:
            return False
        keys = list(partial)
        done = all(partial[k] == final[k] for k in keys[:-1])
        return done and (not keys or consistent(partial[keys[-1]], final[keys[-1]]))
    return False


@pytest.mark.parametrize("text", SAMPLES)
def test_every_byte_cut_of_the_samples(text: str) -> None:
    data = text.encode()
    final = json.loads(text)
    for cut in range(len(data) + 1):
        head, tail = data[:cut], data[cut:]
        p = feed_all([head])
        shown = p.value()
        assert consistent(shown, final), (cut, shown)
        assert parse_partial(head) == shown
        p.feed(tail)
        assert p.value() == final


@pytest.mark.parametrize("text", SAMPLES)
def test_one_byte_at_a_time_every_prefix_is_consistent(text: str) -> None:
    final = json.loads(text)
    p = PartialJson()
    for byte in text.encode():
        p.feed(bytes([byte]))
        assert consistent(p.value(), final)
    assert p.value() == final


def test_utf8_split_is_held_back() -> None:
    data = '{"s": "a😀b"}'.encode()
    start = data.index("😀".encode())
    for k in range(1, 4):
        p = feed_all([data[: start + k]])
        assert p.value() == {"s": "a"}
    assert parse_partial(data[: start + 4]) == {"s": "a😀"}


@pytest.mark.parametrize("cut", range(len('{"s": "x\\u00e9')))
def test_unicode_escape_split_shows_nothing_of_it(cut: int) -> None:
    text = '{"s": "x\\u00e9'
    shown = parse_partial(text[:cut])
    assert shown in (None, {}, {"s": ""}, {"s": "x"})
    assert parse_partial(text) == {"s": "xé"}


def test_surrogate_pair_is_shown_only_whole() -> None:
    text = '"\\ud83d\\ude00"'
    for cut in range(1, len(text) - 1):
        assert parse_partial(text[:cut]) == ""
    assert parse_partial(text[:-1]) == "😀"
    assert parse_partial(text) == "😀"


def test_lone_surrogate_is_replacement_character_for_display() -> None:
    assert parse_partial('"a\\ud800b"') == "a\ufffdb"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("-", None),
        ("1", 1),
        ("12.", 12),
        ("12.5", 12.5),
        ("1e", 1),
        ("1e+", 1),
        ("1e+2", 100.0),
        ("-0", 0),
        ("[1, 2.", [1, 2]),
        ("[-", []),
        ('{"n": 3.', {"n": 3}),
        ("123456789012345678901234567890", 123456789012345678901234567890),
        ("1.0", 1.0),
    ],
)
def test_numbers_show_their_longest_valid_prefix(text: str, shown: Any) -> None:
    value = parse_partial(text)
    assert value == shown
    assert type(value) is type(shown)


def test_integral_text_is_int_else_float() -> None:
    assert parse_partial("[1, 1.0, 1e2, -7, 2E-1]") == [1, 1.0, 100.0, -7, 0.2]
    assert [type(x) for x in parse_partial("[1, 1.0, 1e2]")] == [int, float, float]
    assert math.isinf(parse_partial("[1e400]")[0])


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("t", None),
        ("tr", None),
        ("tru", None),
        ("true", True),
        ("[nu", []),
        ('{"a": fals', {}),
        ('{"a": false', {"a": False}),
        ("[null", [None]),
    ],
)
def test_keywords_are_shown_only_whole(text: str, shown: Any) -> None:
    assert parse_partial(text) == shown


def test_keys_and_members_appear_once_their_value_starts() -> None:
    assert parse_partial('{"ci') == {}
    assert parse_partial('{"city"') == {}
    assert parse_partial('{"city":') == {}
    assert parse_partial('{"city": "') == {"city": ""}
    assert parse_partial('{"city": "Par') == {"city": "Par"}


def test_partial_strings_option() -> None:
    assert parse_partial('{"a": "done", "b": "unfini', partial_strings=False) == {"a": "done"}
    assert parse_partial('"unfini', partial_strings=False) is None
    p = PartialJson(partial_strings=False)
    assert p.partial_strings is False
    p.feed('["x", "y')
    assert p.value() == ["x"]
    p.feed('"]')
    assert p.value() == ["x", "y"]


def test_duplicate_keys_last_value_wins_for_display() -> None:
    assert parse_partial('{"a": 1, "b": 2, "a": 3}') == {"a": 3, "b": 2}


def test_members_keep_arrival_order() -> None:
    assert list(parse_partial('{"z": 1, "a": 2, "m": 3}')) == ["z", "a", "m"]


def test_complete_and_len() -> None:
    p = PartialJson()
    assert p.value() is None
    assert not p.complete
    assert len(p) == 0
    p.feed('{"a": ')
    p.feed(b"[1]")
    assert len(p) == 9
    assert not p.complete
    p.feed("} ")
    assert p.complete
    assert p.value() == {"a": [1]}
    assert "complete=True" in repr(p)


def test_str_and_bytes_fragments_mix() -> None:
    p = PartialJson()
    p.feed('{"s": "é')
    p.feed(b"\xc3")
    p.feed(bytearray(b'\xa9"}'))
    assert p.value() == {"s": "éé"}


def test_wrong_fragment_type_is_type_error() -> None:
    p = PartialJson()
    with pytest.raises(TypeError):
        p.feed(123)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        parse_partial(None)  # type: ignore[arg-type]


def test_invalid_json_is_tool_input_error_with_offset_and_sticky() -> None:
    p = PartialJson()
    p.feed('{"a": 1')
    with pytest.raises(ToolInputError) as err:
        p.feed(", x")
    assert err.value.offset == 9
    assert isinstance(err.value, ToolstitchError)
    assert p.value() == {"a": 1}
    with pytest.raises(ToolInputError):
        p.feed("}")
    with pytest.raises(ToolInputError) as err2:
        parse_partial("[1] 2")
    assert err2.value.offset == 4


def test_max_depth_is_a_limit_error() -> None:
    p = PartialJson(max_depth=3)
    p.feed("[[[")
    with pytest.raises(LimitError, match="max_depth"):
        p.feed("[")
    assert p.value() == [[[]]]


def test_hostile_nesting_is_an_error_not_a_crash() -> None:
    with pytest.raises(LimitError):
        parse_partial("[" * 100_000)


def test_max_bytes_rejects_the_fragment_and_keeps_the_value() -> None:
    p = PartialJson(max_bytes=10)
    p.feed('["abc", ')
    with pytest.raises(LimitError, match="max_bytes"):
        p.feed('"defgh"]')
    assert p.value() == ["abc"]
    assert len(p) == 8


def test_copy_is_independent() -> None:
    p = PartialJson()
    p.feed('{"a": [1')
    q = copy.copy(p)
    r = copy.deepcopy(p)
    q.feed(", 2]}")
    assert p.value() == {"a": [1]}
    assert q.value() == {"a": [1, 2]}
    assert r.value() == {"a": [1]}


def test_values_never_alias() -> None:
    p = PartialJson()
    p.feed('{"a": [1, 2]}')
    first = p.value()
    first["a"].append(3)
    assert p.value() == {"a": [1, 2]}


def test_shared_between_threads() -> None:
    text = json.dumps({"items": list(range(2000))}).encode()
    p = PartialJson()
    seen: list[Any] = []

    def reader() -> None:
        for _ in range(200):
            seen.append(p.value())

    thread = threading.Thread(target=reader)
    thread.start()
    for i in range(0, len(text), 7):
        p.feed(text[i : i + 7])
    thread.join()
    final = json.loads(text)
    assert p.value() == final
    assert all(consistent(v, final) for v in seen)


# ------------------------------------------------------------- properties

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5)
    ),
    max_leaves=25,
)


@st.composite
def encoded_with_cuts(draw: st.DrawFn) -> tuple[Any, bytes, list[int]]:
    value = draw(json_values)
    text = json.dumps(
        value,
        ensure_ascii=draw(st.booleans()),
        indent=draw(st.sampled_from([None, 0, 2])),
    )
    data = text.encode()
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=12)))
    return value, data, cuts


@settings(max_examples=300, deadline=None)
@given(encoded_with_cuts())
def test_any_fragmentation_gives_the_same_value(case: tuple[Any, bytes, list[int]]) -> None:
    _, data, cuts = case
    final = json.loads(data)
    p = PartialJson()
    previous = 0
    for cut in [*cuts, len(data)]:
        p.feed(data[previous:cut])
        previous = cut
        assert consistent(p.value(), final)
    assert p.value() == final
    assert parse_partial(data) == final


@settings(max_examples=200, deadline=None)
@given(encoded_with_cuts())
def test_every_prefix_agrees_with_one_shot(case: tuple[Any, bytes, list[int]]) -> None:
    _, data, cuts = case
    for cut in cuts:
        assert feed_all([data[:cut]]).value() == parse_partial(data[:cut])


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64))
def test_garbage_is_an_error_or_a_value_never_a_crash(data: bytes) -> None:
    with contextlib.suppress(ToolstitchError):
        parse_partial(data)


def test_large_fragments_are_fed_without_the_gil() -> None:
    data = json.dumps({"rows": [{"n": i, "s": "é" * 10} for i in range(5000)]}).encode()
    p = PartialJson()
    p.feed(data[:100_001])
    assert consistent(p.value(), json.loads(data))
    p.feed(data[100_001:])
    assert p.value() == json.loads(data)
    assert parse_partial(data) == json.loads(data)


# --------------------------------------------------- reads after every fragment

scalar_texts = st.one_of(
    st.integers(-(2**80), 2**80).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr).filter(lambda t: "e" not in t),
    st.sampled_from(["1e5", "-0.5E-3", "true", "false", "null", "0"]),
    st.text(max_size=6).map(lambda t: json.dumps(t, ensure_ascii=False)),
    st.text(max_size=4).map(json.dumps),
)


def _join(items: list[str], space: bool) -> str:
    return (", " if space else ",").join(items)


json_texts_with_duplicates = st.recursive(
    scalar_texts,
    lambda children: st.one_of(
        st.tuples(st.lists(children, max_size=5), st.booleans()).map(
            lambda a: "[" + _join(a[0], a[1]) + "]"
        ),
        # Keys from a small set, so that duplicate keys are frequent.
        st.tuples(
            st.lists(st.tuples(st.sampled_from(["a", "b", "c", "é"]), children), max_size=6),
            st.booleans(),
        ).map(
            lambda o: (
                "{"
                + _join([json.dumps(k, ensure_ascii=False) + ": " + v for k, v in o[0]], o[1])
                + "}"
            )
        ),
    ),
    max_leaves=30,
)


@st.composite
def fragmented(draw: st.DrawFn) -> tuple[bytes, list[bytes]]:
    data = draw(json_texts_with_duplicates).encode()
    sizes = draw(st.lists(st.integers(1, 8), min_size=len(data), max_size=len(data)))
    parts, at = [], 0
    for size in sizes:
        if at >= len(data):
            break
        parts.append(data[at : at + size])
        at += size
    return data, parts


@settings(max_examples=400, deadline=None)
@given(fragmented())
def test_the_value_after_every_fragment_is_a_fresh_parse_of_the_prefix(
    case: tuple[bytes, list[bytes]],
) -> None:
    """Reads reuse what is finished, yet each one equals a one-shot parse of the bytes so
    far, and a value read earlier never changes afterwards."""
    _, parts = case
    p = PartialJson()
    prefix = b""
    seen: list[tuple[bytes, Any]] = []
    for part in parts:
        p.feed(part)
        prefix += part
        value = p.value()
        assert value == parse_partial(prefix), prefix
        seen.append((prefix, value))
    for prefix, value in seen:
        assert value == parse_partial(prefix), prefix


@settings(max_examples=200, deadline=None)
@given(fragmented())
def test_changing_a_returned_top_level_container_changes_no_later_read(
    case: tuple[bytes, list[bytes]],
) -> None:
    _, parts = case
    p = PartialJson()
    prefix = b""
    for part in parts:
        p.feed(part)
        prefix += part
        value = p.value()
        if isinstance(value, list):
            value.append("junk")
            value.reverse()
        elif isinstance(value, dict):
            value.clear()
            value["junk"] = 1
        assert p.value() == parse_partial(prefix)


def test_finished_subtrees_are_shared_between_reads_while_streaming() -> None:
    p = PartialJson()
    p.feed('{"rows": [{"id": 1, "tags": ["a"]}, {"id": 2')
    first = p.value()
    p.feed(', "tags": []}, {"id"')
    second = p.value()
    # The containers still open are new on every read ...
    assert second is not first and second["rows"] is not first["rows"]
    assert first == {"rows": [{"id": 1, "tags": ["a"]}, {"id": 2}]}
    # ... a finished subtree is the same object.
    assert second["rows"][0] is first["rows"][0]
    # Once the whole value is complete, each read shares nothing.
    p.feed(": 3}]}")
    done, again = p.value(), p.value()
    assert done == again == {"rows": [{"id": 1, "tags": ["a"]}, {"id": 2, "tags": []}, {"id": 3}]}
    assert done["rows"][0] is not again["rows"][0]
    assert done["rows"][0] is not first["rows"][0]


def test_duplicate_keys_replace_in_place_across_reads() -> None:
    p = PartialJson()
    reads = []
    for part in ['{"a": [1, 2', "], ", '"b": {"x": 1}, "a"', ": {", '"y": 2}, "b": 5, "c', '": 1']:
        p.feed(part)
        reads.append(p.value())
    assert reads == [
        {"a": [1, 2]},
        {"a": [1, 2]},
        {"a": [1, 2], "b": {"x": 1}},
        {"a": {}, "b": {"x": 1}},
        {"a": {"y": 2}, "b": 5},
        {"a": {"y": 2}, "b": 5, "c": 1},
    ]


@settings(max_examples=100, deadline=None)
@given(fragmented())
def test_partial_calls_after_every_fragment_are_fresh_parses_of_the_input(
    case: tuple[bytes, list[bytes]],
) -> None:
    data, parts = case
    asm = Assembler("openai-chat", live=False)
    head = {"index": 0, "id": "c", "type": "function", "function": {"name": "f", "arguments": ""}}
    asm.feed({"choices": [{"index": 0, "delta": {"tool_calls": [head]}}]})
    # Argument deltas are text: the same cut points, moved to character boundaries.
    whole = data.decode()
    text = ""
    for size in (len(part) for part in parts):
        piece = whole[len(text) : len(text) + size]
        if not piece:
            break
        text += piece
        delta = {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}
        asm.feed({"choices": [{"index": 0, "delta": delta}]})
        assert asm.partial_calls() == {(0, 0): parse_partial(text)}
