"""google-genai: the real ``genai.Client`` against a local server (Gemini API).

``client.models.generate_content_stream()`` read chunk by chunk, the
``function_call`` parts of each chunk's first candidate collected as the SDK's
function-calling guide does (a part whose call has a name; its ``args``); a whole body
through ``generate_content()``. Gated by the candidate's ``finish_reason`` as the
API reference describes it: calls run only after ``STOP`` (not ``MAX_TOKENS``,
``SAFETY``, ``MALFORMED_FUNCTION_CALL``, … or none).
"""

from __future__ import annotations

import json
from typing import Any

from suite import Call, Case, Outcome

from adapters._server import StreamServer, as_sse

NAME = "google-genai"
DIALECTS = {"gemini"}
TRANSPORTS = {"sse", "jsonl", "json"}

_server: StreamServer | None = None
_client: Any = None


def start() -> None:
    global _server, _client
    from google import genai
    from google.genai import types

    _server = StreamServer()
    _client = genai.Client(
        api_key="conformance",
        http_options=types.HttpOptions(base_url=_server.url, retry_options=None),
    )


def stop() -> None:
    if _server is not None:
        _server.close()


def reassemble(case: Case) -> Outcome:
    assert _server is not None and _client is not None
    if case.transport == "json":
        _server.serve(case.data, "application/json")
        chunks = [_client.models.generate_content(model="gemini-2.5-flash", contents="hi")]
    else:
        _server.serve(as_sse(case))
        chunks = list(
            _client.models.generate_content_stream(model="gemini-2.5-flash", contents="hi")
        )
    calls: list[Call] = []
    finish = None
    for chunk in chunks:
        if not chunk.candidates:
            continue
        candidate = chunk.candidates[0]
        if candidate.finish_reason is not None:
            finish = candidate.finish_reason
        for part in (candidate.content.parts if candidate.content else None) or []:
            call = part.function_call
            if call is not None and call.name:
                calls.append(Call(call.name, json.dumps(call.args or {}), call.id))
    if finish is None or getattr(finish, "value", finish) != "STOP":
        return Outcome(refused=f"finish_reason {finish!r}")
    return Outcome(calls=calls)
