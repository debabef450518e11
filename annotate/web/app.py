"""Entry script: navigation between the labelling page and the maintainer console.

Page scripts live in `views/`, not `pages/`: Streamlit serves anything in `pages/` by URL
whatever the navigation says. Every page checks who is signed in itself.
"""

from pathlib import Path

import streamlit as st

from annotate.web.identity import current_user
from annotate.web.views import HOME_PATH, LABEL_PATH
from annotate.web.views.admin import admin_pages
from annotate.web.widget_state import forget_gone_widgets

HERE = Path(__file__).parent
LABEL_SCRIPT = str(HERE / "views" / "label.py")

# A file of the package, served by the app itself: a `:material/...:` icon would make every
# page load ask a font CDN for the favicon.
st.set_page_config(
    page_title="Preference pairs", page_icon=str(HERE / "static" / "icon.png"), layout="wide"
)
# Before this run draws anything: what the previous run let go of (the previous pair's form).
forget_gone_widgets()

user = current_user()
if user is not None and user.is_admin:
    # The maintainer's link (`/?token=`) lands on the console at /admin; the labelling page
    # stays in the menu at /label.
    console = admin_pages()
    label = st.Page(LABEL_SCRIPT, title="Label pairs", icon=":material/rule:", url_path=LABEL_PATH)
    landing = st.Page(
        lambda: st.switch_page(console[0]),
        title="Console",
        url_path=HOME_PATH,
        default=True,
        visibility="hidden",
    )
    navigation = st.navigation([landing, *console, label], position="top")
else:
    # Only the console's front door (/admin, where it asks for a maintainer's sign-in): the
    # navigation every visitor receives does not list the console's pages.
    label = st.Page(LABEL_SCRIPT, title="Label pairs", icon=":material/rule:", default=True)
    navigation = st.navigation([label, admin_pages()[0]], position="hidden")
navigation.run()
