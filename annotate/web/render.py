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

import hashlib
import html
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence

from markdown_it import MarkdownIt
from markdown_it.token import Token

from annotate.web.inert import break_autolinks

_ESCAPE = re.compile(r"([\\\[\]!$:<>*_`#&])")
_FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.DOTALL)
_HEADING = re.compile(r"^( {0,3})(#{1,6})(\s)")
_LIST_OR_QUOTE = re.compile(r"^(\s*)((?:[-*+]|\d{1,9}[.)])\s+|>\s?)")
MAX_HEADING = 4


def _escape_inline(text: str) -> str:
    """Escape one piece of text outside code spans; keep list markers, emphasis and quotes."""
    text = _ESCAPE.sub(r"\\\1", text)
    # Keep emphasis readable: **bold** and *italic* are harmless.
    text = text.replace(r"\*", "*").replace(r"\_", "_")
    # Streamlit turns `:material/...:` into icons (before parsing) and `:emoji:` into emoji, and
    # GFM links `http://...`, `www.` and `user@host`, all in the text *after* escapes and
    # entities are decoded: a backslash is not enough (inert.break_autolinks, the one rule).
    return break_autolinks(text)


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
# The component shows model text as HTML built here. markdown-it-py parses the text as
# CommonMark with raw HTML, links, images, autolinks, link reference definitions, entities and
# setext headings switched off (they stay literal text), and `_html` writes the token stream
# out through a fixed whitelist: paragraphs, line breaks, lists, quotes, headings (capped below
# the page's own, shown as a bold line), **bold**, *italic*, `code`, code blocks and rules.
# Every text is escaped; no attribute but an ordered list's number and the heading class is
# ever written, so nothing can load, run or restyle, and no invisible characters are needed.
# Task list items (`- [ ]`, `- [x]`) show a box character, not brackets.
#
# Cost is linear in the text's length (markdown-it's parser has no backtracking; checked by
# tests/test_render.py) and bounded: structure only for the first MAX_STRUCTURED_LINES lines,
# MAX_STRUCTURED_CHARS characters and MAX_MARKUP_CHARS characters that can open markup (the
# parser's cost is per token: 40,000 characters of `**a ` cost 0.3 s, the same length of prose
# a fiftieth of that), nesting only MAX_NESTING deep (deeper text makes the whole text plain);
# the rest is plain escaped text. Rendered HTML is cached by a hash of the
# text (a pair's text is the same on every page run and for every annotator), so a page run
# does not render again.

MAX_STRUCTURED_LINES = 400
MAX_STRUCTURED_CHARS = 40_000
MAX_MARKUP_CHARS = 4_000
MAX_NESTING = 20
_NOT_MARKUP = str.maketrans(dict.fromkeys("*_`[]!<>&\\#-+>|~", None))
# Rendered HTML kept, in characters, each entry counted ENTRY_CHARS more for its key and
# bookkeeping: about as many bytes of memory. Real-layout pairs render to about 3,200 characters
# (without past posts, which are rendered when opened), so this holds about 1,000 pairs, several
# times what a crowd of 200 works on at once. Sized to the pairs in use, not to every pair ever
# shown: a replica that kept serving new pairs grew with the cache (issue 22).
CACHE_CHARS = 4_000_000
ENTRY_CHARS = 200
TASK_BOXES = {"[ ] ": "\u2610 ", "[x] ": "\u2611 ", "[X] ": "\u2611 "}

_PARSER = (
    MarkdownIt(
        "commonmark",
        {"html": False, "linkify": False, "typographer": False, "maxNesting": MAX_NESTING},
    )
    .disable(["link", "image", "autolink", "html_inline", "html_block", "entity", "reference"])
    .disable(["lheading"])
)
_BLOCK_TAGS = {
    "paragraph_open": "<p>",
    "paragraph_close": "</p>",
    "bullet_list_open": "<ul>",
    "bullet_list_close": "</ul>",
    "ordered_list_close": "</ol>",
    "list_item_open": "<li>",
    "list_item_close": "</li>",
    "blockquote_open": "<blockquote>",
    "blockquote_close": "</blockquote>",
    "heading_open": '<p class="heading">',
    "heading_close": "</p>",
    "hr": "<hr>",
}
_INLINE_TAGS = {
    "strong_open": "<strong>",
    "strong_close": "</strong>",
    "em_open": "<em>",
    "em_close": "</em>",
    "hardbreak": "<br>",
}
# A single newline inside a paragraph (CommonMark's soft break). Text written in a chat (the
# pairs' questions, responses, posts) means its newlines: a line break. A document written as
# markdown (a study's guidelines) is often hard-wrapped at a fixed width in its source: there a
# soft break is a space, as CommonMark says, or every source line shows as a line of its own.
SOFT_BREAKS = {"line": "<br>", "space": "\n"}


