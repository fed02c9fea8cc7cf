"""``doctor(conn)`` in the caller's transaction bounds its lock waits and puts the setting
back as the caller had it: a ``SET LOCAL`` of the caller's ends with its transaction, never
becomes the pooled connection's setting for every later checkout."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sqlalchemy_seqkeys import TableSequence, doctor, sequences_table

pytestmark = pytest.mark.backend


def test_a_callers_set_local_stays_local(pg_engine: Engine) -> None:
    metadata = sa.MetaData()
    sequences_table(metadata)
    sequence = TableSequence("doctor_local_id", mode="batch", metadata=metadata)
    sa.Table(
        "doctor_local_rows",
        metadata,
        sa.Column("id", sa.BigInteger, primary_key=True, default=sequence),
    )
    metadata.create_all(pg_engine)
    engine = sa.create_engine(pg_engine.url, pool_size=1)
    try:
        with engine.connect() as conn:
            session_value = conn.exec_driver_sql("SHOW lock_timeout").scalar()
            conn.commit()
            conn.exec_driver_sql("SET LOCAL lock_timeout = '250ms'")
            assert doctor(conn, metadata).healthy
            assert conn.exec_driver_sql("SHOW lock_timeout").scalar() == "250ms"
            conn.commit()
            assert conn.exec_driver_sql("SHOW lock_timeout").scalar() == session_value
        with engine.connect() as conn:  # the same pooled connection, checked out again
            assert conn.exec_driver_sql("SHOW lock_timeout").scalar() == session_value
    finally:
        engine.dispose()
        sequence.drop(pg_engine, checkfirst=True)
        metadata.drop_all(pg_engine)
