"""LiteLLM's chunks read in place: ``ModelResponseStream`` and what it nests are models of
the ``openai`` SDK's base, defined in ``litellm``, with their content among the extra
fields (``Delta``, ``StreamingChoices``) and a ``model_dump`` override that only defaults
``exclude_unset``. Every feed gives what the object's ``to_dict(mode="json")``, its
``model_dump`` and the bytes of the same stream give; a class whose dump differs takes the general path. LiteLLM's fragments name their
call's ``type`` (``"function"``) each time, which the chat dialect's common event takes:
they are served by the memo after the first.

LiteLLM is in the ``test`` dependency group (skipped where it is not installed)."""

from __future__ import annotations

import contextlib
import os
from typing import Any

import pytest
from hypothesis import given
from toolstitch import Assembler
from toolstitch.errors import ToolstitchError
from toolstitch.messages import _dumps_as_base

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
litellm_types = pytest.importorskip("litellm.types.utils")
openai_models = pytest.importorskip("openai._models")
from test_feed_path_properties import openai_streams  # noqa: E402
from test_sdk_in_place import (  # noqa: E402
    SETTINGS,
    assert_paths_agree,
    chat_stream,
    feed,
    outcome,
    python_calls,
)

pytestmark = pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")

ModelResponseStream = litellm_types.ModelResponseStream
BASE = openai_models.BaseModel


def litellm(event: dict[str, Any]) -> Any:
    """The chunk LiteLLM yields for an OpenAI chat chunk."""
    return ModelResponseStream(**event)


@SETTINGS
@given(openai_streams())
def test_generated_litellm_chunks_read_in_place(events: list[dict[str, Any]]) -> None:
    assert_paths_agree("openai-chat", [litellm(e) for e in events])


def test_litellm_classes_dump_as_the_openai_base() -> None:
    for cls in (
        ModelResponseStream,
        litellm_types.StreamingChoices,
        litellm_types.Delta,
        litellm_types.ChatCompletionDeltaToolCall,
        litellm_types.Function,
    ):
        assert _dumps_as_base(cls, BASE), cls


def delta(arguments: str) -> dict[str, Any]:
    return {"tool_calls": [{"index": 0, "function": {"arguments": arguments}}]}


def test_fragments_are_served_by_the_memo() -> None:
    """Every fragment after the first is the memo's (LiteLLM names the call's type,
    ``"function"``, each time), with the result of the objects' dumps and bytes; one
    whose type is another is read whole, with its dump's result or error."""
    first, fragment = chat_stream()[:2]
    events = [first] + [
        {**fragment, "choices": [{"index": 0, "delta": delta(p)}]} for p in ["1", "2", "3"]
    ]
    objects = [litellm(e) for e in events]
    assert all(o.choices[0].delta.tool_calls[0].type == "function" for o in objects[1:]), (
        "LiteLLM names the call's type in every fragment"
    )
    assert_paths_agree("openai-chat", objects)
    asm = Assembler("openai-chat", live=False)
    for o in objects:
        asm.feed(o)
    assert asm._memo_served[1] == 2
    for kind in ("custom", "tool"):
        odd = litellm(events[-1])
        odd.choices[0].delta.tool_calls[0].type = kind
        assert_paths_agree("openai-chat", [*objects, odd])
        asm = Assembler("openai-chat", live=False)
        for o in [*objects, odd]:
            with contextlib.suppress(ToolstitchError):
                asm.feed(o)
        assert asm._memo_served[1] == 2


def test_changed_extra_fields_read_as_their_dump() -> None:
    """LiteLLM keeps a delta's content among its extra fields: a fragment whose extra
    fields differ from the last one's (another role, one more field) reads as its dump."""
    events = [chat_stream()[0]] + [
        {**chat_stream()[1], "choices": [{"index": 0, "delta": delta(p)}]} for p in "abcd"
    ]
    objects = [litellm(e) for e in events]
    objects[3].choices[0].delta.__pydantic_extra__["role"] = "assistant"
    objects[4].choices[0].delta.__pydantic_extra__["x_new"] = [1, "two"]
    assert_paths_agree("openai-chat", objects)


class Redacting(ModelResponseStream):  # type: ignore[misc, valid-type]
    """A subclass whose override of ``model_dump`` changes the dump."""

    def model_dump(self, **kwargs: Any) -> Any:
        if "exclude_unset" not in kwargs and "exclude_none" not in kwargs:
            kwargs["exclude_unset"] = True
        plain = super().model_dump(**kwargs)
        plain.pop("model", None)
        return plain


class Defaulting(ModelResponseStream):  # type: ignore[misc, valid-type]
    """The same code as LiteLLM's override, with another default."""

    def model_dump(self, **kwargs: Any) -> Any:
        if "exclude_unset" not in kwargs and "exclude_none" not in kwargs:
            kwargs["exclude_unset"] = False
        return super().model_dump(**kwargs)


def test_an_override_that_is_not_litellms_takes_the_general_path() -> None:
    assert not _dumps_as_base(Redacting, BASE)
    assert not _dumps_as_base(Defaulting, BASE)
    objects = [Redacting(**e) for e in chat_stream()]
    with python_calls() as called:
        got = outcome("openai-chat", objects, feed)
    assert "to_dict" in called
    assert got == outcome("openai-chat", [o.to_dict(mode="json") for o in objects], feed)
