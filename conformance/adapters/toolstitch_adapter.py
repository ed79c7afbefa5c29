"""toolstitch: raw bytes into an ``Assembler`` of the case's dialect.

The calls handed on are those a toolstitch user executes: from a message that is
``complete`` with no problem, never the calls the provider ran itself
(``server_side``). A completed call with empty input is ``{}``, as ``Toolset``
reads it; a custom tool's input is free-form text.
"""

from __future__ import annotations

from suite import Call, Case, Outcome

NAME = "toolstitch"


def reassemble(case: Case) -> Outcome:
    import toolstitch

    # The request's own output-token limit, when the case states it (Q46).
    limit = case.request.get("max_output_tokens")
    assembler = toolstitch.Assembler(case.dialect, live=False, max_output_tokens=limit)
    assembler.feed_bytes(case.data)
    assembler.close()
    calls = []
    for message in assembler.messages():
        if not message.complete or message.problems:
            continue
        for block in message.tool_uses:
            if block.server_side or block.id in message.server_side_ids:
                continue
            freeform = block.kind == "custom_tool_call"
            calls.append(
                Call(
                    name=block.name,
                    arguments=block.input if (block.input or freeform) else "{}",
                    id=block.id or None,
                    freeform=freeform,
                )
            )
    return Outcome(calls=calls)
