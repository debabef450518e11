"""The labelling page in a real browser (Debian's Chromium through Playwright).

One `annotate serve` process serves the whole module; each test signs in as its own annotator in
its own browser context. The form is one component in a shadow root: Playwright's locators reach
into it; `page.evaluate` code walks shadow roots itself. Skips, saying why, without Chromium or
playwright (see tests/browser.py).
"""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlmodel import select

from annotate.engine import get_engine
from annotate.labelling.slots import other_slot
from annotate.people.auth import create_annotator
from annotate.results.frames import annotations_frame
from annotate.store.db import session
from annotate.store.models import Annotation, Assignment, Pair, id_of
from annotate.studies.catalog import get_or_create_study
from annotate.studies.demo import GUIDELINES, sample_pairs_path
from annotate.studies.pair_import import import_pairs
from annotate.wording import PREFERENCE_QUESTION
from tests.browser import (  # noqa: F401  (the fixtures `browser` and `new_page`)
    AppServer,
    RequestRecorder,
    browser_fixture,
    expect,
    goto,
    hold_timers,
    new_page_fixture,
    save_screenshot,
    wait_idle,
)
from tests.realistic_pairs import realistic_record

pytestmark = pytest.mark.browser

FLOW_STUDY = "browser-flow"
REAL_STUDY = "browser-real"
ASPECT_STUDY = "browser-aspects"
UNTRUSTED_STUDY = "browser-untrusted"
HEAVY_STUDY = "browser-heavy"
BARE_STUDY = "browser-bare"  # rates nothing, shows no narrative or posts
SCREEN = {"width": 1440, "height": 900}
SMALL_SCREEN = {"width": 1280, "height": 720}
DIMENSIONS = ("correctness", "relevance", "helpfulness")
TITLES = {"correctness": "Correctness", "relevance": "Relevance", "helpfulness": "Helpfulness"}
READERS = [
    *("flow", "keys", "refused", "reload", "double", "back", "small", "untrusted", "heavy"),
    *("panels", "bare"),
]


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


# Markdown that froze Chromium on the old page, and headings that imitate the page.
PATHOLOGICAL = {
    "dashes": "- " * 50_000,
    "numbers": "1. " * 33_000,
    "table": "|" + "a|" * 30_000 + "\n|" + "-|" * 30_000,
    "items": "\n".join(["- x"] * 49_000),  # the import limit is 200,000 characters
    "long": " ".join(["word"] * 2_000),  # a long response scrolls with the page
}
IMITATION = "Submit your answer\n==================\n\n# Which response would this user prefer?\n"
DRAFT_MS = 4_000  # the form sends a draft at most this often (annotate/web/static/label_form.js)


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def site(tmp_path_factory, browser) -> Iterator[Site]:  # `browser` first: skip before a server
    folder = tmp_path_factory.mktemp("label_browser")
    db_url = f"sqlite:///{folder / 'app.sqlite'}"
    engine = get_engine(db_url)
    rng = random.Random(7)
    real = [realistic_record(rng, i, posts=200, response_words=100) for i in range(40)]
    with RequestRecorder() as recorder:
        listener = recorder.url
        import_pairs(engine, sample_pairs_path(), study_name=FLOW_STUDY)
        import_pairs(engine, write_jsonl(folder / "real.jsonl", real), study_name=REAL_STUDY)
        import_pairs(engine, write_jsonl(folder / "real.jsonl", real[:3]), study_name=ASPECT_STUDY)
        import_pairs(engine, write_jsonl(folder / "real.jsonl", real[:2]), study_name=BARE_STUDY)
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
        heavy = [
            {
                "id": f"heavy-{name}",
                "question": f"Pathological {name}?",
                "rubric_aspects": [{"aspect": "Short answers", "reason": "Busy", "evidence": "-"}],
                "chosen": IMITATION + text,
                "rejected": f"A short answer about {name}.",
            }
            for name, text in PATHOLOGICAL.items()
        ]
        import_pairs(engine, write_jsonl(folder / "heavy.jsonl", heavy), study_name=HEAVY_STUDY)
        tokens, ids = {}, {}
        with session(engine) as s:
            flow = get_or_create_study(s, FLOW_STUDY)
            flow.guidelines = GUIDELINES
            s.add(flow)
            aspects = get_or_create_study(s, ASPECT_STUDY)
            aspects.aspect_check = True
            s.add(aspects)
            bare = get_or_create_study(s, BARE_STUDY)
            bare.dimensions, bare.show_narrative, bare.show_profile = [], False, False
            s.add(bare)
            studies = {
                "bare": bare,
                "flow": flow,
                "untrusted": get_or_create_study(s, UNTRUSTED_STUDY),
                "heavy": get_or_create_study(s, HEAVY_STUDY),
                "aspects": aspects,
            }
            real_study = get_or_create_study(s, REAL_STUDY)
            for name in [*READERS, "aspects", "maintainer"]:
                study = studies.get(name, real_study)
                annotator, token = create_annotator(
                    s, name=f"browser-{name}", study_id=study.id, is_admin=name == "maintainer"
                )
                annotator.guidelines_seen = name != "flow"
                tokens[name], ids[name] = token, id_of(annotator)
        with AppServer(db_url) as server:
            yield Site(db_url, server, recorder, tokens, ids)


