"""Helpers shared by command modules."""

from __future__ import annotations

import argparse

from sqlalchemy.engine import Engine

from annotate.db import get_engine


def engine_from(args: argparse.Namespace) -> Engine:
    return get_engine(args.db)


def add_study_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--study", default="default", metavar="NAME", help="study name (default: default)"
    )
