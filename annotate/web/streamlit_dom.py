"""Streamlit's page structure that the app relies on, named in one place: the labelling form's
script reads the connection state from the app element (sent with the form's data), the pages'
own CSS and focus script find Streamlit's containers and keyed elements by these names.

None of this is Streamlit's documented API: tests/test_streamlit_dom_browser.py checks each name
against the running Streamlit, so an upgrade that renames one fails there instead of silently
in an annotator's browser (a form that never says it lost the connection, a page whose padding
or retained form reappears).
"""

from __future__ import annotations

# The app's root element, and its attribute that says whether the page is connected (the form
# shows "reconnecting" while it is not, and sends an unanswered event again once it is).
APP = '[data-testid="stApp"]'
CONNECTION_STATE = "data-test-connection-state"
CONNECTED = "CONNECTED"
# The block that holds a page's content (its padding sets where the labelling form starts).
MAIN_BLOCK = ".stMainBlockContainer"
# An element drawn with `key=K` carries the class st-key-K.
KEY_CLASS_PREFIX = "st-key-"
# An element kept from the previous run until the run that replaced it is over.
RETAINED = "data-retained"
# A caption's container (st.caption).
CAPTION = '[data-testid="stCaptionContainer"]'


def keyed(key: str) -> str:
    """The selector of the element drawn with `key=key`."""
    return f".{KEY_CLASS_PREFIX}{key}"


def for_form() -> dict[str, str]:
    """What the labelling form's script needs (form_contract.d.ts, StreamlitDom)."""
    return {"app": APP, "connection_state": CONNECTION_STATE, "connected": CONNECTED}
