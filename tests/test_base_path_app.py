"""Pages under `server.baseUrlPath`: the links they draw stay inside the prefix (AppTest).

Sign out on every labelling page (the form's own link and the pages without the form) and the
console's invite links; tests/test_base_path_browser.py signs in and out through a real server.
"""

from __future__ import annotations

import pytest
import streamlit as st
from sqlmodel import select
from streamlit import config

from annotate.store.db import session
from annotate.store.models import Study
from tests.test_console_app import button, db, maintainer  # noqa: F401  (the fixture `db`)
from tests.test_label_app import data, signed_in, study  # noqa: F401  (the fixture `study`)


@pytest.fixture(params=["annotate", ""], ids=["prefix", "root"])
def base_url_path(request):
    before = config.get_option("server.baseUrlPath")
    config.set_option("server.baseUrlPath", request.param)
    yield request.param
    config.set_option("server.baseUrlPath", before)


def sign_out_hrefs(at) -> list[str]:
    return [m.value for m in at.markdown if "Sign out" in m.value and "href=" in m.value]


def test_every_sign_out_link_stays_in_the_prefix(study, base_url_path):  # noqa: F811
    engine, [(_, token), _] = study
    expected = "/annotate/logout" if base_url_path else "/logout"
    at = signed_in(token)
    assert data(at)["sign_out_url"] == expected  # the form's own link
    with session(engine) as s:
        row = s.exec(select(Study)).one()
        row.guidelines = "Judge for this user."
        s.add(row)
    st.cache_resource.clear()
    links = sign_out_hrefs(signed_in(token))  # the guidelines page, without the form
    assert links == [f'<a href="{expected}" target="_self">Sign out</a>']


def test_console_invite_links_include_the_prefix(db, base_url_path):  # noqa: F811
    at = maintainer(db, "admin-annotators")
    at.text_input(key="invite_name").input("new-person")
    button(at, "Create and show the link").click().run()
    link = at.code[0].value
    expected = "/annotate/?token=" if base_url_path else "/?token="
    assert link.startswith("http") and expected in link
    assert "/annotate/annotate/" not in link
