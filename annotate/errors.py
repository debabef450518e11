"""Errors that reach a person: one readable sentence, never a traceback.

Defined in analysis/errors.py (analysis/ depends on nothing in annotate/, and raises them
too); every annotate module imports them from here."""

from analysis.errors import InputError, UserError, quoted

__all__ = ["InputError", "UserError", "quoted"]
