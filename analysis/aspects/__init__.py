"""The per-aspect rubric check: scores, humans against the scorer, its tables."""
