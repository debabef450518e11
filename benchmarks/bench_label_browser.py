"""A scripted annotator labels pairs in Chromium: server round trips and Submit-to-next-pair time.

The database holds `--pairs` pairs (default 10,000) shaped like the real Personalized RewardBench
release (`../shared/tools/make_realistic_pairs.py`): 4 rubric aspects, responses of about 90
words, hundreds of past posts. One annotator (guidelines already read) labels `--label` pairs
(default 30) in Debian's Chromium through Playwright: a choice, the six ratings, a main reason,
Submit. For every pair it prints

- round trips: websocket messages the browser sent to the server from the moment the pair was
  ready until the next one was (every Streamlit rerun, draft or submission is one message);
- Submit to next: seconds from the Submit key press until the next pair's question is shown and
  the script run is over;

then the median (p50) and p95 of both. `--page component` (default) uses the keys of docs/reference/addresses.md
 alone. `--page classic` drives the labelling page as it was before the one-component
form (ratings and reason only by mouse, one rerun per click); that page is no longer in the
package, so run it from the commit before it, e.g.
`git archive 9007e2b | tar -x -C /tmp/old && PYTHONPATH=/tmp/old python
/tmp/old/benchmarks/bench_label_browser.py --page classic --keep DIR` (same DIR, same data).

    python benchmarks/bench_label_browser.py [--page component|classic] [--pairs 10000]
        [--label 30] [--posts 200] [--keep DIR]

`--keep DIR` builds the database there once and reuses it (the import of 10,000 records of
about 80 KB takes a minute or two).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlmodel import select  # noqa: E402

from annotate.engine import get_engine  # noqa: E402
from annotate.people.auth import create_annotator  # noqa: E402
from annotate.store.db import session  # noqa: E402
from annotate.store.models import Annotation, Annotator  # noqa: E402
from annotate.store.schema import Mode  # noqa: E402
from annotate.studies.catalog import get_or_create_study  # noqa: E402
from annotate.studies.pair_import import import_pairs  # noqa: E402
from tests.browser import AppServer, goto, launch_browser, rerun, wait_idle  # noqa: E402
from tests.realistic_pairs import realistic_record  # noqa: E402

STUDY = "bench-browser"
DIMENSIONS = ("Correctness", "Relevance", "Helpfulness")
# First visible question number on the page, once the script run is over (searches shadow roots,
# where a component with isolated styles keeps its markup).
READY_JS = """(previous) => {
    const app = document.querySelector('[data-testid="stApp"]');
    if (!app || app.getAttribute('data-test-script-state') !== 'notRunning') return false;
    const texts = [document.body.innerText];
    for (const el of document.querySelectorAll('*')) {
        if (el.shadowRoot) texts.push(el.shadowRoot.textContent);
    }
    const match = texts.join(' ').match(/question number (\\d+)/);
    return match && match[1] !== previous ? match[1] : false;
}"""


def build(folder: Path, *, pairs: int, posts: int) -> tuple[str, str]:
    """The database (built once per folder) and a fresh annotator's token."""
    db = folder / f"label-{pairs}-{posts}.sqlite"
    url = f"sqlite:///{db}"
    # a kept database may predate this release (the old page's run builds it): upgrade it, as
    # `annotate serve` would
    engine = get_engine(url, schema=Mode.UPGRADE)
    if not (folder / f"label-{pairs}-{posts}.done").exists():
        source = folder / "pairs.jsonl"
        rng = random.Random(0)
        with source.open("w", encoding="utf-8") as out:
            for i in range(pairs):
                out.write(json.dumps(realistic_record(rng, i, posts=posts)) + "\n")
        started = time.perf_counter()
        import_pairs(engine, source, study_name=STUDY)
        print(f"imported {pairs} pairs in {time.perf_counter() - started:.0f} s", flush=True)
        source.unlink()
        (folder / f"label-{pairs}-{posts}.done").touch()
    with session(engine) as s:
        study = get_or_create_study(s, STUDY)
        n = len(s.exec(select(Annotator.id)).all())
        annotator, token = create_annotator(s, name=f"bench-{n + 1}", study_id=study.id)
        annotator.guidelines_seen = True
    return url, token


def answer_classic(page) -> None:
    """The page before the component: A by key, ratings and reason by mouse, one rerun each."""
    with rerun(page):
        page.keyboard.press("a")
    for title in DIMENSIONS:
        for slot in ("A", "B"):
            radio = page.get_by_role("radiogroup", name=f"{title} of response {slot}").get_by_role(
                "radio", name="4", exact=True
            )
            with rerun(page):
                radio.click()
    reason = page.get_by_role("radiogroup", name="What mainly decided your choice?")
    with rerun(page):
        reason.get_by_role("radio").first.click()


def answer_component(page) -> None:
    """docs/reference/addresses.md, keys: choice, six ratings under the cursor, a reason; all in the browser."""
    for key in ["a", "4", "4", "3", "5", "4", "4", "p"]:
        page.keyboard.press(key)
        page.wait_for_timeout(40)  # a fast annotator, not a burst of synthetic events


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--page", choices=["component", "classic"], default="component")
    parser.add_argument("--pairs", type=int, default=10_000)
    parser.add_argument("--label", type=int, default=30)
    parser.add_argument("--posts", type=int, default=200)
    parser.add_argument("--keep", help="build the database in this folder and keep it")
    args = parser.parse_args()

    folder = Path(args.keep or tempfile.mkdtemp(prefix="bench-label-browser-"))
    folder.mkdir(parents=True, exist_ok=True)
    url, token = build(folder, pairs=args.pairs, posts=args.posts)
    answer = answer_component if args.page == "component" else answer_classic

    from playwright.sync_api import sync_playwright

    sent: list[float] = []
    trips, waits = [], []
    with AppServer(url) as server, sync_playwright() as playwright:
        browser = launch_browser(playwright)
        context = browser.new_context(viewport={"width": 1440, "height": 900})
        context.set_default_timeout(60_000)
        page = context.new_page()
        page.on("websocket", lambda ws: ws.on("framesent", lambda _: sent.append(1)))
        goto(page, server.login_url(token))
        shown = page.wait_for_function(READY_JS, arg="", polling="raf").json_value()
        print(f"{'pair':>4} {'question':>8} {'round trips':>11} {'submit->next s':>14}")
        for n in range(1, args.label + 1):
            wait_idle(page, settle_ms=50)
            before = len(sent)
            answer(page)
            pressed = time.perf_counter()
            page.keyboard.press("s")
            nxt = page.wait_for_function(READY_JS, arg=shown, polling="raf").json_value()
            waits.append(time.perf_counter() - pressed)
            trips.append(len(sent) - before)
            print(f"{n:>4} {shown:>8} {trips[-1]:>11} {waits[-1]:>14.3f}", flush=True)
            shown = nxt
        browser.close()

    engine = get_engine(url)
    with session(engine) as s:
        stored = len(s.exec(select(Annotation.id)).all())

    def p95(values):
        return statistics.quantiles(values, n=20, method="inclusive")[-1]

    print(
        f"page={args.page} pairs={args.pairs} labelled={args.label} stored annotations={stored}\n"
        f"round trips per pair: p50 {statistics.median(trips):.0f}, p95 {p95(trips):.0f}, "
        f"total {sum(trips)}\n"
        f"Submit to next pair: p50 {statistics.median(waits):.3f} s, p95 {p95(waits):.3f} s"
    )


if __name__ == "__main__":
    main()