# --- page helpers -------------------------------------------------------------------------

# Every scrolled element's scrollTop (the page's own scroll container is Streamlit's, not the
# window), largest first.
SCROLL_TOPS = """() => [document.scrollingElement, ...document.querySelectorAll('*')]
    .filter((el) => el && el.scrollTop > 0).map((el) => el.scrollTop).sort((a, b) => b - a)"""
# Every attribute, in the page and in shadow roots, naming chosen/rejected.
SIDE_NAMES = """() => {
    const hits = [];
    const walk = (root) => {
        for (const el of root.querySelectorAll('*')) {
            for (const a of el.attributes) {
                if (/chosen|rejected/i.test(a.name) || /chosen|rejected/i.test(a.value)) {
                    hits.push(`<${el.tagName.toLowerCase()} ${a.name}="${a.value.slice(0, 120)}">`);
                }
            }
            if (el.shadowRoot) walk(el.shadowRoot);
        }
    };
    walk(document);
    return hits;
}"""


def watch_messages(page) -> list[float]:
    """Times of every message the page sends to the server (before `goto`): websocket
    messages, and the drafts it posts without a page run (annotate/web/drafts.py)."""
    sent: list[float] = []
    page.on("websocket", lambda ws: ws.on("framesent", lambda _: sent.append(time.monotonic())))

    def on_request(request) -> None:
        if request.method == "POST" and request.url.endswith("/draft"):
            sent.append(time.monotonic())

    page.on("request", on_request)
    return sent


def count_sent(page, sent: list[float], *, at_least: int, timeout_s: float = 30) -> int:
    """How many messages the page has sent, once at least `at_least` are counted: a message
    the server has already acted on can reach this process's count a moment later."""
    deadline = time.monotonic() + timeout_s
    while len(sent) < at_least and time.monotonic() < deadline:
        page.wait_for_timeout(50)
    return len(sent)


def question_box(page):
    # :visible: the previous pair's form lingers, hidden, until the run that replaced it ends
    return page.locator('[data-part="question"]:visible')


def open_pair(page, url: str):
    goto(page, url)
    expect(question_box(page)).to_be_visible()
    wait_idle(page)


def next_pair(page, shown: str) -> str:
    """Wait until a pair other than `shown` is on screen and the script run is over."""
    expect(question_box(page)).not_to_have_text(shown)
    expect(page.locator(".form")).to_have_count(1)
    wait_idle(page)
    return question_box(page).inner_text()


def keys(page, sequence: list[str]) -> None:
    for key in sequence:
        page.keyboard.press(key)
        page.wait_for_timeout(30)


def response(page, slot: str):
    return page.locator(f'section.response[data-slot="{slot}"]')


def rating_group(page, dimension: str, slot: str):
    return page.get_by_role("radiogroup", name=f"{TITLES[dimension]} of response {slot}")


def expect_rating(page, dimension: str, slot: str, value: int | None) -> None:
    checked = rating_group(page, dimension, slot).locator('[aria-checked="true"]')
    if value is None:
        expect(checked).to_have_count(0)
    else:
        expect(checked).to_have_text(str(value))


def choice(page, label: str):
    return page.get_by_role("radiogroup", name=PREFERENCE_QUESTION).get_by_role(
        "radio", name=re.compile(rf"^{label}\b")
    )


def expect_picked(page, label: str | None) -> None:
    checked = page.get_by_role("radiogroup", name=PREFERENCE_QUESTION).locator(
        '[aria-checked="true"]'
    )
    if label is None:
        expect(checked).to_have_count(0)
    else:
        expect(checked).to_contain_text(label)


