"""The labelling page in a real browser (Debian's Chromium through Playwright).

One `annotate serve` process serves the whole module; each test signs in as its own annotator in
its own browser context. Skips, saying why, without Chromium or playwright (see tests/browser.py).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlmodel import select

from annotate.annotations import annotations_frame, other_slot
from annotate.auth import create_annotator
from annotate.db import get_engine, session
from annotate.demo import GUIDELINES, sample_pairs_path
from annotate.importer import import_pairs
from annotate.models import Assignment, Pair
from annotate.render import WORD_JOINER
from annotate.studies import get_or_create_study
from annotate.wording import PREFERENCE_QUESTION
from tests.browser import (  # noqa: F401  (the fixtures `browser` and `new_page`)
    AppServer,
    PlaywrightTimeoutError,
    RequestRecorder,
    browser_fixture,
    expect,
    goto,
    new_page_fixture,
    rerun,
    save_screenshot,
    wait_idle,
)

pytestmark = pytest.mark.browser

FLOW_STUDY = "browser-flow"
UNTRUSTED_STUDY = "browser-untrusted"
TALL = {"width": 1440, "height": 2300}  # tall enough to show the whole labelling page
DIMENSIONS = ("correctness", "relevance", "helpfulness")
TITLES = {"correctness": "Correctness", "relevance": "Relevance", "helpfulness": "Helpfulness"}
REASON_TEXT = {
    "personal_fit": "Personal fit: it matches this user's preferences",
    "general_quality": "General quality: it is simply the better answer",
    "both": "Both",
}


@dataclass
class Site:
    db_url: str
    server: AppServer
    recorder: RequestRecorder
    tokens: dict[str, str]
    annotator_ids: dict[str, int]

    def engine(self):
        return get_engine(self.db_url)


def hostile_text(listener: str, tag: str) -> str:
    """Model output that tries every way we know to fetch, run or restyle something."""
    return "\n".join(
        [
            f"Answer {tag}. Look: ![diagram]({listener}/md-image-{tag}.png)",
            "",
            f"<script>window.__pwned = 1; document.title = 'pwned-{tag}'</script>",
            "",
            f'[click here](javascript:window.__pwned=2) and <a href="javascript:window.__pwned=3">'
            f"this</a> and [plain link]({listener}/link-{tag})",
            "",
            f'<img src="{listener}/raw-img-{tag}.png" onerror="window.__pwned=4">',
            "",
            f"Reference image ![logo][ref{tag}] and autolink <{listener}/autolink-{tag}> "
            f"and bare {listener}/bare-{tag}",
            "",
            f"[ref{tag}]: {listener}/ref-image-{tag}.png",
            "",
            r"Math $\color{red}{x}$ and $$\color{red}{y}$$, :red[red words], "
            r":material/home:, :smile:, :streamlit: and :blue-background[shout].",
            "Mail me at someone@example.com or visit www.example.com.",
            "",
            f'<style>body {{ display: none }}</style><iframe src="{listener}/iframe-{tag}"></iframe>',
            f'<link rel="stylesheet" href="{listener}/style-{tag}.css">',
        ]
    )


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def site(tmp_path_factory, browser) -> Site:  # `browser` first: skip before starting a server
    folder = tmp_path_factory.mktemp("label_browser")
    db_url = f"sqlite:///{folder / 'app.sqlite'}"
    engine = get_engine(db_url)
    with RequestRecorder() as recorder:
        listener = recorder.url
        import_pairs(engine, sample_pairs_path(), study_name=FLOW_STUDY)
        hostile = {
            "id": "hostile-1",
            "question": f"Which is better? ![q]({listener}/question.png) <script>window.__pwned=5</script>",
            "profile": [
                {
                    "id": "post-1",
                    "category": "Tech",
                    "text": f"My post ![p]({listener}/profile.png) <img src={listener}/profile-raw.png>",
                }
            ],
            "rubric_aspects": [
                {
                    "aspect": f"Short ![a]({listener}/aspect.png)",
                    "reason": "Because [x](javascript:window.__pwned=6) :red[reason]",
                    "evidence": f"<img src={listener}/evidence.png onerror=window.__pwned=7>",
                }
            ],
            "narrative": f"I like it short. ![n]({listener}/narrative.png)",
            "category": "Tech",
            "chosen": hostile_text(listener, "one"),
            "rejected": hostile_text(listener, "two"),
        }
        import_pairs(
            engine, write_jsonl(folder / "hostile.jsonl", [hostile]), study_name=UNTRUSTED_STUDY
        )
        tokens, ids = {}, {}
        with session(engine) as s:
            flow = get_or_create_study(s, FLOW_STUDY)
            flow.guidelines = GUIDELINES
            s.add(flow)
            untrusted = get_or_create_study(s, UNTRUSTED_STUDY)
            for name, study in [("flow", flow), ("untrusted", untrusted), ("keys", flow)]:
                annotator, token = create_annotator(s, name=f"browser-{name}", study_id=study.id)
                annotator.guidelines_seen = name == "keys"
                tokens[name], ids[name] = token, annotator.id
        with AppServer(db_url) as server:
            yield Site(db_url, server, recorder, tokens, ids)


# --- page helpers -------------------------------------------------------------------------


def pick_button(page, slot: str):
    label = {"A": "Response A", "B": "Response B", "tie": "No preference"}[slot]
    return page.locator('[data-testid="stButton"] button').filter(
        has=page.get_by_text(label, exact=True)
    )


def expect_picked(page, slot: str | None) -> None:
    """Exactly `slot` (or nothing) is shown as the selected (primary) choice."""
    for other in ("A", "B", "tie"):
        kind = "primary" if other == slot else "secondary"
        expect(pick_button(page, other)).to_have_attribute("kind", kind)


def rating_group(page, dimension: str, slot: str):
    return page.get_by_role("radiogroup", name=f"{TITLES[dimension]} of response {slot}")


def rating(page, dimension: str, slot: str, value: int):
    return rating_group(page, dimension, slot).get_by_role("radio", name=str(value), exact=True)


def expect_rating(page, dimension: str, slot: str, value: int | None, **options) -> None:
    checked = rating_group(page, dimension, slot).locator('[role="radio"][aria-checked="true"]')
    if value is None:
        expect(checked).to_have_count(0, **options)
    else:
        expect(checked).to_have_text(str(value), **options)


def reason_option(page, reason: str):
    return page.get_by_role("radiogroup", name="What mainly decided your choice?").get_by_role(
        "radio", name=REASON_TEXT[reason], exact=True
    )


def expect_reason(page, reason: str) -> None:
    expect(reason_option(page, reason)).to_have_attribute("aria-checked", "true")


def response_box(page, slot: str):
    return page.locator(f'[class*="st-key-response_{slot}_"]')


def click(locator) -> None:
    """A mouse click that reruns the script; returns when that run is over."""
    with rerun(locator.page):
        locator.click()


def press(page, key: str) -> None:
    """A key press that reruns the script; returns when that run is over."""
    with rerun(page):
        page.keyboard.press(key)


def choose(combobox, option, *, typed: str) -> None:
    """Pick `option` in a selectbox as an annotator can with the keyboard: type `typed` into
    the box (which filters the list down to the option) and press Enter. (Clicking an option
    in the open list was flaky: the list could close again while the page settled.)"""
    page = combobox.page
    for _attempt in range(3):
        wait_idle(page)
        combobox.click()
        combobox.press_sequentially(typed)
        try:
            option.wait_for(state="visible", timeout=5_000)
        except PlaywrightTimeoutError:
            page.keyboard.press("Escape")
            continue
        with rerun(page):
            page.keyboard.press("Enter")
        return
    raise AssertionError(f"{option} never showed in {combobox}")


def snippet(text: str) -> str:
    """A plain phrase of `text` (no markdown characters), to find where it is shown."""
    runs = re.findall(r"[A-Za-z0-9 ,']{12,}", text)
    return max(runs, key=len).strip()


def current_assignment(site: Site, who: str) -> tuple[Assignment, Pair]:
    with session(site.engine()) as s:
        assignment = s.exec(
            select(Assignment).where(
                Assignment.annotator_id == site.annotator_ids[who], Assignment.status == "active"
            )
        ).one()
        return assignment, s.get(Pair, assignment.pair_id)


def expect_slots_show(page, assignment: Assignment, pair: Pair) -> None:
    """Response A and B show the texts the stored A/B order puts there."""
    other = other_slot(assignment.chosen_position)
    for slot, text in [(assignment.chosen_position, pair.chosen), (other, pair.rejected)]:
        expect(response_box(page, slot)).to_contain_text(snippet(text))


def side_names_in_markup(page) -> list[str]:
    """Every class, key, test id or other attribute (name or value) saying chosen/rejected."""
    hits = page.evaluate(
        """() => {
            const hits = [];
            for (const el of document.querySelectorAll('*')) {
                for (const a of el.attributes) {
                    if (/chosen|rejected/i.test(a.name) || /chosen|rejected/i.test(a.value)) {
                        hits.push(`<${el.tagName.toLowerCase()} ${a.name}="${a.value.slice(0, 120)}">`);
                    }
                }
            }
            return hits;
        }"""
    )
    keys = re.findall(r"st-key-[^\s\"']*", page.content())
    return hits + [key for key in keys if re.search("chosen|rejected", key, re.IGNORECASE)]


def rows(site: Site, study: str):
    return annotations_frame(site.engine(), study=study)


def stored_draft(site: Site, assignment_id: int) -> dict:
    with session(site.engine()) as s:
        return s.get(Assignment, assignment_id).draft or {}


# --- tests --------------------------------------------------------------------------------


def test_label_with_keyboard_and_mouse_reload_keeps_everything(site, new_page):
    page = new_page(viewport=TALL)
    goto(page, site.server.login_url(site.tokens["flow"]))
    # The login link became an HttpOnly cookie: the token left the address bar.
    assert "token" not in page.url
    cookie = next(c for c in page.context.cookies() if c["name"] == "annotate_token")
    assert cookie["httpOnly"] and cookie["value"] == site.tokens["flow"]

    # The study has guidelines: they come first.
    expect(page.get_by_role("heading", name="Guidelines")).to_be_visible()
    click(page.get_by_role("button", name="Start labelling"))

    # --- first pair: keyboard for the choice, mouse for the rest, S to submit ---
    expect(page.get_by_text("0 of 15 pairs")).to_be_visible()
    first, first_pair = current_assignment(site, "flow")
    expect_slots_show(page, first, first_pair)
    expect(page.get_by_text(snippet(first_pair.question))).to_be_visible()
    expect_picked(page, None)
    save_screenshot(page, "label.png")

    press(page, "b")
    expect_picked(page, "B")
    press(page, "a")  # a change of mind, with the keyboard too
    expect_picked(page, "A")
    press(page, "b")
    expect_picked(page, "B")

    given = {
        "A": {"correctness": 2, "relevance": 3, "helpfulness": 1},
        "B": {"correctness": 5, "relevance": 4, "helpfulness": 4},
    }
    for slot, values in given.items():
        for dimension, value in values.items():
            click(rating(page, dimension, slot, value))
    click(reason_option(page, "personal_fit"))
    expect_picked(page, "B")
    for slot, values in given.items():
        for dimension, value in values.items():
            expect_rating(page, dimension, slot, value)
    expect_reason(page, "personal_fit")
    assert side_names_in_markup(page) == []
    save_screenshot(page, "label-answered.png")

    press(page, "s")  # right after a click on the reason: shortcuts still reach the page
    expect(page.get_by_text("1 of 15 pairs")).to_be_visible()

    frame = rows(site, FLOW_STUDY)
    assert len(frame) == 1
    row = frame.iloc[0]
    chosen_slot = first.chosen_position
    rejected_slot = other_slot(chosen_slot)
    assert row["pair_id"] == first_pair.pair_key
    assert row["chosen_position"] == chosen_slot
    assert row["preference"] == ("chosen" if chosen_slot == "B" else "rejected")
    for dimension in DIMENSIONS:
        assert row[f"{dimension}_chosen"] == given[chosen_slot][dimension]
        assert row[f"{dimension}_rejected"] == given[rejected_slot][dimension]
    assert row["main_reason"] == "personal_fit"

    # --- second pair: a partial answer survives a reload, in the same A/B order ---
    second, second_pair = current_assignment(site, "flow")
    assert second_pair.id != first_pair.id
    expect_slots_show(page, second, second_pair)
    expect_picked(page, None)
    press(page, "a")
    click(rating(page, "correctness", "A", 4))
    click(reason_option(page, "general_quality"))
    draft = stored_draft(site, second.id)
    assert (draft["slot"], draft["reason"]) == ("A", "general_quality")
    assert draft["ratings"]["correctness_A"] == 4

    goto(page, page.url)  # reload: a new session, nothing kept in the browser but the cookie
    assert "token" not in page.url
    expect(page.get_by_text("1 of 15 pairs")).to_be_visible()
    expect(page.get_by_text("Please sign in")).to_have_count(0)
    assert current_assignment(site, "flow")[0].id == second.id
    expect_slots_show(page, second, second_pair)
    expect_picked(page, "A")
    expect_rating(page, "correctness", "A", 4)
    expect_rating(page, "correctness", "B", None)
    expect_reason(page, "general_quality")

    # Finish it and double-click Submit: one row for this pair, never two.
    for slot in ("A", "B"):
        for dimension in DIMENSIONS:
            if (slot, dimension) != ("A", "correctness"):
                click(rating(page, dimension, slot, 3))
    with rerun(page):
        page.get_by_role("button", name="Submit").dblclick()
    expect(page.get_by_text("2 of 15 pairs")).to_be_visible()
    wait_idle(page, settle_ms=600)  # the second click may start one more run
    frame = rows(site, FLOW_STUDY)
    assert sorted(frame["pair_id"]) == sorted([first_pair.pair_key, second_pair.pair_key])
    second_row = frame[frame["pair_id"] == second_pair.pair_key].iloc[0]
    assert second_row["preference"] == ("chosen" if second.chosen_position == "A" else "rejected")
    assert second_row["main_reason"] == "general_quality"
    side_of_a = "chosen" if second.chosen_position == "A" else "rejected"
    assert second_row[f"correctness_{side_of_a}"] == 4

    # --- the first answer is kept: going back shows it preselected, in the same order ---
    # Room below the box for its list: a list that opens past the edge scrolls the page,
    # which closes it again.
    page.set_viewport_size({"width": TALL["width"], "height": TALL["height"] + 1200})
    page.get_by_text("Go back to an earlier pair (2 answered)").click()
    choose(
        page.get_by_role("combobox", name="Pair to revisit"),
        page.get_by_role("option", name=re.compile(rf"pair {re.escape(first_pair.pair_key)}$")),
        typed=first_pair.pair_key,
    )
    click(page.get_by_role("button", name="Open this pair"))
    expect(page.get_by_text("You are changing an answer you already gave")).to_be_visible()
    expect_slots_show(page, first, first_pair)
    expect_picked(page, "B")
    for slot, values in given.items():
        for dimension, value in values.items():
            expect_rating(page, dimension, slot, value)
    expect_reason(page, "personal_fit")
    assert len(rows(site, FLOW_STUDY)) == 2


def test_untrusted_text_loads_nothing_runs_nothing(site, new_page):
    page = new_page()
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    goto(page, site.server.login_url(site.tokens["untrusted"]))
    expect(response_box(page, "A")).to_be_visible()
    page.get_by_text("The user's past posts (1)").click()  # show the profile's posts too
    expect(page.get_by_text("My post")).to_be_visible()
    page.wait_for_load_state("networkidle")
    page.wait_for_timeout(500)  # a negative check: give a stray fetch a moment to happen

    listener = site.recorder.url
    port = site.recorder.port
    assert site.recorder.requests == []
    assert [url for url in requested if f":{port}" in url] == []
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.title() == "Preference pairs"

    main = page.locator('[data-testid="stMain"]')
    expect(main.locator("script, iframe, style, link, object, embed")).to_have_count(0)
    expect(page.locator('[href^="javascript:" i], [src^="javascript:" i]')).to_have_count(0)
    expect(page.locator(f'[src*="127.0.0.1:{port}"], [href*="127.0.0.1:{port}"]')).to_have_count(0)
    expect(page.locator("[onerror], [onload]")).to_have_count(0)
    for slot in ("A", "B"):
        box = response_box(page, slot)
        expect(box.locator("img, a, .katex, [data-testid='stIconMaterial']")).to_have_count(0)
        expect(box.locator("[style*='color'], [style*='background']")).to_have_count(0)
        shown = box.inner_text().replace(WORD_JOINER, "")  # invisible, it unlinks URLs
        tag = "one" if "Answer one" in shown else "two"
        for literal in [
            f"![diagram]({listener}/md-image-{tag}.png)",
            f"<script>window.__pwned = 1; document.title = 'pwned-{tag}'</script>",
            "[click here](javascript:window.__pwned=2)",
            f'<img src="{listener}/raw-img-{tag}.png" onerror="window.__pwned=4">',
            f"![logo][ref{tag}]",
            r"$\color{red}{x}$",
            ":red[red words]",
            ":material/home:, :smile:, :streamlit:",
            "someone@example.com or visit www.example.com.",
        ]:
            assert literal in shown, f"response {slot} does not show {literal!r} as typed: {shown}"
    assert side_names_in_markup(page) == []
    assert not re.search(r"\b(chosen|rejected)\b", main.inner_text(), re.IGNORECASE)


@pytest.mark.parametrize("token", [None, "not-a-real-token"], ids=["stranger", "wrong-token"])
def test_strangers_see_a_polite_sign_in_message_and_no_pair(site, new_page, token):
    page = new_page()
    goto(page, site.server.url + ("/" if token is None else f"/?token={token}"))
    assert "token" not in page.url
    expect(page.get_by_role("heading", name="Please sign in")).to_be_visible()
    expect(page.get_by_text("use the personal link you were given")).to_be_visible()
    main_text = page.locator('[data-testid="stMain"]').inner_text()
    for absent in ["Response A", "Response B", PREFERENCE_QUESTION, "Submit", "Guidelines"]:
        assert absent not in main_text
    with session(site.engine()) as s:
        questions = s.exec(select(Pair.question)).all()
    for question in questions:
        assert snippet(question) not in main_text
    expect(page.locator('[class*="st-key-pick_"], [class*="st-key-response_"]')).to_have_count(0)


def test_submit_key_right_after_clicking_a_rating_keeps_it_and_submits(site, new_page):
    """Enter would press the focused rating button (clearing it); S is not swallowed."""
    page = new_page()
    goto(page, site.server.login_url(site.tokens["keys"]))
    press(page, "b")
    click(reason_option(page, "both"))
    for slot in ("A", "B"):
        for dimension in DIMENSIONS:
            click(rating(page, dimension, slot, 4))  # the last click leaves a rating focused
    press(page, "s")
    expect(page.get_by_text("1 of 15 pairs")).to_be_visible()
    frame = rows(site, FLOW_STUDY)
    mine = frame[frame["annotator"] == "browser-keys"]
    assert len(mine) == 1
    assert mine.iloc[0]["helpfulness_chosen"] == 4 and mine.iloc[0]["helpfulness_rejected"] == 4
    assert mine.iloc[0]["main_reason"] == "both"
