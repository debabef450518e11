"""annotate add-annotator NAME [--study NAME] [--admin] [--url URL]"""

from __future__ import annotations

import argparse

from annotate.commands._common import add_study_option, engine_from
from annotate.people.links import BASE_URL_VAR, DEFAULT_BASE_URL, configured_base_url

NAME = "add-annotator"
ORDER = 20
HELP = (
    "Create an annotator (or a maintainer with --admin) in an existing study and print their "
    "personal login link."
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", metavar="NAME", help="annotator name, unique")
    add_study_option(parser)
    parser.add_argument("--admin", action="store_true", help="a maintainer: may open /admin")
    parser.add_argument("--email", help="email for single sign-on (maintainers with st.login)")
    parser.add_argument(
        "--url",
        help=f"the app's address as annotators open it, with its path if it has one, e.g. "
        f"https://example.org/annotate (default: ${BASE_URL_VAR}, else {DEFAULT_BASE_URL} "
        "and server.baseUrlPath from .streamlit/config.toml)",
    )


def run(args: argparse.Namespace) -> int:
    from annotate.people.accounts import invite
    from annotate.store.db import read
    from annotate.store.models import id_of
    from annotate.studies.catalog import get_study
    from annotate.web.paths import configured_prefix

    engine = engine_from(args)
    study_id = read(engine, lambda s: id_of(get_study(s, args.study)))  # never from a typo
    # never a guess at a running server's port: the address is given, configured or the default
    given = args.url or configured_base_url()
    # else the local server's address, under the path prefix it would be started with
    url = given or DEFAULT_BASE_URL + configured_prefix()
    # the console's way to invite (annotate/people/accounts.py), so both check and create alike
    annotator, link = invite(
        engine,
        study_id=study_id,
        name=args.name,
        email=args.email,
        admin=args.admin,
        base_url=url,
    )
    role = "maintainer" if annotator.is_admin else "annotator"
    print(f"{role} {annotator.name!r} added to study {args.study!r}.")
    if given is None:
        print(
            f"The link points at {url}; for the address annotators open, give "
            f"--url https://... or set ${BASE_URL_VAR}."
        )
    print("Their personal link:")
    print(link)
    return 0
