from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
REAL_FIXTURES = ROOT / "tests" / "fixtures" / "real"


@pytest.fixture(scope="session")
def real_fixtures() -> Path:
    """The real recorded provider streams (tests/fixtures/real, provenance in tests/fixtures/PROVENANCE.md)."""
    if not REAL_FIXTURES.is_dir():
        pytest.fail(f"the real recordings are missing: expected {REAL_FIXTURES}")
    return REAL_FIXTURES
