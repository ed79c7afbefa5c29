"""What the proxy answers for an upstream it could not read: the provider's own shape."""

from __future__ import annotations

import json
from typing import Any


def upstream_error(dialect: str | None, message: str) -> tuple[int, list[tuple[str, str]], bytes]:
    """A 502 in the provider's own shape for an upstream failure (not the guard's
    invalid-call error): the type each provider gives its own server errors, and no
    ``x-should-retry: false``, so the SDKs may retry (the upstream may be back)."""
    family = (dialect or "openai").split("-")[0]
    body: Any
    headers = [("content-type", "application/json")]
    if family == "anthropic":
        body = {"type": "error", "error": {"type": "api_error", "message": message}}
    elif family == "bedrock":
        headers.append(("x-amzn-ErrorType", "ServiceUnavailableException"))
        body = {"message": message}
    elif family == "gemini":
        body = {"error": {"code": 502, "message": message, "status": "UNAVAILABLE"}}
    elif family == "cohere":
        body = {"message": message}
    elif family == "ollama":
        body = {"error": message}
    else:
        body = {
            "error": {
                "message": message,
                "type": "upstream_error",
                "param": None,
                "code": "upstream_unavailable",
            }
        }
    return 502, headers, json.dumps(body).encode()
