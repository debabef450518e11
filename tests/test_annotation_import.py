"""`annotate import-annotations` says what it changed: new answers, answers replaced, and
answers already stored as they are (which it leaves untouched), on both databases."""

from __future__ import annotations

import json
from pathlib import Path

from sqlmodel import select

from annotate.cli import main
from annotate.engine import get_engine
from annotate.store.db import session
from annotate.store.models import Annotation

SAMPLES = Path(__file__).resolve().parents[1] / "data"


def imported(capsys, db_url: str, path: Path) -> str:
    capsys.readouterr()
    assert main(["--db", db_url, "import-annotations", str(path)]) == 0
    return capsys.readouterr().out.strip()


def test_reimporting_says_what_changed(db_url, tmp_path, capsys):
    assert main(["--db", db_url, "import-pairs", str(SAMPLES / "sample_pairs.jsonl")]) == 0
    sample = SAMPLES / "sample_annotations.csv"
    said = imported(capsys, db_url, sample)
    assert said.endswith(
        "45 annotations read from " + str(sample) + ": 45 new, 0 replaced, 0 unchanged"
    )
    # the same file again: nothing is new, nothing is rewritten
    with session(get_engine(db_url)) as s:
        before = {a.id: a.model_dump() for a in s.exec(select(Annotation)).all()}
    assert imported(capsys, db_url, sample).endswith("0 new, 0 replaced, 45 unchanged")
    with session(get_engine(db_url)) as s:
        after = {a.id: a.model_dump() for a in s.exec(select(Annotation)).all()}
    assert after == before
    # an export read back is the same answers (its times and empty cells included)
    out = tmp_path / "export.jsonl"
    assert main(["--db", db_url, "export", "--out", str(out)]) == 0
    assert imported(capsys, db_url, out).endswith("0 new, 0 replaced, 45 unchanged")
    # one changed comment and one answer of a new annotator
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    rows[0]["comment"] = "on second thought"
    rows.append({**rows[1], "annotator": "newcomer"})
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    said = imported(capsys, db_url, out)
    assert said.endswith(
        "46 annotations read from " + str(out) + ": 1 new, 1 replaced, 44 unchanged"
    )
    with session(get_engine(db_url)) as s:
        assert len(s.exec(select(Annotation)).all()) == 46
