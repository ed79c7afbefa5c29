"""Checks that a wheel carries the package and nothing else.

Usage: python .ci/wheel_contents.py WHEEL...

Every file must be the package's own (``toolstitch/``: the Python modules, the
stubs, ``py.typed``, the compiled extension and the sample recordings that
``toolstitch replay`` replays with their licence notices, ``samples/``) or the
wheel's metadata (``toolstitch-<version>.dist-info/``); every module, stub and
sample under ``python/toolstitch`` must be there. Prints the file list with sizes; exits 1
on anything missing or extra (tests, benches, fixtures, Rust sources, ...).
"""

from __future__ import annotations

import re
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "python" / "toolstitch"
ALLOWED = re.compile(
    r"toolstitch/[A-Za-z_][A-Za-z0-9_]*\.(py|pyi)"
    r"|toolstitch/py\.typed"
    r"|toolstitch/_toolstitch\.[A-Za-z0-9_.-]*\.so"
    r"|toolstitch/samples/[^/]+(/[^/]+)*"
    r"|toolstitch-[^/]+\.dist-info/[^/]+(/[^/]+)*"
)


def check(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as z:
        infos = z.infolist()
    names = {i.filename for i in infos}
    problems = [f"not part of the package: {n}" for n in sorted(names) if not ALLOWED.fullmatch(n)]
    for source in sorted(PACKAGE.iterdir()):
        wanted = source.suffix in (".py", ".pyi") or source.name == "py.typed"
        if wanted and f"toolstitch/{source.name}" not in names:
            problems.append(f"missing from the wheel: toolstitch/{source.name}")
    for sample in sorted(p for p in (PACKAGE / "samples").rglob("*") if p.is_file()):
        name = f"toolstitch/{sample.relative_to(PACKAGE).as_posix()}"
        if name not in names:
            problems.append(f"missing from the wheel: {name}")
    if not any(n.startswith("toolstitch/_toolstitch.") and n.endswith(".so") for n in names):
        problems.append("missing from the wheel: the compiled extension (_toolstitch.*.so)")
    print(f"{wheel.name}: {wheel.stat().st_size:,} bytes, {len(infos)} files")
    for i in infos:
        print(f"  {i.file_size:>10,}  {i.filename}")
    return problems


def main(paths: list[str]) -> int:
    if not paths:
        print(__doc__, file=sys.stderr)
        return 2
    problems = [p for path in paths for p in check(Path(path))]
    for p in problems:
        print(f"error: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
