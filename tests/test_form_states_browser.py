"""The labelling form never sticks (issue 19): every path that sends something to the server ends
with the form usable again and the server's message on screen, or is not offered at all.

Each test signs in as its own annotator in Chromium (tests/browser.py). "Usable" is checked the
way an annotator finds out: a key pressed after the server answered acts within 2 seconds.
"""

from __future__ import annotations

import pytest

from annotate.engine import get_engine
from annotate.people.auth import create_annotator
from annotate.queue.gold import set_gold
from annotate.store.db import session
from annotate.studies.catalog import get_or_create_study, update_study_options
from annotate.studies.pair_import import import_pairs
from tests.browser import (  # noqa: F401  (the fixtures `browser` and `new_page`)
    AppServer,
    browser_fixture,
    expect,
    goto,
    new_page_fixture,
    wait_idle,
)
from tests.factories import pair_record
from tests.test_label_browser import (
    expect_picked,
    next_pair,
    open_pair,
    question_box,
    write_jsonl,
)

pytestmark = pytest.mark.browser

USABLE_MS = 2_000  # the bound: usable again within 2 s of the server's answer
FULL_TIE = ["n", "4", "2", "5", "3", "1", "5", "p", "s"]  # no preference, six ratings, reason
PLAIN = "states-plain"
SINGLE = "states-single"
QUALIFY = "states-qualify"
PEOPLE = {
    "oldest": PLAIN,
    "tabs": PLAIN,
    "cancel": PLAIN,
    "busy": PLAIN,
    "first": PLAIN,
    "offline": PLAIN,
    "last": SINGLE,
    "gold": QUALIFY,
}


@pytest.fixture(scope="module")
def site(tmp_path_factory, browser):  # `browser` first: skip before starting a server
    folder = tmp_path_factory.mktemp("form_states")
    db_url = f"sqlite:///{folder / 'app.sqlite'}"
    engine = get_engine(db_url)
    import_pairs(
        engine,
        write_jsonl(folder / "p.jsonl", [pair_record(i) for i in range(4)]),
        study_name=PLAIN,
    )
    import_pairs(engine, write_jsonl(folder / "s.jsonl", [pair_record("only")]), study_name=SINGLE)
    import_pairs(
        engine,
        write_jsonl(folder / "q.jsonl", [pair_record(i) for i in range(5)]),
        study_name=QUALIFY,
    )
    tokens = {}
    with session(engine) as s:
        studies = {name: get_or_create_study(s, name) for name in (PLAIN, SINGLE, QUALIFY)}
        update_study_options(s, studies[QUALIFY], qualification_gold=2)
        for who, study in PEOPLE.items():
            _, tokens[who] = create_annotator(s, name=f"states-{who}", study_id=studies[study].id)
        qualify_id = studies[QUALIFY].id
    set_gold(engine, study_id=qualify_id, pair_keys=["p0", "p1"], answer="tie")
    with AppServer(db_url) as server:
        yield server, tokens


def sign_in(site, new_page, who: str):
    server, tokens = site
    page = new_page(viewport={"width": 1440, "height": 900})
    open_pair(page, server.login_url(tokens[who]))
    return page


def answer_tie(page) -> str:
    """Answer the pair on screen completely (no preference) and wait for the next one."""
    shown = question_box(page).inner_text()
    for key in FULL_TIE:
        page.keyboard.press(key)
    return next_pair(page, shown)


def expect_usable(page) -> None:
    """Not greyed, and a key acts within USABLE_MS (A: response A picked)."""
    expect(page.locator(".form.saving")).to_have_count(0, timeout=USABLE_MS)
    page.keyboard.press("a")
    expect_picked_within(page, "Response A")


def expect_picked_within(page, label: str) -> None:
    checked = page.get_by_role("radiogroup", name="Which response would this user prefer?")
    expect(checked.locator('[aria-checked="true"]')).to_contain_text(label, timeout=USABLE_MS)


def previous_button(page):
    return page.get_by_role("button", name="Previous pair")


