"""The README's "Layout" is written from the tree: every dialect folder and Rust file of
``src/providers/``, every Python module and every docs page is named in it."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def layout() -> str:
    readme = (ROOT / "README.md").read_text()
    match = re.search(r"## Layout\n\n```\n(.*?)```", readme, re.S)
    assert match, "README.md has no Layout block"
    return match.group(1)


def test_the_layout_names_every_provider_part() -> None:
    text = layout()
    providers = ROOT / "src" / "providers"
    for path in sorted(providers.iterdir()):
        if path.is_dir():
            assert f"{path.name}/" in text, f"src/providers/{path.name}/ missing from Layout"
        elif path.suffix == ".rs" and path.name not in ("mod.rs", "tests.rs"):
            assert path.name in text, f"src/providers/{path.name} missing from Layout"


def test_the_layout_names_every_python_module_and_docs_page() -> None:
    text = layout()
    for path in sorted((ROOT / "python" / "toolstitch").glob("*.py")):
        if path.name != "__main__.py":
            assert path.name in text, f"python/toolstitch/{path.name} missing from Layout"
    for path in sorted((ROOT / "docs").glob("*.md")):
        assert path.name in text, f"docs/{path.name} missing from Layout"
    for folder in ("src", "tests", "benches", "docs", "fuzz"):
        assert folder in text
