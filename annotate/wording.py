"""Words shown to annotators, kept in one place so pages and tests agree."""

DIMENSION_HELP = {
    "correctness": ("Correctness", "Is what it says accurate and free of errors?"),
    "relevance": ("Relevance", "Does it address the question that was asked?"),
    "helpfulness": ("Helpfulness", "Would it genuinely help someone asking this?"),
}

REASON_LABELS = {
    "personal_fit": "Personal fit: it matches this user's preferences",
    "general_quality": "General quality: it is simply the better answer",
    "both": "Both",
    "unsure": "Unsure",
}

PREFERENCE_QUESTION = "Which response would this user prefer?"
REASON_QUESTION = "What mainly decided your choice?"
QUALITY_INTRO = (
    "Rate each response's **general quality**, independently of this user's preferences: "
    "would it be a good answer for anyone asking this question?"
)
