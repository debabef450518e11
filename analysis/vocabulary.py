"""The contract's values, defined once (contract sections 3 and 6).

The models, the labelling form, the wording shown to annotators, the analysis and the
benchmarks all take these names from here; `analysis/` depends on nothing in `annotate/`, so
they live on this side. Words shown to people for them: annotate/wording.py.
"""

from __future__ import annotations

# What an annotator can prefer, as stored: the pair's two responses, or neither.
SIDES = ("chosen", "rejected")
TIE = "tie"
PREFERENCES = (*SIDES, TIE)

# Where a response is shown: the slots A and B (chosen_position is one of them).
SLOTS = ("A", "B")

# General-quality dimensions, each rated per response; their columns are f"{dimension}_{side}".
DIMENSIONS = ("correctness", "relevance", "helpfulness")
RATING_COLUMNS = [f"{dimension}_{side}" for side in SIDES for dimension in DIMENSIONS]
DEFAULT_SCALE = (1, 5)

# What mainly decided the choice.
REASONS = ("personal_fit", "general_quality", "both", "unsure")

# The aspect check's match score of a response for one rubric aspect.
ASPECT_SCORES = (0, 1, 2)

# The annotations table (contract section 3), in this order in every format.
COLUMNS = [
    "pair_id",
    "annotator",
    "preference",
    "chosen_position",
    *RATING_COLUMNS,
    "main_reason",
    "comment",
    "seconds",
    "submitted_at",
    "aspects",  # aspect check only: a JSON list, one {chosen, rejected} 0-2 per rubric aspect
]
# What one annotator answered for one pair: every column but the two keys.
ANSWER_COLUMNS = [name for name in COLUMNS if name not in ("pair_id", "annotator")]
