"""The maintainer console in a real browser (Debian's Chromium through Playwright).

A stranger and an annotator (who also types the console's address after signing in) see the
sign-in message and no study or annotator data on any console page; a maintainer sees the
study, its annotators and its progress. Screenshots of every console page go to
docs/screenshots/ (shown in docs/console.md). Skips, saying why, without Chromium or
playwright (see tests/browser.py).
"""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest
from playwright.sync_api import expect
from sqlmodel import col, select

from annotate.engine import get_engine
from annotate.labelling.answers import Answer
from annotate.labelling.step import submit_answer
from annotate.people.auth import create_annotator
from annotate.queue import gold
from annotate.queue.assignment import next_assignment
from annotate.results import study_report
from annotate.store.db import session
from annotate.store.models import Annotation, Annotator, Pair, Study, id_of
from annotate.studies.catalog import get_or_create_study, update_study_options
from annotate.studies.demo import GUIDELINES, sample_pairs_path
from annotate.studies.pair_import import import_pairs
from annotate.web.views.admin import PAGES
from tests.browser import (  # noqa: F401  (the fixtures `browser` and `new_page`)
    AppServer,
    browser_fixture,
    goto,
    new_page_fixture,
    require_browser,
    rerun,
    save_screenshot,
)

pytestmark = pytest.mark.browser

STUDY = "console-demo"
ANNOTATORS = ("ann-alice", "ann-bob", "ann-chen")
VIEW = {"width": 1440, "height": 1400}