def expect_reason(page, label: str) -> None:
    group = page.get_by_role("radiogroup", name="What mainly decided your choice?")
    expect(group.locator('[aria-checked="true"]')).to_contain_text(label)


def in_viewport(page, locator) -> bool:
    box = locator.bounding_box()
    size = page.viewport_size
    return (
        box is not None
        and box["y"] >= 0
        and box["x"] >= 0
        and box["y"] + box["height"] <= size["height"]
        and box["x"] + box["width"] <= size["width"]
    )


def expect_first_screen(page, *more) -> None:
    """The question, the first aspect, both response texts and the choice (and `more`) all lie
    inside the viewport."""
    size = page.viewport_size
    for part in [
        question_box(page),
        page.locator(".rubric .aspect").first,
        response(page, "A").locator(".text"),
        response(page, "B").locator(".text"),
        page.get_by_role("radiogroup", name=PREFERENCE_QUESTION),
        *more,
    ]:
        assert in_viewport(page, part), (
            f"{part} is not in the first screen at {size['width']}x{size['height']}"
        )


def scroll_down(page) -> None:
    page.evaluate(
        """() => { for (const el of document.querySelectorAll('*')) {
            if (el.scrollHeight > el.clientHeight + 50 &&
                getComputedStyle(el).overflowY.match(/auto|scroll/)) el.scrollTop = el.scrollHeight;
        } }"""
    )


def current_assignment(site: Site, who: str) -> tuple[Assignment, Pair]:
    with session(site.engine()) as s:
        assignment = s.exec(
            select(Assignment).where(
                Assignment.annotator_id == site.annotator_ids[who], Assignment.status == "active"
            )
        ).one()
        return assignment, s.get_one(Pair, assignment.pair_id)


def snippet(text: str) -> str:
    runs = re.findall(r"[A-Za-z0-9 ,']{12,}", text)
    return max(runs, key=len).strip()


def mine(site: Site, study: str, who: str):
    frame = annotations_frame(site.engine(), study=study)
    return frame[frame["annotator"] == f"browser-{who}"]


def stored_draft(site: Site, assignment_id: int) -> dict:
    with session(site.engine()) as s:
        return s.get_one(Assignment, assignment_id).draft or {}


def away_since(site: Site, assignment_id: int):
    with session(site.engine()) as s:
        return s.get_one(Assignment, assignment_id).away_since


def draft_once(page, site: Site, assignment_id: int, ready, *, timeout_s: float = 60) -> dict:
    """The stored draft once `ready(draft)` holds: the server stores a draft in the script run
    its message starts, which a busy machine may take a while to finish. Waits on the page
    (not with time.sleep) so that the messages it sent are counted meanwhile."""
    deadline = time.monotonic() + timeout_s
    while True:
        draft = stored_draft(site, assignment_id)
        if ready(draft) or time.monotonic() > deadline:
            return draft
        page.wait_for_timeout(100)


def expect_row(row, *, assignment: Assignment, pair: Pair, slot: str, given: dict, reason: str):
    """The stored row is exactly what was given in slots A/B, mapped back to chosen/rejected."""
    chosen, rejected = assignment.chosen_position, other_slot(assignment.chosen_position)
    assert row["pair_id"] == pair.pair_key
    assert row["chosen_position"] == chosen
    assert row["preference"] == (
        "tie" if slot == "tie" else "chosen" if slot == chosen else "rejected"
    )
    for dimension in DIMENSIONS:
        assert row[f"{dimension}_chosen"] == given[chosen][dimension]
        assert row[f"{dimension}_rejected"] == given[rejected][dimension]
    assert row["main_reason"] == reason


# Keys for: correctness A, correctness B, relevance A, relevance B, helpfulness A, helpfulness B
RATING_KEYS = ["4", "2", "5", "3", "1", "5"]
GIVEN = {
    "A": {"correctness": 4, "relevance": 5, "helpfulness": 1},
    "B": {"correctness": 2, "relevance": 3, "helpfulness": 5},
}


# --- tests --------------------------------------------------------------------------------


