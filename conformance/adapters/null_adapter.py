"""The null reassembler: it hands its application nothing, and never refuses.

The floor every score is read against: it passes every case that expects no client
call (``calls: []``) and every refuse case, and misses every call.
"""

from __future__ import annotations

from suite import Case, Outcome

NAME = "null"


def reassemble(case: Case) -> Outcome:
    return Outcome()
