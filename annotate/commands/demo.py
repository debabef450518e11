"""annotate demo: build the demo study, print its login links and serve."""

from __future__ import annotations

import argparse

from annotate.auth import login_link
from annotate.commands.serve import absolute_url, add_server_options, serve
from annotate.db import get_engine, resolve_url
from annotate.demo import DEMO_STUDY, build_demo

NAME = "demo"
ORDER = 5
HELP = "Create a demo study from the sample pairs, print demo login links, and serve the app."


def configure(parser: argparse.ArgumentParser) -> None:
    add_server_options(parser)
    parser.add_argument(
        "--no-serve", action="store_true", help="only build the demo and print links"
    )


def run(args: argparse.Namespace) -> int:
    url = absolute_url(resolve_url(args.db))
    accounts = build_demo(get_engine(url))
    base = f"http://localhost:{args.port}"
    print(f"Demo study {DEMO_STUDY!r} is ready in {url}")
    for name, is_admin, token in accounts:
        role = "maintainer (also opens /admin)" if is_admin else "annotator"
        print(f"  {name:<18} {role:<32} {login_link(token, base)}")
    if args.no_serve:
        return 0
    print("Open one of the links above in your browser. Press Ctrl+C to stop.", flush=True)
    args.db = url
    return serve(args)