def test_one_screen_keys_alone_one_message_and_arrival_at_the_top(site, new_page):
    page = new_page(viewport=SCREEN)
    page.clock.install()
    sent = watch_messages(page)
    open_pair(page, site.server.login_url(site.tokens["keys"]))
    assignment, pair = current_assignment(site, "keys")
    expect(page.get_by_text("0 of ")).to_be_visible()

    # One screen at 1440x900: question, every aspect title, both whole responses, the choice.
    chosen_slot = assignment.chosen_position
    expect(response(page, chosen_slot)).to_contain_text(snippet(pair.chosen))
    expect(response(page, other_slot(chosen_slot))).to_contain_text(snippet(pair.rejected))
    aspects = page.locator(".rubric .aspect")
    expect(aspects).to_have_count(4)
    expect_first_screen(
        page,
        aspects.last,
        response(page, "A"),
        response(page, "B"),
        page.get_by_role("button", name=re.compile("^Submit")),
    )
    assert page.evaluate(SCROLL_TOPS) == []
    # Response texts flow with the page: no box of their own that scrolls.
    for slot in ("A", "B"):
        text = response(page, slot).locator(".text")
        assert text.evaluate("el => el.scrollHeight <= el.clientHeight + 1")
    save_screenshot(page, "label.png")

    # Every answer on a key, no server message until Submit. (The draft the first key starts
    # waits for the page's clock, held here: however long this takes, none goes meanwhile.)
    hold_timers(page)
    before = len(sent)
    keys(page, ["a", "b", *RATING_KEYS, "p"])  # a change of mind too: A, then B
    expect_picked(page, "Response B")
    for slot, values in GIVEN.items():
        for dimension, value in values.items():
            expect_rating(page, dimension, slot, value)
    expect_reason(page, "Personal fit")
    assert side_names_in_page(page) == []
    save_screenshot(page, "label-answered.png")
    assert len(sent) == before, f"{len(sent) - before} messages before Submit"

    scroll_down(page)
    before_submit = len(sent)
    page.keyboard.press("s")  # Submit drops the pending draft
    page.clock.resume()
    shown = next_pair(page, pair.question)
    assert len(sent) - before_submit == 1, "Submit is one message"
    [row] = mine(site, REAL_STUDY, "keys").to_dict("records")
    expect_row(row, assignment=assignment, pair=pair, slot="B", given=GIVEN, reason="personal_fit")

    # Arrival: the next pair at its top, nothing answered, the keyboard live without a click.
    assert page.evaluate(SCROLL_TOPS) == []
    assert in_viewport(page, question_box(page))
    expect(page.get_by_role("status").filter(has_text="Answer saved.")).to_be_visible()
    expect(page.get_by_text("1 of ")).to_be_visible()
    expect_picked(page, None)
    expect_rating(page, "correctness", "A", None)
    page.keyboard.press("a")
    expect_picked(page, "Response A")
    assert shown != pair.question


def test_at_1280x720_the_responses_and_the_choice_still_show(site, new_page):
    page = new_page(viewport=SMALL_SCREEN)
    open_pair(page, site.server.login_url(site.tokens["small"]))
    expect_first_screen(page)
    save_screenshot(page, "label-1280x720.png")


def test_a_refused_submit_names_the_missing_answers_in_view(site, new_page):
    page = new_page(viewport=SMALL_SCREEN)
    page.clock.install()
    sent = watch_messages(page)
    open_pair(page, site.server.login_url(site.tokens["refused"]))
    hold_timers(page)  # the draft "a" starts would be a message too, whenever this gets there
    keys(page, ["a", "4"])
    scroll_down(page)
    page.evaluate("() => window.scrollTo(0, 0)")
    before = len(sent)
    page.keyboard.press("s")
    message = page.get_by_role("alert")
    expect(message).to_have_text(
        "Please answer before submitting: correctness of response B; relevance of response A; "
        "relevance of response B; helpfulness of response A; helpfulness of response B; "
        "what mainly decided your choice."
    )
    assert in_viewport(page, message), (message.bounding_box(), page.viewport_size)
    first = rating_group(page, "correctness", "B")
    expect(first).to_have_class(re.compile(r"\bfirst-missing\b"))
    expect(first).to_have_class(re.compile(r"\bcursor\b"))  # the next digit fills it
    assert len(sent) == before, "a refused Submit stays in the browser"
    assert mine(site, REAL_STUDY, "refused").empty
    save_screenshot(page, "label-refused.png")
    keys(page, ["3", "4", "4", "4", "4", "u"])  # the message follows what is still missing
    expect(message).to_be_hidden()


