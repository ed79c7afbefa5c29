"""``toolstitch replay``: the finished tool calls of captured provider streams.

The command reads captures (files, directories, globs, URLs, ``-`` for standard input;
gzip and VCR cassettes included), replays each through the ``Assembler`` and prints one
line per call: a table for people, ``--jsonl`` / ``--json`` for programs (the record
schema is in ``docs/replay.md``). ``--tools`` validates every call; ``--scheduler``
runs the same job on a Dask cluster. Exit status: 0 when every stream completed (and
every call validated), 1 when any did not, 2 for a usage error.

Arguments are parsed with the standard library's ``argparse`` (no dependency, and its
usage errors already exit with status 2); the table and the progress bar are ``rich``
(imported only when they are shown), cassettes are read with PyYAML. All three come
with ``pip install 'toolstitch[cli]'``; the cluster mode needs ``toolstitch[dask]``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import time
from collections import deque
from collections.abc import Iterator, Sequence
from typing import IO, TYPE_CHECKING, Any, NamedTuple, cast

from toolstitch._sources import PassedOver, Source, expand
from toolstitch._toolstitch import AUTO, DIALECTS, __version__
from toolstitch.errors import ToolDefinitionError, UnknownProviderError
from toolstitch.messages import Provider
from toolstitch.replay import CallRecord, replay_file, replay_source
from toolstitch.streams import Assembler
from toolstitch.tools import Toolset

if TYPE_CHECKING:
    from rich.progress import Progress, Task, TaskID
    from rich.text import Text

__all__ = ["main"]

# Progress appears only when the work has taken longer than this (seconds): a quick run
# leaves the terminal as it was.
PROGRESS_DELAY = 1.0
# An argument longer than this is cut in the table (``--jsonl`` / ``--json`` keep it all).
TABLE_ARGUMENTS = 200

_DESCRIPTION = """\
Replay captured LLM provider streams and print the finished tool calls of each.

