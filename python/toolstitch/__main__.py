"""``python -m toolstitch``: the command line (``toolstitch replay``)."""

from __future__ import annotations

import sys

from toolstitch.cli import main

if __name__ == "__main__":
    sys.exit(main())
