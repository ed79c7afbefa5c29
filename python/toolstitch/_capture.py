"""The assembled messages of a captured response: the reading behind
``toolstitch replay --format otel``, which needs messages where ``toolstitch.replay``
gives call records.

The same rules as ``toolstitch.replay``: gzip is undone (by its magic bytes), a VCR
cassette (YAML whose first key is ``interactions`` or ``http_interactions``) gives one
stream per interaction with a provider's response body, named ``name#1``, ``name#2``,
...; anything else is one stream for the ``Assembler``.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import gzip
import re
import zlib
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from toolstitch.errors import ToolstitchError
from toolstitch.messages import AssembledMessage
from toolstitch.streams import Assembler

__all__ = ["capture_streams"]

_GZIP_MAGIC = b"\x1f\x8b"
_MAX_GZIP_LAYERS = 3
_CASSETTE = re.compile(
    rb"\A(?:\xef\xbb\xbf)?(?:[ \t]*(?:#[^\n]*)?\r?\n|---[ \t]*\r?\n)*(?:http_)?interactions:"
)
_STREAMED = ("text/event-stream", "application/vnd.amazon.eventstream", "json")

Stream = tuple[str, list[AssembledMessage], str | None]


def capture_streams(name: str, chunks: Iterable[bytes], provider: Any = "auto") -> Iterator[Stream]:
    """``(stream name, messages, error)`` for each stream of one capture; ``error`` is
    why the capture (or that stream) could not be read or replayed in full."""
    try:
        data = _gunzip(b"".join(chunks))
    except (OSError, EOFError, zlib.error) as e:
        yield name, [], f"cannot read: {_one_line(str(e))}"
        return
    if not _CASSETTE.match(data):
        yield _assembled(name, data, provider)
        return
    try:
        import yaml
    except ImportError:
        yield name, [], "this is a VCR cassette, and reading one needs PyYAML (toolstitch[cli])"
        return
    try:
        cassette = yaml.load(data, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as e:
        yield name, [], f"not a readable VCR cassette: {_one_line(str(e))}"
        return
    interactions = None
    if isinstance(cassette, Mapping):
        interactions = cassette.get("interactions", cassette.get("http_interactions"))
    if not isinstance(interactions, list):
        yield name, [], "not a VCR cassette: 'interactions' is missing or not a list"
        return
    for number, interaction in enumerate(interactions, 1):
        stream = f"{name}#{number}"
        try:
            body = _body(interaction)
        except (ValueError, OSError, EOFError, zlib.error) as e:
            yield stream, [], _one_line(str(e))
            continue
        if body is not None:
            yield _assembled(stream, body, provider)


def _assembled(name: str, data: bytes, provider: Any) -> Stream:
    asm = Assembler(provider, live=False)
    error = None
    try:
        asm.feed_bytes(data)
        asm.close()
    except ToolstitchError as e:
        error = _one_line(str(e))
        with contextlib.suppress(ToolstitchError):
            asm.close()
    return name, asm.messages(), error


def _body(interaction: Any) -> bytes | None:
    """The response body of one interaction when it may be a provider's response."""
    response = interaction.get("response") if isinstance(interaction, Mapping) else None
    if not isinstance(response, Mapping):
        raise ValueError("the interaction has no response")
    headers = response.get("headers")
    media = None
    if isinstance(headers, Mapping):
        for key, value in headers.items():
            if str(key).lower() == "content-type":
                value = value[0] if isinstance(value, list) and value else value
                media = str(value).split(";")[0].strip().lower()
    if media is not None and not any(kind in media for kind in _STREAMED):
        return None
    body = response.get("body")
    if isinstance(body, Mapping):
        if "base64_string" in body:
            try:
                body = base64.b64decode(str(body["base64_string"]))
            except (binascii.Error, ValueError) as e:
                raise ValueError(f"the response body is not valid base64: {e}") from None
        else:
            body = body.get("string")
    if not body:
        return None
    raw = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body
    if not isinstance(raw, (bytes, bytearray)):
        raise ValueError(f"the response body is a {type(body).__name__}, not text or bytes")
    raw = _gunzip(bytes(raw))
    if media == "application/json":
        probe = Assembler("auto", live=False)
        with contextlib.suppress(ToolstitchError):
            probe.feed(raw)
        if probe.dialect is None:
            return None  # another answer of the API (a model list, ...), not a response
    return raw


def _gunzip(data: bytes) -> bytes:
    for _ in range(_MAX_GZIP_LAYERS + 1):
        if not data.startswith(_GZIP_MAGIC):
            return data
        data = gzip.decompress(data)
    raise OSError(f"more than {_MAX_GZIP_LAYERS} layers of gzip; refusing to go deeper")


def _one_line(message: str) -> str:
    return " ".join(message.split())
