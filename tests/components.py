"""The one rule for tests that need an outside component (PostgreSQL, Chromium, nginx): where
it is missing they skip with the reason, unless its switch says `require` (as `.ci/run` sets
every switch), and then they fail with the reason, so that nothing skips in CI."""

import pytest


def require_component(reason: str | None, *, switch: str, mode: str) -> None:
    """`reason`: why the component cannot be used here, or None when it can."""
    if reason is None:
        return
    if mode == "require":
        pytest.fail(f"{reason}, and {switch}=require", pytrace=False)
    pytest.skip(reason)