def test_reload_or_a_closed_tab_keeps_every_answer_and_typing_fires_no_key(site, new_page):
    page = new_page(viewport=SCREEN)
    page.clock.install()
    sent = watch_messages(page)
    open_pair(page, site.server.login_url(site.tokens["reload"]))
    assignment, _ = current_assignment(site, "reload")
    hold_timers(page)  # the periodic draft goes when the test moves the page's clock on
    before = len(sent)
    keys(page, ["b", "3", "4", "g", "c"])
    page.keyboard.type("a b s k 5 Backspace")  # in the comment box: text, never a shortcut
    page.keyboard.press("Escape")
    expect_picked(page, "Response B")
    expect_rating(page, "relevance", "A", None)
    assert len(sent) == before, "answers stay in the browser"
    # The page is hidden (another tab, the window closed): the draft goes at once.
    page.evaluate(
        """() => { Object.defineProperty(document, 'visibilityState',
                                         {value: 'hidden', configurable: true});
                   document.dispatchEvent(new Event('visibilitychange')); }"""
    )
    page.clock.resume()  # the pending draft went with the page hidden; Streamlit sends on a timer
    draft = draft_once(page, site, assignment.id, bool)
    assert count_sent(page, sent, at_least=before + 1) == before + 1
    assert draft["slot"] == "B" and draft["reason"] == "general_quality"
    assert draft["ratings"]["correctness_A"] == 3 and draft["ratings"]["correctness_B"] == 4
    assert draft["comment"] == "a b s k 5 Backspace"
    # ... and says the page went away: the pair's lease (annotate/queue/rules.py, rule 8)
    assert away_since(site, assignment.id) is not None
    page.evaluate("() => { delete document.visibilityState; }")
    hold_timers(page)
    page.keyboard.press("5")  # after Esc, keys act again: the cursor's next rating
    expect_rating(page, "relevance", "A", 5)
    # Otherwise a draft at most every few seconds: none before DRAFT_MS, then one message.
    page.clock.run_for(DRAFT_MS - 100)
    page.wait_for_timeout(300)  # a message sent by now would be counted by now
    assert len(sent) - before == 1
    page.clock.run_for(200)
    page.clock.resume()
    draft = draft_once(page, site, assignment.id, lambda d: d["ratings"].get("relevance_A"))
    assert draft["ratings"]["relevance_A"] == 5
    assert count_sent(page, sent, at_least=before + 2) == before + 2
    assert away_since(site, assignment.id) is None  # a draft from a shown page: not away

    def expect_everything(p):
        expect_picked(p, "Response B")
        expect_rating(p, "correctness", "A", 3)
        expect_rating(p, "correctness", "B", 4)
        expect_rating(p, "relevance", "A", 5)
        expect_reason(p, "General quality")
        expect(p.get_by_role("textbox", name="Comment (optional)")).to_have_value(
            "a b s k 5 Backspace"
        )

    goto(page, page.url)  # reload
    expect_everything(page)
    other = new_page(viewport=SCREEN)  # the tab was closed: a new one, the server's draft
    open_pair(other, site.server.login_url(site.tokens["reload"]))
    expect_everything(other)
    assert current_assignment(site, "reload")[0].id == assignment.id


def test_double_submit_gives_one_row(site, new_page):
    page = new_page(viewport=SCREEN)
    open_pair(page, site.server.login_url(site.tokens["double"]))
    assignment, pair = current_assignment(site, "double")
    keys(page, ["a", *RATING_KEYS, "o"])
    submit = page.get_by_role("button", name=re.compile("^Submit"))
    submit.dblclick()
    page.keyboard.press("s")
    next_pair(page, pair.question)
    wait_idle(page, settle_ms=800)
    rows = mine(site, REAL_STUDY, "double")
    assert list(rows["pair_id"]) == [pair.pair_key]
    expect_row(rows.iloc[0], assignment=assignment, pair=pair, slot="A", given=GIVEN, reason="both")
    expect(page.get_by_text("1 of ")).to_be_visible()


