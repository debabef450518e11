"""Every relative link in the README, benchmarks/README.md and docs/ (its reference included)
leads somewhere: the file exists and, with a
`#fragment`, so does a heading with that anchor (GitHub's rule: lower case, punctuation but
hyphens and underscores dropped, spaces to hyphens). Text moves between the README and docs/;
this catches a link left pointing at the old place."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [
    ROOT / "README.md",
    ROOT / "benchmarks" / "README.md",
    *sorted(p for p in (ROOT / "docs").rglob("*.md") if "_build" not in p.relative_to(ROOT).parts),
]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def anchor(heading: str) -> str:
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    return {anchor(m[1]) for m in re.finditer(r"^#+ (.+)$", text, re.M)}


def relative_links(path: Path) -> list[str]:
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    return [
        target
        for target in LINK.findall(text)
        if not re.match(r"[a-z][a-z0-9+.-]*:", target)  # http:, https:, mailto:
    ]


def test_anchor_follows_githubs_rule():
    assert anchor("Serving under a path prefix") == "serving-under-a-path-prefix"
    assert anchor("Launch day: a crowd on the real server (`bench_crowd.py`)") == (
        "launch-day-a-crowd-on-the-real-server-bench_crowdpy"
    )


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(document):
    broken = []
    for target in relative_links(document):
        file_part, _, fragment = target.partition("#")
        linked = (document.parent / file_part).resolve() if file_part else document
        if not linked.exists():
            broken.append(f"{target}: no file {linked.relative_to(ROOT)}")
        elif fragment and linked.suffix == ".md" and fragment not in anchors(linked):
            broken.append(f"{target}: no heading #{fragment} in {linked.name}")
    assert not broken, f"{document.name}: " + "; ".join(broken)


def test_every_page_of_the_site_is_in_a_table_of_contents():
    """A page no toctree lists is unreachable on the site (Sphinx warns, and the strict build
    fails, but only where Sphinx runs)."""
    index = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^([a-z][\w/-]*)$", index, re.M))
    pages = {
        str(p.relative_to(ROOT / "docs").with_suffix(""))
        for p in DOCUMENTS
        if p.is_relative_to(ROOT / "docs") and p.name != "index.md"
    }
    assert pages - listed == set()
