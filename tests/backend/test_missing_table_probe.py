"""A sequences table that does not exist is named (``SequencesTableNotFoundError``) after a
look on another connection; where the pool would hand out the caller's own DBAPI connection
again (SQLite in memory: ``SingletonThreadPool``, ``StaticPool``), that look's rollback ended
the caller's transaction, and its uncommitted rows were gone without a word.
"""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from sqlalchemy_seqkeys import SequencesTableNotFoundError, TableSequence
from sqlalchemy_seqkeys.sequences.table import read_next_value

pytestmark = pytest.mark.backend


@pytest.mark.parametrize("poolclass", [sa.pool.SingletonThreadPool, sa.pool.StaticPool])
def test_the_callers_transaction_survives_the_missing_table_look(
    poolclass: type[sa.pool.Pool],
) -> None:
    engine = sa.create_engine("sqlite://", poolclass=poolclass)
    work = sa.Table("work", sa.MetaData(), sa.Column("id", sa.Integer, primary_key=True))
    try:
        with engine.connect() as conn:
            work.create(conn)
            conn.commit()
            conn.execute(work.insert(), [{"id": 1}, {"id": 2}])  # not committed
            with pytest.raises(SequencesTableNotFoundError, match="'sequences' does not exist"):
                read_next_value(conn, "invoice_no")
            with pytest.raises(SequencesTableNotFoundError):
                TableSequence("invoice_no", mode="in_transaction").next_value(conn)
            assert conn.in_transaction()
            assert conn.scalar(sa.select(sa.func.count()).select_from(work)) == 2
            conn.commit()
        with engine.connect() as conn:
            assert conn.scalar(sa.select(sa.func.count()).select_from(work)) == 2
    finally:
        engine.dispose()
