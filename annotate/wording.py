"""Words shown to annotators, kept in one place so pages and tests agree. The values they
name come from analysis/vocabulary.py, in its order (zip(..., strict=True) fails on a
vocabulary change that the words do not follow)."""

from analysis.vocabulary import DIMENSIONS, REASONS

DIMENSION_HELP = dict(
    zip(
        DIMENSIONS,
        [
            ("Correctness", "Is what it says accurate and free of errors?"),
            ("Relevance", "Does it address the question that was asked?"),
            ("Helpfulness", "Would it genuinely help someone asking this?"),
        ],
        strict=True,
    )
)

REASON_LABELS = dict(
    zip(
        REASONS,
        [
            "Personal fit: it matches this user's preferences",
            "General quality: it is simply the better answer",
            "Both",
            "Unsure",
        ],
        strict=True,
    )
)

PREFERENCE_QUESTION = "Which response would this user prefer?"
REASON_QUESTION = "What mainly decided your choice?"


# Where there is nothing to go back to. An annotator's answers to gold checks are final and
# never listed (nothing on the page tells a check from a pair), but the progress counts them:
# these words stay true either way, without saying which answers were checks.
def no_earlier_pair(*, editing: bool, answered: int) -> str:
    """What Backspace (Previous pair) says where there is no earlier pair to open."""
    if editing:
        return "This is the oldest answer you can change: there is no earlier pair."
    if answered:
        return "There is no earlier pair you can go back to."
    return "There is no earlier pair yet: this is your first."


def no_earlier_answers(*, answered: int) -> str:
    """What the earlier answers' list says when it lists none."""
    return (
        "None of your answers so far can be changed here."
        if answered
        else "No earlier answers yet."
    )
