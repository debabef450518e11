"""The builder's loop in Chromium at 1440x900 (issue 47): a maintainer opens Review, reads a
split pair with its three answers, revises its rejected response, and an annotator is then
served the new version; another pair is dropped and disappears from `--export-valid`; axe finds
nothing moderate or worse on the page. The page's screenshot is docs/screenshots/review.png
(ANNOTATE_SCREENSHOTS=update refreshes it)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

import pytest

from annotate.engine import get_engine
from annotate.people.auth import create_annotator
from annotate.store.db import session
from annotate.store.models import id_of
from annotate.studies.annotation_import import import_annotation_rows
from annotate.studies.catalog import get_study, update_study_options
from annotate.studies.pair_import import import_pairs
from tests.browser import (  # noqa: F401  (the fixtures `browser` and `new_page`)
    AppServer,
    browser_fixture,
    expect,
    goto,
    new_page_fixture,
    rerun,
    save_screenshot,
    wait_idle,
)
from tests.factories import pair_record, write_jsonl
from tests.processes import run_annotate
from tests.test_form_a11y_browser import axe_violations

pytestmark = pytest.mark.browser

WIDE = {"width": 1440, "height": 900}
NEW_REJECTED = (
    "Get the Heritage leather messenger at 340 dollars: full-grain hide, brass buckles, made to "
    "last a lifetime. A student budget is no reason to settle for canvas."
)
# p0 and p1 valid but split (two chose the chosen response, one the rejected), p2 flipped, p3
# no consensus, p4 not labelled yet
ANSWERS = {
    "p0": ("chosen", "rejected", "chosen"),
    "p1": ("chosen", "chosen", "rejected"),
    "p2": ("chosen", "rejected", "rejected"),
    "p3": ("chosen", "rejected", "tie"),
}
COMMENTS = {
    "ann0": "Fits the budget they mention, and they said they hike in the rain.",
    "ann1": "Both are fine; the first one is cheaper and lighter.",
    "ann2": "The leather one sounds nicer, honestly. Hard to choose.",
}
# The pair the screenshot shows: shaped like a real record (four rubric aspects, responses of
# about 90 words, past posts).
SPLIT_PAIR = {
    "question": "Which bag should I take on a week of day hikes? I'm on a student budget.",
    "narrative": "I hike most weekends near home and I'm saving for a trip next summer, so I "
    "want something that lasts without costing much.",
    "profile": [
        {"id": f"post-{k}", "category": "Lifestyle", "text": f"Post {k}: another wet hike."}
        for k in range(140)
    ],
    "rubric_aspects": [
        {"aspect": "Stays under $50", "evidence": "I'm on a student budget", "reason": "money"},
        {"aspect": "Light enough for a full day", "evidence": "day hikes", "reason": "comfort"},
        {"aspect": "Copes with rain", "evidence": "another wet hike", "reason": "weather"},
        {"aspect": "Lasts for years", "evidence": "lasts without costing much", "reason": "value"},
    ],
    "chosen": "Go for a 20-litre ripstop daypack around $35: it weighs under 500 g, fits a "
    "water bottle, a rain shell and lunch, and the padded straps stay comfortable over a full "
    "day. Pick one with a rain cover tucked in the base, since your posts mention wet hikes, "
    "and taped seams if you can find them at that price. Nylon packs like this routinely last "
    "five or more seasons; rinse it after muddy trips and it will still be going on your trip "
    "next summer without eating into your savings.",
    "rejected": "Treat yourself to a waxed-canvas rucksack with leather trim, around $180: it "
    "looks great on the trail and in town, and the thick canvas feels reassuringly solid. It "
    "weighs about 1.6 kg empty, so it is best for shorter walks, and the waxed finish needs "
    "re-proofing a couple of times a season to keep the rain out. Quality like this is an "
    "investment, and if you want one bag for hiking, commuting and travel, spending more now "
    "saves buying several cheaper ones later.",
}


def _build(db_url: str, tmp_path) -> dict[str, str]:
    engine = get_engine(db_url)
    records = [pair_record(i) for i in range(5)]
    records[1] = {**records[1], **SPLIT_PAIR}
    import_pairs(engine, write_jsonl(tmp_path / "pairs.jsonl", records))
    rows = [
        {
            "pair_id": pair,
            "annotator": f"ann{i}",
            "preference": preference,
            "chosen_position": "AB"[i % 2],
            "main_reason": ("personal_fit", "both", "general_quality")[i],
            "comment": COMMENTS[f"ann{i}"],
            "seconds": 40.0 + 17 * i,
            "submitted_at": datetime(2026, 11, 20 + i, 10 + i, 5 * i, tzinfo=UTC),
            **{
                f"{d}_{s}": 4 + (k % 2 if s == "chosen" else (i + k + 1) % 2)
                for k, d in enumerate(("correctness", "relevance", "helpfulness"))
                for s in ("chosen", "rejected")
            },
        }
        for pair, answers in ANSWERS.items()
        for i, preference in enumerate(answers)
    ]
    with session(engine) as s:
        study = get_study(s, "default")
        update_study_options(s, study, overlap_target=3)
        study_id = id_of(study)
    import_annotation_rows(engine, study_id=study_id, rows=rows)
    with session(engine) as s:
        _, boss = create_annotator(s, name="maintainer", study_id=study_id, is_admin=True)
        _, worker = create_annotator(s, name="worker", study_id=study_id)
    return {"maintainer": boss, "worker": worker}


@pytest.fixture(scope="module")
def site(tmp_path_factory, browser):  # `browser` first: skip before starting a server
    tmp = tmp_path_factory.mktemp("review")
    db_url = f"sqlite:///{tmp / 'review.db'}"
    tokens = _build(db_url, tmp)
    with AppServer(db_url) as server:
        yield server, tokens, db_url, tmp


def _open_review(page, server) -> None:
    goto(page, f"{server.url}/admin-review")
    expect(page.get_by_role("heading", name="Review", exact=True)).to_be_visible()
    wait_idle(page)


def _choose_pair(page, key: str) -> None:
    chooser = page.get_by_role("combobox", name="Pair to review")
    chooser.scroll_into_view_if_needed()
    with rerun(page):
        chooser.click()
        chooser.press_sequentially(key)  # the list shows the pairs matching what is typed
        page.get_by_role("option", name=key, exact=True).click()
    expect(page.get_by_role("heading", name=f"Pair {key}, version ")).to_be_visible()


def _decide(page, label: str) -> None:
    with rerun(page):
        page.get_by_text(label, exact=False).first.click()


def test_the_builders_loop(site, new_page):
    server, tokens, db_url, tmp = site
    page = new_page(viewport=WIDE)
    goto(page, server.login_url(tokens["maintainer"]))
    _open_review(page, server)

    # the split pair: its three answers with their reasons, comments and seconds
    _choose_pair(page, "p1")
    answers = page.locator('[data-testid="stDataFrame"]').nth(1)
    expect(page.get_by_text("3 answers to this version")).to_be_visible()
    expect(page.get_by_text("2 chose the chosen response, 1 the rejected one")).to_be_visible()
    for comment in COMMENTS.values():  # the grid draws on a canvas: its text is in the DOM
        expect(answers).to_contain_text(comment[:20])
    # the pair's title at the top of the window: its texts, answers and verdict in one view
    page.get_by_role("heading", name="Pair p1, version 1").evaluate(
        "(heading) => heading.scrollIntoView({block: 'start'})"
    )
    page.wait_for_timeout(300)
    save_screenshot(page, "review.png")

    _expect_accessible(page, "a pair with its answers")

    # revise the rejected response in the page
    _decide(page, "Revise (edit the responses or rubric")
    _expect_accessible(page, "the revision's editors")
    rejected = page.get_by_label("Rejected response")
    rejected.fill(NEW_REJECTED)
    rejected.press("Control+Enter")  # Streamlit takes a text area's value on blur or Ctrl+Enter
    wait_idle(page)
    with rerun(page):
        page.get_by_role("button", name="Record decision").click()
    expect(page.get_by_text("Pair p1 (version 1) revised")).to_be_visible()
    expect(page.get_by_role("heading", name="Pair p1, version 2")).to_be_visible()

    # an annotator is served the new version (the least covered pair now)
    worker = new_page(viewport=WIDE)
    goto(worker, server.login_url(tokens["worker"]))
    expect(worker.locator('[data-part="question"]:visible')).to_contain_text("week of day hikes")
    shown = worker.locator("section.response:visible").filter(has_text=NEW_REJECTED[:40])
    expect(shown).to_have_count(1)

    # another pair, valid by its majority, dropped: it leaves --export-valid
    before = _valid_ids(db_url, tmp, "before")
    assert "p0" in before
    _choose_pair(page, "p0")
    _decide(page, "Drop (does not ship)")
    category = page.get_by_role("combobox", name="What is wrong with it")
    with rerun(page):
        category.click()
        page.get_by_role("option", name="low quality", exact=True).click()
    note = page.get_by_label("Note (optional)")
    note.fill("the chosen response recommends a bag that does not exist")
    note.press("Control+Enter")
    wait_idle(page)
    with rerun(page):
        page.get_by_role("button", name="Record decision").click()
    expect(page.get_by_text("Pair p0 (version 1) dropped")).to_be_visible()
    after = _valid_ids(db_url, tmp, "after")
    assert before - after == {"p0"}


def _expect_accessible(page, what: str) -> None:
    wait_idle(page)
    found = [v for v in axe_violations(page) if v["impact"] in ("moderate", "serious", "critical")]
    assert found == [], f"{what}: {found}"


def test_at_1280x720_the_queue_and_the_pair_still_fit(site, new_page, tmp_path):
    server, tokens, _, _ = site
    page = new_page(viewport={"width": 1280, "height": 720})
    goto(page, server.login_url(tokens["maintainer"]))
    _open_review(page, server)
    _expect_accessible(page, "the queue at 1280x720")
    page.screenshot(path=str(tmp_path / "review-1280x720.png"))  # to look at; not for the docs
    for grid in page.locator('[data-testid="stDataFrame"]').all():  # no table wider than the page
        box = grid.bounding_box()
        assert box is not None and box["x"] + box["width"] <= 1280


def _valid_ids(db_url: str, tmp, name: str) -> set[str]:
    out = tmp / f"valid-{name}.jsonl"
    done = run_annotate(
        "report",
        "--out",
        str(tmp / f"report-{name}"),
        "--bootstrap",
        "0",
        "--export-valid",
        str(out),
        "--db",
        db_url,
        cwd=tmp,
    )
    assert done.returncode == 0, done.stderr
    return {json.loads(line)["id"] for line in out.read_text().splitlines()}


FOCUSED = "() => (document.activeElement.innerText || document.activeElement.getAttribute('aria-label') || document.activeElement.closest('label')?.innerText || '').trim()"


def _tab_to(page, text: str, *, most: int = 80) -> None:
    for _ in range(most):
        page.keyboard.press("Tab")
        if page.evaluate(FOCUSED).startswith(text):
            return
    raise AssertionError(f"Tab never reached {text!r}")


def test_a_decision_by_keyboard_only(site, new_page):
    """Tab through the page to the decision, Space to choose, Enter to record: no mouse."""
    server, tokens, _, _ = site
    page = new_page(viewport=WIDE)
    goto(page, server.login_url(tokens["maintainer"]))
    _open_review(page, server)
    heading = page.get_by_role("heading", name=re.compile(r"^Pair \S+, version")).inner_text()
    _tab_to(page, "Keep (ships whatever")
    with rerun(page):
        page.keyboard.press("Space")
    _tab_to(page, "Record decision")
    with rerun(page):
        page.keyboard.press("Enter")
    key = heading.split()[1].rstrip(",")
    expect(page.get_by_text(f"Pair {key} (version 1) kept")).to_be_visible()
