"""Checks that a wheel carries the package and nothing else.

Usage: python .ci/wheel_contents.py WHEEL...

Every file must be the package's own (``toolstitch/`` and its subpackages such as
``toolstitch/proxy/``: the Python modules, the stubs, ``py.typed``, the compiled
extension and the sample recordings that ``toolstitch replay`` replays with their
licence notices, ``samples/``) or the wheel's metadata
(``toolstitch-<version>.dist-info/``); every module, stub and sample under
``python/toolstitch`` must be there. Prints the file list with sizes; exits 1 on
anything missing or extra (tests, benches, fixtures, Rust sources, caches, ...).

The same rules (``problems``) are checked on every test run against the package tree
(tests/test_wheel_contents.py), so a new module or subpackage that a wheel would not
admit fails there, long before a release build.
"""

from __future__ import annotations

import re
import sys
import zipfile
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "python" / "toolstitch"
_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
ALLOWED = re.compile(
    # Modules and stubs, in the package or any subpackage.
    rf"toolstitch/(?:{_IDENT}/)*{_IDENT}\.(?:py|pyi)"
    r"|toolstitch/py\.typed"
    # The compiled extension: .so on Linux and macOS, .pyd on Windows (abi3 names it
    # _toolstitch.abi3.so, or _toolstitch.pyd).
    r"|toolstitch/_toolstitch(?:\.[A-Za-z0-9_-]+)*\.(?:so|pyd)"
    r"|toolstitch/samples/[^/]+(?:/[^/]+)*"
    r"|toolstitch-[^/]+\.dist-info/[^/]+(?:/[^/]+)*"
)
EXTENSION = re.compile(r"toolstitch/_toolstitch(?:\.[A-Za-z0-9_-]+)*\.(?:so|pyd)")


def wanted(package: Path = PACKAGE) -> list[str]:
    """The wheel paths every wheel must carry: each module, stub and ``py.typed`` of the
    package and its subpackages, and each sample."""
    names = []
    for source in sorted(package.rglob("*")):
        if not source.is_file() or "__pycache__" in source.parts:
            continue
        relative = source.relative_to(package)
        is_code = source.suffix in (".py", ".pyi") or source.name == "py.typed"
        if is_code or relative.parts[0] == "samples":
            names.append(f"toolstitch/{relative.as_posix()}")
    return names


def problems(names: Iterable[str], package: Path = PACKAGE) -> list[str]:
    """What is wrong with a wheel whose files are ``names``: anything not the package's
    own, anything of the package's missing, no compiled extension."""
    names = set(names)
    found = [f"not part of the package: {n}" for n in sorted(names) if not ALLOWED.fullmatch(n)]
    found += [f"missing from the wheel: {n}" for n in wanted(package) if n not in names]
    if not any(EXTENSION.fullmatch(n) for n in names):
        found.append("missing from the wheel: the compiled extension (_toolstitch.*.so or .pyd)")
    return found


def check(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as z:
        infos = z.infolist()
    print(f"{wheel.name}: {wheel.stat().st_size:,} bytes, {len(infos)} files")
    for i in infos:
        print(f"  {i.file_size:>10,}  {i.filename}")
    return problems(i.filename for i in infos)


def main(paths: list[str]) -> int:
    if not paths:
        print(__doc__, file=sys.stderr)
        return 2
    found = [p for path in paths for p in check(Path(path))]
    for p in found:
        print(f"error: {p}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
