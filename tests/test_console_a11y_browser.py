"""The maintainer console for every maintainer (issue 19, WCAG 2.1 AA) and readable on a laptop:
axe-core finds no moderate, serious or critical violation on any console page, and the Agreement page at
1440x900 and 1280x720 has charts whose labels do not overlap, labelled points, and tables that
fit the page without scrolling sideways. One server for the module (tests/browser.py).

axe-core comes from `npm ci` at the repository root (as .ci/run does).
"""

from __future__ import annotations

import itertools

import pytest

from annotate.web.views.admin import PAGES
from tests.browser import (  # noqa: F401  (the fixtures `browser` and `new_page`)
    AppServer,
    browser_fixture,
    expect,
    goto,
    new_context,
    new_page_fixture,
    save_screenshot,
    wait_idle,
)
from tests.test_console_browser import _build
from tests.test_form_a11y_browser import axe_violations

pytestmark = pytest.mark.browser

WIDE = {"width": 1440, "height": 900}
SMALL = {"width": 1280, "height": 720}


@pytest.fixture(scope="module")
def site(tmp_path_factory, browser):  # `browser` first: skip before starting a server
    db_url = f"sqlite:///{tmp_path_factory.mktemp('console_a11y') / 'console.db'}"
    tokens = _build(db_url)
    with AppServer(db_url) as server:
        yield server, tokens


def maintainer_page(site, new_page, viewport: dict):
    server, tokens = site
    page = new_page(viewport=viewport)
    goto(page, server.login_url(tokens["maintainer"]))
    return page


def open_console_page(page, server, url_path: str, title: str) -> None:
    goto(page, f"{server.url}/{url_path}")
    expect(page.get_by_role("heading", name=title, exact=True).first).to_be_visible()
    wait_drawn(page)


def wait_drawn(page) -> None:
    """The charts on screen drawn (those in a tab not open are not)."""
    for chart in page.locator(".js-plotly-plot:visible").all():
        chart.wait_for(state="visible")
    wait_idle(page)


def open_tab(page, name: str) -> None:
    page.get_by_role("tab", name=name, exact=True).click()
    wait_drawn(page)


HEADING_LEVELS = """() => [...document.querySelectorAll('[data-testid="stMain"] h1, '
    + '[data-testid="stMain"] h2, [data-testid="stMain"] h3, '
    + '[data-testid="stMain"] h4, [data-testid="stMain"] h5, '
    + '[data-testid="stMain"] h6')]
    .filter((h) => h.offsetParent !== null)
    .map((h) => Number(h.tagName[1]))"""


@pytest.fixture(scope="module")
def every_console_page(site, browser):
    """Each console page opened once by the maintainer at 1440x900: what axe finds on it and
    the levels of its visible headings, in order (the tests below check one each)."""
    server, tokens = site
    context = new_context(browser, viewport=WIDE)
    try:
        page = context.new_page()
        goto(page, server.login_url(tokens["maintainer"]))
        seen = {}
        for _, title, _, url_path in PAGES:
            open_console_page(page, server, url_path, title)
            seen[url_path] = {
                "headings": page.evaluate(HEADING_LEVELS),
                "axe": axe_violations(page),
            }
            # a page in tabs (Agreement): every tab's content, as its reader opens it
            tabs = [t.inner_text().strip() for t in page.get_by_role("tab").all()]
            for tab in tabs[1:]:
                open_tab(page, tab)
                seen[f"{url_path} / {tab}"] = {
                    "headings": page.evaluate(HEADING_LEVELS),
                    "axe": axe_violations(page),
                }
        yield seen
    finally:
        context.close()


def test_axe_finds_nothing_moderate_or_worse_on_any_console_page(every_console_page):
    found = {}
    for url_path, seen in every_console_page.items():
        bad = [v for v in seen["axe"] if v["impact"] in ("moderate", "serious", "critical")]
        if bad:
            found[url_path] = bad
    assert found == {}


def test_console_headings_go_down_one_level_at_a_time(every_console_page):
    """WCAG 1.3.1 / axe's heading-order (moderate): a page's headings start at h1 and never
    skip a level on the way down."""
    assert {url_path for *_, url_path in PAGES} <= set(every_console_page)
    for url_path, seen in every_console_page.items():
        levels = seen["headings"]
        assert levels and levels[0] == 1, (url_path, levels)
        jumps = [(a, b) for a, b in itertools.pairwise(levels) if b > a + 1]
        assert jumps == [], (url_path, levels)