def test_backspace_reopens_the_previous_pair_at_its_top_and_says_so(site, new_page):
    page = new_page(viewport={"width": 1440, "height": 600})  # short: the page scrolls
    open_pair(page, site.server.login_url(site.tokens["back"]))
    first, first_pair = current_assignment(site, "back")
    keys(page, ["b", *RATING_KEYS, "p", "s"])
    next_pair(page, first_pair.question)
    second, second_pair = current_assignment(site, "back")
    keys(page, ["a", "2"])  # a partial answer, kept while away
    scroll_down(page)
    page.keyboard.press("Backspace")
    expect(question_box(page)).to_contain_text(snippet(first_pair.question))
    wait_idle(page)
    notice = page.get_by_text("You are changing an answer you already gave")
    expect(notice).to_be_visible()
    assert in_viewport(page, notice)
    assert page.evaluate(SCROLL_TOPS) == []
    expect_picked(page, "Response B")
    for slot, values in GIVEN.items():
        for dimension, value in values.items():
            expect_rating(page, dimension, slot, value)
    keys(page, ["n", "s"])  # change to no preference and save
    expect(question_box(page)).to_contain_text(snippet(second_pair.question))
    wait_idle(page)
    expect_picked(page, "Response A")  # the partial answer came back
    expect_rating(page, "correctness", "A", 2)
    rows = mine(site, REAL_STUDY, "back")
    assert list(rows["preference"]) == ["tie"] and len(rows) == 1

    # The earlier answers: each pair's question start and the answer given, on a key.
    page.keyboard.press("h")
    listed = page.locator(".history li")
    expect(listed).to_have_count(1)
    expect(listed.first).to_contain_text(first_pair.question[:40])
    expect(listed.first).to_contain_text("No preference")
    assert second.id != first.id
    # keyboard only: Tab goes from the opened panel to its first answer, not back to the top of
    # the page (Streamlit's skip link), and Enter opens it
    page.keyboard.press("Tab")
    expect(listed.first.locator("button")).to_be_focused()
    save_screenshot(page, "label-history.png")
    page.keyboard.press("Enter")
    expect(question_box(page)).to_contain_text(snippet(first_pair.question))


def test_untrusted_text_loads_nothing_runs_nothing(site, new_page):
    page = new_page()
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    open_pair(page, site.server.login_url(site.tokens["untrusted"]))
    for key in ["d", "w", "v"]:  # rubric details, the user's words, past posts
        page.keyboard.press(key)
    expect(page.get_by_text("My post")).to_be_visible()
    page.wait_for_load_state("networkidle")
    page.wait_for_timeout(500)  # a negative check: give a stray fetch a moment to happen

    listener = site.recorder.url
    port = site.recorder.port
    assert site.recorder.requests == []
    assert [url for url in requested if f":{port}" in url] == []
    # Only the app itself (the component's inline script is loaded as a blob of the app's page)
    own = (site.server.url, f"blob:{site.server.url}")
    assert [url for url in requested if not url.startswith(own)] == []
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.title() == "Preference pairs"

    form = page.locator(".form")
    expect(
        form.locator("script, iframe, style, link, object, embed, img, a[href^=http]")
    ).to_have_count(0)
    expect(page.locator('[href^="javascript:" i], [src^="javascript:" i]')).to_have_count(0)
    expect(page.locator(f'[src*="127.0.0.1:{port}"], [href*="127.0.0.1:{port}"]')).to_have_count(0)
    expect(page.locator("[onerror], [onload]")).to_have_count(0)
    for slot in ("A", "B"):
        box = response(page, slot).locator(".text")
        expect(box.locator("[style], [class*='katex']")).to_have_count(0)
        shown = box.inner_text()
        assert "\u2060" not in shown  # nothing invisible in what an annotator copies
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
    assert side_names_in_page(page) == []
    assert not re.search(r"\b(chosen|rejected)\b", form.inner_text(), re.IGNORECASE)


def main_thread_cpu_seconds(cdp) -> float:
    """CPU time the page's main thread has used (Chromium's Performance.getMetrics): how long
    the tab was busy, whatever else the machine was doing meanwhile."""
    metrics = cdp.send("Performance.getMetrics")["metrics"]
    return next(m["value"] for m in metrics if m["name"] == "ThreadTime")


def test_pathological_markdown_shows_fast_and_headings_stay_below_the_page(site, new_page):
    page = new_page(viewport=SCREEN)
    cdp = page.context.new_cdp_session(page)
    cdp.send("Performance.enable", {"timeDomain": "threadTicks"})
    open_pair(page, site.server.login_url(site.tokens["heavy"]))
    for n in range(len(PATHOLOGICAL)):
        shown = question_box(page).inner_text()
        page.keyboard.press("a")  # the page answers keys at once
        expect_picked(page, "Response A")
        texts = page.locator("section.response .text")
        expect(texts.locator("h1, h2, h3, h4, h5, h6, table")).to_have_count(0)
        sizes = texts.evaluate_all(
            "els => els.flatMap(e => [e, ...e.querySelectorAll('*')])"
            ".map(e => parseFloat(getComputedStyle(e).fontSize))"
        )
        question_size = question_box(page).evaluate("e => parseFloat(getComputedStyle(e).fontSize)")
        assert max(sizes) < question_size  # an imitated heading is never the page's size
        # Texts flow with the page (no box of their own); the rubric stays in view.
        assert texts.evaluate_all("els => els.every(e => e.scrollHeight <= e.clientHeight + 1)")
        scroll_down(page)
        assert in_viewport(page, page.locator(".rubric .aspect").first)
        if n < len(PATHOLOGICAL) - 1:
            busy = main_thread_cpu_seconds(cdp)
            page.keyboard.press("k")  # skip to the next pathological pair
            next_pair(page, shown)
            busy = main_thread_cpu_seconds(cdp) - busy
            # about 0.1-0.5 s of CPU here; these froze Chromium on the old page
            assert busy < 5, f"the tab was busy for {busy:.1f} s showing a pathological pair"
            assert page.evaluate(SCROLL_TOPS) == []


