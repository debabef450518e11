"""Errors that reach a person: one readable sentence, never a traceback (shared by analysis/
and annotate/, which re-exports them)."""


class UserError(Exception):
    """A problem the user can fix (bad input, missing study, unreachable database)."""


class InputError(UserError):
    """Invalid input file: every problem found, each naming its line or row and field."""

    def __init__(self, source: str, problems: list[str]):
        self.source = source
        self.problems = problems
        shown = problems[:50]
        more = (
            f"\n  ... and {len(problems) - len(shown)} more" if len(problems) > len(shown) else ""
        )
        noun = "problem" if len(problems) == 1 else "problems"
        body = "\n".join(f"  {p}" for p in shown)
        super().__init__(f"{source}: {len(problems)} {noun}, nothing was written:\n{body}{more}")
