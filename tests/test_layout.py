"""The guide's "Layout" (docs/guide.md) is written from the tree: every dialect folder and Rust file of
``src/providers/``, every Python module and every docs page is named in it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def layout() -> str:
    guide = (ROOT / "docs" / "guide.md").read_text()
    match = re.search(r"## Layout\n\n```\n(.*?)```", guide, re.S)
    assert match, "docs/guide.md has no Layout block"
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


# ------------------------------------------------------------ the Python layers

PACKAGE = ROOT / "python" / "toolstitch"

# The typed surface over the core; everything else in the package is an application
# built on it (the package's docstring and the README's Layout say the same).
CORE = {"_toolstitch", "blocks", "calls", "errors", "messages"}


def imported_modules(tree: ast.Module, modules: set[str], within: str = "") -> set[str]:
    """Every toolstitch module ``tree`` imports, wherever the import is: at the top, under
    ``if TYPE_CHECKING:``, inside a function, at the bottom. ``"toolstitch"`` is the
    package's ``__init__`` (a name imported from the package that is not a module).
    ``within`` is the sub-package ``tree`` is a module of (its relative imports are its
    own)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level and within:
                continue  # a sub-package's own modules
            # A relative import (``from .x import y``) is one of the package's own.
            module = f"toolstitch.{node.module or ''}" if node.level else node.module or ""
            module = module.rstrip(".")
            if module == "toolstitch":
                targets = [f"toolstitch.{alias.name}" for alias in node.names]
            else:
                targets = [module]
        else:
            continue
        for target in targets:
            parts = target.split(".")
            if parts[0] != "toolstitch":
                continue
            found.add(parts[1] if len(parts) > 1 and parts[1] in modules else "toolstitch")
    return found


