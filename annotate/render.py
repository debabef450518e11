"""Showing untrusted text (model responses, dataset fields) so that it cannot load anything,
run anything or restyle the page.

Streamlit's markdown already escapes raw HTML and disarms `javascript:` links, but a markdown
image still fetches its URL, and `$math$`, `:color[...]` and `:material/...:` directives change
how text looks. Outside code, every character that could open an image, a link, a directive or
math is backslash-escaped, so it shows as itself; bare URLs, e-mail addresses, icon and emoji
shortcodes are broken up by an invisible word joiner so they stay text; headings are capped
below the page's own. Code spans and fenced blocks are left alone: markdown never interprets
what is inside them.
"""

from __future__ import annotations

import re

_ESCAPE = re.compile(r"([\\\[\]!$:<>*_`#&])")
_FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.DOTALL)
_HEADING = re.compile(r"^( {0,3})(#{1,6})(\s)")
_LIST_OR_QUOTE = re.compile(r"^(\s*)((?:[-*+]|\d{1,9}[.)])\s+|>\s?)")
MAX_HEADING = 4
WORD_JOINER = "\u2060"  # invisible; stops links, icons and emoji shortcodes from forming


def _escape_inline(text: str) -> str:
    """Escape one piece of text outside code spans; keep list markers, emphasis and quotes."""
    text = _ESCAPE.sub(r"\\\1", text)
    # Keep emphasis readable: **bold** and *italic* are harmless.
    text = text.replace(r"\*", "*").replace(r"\_", "_")
    # Streamlit turns `:material/...:` into icons (before parsing) and `:emoji:` into emoji, and
    # GFM links `http://...`, `www.` and `user@host`, all in the text *after* escapes and
    # entities are decoded: a backslash is not enough. An invisible word joiner after every
    # colon, after `www` and after `@` breaks every one of these patterns.
    text = text.replace("\\:", "\\:" + WORD_JOINER)
    text = re.sub(r"(?i)\bwww\.", "www" + WORD_JOINER + ".", text)
    return text.replace("@", "@" + WORD_JOINER)


def _escape_line(line: str) -> str:
    heading = _HEADING.match(line)
    prefix = ""
    if heading:
        level = max(len(heading.group(2)), MAX_HEADING)
        prefix = heading.group(1) + "#" * level + heading.group(3)
        line = line[heading.end() :]
    else:
        marker = _LIST_OR_QUOTE.match(line)
        if marker:
            prefix = marker.group(0)
            line = line[marker.end() :]
    pieces = []
    last = 0
    for span in _CODE_SPAN.finditer(line):
        pieces.append(_escape_inline(line[last : span.start()]))
        pieces.append(span.group(0))
        last = span.end()
    pieces.append(_escape_inline(line[last:]))
    return prefix + "".join(pieces)


def safe_markdown(text: str | None) -> str:
    """Markdown for `st.markdown(..., unsafe_allow_html=False)` that shows `text` inert."""
    if not text:
        return ""
    out: list[str] = []
    fence: str | None = None
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        opening = _FENCE.match(line)
        if fence is None and opening:
            fence = opening.group(2)[0] * len(opening.group(2))
            out.append(line)
        elif fence is not None:
            out.append(line)
            if line.strip().startswith(fence) and not line.strip().strip(fence[0]):
                fence = None
        else:
            out.append(_escape_line(line))
    if fence is not None:
        out.append(fence)  # close an unterminated fence so it cannot swallow the page
    return "\n".join(out)