ASPECT_SCORES = {"A": [2, 1, 0, 2], "B": [0, 1, 2, 1]}
ASPECT_KEYS = [str(ASPECT_SCORES[s][i]) for i in range(4) for s in ("A", "B")]


def test_aspect_check_on_keys_in_the_first_screen_and_kept_in_the_draft(site, new_page):
    page = new_page(viewport=SCREEN)
    page.clock.install()
    sent = watch_messages(page)
    open_pair(page, site.server.login_url(site.tokens["aspects"]))
    assignment, _pair = current_assignment(site, "aspects")
    expect_first_screen(page)
    save_screenshot(page, "label-aspects.png")
    hold_timers(page)  # no periodic draft while this answers, however long it takes
    before = len(sent)
    # The digit cursor goes on from the six ratings to the aspect scores, each aspect A then B.
    keys(page, ["b", *RATING_KEYS, *ASPECT_KEYS, "p"])
    for slot in ("A", "B"):
        for i, score in enumerate(ASPECT_SCORES[slot]):
            group = page.get_by_role("radiogroup", name=f"Aspect {i + 1} in response {slot}")
            expect(group.locator('[aria-checked="true"]')).to_have_text(str(score))
    assert len(sent) == before
    page.evaluate(
        """() => { Object.defineProperty(document, 'visibilityState',
                                         {value: 'hidden', configurable: true});
                   document.dispatchEvent(new Event('visibilitychange')); }"""
    )
    page.clock.resume()  # the pending draft went with the page hidden; Streamlit sends on a timer
    draft = draft_once(page, site, assignment.id, bool)
    assert count_sent(page, sent, at_least=before + 1) == before + 1
    assert draft["aspects"] == {
        f"{i}_{slot}": ASPECT_SCORES[slot][i] for slot in ("A", "B") for i in range(4)
    }
    other = new_page(viewport=SCREEN)  # a new tab shows them again, from the server's draft
    open_pair(other, site.server.login_url(site.tokens["aspects"]))
    group = other.get_by_role("radiogroup", name="Aspect 4 in response B")
    expect(group.locator('[aria-checked="true"]')).to_have_text("1")


def test_aspect_scores_answered_by_keys_are_stored_exactly(site, new_page):
    page = new_page(viewport=SCREEN)
    open_pair(page, site.server.login_url(site.tokens["aspects"]))
    assignment, pair = current_assignment(site, "aspects")
    keys(page, ["b", *RATING_KEYS, *ASPECT_KEYS, "p", "s"])
    next_pair(page, pair.question)
    [row] = mine(site, ASPECT_STUDY, "aspects").to_dict("records")
    expect_row(row, assignment=assignment, pair=pair, slot="B", given=GIVEN, reason="personal_fit")
    chosen, rejected = assignment.chosen_position, other_slot(assignment.chosen_position)
    with session(site.engine()) as s:
        stored = s.exec(
            select(Annotation.aspects).where(
                Annotation.annotator_id == site.annotator_ids["aspects"],
                Annotation.pair_id == pair.id,
            )
        ).one()
    assert stored == [
        {"chosen": ASPECT_SCORES[chosen][i], "rejected": ASPECT_SCORES[rejected][i]}
        for i in range(4)
    ]


def test_the_key_legend_names_only_keys_that_act(site, new_page):
    page = new_page(viewport=SCREEN)
    open_pair(page, site.server.login_url(site.tokens["bare"]))
    save_screenshot(page, "label-bare.png")
    legend = page.locator(".legend:visible").inner_text()
    # this study rates nothing and shows no narrative or posts: no digits, no W or V
    assert "rate at the cursor" not in legend and "own words" not in legend
    assert "posts" not in legend and "details" in legend and "earlier answers" in legend
    # and nothing to rate draws no empty scores box (a dashed rule) under the responses
    assert page.locator(".response .scores:visible").count() == 0
    other = new_page(viewport=SCREEN)
    open_pair(other, site.server.login_url(site.tokens["panels"]))
    legend = other.locator(".legend:visible").inner_text()
    assert "rate at the cursor" in legend and "own words" in legend and "posts" in legend


