"""The app under a path prefix from the command line: `--base-url-path` on serve and demo, or
`server.baseUrlPath` in the working directory's `.streamlit/config.toml` (which the server
reads too), and the login links printed for it."""

from __future__ import annotations

import subprocess

import pytest

from annotate.cli import build_parser, main
from annotate.commands.serve import server_command
from tests.browser import annotate_command
from tests.factories import pair_record, write_jsonl


def run(args: list[str], cwd) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*annotate_command(), *args], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def links(output: str) -> list[str]:
    return [word for word in output.split() if "token=" in word]


def test_demo_links_carry_the_base_url_path(tmp_path, capsys):
    db = f"sqlite:///{tmp_path}/demo.db"
    args = ["--db", db, "demo", "--no-serve", "--port", "8600", "--base-url-path", "/annotate/"]
    assert main(args) == 0
    printed = links(capsys.readouterr().out)
    assert printed and all(p.startswith("http://localhost:8600/annotate/?token=") for p in printed)


def test_the_config_files_base_url_path_reaches_the_printed_links(tmp_path, capsys):
    """No option given: the links follow Streamlit's configuration, as the server does. The
    commands that read it run in a process started in the config file's folder (Streamlit
    reads its configuration once a process); the others run here."""
    (tmp_path / ".streamlit").mkdir()
    (tmp_path / ".streamlit" / "config.toml").write_text('[server]\nbaseUrlPath = "annotate"\n')
    db = f"sqlite:///{tmp_path}/x.db"
    done = run(["--db", db, "demo", "--no-serve"], tmp_path)
    assert done.returncode == 0, done.stderr
    printed = links(done.stdout)
    assert printed and all(p.startswith("http://localhost:8501/annotate/?token=") for p in printed)
    write_jsonl(tmp_path / "p.jsonl", [pair_record(1)])
    assert main(["--db", db, "import-pairs", str(tmp_path / "p.jsonl")]) == 0
    added = run(["--db", db, "add-annotator", "alice"], tmp_path)
    assert added.returncode == 0, added.stderr
    last = added.stdout.strip().splitlines()[-1]
    assert last.startswith("http://localhost:8501/annotate/?token=")
    # an address given is the whole address annotators open, path included: used as it is
    capsys.readouterr()
    assert main(["--db", db, "add-annotator", "bob", "--url", "https://x.org/annotate"]) == 0
    given = capsys.readouterr().out
    assert given.strip().splitlines()[-1].startswith("https://x.org/annotate/?token=")


def test_serve_passes_the_base_url_path_to_streamlit():
    args = build_parser(["serve"]).parse_args(["serve", "--base-url-path", "tools/annotate/"])
    command = server_command(args)
    assert command[command.index("--server.baseUrlPath") + 1] == "tools/annotate"
    # not given: Streamlit's own configuration decides, as before
    command = server_command(build_parser(["serve"]).parse_args(["serve"]))
    assert "--server.baseUrlPath" not in command


@pytest.mark.parametrize("bad", ["a b", "a?b", "../x", "a/./b", "x#y", "%2e"])
def test_a_base_url_path_that_is_not_a_plain_path_is_refused(tmp_path, capsys, bad):
    db = f"sqlite:///{tmp_path}/x.db"
    assert main(["--db", db, "demo", "--no-serve", f"--base-url-path={bad}"]) == 2
    err = capsys.readouterr().err
    assert "--base-url-path" in err and err.count("\n") == 1
