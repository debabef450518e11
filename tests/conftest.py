"""Shared test fixtures: database backends (see tests/db_backends.py) and engine cache clearing."""

from __future__ import annotations

import pytest

import annotate.database  # noqa: F401  (registers the submit function with the schema, as the app does)
from annotate.store.db import dispose_engines
from tests.db_backends import db_backend, db_url, make_db_url, pg_url  # noqa: F401


@pytest.fixture(autouse=True)
def _fresh_engines():
    """Engines are cached per URL and process: never let one leak into the next test."""
    dispose_engines()
    yield
    dispose_engines()
