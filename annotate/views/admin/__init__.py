"""Maintainer console pages (all under /admin). Each page checks the maintainer role itself."""

from pathlib import Path

import streamlit as st

HERE = Path(__file__).parent


def admin_pages() -> list:
    return [
        st.Page(
            str(HERE / "overview.py"),
            title="Console",
            icon=":material/admin_panel_settings:",
            url_path="admin",
        ),
    ]