def test_esc_closes_the_details_words_and_posts_panels(site, new_page):
    page = new_page(viewport=SCREEN)
    open_pair(page, site.server.login_url(site.tokens["panels"]))
    for key, name in [("d", "details"), ("w", "narrative"), ("v", "posts")]:
        panel = page.locator(f'[data-panel="{name}"]')
        page.keyboard.press(key)
        expect(panel).to_be_visible()
        page.keyboard.press("Escape")
        expect(panel).to_be_hidden()
    page.keyboard.press("d")
    page.keyboard.press("w")
    page.keyboard.press("Escape")  # every open panel at once
    expect(page.locator("[data-panel]:visible")).to_have_count(0)


def test_guidelines_first_then_the_mouse_works_too(site, new_page):
    page = new_page(viewport=SCREEN)
    goto(page, site.server.login_url(site.tokens["flow"]))
    assert "token" not in page.url
    cookie = next(c for c in page.context.cookies() if c["name"] == "annotate_token")
    assert cookie["httpOnly"] and cookie["value"] == site.tokens["flow"]
    expect(page.get_by_role("heading", name="Guidelines")).to_be_visible()
    # Enter starts, with no Tab to reach the button first
    expect(page.get_by_role("button", name="Start labelling")).to_be_focused()
    page.keyboard.press("Enter")
    expect(question_box(page)).to_be_visible()
    wait_idle(page)
    assignment, pair = current_assignment(site, "flow")
    choice(page, "Response A").click()
    for slot, values in GIVEN.items():
        for dimension, value in values.items():
            rating_group(page, dimension, slot).get_by_role("radio", name=str(value)).click()
    # clicking a rating moves the cursor after it: the next digit fills the rating after it
    rating_group(page, "relevance", "B").get_by_role("radio", name="1").click()
    page.keyboard.press("4")
    expect_rating(page, "helpfulness", "A", 4)
    page.get_by_role("radio", name=re.compile("^Both")).click()
    page.get_by_role("button", name="Guidelines").click()
    expect(page.locator('[data-panel="guidelines"]')).to_be_visible()
    page.get_by_role("button", name=re.compile("^Submit")).click()
    next_pair(page, pair.question)
    expect(page.get_by_text("1 of 15 pairs")).to_be_visible()
    [row] = mine(site, FLOW_STUDY, "flow").to_dict("records")
    given = {"A": {**GIVEN["A"], "helpfulness": 4}, "B": {**GIVEN["B"], "relevance": 1}}
    expect_row(row, assignment=assignment, pair=pair, slot="A", given=given, reason="both")


def test_the_maintainers_link_lands_on_admin_and_no_page_asks_another_host(site, new_page):
    page = new_page(viewport=SCREEN)
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    goto(page, site.server.login_url(site.tokens["maintainer"]))
    page.wait_for_url(re.compile(r"/admin$"))
    expect(page.get_by_role("link", name="Label pairs")).to_be_visible()
    icon = page.locator('link[rel~="icon"]').first.get_attribute("href")
    assert icon is not None
    assert not re.match(r"https?://", icon) or icon.startswith(site.server.url), icon
    page.get_by_role("link", name="Label pairs").click()
    expect(question_box(page)).to_be_visible()
    assert page.url.endswith("/label")
    page.wait_for_load_state("networkidle")
    own = (site.server.url, f"blob:{site.server.url}", "data:")
    assert [url for url in requested if not url.startswith(own)] == []


@pytest.mark.parametrize("token", [None, "not-a-real-token"], ids=["stranger", "wrong-token"])
def test_strangers_see_a_polite_sign_in_message_and_no_pair(site, new_page, token):
    page = new_page()
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    goto(page, site.server.url + ("/" if token is None else f"/?token={token}"))
    page.wait_for_load_state("networkidle")
    assert [url for url in requested if not url.startswith((site.server.url, "data:"))] == []
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
    expect(page.locator(".form")).to_have_count(0)


def side_names_in_page(page) -> list[str]:
    keys_in_page = re.findall(r"st-key-[^\s\"']*", page.content())
    return page.evaluate(SIDE_NAMES) + [
        k for k in keys_in_page if re.search("chosen|rejected", k, re.IGNORECASE)
    ]
