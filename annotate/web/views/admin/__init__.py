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
    ("review.py", "Review", ":material/rate_review:", "admin-review"),
    ("exports.py", "Exports", ":material/download:", "admin-exports"),
]


def url_paths() -> list[str]:
    """Every page's URL path: the console's and the others (annotate/web/views)."""
    from annotate.web.views import HOME_PATH, LABEL_PATH

    return [LABEL_PATH, HOME_PATH, *(url_path for *_, url_path in PAGES)]


def admin_pages() -> list[StreamlitPage]:
    return [
        st.Page(str(HERE / script), title=title, icon=icon, url_path=url_path)
        for script, title, icon, url_path in PAGES
    ]
