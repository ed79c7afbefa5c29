"""The seed contract: ToolUses accumulates ToolUseChunk fragments by index."""

from __future__ import annotations

import copy
import pickle
import threading

import pytest
from toolstitch import (
    IndexRangeError,
    LimitError,
    ToolstitchError,
    ToolUseBlock,
    ToolUseChunk,
    ToolUses,
)

I64_MIN = -(2**63)
I64_MAX = 2**63 - 1


def test_seed_example() -> None:
    calls = ToolUses()
    calls.add(ToolUseChunk(index=0, id="call-1", name="weather", input_json='{"city":'))
    calls.add(ToolUseChunk(index=0, input_json='"Boston"}'))
    assert calls.blocks() == [ToolUseBlock(id="call-1", name="weather", input='{"city":"Boston"}')]


def test_blocks_come_out_in_ascending_index_order_regardless_of_arrival() -> None:
    calls = ToolUses()
    for index in [5, -3, 2, 0, 5, -3]:
        calls.add_fragment(index, id=f"id{index}", input_json="x")
    assert [b.id for b in calls.blocks()] == ["id-3", "id0", "id2", "id5"]
    assert [b.input for b in calls.blocks()] == ["xx", "x", "x", "xx"]


@pytest.mark.parametrize("index", [I64_MIN, I64_MIN + 1, -1, 0, 1, 2**31, 2**32, I64_MAX])
def test_any_signed_64_bit_index_is_accepted(index: int) -> None:
    calls = ToolUses()
    calls.add(ToolUseChunk(index, id="a"))
    calls.add_fragment(index, input_json="{}")
    assert calls.blocks() == [ToolUseBlock(id="a", input="{}")]


def test_extreme_indexes_sort_numerically() -> None:
    calls = ToolUses()
    for index in [I64_MAX, 0, I64_MIN, -1, 1]:
        calls.add_fragment(index, id=str(index))
    assert [b.id for b in calls.blocks()] == [str(i) for i in [I64_MIN, -1, 0, 1, I64_MAX]]


@pytest.mark.parametrize("index", [2**63, -(2**63) - 1, 2**64, 10**30, -(10**30)])
def test_index_outside_i64_raises_a_clear_error_and_changes_nothing(index: int) -> None:
    calls = ToolUses()
    calls.add_fragment(0, id="kept", input_json="{")
    with pytest.raises(IndexRangeError, match="64-bit range") as info:
        calls.add_fragment(index, id="x", input_json="}")
    assert isinstance(info.value, ToolstitchError)
    assert isinstance(info.value, ValueError)
    with pytest.raises(IndexRangeError):
        ToolUseChunk(index)
    assert calls.blocks() == [ToolUseBlock(id="kept", input="{")]
    assert len(calls) == 1


@pytest.mark.parametrize("index", ["0", 1.0, None, True, b"0"])
def test_index_of_the_wrong_type_is_a_type_error(index: object) -> None:
    calls = ToolUses()
    with pytest.raises(TypeError, match="index"):
        calls.add_fragment(index)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ToolUseChunk(index)  # type: ignore[arg-type]
    assert calls.empty


def test_index_accepts_objects_with_dunder_index() -> None:
    class Idx:
        def __index__(self) -> int:
            return 7

    calls = ToolUses()
    calls.add_fragment(Idx(), id="seven")
    assert ToolUseChunk(Idx()).index == 7
    assert calls.blocks()[0].id == "seven"


def test_late_id_and_name_are_captured() -> None:
    calls = ToolUses()
    calls.add_fragment(0, input_json='{"a":')
    calls.add_fragment(0, input_json="1")
    calls.add_fragment(0, id="late-id")
    calls.add_fragment(0, name="late-name", input_json="}")
    assert calls.blocks() == [ToolUseBlock(id="late-id", name="late-name", input='{"a":1}')]


def test_last_non_empty_id_and_name_win_and_empty_never_clears() -> None:
    calls = ToolUses()
    calls.add_fragment(0, id="first", name="one")
    calls.add_fragment(0, id="second", name="two")
    calls.add_fragment(0, id="", name="")
    calls.add_fragment(0, id=None, name=None)
    calls.add(ToolUseChunk(0))
    assert calls.blocks() == [ToolUseBlock(id="second", name="two")]


def test_an_empty_chunk_still_creates_its_entry() -> None:
    calls = ToolUses()
    assert calls.empty
    assert len(calls) == 0
    assert calls.blocks() == []
    calls.add(ToolUseChunk(index=42))
    assert not calls.empty
    assert len(calls) == 1
    assert calls.blocks() == [ToolUseBlock()]


