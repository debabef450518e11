"""Annotators and maintainers: accounts, personal links, Prolific participants."""
