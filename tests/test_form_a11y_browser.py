"""The labelling form for every annotator (issue 19, WCAG 2.1 AA): keyboard only with single-key
shortcuts turned off (Tab, arrow keys, Space and Enter answer a whole pair within 12 tab stops),
one tab stop per radio group, named response regions, aria-expanded on the panel toggles, and
axe-core (npm, injected into the page) finding no serious or critical violation, and no moderate
one, on the labelling page: plain, with a refused Submit, and editing an earlier answer.

axe-core comes from `npm ci` at the repository root (as .ci/run does); without it the axe test
skips saying so, unless ANNOTATE_TEST_JS=require, where it fails.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from annotate.engine import get_engine
from annotate.people.auth import create_annotator
from annotate.store.db import session
from annotate.studies.catalog import get_or_create_study
from annotate.studies.demo import GUIDELINES
from annotate.studies.pair_import import import_pairs
from tests.browser import (  # noqa: F401  (the fixtures `browser` and `new_page`)
    AppServer,
    browser_fixture,
    expect,
    new_page_fixture,
    save_screenshot,
    wait_idle,
)
from tests.factories import pair_record
from tests.realistic_pairs import realistic_record
from tests.test_label_browser import (
    ASPECT_KEYS,
    PREFERENCE_QUESTION,
    RATING_KEYS,
    expect_picked,
    in_viewport,
    keys,
    next_pair,
    open_pair,
    question_box,
    write_jsonl,
)

pytestmark = pytest.mark.browser

STUDY = "a11y"
ASPECT_STUDY = "a11y-aspects"  # real-layout pairs (four rubric aspects) with the aspect check
AXE = Path(__file__).resolve().parents[1] / "node_modules" / "axe-core" / "axe.min.js"
SHORTCUTS_OFF = "localStorage.setItem('annotate-single-key-shortcuts', 'off')"
MAX_TAB_STOPS = 12


@pytest.fixture(scope="module")
def site(tmp_path_factory, browser):
    folder = tmp_path_factory.mktemp("form_a11y")
    db_url = f"sqlite:///{folder / 'app.sqlite'}"
    engine = get_engine(db_url)
    records = [pair_record(i) for i in range(4)]
    import_pairs(engine, write_jsonl(folder / "p.jsonl", records), study_name=STUDY)
    rng = random.Random(19)
    real = [realistic_record(rng, i, posts=40, response_words=100) for i in range(2)]
    import_pairs(engine, write_jsonl(folder / "real.jsonl", real), study_name=ASPECT_STUDY)
    tokens = {}
    with session(engine) as s:
        study = get_or_create_study(s, STUDY)
        for who in ("keyboard", "axe", "digits", "tree"):
            annotator, tokens[who] = create_annotator(s, name=f"a11y-{who}", study_id=study.id)
            annotator.guidelines_seen = True
        aspects = get_or_create_study(s, ASPECT_STUDY)
        aspects.aspect_check = True
        aspects.guidelines = GUIDELINES
        s.add(aspects)
        for who in ("aspects-axe", "aspects-tree"):
            annotator, tokens[who] = create_annotator(s, name=f"a11y-{who}", study_id=aspects.id)
            annotator.guidelines_seen = True
    with AppServer(db_url) as server:
        yield server, tokens


def focused(page) -> dict:
    """The focused element inside the form's shadow root: its role, name and group."""
    return page.evaluate(
        """() => {
          let el = document.activeElement;
          while (el && el.shadowRoot && el.shadowRoot.activeElement) el = el.shadowRoot.activeElement;
          if (!el) return {};
          const group = el.closest('[role="radiogroup"]');
          return {tag: el.tagName.toLowerCase(), role: el.getAttribute('role'),
                  text: (el.textContent || '').trim(), group: group && group.getAttribute('aria-label')};
        }"""
    )