# Every text drawn on a plotly chart: tick labels, axis titles, the title, the legend, notes,
# point labels. Two of them overlapping by more than a sliver makes both unreadable.
CHART_TEXT_BOXES = """(chart) => {
  const selectors = ['.xtick text', '.ytick text', '.g-xtitle text', '.g-ytitle text',
    '.g-x2title text', '.g-x3title text', '.gtitle', '.legendtext', '.annotation-text',
    '.textpoint text', '.bartext'];
  const boxes = [];
  for (const sel of selectors) {
    for (const el of chart.querySelectorAll(sel)) {
      const r = el.getBoundingClientRect();
      if (r.width > 0 && r.height > 0 && (el.textContent || '').trim())
        boxes.push({sel, text: el.textContent.trim(), x: r.x, y: r.y, w: r.width, h: r.height});
    }
  }
  const chartBox = chart.getBoundingClientRect();
  const outside = boxes.filter((b) => b.x < chartBox.x - 1 || b.x + b.w > chartBox.right + 1);
  const overlaps = [];
  for (let i = 0; i < boxes.length; i++) {
    for (let j = i + 1; j < boxes.length; j++) {
      const a = boxes[i], b = boxes[j];
      const w = Math.min(a.x + a.w, b.x + b.w) - Math.max(a.x, b.x);
      const h = Math.min(a.y + a.h, b.y + b.h) - Math.max(a.y, b.y);
      if (w > 2 && h > 2) overlaps.push([a.text, b.text]);
    }
  }
  return {n: boxes.length, overlaps, outside: outside.map((b) => b.text),
          points: chart.querySelectorAll('.textpoint text').length,
          notes: chart.querySelectorAll('.annotation-text').length};
}"""

TABLE_OVERFLOW = """(grid) => {
  const scroller = grid.querySelector('.dvn-scroller') || grid;
  return {scroll: scroller.scrollWidth, client: scroller.clientWidth};
}"""


@pytest.mark.parametrize("viewport", [WIDE, SMALL], ids=["1440x900", "1280x720"])
def test_the_agreement_page_is_readable_on_a_laptop(site, new_page, viewport):
    server, _ = site
    page = maintainer_page(site, new_page, viewport)
    open_console_page(page, server, "admin-agreement", "Agreement")
    problems = []
    # the page is as tall as the tab being read (it was 4,745 px in one column); the charts
    # are five plots, the longest part
    for tab, most in [("Headline numbers", 2000), ("In words", 2000), ("Charts", 3000),
                      ("Pairs", 2000), ("Report files", 2000)]:  # fmt: skip
        open_tab(page, tab)
        tall = page.evaluate("() => document.querySelector('[data-testid=stMain]').scrollHeight")
        if tall > most:
            problems.append((tab, f"{tall} px tall"))
    # the headline table: static, its notes wrapped whole inside the page's width
    open_tab(page, "Headline numbers")
    table = page.locator('[data-testid="stTable"]').first
    size = table.evaluate(TABLE_OVERFLOW)
    if size["scroll"] > size["client"] + 1:
        problems.append(("the headline table scrolls sideways", size))
    open_tab(page, "Charts")
    charts = page.locator('[data-testid="stPlotlyChart"] .js-plotly-plot')
    expect(charts).to_have_count(5)
    for i in range(charts.count()):
        chart = charts.nth(i)
        chart.scroll_into_view_if_needed()
        page.wait_for_timeout(200)
        title = chart.locator(".gtitle").first.text_content()
        drawn = chart.evaluate(CHART_TEXT_BOXES)
        if drawn["overlaps"] or drawn["outside"]:
            problems.append((title, drawn["overlaps"], drawn["outside"]))
        if title.startswith("Per annotator") and drawn["points"] < 3:
            problems.append((title, "the annotators' points do not carry their names"))
        if title.startswith("Agreement per question") and drawn["notes"] != 2:
            problems.append((title, "the reliable and tentative lines are not labelled"))
    open_tab(page, "Pairs")
    grid = page.locator('[data-testid="stDataFrame"]:visible').first
    size = grid.evaluate(TABLE_OVERFLOW)
    if size["scroll"] > size["client"] + 1:
        problems.append(("the pairs table scrolls sideways", size))
    save_screenshot(page, f"console-agreement-{viewport['width']}x{viewport['height']}.png")
    assert problems == []