A PATH is a file (read whatever its name), a directory (walked recursively for
*.sse, *.jsonl, *.ndjson, *.json, *.txt, *.yaml, *.yml, *.bin, *.eventstream,
each also .gz), a glob, a URL readable through fsspec (s3://, gs://, https://), or
- for standard input. The format is told from the content: gzip, SSE, JSON lines,
AWS event-stream, a whole response body, or a VCR cassette (one stream per
interaction with a streamed response body). With no PATH, the recordings bundled
with toolstitch are replayed.

Exit status: 0 when every stream completed with its function calls' arguments
JSON (and, with --tools, every call validated), 1 when any did not, 2 for a usage
error. Entries a walk passes over (files that are not captures, named pipes,
hidden files) are each named on standard error and counted in the summary."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "proxy":
        return _proxy(args, args.proxy_parser)
    replay_parser: argparse.ArgumentParser = args.replay_parser
    try:
        return _replay(args, replay_parser)
    except KeyboardInterrupt:
        print("toolstitch: interrupted", file=sys.stderr)
        return 130
    except _WorkerLost as e:
        print(f"toolstitch: {e}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # The reader went away (``| head``): nothing more to say, and nobody to say it to.
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (silences the exit flush)
        return 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="toolstitch",
        description="Reassemble the tool calls LLM providers stream in fragments.",
        epilog="Documentation that comes with the package: python -m pydoc toolstitch (the "
        "API; each module too: toolstitch.replay, toolstitch.transport, toolstitch.proxy, "
        "...).",
    )
    parser.add_argument("--version", action="version", version=f"toolstitch {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    replay = commands.add_parser(
        "replay",
        help="replay captured streams and print their finished tool calls",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    replay.set_defaults(replay_parser=replay)
    replay.add_argument("paths", nargs="*", metavar="PATH", help="captures to replay")
    replay.add_argument(
        "--provider",
        default=AUTO,
        help=f"the dialect of every stream ({', '.join(DIALECTS)}); default: {AUTO}, "
        "told from each stream's first events",
    )
    output = replay.add_mutually_exclusive_group()
    output.add_argument(
        "--jsonl",
        dest="format",
        action="store_const",
        const="jsonl",
        help="one JSON record per call and line (schema: python -m pydoc toolstitch.replay)",
    )
    output.add_argument(
        "--json",
        dest="format",
        action="store_const",
        const="json",
        help="one JSON array of the same records",
    )
    output.add_argument(
        "--format",
        dest="format",
        choices=("table", "jsonl", "json", "otel"),
        help="the output: table (default), jsonl, json, or otel: one JSON line per choice, "
        "an OpenTelemetry GenAI output message with its stream's name "
        "(python -m pydoc toolstitch.otel)",
    )
    replay.add_argument(
        "--text", action="store_true", help="also show the text and reasoning of each choice"
    )
    replay.add_argument(
        "--tools",
        metavar="FILE",
        help="validate every call against these tool definitions (JSON or YAML, in any form "
        "toolstitch.Toolset reads: OpenAI, Anthropic, Gemini, Bedrock, {name: schema})",
    )
    replay.add_argument(
        "--progress",
        choices=("auto", "always", "never"),
        default="auto",
        help="progress on standard error: auto (default) shows it only on a terminal and "
        "only once the work has taken more than a second; always shows it even when "
        "standard error is not a terminal",
    )
    replay.add_argument(
        "--jobs",
        type=_job_count,
        metavar="N",
        help="worker processes on this machine (default: the cores available; work under "
        f"{_SPREAD_BYTES // 1_000_000} MB stays in this process unless N is given); "
        "--jobs 1 replays in this process alone. The output is the same whatever N",
    )
    replay.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run on a Dask cluster: a scheduler address (tcp://host:8786) or local[:N] "
        "for a local cluster of N worker processes (default: one per core); needs "
        "toolstitch[dask]",
    )
    replay.add_argument(
        "--out",
        metavar="PATH",
        help="write the records as Parquet instead of printing them: one file here "
        "(needs toolstitch[arrow]); with --scheduler, a dataset (a directory of part "
        "files; local path or fsspec URL)",
    )
    replay.add_argument(
        "--events",
        action="store_true",
        help="for each stream, list its events: number, byte offset, dialect, type, and "
        "what it did (applied, skipped and why, refused and why, notes)",
    )
    replay.add_argument(
        "--blocksize",
        default="64MiB",
        metavar="SIZE",
        help="with --scheduler: about how many bytes of captures each partition reads "
        "(default 64MiB)",
    )
    _add_proxy(commands)
    return parser


def _add_proxy(commands: Any) -> None:
    proxy = commands.add_parser(
        "proxy",
        help="a pass-through gateway that reassembles and checks every call",
        description="Forward every request to UPSTREAM and stream every response back "
        "unchanged; reassemble each response, validate its calls against the tools the "
        "request declared, and write one JSON record per response (python -m pydoc "
        "toolstitch.proxy). "
        "Needs toolstitch[proxy].",
    )
    proxy.set_defaults(proxy_parser=proxy)
    proxy.add_argument("--upstream", required=True, metavar="URL", help="the provider's base URL")
    proxy.add_argument(
        "--listen", default="127.0.0.1:8080", metavar="HOST:PORT", help="default 127.0.0.1:8080"
    )
    proxy.add_argument(
        "--enforce",
        action="store_true",
        help="hold each event that completes a call until the call is checked; end the "
        "response in the provider's error shape when a call is not valid or cannot be checked",
    )
    proxy.add_argument(
        "--records", default="-", metavar="FILE", help="append the JSON records here (- : stdout)"
    )
    proxy.add_argument(
        "--otel", action="store_true", help="also export one span per response over OTLP/HTTP"
    )
    proxy.add_argument(
        "--upstream-timeout",
        type=_positive_seconds,
        default=600.0,
        metavar="SECONDS",
        help="the longest wait on the upstream: to connect, and between reads (default 600)",
    )
    proxy.add_argument(
        "--drain-seconds",
        type=_positive_seconds,
        default=30.0,
        metavar="SECONDS",
        help="on SIGTERM, how long open responses may go on before they are cut (default 30)",
    )
    proxy.add_argument(
        "--limit",
        action="append",
        default=[],
        metavar="NAME=N",
        help="a bound of every guard, repeatable: max_event_bytes, max_line_bytes, "
        "max_input_bytes, max_total_bytes, max_calls, max_held_bytes, max_decoded_bytes, "
        "max_ratio, max_check_bytes (the defaults: python -m pydoc toolstitch.guard)",
    )
    proxy.add_argument(
        "--relay",
        choices=("python", "rust"),
        default="python",
        help="what moves the bytes: python (uvicorn and httpx, the default) or rust (the "
        "extension's relay on tokio and hyper, without the GIL)",
    )
    proxy.add_argument("--no-check", action="store_true", help=argparse.SUPPRESS)


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: give a positive number of seconds")
    return value


def _limits(items: list[str], parser: argparse.ArgumentParser) -> dict[str, int]:
    from toolstitch.proxy.exchange import GUARD_LIMITS

    limits: dict[str, int] = {}
    for item in items:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or name not in GUARD_LIMITS:
            parser.error(
                f"--limit {item}: give NAME=N with NAME one of {', '.join(sorted(GUARD_LIMITS))}"
            )
        if not value.strip().isdigit() or int(value) < 1:
            parser.error(f"--limit {item}: N must be a positive whole number")
        limits[name] = int(value)
    return limits


def _proxy(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    try:
        from toolstitch.proxy import serve
    except ImportError as e:
        parser.error(f"the proxy needs toolstitch[proxy] ({e})")
    if args.otel:
        try:
            import opentelemetry.exporter.otlp.proto.http  # noqa: F401
        except ImportError as e:
            parser.error(f"--otel needs toolstitch[otel] ({e})")
    return serve(
        args.upstream,
        args.listen,
        enforce=args.enforce,
        records=args.records,
        otel=args.otel,
        check=not args.no_check,
        drain_seconds=args.drain_seconds,
        upstream_timeout=args.upstream_timeout,
        limits=_limits(args.limit, parser),
        relay=args.relay,
    )


# ------------------------------------------------------------------ the command


def _replay(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    try:
        Assembler(args.provider, live=False)
    except UnknownProviderError as e:
        parser.error(f"--provider: {e}")
    definitions, toolset = _load_tools(args.tools, parser) if args.tools else (None, None)
    paths: list[str] = list(args.paths)
    if args.out and args.format is not None:
        parser.error(f"--out writes Parquet: leave out --{args.format}")
    if args.events:
        if args.scheduler or args.out or args.format not in (None, "table"):
            parser.error(
                "--events prints each stream's events here: leave out "
                "--scheduler, --out and the output format"
            )
        from toolstitch._events import print_events

        return print_events(paths or _sample_paths(), args.provider, sys.stdout, sys.stderr)
    if args.scheduler:
        if args.jobs is not None:
            parser.error(
                "--jobs spreads the work over this machine's cores; a cluster has "
                "its own workers: give --jobs or --scheduler, not both"
            )
        if args.format == "otel":
            parser.error("--format otel runs here, not on a cluster: leave out --scheduler")
        if "-" in paths:
            parser.error("standard input (-) cannot be sent to a cluster; give file paths")
        return _replay_on_cluster(args, parser, paths or _sample_paths(), toolset)
    title = None
    if not paths:
        paths = _sample_paths()
        title = "the recordings bundled with toolstitch (give PATHs to replay your own)"
    passed_over: list[PassedOver] = []
    sources = [source for path in paths for source in _expand_one(path, passed_over)]
    for skipped in passed_over:
        print(f"toolstitch: {skipped.name}: passed over: {skipped.reason}", file=sys.stderr)
    if args.format == "otel":
        if toolset is not None:
            parser.error("--tools checks call records: it does not apply to --format otel")
        from toolstitch.otel import replay_sources

        return replay_sources(sources, args.provider, sys.stdout)
    if args.out:
        try:
            import pyarrow  # noqa: F401
        except ImportError as e:
            parser.error(
                f"--out writes Parquet with pyarrow: pip install 'toolstitch[arrow]' ({e})"
            )
    output = _Output(
        args.format or "table",
        text=args.text,
        checked=toolset is not None,
        out=args.out,
        passed_over=len(passed_over),
    )
    work = _Work(args.provider, args.text, definitions, toolset, output.form)
    # The workers start first: on Linux a worker is a fork of this process, taken while
    # it has no other thread (the progress display's starts after).
    with (
        _Replay(sources, work, args.jobs) as replayed,
        _Progress(args.progress, sources) as progress,
    ):
        for records, nbytes in replayed:
            done = records if isinstance(records, _Rendered) else _render(records, output.form)
            for line in done.failures:
                print(line, file=sys.stderr, flush=True)
            output.add(done)
            progress.advance(done.streams, nbytes)
    output.finish(title)
    return output.status


def _expand_one(path: str, passed_over: list[PassedOver]) -> list[Source]:
    return [Source("-")] if path == "-" else expand([path], passed_over)


def _replay_one(
    source: Source, provider: Provider, text: bool, toolset: Toolset | None
) -> tuple[list[CallRecord], int]:
    """The records of one source and the bytes it took."""
    if source.name == "-" and source.error is None and source.size is None:
        counted = _Counting(sys.stdin.buffer if sys.stdin is not None else io.BytesIO())
        stdin = io.BufferedReader(counted)
        records = replay_file(stdin, provider, name="<stdin>", text=text, tools=toolset)
        return records, counted.count
    return replay_source(source, provider, text=text, tools=toolset), source.size or 0


class _Counting(io.RawIOBase):
    """A binary reader that counts what it hands out (standard input has no size)."""

    def __init__(self, f: IO[bytes]) -> None:
        self._f = f
        self.count = 0

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        data = self._f.read(-1 if size is None else size)
        self.count += len(data)
        return data

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(memoryview(buffer)))
        memoryview(buffer).cast("B")[: len(data)] = data
        return len(data)


def _sample_paths() -> list[str]:
    """The recordings bundled in the package (``toolstitch/samples``): its captures,
    not its licence notices and provenance."""
    from importlib import resources  # only here: its imports cost every run otherwise

    from toolstitch._sources import is_stream_file

    root = str(resources.files("toolstitch") / "samples")
    return sorted(os.path.join(root, n) for n in os.listdir(root) if is_stream_file(n))


def _load_tools(path: str, parser: argparse.ArgumentParser) -> tuple[Any, Toolset]:
    """The definitions read from ``path`` (plain data that travels to worker processes)
    and their ``Toolset``."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        parser.error(f"--tools {path}: cannot read: {e.strerror or e}")
    try:
        definitions = json.loads(data)
    except (ValueError, UnicodeDecodeError) as json_error:
        try:
            import yaml
        except ImportError:
            parser.error(
                f"--tools {path}: not JSON ({json_error}), and reading YAML needs PyYAML: "
                f"pip install 'toolstitch[cli]'"
            )
        try:
            definitions = yaml.safe_load(data)
        except yaml.YAMLError as yaml_error:
            parser.error(
                f"--tools {path}: neither JSON ({json_error}) nor YAML "
                f"({' '.join(str(yaml_error).split())})"
            )
    try:
        return definitions, Toolset(definitions)
    except ToolDefinitionError as e:
        parser.error(f"--tools {path}: {' '.join(str(e).split())}")


class _Rendered(NamedTuple):
    """The records of one source as the output takes them: their text (``--jsonl``: a
    line each; ``--json``: the array's items joined by ``",\n"``) or, for the table,
    the records themselves; and what the command counts of them. A worker sends this
    back rather than the records: written once, in the worker, and small to send."""

    text: str
    records: list[CallRecord]  # for the table only (empty otherwise)
    written: int  # records
    streams: int
    failures: list[str]
    failed: bool  # a record not complete, or a call not valid: exit status 1


def _render(records: list[CallRecord], form: str) -> _Rendered:
    if form == "jsonl":
        text = "".join([_json(record) + "\n" for record in records])
    elif form == "json":
        text = ",\n".join([_json(record) for record in records])
    else:
        text = ""
    return _Rendered(
        text,
        records if form == "table" else [],
        len(records),
        len({record["stream"] for record in records}),
        list(_failure_lines(records)),
        any(not _ok(record) for record in records),
    )


def _failure_lines(records: list[CallRecord]) -> Iterator[str]:
    """One line per stream that could not be read or replayed, naming it and why (the
    message names the byte where the error knows it)."""
    seen: set[str] = set()
    for record in records:
        error = record["error"]
        if error is not None and record["stream"] not in seen:
            seen.add(record["stream"])
            yield f"toolstitch: {record['stream']}: {error}"


# ------------------------------------------------------------------ on this machine's cores

# With no --jobs, input smaller than this (in bytes, when every size is known) stays in
# this process: starting worker processes costs more than it saves on a few files.
_SPREAD_BYTES = 8_000_000
# A task is a run of consecutive files of at most this many bytes and files: big enough
# that a task's own cost (pickling, a round trip between processes) vanishes beside the
# replay, small enough that the files are shared out evenly among the workers.
_TASK_BYTES = 2 << 20
_TASK_FILES = 64
# Tasks handed out per worker ahead of the one whose records are being written: keeps
# every worker busy while bounding the records held back waiting for their turn.
_AHEAD = 3
# A worker has at most this many tasks at a time: the one it works on and the next.
_QUEUED = 2


class _Work:
    """What every file is replayed with. ``definitions`` are the tool definitions as
    read (plain data); a worker process builds its own ``Toolset`` from them, since a
    ``Toolset``'s compiled schemas stay in the process that built them."""

    def __init__(
        self,
        provider: Provider,
        text: bool,
        definitions: Any,
        toolset: Toolset | None,
        form: str = "jsonl",
    ) -> None:
        self.provider = provider
        self.text = text
        self.definitions = definitions
        self.toolset = toolset
        self.form = form

    def replay(self, source: Source) -> tuple[list[CallRecord], int]:
        return _replay_one(source, self.provider, self.text, self.toolset)

    def rendered(self, source: Source) -> tuple[_Rendered, int]:
        records, nbytes = self.replay(source)
        return _render(records, self.form), nbytes


def _job_count(value: str) -> int:
    if not (value.isdigit() and int(value) > 0):
        raise argparse.ArgumentTypeError(f"{value!r} is not a positive whole number")
    return int(value)


def _available_cores() -> int:
    """The cores this process may run on (its CPU affinity where the platform says)."""
    affinity = getattr(os, "sched_getaffinity", None)
    if affinity is not None:
        with contextlib.suppress(OSError):
            return max(1, len(affinity(0)))
    return os.cpu_count() or 1


def _replayed(
    sources: list[Source], work: _Work, jobs: int | None
) -> Iterator[tuple[list[CallRecord] | _Rendered, int]]:
    """The records of every source and the bytes each took, in the order of ``sources``
    (see ``_Replay``)."""
    with _Replay(sources, work, jobs) as replayed:
        yield from replayed


class _Task:
    """A run of consecutive sources, ``sources[start:stop]``, replayed by a worker
    (``spread``) or here: standard input can only be read by this process, and a source
    that failed to expand already is its error record."""

    def __init__(self, sources: list[Source], start: int, spread: bool) -> None:
        self.sources = sources
        self.start = start
        self.stop = start + len(sources)
        self.spread = spread


def _tasks(sources: list[Source]) -> list[_Task]:
    tasks: list[_Task] = []
    run: list[Source] = []
    size = 0
    for at, source in enumerate(sources):
        here = source.error is not None or (source.name == "-" and source.size is None)
        if run and (here or len(run) >= _TASK_FILES or size + (source.size or 0) > _TASK_BYTES):
            tasks.append(_Task(run, at - len(run), spread=True))
            run, size = [], 0
        if here:
            tasks.append(_Task([source], at, spread=False))
        else:
            run.append(source)
            size += source.size or 0
    if run:
        tasks.append(_Task(run, len(sources) - len(run), spread=True))
    return tasks


def _forks() -> bool:
    """Whether worker processes are forks of this one: on Linux, while this process
    runs no other thread. A fork starts at once, toolstitch already imported (a fresh
    interpreter would import it again, a tenth of a second of CPU per worker, and
    multiprocessing's machinery with it), and nothing is mid-flight in it (the progress
    display's thread starts after). Elsewhere workers are spawned: fresh interpreters,
    through multiprocessing (macOS's system libraries are not safe to use in a forked
    child, Windows cannot fork), as they are when another thread runs (a caller of
    ``main`` with threads of its own)."""
    import threading

    return sys.platform.startswith("linux") and threading.active_count() == 1


class _Replay:
    """The records of every source and the bytes each took, in the order of
    ``sources``, replayed here or over ``jobs`` worker processes (``None``: the cores
    available, when the input is big enough to be worth it). The workers start when
    this is made, and are stopped when it is closed (``with``); iterating gives each
    source's records (a list here; from a worker, as ``_Rendered``).

    Every worker has the list of sources (a fork shares it; a spawned worker is sent it
    once) and is sent tasks as ranges of it: at most ``_QUEUED`` at a time (one to work
    on, the next waiting, so a worker never waits for this process), and never more
    than ``_AHEAD`` per worker past the task whose records are written next; their
    records are written in the order of the tasks. This process hands out tasks, writes,
    and replays what only it can read (standard input)."""

    def __init__(self, sources: list[Source], work: _Work, jobs: int | None) -> None:
        self.sources = sources
        self.work = work
        self.tasks = [] if jobs == 1 else _tasks(sources)
        workers = min(jobs or _available_cores(), sum(1 for t in self.tasks if t.spread))
        if jobs is None:
            sizes = [s.size for s in sources]
            if any(size is None for size in sizes) or sum(s or 0 for s in sizes) < _SPREAD_BYTES:
                workers = 1
        self.workers: list[_Forked | _Spawned] = []
        self.finished = False
        if workers >= 2:
            try:
                self._start(workers)
            except BaseException:
                self.close()
                raise

    def _start(self, count: int) -> None:
        if not _forks():
            self.workers = [_Spawned(self.sources, self.work) for _ in range(count)]
            return
        # A fork inherits this process's buffers: flushed, nothing is written twice.
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                with contextlib.suppress(OSError, ValueError):
                    stream.flush()
        for _ in range(count):
            forked = _Forked(self.sources, self.work, cast(list[_Forked], self.workers))
            self.workers.append(forked)

    def __iter__(self) -> Iterator[tuple[list[CallRecord] | _Rendered, int]]:
        if not self.workers:
            for source in self.sources:
                yield self.work.replay(source)
            self.finished = True
            return
        results: dict[int, list[tuple[_Rendered, int]]] = {}
        handed = 0  # the tasks before it are handed out (or are this process's own)
        for at, task in enumerate(self.tasks):
            handed = self._hand_out(handed, at)
            if not task.spread:
                for source in task.sources:
                    yield self.work.replay(source)
                continue
            while at not in results:
                self._receive(results, at)
                handed = self._hand_out(handed, at)
            yield from results.pop(at)
        self.finished = True

    def _hand_out(self, handed: int, at: int) -> int:
        """Sends tasks from ``handed`` on to the workers with room, up to the window
        past ``at``; returns the first task not handed out."""
        tasks = self.tasks
        limit = min(len(tasks), at + len(self.workers) * _AHEAD)
        while handed < limit:
            task = tasks[handed]
            if task.spread:
                worker = min(self.workers, key=lambda w: len(w.queued))
                if len(worker.queued) >= _QUEUED:
                    break
                try:
                    worker.send((task.start, task.stop))
                except OSError as e:
                    # A worker died since the last result: the first file not written
                    # yet is the one named.
                    raise _WorkerLost(tasks[at].sources[0].name) from e
                worker.queued.append(handed)
            handed += 1
        return handed

    def _receive(self, results: dict[int, list[tuple[_Rendered, int]]], at: int) -> None:
        """Waits for the next results of any worker, and keeps them."""
        for worker in _ready([w for w in self.workers if w.queued]):
            try:
                ok, payload = worker.receive()
            except (EOFError, OSError) as e:
                raise _WorkerLost(self.tasks[at].sources[0].name) from e
            if not ok:
                raise RuntimeError(f"a replay worker failed: {payload}")
            results[worker.queued.popleft()] = [(_Rendered(*done), n) for done, n in payload]

    def close(self) -> None:
        """Stops the workers: told to end once the run is through, ended at once when
        it is not (an error, Ctrl-C, a closed output)."""
        workers, self.workers = self.workers, []
        for worker in workers:
            if self.finished:
                with contextlib.suppress(OSError):
                    worker.send(None)
            else:
                worker.kill()
        for worker in workers:
            worker.join()

    def __enter__(self) -> _Replay:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Forked:
    """A worker forked from this process, and the two pipes to it (tasks there, records
    back). ``queued``: the tasks it was sent and has not answered yet (their indexes,
    in order)."""

    def __init__(self, sources: list[Source], work: _Work, others: list[_Forked]) -> None:
        import signal

        self.queued: deque[int] = deque()
        tasks, self.tasks = os.pipe()
        self.results, results = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # pragma: no cover (the worker: its coverage is not collected)
            status = 1
            try:
                # Ctrl-C reaches the whole process group: the command handles it (and
                # ends its workers); a worker printing its own traceback would be noise.
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                os.close(self.tasks)
                os.close(self.results)
                for other in others:  # their pipes are theirs and the command's
                    os.close(other.tasks)
                    os.close(other.results)
                status = _serve(
                    lambda: _read_message(tasks),
                    lambda answer: _write_message(results, answer),
                    sources,
                    work,
                )
            finally:
                os._exit(status)
        os.close(tasks)
        os.close(results)

    def send(self, message: object) -> None:
        _write_message(self.tasks, message)

    def receive(self) -> Any:
        return _read_message(self.results)

    def kill(self) -> None:
        import signal

        with contextlib.suppress(OSError):
            os.kill(self.pid, signal.SIGKILL)

    def join(self) -> None:
        for fd in (self.tasks, self.results):
            with contextlib.suppress(OSError):
                os.close(fd)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)


# Between the command and a forked worker, a message is its length (8 bytes) and the
# message in ``marshal``'s format: plain data only (ranges of sources, the records'
# texts and counts), which it writes and reads faster than pickle, with no import;
# both ends are the same interpreter.


def _write_message(fd: int, message: Any) -> None:
    import marshal

    data = marshal.dumps(message)
    view = memoryview(len(data).to_bytes(8, "little") + data)
    while view:
        view = view[os.write(fd, view) :]


def _read_exactly(fd: int, size: int) -> bytearray:
    buffer = bytearray(size)
    view = memoryview(buffer)
    got = 0
    while got < size:
        n = os.readv(fd, [view[got:]])
        if n == 0:
            raise EOFError("the other end of the pipe closed")
        got += n
    return buffer


def _read_message(fd: int) -> Any:
    import marshal

    size = int.from_bytes(_read_exactly(fd, 8), "little")
    return marshal.loads(_read_exactly(fd, size))


class _Spawned:
    """A worker started by multiprocessing's ``spawn`` (a fresh interpreter), sent the
    sources once, and its end of the pipe to it; ``queued`` as for ``_Forked``."""

    def __init__(self, sources: list[Source], work: _Work) -> None:
        import multiprocessing

        self.queued: deque[int] = deque()
        context: Any = multiprocessing.get_context("spawn")
        self.connection, theirs = context.Pipe()
        self.process = context.Process(
            target=_spawned_main,
            args=(theirs, sources, work.provider, work.text, work.definitions, work.form),
            name="toolstitch-replay",
            daemon=True,
        )
        try:
            self.process.start()
        finally:
            theirs.close()

    def send(self, message: object) -> None:
        self.connection.send(message)

    def receive(self) -> Any:
        return self.connection.recv()

    def kill(self) -> None:
        self.process.kill()

    def join(self) -> None:
        self.process.join()
        self.connection.close()


def _ready(workers: list[_Forked | _Spawned]) -> list[_Forked | _Spawned]:
    """Those of ``workers`` with something to read (their records, or their end),
    once there is one."""
    if all(isinstance(w, _Forked) for w in workers):
        import select

        by_fd = {cast(_Forked, w).results: w for w in workers}
        poll = select.poll()
        for fd in by_fd:
            poll.register(fd, select.POLLIN)
        return [by_fd[fd] for fd, _ in poll.poll()]
    from multiprocessing.connection import wait

    by_connection = {cast(_Spawned, w).connection: w for w in workers}
    return [by_connection[cast(Any, c)] for c in wait(list(by_connection))]


def _spawned_main(
    connection: Any,
    sources: list[Source],
    provider: Provider,
    text: bool,
    definitions: Any,
    form: str,
) -> None:  # pragma: no cover (a spawned worker: its coverage is not collected)
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as for a forked worker
    toolset = None if definitions is None else Toolset(definitions)
    work = _Work(provider, text, definitions, toolset, form)
    _serve(connection.recv, connection.send, sources, work)


def _serve(receive: Any, send: Any, sources: list[Source], work: _Work) -> int:
    """A worker's loop: replays each range of ``sources`` it is sent and sends back
    their records as the output's text (each ``_Rendered`` as a plain tuple), until it
    is sent ``None`` or the command's end of the pipe closes. A forked worker keeps the
    command's ``Toolset``; a spawned one built its own from the definitions."""
    while True:
        try:
            span = receive()
        except (EOFError, OSError):
            return 0
        if span is None:
            return 0
        start, stop = span
        try:
            done = [work.rendered(source) for source in sources[start:stop]]
            answer: tuple[bool, Any] = (True, [(tuple(r), n) for r, n in done])
        except Exception as e:  # a bug: said in the command, which stops
            answer = (False, f"{type(e).__name__}: {e}")
        try:
            send(answer)
        except (EOFError, OSError):
            return 0


class _WorkerLost(Exception):
    """A worker process ended before it finished its files (killed from outside, out
    of memory): the run cannot say what those files hold."""

    def __init__(self, first: str) -> None:
        super().__init__(
            f"a worker process ended before it finished replaying {first} and the files "
            "after it (killed, or out of memory?); run with --jobs 1 to replay them here"
        )


# ------------------------------------------------------------------ output


class _Output:
    """Writes records as they come (JSON lines, a JSON array) or at the end (the table),
    and keeps the exit status."""

    def __init__(
        self,
        form: str,
        *,
        text: bool,
        checked: bool,
        out: str | None = None,
        passed_over: int = 0,
    ) -> None:
        # With ``out``, the records are written as --jsonl writes them, and that text
        # is read into Arrow against the records' schema: the Parquet file holds exactly
        # the --jsonl records, and workers send text, as for --jsonl.
        self.form = "jsonl" if out is not None else form
        self.text = text
        self.checked = checked
        self.status = 0
        self.rows: list[CallRecord] = []
        self.written = 0
        self.streams = 0
        self.passed_over = passed_over
        self.out: IO[str] = sys.stdout
        self.parquet: Any = None
        self.where = out
        if self.form == "table":
            _require_rich()
        if out is not None:
            from toolstitch.arrow import ParquetWriter

            self.parquet = ParquetWriter(out, text=text, tools=checked)

    def add(self, done: _Rendered) -> None:
        if done.failed:
            self.status = 1
        self.streams += done.streams
        if self.parquet is not None:
            self.parquet.add_jsonl(done.text, done.written)
        elif self.form == "jsonl":
            self.out.write(done.text)
        elif self.form == "json":
            if done.written:
                self.out.write(("[\n" if self.written == 0 else ",\n") + done.text)
        else:
            self.rows.extend(done.records)
        self.written += done.written
        if self.form != "table":
            self.out.flush()

    def finish(self, title: str | None) -> None:
        skipped = _passed_over_summary(self.passed_over)
        if self.parquet is not None:
            self.parquet.close()
            print(
                f"wrote {self.written} records of {self.streams} streams to {self.where}"
                + (f"; {skipped}" if skipped else ""),
                file=self.out,
            )
        elif self.form == "json":
            self.out.write("[]\n" if self.written == 0 else "\n]\n")
        elif self.form == "table":
            _print_table(
                self.rows, text=self.text, checked=self.checked, title=title, skipped=skipped
            )
        self.out.flush()
        if skipped and self.parquet is None and self.form in ("jsonl", "json"):
            print(f"toolstitch: {skipped}", file=sys.stderr)


def _passed_over_summary(count: int) -> str:
    """What the summary says of the entries a walk passed over (each had its line)."""
    if not count:
        return ""
    return f"{count} entr{'y' if count == 1 else 'ies'} passed over (not captures; see above)"


def _json(record: CallRecord) -> str:
    return json.dumps(record, ensure_ascii=False)


def _require_rich() -> None:
    try:
        import rich  # noqa: F401
    except ImportError:
        print(
            "toolstitch: the table needs rich: pip install 'toolstitch[cli]' "
            "(or use --jsonl / --json)",
            file=sys.stderr,
        )
        raise SystemExit(2) from None


def _status(record: CallRecord) -> Text:
    from rich.text import Text

    if record["error"] is not None:
        return Text(f"error: {record['error']}", style="red")
    if record["complete"]:
        if record["arguments_json"] is False:
            return Text("complete, but the arguments are not one JSON value", style="yellow")
        return Text("complete", style="green")
    finish = record["finish"]
    if finish is not None:
        return Text(f"incomplete: finished with {finish!r}", style="yellow")
    return Text("incomplete: no normal end (cut short?)", style="yellow")


def _check(record: CallRecord) -> Text:
    from rich.text import Text

    extra: dict[str, Any] = dict(record)
    valid = extra.get("valid")
    if valid is True:
        return Text("valid", style="green")
    if valid is False:
        return Text(str(extra.get("validation_error")), style="red")
    return Text("server-side" if record["server_side"] else "", style="dim")


def _short(value: str | None, limit: int) -> str:
    if value is None:
        return ""
    return value if len(value) <= limit else value[: limit - 1] + "…"


def _common_directory(names: list[str]) -> str:
    """The directory every stream is under (said once above the table), or ``""``."""
    if len(names) < 2 or any(n.startswith("<stdin>") or "://" in n for n in names):
        return ""
    directories = {os.path.dirname(n.split("#", 1)[0]) for n in names}
    try:
        common = os.path.commonpath(list(directories))
    except ValueError:
        return ""
    if common in ("", os.sep) or not all(n.startswith(common + os.sep) for n in names):
        return ""
    return common


def _shown_directory(directory: str) -> str:
    """``directory`` relative to the working directory when it is under it."""
    if not os.path.isabs(directory):
        return directory
    try:
        relative = os.path.relpath(directory)
    except ValueError:
        return directory
    return directory if relative.startswith("..") else relative


def _print_table(
    rows: list[CallRecord], *, text: bool, checked: bool, title: str | None, skipped: str = ""
) -> None:
    from rich import box
    from rich.console import Console
    from rich.table import Table

    console = Console(highlight=False, width=_table_width())
    names = [r["stream"] for r in rows]
    common = _common_directory(names)
    cut = len(common) + 1 if common else 0
    streams = len(dict.fromkeys(names))
    calls = sum(1 for r in rows if r["id"] is not None)
    complete = len({r["stream"] for r in rows if r["complete"]})
    failed = len({r["stream"] for r in rows if r["error"] is not None})
    where = _shown_directory(common)
    heading = title or (f"in {where}" if common else None)
    caption = (
        f"{streams} stream{'s' * (streams != 1)}, {calls} call{'s' * (calls != 1)}; "
        f"{complete} stream{'s' * (complete != 1)} complete"
        + (f", {failed} failed" if failed else "")
    )
    if checked:
        invalid = sum(1 for r in rows if dict(r).get("valid") is False)
        caption += f"; {invalid} call{'s' * (invalid != 1)} not valid"
    not_json = sum(1 for r in rows if r["arguments_json"] is False)
    if not_json:
        caption += f"; {not_json} call{'s' * (not_json != 1)} whose arguments are not JSON"
    if skipped:
        caption += f"; {skipped}"
    if heading and common and title:
        heading += f"\nin {where}"
    table = Table(title=heading, caption=caption, box=box.SIMPLE_HEAD, title_justify="left")
    # Every cell folds rather than being cut (ids are copied from here); the minimum
    # widths keep a narrow terminal from splitting short words.
    table.add_column("stream", overflow="fold", min_width=12)
    table.add_column("choice", justify="right", no_wrap=True)
    table.add_column("id", overflow="fold", min_width=12)
    table.add_column("name", overflow="fold", min_width=10)
    table.add_column("arguments", overflow="fold", min_width=16)
    table.add_column("status", overflow="fold", min_width=10)
    if checked:
        table.add_column("check", overflow="fold", min_width=10)
    previous = None
    for i, record in enumerate(rows):
        stream = record["stream"]
        last_of_stream = i + 1 == len(rows) or rows[i + 1]["stream"] != stream
        cells: list[Any] = [
            "" if stream == previous else stream[cut:],
            str(record["choice"]),
            record["id"] or "",
            record["name"] or ("" if record["id"] is None else "?"),
            _short(record["arguments"], TABLE_ARGUMENTS)
            if record["id"] is not None
            else "(no tool call)",
            _status(record),
        ]
        if checked:
            cells.append(_check(record))
        table.add_row(*cells, end_section=last_of_stream)
        previous = stream
    console.print(table)
    if text:
        _print_text(console, rows, cut)


def _table_width() -> int | None:
    """The terminal's width on a terminal (or ``COLUMNS``); for a file or a pipe, room
    enough that ids and names are not folded (a table is only as wide as it needs)."""
    if _is_terminal(sys.stdout) or os.environ.get("COLUMNS"):
        return None
    return 160


def _print_text(console: Any, rows: list[CallRecord], cut: int) -> None:
    """The text and reasoning of each choice, unwrapped (the terminal wraps them)."""
    from rich.text import Text

    seen: set[tuple[str, int]] = set()
    console.print(Text("text and reasoning", style="italic"))
    for record in rows:
        key = (record["stream"], record["choice"])
        extra: dict[str, Any] = dict(record)
        if key in seen or not (extra.get("text") or extra.get("reasoning")):
            continue
        seen.add(key)
        console.print()
        console.print(Text(f"{record['stream'][cut:]}, choice {record['choice']}", style="bold"))
        for label in ("reasoning", "text"):
            if extra.get(label):
                body = Text(f"{label}: ", style="dim")
                body.append(str(extra[label]).strip())
                console.print(body, soft_wrap=True)
    if not seen:
        console.print("(no stream has text or reasoning)")


# ------------------------------------------------------------------ progress


class _Progress:
    """Streams/s and MB/s on standard error (a bar when the total size is known), only
    on a terminal and only once the work has taken more than ``PROGRESS_DELAY``; with
    ``always``, from the start and whatever standard error is."""

    def __init__(self, mode: str, sources: list[Source]) -> None:
        self.mode = mode
        self.enabled = mode == "always" or (mode == "auto" and _is_terminal(sys.stderr))
        sizes = [s.size for s in sources]
        self.total = None if any(s is None for s in sizes) else float(sum(s or 0 for s in sizes))
        self.started_at = time.monotonic()
        self.streams = 0
        self.progress: Progress | None = None
        self.task: TaskID | None = None
        self.shown = False

    def __enter__(self) -> _Progress:
        if self.enabled:
            try:
                self._build()
            except ImportError:
                self.enabled = False
        if self.enabled and self.mode == "always":
            self._show()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None and self.shown:
            self.progress.stop()

    def _build(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            Progress,
            TaskProgressColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        console = Console(stderr=True, force_terminal=True if self.mode == "always" else None)
        columns: list[Any] = [TextColumn("replaying")]
        if self.total is not None:
            columns += [BarColumn(bar_width=20), TaskProgressColumn()]
        columns += [_RateColumn(), TimeElapsedColumn()]
        self.progress = Progress(
            *columns,
            console=console,
            redirect_stdout=_is_terminal(sys.stdout),
            redirect_stderr=True,
        )
        self.task = self.progress.add_task("replay", total=self.total, streams=0)

    def _show(self) -> None:
        if self.progress is not None and not self.shown:
            self.progress.start()
            self.shown = True

    def advance(self, streams: int, nbytes: int) -> None:
        if not self.enabled or self.progress is None or self.task is None:
            return
        self.streams += streams
        self.progress.update(self.task, advance=nbytes, streams=self.streams)
        if not self.shown and time.monotonic() - self.started_at > PROGRESS_DELAY:
            self._show()


def _is_terminal(stream: Any) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if callable(isatty) else False
    except ValueError:  # a closed stream
        return False


def _rate_column() -> type[Any]:
    from rich.progress import ProgressColumn
    from rich.text import Text

    class RateColumn(ProgressColumn):
        """Streams and bytes per second since the start."""

        def render(self, task: Task) -> Text:
            elapsed = task.elapsed or 0.0
            streams = int(task.fields.get("streams", 0))
            if elapsed <= 0:
                return Text(f"{streams} streams")
            return Text(
                f"{streams:,} streams, {streams / elapsed:,.0f} streams/s, "
                f"{task.completed / elapsed / 1e6:,.1f} MB/s"
            )

    return RateColumn


def _RateColumn() -> Any:
    return _rate_column()()


# ------------------------------------------------------------------ on a cluster


def _replay_on_cluster(
    args: argparse.Namespace,
    parser: argparse.ArgumentParser,
    paths: list[str],
    toolset: Toolset | None,
) -> int:
    try:
        from dask.utils import parse_bytes
        from distributed import Client, LocalCluster, progress, wait
        from distributed.scheduler import KilledWorker

        from toolstitch import dask as toolstitch_dask
    except ImportError as e:
        parser.error(f"--scheduler needs toolstitch[dask] ({e})")
    try:
        blocksize = parse_bytes(args.blocksize)
    except (ValueError, TypeError):
        parser.error(f"--blocksize: {args.blocksize!r} is not a size (64MiB, 100MB, 1000000)")
    if blocksize <= 0:
        parser.error("--blocksize must be positive")
    address = args.scheduler
    cluster: LocalCluster | None = None
    if address == "local" or address.startswith("local:"):
        _, _, count = address.partition(":")
        if count and not (count.isdigit() and int(count) > 0):
            parser.error(f"--scheduler {address}: the worker count must be a positive integer")
        cluster = toolstitch_dask.local_cluster(int(count) if count else None)
        address = cluster
    try:
        try:
            client = Client(address)
        except (OSError, TimeoutError) as e:
            print(
                f"toolstitch: cannot reach the Dask scheduler at {args.scheduler}: {e}",
                file=sys.stderr,
            )
            return 2
        with client:
            passed_over: list[PassedOver] = []
            frame = toolstitch_dask.read_calls(
                paths,
                args.provider,
                blocksize=blocksize,
                text=args.text,
                tools=toolstitch_dask.definitions_of(toolset),
                passed_over=passed_over,
            )
            for skipped in passed_over:
                print(f"toolstitch: {skipped.name}: passed over: {skipped.reason}", file=sys.stderr)
            frame = client.persist(frame)
            if args.progress == "always" or (args.progress == "auto" and _is_terminal(sys.stderr)):
                with contextlib.redirect_stdout(sys.stderr):
                    progress(frame)
            wait(frame)
            if args.out:
                toolstitch_dask.to_parquet(frame, args.out)
                summary = frame[
                    ["stream", "complete", "error", "arguments_json", *_valid(toolset)]
                ].compute()
                records = cast(list[CallRecord], toolstitch_dask.to_records(summary))
            else:
                records = cast(list[CallRecord], toolstitch_dask.to_records(frame.compute()))
    except (KilledWorker, OSError, TimeoutError, RuntimeError, ValueError) as e:
        # Replay itself turns every bad file into a record; what reaches here is the
        # cluster failing (a lost worker or scheduler, an output that cannot be written).
        print(f"toolstitch: the cluster run failed: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    finally:
        if cluster is not None:
            cluster.close()
    for line in _failure_lines(records):
        print(line, file=sys.stderr)
    if args.out:
        status = 0 if all(_ok(r) for r in records) else 1
        streams = len({r["stream"] for r in records})
        summary = _passed_over_summary(len(passed_over))
        print(
            f"wrote {len(records)} records of {streams} streams to {args.out}"
            + (f"; {summary}" if summary else "")
        )
        return status
    output = _Output(
        args.format or "table",
        text=args.text,
        checked=toolset is not None,
        passed_over=len(passed_over),
    )
    output.add(_render(records, output.form))
    output.finish(None)
    return output.status


def _valid(toolset: Toolset | None) -> list[str]:
    return [] if toolset is None else ["valid"]


def _ok(record: CallRecord) -> bool:
    """A record that leaves the exit status at 0: its stream completed, its arguments
    (when JSON is meant) are one JSON value, and (with --tools) the call is valid."""
    return (
        bool(record["complete"])
        and record.get("arguments_json") is not False
        and cast(dict[str, Any], record).get("valid") is not False
    )
