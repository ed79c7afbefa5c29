"""``render_*`` give the SDKs' own request types: rendered for ``"openai-chat"`` a turn is
a list of ``openai``'s ``ChatCompletionMessageParam``, for ``"anthropic"`` a list of
``anthropic``'s ``MessageParam`` (TypedDicts), which their clients' ``messages=`` take
with no cast. Checked by mypy --strict against the real SDKs' types, and at run time by
sending the rendered turn through the real clients to a local server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import anthropic
import openai
import pytest
from agent_server import ANTHROPIC_TOOL_TURN, OPENAI_TOOL_TURN, routes
from http_server import RecordingServer
from toolstitch import ToolResultBlock, assemble, render_turn

ROOT = Path(__file__).resolve().parent.parent

TYPED = """
import anthropic
import openai
from anthropic.types import MessageParam
from openai.types.chat import ChatCompletionMessageParam
from toolstitch import AssembledMessage, ToolResultBlock, render_assistant, render_results, render_turn


def chat(client: openai.OpenAI, message: AssembledMessage, results: list[ToolResultBlock]) -> None:
    history: list[ChatCompletionMessageParam] = [{"role": "user", "content": "weather?"}]
    history += render_turn("openai-chat", message, results)
    client.chat.completions.create(model="gpt-4o", messages=history)
    turn = [*render_assistant("openai-chat", message), *render_results("openai-chat", results)]
    client.chat.completions.create(model="gpt-4o", messages=turn)


def claude(client: anthropic.Anthropic, message: AssembledMessage, results: list[ToolResultBlock]) -> None:
    history: list[MessageParam] = [{"role": "user", "content": "weather?"}]
    history += render_turn("anthropic", message, results)
    client.messages.create(model="claude", max_tokens=100, messages=history)
    turn = [*render_assistant("anthropic", message), *render_results("anthropic", results)]
    client.messages.create(model="claude", max_tokens=100, messages=turn)
"""

# The twin: a turn rendered for another provider is refused where the SDK's type is asked.
MISMATCHED = """
from anthropic.types import MessageParam
from openai.types.chat import ChatCompletionMessageParam
from toolstitch import AssembledMessage, ToolResultBlock, render_turn


def wrong(message: AssembledMessage, results: list[ToolResultBlock]) -> None:
    chat: list[ChatCompletionMessageParam] = []
    chat += render_turn("anthropic", message, results)
    claude: list[MessageParam] = []
    claude += render_turn("cohere", message, results)
"""


def mypy(tmp_path: Path, source: str) -> tuple[int, list[str]]:
    from mypy import api

    (tmp_path / "typed_use.py").write_text(source, encoding="utf-8")
    out, _err, status = api.run(
        [
            "--config-file",
            str(ROOT / "pyproject.toml"),
            # The cache `make lint` fills (the same configuration): the SDKs' types,
            # read cold, cost about twenty seconds.
            "--cache-dir",
            str(ROOT / ".mypy_cache"),
            str(tmp_path / "typed_use.py"),
        ]
    )
    return status, [line for line in out.splitlines() if ": error:" in line]


def test_rendered_turns_are_the_sdks_param_types(tmp_path: Path) -> None:
    status, errors = mypy(tmp_path, TYPED)
    assert status == 0 and errors == [], "\n".join(errors)


def test_twin_a_turn_for_another_provider_is_a_type_error(tmp_path: Path) -> None:
    status, errors = mypy(tmp_path, MISMATCHED)
    assert status == 1
    assert [e.split(":")[1] for e in errors] == ["9", "11"], "\n".join(errors)


@pytest.fixture(scope="module")
def server() -> Iterator[RecordingServer]:
    with RecordingServer(routes()) as s:
        yield s


def test_the_clients_send_the_rendered_turn_as_rendered(server: RecordingServer) -> None:
    (message,) = assemble(OPENAI_TOOL_TURN)
    results = [ToolResultBlock.text(c.id, "ok") for c in message.tool_uses]
    turn = render_turn("openai-chat", message, results)
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="k", max_retries=0)
    client.chat.completions.create(model="gpt-4o", messages=turn)
    assert server.requests[-1].json["messages"] == json.loads(json.dumps(turn))

    (message,) = assemble(ANTHROPIC_TOOL_TURN)
    results = [ToolResultBlock.text(c.id, "ok") for c in message.tool_uses]
    claude_turn = render_turn("anthropic", message, results)
    claude = anthropic.Anthropic(base_url=server.url, api_key="k", max_retries=0)
    claude.messages.create(model="claude", max_tokens=100, messages=claude_turn)
    assert server.requests[-1].json["messages"] == json.loads(json.dumps(claude_turn))
