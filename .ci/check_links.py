"""Checks the links of the API reference and of the Markdown docs.

Usage: python .ci/check_links.py [HTML_DIR]

- Every relative link in README.md and docs/*.md names a file of the repository and,
  with a ``#fragment``, a heading of that file (GitHub's anchors: lower case, spaces to
  ``-``, punctuation other than ``-`` and ``_`` dropped).
- With HTML_DIR (``make docs``'s output): every relative ``href`` / ``src`` of every page
  names a file there and, with a ``#fragment``, an ``id`` on that page (anchors of
  private base classes, which pdoc renders inline, excepted).

Links to other sites are not fetched (no network in CI). Exits 1 listing every broken
link.
"""

from __future__ import annotations

import re
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

ROOT = Path(__file__).resolve().parent.parent
MD_LINK = re.compile(r"\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(`{3,}|~{3,})")


def slug(heading: str) -> str:
    text = re.sub(r"[`*_]{1,2}(?=\S)|(?<=\S)[`*_]{1,2}", "", heading).strip().lower()
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    counts: dict[str, int] = {}
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        m = None if fenced else HEADING.match(line)
        if m:
            base = slug(m.group(1))
            n = counts.get(base, 0)
            counts[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
    return found


def markdown_problems() -> list[str]:
    problems = []
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        fenced = False
        for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            if FENCE.match(line):
                fenced = not fenced
            if fenced:
                continue
            for target in MD_LINK.findall(line):
                parts = urlsplit(target)
                if parts.scheme or target.startswith("mailto:"):
                    continue
                file = (doc.parent / unquote(parts.path)).resolve() if parts.path else doc
                where = f"{doc.relative_to(ROOT)}:{number}: {target}"
                if not file.exists():
                    problems.append(f"{where}: no such file")
                elif (
                    parts.fragment and file.suffix == ".md" and parts.fragment not in anchors(file)
                ):
                    problems.append(f"{where}: no heading #{parts.fragment}")
    return problems


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name in ("href", "src"):
                self.links.append(value)
            elif name in ("id", "name"):
                self.ids.add(value)


def _parse(page: Path) -> _Links:
    parser = _Links()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser


def html_problems(out: Path) -> list[str]:
    pages = {p.resolve(): _parse(p) for p in sorted(out.rglob("*.html"))}
    if not pages:
        return [f"{out}: no HTML pages (did the build run?)"]
    problems = []
    for page, parsed in pages.items():
        for link in parsed.links:
            parts = urlsplit(link)
            if parts.scheme or link.startswith(("//", "mailto:", "data:", "javascript:")):
                continue
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            where = f"{page.relative_to(out.resolve())}: {link}"
            if not target.exists():
                problems.append(f"{where}: no such file")
            elif parts.fragment.startswith("_"):
                # pdoc links a member inherited from a private base class (``_Checked``,
                # ``_CallError``) to the base, which it documents only inline: not a
                # page anchor, and not a broken link for a reader.
                continue
            elif parts.fragment and target in pages and parts.fragment not in pages[target].ids:
                problems.append(f"{where}: no id #{parts.fragment}")
    return problems


def main(args: list[str]) -> int:
    problems = markdown_problems()
    if args:
        problems += html_problems(Path(args[0]))
    for p in problems:
        print(f"broken link: {p}", file=sys.stderr)
    print(f"links checked: {len(problems)} broken")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
