from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
REAL_FIXTURES = ROOT.parent / "shared" / "fixtures" / "real"


@pytest.fixture(scope="session")
def real_fixtures() -> Path:
    """The real recorded provider streams (../shared/fixtures/real beside the checkout)."""
    if not REAL_FIXTURES.is_dir():
        pytest.fail(f"the real recordings are missing: expected {REAL_FIXTURES}")
    return REAL_FIXTURES
