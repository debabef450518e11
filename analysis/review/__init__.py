"""A maintainer's review of contested pairs: which pairs to look at first, and the decisions
taken on them in the report (docs/reference/report-keys.md: `pairs[].decision`, `review`)."""
