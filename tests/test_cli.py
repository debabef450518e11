"""The command line frame: options before or after the subcommand, help, exit codes."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from annotate.cli import build_parser, main
from tests.factories import pair_record, write_jsonl


@pytest.mark.parametrize(
    "argv",
    [
        ["--db", "sqlite:///x.db", "export", "--out", "a.csv"],
        ["export", "--db", "sqlite:///x.db", "--out", "a.csv"],
    ],
)
def test_db_option_is_kept_before_or_after_the_subcommand(argv):
    assert build_parser().parse_args(argv).db == "sqlite:///x.db"


def test_db_defaults_to_none_and_debug_to_false():
    args = build_parser().parse_args(["export", "--out", "a.csv"])
    assert args.db is None and args.debug is False


def test_every_subcommand_has_help(capsys):
    parser = build_parser()
    names = [a for a in parser._subparsers._group_actions[0].choices]
    assert {
        "import-pairs",
        "add-annotator",
        "serve",
        "demo",
        "import-annotations",
        "export",
        "report",
        "backup",
        "migrate",
        "configure-study",
    } <= set(names)
    for name in names:
        with pytest.raises(SystemExit) as exit_:
            main([name, "--help"])
        assert exit_.value.code == 0
        assert "usage: annotate" in capsys.readouterr().out


def test_add_annotator_prints_the_link_last(tmp_path, capsys):
    db = f"sqlite:///{tmp_path}/x.db"
    write_jsonl(tmp_path / "p.jsonl", [pair_record(1)])
    assert main(["--db", db, "import-pairs", str(tmp_path / "p.jsonl")]) == 0
    assert main(["--db", db, "add-annotator", "alice", "--url", "http://example.org:9000"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("http://example.org:9000/?token=") and len(last) > 40
    assert main(["--db", db, "add-annotator", "alice"]) == 2
    assert "already exists" in capsys.readouterr().err


def test_unreadable_database_url_is_one_sentence(capsys):
    assert main(["--db", "not a url", "export", "--out", "x.csv"]) == 2
    err = capsys.readouterr().err
    assert "is not a database URL" in err and "Traceback" not in err


def test_a_command_starts_without_the_other_commands_libraries(tmp_path):
    """Only the named command's module is imported: a report from files loads no database
    library (they took a tenth of `annotate report`'s time), and --help still lists all."""
    import subprocess
    import sys

    code = (
        "import sys; from annotate import cli; cli.build_parser(['report', '--out', 'x']); "
        "print(sorted(m for m in ('sqlalchemy', 'sqlmodel', 'streamlit') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
    assert len(build_parser([])._subparsers._group_actions[0].choices) >= 8


def test_add_annotator_refuses_an_unknown_study_naming_those_there_are(tmp_path, capsys):
    db = f"sqlite:///{tmp_path}/x.db"
    write_jsonl(tmp_path / "p.jsonl", [pair_record(1)])
    assert main(["--db", db, "import-pairs", str(tmp_path / "p.jsonl"), "--study", "pilot"]) == 0
    assert main(["--db", db, "configure-study", "main-run"]) == 0
    capsys.readouterr()
    assert main(["--db", db, "add-annotator", "alice", "--study", "pilto"]) == 2
    err = capsys.readouterr().err
    assert "no study named 'pilto'" in err and "'main-run', 'pilot'" in err
    assert err.count("\n") == 1
    # nothing was created: no study from the typo, no account
    assert main(["--db", db, "add-annotator", "alice", "--study", "pilot"]) == 0
    assert main(["--db", db, "configure-study", "pilto", "--overlap", "2"]) == 0
    assert "study 'pilto' created" in capsys.readouterr().out  # only now, on purpose


def test_add_annotator_checks_as_the_console_invites(tmp_path, capsys):
    """The command goes through accounts.invite, the console's way: its checks apply here too
    (an email without @ was stored as given before)."""
    db = f"sqlite:///{tmp_path}/x.db"
    assert main(["--db", db, "configure-study", "pilot"]) == 0
    capsys.readouterr()
    args = ["--db", db, "add-annotator", "maria", "--study", "pilot", "--admin"]
    assert main([*args, "--email", "maria.example.org"]) == 2
    assert "'maria.example.org' is not an email address" in capsys.readouterr().err
    assert main([*args, "--email", "maria@example.org"]) == 0
    assert capsys.readouterr().out.startswith("maintainer 'maria' added to study 'pilot'.")


@pytest.mark.parametrize(
    ("value", "from_env", "expected"),
    [
        (
            "mydb.db",
            False,
            "--db 'mydb.db' is not a database URL; for a SQLite file write sqlite:///mydb.db",
        ),
        ("mydb.db", True, "$ANNOTATE_DATABASE_URL 'mydb.db' is not a database URL"),
        ("mysql://u@h/d", True, "$ANNOTATE_DATABASE_URL names an unsupported database 'mysql'"),
        ("postgresql+pg8000://u@h/d", False, "--db: PostgreSQL URLs must use the psycopg driver"),
    ],
)
def test_a_bad_database_url_names_its_source_and_the_right_form(
    value, from_env, expected, monkeypatch, capsys
):
    argv = ["export", "--out", "x.csv"]
    if from_env:
        monkeypatch.setenv("ANNOTATE_DATABASE_URL", value)
    else:
        argv = ["--db", value, *argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err and err.count("\n") == 1


def test_version(capsys):
    from importlib.metadata import version

    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"annotate {version('prefpair-annotate')}"


def test_a_closed_stdout_ends_quietly(tmp_path):
    # `annotate configure-study X | head -1`: the reader leaves early; that is no error
    db = f"sqlite:///{tmp_path}/x.db"
    read, write = os.pipe()
    os.close(read)  # the reader has gone before anything is written
    try:
        done = subprocess.run(
            [sys.executable, "-m", "annotate.cli", "--db", db, "configure-study", "pilot"],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(write)
    assert done.stderr == ""
    assert done.returncode == 141  # as a shell reports a writer ended by SIGPIPE


def test_add_annotator_links_follow_the_base_url_variable(tmp_path, capsys, monkeypatch):
    db = f"sqlite:///{tmp_path}/x.db"
    write_jsonl(tmp_path / "p.jsonl", [pair_record(1)])
    assert main(["--db", db, "import-pairs", str(tmp_path / "p.jsonl")]) == 0
    capsys.readouterr()
    monkeypatch.delenv("ANNOTATE_BASE_URL", raising=False)
    assert main(["--db", db, "add-annotator", "alice"]) == 0
    out = capsys.readouterr().out
    assert out.strip().splitlines()[-1].startswith("http://localhost:8501/?token=")
    assert "--url" in out and "ANNOTATE_BASE_URL" in out  # says how to change the address
    monkeypatch.setenv("ANNOTATE_BASE_URL", "https://annotate.example.org/")
    assert main(["--db", db, "add-annotator", "bob"]) == 0
    out = capsys.readouterr().out
    assert out.strip().splitlines()[-1].startswith("https://annotate.example.org/?token=")
    assert "--url" not in out
    assert main(["--db", db, "add-annotator", "carol", "--url", "http://h:9000"]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("http://h:9000/?token=")


HEAVY = (
    "pandas",
    "numpy",
    "scipy",
    "pyarrow",
    "sqlalchemy",
    "sqlmodel",
    "streamlit",
    "annotate.queue",
)


@pytest.mark.parametrize(
    "argv",
    [[], ["import-pairs", "--help"], ["add-annotator", "x"], ["report", "--out", "x"]],
    ids=["--help", "import-pairs", "add-annotator", "report"],
)
def test_the_command_line_parser_imports_no_heavy_library(argv):
    """`annotate --help` builds every command's parser: command modules import their heavy
    libraries (pandas, SQLAlchemy, the labelling queue, ...) inside `run`, so help and the
    parsing of any command load none of them (they made `annotate --help` take 2.5 s)."""
    code = (
        "import sys; from annotate import cli; "
        f"cli.build_parser({argv!r}); "
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_plan_reads_no_database_so_it_takes_no_db(capsys):
    """`annotate plan` only simulates: its help lists no --db, and one given is refused
    (before or after the command name) rather than silently ignored."""
    with pytest.raises(SystemExit) as exit_:
        main(["plan", "--help"])
    assert exit_.value.code == 0
    assert "--db" not in capsys.readouterr().out
    for argv in (["plan", "--db", "sqlite:///x.db"], ["--db", "sqlite:///x.db", "plan"]):
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        assert exit_.value.code == 2
        assert "--db" in capsys.readouterr().err
    # every other command still takes it
    with pytest.raises(SystemExit):
        main(["export", "--help"])
    assert "--db URL" in capsys.readouterr().out
