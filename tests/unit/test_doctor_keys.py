"""doctor finds every key column of this library, whatever SQLAlchemy did to its default.

SQLAlchemy 2.0 keeps no reference to a callable it wrapped (Snowflake), and a
``default=new_uuid7`` column's default becomes a context-aware function when it
joins its table; both still count as the strategies they were declared as.
"""

from __future__ import annotations

import sqlalchemy as sa

from sqlalchemy_seqkeys import (
    CombGuid,
    Snowflake,
    TableSequence,
    doctor,
    new_comb_guid,
    new_uuid7,
    sequences_table,
)


def test_every_declared_strategy_is_a_key_column() -> None:
    metadata = sa.MetaData()
    sequences_table(metadata)
    sa.Table(
        "keys",
        metadata,
        sa.Column("a", CombGuid(), primary_key=True, default=new_comb_guid),
        sa.Column("b", CombGuid(), default=new_uuid7),
        sa.Column("c", sa.BigInteger, default=Snowflake(worker_id=3)),
        sa.Column("d", sa.BigInteger, default=TableSequence("keys_d", mode="batch")),
        sa.Column("plain", sa.Integer, default=1),
    )
    copy = metadata.tables["keys"].to_metadata(sa.MetaData()).metadata
    engine = sa.create_engine("sqlite://")
    try:
        for declared in (metadata, copy):
            report = doctor(engine, declared)
            assert report.database["key_columns"] == ["keys.a", "keys.b", "keys.c", "keys.d"]
    finally:
        engine.dispose()