def test_keyboard_only_with_shortcuts_off_answers_a_pair_within_twelve_tab_stops(site, new_page):
    server, tokens = site
    page = new_page(viewport={"width": 1440, "height": 900})
    page.add_init_script(SHORTCUTS_OFF)
    open_pair(page, server.login_url(tokens["keyboard"]))
    shown = question_box(page).inner_text()
    page.keyboard.press("a")  # a single key does nothing with the shortcuts off
    expect_picked(page, None)
    # the focus is on the form's first answer: the first rating group's tab stop
    assert focused(page)["group"] == "Correctness of response A"
    tabs = 0
    groups = []
    while True:
        where = focused(page)
        if where["role"] == "radio":
            groups.append(where["group"])
            page.keyboard.press("ArrowRight")  # checks the next option (the ARIA radio pattern)
        elif where["tag"] == "textarea":
            pass
        elif where["text"].startswith("Submit"):
            page.keyboard.press("Enter")
            break
        page.keyboard.press("Tab")
        tabs += 1
        assert tabs <= MAX_TAB_STOPS, f"Submit not reached in {MAX_TAB_STOPS} tab stops: {groups}"
    assert groups[:6] == [
        f"{d} of response {s}"
        for s in ("A", "B")
        for d in ("Correctness", "Relevance", "Helpfulness")
    ]
    assert PREFERENCE_QUESTION in groups and "What mainly decided your choice?" in groups
    next_pair(page, shown)  # saved: the next pair is shown


def test_regions_toggles_and_one_tab_stop_per_group(site, new_page):
    server, tokens = site
    page = new_page(viewport={"width": 1440, "height": 900})
    open_pair(page, server.login_url(tokens["keyboard"]))
    for slot in ("A", "B"):
        expect(page.get_by_role("region", name=f"Response {slot}", exact=True)).to_have_count(1)
    details = page.get_by_role("button", name="Details")
    expect(details).to_have_attribute("aria-expanded", "false")
    page.keyboard.press("d")
    expect(details).to_have_attribute("aria-expanded", "true")
    page.keyboard.press("Escape")
    expect(details).to_have_attribute("aria-expanded", "false")
    groups = page.locator('[role="radiogroup"]')
    assert groups.count() >= 8  # six ratings, the choice, the reason
    for i in range(groups.count()):
        expect(groups.nth(i).locator('[role="radio"][tabindex="0"]')).to_have_count(1)


def axe_violations(page) -> list[dict]:
    if not AXE.exists():
        reason = "axe-core is not installed (run `npm ci` at the repository root)"
        if os.environ.get("ANNOTATE_TEST_JS", "").lower() == "require":
            pytest.fail(reason)
        pytest.skip(reason)
    page.add_script_tag(path=str(AXE))
    return page.evaluate(
        # The whole page, Streamlit's own "Skip to main content" link included: axe counts it
        # a skip link (exempt from `region`) only while it comes before the page's first link,
        # and the form's "Sign out" link, in its shadow root, came first in axe's order.
        """async () => (await axe.run(document, {resultTypes: ['violations']})).violations
            .map((v) => ({id: v.id, impact: v.impact, help: v.help,
                          nodes: v.nodes.slice(0, 3).map((n) => n.html.slice(0, 300))}))"""
    )


def expect_accessible(page, what: str) -> None:
    wait_idle(page)
    found = [v for v in axe_violations(page) if v["impact"] in ("moderate", "serious", "critical")]
    assert found == [], f"{what}: {found}"


def test_axe_finds_nothing_moderate_or_worse_on_the_labelling_page(site, new_page):
    server, tokens = site
    page = new_page(viewport={"width": 1440, "height": 900})
    open_pair(page, server.login_url(tokens["axe"]))
    expect_accessible(page, "a new pair")
    page.keyboard.press("s")  # refused: nothing answered
    expect(page.locator(".refused")).to_be_visible()
    expect_accessible(page, "a refused Submit")
    save_screenshot(page, "label-a11y-refused.png")
    shown = question_box(page).inner_text()
    for key in ["b", "4", "2", "5", "3", "1", "5", "p", "s"]:
        page.keyboard.press(key)
    next_pair(page, shown)
    page.keyboard.press("Backspace")
    expect(page.get_by_text("You are changing an answer you already gave")).to_be_visible()
    expect_accessible(page, "editing an earlier answer")


