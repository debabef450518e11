"""Entry script: navigation between the labelling page and the maintainer console.

Page scripts live in `views/`, not `pages/`: Streamlit serves anything in `pages/` by URL
whatever the navigation says. Every page checks who is signed in itself.
"""

from pathlib import Path

import streamlit as st

from annotate.access import current_user
from annotate.views.admin import admin_pages

HERE = Path(__file__).parent

st.set_page_config(page_title="Preference pairs", page_icon=":material/compare:", layout="wide")

user = current_user()
label = st.Page(
    str(HERE / "views" / "label.py"), title="Label pairs", icon=":material/rule:", default=True
)
pages = [label, *admin_pages()]
navigation = st.navigation(
    pages, position="top" if user is not None and user.is_admin else "hidden"
)
navigation.run()
