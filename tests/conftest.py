"""Shared test fixtures: database backends (see tests/db_backends.py) and engine cache clearing."""

from __future__ import annotations

import os

import pytest

from annotate.store.db import dispose_engines
from tests.db_backends import db_backend, db_url, make_db_url, pg_url  # noqa: F401


@pytest.fixture(autouse=True)
def _fresh_engines():
    """Engines are cached per URL and process: never let one leak into the next test."""
    dispose_engines()
    yield
    dispose_engines()


def pytest_xdist_auto_num_workers(config) -> int:
    """`-n auto` (pyproject's addopts): one worker more than the cores (pyproject caps it at
    four). A browser or server test mostly waits on its server and Chromium, so a third worker
    on two cores finished the browser modules 7-12 % sooner in back-to-back runs."""
    return (os.cpu_count() or 1) + 1
