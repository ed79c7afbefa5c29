"""Imports an installed toolstitch wheel and assembles a small stream end to end.

Usage: python .ci/import_test.py [ENVIRONMENT]

Run from outside the checkout with the interpreter the wheel was installed into (by
.ci/dist-check and by each job of .github/workflows/release.yml). With ENVIRONMENT,
also checks that the package was imported from there, not from a source tree.
"""

from __future__ import annotations

import sys
from pathlib import Path

import toolstitch
from toolstitch import Assembler, Toolset, ToolUseChunk, ToolUses

installed = Path(toolstitch.__file__).resolve()
if len(sys.argv) > 1:
    assert Path(sys.argv[1]).resolve() in installed.parents, f"imported from {installed}"

calls = ToolUses()
calls.add(ToolUseChunk(index=0, id="call-1", name="weather", input_json='{"city":'))
calls.add(ToolUseChunk(index=0, input_json='"Boston"}'))
assert [(b.id, b.name, b.input) for b in calls.blocks()] == [
    ("call-1", "weather", '{"city":"Boston"}')
]

stream = (
    b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1",'
    b'"type":"function","function":{"name":"weather","arguments":"{\\"ci"}}]}}]}\n\n'
    b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,'
    b'"function":{"arguments":"ty\\": \\"Oslo\\"}"}}]}}]}\n\n'
    b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}\n\n'
    b"data: [DONE]\n\n"
)
asm = Assembler("openai-chat")
for i in range(0, len(stream), 7):
    asm.feed_bytes(stream[i : i + 7])
asm.close()
message = asm.message()
assert message.complete, message
tools = Toolset({"weather": {"type": "object", "properties": {"city": {"type": "string"}}}})
[call] = message.validated(tools)
assert (call.id, call.name, call.arguments) == ("c1", "weather", {"city": "Oslo"}), call
print(f"toolstitch {toolstitch.__version__} from {installed.parent}: ok")
