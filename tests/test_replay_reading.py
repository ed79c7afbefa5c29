"""How a capture is read: a local file up to ``_WHOLE`` bytes whole, each gzip layer
inflated in one call, anything else streamed ``_CHUNK`` bytes at a time; the records are
the same either way.

The oracle is ``replay_file`` over a file object, which always streams (the reader that
was the only one before): every capture here gives, through ``replay_path`` and
``replay_bytes``, exactly the records it gives.
"""

from __future__ import annotations

import gzip
import io
import os
import tracemalloc
import zlib
from pathlib import Path
from typing import Any

import pytest
from toolstitch import replay_bytes, replay_path
from toolstitch._sources import _MAX_GZIP_LAYERS, Source
from toolstitch.replay import _CHUNK, _WHOLE, replay_file, replay_source

REAL = Path(__file__).resolve().parent / "fixtures" / "real"
ANTHROPIC = (REAL / "anthropic_messages-text-then-tool-use.sse").read_bytes()
OPENAI_CHAT = (REAL / "openai_chat-completions-parallel-two-tools.sse").read_bytes()
CASSETTE = (REAL / "bedrock_converse-stream-nova-tool-use.vcr.yaml").read_bytes()
OPENAI_IDS = ["call_JMW1whyEaYG438VE1OIflxA2", "call_DNYTawLBoN8fj3KN6qU9N1Ou"]


def streamed(data: bytes, name: str, *, text: bool = False) -> list[Any]:
    """The records the streaming reader gives for ``data``."""
    return list(replay_file(io.BytesIO(data), name=name, text=text))


def same_every_way(tmp_path: Path, data: bytes, filename: str = "capture.sse") -> list[Any]:
    """The records of ``data`` as a file, checked to be the streaming reader's through
    ``replay_path`` and ``replay_bytes`` (with and without ``text``)."""
    path = tmp_path / filename
    path.write_bytes(data)
    for text in (False, True):
        expected = streamed(data, str(path), text=text)
        assert replay_path(path, text=text) == expected
        assert replay_bytes(data, name=str(path), text=text) == expected
    return list(replay_path(path))


def ids(records: list[Any]) -> list[Any]:
    return [r["id"] for r in records]


def gz(data: bytes, layers: int = 1) -> bytes:
    for _ in range(layers):
        data = gzip.compress(data, mtime=0, compresslevel=1)
    return data


def broken_early(size: int) -> bytes:
    """An OpenAI chat stream of exactly ``size`` bytes with a bad event among its first
    ones and good ones after, up to its end: which events are applied after the bad
    one depends on the pieces the bytes are fed in (a bad event spoils the rest of its
    own feed only), so the pieces must be the streaming reader's."""
    events = OPENAI_CHAT.split(b"\n\n")
    head = b"\n\n".join(events[:5]) + b"\n\nevent: x\ndata: {bad json\n\n"
    tail = b"\n\n".join(events[5:])
    filler = events[2] + b"\n\n"
    count, left = divmod(size - len(head) - len(tail), len(filler))
    if left < 2:
        count, left = count - 1, left + len(filler)
    body = head + filler * count + b":" + b"x" * (left - 2) + b"\n"  # a comment line
    data = body + tail
    assert len(data) == size
    return data


# ------------------------------------------------------------------ gzip


def test_gzip_with_trailing_garbage_is_the_streaming_readers_error(tmp_path: Path) -> None:
    [record] = same_every_way(tmp_path, gz(OPENAI_CHAT) + b"garbage!")
    assert record["error"] == (
        "not valid gzip: the gzip data ends, and the bytes after it are neither another "
        "gzip member nor zero padding (they start b'ga')"
    )
    # Zeros after the member are padding gzip allows: the calls are all there.
    assert ids(same_every_way(tmp_path, gz(OPENAI_CHAT) + b"\0" * 16)) == OPENAI_IDS
    # The start of another member, cut: cut short.
    [record] = same_every_way(tmp_path, gz(OPENAI_CHAT) + b"\x1f\x8b")
    assert record["error"] is not None and record["error"].startswith("gzip data cut short")


