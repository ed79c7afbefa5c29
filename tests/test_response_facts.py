"""What a response's head says of it (its id and model, for the proxy's and ``watch``'s
records): ``_response_facts`` reads an SSE head's first event alone first, and the whole
head (up to ``_RESPONSE_HEAD_BYTES``) when that event does not say both."""

from __future__ import annotations

import json

from toolstitch._toolstitch import _RESPONSE_HEAD_BYTES, _response_facts


def sse(*events: dict[str, object] | str) -> bytes:
    out = b""
    for event in events:
        data = event if isinstance(event, str) else json.dumps(event)
        out += b"data: " + data.encode() + b"\n\n"
    return out


def test_the_first_event_says_both() -> None:
    head = sse({"id": "chatcmpl-1", "model": "m1"}, {"id": "chatcmpl-2", "model": "m2"})
    assert _response_facts("openai-chat", head) == ("chatcmpl-1", "m1")
    # Cut anywhere after the first event: the same.
    for end in range(head.index(b"\n\n") + 2, len(head) + 1):
        assert _response_facts("openai-chat", head[:end]) == ("chatcmpl-1", "m1")


def test_a_fact_the_first_event_lacks_comes_from_a_later_one() -> None:
    head = sse({"id": "chatcmpl-1"}, {"id": "chatcmpl-2", "model": "m2"})
    assert _response_facts("openai-chat", head) == ("chatcmpl-1", "m2")
    head = sse({"model": ""}, "[DONE]", {"model": "m3", "id": "chatcmpl-3"})
    assert _response_facts("openai-chat", head) == ("chatcmpl-3", "m3")
    # A comment, then the event that says both.
    head = b": keep-alive\n\n" + sse({"id": "chatcmpl-4", "model": "m4"})
    assert _response_facts("openai-chat", head) == ("chatcmpl-4", "m4")


def test_a_first_event_past_the_read_head_says_nothing() -> None:
    # The first event's blank line lies past the bytes read: nothing of it is read
    # (its data is cut, so not JSON), even though the bytes passed hold it whole.
    padding = "x" * _RESPONSE_HEAD_BYTES
    head = sse({"id": "chatcmpl-5", "model": "m5", "pad": padding})
    assert _response_facts("openai-chat", head) == (None, None)
    assert _response_facts("openai-chat", head[:_RESPONSE_HEAD_BYTES]) == (None, None)


def test_heads_that_are_not_sse_are_read_whole() -> None:
    line = json.dumps({"model": "llama3", "message": {"role": "assistant", "content": "hi"}})
    head = (line + "\n\n" + line + "\n").encode()
    assert _response_facts("ollama", head) == _response_facts("ollama", head + b"\n")
    body = json.dumps({"id": "chatcmpl-6", "model": "m6", "choices": []}).encode()
    assert _response_facts("openai-chat", body) == ("chatcmpl-6", "m6")
    # An event cut before its blank line, the head's only one: read as it is.
    assert _response_facts("openai-chat", b'data: {"id":"a","model":"b"}') == ("a", "b")
    assert _response_facts("openai-chat", b'data: {"id":"a","model":"b"}\r\n\r\n') == ("a", "b")
