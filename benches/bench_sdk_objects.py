"""feed(SDK object) against pydantic-ai's parts manager reading the same objects.

The streams of the realistic corpus (``benches/corpus.py``: the same responses, cut
the same way, in OpenAI chat, the Responses API and Anthropic), each event built into
the object its SDK yields while streaming (``construct_type`` into
``ChatCompletionChunk``, ``ResponseStreamEvent``, ``RawMessageStreamEvent``) before
anything is timed. Contenders, each first checked to rebuild the manifest's calls:

- ``feed(SDK object)``: ``Assembler(dialect, live=False)``, ``feed`` per object,
  ``close()``, the message's calls (the objects read in place);
- ``feed(obj.to_dict())``: the same with the SDK's own dump per object (what
  ``feed`` did with an object before it read them in place) and ``feed(model_dump)``;
- ``feed_bytes``: the same stream's SSE bytes in 64 KiB reads (the Rust core's pace);
- pydantic-ai: ``ModelResponsePartsManager`` fed from the same objects the way
  pydantic-ai's streamed responses feed it (``handle_text_delta`` and
  ``handle_tool_call_delta`` per event, the calls from ``get_parts()``). Only the
  manager and the attribute reads are timed, not pydantic-ai's async iteration around
  them, which favours pydantic-ai. When pydantic-ai is not installed its rows are
  left out with a note.

Two readings of the same objects: all of them made before the run (the whole corpus's
objects, cold in the cache by the time each is read), and each response's objects made
just before it is read (in the cache, as in an application that feeds each object as
its SDK yields it; only the reading is timed).

LiteLLM's ``ModelResponseStream`` (what ``litellm.completion(..., stream=True)``
yields, made from each OpenAI chat chunk as LiteLLM makes it, ``ModelResponseStream(**chunk)``)
is measured on the same chat streams when LiteLLM is installed: it is in the
``conformance`` dependency group, not in ``dev``, so install it into the virtual
environment first (``.venv/bin/python -m pip install 'litellm>=1.60'``); without it its
section is left out with a note. ``LITELLM_LOCAL_MODEL_COST_MAP`` is set so that importing
it reads no network.

Interleaved rounds, medians, ns per event and ratios; written to
``results/sdk_objects.md``. Run it from a release build (``make release``):
``python benches/bench_sdk_objects.py [--responses N] [--rounds N]``.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from toolstitch import Assembler

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "sdk_objects.md"
READ = 64 * 1024
Calls = list[tuple[str, str, str]]


def _corpus() -> Any:
    spec = importlib.util.spec_from_file_location("corpus", HERE / "corpus.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["corpus"] = module
    spec.loader.exec_module(module)
    return module


corpus = _corpus()


def sse_events(data: bytes) -> list[dict[str, Any]]:
    out = []
    for line in data.split(b"\n"):
        if line.startswith(b"data: ") and line != b"data: [DONE]":
            out.append(json.loads(line[6:]))
    return out


def sdk_objects(dialect: str, events: list[dict[str, Any]]) -> list[Any]:
    if dialect == "litellm":
        from litellm.types.utils import ModelResponseStream

        return [ModelResponseStream(**e) for e in events]
    if dialect == "anthropic":
        from anthropic._models import construct_type as anthropic_construct
        from anthropic.types import RawMessageStreamEvent

        return [anthropic_construct(type_=RawMessageStreamEvent, value=e) for e in events]
    from openai._models import construct_type
    from openai.types.chat import ChatCompletionChunk
    from openai.types.responses import ResponseStreamEvent

    kind = ChatCompletionChunk if dialect == "openai-chat" else ResponseStreamEvent
    return [construct_type(type_=kind, value=e) for e in events]


def stamp(dialect: str, events: list[dict[str, Any]], rng: random.Random) -> bytes:
    """Gives each event the stamps the API adds by default, in place, and gives the
    stream's bytes again: OpenAI's per-event nonce (`obfuscation`, random padding of
    varying length) on chat chunks and Responses events, and the Responses API's
    `sequence_number` on each of its events. Anthropic's events carry none."""
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    out = []
    for n, e in enumerate(events):
        if dialect == "openai-responses":
            e["sequence_number"] = n
        e["obfuscation"] = "".join(rng.choices(alphabet, k=rng.randint(2, 16)))
        data = json.dumps(e, ensure_ascii=False, separators=(",", ":")).encode()
        name = f"event: {e['type']}\n".encode() if dialect == "openai-responses" else b""
        out.append(name + b"data: " + data + b"\n\n")
    if dialect != "openai-responses":
        out.append(b"data: [DONE]\n\n")
    return b"".join(out)


