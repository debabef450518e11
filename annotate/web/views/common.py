"""Pieces shared by pages."""

from __future__ import annotations

import html

import streamlit as st

from annotate.store.models import Annotator, Study, id_of
from annotate.web import streamlit_dom
from annotate.web.paths import url_prefix
from annotate.web.render import safe_markdown

# Focus a Streamlit button by its key once it is drawn, so that Enter presses it (Streamlit
# buttons take no autofocus). Only when nothing on the page itself has the focus: the focus
# left on the menu's link that opened this page (the console's "Label pairs") is taken too.
# Tries for about 2 seconds.
_FOCUS_JS = """export default function ({ data }) {
  let tries = 0;
  const focus = () => {
    const button = document.querySelector(`.KEY_CLASS_PREFIX${data.key} button`);
    if (button) {
      const active = document.activeElement;
      const onPage = active && active !== document.body && active.closest('[data-testid="stMain"]');
      if (!onPage) button.focus();
    } else if (++tries < 40) setTimeout(focus, 50);
  };
  focus();
}""".replace("KEY_CLASS_PREFIX", streamlit_dom.KEY_CLASS_PREFIX)
_focus = st.components.v2.component("annotate_focus_button", html="<span></span>", js=_FOCUS_JS)


def focus_button(key: str) -> None:
    """Give the button drawn with `key` (letters, digits, _ and -) the keyboard focus."""
    _focus(key=f"focus_{key}", data={"key": key})


def app_prefix() -> str:
    """Where the app is on its host: "" or "/annotate" for server.baseUrlPath = "annotate"."""
    return url_prefix(st.get_option("server.baseUrlPath"))


def sign_out_url() -> str:
    return f"{app_prefix()}/logout"


def sign_out_link() -> None:
    """Our own markup (the prefix is a plain path, see annotate/web/paths.py): a same-tab link, which
    st.link_button is not. The labelling form draws its own; this one is for the pages without
    the form."""
    href = html.escape(sign_out_url(), quote=True)
    st.markdown(f'<a href="{href}" target="_self">Sign out</a>', unsafe_allow_html=True)


def show_guidelines(study: Study) -> None:
    st.title("Guidelines")
    st.markdown(safe_markdown(study.guidelines))


def finished_extras(user: Annotator, study: Study) -> None:
    """What a finished annotator sees besides the thanks: a failed qualification, and a crowd
    platform's completion code with the button back to the platform."""
    from annotate.people.prolific import finish_code
    from annotate.queue.gold import FAILED, qualification_of
    from annotate.web.identity import engine

    failed = qualification_of(engine(), annotator_id=id_of(user)).state == FAILED
    if failed:
        st.info(
            "Your answers did not match what this study needs, so no further pairs will "
            "be shown to you. Thank you for your time."
        )
    code = finish_code(study, screened_out=failed) if user.external_id else None
    if code is not None:
        st.markdown("Your screened-out code:" if failed else "Your completion code:")
        st.code(code.code, language=None)
        st.link_button("Return to Prolific", code.url, type="primary")
