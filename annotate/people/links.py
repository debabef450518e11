"""Personal login links: the address annotators open and the link made from a token.

Kept free of database and web libraries so that the command line's help, which shows the
default address, starts without them."""

from __future__ import annotations

import os

DEFAULT_BASE_URL = "http://localhost:8501"
BASE_URL_VAR = "ANNOTATE_BASE_URL"  # the address annotators open, for links made outside the app


def configured_base_url() -> str | None:
    """$ANNOTATE_BASE_URL when it is set (not empty), else None."""
    return os.environ.get(BASE_URL_VAR, "").strip() or None


def login_link(token: str, base_url: str = DEFAULT_BASE_URL) -> str:
    return f"{base_url.rstrip('/')}/?token={token}"