class Workload:
    def __init__(self, dialect: str, count: int, stamped: bool = False) -> None:
        shapes = json.loads(corpus.SHAPES.read_text())
        cutter = corpus.Cutter(
            random.Random(2),
            corpus.Sizes(shapes["pooled"]["fragments"]),
            corpus.Sizes(shapes["pooled"]["texts"]),
        )
        make = {
            "openai-chat": corpus.openai_chat_stream,
            "litellm": corpus.openai_chat_stream,
            "openai-responses": corpus.responses_stream,
            "anthropic": corpus.anthropic_stream,
        }[dialect]
        self.sdk = dialect
        # LiteLLM's chunks are OpenAI chat chunks.
        self.dialect = "openai-chat" if dialect == "litellm" else dialect
        self.streams: list[bytes] = []
        self.expected: list[Calls] = []
        for n, (calls, text) in enumerate(corpus.responses(count, 1, False)):
            self.streams.append(make((calls, text), cutter, n))
            self.expected.append([tuple(c) for c in calls])
        self.reads = [[s[i : i + READ] for i in range(0, len(s), READ)] for s in self.streams]
        self.decoded = [sse_events(s) for s in self.streams]
        if stamped and self.dialect != "anthropic":
            rng = random.Random(3)
            self.streams = [stamp(self.dialect, d, rng) for d in self.decoded]
            self.reads = [[s[i : i + READ] for i in range(0, len(s), READ)] for s in self.streams]
        self.objects = [sdk_objects(self.sdk, d) for d in self.decoded]
        self.events = sum(len(o) for o in self.objects)


def result_of(asm: Assembler) -> Calls:
    return [(b.id, b.name, b.input) for b in asm.message().tool_uses]


def feed_each(dialect: str, prepare: Callable[[Any], Any] | None = None) -> Callable[[Any], Calls]:
    def run(objects: list[Any]) -> Calls:
        asm = Assembler(dialect, live=False)  # type: ignore[arg-type]
        f = asm.feed
        if prepare is None:
            for o in objects:
                f(o)
        else:
            for o in objects:
                f(prepare(o))
        asm.close()
        return result_of(asm)

    return run


def feed_bytes(dialect: str) -> Callable[[Any], Calls]:
    def run(reads: list[bytes]) -> Calls:
        asm = Assembler(dialect, live=False)  # type: ignore[arg-type]
        f = asm.feed_bytes
        for r in reads:
            f(r)
        asm.close()
        return result_of(asm)

    return run


def _params() -> Any:
    from pydantic_ai.models import ModelRequestParameters

    return ModelRequestParameters()


def _parts_calls(pm: Any) -> Calls:
    from pydantic_ai.messages import ToolCallPart

    return [
        (p.tool_call_id, p.tool_name, p.args if isinstance(p.args, str) else json.dumps(p.args))
        for p in pm.get_parts()
        if isinstance(p, ToolCallPart)
    ]


def pydantic_ai_chat(chunks: list[Any]) -> Calls:
    from pydantic_ai._parts_manager import ModelResponsePartsManager

    pm = ModelResponsePartsManager(_params())
    for chunk in chunks:
        for choice in chunk.choices:
            delta = choice.delta
            if delta.content:
                for _ in pm.handle_text_delta(vendor_part_id="content", content=delta.content):
                    pass
            for tc in delta.tool_calls or ():
                fn = tc.function
                pm.handle_tool_call_delta(
                    vendor_part_id=tc.index,
                    tool_name=fn and fn.name,
                    args=fn and fn.arguments,
                    tool_call_id=tc.id,
                )
    return _parts_calls(pm)


