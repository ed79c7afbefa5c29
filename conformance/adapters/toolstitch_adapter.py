"""toolstitch: raw bytes into an ``Assembler`` of the case's dialect.

The calls handed on are those a toolstitch user executes: from a message that is
``complete`` with no problem, never the calls the provider ran itself
(``server_side``). A completed call with empty input is ``{}``, as ``Toolset``
reads it; a custom tool's input is free-form text. A message that is not complete,
or has problems, is toolstitch's refusal (``Outcome.refused``).
"""

from __future__ import annotations

from suite import Call, Case, Outcome

NAME = "toolstitch"
# xAI's server tools sent as custom_tool_call items are told apart (Q47).
CONVENTIONS = {"xai-server-tools"}


def reassemble(case: Case) -> Outcome:
    import toolstitch

    assembler = toolstitch.Assembler(case.dialect, live=False)
    assembler.feed_bytes(case.data)
    assembler.close()
    calls = []
    refused = []
    for message in assembler.messages():
        if not message.complete or message.problems:
            refused.append(
                "; ".join(str(p) for p in message.problems) or "the message is not complete"
            )
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
    return Outcome(calls=calls, refused="; ".join(refused) or None)
