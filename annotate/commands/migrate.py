"""annotate migrate: upgrade the database schema explicitly (docs/reference/command-line.md, the schema)."""

from __future__ import annotations

import argparse

NAME = "migrate"
ORDER = 75
HELP = (
    "Create or upgrade the database schema to this version's (other commands, except serve "
    "and demo, never upgrade an existing database). Take a backup first."
)


def configure(parser: argparse.ArgumentParser) -> None:
    pass


def run(args: argparse.Namespace) -> int:
    from annotate.engine import get_engine
    from annotate.store.db import read, resolve_url
    from annotate.store.schema import Mode, current_revisions, recorded_revisions

    url = resolve_url(args.db)
    before = recorded_revisions(url)
    engine = get_engine(url, schema=Mode.UPGRADE)
    after = ", ".join(read(engine, lambda s: current_revisions(s.connection())))
    shown = engine.url.render_as_string(hide_password=True)
    if before == after:
        print(f"the schema of {shown} is up to date (revision {after})")
    elif not before:
        print(f"the schema of {shown} was created (revision {after})")
    else:
        print(f"the schema of {shown} was upgraded from revision {before} to {after}")
    return 0
