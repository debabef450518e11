"""Per-pair verdicts, the validity and quality checks, and the conclusion."""
