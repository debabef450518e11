"""Adaptive overlap in a real browser: three annotators on a six-pair study with
`configure-study --adaptive 2-3 --agreement-sample 0`. The first two agree on three pairs and
split on three; the third is then served exactly the three split pairs."""

from __future__ import annotations

import json
import re
import subprocess

import pytest
from sqlmodel import col, select

from annotate.engine import get_engine
from annotate.people.auth import create_annotator
from annotate.store.db import session
from annotate.store.models import Annotation, Assignment, Pair
from annotate.studies.catalog import get_or_create_study
from annotate.studies.pair_import import import_pairs
from tests.browser import (  # noqa: F401  (the fixtures `browser` and `new_page`)
    AppServer,
    annotate_command,
    browser_fixture,
    expect,
    goto,
    new_page_fixture,
    wait_idle,
)
from tests.factories import pair_record

pytestmark = pytest.mark.browser
STUDY = "adaptive-browser"
SPLIT = {"p1", "p3", "p5"}  # the first two annotators disagree on these
SCREEN = {"width": 1440, "height": 900}


@pytest.fixture(scope="module")
def site(tmp_path_factory, browser):  # `browser` first: skip before starting a server
    folder = tmp_path_factory.mktemp("adaptive_browser")
    db_url = f"sqlite:///{folder / 'app.sqlite'}"
    pairs = folder / "pairs.jsonl"
    pairs.write_text("\n".join(json.dumps(pair_record(i)) for i in range(6)) + "\n")
    engine = get_engine(db_url)
    import_pairs(engine, pairs, study_name=STUDY)
    configured = subprocess.run(
        [*annotate_command(), "configure-study", STUDY, "--db", db_url, "--adaptive", "2-3",
         "--agreement-sample", "0", "--no-ties"],
        capture_output=True,
        text=True,
    )  # fmt: skip
    assert configured.returncode == 0, configured.stderr
    assert re.search(r"adaptive\s+2-3", configured.stdout)
    tokens, ids = {}, {}
    with session(engine) as s:
        study = get_or_create_study(s, STUDY)
        study.dimensions, study.reasons = [], []  # the choice alone: a short test
        study.show_narrative = study.show_profile = False
        s.add(study)
        for name in ("first", "second", "third"):
            annotator, token = create_annotator(s, name=f"adaptive-{name}", study_id=study.id)
            annotator.guidelines_seen = True
            tokens[name], ids[name] = token, annotator.id
    with AppServer(db_url) as server:
        yield {"engine": engine, "server": server, "tokens": tokens, "ids": ids}


def _open(engine, annotator_id: int) -> tuple[str, str] | None:
    """(pair key, slot of chosen) of the annotator's open pair, None when there is none."""
    with session(engine) as s:
        row = s.exec(
            select(Pair.pair_key, Assignment.chosen_position)
            .join(Pair, col(Pair.id) == Assignment.pair_id)
            .where(Assignment.annotator_id == annotator_id, Assignment.status == "active")
        ).first()
    return None if row is None else (row[0], row[1])


def _answered(engine, annotator_id: int) -> int:
    with session(engine) as s:
        return len(
            s.exec(select(Annotation.id).where(Annotation.annotator_id == annotator_id)).all()
        )


def label_in_browser(page, site, who: str, wants) -> list[str]:
    """Sign in as `who` and answer every pair served: `wants(pair_key)` is chosen or rejected.
    Returns the pair keys served, in order."""
    engine, annotator_id = site["engine"], site["ids"][who]
    goto(page, site["server"].login_url(site["tokens"][who]))
    wait_idle(page)
    served: list[str] = []
    while True:
        current = _open(engine, annotator_id)
        if current is None:
            expect(
                page.get_by_text("You have labelled every pair available to you")
            ).to_be_visible()
            return served
        key, chosen_slot = current
        served.append(key)
        expect(page.locator('[data-part="question"]:visible')).to_be_visible()
        other = "B" if chosen_slot == "A" else "A"
        slot = chosen_slot if wants(key) == "chosen" else other
        page.keyboard.press(slot.lower())
        page.keyboard.press("s")
        before = len(served) - 1
        for _ in range(600):  # the answer stored, then the page's run over
            if _answered(engine, annotator_id) > before:
                break
            page.wait_for_timeout(100)
        assert _answered(engine, annotator_id) == before + 1, f"{who}: {key} was not stored"
        wait_idle(page)
        assert len(served) < 10


def test_the_third_annotator_gets_exactly_the_split_pairs(site, new_page):
    first = label_in_browser(new_page(viewport=SCREEN), site, "first", lambda key: "chosen")
    second = label_in_browser(
        new_page(viewport=SCREEN),
        site,
        "second",
        lambda key: "rejected" if key in SPLIT else "chosen",
    )
    assert sorted(first) == sorted(second) == [f"p{i}" for i in range(6)]
    third = label_in_browser(new_page(viewport=SCREEN), site, "third", lambda key: "chosen")
    assert sorted(third) == sorted(SPLIT)
    with session(site["engine"]) as s:
        counts = dict(
            s.exec(
                select(Pair.pair_key, Pair.n_assigned).where(
                    Pair.pair_key.in_([f"p{i}" for i in range(6)])
                )
            ).all()
        )
    assert counts == {f"p{i}": 3 if f"p{i}" in SPLIT else 2 for i in range(6)}