def test_each_digit_key_leaves_its_row_in_the_viewport(site, new_page):
    server, tokens = site
    page = new_page(viewport={"width": 1280, "height": 300})  # the ratings start below the fold
    open_pair(page, server.login_url(tokens["digits"]))
    order = [(d, s) for d in ("correctness", "relevance", "helpfulness") for s in ("A", "B")]
    for (dimension, slot), key in zip(order, ["4", "2", "5", "3", "1", "5"], strict=True):
        page.keyboard.press(key)
        row = page.get_by_role("radiogroup", name=f"{dimension.title()} of response {slot}")
        expect(row.locator('[aria-checked="true"]')).to_have_text(key)
        assert in_viewport(page, row), f"{dimension} {slot} is off screen after key {key}"


def test_axe_finds_nothing_moderate_or_worse_with_the_aspect_check(site, new_page):
    """Real-layout pairs (four rubric aspects, past posts) with every aspect scored, then
    with the guidelines, details and past posts open."""
    server, tokens = site
    page = new_page(viewport={"width": 1440, "height": 900})
    open_pair(page, server.login_url(tokens["aspects-axe"]))
    keys(page, ["b", *RATING_KEYS, *ASPECT_KEYS, "p"])
    group = page.get_by_role("radiogroup", name="Aspect 4 in response B")
    expect(group.locator('[aria-checked="true"]')).to_have_count(1)
    expect_accessible(page, "the aspect check, every aspect scored")
    for key, button in (("?", "Guidelines"), ("d", "Details")):
        page.keyboard.press(key)
        expect(page.get_by_role("button", name=button)).to_have_attribute("aria-expanded", "true")
        expect_accessible(page, f"the aspect check with {button} open")
        page.keyboard.press("Escape")
    save_screenshot(page, "label-a11y-aspects.png")


def test_the_accessibility_tree_names_every_part_of_the_form(site, new_page):
    """What a screen reader is given (Playwright's ARIA snapshot of the page): the two
    responses as named regions, every question a named radio group with its options, the
    shortcuts setting, the panel toggles and Submit."""
    server, tokens = site
    page = new_page(viewport={"width": 1440, "height": 900})
    open_pair(page, server.login_url(tokens["aspects-tree"]))
    tree = page.locator("body").aria_snapshot()
    for slot in ("A", "B"):
        assert f'region "Response {slot}"' in tree, tree
        for dimension in ("Correctness", "Relevance", "Helpfulness"):
            assert f'radiogroup "{dimension} of response {slot}"' in tree, tree
        for aspect in range(1, 5):
            assert f'radiogroup "Aspect {aspect} in response {slot}"' in tree, tree
    assert f'radiogroup "{PREFERENCE_QUESTION}"' in tree, tree
    assert 'radiogroup "What mainly decided your choice?"' in tree, tree
    assert 'checkbox "single-key shortcuts"' in tree, tree
    assert 'button "Guidelines' in tree and 'button "Details' in tree, tree
    assert 'button "Submit' in tree, tree
    # each radio group holds named radios (the ratings' digits, the choices' words)
    correctness = page.get_by_role("radiogroup", name="Correctness of response A")
    expect(correctness).to_match_aria_snapshot(
        """
        - radiogroup "Correctness of response A":
          - radio /1/
          - radio /2/
          - radio /3/
          - radio /4/
          - radio /5/
        """
    )
    choice = page.get_by_role("radiogroup", name=PREFERENCE_QUESTION)
    expect(choice.get_by_role("radio", name="Response A")).to_have_count(1)
    expect(choice.get_by_role("radio", name="Response B")).to_have_count(1)
    # the shortcuts setting is a real checkbox: turning it off is kept for the next page
    shortcuts = page.get_by_role("checkbox", name="single-key shortcuts")
    expect(shortcuts).to_be_checked()
    shortcuts.uncheck()
    stored = page.evaluate("() => localStorage.getItem('annotate-single-key-shortcuts')")
    assert stored == "off"
