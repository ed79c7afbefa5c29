"""Cases from the recordings bundled in ``tests/fixtures/`` (their provenance: PROVENANCE.md there).

    python conformance/tools/collect_local.py

Each recording is copied byte for byte (a VCR cassette's response body is its
stream's bytes); the expected calls are the ones the source project's own test
asserts, as ``tests/fixtures/PROVENANCE.md`` and ``long_tail/README.md`` record them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
FIXTURES = REPO / "tests" / "fixtures"
OUT = HERE.parent / "cases" / "real" / "local"

OPENAI = ("openai/openai-python", "Apache-2.0", "Copyright 2026 OpenAI")
PYDANTIC_COMMIT = "4fda38988f2939fa6ea9cdefcf120693e10ef491"
VERCEL = ("vercel/ai", "Apache-2.0", "Copyright 2023 Vercel, Inc.")
ANTHROPIC = ("anthropics/anthropic-sdk-python", "MIT", "Copyright 2023 Anthropic, PBC")
PYDANTIC = ("pydantic/pydantic-ai", "MIT", "Copyright (c) Pydantic Services Inc. 2024 to present")

RECORDINGS: list[dict[str, Any]] = [
    {
        "name": "openai-python.chat-parallel-two-tools",
        "file": "real/openai_chat-completions-parallel-two-tools.sse",
        "dialect": "openai-chat",
        "transport": "sse",
        "origin": OPENAI,
        "path": ".inline-snapshot/external/"
        "f82268f2fefd5cfbc7eeb59c297688be2f6ca0849a6e4f17851b517310841d9b.bin",
        "commit": "9feadd8274809fff9ff1e36a0c90d45566ed46e2",
        "oracle": "tests/lib/chat/test_completions_streaming.py"
        "::test_parse_multiple_pydantic_tools",
        "calls": [
            {
                "id": "call_JMW1whyEaYG438VE1OIflxA2",
                "name": "GetWeatherArgs",
                "arguments": {"city": "Edinburgh", "country": "GB", "units": "c"},
            },
            {
                "id": "call_DNYTawLBoN8fj3KN6qU9N1Ou",
                "name": "get_stock_price",
                "arguments": {"ticker": "AAPL", "exchange": "NASDAQ"},
            },
        ],
    },
    {
        "name": "anthropic-sdk-python.text-then-tool-use",
        "file": "real/anthropic_messages-text-then-tool-use.sse",
        "dialect": "anthropic",
        "transport": "sse",
        "origin": ANTHROPIC,
        "path": "tests/lib/streaming/fixtures/tool_use_response.txt",
        "commit": "0601a021ce80bba783c1e20b0f74d46846e62da8",
        "oracle": "tests/lib/streaming/test_messages.py",
        "calls": [
            {
                "id": "toolu_01NRLabsLyVHZPKxbKvkfSMn",
                "name": "get_weather",
                "arguments": {"location": "Paris"},
            },
        ],
    },
]

RECORDINGS.append(
    {
        "name": "vercel-ai.google.interactions.tool-call-step1.stream",
        "file": "../../python/toolstitch/samples/gemini-interactions.jsonl",
        "dialect": "gemini-interactions",
        "transport": "jsonl",
        "origin": VERCEL,
        "path": "packages/google/src/interactions/__fixtures__/tool-call-step1.chunks.txt",
        "commit": "ed857f50f112e23930b0c2dd8d532cc8bebbc911",
        "oracle": "packages/google/src/interactions/google-interactions-language-model.test.ts"
        " (inline snapshot at line 2826: tool-call 61nzpsv4 getWeather)",
        "calls": [
            {"id": "61nzpsv4", "name": "getWeather", "arguments": {"location": "San Francisco"}},
        ],
    }
)

CASSETTES: list[dict[str, Any]] = [
    {
        "name": "pydantic-ai.openai-responses-stream",
        "file": "real/openai_responses-function-call.vcr.yaml",
        "dialect": "openai-responses",
        "transport": "sse",
        "path": "tests/models/cassettes/test_openai_responses/test_openai_responses_stream.yaml",
        "oracle": "tests/models/test_openai_responses.py::test_openai_responses_stream",
        "calls": [
            [
                {
                    "id": "call_kL0PCQV7M2WMoVX8V8OtYSAL",
                    "name": "get_capital",
                    "arguments": {"country": "France"},
                }
            ],
            [],
        ],
    },
    {
        "name": "pydantic-ai.bedrock-converse-stream",
        "file": "real/bedrock_converse-stream-nova-tool-use.vcr.yaml",
        "dialect": "bedrock",
        "transport": "eventstream",
        "path": "tests/models/cassettes/test_bedrock/test_bedrock_model_iter_stream.yaml",
        "oracle": "tests/models/test_bedrock.py::test_bedrock_model_iter_stream",
        "calls": [
            [
                {
                    "id": "tooluse_lAG_zP8QRHmSYOwZzzaCqA",
                    "name": "get_temperature",
                    "arguments": {"city": "Paris"},
                }
            ],
            [],
        ],
    },
    {
        "name": "pydantic-ai.groq-compound-web-search-stream",
        "file": "long_tail/groq_compound-web-search-stream.vcr.yaml",
        "dialect": "openai-chat",
        "transport": "sse",
        "path": "tests/models/cassettes/test_groq/test_groq_model_web_search_tool_stream.yaml",
        "oracle": "tests/models/test_groq.py::test_groq_model_web_search_tool_stream",
        # The one call is a built-in the server ran (executed_tools): no client call.
        "calls": [[]],
    },
]


def write(name: str, data: bytes, meta: dict[str, Any]) -> None:
    stream = f"{name}.{meta['transport']}"
    (OUT / stream).write_bytes(data)
    meta = {"id": f"real/{name}", **meta, "stream": stream}
    (OUT / f"{name}.case.json").write_text(json.dumps(meta, indent=1) + "\n")


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.glob("*"):
        old.unlink()
    for rec in RECORDINGS:
        project, licence, copyright_line = rec["origin"]
        write(
            rec["name"],
            (FIXTURES / rec["file"]).read_bytes(),
            {
                "dialect": rec["dialect"],
                "category": "real",
                "transport": rec["transport"],
                "source": {
                    "project": project,
                    "path": rec["path"],
                    "commit": rec["commit"],
                    "licence": licence,
                    "copyright": copyright_line,
                    "oracle": rec["oracle"],
                },
                "expect": {"outcome": "calls", "calls": rec["calls"]},
            },
        )
    for cas in CASSETTES:
        project, licence, copyright_line = PYDANTIC
        cassette = yaml.safe_load((FIXTURES / cas["file"]).read_text())
        for n, (interaction, calls) in enumerate(
            zip(cassette["interactions"], cas["calls"], strict=True), start=1
        ):
            body = interaction["response"]["body"]["string"]
            data = body if isinstance(body, bytes) else body.encode()
            write(
                f"{cas['name']}.{n}",
                data,
                {
                    "dialect": cas["dialect"],
                    "category": "real",
                    "transport": cas["transport"],
                    "source": {
                        "project": project,
                        "path": f"{cas['path']} (interaction {n})",
                        # The cassette is byte-identical there (its last change may be older).
                        "commit": PYDANTIC_COMMIT,
                        "licence": licence,
                        "copyright": copyright_line,
                        "oracle": cas["oracle"],
                    },
                    "expect": {"outcome": "calls", "calls": calls},
                },
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
