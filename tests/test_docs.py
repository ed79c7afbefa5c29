"""Every ```python snippet in README.md and docs/**/*.md runs as written.

Conventions (for whoever writes docs):

- A fence whose info string is exactly ``python`` is executed, in a fresh
  namespace, with the repository root as the working directory.
- Setup a snippet needs but should not show goes in an HTML comment right
  before the fence (blank lines may separate them), which renderers hide::

      <!-- setup
      chunks = [...]
      -->

  It runs first, in the snippet's namespace.
- Every run snippet, with its setup, must pass ``mypy --strict`` (the project's
  configuration), as a user's type checker would read the code they copy.
- An illustrative snippet that cannot run is fenced ``python no-run``; keep
  them rare. Any other spelling of a Python fence (``py``, ``python3``,
  ``pycon``, ...) is refused so that no snippet is skipped by accident.

New documents and snippets are picked up without changing this file.
"""

from __future__ import annotations

import contextlib
import io
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])

FENCE = re.compile(r"^(?P<indent> *)(?P<ticks>`{3,}|~{3,})(?P<info>[^\n`]*)$")
SETUP = re.compile(r"<!--\s*setup\s*\n(?P<code>.*)-->", re.DOTALL)
PYTHON_LIKE = re.compile(r"^(py|python\d*|pycon|ipython|python-?repl)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Snippet:
    path: Path
    line: int  # 1-based line of the opening fence
    info: str
    code: str
    setup: str

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def snippets(path: Path) -> list[Snippet]:
    found: list[Snippet] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start, ticks, info = i, m.group("ticks"), m.group("info").strip()
        indent = len(m.group("indent"))  # a fence inside a list item is indented
        body: list[str] = []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(ticks):
            body.append(lines[i][indent:] if lines[i][:indent].isspace() else lines[i])
            i += 1
        i += 1  # the closing fence
        code = "\n".join(body) + "\n"
        found.append(Snippet(path, start + 1, info, code, _setup("\n".join(lines[:start]))))
    return found


def _setup(before: str) -> str:
    """The code of a ``<!-- setup ... -->`` comment that ends right before a fence."""
    before = before.rstrip()
    if not before.endswith("-->"):
        return ""
    m = SETUP.fullmatch(before[before.rfind("<!--") :])
    return m.group("code") if m else ""


ALL = [s for doc in DOCUMENTS for s in snippets(doc)]
RUN = [s for s in ALL if s.info == "python"]
NO_RUN = [s for s in ALL if s.info == "python no-run"]


def test_the_documents_have_python_snippets() -> None:
    assert (ROOT / "README.md") in DOCUMENTS
    assert len(RUN) >= 5, [s.id for s in RUN]
    # Illustrations that cannot run are the exception.
    assert len(NO_RUN) <= max(1, len(RUN) // 5), [s.id for s in NO_RUN]


@pytest.mark.parametrize("snippet", ALL, ids=[s.id for s in ALL])
def test_python_fences_are_spelled_so_that_none_is_skipped(snippet: Snippet) -> None:
    if PYTHON_LIKE.match(snippet.info):
        assert snippet.info in ("python", "python no-run"), (
            f"{snippet.id}: fence ```{snippet.info}: write ```python (run by the tests) "
            f"or ```python no-run (illustration only)"
        )


@pytest.mark.parametrize("snippet", RUN, ids=[s.id for s in RUN])
def test_snippet_runs(snippet: Snippet, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    namespace: dict[str, object] = {"__name__": "__docs__"}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        if snippet.setup:
            exec(compile(snippet.setup, f"{snippet.id} (setup)", "exec"), namespace)
        exec(compile(snippet.code, snippet.id, "exec"), namespace)


def test_snippets_pass_mypy_strict(tmp_path: Path) -> None:
    """Every run snippet, with its setup, type-checks under the project's ``mypy
    --strict`` configuration, against the installed packages' own types (the SDKs'
    param types included): what a user's type checker says of the code they copy."""
    from mypy import api

    names = {}
    for snippet in RUN:
        name = re.sub(r"\W", "_", snippet.id)
        names[name] = snippet
        source = f"{snippet.setup}\n# --- the snippet\n{snippet.code}"
        (tmp_path / f"{name}.py").write_text(source, encoding="utf-8")
    out, err, status = api.run(
        [
            "--config-file",
            str(ROOT / "pyproject.toml"),
            # The cache `make lint` fills (the same configuration): the third-party
            # packages' types are read once.
            "--cache-dir",
            str(ROOT / ".mypy_cache"),
            str(tmp_path),
        ]
    )
    errors = [line for line in out.splitlines() if ": error:" in line]
    readable = []
    for line in errors:
        file = Path(line.split(":", 1)[0]).stem
        readable.append(f"{names[file].id if file in names else file}: {line.split(':', 2)[2]}")
    assert status == 0 and not errors, "\n".join(readable) or out + err
