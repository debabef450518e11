"""Names from imported files are shown inert in the console: no remote image, link or
directive in what the maintainer's browser renders (annotate/web/inert.py)."""

from __future__ import annotations

import string

from annotate.people.auth import create_annotator
from annotate.store.db import session
from annotate.web.inert import WORD_JOINER, md_literal
from tests.test_console_app import db, maintainer  # noqa: F401  (the fixture `db`)

HOSTILE = "![x](http://127.0.0.1:9/p.gif) [site](http://evil.example) :red[big] $x$ <b>"


def test_md_literal_escapes_every_punctuation_and_line_break():
    out = md_literal("a*b\n# c")
    assert out == "a\\*b \\# c"
    for c in string.punctuation:  # (a colon or @ is also followed by a word joiner)
        assert md_literal(c).replace(WORD_JOINER, "") == "\\" + c


def test_an_imported_name_is_inert_in_the_console(db):  # noqa: F811 (the imported fixture)
    with session(db["engine"]) as s:
        create_annotator(s, name=HOSTILE, study_id=db["study_id"])
    at = maintainer(db, "admin-annotators")
    at.selectbox(key="manage_annotator").set_value(HOSTILE).run()
    next(b for b in at.button if b.label == "New link").click().run()
    shown = [e.value for e in at.success]
    assert shown and md_literal(HOSTILE) in shown[0]
    assert "![x](" not in shown[0] and "[site](" not in shown[0] and ":red[" not in shown[0]

    # an error quoting the name (inviting it again) is escaped too
    at.text_input(key="invite_name").set_value(HOSTILE)
    next(b for b in at.button if "Create" in b.label).click().run()
    errors = [e.value for e in at.error]
    assert errors and "![x](" not in errors[0] and md_literal(HOSTILE) in errors[0]