def test_gaps_get_no_filler() -> None:
    calls = ToolUses()
    calls.add_fragment(0)
    calls.add_fragment(1000)
    assert len(calls.blocks()) == 2


@pytest.mark.parametrize(
    "pieces",
    [
        ['{"city": ', '"Bos', 'ton"  }'],
        ['{"q":"\\u00e9\\n', '\\"x\\""}'],
        ['{"emoji":"🦀', "日本語", '"}'],
        ["\n\t{ ", '"a" :', " 1 }\r\n"],
        ["not json at all", "}}}", "{"],
        ["\x00", "\\", '"'],
    ],
)
def test_input_is_kept_byte_for_byte_and_never_judged(pieces: list[str]) -> None:
    calls = ToolUses()
    for piece in pieces:
        calls.add_fragment(3, input_json=piece)
    assert calls.blocks()[0].input == "".join(pieces)


def test_blocks_is_a_snapshot_that_never_aliases() -> None:
    calls = ToolUses()
    calls.add_fragment(0, id="a", input_json="{")
    calls.add_fragment(1, id="b")
    first = calls.blocks()
    second = calls.blocks()
    assert first == second
    assert first is not second
    first.append(ToolUseBlock(id="intruder"))
    first.clear()
    calls.add_fragment(0, input_json="}")
    assert second[0].input == "{"
    assert calls.blocks()[0].input == "{}"
    assert len(calls.blocks()) == 2


def test_blocks_are_frozen() -> None:
    calls = ToolUses()
    calls.add_fragment(0, id="a")
    block = calls.blocks()[0]
    with pytest.raises(AttributeError):
        block.id = "b"  # type: ignore[misc]
    assert calls.blocks()[0].id == "a"


def test_provider_state_replaced_only_when_state_and_format_are_both_non_empty() -> None:
    calls = ToolUses()
    calls.add(ToolUseChunk(0, provider_state='"sig-1"', provider_state_format=""))
    assert calls.blocks()[0].provider_state is None
    calls.add(ToolUseChunk(0, provider_state='"sig-1"', provider_state_format="gemini"))
    calls.add(ToolUseChunk(0, provider_state="", provider_state_format="other"))
    calls.add(ToolUseChunk(0, provider_state=None, provider_state_format="other"))
    calls.add(ToolUseChunk(0, input_json="{}"))
    block = calls.blocks()[0]
    assert (block.provider_state, block.provider_state_format) == ('"sig-1"', "gemini")
    calls.add(ToolUseChunk(0, provider_state='{"a":1}', provider_state_format="gemini-v2"))
    block = calls.blocks()[0]
    assert (block.provider_state, block.provider_state_format) == ('{"a":1}', "gemini-v2")


def test_add_none_or_a_wrong_type_is_a_type_error() -> None:
    calls = ToolUses()
    with pytest.raises(TypeError):
        calls.add(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        calls.add({"index": 0})  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        calls.add(ToolUseBlock())  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        calls.add_fragment(0, input_json=5)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ToolUseChunk(0, id=5)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        calls.extend(None)  # type: ignore[arg-type]
    assert calls.empty


def test_extend_adds_in_order_and_keeps_what_came_before_an_error() -> None:
    calls = ToolUses()
    calls.extend(ToolUseChunk(0, input_json=p) for p in ["[1", ",2", "]"])
    assert calls.blocks()[0].input == "[1,2]"
    with pytest.raises(TypeError):
        calls.extend([ToolUseChunk(1, id="ok"), None, ToolUseChunk(2)])  # type: ignore[list-item]
    assert [b.id for b in calls.blocks()] == ["", "ok"]


def test_extend_takes_fragment_tuples_as_the_batch_fast_path() -> None:
    calls = ToolUses()
    calls.extend(
        [
            (1, "b", "g", "[]"),
            (0, "a", "f", '{"x":'),
            (0, None, None, "1}"),
            ToolUseChunk(0, name="f2"),
        ]
    )
    assert calls.blocks() == [ToolUseBlock("a", "f2", '{"x":1}'), ToolUseBlock("b", "g", "[]")]
    with pytest.raises(TypeError, match="not 2 items"):
        calls.extend([(0, "a")])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="input_json"):
        calls.extend([(0, "a", "b", 5)])  # type: ignore[list-item]
    with pytest.raises(IndexRangeError):
        calls.extend([(2**63, "", "", "")])
    assert len(calls) == 2


