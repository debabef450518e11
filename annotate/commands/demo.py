"""annotate demo: build the demo study, print its login links and serve.

Only hashes of login tokens are stored, so the links of an earlier run cannot be printed again:
each run issues new links for the demo accounts it finds and says that the earlier ones stopped
working (the study, its pairs and any answers are kept).
"""

from __future__ import annotations

import argparse

from annotate.commands.serve import add_server_options, app_prefix, prepare, run_server
from annotate.people.links import login_link

NAME = "demo"
ORDER = 5
HELP = "Create a demo study from the sample pairs, print demo login links, and serve the app."


def configure(parser: argparse.ArgumentParser) -> None:
    add_server_options(parser)
    parser.add_argument(
        "--no-serve", action="store_true", help="only build the demo and print links"
    )


def link_host(address: str) -> str:
    """The host for printed links: where a browser on this machine reaches the server."""
    return "localhost" if address in ("localhost", "0.0.0.0", "::", "127.0.0.1") else address


def run(args: argparse.Namespace) -> int:
    from annotate.engine import get_engine
    from annotate.studies.demo import DEMO_STUDY, build_demo

    # the port is checked first when it will serve: no links to whatever holds it
    url = prepare(args, serving=not args.no_serve)
    demo = build_demo(get_engine(url))
    prefix = app_prefix(args)
    base = f"http://{link_host(args.address)}:{args.port}{prefix}"
    print(f"Demo study {DEMO_STUDY!r} is ready in {url}")
    if demo.reissued:
        print(
            "  (new links: the demo links printed by an earlier `annotate demo` on this "
            "database no longer work; answers given with them are kept)"
        )
    for name, is_admin, token in demo.accounts:
        role = f"maintainer (also opens {prefix}/admin)" if is_admin else "annotator"
        print(f"  {name:<18} {role:<32} {login_link(token, base)}")
    if args.no_serve:
        return 0
    print("Open one of the links above in your browser. Press Ctrl+C to stop.", flush=True)
    return run_server(url, args)
