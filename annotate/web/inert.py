"""A short untrusted text (an annotator's name, a pair id, a study name) placed in a markdown
string, shown as the literal characters it is.

Names come from imported files: `![x](https://tracker.example/p.gif)` in a name made every
maintainer's browser fetch that address from the console, and links or `:red[...]` restyled
it. Every ASCII punctuation character gets CommonMark's backslash escape, which also stops
Streamlit's directives (`:material/...:`, `:color[...]`) and `$` math; line breaks become spaces.
A backslash is not enough for GFM's bare links (`https://...`, `www.`, `user@host`), which
Streamlit's markdown finds in the text after escapes are decoded: `break_autolinks` puts an
invisible word joiner where they would start. Long model text goes through
render.safe_markdown instead (which uses `break_autolinks` too).
"""

from __future__ import annotations

import re
import string

_ESCAPES = str.maketrans({c: "\\" + c for c in string.punctuation})
WORD_JOINER = "\u2060"  # invisible; stops links, icons and emoji shortcodes from forming
_WWW = re.compile(r"(?i)\bwww(?=\\?\.)")


def break_autolinks(escaped: str) -> str:
    """`escaped` (markdown whose punctuation is already backslash-escaped) with a word joiner
    after every colon (`https:`, `:emoji:`, `:material/...:`), after `www` before its dot and
    after `@`: GFM autolinks, icons and emoji shortcodes cannot form, nothing visible changes."""
    text = escaped.replace(":", ":" + WORD_JOINER)
    text = _WWW.sub("www" + WORD_JOINER, text)
    return text.replace("@", "@" + WORD_JOINER)


def md_literal(text: object) -> str:
    return break_autolinks(" ".join(str(text).split()).translate(_ESCAPES))
