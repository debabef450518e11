"""`db.one_statement`: a single-statement write (a draft) without BEGIN and COMMIT round trips
on PostgreSQL, and nothing of its autocommit left on the pooled connection for the next
unit of work."""

from __future__ import annotations

from sqlalchemy import text

from annotate.engine import get_engine
from annotate.store.db import is_sqlite, one_statement, transaction


def test_one_statement_commits_alone_and_leaves_the_pool_as_it_was(db_url):
    engine = get_engine(db_url)
    with transaction(engine) as conn:
        conn.execute(text("CREATE TABLE probe (n INTEGER)"))
    with one_statement(engine) as conn:
        assert conn.execute(text("INSERT INTO probe VALUES (1)")).rowcount == 1
        if not is_sqlite(engine):  # committed already: one round trip, no COMMIT to wait for
            assert conn.connection.dbapi_connection.autocommit
            with engine.connect() as other:
                assert other.execute(text("SELECT count(*) FROM probe")).scalar() == 1
    for _ in range(3):  # every pooled connection: a transaction is one again
        try:
            with transaction(engine) as conn:
                conn.execute(text("INSERT INTO probe VALUES (2)"))
                if not is_sqlite(engine):
                    assert not conn.connection.dbapi_connection.autocommit
                raise RuntimeError("roll it back")
        except RuntimeError:
            pass
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM probe")).scalar() == 1