def pydantic_ai_responses(events: list[Any]) -> Calls:
    from pydantic_ai._parts_manager import ModelResponsePartsManager

    pm = ModelResponsePartsManager(_params())
    for e in events:
        t = e.type
        if t == "response.output_item.added" and e.item.type == "function_call":
            item = e.item
            pm.handle_tool_call_delta(
                vendor_part_id=item.id,
                tool_name=item.name,
                args=item.arguments,
                tool_call_id=item.call_id,
            )
        elif t == "response.function_call_arguments.delta":
            pm.handle_tool_call_delta(vendor_part_id=e.item_id, args=e.delta)
        elif t == "response.output_text.delta":
            for _ in pm.handle_text_delta(vendor_part_id=e.item_id, content=e.delta):
                pass
    return _parts_calls(pm)


def pydantic_ai_anthropic(events: list[Any]) -> Calls:
    from pydantic_ai._parts_manager import ModelResponsePartsManager

    pm = ModelResponsePartsManager(_params())
    for e in events:
        t = e.type
        if t == "content_block_start":
            block = e.content_block
            if block.type == "tool_use":
                pm.handle_tool_call_delta(
                    vendor_part_id=e.index, tool_name=block.name, args="", tool_call_id=block.id
                )
            elif block.type == "text" and block.text:
                for _ in pm.handle_text_delta(vendor_part_id=e.index, content=block.text):
                    pass
        elif t == "content_block_delta":
            d = e.delta
            if d.type == "input_json_delta":
                pm.handle_tool_call_delta(vendor_part_id=e.index, args=d.partial_json)
            elif d.type == "text_delta":
                for _ in pm.handle_text_delta(vendor_part_id=e.index, content=d.text):
                    pass
    return _parts_calls(pm)


SECTION = {"litellm": "litellm (ModelResponseStream, openai-chat)"}

PYDANTIC_AI = {
    "openai-chat": pydantic_ai_chat,
    "openai-responses": pydantic_ai_responses,
    "anthropic": pydantic_ai_anthropic,
}


def contenders(
    w: Workload, with_pydantic_ai: bool
) -> dict[str, tuple[Callable[[Any], Calls], list[Any]]]:
    cs: dict[str, tuple[Callable[[Any], Calls], list[Any]]] = {
        "feed_bytes": (feed_bytes(w.dialect), w.reads),
        "feed(SDK object)": (feed_each(w.dialect), w.objects),
        "feed(obj.to_dict())": (
            feed_each(w.dialect, lambda o: o.to_dict(mode="json")),
            w.objects,
        ),
        "feed(obj.model_dump())": (feed_each(w.dialect, lambda o: o.model_dump()), w.objects),
    }
    if with_pydantic_ai:
        cs["pydantic-ai parts manager"] = (PYDANTIC_AI[w.dialect], w.objects)
    return cs


def interleaved(w: Workload, cs: dict[str, Any], rounds: int) -> dict[str, float]:
    for name, (fn, inputs) in cs.items():
        got = [fn(i) for i in inputs]
        if name.startswith("pydantic-ai"):
            # pydantic-ai keeps arguments as sent; compare them as JSON values.
            got = [[(a, b, json.loads(c or "{}")) for a, b, c in r] for r in got]
            want = [[(a, b, json.loads(c or "{}")) for a, b, c in r] for r in w.expected]
        else:
            want = w.expected
        if got != want:
            raise SystemExit(f"{name} rebuilt different calls on {w.dialect}")
    times: dict[str, list[float]] = {name: [] for name in cs}
    for _ in range(rounds):
        for name, (fn, inputs) in cs.items():
            gc.collect()
            t0 = time.perf_counter()
            for i in inputs:
                fn(i)
            times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(ts) / w.events * 1e9 for name, ts in times.items()}