def _escape(text: str) -> str:
    return html.escape(text, quote=True)


def _inline(children: Sequence[Token] | None, *, task_item: bool, soft_break: str) -> str:
    out = []
    for i, token in enumerate(children or ()):
        if token.type == "text":
            text = token.content
            if task_item and i == 0 and text[:4] in TASK_BOXES:
                text = TASK_BOXES[text[:4]] + text[4:]
            out.append(_escape(text))
        elif token.type == "code_inline":
            out.append(f"<code>{_escape(token.content)}</code>")
        elif token.type == "softbreak":
            out.append(soft_break)
        elif token.type in _INLINE_TAGS:
            out.append(_INLINE_TAGS[token.type])
        else:  # anything else the parser might make: its text, escaped
            out.append(_escape(token.content))
    return "".join(out)


def _html(tokens: Sequence[Token], *, soft_break: str) -> str:
    out = []
    item_start = False
    for token in tokens:
        kind = token.type
        if kind == "inline":
            out.append(_inline(token.children, task_item=item_start, soft_break=soft_break))
        elif kind in ("fence", "code_block"):
            out.append(f"<pre><code>{_escape(token.content.rstrip(chr(10)))}</code></pre>")
        elif kind == "ordered_list_open":
            start = token.attrGet("start")
            out.append(f'<ol start="{int(start) if start is not None else 1}">')
        elif kind in _BLOCK_TAGS:
            if not token.hidden:  # a tight list's paragraphs are hidden
                out.append(_BLOCK_TAGS[kind])
        elif token.content:
            out.append(f"<p>{_escape(token.content)}</p>")
        if kind != "inline" and not (kind == "paragraph_open" and item_start):
            item_start = kind == "list_item_open"
    return "".join(out)


def _plain(text: str) -> str:
    return '<div class="plain">' + _escape(text) + "</div>" if text else ""


def _render(text: str, *, soft_break: str) -> str:
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    count, size, markup = 0, 0, 0
    for line in lines[:MAX_STRUCTURED_LINES]:
        size += len(line) + 1
        markup += len(line) - len(line.translate(_NOT_MARKUP))
        if size > MAX_STRUCTURED_CHARS or markup > MAX_MARKUP_CHARS:
            break
        count += 1
    structured, rest = "\n".join(lines[:count]), "\n".join(lines[count:])
    tokens = _PARSER.parse(structured)
    if any(token.level >= MAX_NESTING - 1 for token in tokens):
        return _plain("\n".join(lines))  # nested past the limit: plain, nothing dropped
    return _html(tokens, soft_break=soft_break) + _plain(rest)


class _Cache:
    """Rendered HTML by a hash of the text, least recently used out first, at most `budget`
    characters of HTML in all (ENTRY_CHARS more for each entry)."""

    def __init__(self, budget: int):
        self._budget = budget
        self._size = 0
        self._items: OrderedDict[bytes, str] = OrderedDict()
        self._lock = threading.Lock()

    def get_or_render(self, text: str, *, soft_break: str) -> str:
        key = hashlib.blake2b(
            text.encode("utf-8", "surrogatepass"), digest_size=16, person=soft_break.encode()
        ).digest()
        with self._lock:
            shown = self._items.get(key)
            if shown is not None:
                self._items.move_to_end(key)
                return shown
        shown = _render(text, soft_break=soft_break)
        with self._lock:
            if key not in self._items and len(shown) + ENTRY_CHARS <= self._budget:
                self._items[key] = shown
                self._size += len(shown) + ENTRY_CHARS
                while self._size > self._budget:
                    _, dropped = self._items.popitem(last=False)
                    self._size -= len(dropped) + ENTRY_CHARS
        return shown

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._size = 0


_CACHE = _Cache(CACHE_CHARS)


def safe_html(text: str | None, *, newline: str = "line") -> str:
    """`text` as inert HTML (see above): safe to set as innerHTML inside the component.
    `newline`: what a single newline inside a paragraph shows as, "line" (a line break: text
    from a chat) or "space" (a hard-wrapped markdown document: the guidelines)."""
    if not text:
        return ""
    return _CACHE.get_or_render(text, soft_break=SOFT_BREAKS[newline])
