"""Text the database can store: one home for the NUL-character rule.

PostgreSQL's text cannot hold U+0000 (SQLite can), so text with a NUL is refused on every
backend, with where it is named, before anything is written: a file can be mended and imported
again. The one exception is text a person typed into the labelling form, where a NUL (pasted,
invisible) cannot be found or removed by them: it is kept as a visible U+FFFD instead of failing
their Submit (`visible_nul`)."""

from __future__ import annotations

NUL = "\x00"
REPLACEMENT = "\ufffd"


def nul_problem(value: object, *, where: str) -> str | None:
    """The refusal for text holding a NUL ("{where} contains ..."), else None."""
    if isinstance(value, str) and NUL in value:
        return f"{where} contains a NUL character (U+0000), which cannot be stored"
    return None


def visible_nul(text: str) -> str:
    """Typed text with each NUL replaced by U+FFFD, the mark for a character that was lost."""
    return text.replace(NUL, REPLACEMENT)
