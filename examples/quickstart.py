"""The seed example: two fragments of one streamed tool call become one block.

Run with `.venv/bin/python examples/quickstart.py` (after `make run` or `make develop`).
"""

from __future__ import annotations

from toolstitch import ToolUseChunk, ToolUses, marshal_block, unmarshal_block

calls = ToolUses()
calls.add(ToolUseChunk(index=0, id="call-1", name="weather", input_json='{"city":'))
calls.add(ToolUseChunk(index=0, input_json='"Boston"}'))
# A second call whose fragments interleave with the first, at a sparse index.
calls.add_fragment(7, id="call-2", name="time", input_json='{"tz":')
calls.add_fragment(7, input_json='"America/New_York"}')

for call in calls.blocks():
    # Parse and validate call.input only after the stream is complete.
    print(call.id, call.name, call.input)

wire = marshal_block(calls.blocks()[0])
print(wire)
assert unmarshal_block(wire) == calls.blocks()[0]
