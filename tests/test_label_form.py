"""What the labelling form is given and sends back, without a browser: the inert HTML of model
text, the order of the questions (the digit cursor's), the aspect scores mapped back from the
slots, the browser's answers checked, and every earlier answer listed (both databases)."""

from __future__ import annotations

import time

import pytest

from annotate.engine import get_engine
from annotate.labelling.answers import FormState, aspects_from_slots, form_questions
from annotate.labelling.earlier import earlier_answers, previous_pair
from annotate.labelling.step import submit
from annotate.store.models import Study
from annotate.studies.demo import GUIDELINES
from annotate.web.label_form import guidelines_html
from annotate.web.render import MAX_STRUCTURED_LINES, safe_html
from tests.factories import make_study
from tests.labelling_helpers import current_item, missing_answers

# --- safe_html ---------------------------------------------------------------------------


def test_model_text_becomes_escaped_html_with_a_small_fixed_set_of_tags():
    text = (
        "# Big title\nSetext title\n=====\n\n- **bold** and *italic* and `<code>`\n"
        "1. first\n\n![img](http://x.example/a.png) [link](javascript:alert(1)) "
        '<script>alert(1)</script> <img src=x onerror=alert(1)> <a href="http://x">x</a>\n'
        "```\n<b>fenced</b>\n```\n| a | b |\n|---|---|"
    )
    assert safe_html(text) == (
        '<p class="heading">Big title</p>'
        "<p>Setext title<br>=====</p>"
        "<ul><li><strong>bold</strong> and <em>italic</em> and <code>&lt;code&gt;</code></li></ul>"
        '<ol start="1"><li>first</li></ol>'
        "<p>![img](http://x.example/a.png) [link](javascript:alert(1)) "
        "&lt;script&gt;alert(1)&lt;/script&gt; &lt;img src=x onerror=alert(1)&gt; "
        "&lt;a href=&quot;http://x&quot;&gt;x&lt;/a&gt;</p>"
        "<pre><code>&lt;b&gt;fenced&lt;/b&gt;</code></pre>"
        "<p>| a | b |<br>|---|---|</p>"
    )


def test_hard_wrapped_guidelines_show_as_whole_paragraphs_model_text_keeps_its_lines():
    """The guidelines panel broke lines mid-sentence (issue 19): every newline of the
    hard-wrapped source was drawn as a line break. A chat's newlines still are."""
    shown = guidelines_html(study_row(guidelines=GUIDELINES))
    assert "<br>" not in shown
    assert "Put yourself in <em>this</em> user's shoes: the one\n   that fits" not in shown
    assert "<em>this</em> user&#x27;s shoes: the one\nthat fits their stated preferences" in shown
    assert shown.startswith("<p>You will see a question a real person asked, what we know")
    assert "Keys: <strong>A</strong> or <strong>B</strong>" in shown
    assert guidelines_html(study_row(guidelines="  \n")) == ""
    assert safe_html("Dear Sam,\nthanks") == "<p>Dear Sam,<br>thanks</p>"
    assert safe_html("Dear Sam,\nthanks", newline="space") == "<p>Dear Sam,\nthanks</p>"


def test_no_invisible_characters_and_no_markup_from_emphasis_markers():
    shown = safe_html("Mail a@b.example, www.example.com, :material/home: **<b>x</b>**")
    assert "\u2060" not in shown
    assert shown == (
        "<p>Mail a@b.example, www.example.com, :material/home: "
        "<strong>&lt;b&gt;x&lt;/b&gt;</strong></p>"
    )


@pytest.mark.parametrize(
    "text",
    [
        "- " * 50_000,
        "1. " * 33_000,
        "|" + "a|" * 30_000 + "\n|" + "-|" * 30_000,
        "\n".join(["- x"] * 49_000),
        "> " * 50_000,
        "*" * 100_000,
    ],
    ids=["dashes", "numbers", "table", "items", "quotes", "stars"],
)
def test_pathological_markdown_has_bounded_structure_and_cost(text):
    # CPU time of this thread: what rendering costs, however many processes share the machine
    started = time.thread_time()
    shown = safe_html(text)
    assert time.thread_time() - started < 1.0
    assert shown.count("<li>") <= MAX_STRUCTURED_LINES
    assert shown.count("<") <= 4 * MAX_STRUCTURED_LINES + 10  # tags, not one per marker


