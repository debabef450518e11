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


# --- HTML for the labelling component -------------------------------------------------------
# The component shows model text as HTML built here, from a small markdown subset whose every
# character is escaped first: paragraphs, line breaks, flat lists, headings (capped below the
# page's own, shown as a bold line), **bold**, *italic*, `code` and fenced code blocks. Links,
# images, raw HTML, tables and setext headings stay literal text, so nothing can load, run or
# restyle, and no invisible characters are needed. Structure is bounded: past
# MAX_STRUCTURED_LINES lines (or for text longer than MAX_STRUCTURED_CHARS) the rest is plain
# text, so pathological markdown (50,000 list markers, a 30,000-column table) costs the browser
# no more than the same bytes of prose.

MAX_STRUCTURED_LINES = 400
MAX_STRUCTURED_CHARS = 40_000
_INLINE_CODE = re.compile(r"`([^`\n]+)`")
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
_ITALIC = re.compile(r"(?<![\w*])\*(?=[^\s*])([^*\n]+?)(?<=\S)\*(?![\w*])")
_BULLET = re.compile(r"^ {0,3}[-*+]\s+(.*)$")
_NUMBERED = re.compile(r"^ {0,3}(\d{1,9})[.)]\s+(.*)$")
_ATX = re.compile(r"^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$")


def _inline_html(text: str) -> str:
    """Escape `text`, then mark up code spans, bold and italic (all on escaped text)."""
    import html

    pieces = []
    last = 0
    for span in _INLINE_CODE.finditer(text):
        pieces.append(_emphasis(html.escape(text[last : span.start()], quote=True)))
        pieces.append(f"<code>{html.escape(span.group(1), quote=True)}</code>")
        last = span.end()
    pieces.append(_emphasis(html.escape(text[last:], quote=True)))
    return "".join(pieces)


def _emphasis(escaped: str) -> str:
    escaped = _BOLD.sub(r"<strong>\1</strong>", escaped)
    return _ITALIC.sub(r"<em>\1</em>", escaped)


def safe_html(text: str | None) -> str:
    """`text` as inert HTML (see above): safe to set as innerHTML inside the component."""
    import html

    if not text:
        return ""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    structured = lines if len(text) <= MAX_STRUCTURED_CHARS else []
    structured = structured[:MAX_STRUCTURED_LINES]
    out: list[str] = []
    paragraph: list[str] = []
    list_kind: str | None = None
    fence: str | None = None
    code: list[str] = []

    def flush_paragraph() -> None:
        if paragraph:
            out.append("<p>" + "<br>".join(_inline_html(line) for line in paragraph) + "</p>")
            paragraph.clear()

    def close_list() -> None:
        nonlocal list_kind
        if list_kind:
            out.append(f"</{list_kind}>")
            list_kind = None

    for line in structured:
        if fence is not None:
            if line.strip().startswith(fence) and not line.strip().strip(fence[0]):
                out.append("<pre><code>" + html.escape("\n".join(code)) + "</code></pre>")
                fence, code = None, []
            else:
                code.append(line)
            continue
        opening = _FENCE.match(line)
        if opening:
            flush_paragraph()
            close_list()
            fence = opening.group(2)[0] * len(opening.group(2))
            continue
        if not line.strip():
            flush_paragraph()
            close_list()
            continue
        bullet, numbered, heading = _BULLET.match(line), _NUMBERED.match(line), _ATX.match(line)
        if bullet or numbered:
            flush_paragraph()
            kind = "ul" if bullet else "ol"
            if list_kind != kind:
                close_list()
                start = f' start="{int(numbered.group(1))}"' if numbered else ""
                out.append(f"<{kind}{start}>")
                list_kind = kind
            item = bullet.group(1) if bullet else numbered.group(2)
            out.append(f"<li>{_inline_html(item)}</li>")
        elif heading:
            flush_paragraph()
            close_list()
            out.append(f'<p class="heading">{_inline_html(heading.group(1))}</p>')
        else:
            close_list()
            paragraph.append(line)
    if fence is not None:
        out.append("<pre><code>" + html.escape("\n".join(code)) + "</code></pre>")
    flush_paragraph()
    close_list()
    rest = lines[len(structured) :]
    if rest:
        out.append('<div class="plain">' + html.escape("\n".join(rest)) + "</div>")
    return "".join(out)
