"""An Assembler pickles mid-stream: the copy goes on exactly as the original would,
in this process or another one (a long stream can move between workers)."""

from __future__ import annotations

import copy
import gzip
import pickle
import subprocess
import sys

import pytest
import toolstitch as ts
from hypothesis import given, settings
from hypothesis import strategies as st
from readers import REAL, cassette_bodies
from toolstitch import Assembler, StreamDecodeError


def bedrock_frames() -> bytes:
    # The cassette's first response body.
    return cassette_bodies(REAL / "bedrock_converse-stream-nova-tool-use.vcr.yaml")[0]


STREAMS = {
    "openai-chat": (REAL / "openai_chat-completions-parallel-two-tools.sse").read_bytes(),
    "anthropic": (REAL / "anthropic_messages-text-then-tool-use.sse").read_bytes(),
    "gemini": (REAL / "google_vertex-stream-function-call-args-4-calls.jsonl").read_bytes(),
    "bedrock": bedrock_frames(),
    "responses": (REAL / "vercel-ai" / "azure-tool-call.1.chunks.txt").read_bytes(),
    "anthropic-hosted": gzip.decompress(
        (REAL / "vercel-ai" / "anthropic-code-execution-20250825.1.chunks.txt.gz").read_bytes()
    ),
}


def finished(asm: Assembler, rest: bytes) -> list[ts.AssembledMessage]:
    asm.feed_bytes(rest)
    asm.close()
    return asm.messages()


@pytest.mark.parametrize("name", sorted(STREAMS))
@settings(max_examples=20, deadline=None)
@given(cut=st.floats(min_value=0, max_value=1))
def test_a_pickled_assembler_goes_on_as_the_original(name: str, cut: float) -> None:
    data = STREAMS[name]
    at = int(len(data) * cut)  # anywhere: mid-line, mid-UTF-8, mid-frame
    original = Assembler("auto")
    original.feed_bytes(data[:at])
    copied = pickle.loads(pickle.dumps(original))
    assert type(copied) is type(original)
    assert copied.dialect == original.dialect
    expected = finished(original, data[at:])
    assert finished(copied, data[at:]) == expected
    assert expected[0].complete


def test_copy_and_deepcopy_are_independent_assemblers() -> None:
    data = STREAMS["openai-chat"]
    a = Assembler("openai-chat", live=False, max_calls=7)
    a.feed_bytes(data[:900])
    b = copy.copy(a)
    c = copy.deepcopy(a)
    assert not b.live and not c.live
    a.feed_bytes(data[900:])
    a.close()
    assert not b.closed and b.message().tool_uses != a.message().tool_uses
    for other in (b, c):
        assert finished(other, data[900:]) == a.messages()


def test_limits_ordinals_and_a_closed_stream_survive() -> None:
    a = Assembler("openai-chat", max_input_bytes=8)
    a.feed({"choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "id": "c", "function": {"name": "f", "arguments": "{}"}}]}}]})  # fmt: skip
    b = pickle.loads(pickle.dumps(a))
    with pytest.raises(ts.LimitError, match="event #2"):
        b.feed({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "function": {"arguments": "123456789"}}]}}]})  # fmt: skip
    b.close()
    c = pickle.loads(pickle.dumps(b))
    assert c.closed and c.messages() == b.messages()
    with pytest.raises(ts.StreamClosedError):
        c.feed({"choices": []})


def test_a_broken_framing_state_stays_broken() -> None:
    a = Assembler("openai-chat")
    with pytest.raises(ts.FramingError):
        a.feed_bytes(b"data: \xff\n\n")
    b = pickle.loads(pickle.dumps(a))
    with pytest.raises(ts.FramingError):
        b.feed_bytes(b"data: {}\n\n")
    assert b.message().problems


def test_a_state_that_is_not_one_is_refused() -> None:
    a = Assembler()
    with pytest.raises(StreamDecodeError, match="not a saved Assembler state"):
        a.__setstate__(b"{}")
    with pytest.raises(StreamDecodeError, match="format 99"):
        state = a.__getstate__().replace(b'"version":1', b'"version":99', 1)
        a.__setstate__(state)
    with pytest.raises(TypeError):
        a.__setstate__("text")  # type: ignore[arg-type]


def test_the_stream_moves_to_another_process() -> None:
    data = STREAMS["anthropic"]
    a = Assembler("anthropic")
    a.feed_bytes(data[:1000])
    program = (
        "import pickle, sys\n"
        "asm = pickle.loads(sys.stdin.buffer.read())\n"
        f"asm.feed_bytes({data[1000:]!r})\n"
        "asm.close()\n"
        "m = asm.message()\n"
        "print(m.complete, [(b.id, b.input) for b in m.tool_uses])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program],
        input=pickle.dumps(a),
        capture_output=True,
        check=True,
        timeout=60,
    )
    assert done.stdout.decode().strip() == (
        "True [('toolu_01NRLabsLyVHZPKxbKvkfSMn', '{\"location\": \"Paris\"}')]"
    )