def import_graph(package: Path) -> dict[str, set[str]]:
    """Module name (``"toolstitch"`` for ``__init__``) to the toolstitch modules it
    imports, from the source of every ``.py`` and of the core's ``.pyi`` stubs."""
    files = sorted([*package.glob("*.py"), *package.glob("*.pyi")])
    # A sub-package (``proxy/``) is one module of the graph, all its files together.
    subpackages = sorted(p.parent for p in package.glob("*/__init__.py"))
    modules = ({path.stem for path in files} - {"__init__"}) | {p.name for p in subpackages}
    graph: dict[str, set[str]] = {}
    for path in files:
        name = "toolstitch" if path.stem == "__init__" else path.stem
        tree = ast.parse(path.read_text(), filename=str(path))
        graph.setdefault(name, set()).update(imported_modules(tree, modules) - {name})
    for sub in subpackages:
        for path in sorted(sub.glob("*.py")):
            tree = ast.parse(path.read_text(), filename=str(path))
            found = imported_modules(tree, modules, within=sub.name) - {sub.name}
            graph.setdefault(sub.name, set()).update(found)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle (``[a, b, ..., a]``), or ``None``."""
    done: set[str] = set()
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        if node in path:
            return [*path[path.index(node) :], node]
        if node in done:
            return None
        path.append(node)
        for target in sorted(graph.get(node, ())):
            cycle = visit(target)
            if cycle:
                return cycle
        path.pop()
        done.add(node)
        return None

    for node in sorted(graph):
        cycle = visit(node)
        if cycle:
            return cycle
    return None


def test_the_cycle_finder_sees_type_only_lazy_and_bottom_imports(tmp_path: Path) -> None:
    (tmp_path / "__init__.py").write_text("from toolstitch.low import A\n")
    (tmp_path / "low.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from toolstitch.high import B\n"
    )
    (tmp_path / "high.py").write_text("from toolstitch.low import A\n")
    assert find_cycle(import_graph(tmp_path)) == ["high", "low", "high"]
    (tmp_path / "low.py").write_text("def f():\n    from toolstitch import high\n")
    assert find_cycle(import_graph(tmp_path)) == ["high", "low", "high"]
    (tmp_path / "low.py").write_text("A = 1\nfrom .high import B  # noqa: E402\n")
    assert find_cycle(import_graph(tmp_path)) == ["high", "low", "high"]
    (tmp_path / "low.py").write_text("from toolstitch import Assembler\n")
    assert find_cycle(import_graph(tmp_path)) == ["low", "toolstitch", "low"]
    (tmp_path / "low.py").write_text("A = 1\n")
    assert find_cycle(import_graph(tmp_path)) is None


def test_python_modules_import_one_way() -> None:
    graph = import_graph(PACKAGE)
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or ())
    assert not any("toolstitch" in targets for targets in graph.values()), (
        "a module imports from the package's __init__ instead of the module that holds it"
    )


def test_the_core_surface_imports_no_application() -> None:
    graph = import_graph(PACKAGE)
    assert set(graph) >= CORE
    for module in sorted(CORE):
        above = graph[module] - CORE
        assert not above, f"{module} (the typed surface) imports the application(s) {above}"


def test_the_package_docstring_and_the_layout_name_both_layers() -> None:
    doc = (ast.get_docstring(ast.parse((PACKAGE / "__init__.py").read_text())) or "").replace(
        "\n", " "
    )
    surface, _, applications = doc.partition("the applications built on it")
    assert applications, "the package docstring does not say its two layers"
    for module in sorted(set(import_graph(PACKAGE)) - {"toolstitch", "__main__"}):
        layer = surface if module in CORE else applications
        assert f"``{module}``" in layer, f"{module} is not named in its layer of the docstring"
    text = layout()
    core, _, built = text.partition("and what is built on it")
    assert built, "the Layout does not say the Python layers"
    for module in sorted(CORE - {"_toolstitch"}):
        assert f"{module}.py" in core, f"{module}.py is not in the Layout's typed surface"


# ------------------------------------------------------------ the Rust layout

PROVIDERS = ROOT / "src" / "providers"
MAX_LINES = 700


def test_no_rust_file_of_the_providers_reaches_700_lines() -> None:
    long = {
        str(path.relative_to(ROOT)): n
        for path in sorted(PROVIDERS.rglob("*.rs"))
        if (n := len(path.read_text().splitlines())) >= MAX_LINES
    }
    assert long == {}, f"split these into modules below {MAX_LINES} lines: {long}"


def provider_graph() -> dict[str, set[str]]:
    """Each module of ``src/providers/`` (a file, or a folder as one) to the modules
    of ``src/providers/`` its code (tests apart) names: ``super::x`` from a file beside
    ``mod.rs``, ``super::super::x`` or ``crate::providers::x`` from inside a folder.
    ``mod.rs``, which declares them all, is left out."""
    names = {
        path.stem if path.is_file() else path.name
        for path in PROVIDERS.iterdir()
        if path.suffix == ".rs" or path.is_dir()
    } - {"mod", "tests"}
    graph: dict[str, set[str]] = {}
    for name in sorted(names):
        folder = PROVIDERS / name
        files = sorted(folder.rglob("*.rs")) if folder.is_dir() else [PROVIDERS / f"{name}.rs"]
        deps: set[str] = set()
        for path in files:
            code = path.read_text().split("#[cfg(test)]\nmod tests")[0]
            # Comments (doc links included) name modules without using them.
            code = re.sub(r"//[^\n]*", "", code)
            top = "super::super::" if folder.is_dir() and path.name != "mod.rs" else "super::"
            if folder.is_dir() and path.parent != folder:
                continue  # deeper files speak of their own folder
            for pattern in (rf"\b{top}(\w+)", r"crate::providers::(\w+)"):
                deps.update(re.findall(pattern, code))
            # `use super::{a, b::C}` from a file beside mod.rs
            for group in re.findall(rf"\b{top}\{{([^}}]*)\}}", code):
                deps.update(re.findall(r"\b(\w+)::", group))
        graph[name] = (deps & names) - {name}
    return graph


def test_the_provider_modules_import_no_circle() -> None:
    graph = provider_graph()
    assert "common" in graph["state"] or "state" in graph["common"]  # the graph is read
    assert find_cycle(graph) is None, f"an import circle in src/providers/: {find_cycle(graph)}"


def test_the_stream_state_knows_neither_protocol_nor_common() -> None:
    graph = provider_graph()
    assert "protocol" not in graph["state"] and "common" not in graph["state"]
    assert graph["phase"] <= {"error", "fail"} and graph["fail"] <= {"error"}


def test_the_rust_tests_share_one_base64_decoder() -> None:
    own = [
        path.name
        for path in sorted((ROOT / "tests").glob("rust_*.rs"))
        if re.search(r"\bfn (base64|b64)\w*\(", path.read_text())
    ]
    assert own == [], f"use tests/support's base64 functions in {own}"
    assert "pub fn base64_decode" in (ROOT / "tests" / "support" / "mod.rs").read_text()
