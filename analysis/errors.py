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


SHOWN_CHARS = 40  # of a value quoted in an error message: ids are short, a hostile one is not


def quoted(value: object, *, limit: int = SHOWN_CHARS) -> str:
    """`value` as an error message quotes it (its repr, as `{value!r}` does), a string cut to
    its first `limit` characters and an ellipsis: a 100,000-character id stays a short line."""
    if isinstance(value, str) and len(value) > limit:
        return repr(value[:limit] + "…")
    return repr(value)
