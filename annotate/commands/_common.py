"""Helpers shared by command modules."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine


class Arguments(Protocol):
    """Where options are added: a parser or one of its argument groups."""

    def add_argument(self, *names: str, **options: Any) -> argparse.Action: ...


def engine_from(args: argparse.Namespace) -> Engine:
    from annotate.engine import get_engine  # here: commands that need no database start faster

    return get_engine(args.db)


def non_negative_int(text: str) -> int:
    """An argparse type: a whole number, 0 or more."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return value


def add_study_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--study", default="default", metavar="NAME", help="study name (default: default)"
    )
