"""Shows the progress of ``pip install --verbose`` of the package without pip's noise.

Reads pip's output on stdin and prints, as they come, cargo's progress (``Compiling
<crate>``, ``Finished``), maturin's result and pip's outcome, each line flushed so a
long build is never silent; everything else is kept and printed in full only when
pip fails (the exit status is pip's, read from its last lines). Used by ``make run``.
"""

from __future__ import annotations

import re
import sys

SHOWN = re.compile(
    r"^\s*(Compiling|Finished|Building|Updating|Downloaded|Downloading)\s"
    r"|Built wheel|Successfully installed|Installing collected|^\s*error\b|^ERROR\b",
)
FAILED = re.compile(r"^ERROR:|error: subprocess-exited-with-error|Failed to build")


def main() -> int:
    kept: list[str] = []
    failed = False
    crates = 0
    for line in sys.stdin:
        kept.append(line)
        failed = failed or bool(FAILED.search(line))
        text = line.strip()
        if SHOWN.search(text):
            if text.startswith("Compiling"):
                crates += 1
                text = f"[{crates:>3}] {text}"
            print(f"   {text}", flush=True)
    if failed:
        sys.stdout.writelines(kept)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
