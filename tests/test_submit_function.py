"""PostgreSQL's submit function: generated from queue_sql's fragments and the one list of answer
columns, installed by ensure_schema in place of every earlier version (migration 0003's
included), and computing the same keyed coins as Python."""

from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy import text

from annotate import queue_sql
from annotate.assignment import next_assignment
from annotate.assignment_rules import Coins, ab_coin_sql, gold_coin_sql
from annotate.db import create_db_engine, get_engine
from annotate.schema import Mode, ensure_schema
from tests.factories import make_study

_VERSIONS = """
    SELECT pg_get_function_identity_arguments(p.oid), obj_description(p.oid, 'pg_proc')
      FROM pg_proc p WHERE p.proname = 'annotate_submit_and_next'"""


# The function as migration 0003's release created it, before it was generated from the rules
RELEASED_0003 = Path(__file__).parent / "fixtures" / "submit_function_0003.sql"


def _versions(engine) -> list[tuple[str, str | None]]:
    with engine.connect() as conn:
        return conn.execute(text(_VERSIONS)).all()


def test_a_database_upgraded_from_0003_holds_only_the_generated_function(pg_url):
    engine = create_db_engine(pg_url)
    ensure_schema(engine, mode=Mode.UPGRADE, revision="0003")
    with engine.begin() as conn:  # as the release of migration 0003 left it: its frozen function
        conn.exec_driver_sql(queue_sql._DROP_FUNCTIONS.replace("%", "%%"))
        conn.exec_driver_sql(RELEASED_0003.read_text(encoding="utf-8").replace("%", "%%"))
    [(arguments, comment)] = _versions(engine)
    assert comment is None and "p_gold_every integer, p_preference" in arguments
    ensure_schema(engine, mode=Mode.UPGRADE)  # annotate migrate
    [(arguments, comment)] = _versions(engine)  # replaced, not overloaded
    assert comment == queue_sql._FUNCTION_VERSION and "p_coin_inner bytea" in arguments
    # an overload left by anyone (CREATE OR REPLACE with other arguments) is dropped too
    with engine.begin() as conn:
        conn.exec_driver_sql(
            "CREATE FUNCTION annotate_submit_and_next(integer) RETURNS integer"
            " LANGUAGE sql AS 'SELECT 1'"
        )
    ensure_schema(engine)  # the app's own processes leave it alone ...
    assert len(_versions(engine)) == 2
    ensure_schema(engine, mode=Mode.UPGRADE)  # ... serve, demo and migrate replace it
    assert [c for _, c in _versions(engine)] == [queue_sql._FUNCTION_VERSION]


def test_a_new_answer_column_flows_into_the_function_without_writing_one(pg_url, tmp_path):
    """The aspects engineer adds `aspects` to ANSWER_COLUMNS: the generated function takes it,
    typed from the model (JSON), and stores it."""
    engine = get_engine(pg_url)
    fields = (*queue_sql.ANSWER_FIELDS, "aspects")
    created = queue_sql.submit_function_sql(fields)
    assert "p_aspects JSON" in created and "aspects = excluded.aspects" in created
    _, [(annotator_id, _)] = make_study(engine, tmp_path, n_pairs=2, annotators=1)
    held = next_assignment(engine, annotator_id=annotator_id)
    coins = Coins(None)
    with engine.begin() as conn:
        conn.exec_driver_sql(queue_sql._DROP_FUNCTIONS.replace("%", "%%"))
        conn.exec_driver_sql(created.replace("%", "%%"))
        values = {name: None for name in fields}
        values.update(
            preference="chosen", source="app", aspects=json.dumps([{"chosen": 2, "rejected": 0}])
        )
        call = queue_sql._function_call(fields)
        params = {
            **values,
            "annotator": annotator_id,
            "pair": held.pair_id,
            "now": held.assigned_at,
            "gold_every": 10,
            "coin_inner": coins.inner,
            "coin_outer": coins.outer,
        }
        conn.exec_driver_sql(call, params)
        stored = conn.exec_driver_sql("SELECT aspects FROM annotation").scalar_one()
    assert stored == [{"chosen": 2, "rejected": 0}]


def test_the_sql_coins_are_the_python_coins(pg_url):
    engine = get_engine(pg_url)
    coins = Coins("a3f1" * 8)
    keys = {"inner": "CAST(:inner AS bytea)", "outer": "CAST(:outer AS bytea)"}
    ab = ab_coin_sql(pair=":pair", annotator=":annotator", **keys)
    due = gold_coin_sql(every="10", annotator=":annotator", position=":pair", **keys)
    cases = [(pair, annotator) for pair in range(1, 60) for annotator in range(1, 6)]
    with engine.connect() as conn:
        statement = text(f"SELECT {ab}, {due}")
        for pair, annotator in cases:
            row = conn.execute(
                statement,
                {"pair": pair, "annotator": annotator, "inner": coins.inner, "outer": coins.outer},
            ).one()
            assert row[0] == coins.chosen_position(pair_id=pair, annotator_id=annotator)
            assert row[1] == coins.gold_due(annotator_id=annotator, position=pair)
