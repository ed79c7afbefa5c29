"""One module per reassembler; ``ADAPTERS`` names them (README.md, "Adding a reassembler")."""

from __future__ import annotations

import importlib
from types import ModuleType

# NAME -> module under conformance/adapters/.
ADAPTERS = {
    "null": "null_adapter",
    "toolstitch": "toolstitch_adapter",
    "openai-python": "openai_python",
    "anthropic-sdk-python": "anthropic_python",
    "litellm": "litellm_adapter",
    "pydantic-ai": "pydantic_ai_adapter",
    "google-genai": "google_genai_adapter",
    "llamaindex": "llamaindex_adapter",
    "langchain": "langchain_adapter",
    "openllmetry": "openllmetry",
    "openinference": "openinference",
    "logfire": "logfire_adapter",
}


def load(name: str) -> ModuleType:
    return importlib.import_module(f"adapters.{ADAPTERS[name]}")
