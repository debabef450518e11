"""The `annotate` command line: one module per subcommand under `annotate.commands`.

Each command module defines NAME, HELP, ORDER (its place in --help), `configure(parser)` and
`run(args) -> int`; modules are discovered, so adding a command touches no other file.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

import annotate.commands
from annotate.errors import UserError


def command_modules() -> list:
    modules = [
        importlib.import_module(f"annotate.commands.{info.name}")
        for info in pkgutil.iter_modules(annotate.commands.__path__)
        if not info.name.startswith("_")
    ]
    return sorted(modules, key=lambda m: (getattr(m, "ORDER", 100), m.NAME))


def _common_options(*, defaults: bool) -> argparse.ArgumentParser:
    # The same options before and after the subcommand; the subcommand's copy must not
    # overwrite a value given before it with its default, hence SUPPRESS there.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--db",
        metavar="URL",
        default=None if defaults else argparse.SUPPRESS,
        help="database URL (default: $ANNOTATE_DATABASE_URL, else sqlite:///annotate.db)",
    )
    common.add_argument(
        "--debug",
        action="store_true",
        default=False if defaults else argparse.SUPPRESS,
        help="show tracebacks on errors",
    )
    return common


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="annotate",
        description="Human evaluation of personalized preference pairs.",
        parents=[_common_options(defaults=True)],
    )
    common = _common_options(defaults=False)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in command_modules():
        command = sub.add_parser(
            module.NAME, help=module.HELP, description=module.HELP, parents=[common]
        )
        module.configure(command)
        command.set_defaults(handler=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except UserError as exc:
        if args.debug:
            raise
        print(f"annotate {args.command}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # an unexpected failure still gets one readable line
        if args.debug:
            raise
        print(
            f"annotate {args.command}: unexpected error: {type(exc).__name__}: {exc} "
            "(run again with --debug for the traceback)",
            file=sys.stderr,
        )
        return 1


if __name__ == "__main__":
    sys.exit(main())