def _build(db_url: str) -> dict[str, str]:
    """The demo pairs, three annotators who have done some work, a maintainer, a gold check."""
    engine = get_engine(db_url)
    import_pairs(engine, sample_pairs_path(), study_name=STUDY)
    tokens: dict[str, str] = {}
    ids: dict[str, int] = {}
    with session(engine) as s:
        study = get_or_create_study(s, STUDY)
        update_study_options(s, study, overlap_target=2, guidelines=GUIDELINES)
        for name in ANNOTATORS:
            person, tokens[name] = create_annotator(s, name=name, study_id=study.id)
            ids[name] = id_of(person)
        _, tokens["maintainer"] = create_annotator(
            s, name="console-boss", study_id=study.id, is_admin=True
        )
        study_id = id_of(study)
        first = s.exec(
            select(Pair.pair_key).where(Pair.study_id == study_id).order_by(col(Pair.position))
        ).all()[0]
    gold.set_gold(engine, study_id=study_id, pair_keys=[first], answer="chosen")
    now = datetime.now(UTC)
    # Working side by side: alice and bob careful (mostly chosen, a few ties or rejections),
    # chen fast and careless (always rejected, always the same rating).
    budget = {"ann-alice": 10, "ann-bob": 9, "ann-chen": 7}
    done = dict.fromkeys(ANNOTATORS, 0)
    for step in range(max(budget.values())):
        for name in ANNOTATORS:
            if done[name] >= budget[name]:
                continue
            assignment = next_assignment(engine, annotator_id=ids[name])
            if assignment is None:
                continue
            n = done[name]
            careless = name == "ann-chen"
            if careless:
                preference = "rejected"
            elif name == "ann-alice":
                preference = "tie" if n % 5 == 4 else "chosen"
            else:
                preference = "rejected" if n % 6 == 5 else "chosen"
            good, bad = (3, 3) if careless else (4 + n % 2, 2 + n % 3)
            submit_answer(
                engine,
                annotator_id=ids[name],
                pair_id=assignment.pair_id,
                answer=Answer(
                    preference=preference,
                    chosen_position=assignment.chosen_position,
                    ratings={
                        "correctness_chosen": good,
                        "relevance_chosen": good,
                        "helpfulness_chosen": good,
                        "correctness_rejected": bad + (0 if careless else 1),
                        "relevance_rejected": bad,
                        "helpfulness_rejected": bad,
                    },
                    main_reason="general_quality"
                    if careless
                    else ("both" if n % 3 == 2 else "personal_fit"),
                    seconds=4.0 + n % 2 if careless else 35.0 + 6 * (n % 5),
                    submitted_at=now - timedelta(days=3 - step // 3, hours=step % 3),
                ),
            )
            done[name] += 1
    return tokens


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    require_browser()
    db_url = f"sqlite:///{tmp_path_factory.mktemp('console') / 'console.db'}"
    tokens = _build(db_url)
    with AppServer(db_url) as server:
        yield server, tokens


def body_text(page) -> str:
    return page.locator("body").inner_text()


def assert_no_console_data(page, *, heading: str = "Please sign in") -> None:
    expect(page.get_by_text(heading)).to_be_visible()
    shown = body_text(page)
    for secret in (STUDY, *ANNOTATORS, "console-boss", "Pairs finished", "Gold checks"):
        assert secret not in shown, secret
    assert page.locator('[data-testid="stDataFrame"]').count() == 0
    assert page.locator('[data-testid="stMetric"]').count() == 0
    assert page.locator('[data-testid="stFileUploader"]').count() == 0
    assert page.locator('[data-testid="stDownloadButton"]').count() == 0


def test_a_stranger_sees_no_console_data(site, new_page):
    server, _ = site
    page = new_page(viewport=VIEW)
    for _, _, _, url_path in PAGES:
        goto(page, f"{server.url}/{url_path}")
        assert_no_console_data(page)


def test_an_annotator_sees_no_console_data_even_typing_the_address(site, new_page):
    server, tokens = site
    page = new_page(viewport=VIEW)
    goto(page, server.login_url(tokens["ann-bob"]))
    expect(page.get_by_text("Which response would this user prefer?").first).to_be_visible()
    assert "token=" not in page.url
    # no console in the navigation
    assert page.get_by_role("link", name="Progress").count() == 0
    goto(page, f"{server.url}/admin")  # typed into the address bar, cookie sent
    assert_no_console_data(page, heading="For maintainers only")
    expect(page.get_by_text("This console is for the study's maintainers")).to_be_visible()
    # the other console pages are not even in an annotator's navigation (#21 N13): their
    # addresses are unknown pages, which show the labelling page
    for _, _, _, url_path in PAGES[1:]:
        goto(page, f"{server.url}/{url_path}")
        assert_no_console_data(page, heading="Which response would this user prefer?")
    goto(page, f"{server.url}/admin")
    save_screenshot(page, "console-refused.png")


def test_a_maintainer_sees_the_study_its_annotators_and_progress(site, new_page):
    server, tokens = site
    page = new_page(viewport=VIEW)
    goto(page, server.login_url(tokens["maintainer"]))
    goto(page, f"{server.url}/admin")
    expect(page.get_by_role("heading", name="Progress").first).to_be_visible()
    expect(page.get_by_text("Pairs finished", exact=True)).to_be_visible()
    expect(page.get_by_role("combobox", name="Study")).to_have_value(STUDY)
    shown = body_text(page)
    assert "Estimated time to finish" in shown
    assert "Please sign in" not in shown
    # the per-day chart
    expect(page.locator('[data-testid="stPlotlyChart"]').first).to_be_visible()

    goto(page, f"{server.url}/admin-annotators")
    grid = page.locator('[data-testid="stDataFrame"]').first
    expect(grid).to_be_visible()
    # the grid's cells are drawn on a canvas; its accessible table holds the text
    cells = grid.locator('td[role="gridcell"]')
    expect(cells.first).to_be_attached()
    names = " ".join(cells.all_text_contents())
    for name in ANNOTATORS:
        assert name in names, name
    # the careless, fast annotator is flagged
    expect(page.get_by_text("flagged").first).to_be_visible()
    assert "ann-chen" in page.locator('[data-testid="stAlert"]').first.inner_text()


def frames(page, n: int = 3) -> None:
    """Wait until the browser has drawn `n` more frames (layout and paint caught up)."""
    page.evaluate(
        "n => new Promise(done => { const next = k => k ? requestAnimationFrame(() => "
        "next(k - 1)) : done(); next(n); })",
        n,
    )


def test_screenshots_of_every_console_page(site, new_page):
    server, tokens = site
    page = new_page(viewport=VIEW)
    goto(page, server.login_url(tokens["maintainer"]))
    for script, title, _, url_path in PAGES:
        goto(page, f"{server.url}/{url_path}")
        expect(page.get_by_role("heading", name=title).first).to_be_visible()
        assert "Please sign in" not in body_text(page)
        # drawn, not merely present: every chart's plot area and every table's canvas on
        # screen (the Agreement page's other tabs are not)
        charts = page.locator('[data-testid="stPlotlyChart"] .js-plotly-plot .main-svg:visible')
        for n in range(charts.count()):
            charts.nth(n).wait_for(state="visible")
        tables = page.locator('[data-testid="stDataFrame"] canvas:visible')
        for n in range(tables.count()):
            tables.nth(n).wait_for(state="visible")
        # Streamlit scrolls inside its main block, so grow the window to the content instead,
        # until the content's height holds still (charts and tables settle once laid out)
        height = None
        for _ in range(6):
            frames(page)
            now = page.evaluate(
                "() => Math.max(...[...document.querySelectorAll('[data-testid=stMain], "
                "[data-testid=stMainBlockContainer]')].map(e => e.scrollHeight))"
            )
            if now == height:
                break
            height = now
            size = {"width": VIEW["width"], "height": min(max(height + 40, 900), 8000)}
            page.set_viewport_size(size)
        shot = save_screenshot(page, f"console-{url_path}.png")
        page.set_viewport_size(VIEW)
        assert shot.stat().st_size > 10_000, script


# --- downloads: the bytes a console download button gives, as the browser saves them -------


def download(page, label: str) -> tuple[str, bytes]:
    """Click the download button named `label`; the file's suggested name and its bytes."""
    with page.expect_download() as caught:
        page.get_by_role("button", name=label, exact=True).click()
    saved = caught.value
    return saved.suggested_filename, Path(saved.path()).read_bytes()


def stored_answers(db_url: str) -> pd.DataFrame:
    """Every annotation of _build's study, read from its database: one row per pair and
    annotator, with the pair's gold flag."""
    with session(get_engine(db_url)) as s:
        rows = s.exec(
            select(Pair.pair_key, Pair.is_gold, Annotator.name, Annotation)
            .join(Annotation, col(Annotation.pair_id) == Pair.id)
            .join(Annotator, col(Annotator.id) == Annotation.annotator_id)
            .join(Study, col(Study.id) == Pair.study_id)
            .where(Study.name == STUDY)
        ).all()
    return pd.DataFrame(
        [
            {
                "pair_id": key,
                "annotator": name,
                "is_gold": bool(is_gold),
                "preference": a.preference,
                "correctness_chosen": a.correctness_chosen,
                "seconds": a.seconds,
            }
            for key, is_gold, name, a in rows
        ]
    )


def stored_pairs(db_url: str) -> dict[str, bool]:
    """_build's pairs in the study's order: whether each is a gold check, by key."""
    with session(get_engine(db_url)) as s:
        return dict(
            s.exec(
                select(Pair.pair_key, Pair.is_gold)
                .join(Study, col(Study.id) == Pair.study_id)
                .where(Study.name == STUDY)
                .order_by(col(Pair.position))
            ).all()
        )


def metrics(page) -> dict[str, str]:
    """The page's metrics, value by label, as shown."""
    shown = {}
    for metric in page.locator('[data-testid="stMetric"]').all():
        label = metric.locator('[data-testid="stMetricLabel"]').inner_text().strip()
        shown[label] = metric.locator('[data-testid="stMetricValue"]').inner_text().strip()
    return shown


def test_every_export_downloads_the_studys_annotations_report_and_pairs(site, new_page):
    server, tokens = site
    stored = stored_answers(server.db_url)
    assert len(stored) == 26  # 10 + 9 + 7 answers made in _build
    page = new_page(viewport=VIEW, accept_downloads=True)
    goto(page, server.login_url(tokens["maintainer"]))
    goto(page, f"{server.url}/admin-exports")

    expected = stored.set_index(["pair_id", "annotator"]).sort_index()
    readers = {
        "CSV": lambda data: pd.read_csv(io.BytesIO(data)),
        "JSONL": lambda data: pd.read_json(io.BytesIO(data), lines=True),
        "PARQUET": lambda data: pd.read_parquet(io.BytesIO(data)),
    }
    for label, read in readers.items():
        name, data = download(page, label)
        assert name == f"{STUDY}-annotations.{label.lower()}"
        frame = read(data)
        assert list(frame.columns)[:4] == ["pair_id", "annotator", "preference", "chosen_position"]
        rows = frame.set_index(["pair_id", "annotator"]).sort_index()
        assert list(rows.index) == list(expected.index), label  # every answer, once
        assert list(rows["preference"]) == list(expected["preference"]), label
        assert [int(v) for v in rows["correctness_chosen"]] == list(
            expected["correctness_chosen"]
        ), label
        assert [float(v) for v in rows["seconds"]] == list(expected["seconds"]), label

    files = {}
    for file_name in study_report.REPORT_FILES:
        name, files[file_name] = download(page, file_name)
        assert name == f"{STUDY}-{file_name}"
    report = json.loads(files["report.json"])
    real = stored[~stored["is_gold"]]  # the report leaves the gold check out
    pairs = stored_pairs(server.db_url)
    keys = list(pairs)
    assert report["counts"]["annotations"] == len(real)
    verdicts = {p["pair_id"]: p["verdict"] for p in report["pairs"]}
    assert_verdicts_follow_the_answers(verdicts, real)
    assert "<html" in files["report.html"].decode()[:200].lower()
    pair_rows = pd.read_csv(io.BytesIO(files["pairs.csv"]))
    assert "pair_id" in pair_rows.columns
    assert sorted(pair_rows["pair_id"]) == sorted(verdicts)
    annotator_rows = files["annotators.csv"].decode()
    for person in ANNOTATORS:
        assert person in annotator_rows, person
    assert "alpha" in files["summary.md"].decode().lower()

    name, data = download(page, "Validated pairs")
    assert name == f"{STUDY}-valid-pairs.jsonl"
    valid = [json.loads(line) for line in data.splitlines()]
    valid_keys = [k for k, is_gold in pairs.items() if verdicts.get(k) == "valid" and not is_gold]
    assert 0 < len(valid_keys) < len(keys)  # so the valid pairs differ from all of them
    assert [r["id"] for r in valid] == valid_keys
    name, data = download(page, "All pairs")
    assert name == f"{STUDY}-pairs.jsonl"
    every = [json.loads(line) for line in data.splitlines()]
    sample = [json.loads(line) for line in sample_pairs_path().read_text().splitlines() if line]
    assert [r["id"] for r in every] == keys == [r["id"] for r in sample]
    assert every == sample  # every original field kept


def assert_verdicts_follow_the_answers(verdicts: dict[str, str], answers: pd.DataFrame) -> None:
    """The verdict rules that the answers alone decide (analysis/verdicts/pairs.py): under two answers
    (the overlap target) a pair is insufficient_annotations; with two or more and no strict
    majority preference, no_consensus. Both outcomes occur in _build's data."""
    seen = set()
    for pair_key, group in answers.groupby("pair_id"):
        key = str(pair_key)
        counts = group["preference"].value_counts()
        if len(group) < 2:
            expected = "insufficient_annotations"
        elif counts.iloc[0] * 2 <= len(group):
            expected = "no_consensus"
        else:
            assert verdicts[key] not in ("insufficient_annotations", "no_consensus"), key
            continue
        assert verdicts[key] == expected, key
        seen.add(expected)
    assert seen == {"insufficient_annotations", "no_consensus"}, seen


HEADLINES = {  # annotate/web/views/admin/agreement.py, as the browser shows them
    "supported": "Personal preference is the main factor",
    "not_supported": "The data speak against personal preference as the main factor",
    "insufficient_evidence": "The data are too few to say whether personal preference",
}


def test_the_agreement_page_downloads_the_report_of_its_selection(site, new_page):
    server, tokens = site
    stored = stored_answers(server.db_url)
    real = stored[~stored["is_gold"]]
    page = new_page(viewport=VIEW, accept_downloads=True)
    goto(page, server.login_url(tokens["maintainer"]))
    goto(page, f"{server.url}/admin-agreement")
    # the files are in their own tab (the page reads one part at a time)
    page.get_by_role("tab", name="Report files").click()

    name, data = download(page, "report.json")
    assert name == "report.json"
    report = json.loads(data)
    assert report["counts"]["annotations"] == len(real)
    assert report["counts"]["annotators"] == len(ANNOTATORS)
    shown = metrics(page)
    assert shown["Annotations"] == str(len(real))
    annotated = real["pair_id"].nunique()
    assert shown["Pairs started"] == f"{annotated} / {report['counts']['pairs']}"
    assert shown["Percent agreement"] == f"{report['preference']['percent_agreement']:.3f}"
    # the headline tells the report's conclusion, and only that one
    status = report["conclusion"]["status"]
    text = body_text(page)
    for other, headline in HEADLINES.items():
        assert (headline in text) == (other == status), (status, other)

    # one annotator: the page and its report file follow the selection
    chooser = page.locator(".st-key-agreement_annotators")
    # typed: after a download the window had lost focus, and a first click only focused the box
    chooser.get_by_role("combobox").press_sequentially("ann-alice")
    with rerun(page):
        page.get_by_role("option", name="ann-alice", exact=True).click()
    page.keyboard.press("Escape")
    expect(chooser.get_by_text("ann-alice")).to_be_visible()
    alice = real[real["annotator"] == "ann-alice"]
    expect(page.get_by_text("in this selection")).to_be_visible()
    assert metrics(page)["Annotations"] == str(len(alice))
    page.get_by_role("tab", name="Report files").click()
    name, data = download(page, "report.json")
    report = json.loads(data)
    assert report["counts"]["annotators"] == 1
    assert report["counts"]["annotations"] == len(alice)


def test_console_pages_opened_by_their_address_ask_the_server_nothing_in_vain(site, new_page):
    """Opened at /admin-... (a reload, a bookmark), Streamlit's page asked the page's own
    address for the server first: /admin/_stcore/health and /host-config, two 404s in the
    browser's console on every console page. The page is told where the app is
    (annotate/web/page_base.py)."""
    server, tokens = site
    page = new_page(viewport=VIEW)
    failed = []
    page.on("response", lambda r: failed.append(r.url) if r.status >= 400 else None)
    goto(page, server.login_url(tokens["maintainer"]))
    for _, title, _, url_path in PAGES:
        goto(page, f"{server.url}/{url_path}")
        expect(page.get_by_role("heading", name=title).first).to_be_visible()
    page.reload()
    expect(page.get_by_role("heading", name=PAGES[-1][1]).first).to_be_visible()
    assert failed == []


def test_a_maintainer_starts_labelling_with_enter_from_the_console(site, tmp_path, new_page):
    """The console's "Label pairs" opens the guidelines with the focus left on that menu
    link, where Enter opened the menu link again: the Start button takes the focus."""
    server, _ = site
    with session(get_engine(server.db_url)) as s:
        study = s.exec(select(Study).where(Study.name == STUDY)).one()
        _, token = create_annotator(s, name="console-reader", study_id=study.id, is_admin=True)
    page = new_page(viewport=VIEW)
    goto(page, server.login_url(token))
    expect(page.get_by_role("heading", name="Progress").first).to_be_visible()
    link = page.get_by_role("link", name="Label pairs")
    link.focus()
    with rerun(page):
        page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Guidelines")).to_be_visible()
    start = page.get_by_role("button", name="Start labelling")
    expect(start).to_be_focused()
    with rerun(page):
        page.keyboard.press("Enter")
    expect(page.locator(".question").first).to_be_visible()
