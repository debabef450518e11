"""Where commands write, and a database file's folder: one rule and one clear sentence each.

Every command creates what it writes (a file, or the report's folder) but never the folders
above it, checks that before any work, and says what is wrong in one sentence (exit 2); a
SQLite URL whose folder is missing names the folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from annotate.cli import main
from tests.factories import pair_record, write_jsonl

DATA = Path(__file__).resolve().parents[1] / "data"
NOT_THERE = "does not exist; create it first"


@pytest.fixture
def study_db(tmp_path):
    """A SQLite database holding a small study with annotations (the project's samples)."""
    db = f"sqlite:///{tmp_path / 'x.db'}"
    assert main(["--db", db, "import-pairs", str(DATA / "sample_pairs.jsonl")]) == 0
    assert main(["--db", db, "import-annotations", str(DATA / "sample_annotations.csv")]) == 0
    return db


def one_sentence(capsys, command: str) -> str:
    err = capsys.readouterr().err
    assert err.startswith(f"annotate {command}: ") and err.count("\n") == 1, err
    assert "unexpected error" not in err and "Traceback" not in err, err
    return err


def test_export_into_a_missing_folder_names_it(study_db, tmp_path, capsys):
    capsys.readouterr()
    missing = tmp_path / "no" / "such"
    assert main(["--db", study_db, "export", "--out", str(missing / "a.csv")]) == 2
    err = one_sentence(capsys, "export")
    assert f"the folder {missing} {NOT_THERE}" in err
    assert not (tmp_path / "no").exists()


def test_report_into_a_missing_folder_is_refused_the_same_way(study_db, tmp_path, capsys):
    capsys.readouterr()
    missing = tmp_path / "no" / "such"
    assert main(["--db", study_db, "report", "--out", str(missing / "report")]) == 2
    assert f"the folder {missing} {NOT_THERE}" in one_sentence(capsys, "report")
    assert not (tmp_path / "no").exists()  # nothing created on the way


def test_the_report_creates_its_own_folder(study_db, tmp_path):
    out = tmp_path / "report"
    assert main(["--db", study_db, "report", "--out", str(out), "--bootstrap", "0"]) == 0
    assert (out / "summary.md").is_file()


@pytest.mark.parametrize("option", ["--export-valid", "--export-cleaned"])
def test_report_exports_are_checked_before_the_report_is_computed(
    study_db, tmp_path, capsys, option
):
    capsys.readouterr()
    out = tmp_path / "report"
    missing = tmp_path / "gone" / "valid.jsonl"
    argv = ["--db", study_db, "report", "--out", str(out), option, str(missing)]
    assert main(argv) == 2
    assert f"{option} {missing}: the folder {missing.parent} {NOT_THERE}" in one_sentence(
        capsys, "report"
    )
    assert not out.exists()  # refused before anything was written


def test_backup_into_a_missing_folder_says_the_same(study_db, tmp_path, capsys):
    capsys.readouterr()
    missing = tmp_path / "no" / "such"
    assert main(["--db", study_db, "backup", "--out", str(missing / "copy.db")]) == 2
    assert f"the folder {missing} {NOT_THERE}" in one_sentence(capsys, "backup")


def test_a_folder_given_for_a_file_and_a_file_for_a_folder(study_db, tmp_path, capsys):
    capsys.readouterr()
    assert main(["--db", study_db, "export", "--out", str(tmp_path)]) == 2
    assert "is a folder; give a file name in it" in one_sentence(capsys, "export")
    taken = tmp_path / "taken"
    taken.write_text("x")
    assert main(["--db", study_db, "report", "--out", str(taken)]) == 2
    assert "is a file; give a folder" in one_sentence(capsys, "report")


def test_a_write_that_fails_after_the_checks_still_names_its_file(
    study_db, tmp_path, capsys, monkeypatch
):
    """The last line of defence (a full disk, a folder removed meanwhile): the system's words
    with the file's name, not "unexpected error"."""
    import analysis.files.annotations_table as table

    def full_disk(frame, path):
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr(table, "write_table", full_disk)
    capsys.readouterr()
    out = tmp_path / "a.csv"
    assert main(["--db", study_db, "export", "--out", str(out)]) == 1
    assert f"{out}: No space left on device" in one_sentence(capsys, "export")


def test_a_sqlite_url_in_a_missing_folder_names_the_folder(tmp_path, capsys):
    pairs = write_jsonl(tmp_path / "p.jsonl", [pair_record(0)])
    missing = tmp_path / "no" / "such"
    url = f"sqlite:///{missing / 'a.db'}"
    assert main(["--db", url, "import-pairs", str(pairs)]) == 2
    err = one_sentence(capsys, "import-pairs")
    assert f"the folder {missing} does not exist" in err
    assert "SQLite creates the database file, not its folder" in err
