"""Helpers shared by command modules."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from annotate.errors import UserError

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


# Where commands write. One rule for every command: a command creates what it writes (the
# file, or the report's folder) but never the folders above it, so that a mistyped path is
# refused instead of growing a tree of folders; and it checks that before any work, so that
# a long report does not fail at its last step.


def output_file(value: str, *, option: str) -> Path:
    """The file an option names (`--out`, `--export-valid`, ...), checked writable."""
    path = Path(value)
    if path.is_dir():
        raise UserError(f"{option} {value} is a folder; give a file name in it")
    _writable_folder(path.parent, option=option, value=value)
    return path


def output_folder(value: str, *, option: str) -> Path:
    """A folder a command writes its files into: created if missing, inside an existing one."""
    path = Path(value)
    if path.exists() and not path.is_dir():
        raise UserError(f"{option} {value} is a file; give a folder (it is created if missing)")
    _writable_folder(path if path.is_dir() else path.parent, option=option, value=value)
    return path


def _writable_folder(folder: Path, *, option: str, value: str) -> None:
    shown = str(folder) if str(folder) != "." else "the current folder"
    if not folder.exists():
        raise UserError(
            f"{option} {value}: the folder {shown} does not exist; create it first "
            "(commands create the file or folder they write, never the folders above it)"
        )
    if not folder.is_dir():
        raise UserError(f"{option} {value}: {shown} is a file, not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UserError(f"{option} {value}: no permission to write in {shown}")
