"""A short untrusted text (an annotator's name, a pair id, a study name) placed in a markdown
string, shown as the literal characters it is.

Names come from imported files: `![x](https://tracker.example/p.gif)` in a name made every
maintainer's browser fetch that address from the console, and links or `:red[...]` restyled
it. Every ASCII punctuation character gets CommonMark's backslash escape, which also stops
Streamlit's directives (`:material/...:`, `:color[...]`) and `$` math; line breaks become spaces.
Long model text goes through render.safe_markdown instead.
"""

from __future__ import annotations

import string

_ESCAPES = str.maketrans({c: "\\" + c for c in string.punctuation})


def md_literal(text: object) -> str:
    return " ".join(str(text).split()).translate(_ESCAPES)