def test_long_text_past_the_limit_is_plain_text_not_lost():
    lines = [f"- item {i}" for i in range(MAX_STRUCTURED_LINES + 5)]
    shown = safe_html("\n".join(lines))
    assert shown.count("<li>") == MAX_STRUCTURED_LINES
    assert shown.endswith(
        '<div class="plain">' + "\n".join(lines[MAX_STRUCTURED_LINES:]) + "</div>"
    )


# --- questions, aspects, the browser's answers ------------------------------------------


def study_row(**options) -> Study:
    return Study(name="s", **options)


def test_the_cursor_order_is_ratings_then_aspect_scores_each_a_then_b():
    study = study_row(aspect_check=True)
    questions = form_questions(study, n_aspects=2)
    assert [q.field for q in questions] == [
        "slot",
        "correctness_A",
        "correctness_B",
        "relevance_A",
        "relevance_B",
        "helpfulness_A",
        "helpfulness_B",
        "0_A",
        "0_B",
        "1_A",
        "1_B",
        "reason",
    ]
    assert [q.field for q in form_questions(study_row(), n_aspects=2)][-2:] == [
        "helpfulness_B",
        "reason",
    ]


def test_aspect_scores_map_back_from_the_slots_the_annotator_saw():
    form = FormState(aspects={"0_A": 2, "0_B": 0, "1_A": 1, "1_B": 2})
    assert aspects_from_slots(form, chosen_position="B") == [
        {"chosen": 0, "rejected": 2},
        {"chosen": 2, "rejected": 1},
    ]
    assert aspects_from_slots(form, chosen_position="A") == [
        {"chosen": 2, "rejected": 0},
        {"chosen": 1, "rejected": 2},
    ]
    assert aspects_from_slots(FormState(), chosen_position="A") is None


def test_answers_from_the_browser_outside_the_study_count_as_missing():
    study = study_row(aspect_check=True, allow_ties=False)
    sent = {
        "slot": "tie",
        "ratings": {
            "correctness_A": 9,
            "correctness_B": True,
            "relevance_A": "4",
            "relevance_B": 3,
        },
        "reason": "because",
        "comment": "x" * 5000,
        "aspects": {"0_A": 3, "0_B": 2},
    }
    form = FormState.from_browser(sent, study=study, n_aspects=1)
    assert form.slot is None and form.reason is None
    assert form.ratings["relevance_B"] == 3
    assert [form.ratings[k] for k in ("correctness_A", "correctness_B", "relevance_A")] == [
        None,
        None,
        None,
    ]
    assert form.aspects == {"0_A": None, "0_B": 2}
    assert len(form.comment) == 4000
    assert missing_answers(study, form, n_aspects=1) == [
        "which response this user would prefer",
        "correctness of response A",
        "correctness of response B",
        "relevance of response A",
        "helpfulness of response A",
        "helpfulness of response B",
        "aspect 1 in response A",
        "what mainly decided your choice",
    ]
    assert FormState.from_browser("not a form", study=study, n_aspects=1).slot is None


# --- earlier answers ----------------------------------------------------------------------


def test_every_earlier_answer_is_listed_newest_first_with_its_question(db_url, tmp_path):
    engine = get_engine(db_url)
    _, [(annotator_id, _token)] = make_study(engine, tmp_path, n_pairs=210, annotators=1)
    answered = []
    for n in range(205):
        item = current_item(engine, annotator_id=annotator_id)
        slot = ("A", "B", "tie")[n % 3]
        ratings = {f"{d}_{s}": 4 for d in ("correctness", "relevance", "helpfulness") for s in "AB"}
        form = FormState(slot=slot, ratings=ratings, reason="both")
        submit(engine, item=item, form=form, seconds=1.0)
        answered.append((item.pair.id, item.pair.question, slot))
    listed = earlier_answers(engine, annotator_id=annotator_id)
    assert len(listed) == 205
    words = {"A": "Response A", "B": "Response B", "tie": "No preference"}
    expected = [(pid, words[slot]) for pid, _, slot in reversed(answered)]
    assert [(a.pair_id, a.answer) for a in listed] == expected
    assert all(
        question.startswith(a.question.rstrip("…"))
        for a, (_, question, _) in zip(listed, reversed(answered), strict=True)
    )
    newest, second = listed[0].pair_id, listed[1].pair_id
    assert previous_pair(engine, annotator_id=annotator_id, before=None) == newest
    assert previous_pair(engine, annotator_id=annotator_id, before=newest) == second
    assert previous_pair(engine, annotator_id=annotator_id, before=listed[-1].pair_id) is None
