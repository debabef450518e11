"""Maintainer console pages (all under /admin...). Each page checks the maintainer role itself,
before anything else: a page script is reachable by its URL whatever the navigation shows."""

from pathlib import Path

import streamlit as st
from streamlit.navigation.page import StreamlitPage

HERE = Path(__file__).parent

# (script, title, icon, url path)
PAGES = [
    ("overview.py", "Progress", ":material/monitoring:", "admin"),
    ("studies.py", "Studies", ":material/tune:", "admin-studies"),
    ("pairs.py", "Pairs", ":material/compare_arrows:", "admin-pairs"),
    ("annotators.py", "Annotators", ":material/group:", "admin-annotators"),
    ("quality.py", "Gold checks", ":material/verified:", "admin-quality"),
    ("agreement.py", "Agreement", ":material/analytics:", "admin-agreement"),
    ("exports.py", "Exports", ":material/download:", "admin-exports"),
]


def admin_pages() -> list[StreamlitPage]:
    return [
        st.Page(str(HERE / script), title=title, icon=icon, url_path=url_path)
        for script, title, icon, url_path in PAGES
    ]