def test_concatenated_gzip_members_are_one_content(tmp_path: Path) -> None:
    two = gz(OPENAI_CHAT[:5000]) + gz(OPENAI_CHAT[5000:])
    assert ids(same_every_way(tmp_path, two)) == OPENAI_IDS
    many = b"".join(gz(OPENAI_CHAT[at : at + 700]) for at in range(0, len(OPENAI_CHAT), 700))
    records = same_every_way(tmp_path, many)
    assert ids(records) == OPENAI_IDS and all(r["complete"] for r in records)


def test_nested_gzip_up_to_the_limit_and_no_deeper(tmp_path: Path) -> None:
    for layers in range(1, _MAX_GZIP_LAYERS + 1):
        assert ids(same_every_way(tmp_path, gz(OPENAI_CHAT, layers))) == OPENAI_IDS
    [record] = same_every_way(tmp_path, gz(OPENAI_CHAT, _MAX_GZIP_LAYERS + 1))
    assert record["error"] == "cannot read: more than 3 layers of gzip; refusing to go deeper"
    # A cassette inside gzip inside gzip.
    assert ids(same_every_way(tmp_path, gz(CASSETTE, 2), "cassette.yaml.gz")) == [
        "tooluse_lAG_zP8QRHmSYOwZzzaCqA",
        None,
    ]


def test_gzip_that_is_broken_or_cut_is_the_streaming_readers_error(tmp_path: Path) -> None:
    whole = gz(ANTHROPIC)
    crc = bytearray(whole)
    crc[-6] ^= 0xFF
    cases = {
        "cut": whole[:200],
        "no trailer": whole[:-8],
        "bad crc": bytes(crc),
        "bad method": b"\x1f\x8b" + b"x" * 40,
        "magic only": b"\x1f\x8b",
    }
    for why, data in cases.items():
        [record] = same_every_way(tmp_path, data)
        assert record["error"] is not None, why
        assert record["error"].startswith(("not valid gzip", "gzip data cut short")), why


def test_gzip_header_fields_zlib_and_gzipfile_read_alike(tmp_path: Path) -> None:
    """A header CRC (FHCRC), checked by zlib but not by ``GzipFile``, and a file name."""
    body = gz(ANTHROPIC)[10:]
    header = bytearray(gz(ANTHROPIC)[:10])
    header[3] |= 0x02
    right = (zlib.crc32(bytes(header)) & 0xFFFF).to_bytes(2, "little")
    for data in (bytes(header) + right + body, bytes(header) + b"\0\0" + body):
        [record] = same_every_way(tmp_path, data)
        assert record["complete"] and record["id"] == "toolu_01NRLabsLyVHZPKxbKvkfSMn"
    named = bytearray(gz(ANTHROPIC)[:10])
    named[3] |= 0x08
    assert same_every_way(tmp_path, bytes(named) + b"capture.sse\0" + body)[0]["complete"]