def test_chunks_are_immutable_values() -> None:
    chunk = ToolUseChunk(1, "id", "name", "{}", '"s"', "fmt")
    assert chunk == ToolUseChunk(1, "id", "name", "{}", '"s"', "fmt")
    assert chunk != ToolUseChunk(1, "id", "name", "{}")
    assert hash(chunk) == hash(ToolUseChunk(1, "id", "name", "{}", '"s"', "fmt"))
    with pytest.raises(AttributeError):
        chunk.index = 2  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(chunk)) == chunk
    assert "ToolUseChunk(index=1" in repr(chunk)


def test_limit_on_calls_rejects_the_offending_fragment_and_keeps_the_rest() -> None:
    calls = ToolUses(max_calls=2)
    calls.add_fragment(0, id="a", input_json="{")
    calls.add_fragment(1, id="b")
    with pytest.raises(LimitError, match="max_calls") as info:
        calls.add_fragment(2, id="c")
    assert "index 2" in str(info.value)
    calls.add_fragment(0, input_json="}")
    assert [(b.id, b.input) for b in calls.blocks()] == [("a", "{}"), ("b", "")]


def test_limit_on_input_bytes_rejects_the_whole_fragment() -> None:
    calls = ToolUses(max_input_bytes=8)
    calls.add_fragment(0, input_json='{"a":')
    with pytest.raises(LimitError, match="max_input_bytes"):
        calls.add_fragment(0, input_json='"long"}')
    assert calls.blocks()[0].input == '{"a":'
    calls.add_fragment(0, input_json="1}")
    assert calls.blocks()[0].input == '{"a":1}'
    with pytest.raises(LimitError, match="max_input_bytes"):
        calls.add_fragment(1, input_json="x" * 9)
    assert len(calls) == 1


def test_limit_counts_bytes_not_characters() -> None:
    calls = ToolUses(max_input_bytes=4)
    with pytest.raises(LimitError):
        calls.add_fragment(0, input_json="ééé")
    calls.add_fragment(0, input_json="éé")
    assert calls.blocks()[0].input == "éé"


def test_limit_on_total_bytes() -> None:
    calls = ToolUses(max_total_bytes=10)
    calls.add_fragment(0, id="abc", input_json="1234")
    with pytest.raises(LimitError, match="max_total_bytes"):
        calls.add_fragment(1, id="abcd")
    assert len(calls) == 1
    assert (calls.max_calls, calls.max_input_bytes, calls.max_total_bytes)[2] == 10


def test_limit_errors_are_toolstitch_errors() -> None:
    calls = ToolUses(max_calls=0)
    with pytest.raises(ToolstitchError):
        calls.add_fragment(0)


def test_concurrent_add_from_8_threads_loses_nothing() -> None:
    calls = ToolUses()
    per_thread = 2000
    barrier = threading.Barrier(8)

    def work(t: int) -> None:
        barrier.wait()
        for i in range(per_thread):
            calls.add_fragment(t, input_json="x")
            calls.add(ToolUseChunk(100 + (i % 4), input_json="y"))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    blocks = calls.blocks()
    assert [len(b.input) for b in blocks[:8]] == [per_thread] * 8
    assert sum(len(b.input) for b in blocks[8:]) == 8 * per_thread
    assert len(calls) == 12


@pytest.mark.parametrize(
    "clone", [copy.copy, copy.deepcopy, lambda c: pickle.loads(pickle.dumps(c))]
)
def test_copy_deepcopy_and_pickle_give_independent_accumulators(clone: object) -> None:
    calls = ToolUses(max_calls=3, max_input_bytes=100, max_total_bytes=1000)
    calls.add(ToolUseChunk(-5, "id", "name", '{"a":', '"sig"', "gemini"))
    calls.add_fragment(9, id="other")
    twin = clone(calls)  # type: ignore[operator]
    assert isinstance(twin, ToolUses)
    assert twin.blocks() == calls.blocks()
    assert (twin.max_calls, twin.max_input_bytes, twin.max_total_bytes) == (3, 100, 1000)
    twin.add_fragment(-5, input_json="1}")
    calls.add_fragment(-5, input_json="2}")
    assert twin.blocks()[0].input == '{"a":1}'
    assert calls.blocks()[0].input == '{"a":2}'
    twin.add_fragment(10)
    with pytest.raises(LimitError):
        twin.add_fragment(11)
    assert len(calls) == 2


def test_pickled_accumulator_keeps_its_byte_budget() -> None:
    calls = ToolUses(max_total_bytes=10)
    calls.add_fragment(0, id="aaaa")
    calls.add_fragment(0, id="bbbb")
    twin = pickle.loads(pickle.dumps(calls))
    with pytest.raises(LimitError):
        twin.add_fragment(0, id="ccc")


def test_repr_names_the_count() -> None:
    calls = ToolUses()
    calls.add_fragment(0)
    assert "1" in repr(calls)
