"""The `annotate` command line: one module per subcommand under `annotate.commands`.

Each command module defines NAME, HELP, ORDER (its place in --help), `configure(parser)` and
`run(args) -> int` (and DATABASE = False when it reads no database: it then takes no --db);
modules are discovered, so adding a command touches no other file.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
from types import ModuleType
from typing import Any

import annotate.commands
from annotate.errors import UserError


def version() -> str:
    """The installed distribution's version (pyproject.toml)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("prefpair-annotate")
    except PackageNotFoundError:  # run from a source tree that was not installed
        return "unknown (not installed)"


class _VersionAction(argparse.Action):
    """--version, with the installed version looked up only when asked (importlib.metadata
    took a fifth of `annotate --help`'s start-up)."""

    def __init__(
        self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs: Any
    ) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        print(f"annotate {version()}")
        parser.exit()


def _module_names() -> list[str]:
    return [
        info.name
        for info in pkgutil.iter_modules(annotate.commands.__path__)
        if not info.name.startswith("_")
    ]


def command_modules(argv: list[str] | None = None) -> list[ModuleType]:
    """Every command module, or only the one `argv` names: a command imports what it needs
    (SQLAlchemy, pandas, ...), and `annotate report --annotations ...` needs no database
    library, so starting only the named command saves most of the start-up time. A command
    NAME is its module's name with dashes: import-pairs is import_pairs."""
    names = _module_names()
    named = _command_in(argv or [], names)
    modules = [importlib.import_module(f"annotate.commands.{name}") for name in named or names]
    return sorted(modules, key=lambda m: (getattr(m, "ORDER", 100), m.NAME))


def _command_in(argv: list[str], names: list[str]) -> list[str]:
    skip = False
    for token in argv:
        if skip:
            skip = False
        elif token == "--db":  # the only common option with a value
            skip = True
        elif not token.startswith("-"):
            name = token.replace("-", "_")
            return [name] if name in names else []
    return []


def _common_options(*, defaults: bool, database: bool = True) -> argparse.ArgumentParser:
    # The same options before and after the subcommand; the subcommand's copy must not
    # overwrite a value given before it with its default, hence SUPPRESS there. A command
    # that reads no database (its module says DATABASE = False) lists no --db.
    common = argparse.ArgumentParser(add_help=False)
    if database:
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


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="annotate",
        description="Human evaluation of personalized preference pairs.",
        parents=[_common_options(defaults=True)],
    )
    parser.add_argument("--version", action=_VersionAction, help="show the version and exit")
    common = {
        database: _common_options(defaults=False, database=database) for database in (True, False)
    }
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in command_modules(argv):
        database = getattr(module, "DATABASE", True)
        command = sub.add_parser(
            module.NAME, help=module.HELP, description=module.HELP, parents=[common[database]]
        )
        module.configure(command)
        command.set_defaults(handler=module.run, uses_database=database)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    if args.db is not None and not args.uses_database:
        parser.error(f"{args.command} reads no database: leave out --db")
    try:
        return int(args.handler(args) or 0)
    except UserError as exc:
        if args.debug:
            raise
        print(f"annotate {args.command}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # the reader of stdout left early (`annotate ... | head`): nothing is wrong; the rest
        # of the output goes nowhere, so that Python's flush at exit does not complain either
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, as a shell reports a writer whose reader left
    except Exception as exc:  # an unexpected failure still gets one readable line
        if args.debug:
            raise
        if isinstance(exc, OSError) and exc.filename and exc.strerror:
            # a file that could not be read or written after the commands' checks (a full
            # disk, a folder removed meanwhile): the system's words, naming the file
            print(f"annotate {args.command}: {exc.filename}: {exc.strerror}", file=sys.stderr)
            return 1
        print(
            f"annotate {args.command}: unexpected error: {type(exc).__name__}: {exc} "
            "(run again with --debug for the traceback)",
            file=sys.stderr,
        )
        return 1


if __name__ == "__main__":
    sys.exit(main())
