"""The documented values, defined once (docs/reference/file-formats.md and addresses.md).

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

# The annotations table (docs/reference/file-formats.md, annotations table), in this order in every format.
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
    "pair_version",  # the version of the pair that was shown (1 first)
    "aspects",  # aspect check only: a JSON list, one {chosen, rejected} 0-2 per rubric aspect
]
# Which answer a row is: the pair, the annotator and the version of the pair they saw.
KEY_COLUMNS = ("pair_id", "annotator", "pair_version")
# What one annotator answered for one version of a pair: every column but the keys.
ANSWER_COLUMNS = [name for name in COLUMNS if name not in KEY_COLUMNS]

# Review decisions on a version of a pair (docs/reference/command-line.md, `annotate review`): keep it
# whatever the crowd's verdict, drop it (its category a verdict name), or revise it.
DECISIONS = ("keep", "drop", "revise")
