"""What the whole-body miners share: a plain reading of a response body's client calls.

``mine_mirascope.py`` and ``mine_openai_python.py`` tie the calls a source's test
asserts to the calls a plain reading of its recorded bodies finds (``body_calls``):
a recording is kept only when the two are the same, one to one. A body the provider
ended at its length limit (``LENGTH_CUT``) expects refuse (Q15, as in
``mine_vercel_ai.py``).
"""

from __future__ import annotations

import json
import re
from typing import Any

import yaml

LENGTH_CUT = re.compile(
    r'"(?:finish_reason|finishReason|stop_reason|stopReason)"\s*:\s*"(?:length|max_tokens|MAX_TOKENS)"'
    r'|"status"\s*:\s*"incomplete"'
)
try:
    LOADER: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover
    LOADER = yaml.SafeLoader


def _args(raw: Any) -> Any:
    if raw is None or raw == "":
        return {}
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return None
    return raw


SERVER_BLOCKS = {"text", "thinking", "redacted_thinking", "server_tool_use", "mcp_tool_use"}
SERVER_ITEMS = {
    "message",
    "reasoning",
    "web_search_call",
    "file_search_call",
    "code_interpreter_call",
    "image_generation_call",
    "mcp_list_tools",
    "mcp_call",
}


def body_calls(body: Any) -> tuple[str, list[dict[str, Any]]] | None:
    """The body's dialect and the client calls a plain reading finds; None if unreadable."""
    if not isinstance(body, dict):
        return None
    calls: list[dict[str, Any]] = []
    if body.get("object") == "chat.completion" or "choices" in body:
        choices = body.get("choices") or []
        if len(choices) != 1:
            return None
        for tc in (choices[0].get("message") or {}).get("tool_calls") or []:
            fn = tc.get("function")
            if tc.get("type", "function") != "function" or not isinstance(fn, dict):
                return None
            calls.append({"id": tc.get("id"), "name": fn.get("name"), "raw": fn.get("arguments")})
        return "openai-chat", calls
    if body.get("object") == "response" and isinstance(body.get("output"), list):
        for item in body["output"]:
            kind = item.get("type")
            if kind == "function_call":
                calls.append(
                    _call(item.get("call_id"), item.get("name"), raw=item.get("arguments"))
                )
            elif kind not in SERVER_ITEMS:
                return None
        return "openai-responses", calls
    if body.get("type") == "message" and isinstance(body.get("content"), list):
        for block in body["content"]:
            kind = block.get("type", "")
            if kind == "tool_use":
                calls.append(_call(block.get("id"), block.get("name"), obj=block.get("input")))
            elif kind not in SERVER_BLOCKS and not kind.endswith("_tool_result"):
                return None
        return "anthropic", calls
    if isinstance(body.get("candidates"), list):
        if len(body["candidates"]) != 1:
            return None
        for part in (body["candidates"][0].get("content") or {}).get("parts") or []:
            fc = part.get("functionCall")
            if fc is not None:
                calls.append(_call(fc.get("id"), fc.get("name"), obj=fc.get("args", {})))
        return "gemini", calls
    output = body.get("output")
    message = output.get("message") if isinstance(output, dict) else None
    if isinstance(message, dict) and "stopReason" in body:
        for block in message.get("content") or []:
            tu = block.get("toolUse")
            if tu is not None:
                calls.append(_call(tu.get("toolUseId"), tu.get("name"), obj=tu.get("input")))
        return "bedrock", calls
    if isinstance(body.get("message"), dict) and "finish_reason" in body:
        for tc in body["message"].get("tool_calls") or []:
            fn = tc.get("function") or {}
            calls.append({"id": tc.get("id"), "name": fn.get("name"), "raw": fn.get("arguments")})
        return "cohere", calls
    return None


def _call(call_id: Any, name: Any, **arguments: Any) -> dict[str, Any]:
    """A call as read off the wire: ``raw`` arguments text or an ``obj`` already parsed."""
    return {"id": call_id, "name": name, **arguments}


def _wire_arguments(call: dict[str, Any]) -> Any:
    return call["obj"] if "obj" in call else _args(call.get("raw"))


def _key(name: Any, arguments: Any) -> str:
    return json.dumps([name, arguments], sort_keys=True)
