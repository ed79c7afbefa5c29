"""The benchmark corpus (``benches/corpus.py``) reads as the streams it stands for: every
file, in every dialect and form, gives complete messages with exactly the calls its
manifest lists and no event skipped as unknown. A corpus whose events a dialect does not
read would measure the cost of skipping them, not of reading them."""

from __future__ import annotations

import gzip
import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest
from toolstitch import Assembler

CORPUS = Path(__file__).resolve().parent.parent / "benches" / "corpus.py"


def corpus_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_corpus", CORPUS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("plain", [False, True])
def test_every_file_of_the_corpus_reads_whole(tmp_path: Path, plain: bool) -> None:
    manifest = corpus_module().write(tmp_path, 10, 7, plain)
    dialects = {f["dialect"] for f in manifest["files"]}
    assert len(dialects) == 9
    assert {f["form"] for f in manifest["files"]} == {"stream", "body"}
    for f in manifest["files"]:
        data = (tmp_path / f["path"]).read_bytes()
        if f["gzip"]:
            data = gzip.decompress(data)
        asm = Assembler(f["dialect"], live=False)
        asm.feed_bytes(data)
        asm.close()
        messages = asm.messages()
        where = f["path"]
        assert messages and all(m.complete for m in messages), where
        assert [m.skipped for m in messages] == [()] * len(messages), where
        calls = [[t.id, t.name, t.input] for m in messages for t in m.tool_uses]
        assert calls == f["calls"], where
    assert json.loads((tmp_path / ".manifest.json").read_text())["files"] == manifest["files"]
