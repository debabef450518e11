"""A maintainer's review of contested pairs: which pairs to look at first, and the decisions
taken on them in the report (contract section 4: `pairs[].decision`, `review`)."""
