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
