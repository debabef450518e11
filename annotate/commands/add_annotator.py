"""annotate add-annotator NAME [--study NAME] [--admin] [--url URL]"""

from __future__ import annotations

import argparse

from annotate.auth import (
    BASE_URL_VAR,
    DEFAULT_BASE_URL,
    configured_base_url,
    create_annotator,
    login_link,
)
from annotate.commands._common import add_study_option, engine_from
from annotate.store.db import write
from annotate.studies import get_study
from annotate.web.paths import configured_prefix

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
    def work(s):
        study = get_study(s, args.study)  # never a new study from a typo
        return create_annotator(
            s, name=args.name, study_id=study.id, is_admin=args.admin, email=args.email
        )

    annotator, token = write(engine_from(args), work)
    role = "maintainer" if annotator.is_admin else "annotator"
    # never a guess at a running server's port: the address is given, configured or the default
    url = args.url or configured_base_url()
    print(f"{role} {annotator.name!r} added to study {args.study!r}.")
    if url is None:
        # the local server's address, under the path prefix it would be started with
        url = DEFAULT_BASE_URL + configured_prefix()
        print(
            f"The link points at {url}; for the address annotators open, give "
            f"--url https://... or set ${BASE_URL_VAR}."
        )
    print("Their personal link:")
    print(login_link(token, url))
    return 0