def test_backspace_on_the_oldest_earlier_answer_is_not_offered_and_the_form_stays_live(
    site, new_page
):
    page = sign_in(site, new_page, "oldest")
    first = question_box(page).inner_text()
    answer_tie(page)
    page.keyboard.press("Backspace")  # the one earlier answer: the oldest
    expect(question_box(page)).to_have_text(first)
    wait_idle(page)
    expect(page.get_by_text("You are changing an answer you already gave")).to_be_visible()
    expect(previous_button(page)).to_have_count(0)  # nothing before the oldest answer
    expect(page.locator(".legend")).not_to_contain_text("previous pair")
    page.keyboard.press("Backspace")  # heard, and said so: it did nothing, silently
    expect(page.locator(".message")).to_have_text(
        "This is the oldest answer you can change: there is no earlier pair."
    )
    wait_idle(page)
    expect_usable(page)


def test_a_pair_saved_in_another_tab_is_shown_with_the_message_and_the_form_is_live(site, new_page):
    page = sign_in(site, new_page, "tabs")
    first = question_box(page).inner_text()
    second = answer_tie(page)
    other = page.context.new_page()
    goto(other, page.url)
    for tab in (page, other):
        tab.keyboard.press("Backspace")
        expect(question_box(tab)).to_have_text(first)
        wait_idle(tab)
    page.keyboard.press("a")
    page.keyboard.press("s")
    expect(question_box(page)).to_have_text(second)
    other.keyboard.press("b")
    other.keyboard.press("s")
    message = other.get_by_text("answered in another tab")
    expect(message).to_be_visible(timeout=USABLE_MS + 8_000)  # one server round trip first
    expect(other.locator(".form.saving")).to_have_count(0, timeout=USABLE_MS)
    expect_picked(other, "Response A")  # the answer kept, not this tab's unsaved one
    # the message is a warning, not a success, and stays out of the progress bar
    expect(other.locator(".bar [role=status]")).to_have_count(0)
    expect(other.locator('.message[data-tone="warning"]')).to_contain_text("another tab")
    other.keyboard.press("b")
    expect_picked_within(other, "Response B")


def test_after_qualification_gold_the_first_real_pair_offers_no_previous_pair(site, new_page):
    page = sign_in(site, new_page, "gold")
    answer_tie(page)
    answer_tie(page)  # two gold checks, both as expected: qualified
    # the progress counts the checks (a count that stalled would give a check away) ...
    expect(page.get_by_text("2 of ")).to_be_visible()
    expect(previous_button(page)).to_have_count(0)  # the history leaves gold checks out
    # ... so the list and Backspace do not say there are no earlier answers
    page.keyboard.press("h")
    expect(page.get_by_text("None of your answers so far can be changed here.")).to_be_visible()
    expect(page.get_by_text("No earlier answers yet.")).to_have_count(0)
    page.keyboard.press("Escape")
    page.keyboard.press("Backspace")
    expect(page.locator(".message")).to_have_text("There is no earlier pair you can go back to.")
    wait_idle(page)
    expect_usable(page)


def test_skip_on_the_last_pair_left_says_so_and_the_form_stays_live(site, new_page):
    page = sign_in(site, new_page, "last")
    first = question_box(page).inner_text()
    page.keyboard.press("k")
    expect(page.locator(".message")).to_contain_text("last pair", timeout=USABLE_MS + 8_000)
    expect(question_box(page)).to_have_text(first)
    expect_usable(page)


def test_a_cancelled_change_does_not_come_back(site, new_page):
    page = sign_in(site, new_page, "cancel")
    first = question_box(page).inner_text()
    second = answer_tie(page)
    page.keyboard.press("Backspace")
    expect(question_box(page)).to_have_text(first)
    wait_idle(page)
    page.keyboard.press("a")  # a change in the browser, then cancelled
    expect_picked(page, "Response A")
    page.keyboard.press("k")
    expect(question_box(page)).to_have_text(second)
    wait_idle(page)
    page.keyboard.press("Backspace")
    expect(question_box(page)).to_have_text(first)
    wait_idle(page)
    expect_picked(page, "No preference")  # the stored answer, not the cancelled change
    page.reload()
    wait_idle(page)
    expect(question_box(page)).to_be_visible()


