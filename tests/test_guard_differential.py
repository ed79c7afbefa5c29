"""The guard's differential suite (issue 34): the guard must validate what the client reads.

Every crafted response of ``differential_cases`` is served by a real HTTP server on
127.0.0.1, goes through ``toolstitch proxy --enforce`` (a subprocess, as a user runs it),
and is read by the real SDKs' own helpers, each the way an application reads calls
from it:

- ``openai``: ``client.chat.completions.stream(...)`` (the calls of each
  ``tool_calls.function.arguments.done`` event, then ``get_final_completion()``'s, legacy
  ``function_call`` included), and ``client.responses.stream(...)`` (each
  ``response.output_item.done`` call and ``get_final_response()``'s output);
- ``anthropic``: ``client.messages.stream(...)`` (each ``content_block_stop``'s tool_use
  block, then ``get_final_message()``'s);
- ``boto3``: ``converse_stream``'s events read as AWS's own example reads them (one
  current block: a start opens it, deltas append to it, a stop completes it) and by
  ``contentBlockIndex``;
- ``google-genai``: ``client.models.generate_content_stream(...)``'s function calls;
- ``ollama``: ``Client.chat(..., stream=True)``'s ``message.tool_calls`` of every chunk
  (``differential_ollama``).

The property: **no SDK ends with a complete call the guard did not validate as such**.
Each call an SDK completes must name a declared tool, have arguments that satisfy its
schema (checked here with the ``jsonschema`` package, exact numbers, no NaN), and be one
of the calls the guard itself read (the proxy's record of the response). A valid case
(``expect="pass"``) must also pass the guard and reach the SDK whole.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic
import boto3
import httpx
import jsonschema
import ollama
import openai
import pytest
import test_proxy
from botocore.config import Config  # type: ignore[import-untyped]
from differential_cases import CASES, READERS, Case, tools_for
from differential_ollama import CLIENT_REFUSES
from google import genai
from google.genai import types as genai_types
from http_server import Recording, RecordingServer
from test_proxy import Running, proxy

EVENTSTREAM = "application/vnd.amazon.eventstream"
MESSAGES: list[Any] = [{"role": "user", "content": "go"}]


def _route(case: Case) -> str:
    if case.dialect == "chat":
        return f"/case/{case.name}/v1/chat/completions"
    if case.dialect == "responses":
        return f"/case/{case.name}/v1/responses"
    if case.dialect == "anthropic":
        return f"/case/{case.name}/v1/messages"
    if case.dialect == "bedrock":
        return f"/model/{case.name}/converse-stream"
    if case.dialect == "ollama":
        return f"/case/{case.name}/api/chat"
    return f"/v1beta/models/{case.name}:streamGenerateContent"


MEDIA = {"bedrock": EVENTSTREAM, "ollama": "application/x-ndjson"}
ROUTES = {_route(c): Recording(c.body, MEDIA.get(c.dialect, "text/event-stream")) for c in CASES}
PAIRS = [(case, reader) for case in CASES for reader in READERS[case.dialect]]


@pytest.fixture(scope="module", params=["python", "rust"])
def enforcing(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Running]:
    """The proxy under test, on each relay in turn."""
    test_proxy.RELAY["name"] = request.param
    with (
        RecordingServer(ROUTES) as upstream,
        proxy(upstream.url, tmp_path_factory.mktemp("differential"), "--enforce") as running,
    ):
        yield running
    test_proxy.RELAY["name"] = "python"


# ------------------------------------------------------------ the readers


@dataclass
class Reading:
    """What one SDK ended with: the calls it completed (name, arguments as it holds
    them: text or a parsed value) and the exception that ended it, if any."""

    calls: list[tuple[Any, Any]]
    error: BaseException | None = None


def _tools(case: Case) -> Any:
    return case.tools if case.tools is not None else tools_for(case.dialect, case.schemas)


def read_openai_chat(url: str, case: Case) -> Reading:
    client = openai.OpenAI(base_url=f"{url}/case/{case.name}/v1", api_key="k", max_retries=0)
    reading = Reading([])
    extra: dict[str, Any] = dict(case.request)
    tools = _tools(case)
    if tools:
        extra["tools"] = tools
    try:
        with client.chat.completions.stream(model="gpt-4o", messages=MESSAGES, **extra) as stream:
            for event in stream:
                if event.type == "tool_calls.function.arguments.done":
                    reading.calls.append((event.name, event.arguments))
            final = stream.get_final_completion()
        for choice in final.choices:
            for call in choice.message.tool_calls or []:
                function = getattr(call, "function", None)
                if function is not None:
                    reading.calls.append((function.name, function.arguments))
            legacy = choice.message.function_call
            if legacy is not None:
                reading.calls.append((legacy.name, legacy.arguments))
    except Exception as e:
        reading.error = e
    return reading


def read_openai_responses(url: str, case: Case) -> Reading:
    client = openai.OpenAI(base_url=f"{url}/case/{case.name}/v1", api_key="k", max_retries=0)
    reading = Reading([])

    def take(item: Any) -> None:
        if item.type == "function_call":
            reading.calls.append((item.name, item.arguments))
        elif item.type == "custom_tool_call":
            reading.calls.append((item.name, item.input))

    try:
        with client.responses.stream(model="gpt-4o", input="go", tools=_tools(case)) as stream:
            for event in stream:
                if event.type == "response.output_item.done":
                    take(event.item)
            final = stream.get_final_response()
        for item in final.output:
            take(item)
    except Exception as e:
        reading.error = e
    return reading


def read_anthropic(url: str, case: Case) -> Reading:
    client = anthropic.Anthropic(base_url=f"{url}/case/{case.name}", api_key="k", max_retries=0)
    reading = Reading([])
    try:
        with client.messages.stream(
            model="claude-sonnet-4", max_tokens=99, messages=MESSAGES, tools=_tools(case)
        ) as stream:
            for event in stream:
                # The SDK's own stop event carries the block it assembled (a stop it
                # could not match to a block comes raw, without one).
                block: Any = getattr(event, "content_block", None)
                if event.type == "content_block_stop" and getattr(block, "type", "") == "tool_use":
                    reading.calls.append((block.name, block.input))
            final = stream.get_final_message()
        for block in final.content:
            if block.type == "tool_use":
                reading.calls.append((block.name, block.input))
    except Exception as e:
        reading.error = e
    return reading


def _bedrock_client(url: str) -> Any:
    return boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=url,
        aws_access_key_id="AKIDEXAMPLE",
        aws_secret_access_key="wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        config=Config(retries={"max_attempts": 1, "mode": "standard"}),
    )


def read_boto3(url: str, case: Case, *, by_index: bool) -> Reading:
    """AWS's example: a contentBlockStart with a toolUse opens the current tool, each
    delta's input is appended to it, contentBlockStop completes it. By index: the same,
    each block kept under its contentBlockIndex."""
    reading = Reading([])
    current: dict[str, Any] | None = None
    blocks: dict[int, dict[str, Any]] = {}
    try:
        response = _bedrock_client(url).converse_stream(
            modelId=case.name,
            messages=[{"role": "user", "content": [{"text": "go"}]}],
            toolConfig=_tools(case),
        )
        for event in response["stream"]:
            if "contentBlockStart" in event:
                start = event["contentBlockStart"]
                use = start.get("start", {}).get("toolUse")
                if use is not None:
                    current = {"name": use["name"], "input": ""}
                    blocks[start.get("contentBlockIndex")] = current
            elif "contentBlockDelta" in event:
                delta = event["contentBlockDelta"]
                piece = delta.get("delta", {}).get("toolUse", {}).get("input")
                if piece is None:
                    continue
                target = blocks.get(delta.get("contentBlockIndex")) if by_index else current
                if target is not None:
                    target["input"] += piece
            elif "contentBlockStop" in event:
                index = event["contentBlockStop"].get("contentBlockIndex")
                done = blocks.pop(index, None) if by_index else current
                if done is not None:
                    reading.calls.append((done["name"], done["input"]))
                current = None
    except Exception as e:
        reading.error = e
    return reading


def read_genai(url: str, case: Case) -> Reading:
    client = genai.Client(
        api_key="k",
        http_options=genai_types.HttpOptions(
            base_url=url,
            api_version="v1beta",
            retry_options=genai_types.HttpRetryOptions(attempts=1),
        ),
    )
    declarations = [
        genai_types.FunctionDeclaration(
            name=d["name"], parameters_json_schema=d["parameters_json_schema"]
        )
        for d in _tools(case)
    ]
    config = genai_types.GenerateContentConfig(
        tools=[genai_types.Tool(function_declarations=declarations)],
        automatic_function_calling=genai_types.AutomaticFunctionCallingConfig(disable=True),
    )
    reading = Reading([])
    try:
        for chunk in client.models.generate_content_stream(
            model=case.name, contents="go", config=config
        ):
            for candidate in chunk.candidates or []:
                for part in (candidate.content.parts if candidate.content else None) or []:
                    if part.function_call is not None:
                        reading.calls.append((part.function_call.name, part.function_call.args))
    except Exception as e:
        reading.error = e
    return reading


def read_ollama(url: str, case: Case) -> Reading:
    # The client waits forever by default; a response left open is a failure, not a hang.
    client = ollama.Client(host=f"{url}/case/{case.name}", timeout=60)
    reading = Reading([])
    try:
        for chunk in client.chat(
            model="llama3.2", messages=MESSAGES, tools=_tools(case), stream=True
        ):
            for call in chunk.message.tool_calls or []:
                reading.calls.append((call.function.name, dict(call.function.arguments)))
    except Exception as e:
        reading.error = e
    return reading


def read(reader: str, url: str, case: Case) -> Reading:
    if reader == "openai":
        return (read_openai_chat if case.dialect == "chat" else read_openai_responses)(url, case)
    if reader == "anthropic":
        return read_anthropic(url, case)
    if reader.startswith("boto3"):
        return read_boto3(url, case, by_index=reader == "boto3-by-index")
    if reader == "ollama":
        return read_ollama(url, case)
    return read_genai(url, case)


# ------------------------------------------------------------ the property


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parsed(arguments: Any) -> Any:
    """The arguments as a value: text parsed as strict JSON (no NaN, no Infinity), a
    value (what anthropic and google-genai hand over) as it is."""
    if isinstance(arguments, str):
        return json.loads(arguments or "{}", parse_constant=_no_constants)
    return arguments


def _finite(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    return True


def why_not_valid(case: Case, name: Any, arguments: Any) -> str | None:
    """Why a call an SDK completed is not one the declared tools allow, or ``None``."""
    schema = case.schemas.get(name) if isinstance(name, str) else None
    if schema is None:
        return f"undeclared tool {name!r}"
    try:
        value = parsed(arguments)
    except ValueError as e:
        return f"arguments are not JSON: {e}"
    if not _finite(value):
        return "arguments hold a non-finite number"
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(value), key=str)
    return f"arguments fail the schema: {errors[0].message}" if errors else None


def guard_read(record: dict[str, Any], name: Any, arguments: Any) -> bool:
    """Whether the guard read this very call (same name, same arguments)."""
    try:
        value = parsed(arguments)
    except ValueError:
        return False
    for call in record["calls"]:
        if call["name"] != name or call["arguments"] is None:
            continue
        if isinstance(arguments, str) and call["arguments"] == arguments:
            return True
        try:
            if json.loads(call["arguments"] or "{}") == value:
                return True
        except ValueError:
            continue
    return False


# Records read so far, per running proxy (each relay writes its own file).
_seen_records: dict[Path, int] = {}


def next_record(running: Running, route: str) -> dict[str, Any]:
    """The record of the request just made (records are written in order; the suite
    makes one request at a time)."""
    seen = _seen_records.get(running.records_path, 0)
    records = running.records(seen + 1)
    assert len(records) > seen, "the proxy wrote no record"
    new = records[seen:]
    _seen_records[running.records_path] = len(records)
    mine = [r for r in new if r["path"] == route.split("?")[0]]
    assert mine, f"no record for {route}: {[r['path'] for r in new]}"
    return mine[-1]


def test_the_suite_covers_every_class_with_enough_responses() -> None:
    classes = {c.klass for c in CASES}
    for klass in ("1", "2", "3", "4", "5", "6", "7", "8", "9"):
        assert klass in classes, f"no case of class {klass}"
    for variation in (
        "dup keys",
        "escaped keys",
        "surrogates",
        "NaN",
        "CR/LF",
        "multi-line data",
        "comments",
        "n > 1",
        "interleaving",
        "BOM",
    ):
        assert variation in classes, variation
    print(f"\ndifferential suite: {len(CASES)} responses x SDK readings = {len(PAIRS)} readings")
    assert len(CASES) >= 100 and len(PAIRS) >= 100


@pytest.mark.parametrize(("case", "reader"), PAIRS, ids=[f"{c.name}:{r}" for c, r in PAIRS])
def test_no_sdk_ends_with_a_call_the_guard_did_not_validate(
    enforcing: Running, case: Case, reader: str
) -> None:
    reading = read(reader, enforcing.url, case)
    assert not isinstance(reading.error, httpx.TimeoutException), (
        f"{reader}: the proxy left the response open ({reading.error!r})"
    )
    record = next_record(enforcing, _route(case))
    outcome = f"guard {record['enforced']} ({record['blocked']}); SDK error {reading.error!r}"
    for name, arguments in reading.calls:
        why = why_not_valid(case, name, arguments)
        assert why is None, f"{reader} completed {name}({arguments!r}): {why}; {outcome}"
        assert guard_read(record, name, arguments), (
            f"{reader} completed {name}({arguments!r}), which the guard never read "
            f"(it read {[(c['name'], c['arguments']) for c in record['calls']]}); {outcome}"
        )
    if case.expect == "pass":
        assert record["enforced"] == "passed", f"a valid response was not passed: {outcome}"
        assert reading.error is None, outcome
        assert reading.calls, f"{reader} ended with no call: {outcome}"


def test_the_ollama_attacks_put_a_forbidden_call_in_the_clients_hands_unguarded() -> None:
    """Without the proxy, each Ollama attack case ends in the real client with a call the
    tools forbid (or the client refuses it itself): the cases test the guard, not the
    client."""
    cases = [c for c in CASES if c.dialect == "ollama" and c.expect != "pass"]
    with RecordingServer(ROUTES) as upstream:
        for case in cases:
            reading = read_ollama(upstream.url, case)
            forbidden = [c for c in reading.calls if why_not_valid(case, *c) is not None]
            if case.name in CLIENT_REFUSES:
                assert not reading.calls and reading.error is not None, case.name
            else:
                assert forbidden, f"{case.name}: {reading}"


def test_no_two_cases_are_the_same() -> None:
    """A case built wrong (a replace that matched nothing) would repeat another's body
    and tools."""
    seen: dict[tuple[bytes, str], str] = {}
    for case in CASES:
        assert case.body, case.name
        key = (case.body, json.dumps(_tools(case), sort_keys=True) + json.dumps(case.request))
        assert key not in seen, f"{case.name} repeats {seen[key]}"
        seen[key] = case.name
