"""Inputs built to produce an unreadable error (#21 N13): each is refused in one sentence that
says what is wrong, on both databases."""

from __future__ import annotations

import pytest

from annotate.engine import get_engine
from annotate.errors import UserError
from annotate.studies.pair_import import import_pairs
from annotate.studies.pairs_files import MAX_ID_LENGTH
from tests.factories import pair_record, write_jsonl


def test_a_very_long_pair_id_is_refused_with_its_length(db_url, tmp_path):
    engine = get_engine(db_url)
    path = write_jsonl(tmp_path / "long.jsonl", [pair_record(0), pair_record("x" * 10_000)])
    with pytest.raises(UserError) as refused:
        import_pairs(engine, path, study_name="s")
    said = str(refused.value)
    assert "line 2" in said and f"at most {MAX_ID_LENGTH}" in said and "(it has 10,001)" in said
    assert "SQL" not in said and "Operational" not in said
    # an id at the limit is fine
    path = write_jsonl(tmp_path / "ok.jsonl", [pair_record("y" * (MAX_ID_LENGTH - 1))])
    import_pairs(engine, path, study_name="s")