def test_a_gzip_bomb_stays_within_bounded_memory(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.sse.gz"
    bomb.write_bytes(gzip.compress(b"\0" * (8 * _WHOLE), compresslevel=9, mtime=0))
    tracemalloc.start()
    try:
        [record] = replay_path(bomb)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert record["error"] is not None and "cannot tell the stream's transport" in record["error"]
    assert peak < 3 * _WHOLE


# ------------------------------------------------------------------ sizes


@pytest.mark.parametrize("size", [_CHUNK - 1, _CHUNK, _CHUNK + 1, 3 * _CHUNK + 7])
def test_streams_about_one_piece_are_fed_in_the_streaming_readers_pieces(
    tmp_path: Path, size: int
) -> None:
    data = broken_early(size)
    records = same_every_way(tmp_path, data)
    assert records[0]["error"] is not None and "not valid JSON" in records[0]["error"]
    same_every_way(tmp_path, gz(data), "capture.sse.gz")


@pytest.mark.parametrize("size", [_WHOLE - 1, _WHOLE, _WHOLE + 1])
def test_files_about_the_size_read_whole(tmp_path: Path, size: int) -> None:
    data = broken_early(size)
    same_every_way(tmp_path, data)
    # The same content gzipped: inflated in one call up to the size, streamed above it.
    same_every_way(tmp_path, gz(data), "capture.sse.gz")


def test_a_cassette_is_told_by_its_first_mebibyte(tmp_path: Path) -> None:
    inside = b"#" + b"x" * (_CHUNK - 200) + b"\n" + CASSETTE
    assert ids(same_every_way(tmp_path, inside, "c.yaml")) == [
        "tooluse_lAG_zP8QRHmSYOwZzzaCqA",
        None,
    ]
    outside = b"#" + b"x" * _CHUNK + b"\n" + CASSETTE
    [record] = same_every_way(tmp_path, outside, "c.yaml")
    assert record["error"] is not None and "cannot tell the stream's transport" in record["error"]


# ------------------------------------------------------------------ empty and unreadable


def test_an_empty_file_and_empty_gzip_are_one_incomplete_record(tmp_path: Path) -> None:
    for data in (b"", gz(b"")):
        [record] = same_every_way(tmp_path, data)
        assert (record["id"], record["complete"], record["error"]) == (None, False, None)


def test_files_that_cannot_be_read_are_one_error_record_each(tmp_path: Path) -> None:
    (tmp_path / "dangling.sse").symlink_to(tmp_path / "nowhere.sse")
    [record] = replay_path(tmp_path / "dangling.sse")
    assert record["error"] == "cannot read: No such file or directory"
    (tmp_path / "dir.sse").mkdir()
    [record] = replay_path(tmp_path / "dir.sse", text=True)
    assert record["error"] == "the directory holds no file"
    extra: dict[str, Any] = dict(record)
    assert (extra["text"], extra["reasoning"]) == ("", "")


@pytest.mark.skipif(not os.path.exists("/proc/self/mem"), reason="needs Linux's /proc")
def test_a_file_that_opens_but_cannot_be_read_is_one_error_record() -> None:
    # /proc/self/mem opens, and reading its first page (never mapped) fails.
    [record] = replay_path("/proc/self/mem")
    assert record["error"] == "cannot read: Input/output error"


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs Linux's /proc")
def test_a_file_whose_size_is_not_its_length_is_read_to_its_end() -> None:
    # procfs says 0 bytes and holds more: read as it streams.
    [record] = replay_path("/proc/self/status")
    assert record["error"] is not None and "byte 0 is 0x4e" in record["error"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_named_pipe_is_streamed(tmp_path: Path) -> None:
    import threading

    fifo = tmp_path / "pipe.sse"
    os.mkfifo(fifo)

    def write() -> None:
        with open(fifo, "wb") as f:
            f.write(gz(OPENAI_CHAT))

    writer = threading.Thread(target=write)
    writer.start()
    try:
        records = replay_path(fifo)
    finally:
        writer.join()
    assert ids(records) == OPENAI_IDS


def test_a_file_that_changed_since_it_was_listed_is_read_as_it_is_now(tmp_path: Path) -> None:
    """A directory walk lists every file with its size, and the first read asks for one
    byte more than that: a file that grew or shrank since is still read to its end."""
    path = tmp_path / "capture.sse.gz"
    for data in (OPENAI_CHAT, gz(OPENAI_CHAT), broken_early(_CHUNK + 5)):
        path.write_bytes(data)
        expected = streamed(data, str(path))
        for listed in (0, 1, len(data) // 2, len(data) - 1, len(data), len(data) + 99, _WHOLE + 1):
            assert replay_source(Source(str(path), listed)) == expected, listed


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_named_pipe_listed_with_no_size_is_streamed(tmp_path: Path) -> None:
    import threading

    fifo = tmp_path / "pipe.sse"
    os.mkfifo(fifo)

    def write() -> None:
        with open(fifo, "wb") as f:
            f.write(OPENAI_CHAT[:100])
            f.flush()
            f.write(OPENAI_CHAT[100:])

    writer = threading.Thread(target=write)
    writer.start()
    try:
        records = replay_source(Source(str(fifo), 0))
    finally:
        writer.join()
    assert records == streamed(OPENAI_CHAT, str(fifo))