def fresh(w: Workload, cs: dict[str, Any], rounds: int) -> dict[str, float]:
    """Each response's objects made just before the contender reads them, as the SDK
    yields them while streaming (only the reading is timed): the objects are in the
    cache, as in an application that feeds each one as it comes."""
    objects_of = {id(o): n for n, o in enumerate(w.objects)}
    times: dict[str, list[float]] = {name: [] for name in cs}
    # Making the objects would leave the collector's count near its threshold, and
    # a full collection (of the whole corpus's objects) would fall in the timing.
    gc.disable()
    try:
        return _fresh(w, cs, rounds, objects_of, times)
    finally:
        gc.enable()


def _fresh(
    w: Workload,
    cs: dict[str, Any],
    rounds: int,
    objects_of: dict[int, int],
    times: dict[str, list[float]],
) -> dict[str, float]:
    for _ in range(rounds):
        for name, (fn, inputs) in cs.items():
            gc.collect()
            total = 0.0
            for i in inputs:
                n = objects_of.get(id(i))
                if n is not None:
                    i = sdk_objects(w.sdk, w.decoded[n])
                t0 = time.perf_counter()
                fn(i)
                total += time.perf_counter() - t0
            times[name].append(total)
    return {name: statistics.median(ts) / w.events * 1e9 for name, ts in times.items()}


def table(title: str, ns: dict[str, float]) -> list[str]:
    mine = ns["feed(SDK object)"]
    lines = [
        title,
        "",
        "| contender | ns/event | its time / feed(SDK object) |",
        "| --- | ---: | ---: |",
    ]
    for name, v in ns.items():
        lines.append(f"| {name} | {v:,.0f} | {v / mine:.2f}x |")
    return [*lines, ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--responses", type=int, default=120)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument(
        "--stamped",
        action="store_true",
        help="give every event the stamps the API adds by default (OpenAI's `obfuscation` "
        "nonce, the Responses API's `sequence_number`); written to sdk_objects_stamped.md",
    )
    parser.add_argument(
        "--only", action="append", help="a section to run (repeatable; implies --no-write)"
    )
    args = parser.parse_args()
    try:
        import pydantic_ai  # noqa: F401

        with_pai = True
    except ImportError:
        with_pai = False
    lines = [
        "# SDK objects: feed(obj) against pydantic-ai's parts manager",
        "",
        f"`python benches/bench_sdk_objects.py --responses {args.responses} --rounds "
        f"{args.rounds}{' --stamped' if args.stamped else ''}` (release build; "
        "interleaved rounds, medians; "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average "
        f"{os.getloadavg()[0]:.1f} at the start). ns per event; ratios are the other "
        "contender's time over `feed(SDK object)`'s.",
        "",
    ]
    if not with_pai:
        lines += ["pydantic-ai is not installed: its rows are left out.", ""]
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    sdks = ["openai-chat", "openai-responses", "anthropic", "litellm"]
    if importlib.util.find_spec("litellm") is None:
        sdks.remove("litellm")
        lines += ["LiteLLM is not installed: its section is left out.", ""]
    if args.only:
        sdks = [d for d in sdks if d in args.only]
        args.no_write = True
    for dialect in sdks:
        w = Workload(dialect, args.responses, args.stamped)
        cs = contenders(w, with_pai)
        ns = interleaved(w, cs, args.rounds)
        hot = fresh(w, cs, args.rounds)
        part = [
            f"## {SECTION.get(dialect, dialect)}: {len(w.streams)} responses, {w.events:,} events",
            "",
            *table("Objects made before the run (cold in the cache):", ns),
            *table(
                "Each response's objects made just before it is read (in the cache, "
                "as the SDK yields them):",
                hot,
            ),
        ]
        lines += part
        print("\n".join(part), flush=True)
    lines.append(f"Load average at the end: {os.getloadavg()[0]:.1f}.")
    if not args.no_write:
        out = RESULTS.with_name("sdk_objects_stamped.md") if args.stamped else RESULTS
        out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
