"""The tools a request declares, and the tool sets compiled from them: once per distinct
declaration, in a bounded cache shared by the proxy's requests."""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from toolstitch.errors import ToolstitchError
from toolstitch.tools import Toolset


def declared_tools(request: dict[str, Any]) -> Any:
    """The tools a request declares, in a form ``Toolset`` reads: ``tools`` (every
    dialect), Bedrock's ``toolConfig.tools``, and OpenAI chat's legacy ``functions``
    (each entry a chat function, so a call through ``function_call`` is checked like
    one through ``tools``). ``None`` when it declares none."""
    tools = request.get("tools")
    if tools is None and isinstance(request.get("toolConfig"), dict):
        tools = request["toolConfig"].get("tools")  # Bedrock
    functions = request.get("functions")
    if functions is None:
        return tools
    if not isinstance(functions, list):
        # Not a list of definitions: Toolset says so, and every call is refused.
        return functions
    legacy = [{"type": "function", "function": f} for f in functions]
    if tools is None:
        return legacy
    return [*tools, *legacy] if isinstance(tools, list) else tools


def refuse_every_call(why: str) -> Callable[[Any], None]:
    """The check of a request whose tools cannot be read: no call can be checked."""

    def check(_call: Any) -> None:
        raise ToolstitchError(f"the request's tools cannot be read ({why}): no call can be checked")

    return check


class ToolsetCache:
    """``Toolset``s by declaration (a value as ``json.loads`` gives it), least recently
    used first out.

    The key is the declaration itself, written out whole (``json.dumps``: every key in
    its order, every string escaped, every number as parsed): two declarations share an
    entry only when they are the same value, and a dictionary lookup compares keys in
    full, so a hash that collides never gives another declaration's tool set. At most
    ``max_entries`` entries and ``max_bytes`` characters of keys in all; a declaration
    longer than ``max_entry_bytes`` is compiled each time, never kept. A declaration
    that does not compile raises as ``Toolset`` does and is never kept.
    """

    __slots__ = (
        "_entries",
        "_size",
        "hits",
        "max_bytes",
        "max_entries",
        "max_entry_bytes",
        "misses",
    )

    def __init__(
        self, max_entries: int = 256, max_bytes: int = 8 << 20, max_entry_bytes: int = 1 << 20
    ) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.max_entry_bytes = min(max_entry_bytes, max_bytes)
        self._entries: OrderedDict[str, Toolset] = OrderedDict()
        self._size = 0
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def size(self) -> int:
        """Characters of keys held now."""
        return self._size

    def get(self, tools: Any) -> Toolset:
        """The tool set ``tools`` declares (``ToolDefinitionError`` when it does not
        compile)."""
        try:
            key = json.dumps(tools)
        except (TypeError, ValueError, RecursionError):
            # Not a value JSON writes out (the proxy's requests always are): not kept.
            return Toolset(tools)
        entries = self._entries
        toolset = entries.get(key)
        if toolset is not None:
            self.hits += 1
            entries.move_to_end(key)
            return toolset
        self.misses += 1
        toolset = Toolset(tools)  # raises: nothing is kept
        size = len(key)
        if size > self.max_entry_bytes or self.max_entries <= 0:
            return toolset
        entries[key] = toolset
        self._size += size
        while len(entries) > self.max_entries or self._size > self.max_bytes:
            old, _ = entries.popitem(last=False)
            self._size -= len(old)
        return toolset