def test_keys_pressed_while_sending_are_not_applied(site, new_page):
    server, tokens = site
    page = new_page(viewport={"width": 1440, "height": 900})
    page.add_init_script(HOLD_SERVER_MESSAGES)
    open_pair(page, server.login_url(tokens["busy"]))
    first = question_box(page).inner_text()
    page.evaluate("() => { window.__holdServer = true; }")
    page.keyboard.press("k")  # skip: sending, and the server's answer held back meanwhile
    expect(page.locator(".form.saving")).to_have_count(1)
    page.keyboard.press("a")  # must not be applied, now or after the answer
    page.keyboard.press("s")
    page.evaluate("() => window.__releaseServer()")
    next_pair(page, first)
    expect(
        page.get_by_role("radiogroup", name="Which response would this user prefer?").locator(
            '[aria-checked="true"]'
        )
    ).to_have_count(0)
    slots = page.evaluate(
        "() => Object.values(sessionStorage).map((v) => { try { return JSON.parse(v).slot; }"
        " catch (e) { return null; } })"
    )
    assert "A" not in slots


# Holds every message the server sends to the page while window.__holdServer is true, and hands
# them on, in order, on window.__releaseServer() (Streamlit's socket is the page's only one).
HOLD_SERVER_MESSAGES = """(() => {
  const queue = [];
  window.__holdServer = false;
  window.__releaseServer = () => {
    window.__holdServer = false;
    while (queue.length) { const [fn, self, ev] = queue.shift(); fn.call(self, ev); }
  };
  const wrap = (fn) => function (ev) {
    if (window.__holdServer) queue.push([fn, this, ev]); else fn.call(this, ev);
  };
  const add = WebSocket.prototype.addEventListener;
  WebSocket.prototype.addEventListener = function (type, fn, options) {
    return add.call(this, type, type === "message" && fn ? wrap(fn) : fn, options);
  };
  const own = Object.getOwnPropertyDescriptor(WebSocket.prototype, "onmessage");
  Object.defineProperty(WebSocket.prototype, "onmessage", {
    configurable: true,
    get() { return own.get.call(this); },
    set(fn) { own.set.call(this, fn ? wrap(fn) : fn); },
  });
})();"""


def test_the_first_pair_says_backspace_has_nowhere_to_go(site, new_page):
    page = sign_in(site, new_page, "first")
    page.keyboard.press("Backspace")
    expect(page.locator(".message")).to_have_text(
        "There is no earlier pair yet: this is your first."
    )
    expect_usable(page)


def test_going_offline_says_the_connection_is_lost_and_the_answers_kept(site, new_page):
    """Offline, Streamlit may still call its socket connected, and a Submit then said the
    server "may be reconnecting to its database": the page says what it knows instead."""
    page = sign_in(site, new_page, "offline")
    for key in ["n", "4", "2", "5", "3", "1", "5", "p"]:
        page.keyboard.press(key)
    page.context.set_offline(True)
    page.keyboard.press("s")
    alert = page.get_by_role("alert")
    expect(alert).to_contain_text("Connection to the server lost")
    expect(alert).to_contain_text("Your answers on this page are kept")
    page.wait_for_timeout(3_500)  # past the "still saving" delay: still the true message
    expect(page.get_by_text("database")).to_have_count(0)
    shown = question_box(page).inner_text()
    page.context.set_offline(False)
    next_pair(page, shown)  # back online, the Submit goes through


def test_a_bogus_link_says_it_is_not_valid(site, new_page):
    """/?token=bogus looked exactly like a visit without a link: the login middleware sends the
    browser on with link=invalid and the page says so, once."""
    server, _ = site
    page = new_page(viewport={"width": 1440, "height": 900})
    goto(page, f"{server.url}/?token=bogus")
    expect(page.get_by_role("heading", name="Please sign in")).to_be_visible()
    expect(page.get_by_text("The link you opened is not valid")).to_be_visible()
    assert "token" not in page.url
    goto(page, f"{server.url}/")  # a plain visit afterwards: no complaint
    expect(page.get_by_role("heading", name="Please sign in")).to_be_visible()
    expect(page.get_by_text("The link you opened is not valid")).to_have_count(0)
