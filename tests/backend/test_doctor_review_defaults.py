"""A PostgreSQL key column whose DEFAULT is nextval of its own pooled sequence, spelled
with a text argument (``nextval('seq'::text)``, ``nextval(('seq'::text)::regclass)``):
the sequence's own values, no collision. Before, doctor called it a foreign default."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa

from sqlalchemy_seqkeys import PooledSequence, doctor
from tests.backend.test_doctor import fresh_engine

pytestmark = pytest.mark.backend


@pytest.mark.parametrize(
    "default",
    [
        "nextval('dr_od_seq'::text)",
        "nextval(('dr_od_seq'::text)::regclass)",
        "nextval('public.dr_od_seq'::text)",
    ],
)
def test_a_text_nextval_of_the_own_sequence_is_no_collision(engines: Any, default: str) -> None:
    metadata = sa.MetaData()
    pooled = PooledSequence("dr_od_seq", batch_size=10, metadata=metadata)
    sa.Table("dr_od", metadata, sa.Column("id", sa.BigInteger, primary_key=True, default=pooled))
    with fresh_engine(engines, "postgresql") as (engine, _url):
        metadata.create_all(engine)
        with engine.begin() as conn:
            conn.exec_driver_sql(f"ALTER TABLE dr_od ALTER COLUMN id SET DEFAULT {default}")
        report = doctor(engine, metadata)
        schema = [f for f in report.findings if (f.check, f.subject) == ("schema", "dr_od.id")]
        assert [f.status for f in schema] == ["ok"], report.format()


def test_a_text_nextval_of_another_sequence_is_still_a_collision(engines: Any) -> None:
    metadata = sa.MetaData()
    pooled = PooledSequence("dr_od_seq", batch_size=10, metadata=metadata)
    sa.Table("dr_od", metadata, sa.Column("id", sa.BigInteger, primary_key=True, default=pooled))
    with fresh_engine(engines, "postgresql") as (engine, _url):
        metadata.create_all(engine)
        with engine.begin() as conn:
            conn.exec_driver_sql("CREATE SEQUENCE dr_od_other")
            conn.exec_driver_sql(
                "ALTER TABLE dr_od ALTER COLUMN id SET DEFAULT nextval('dr_od_other'::text)"
            )
        report = doctor(engine, metadata)
        assert ("schema", "dr_od.id") in [(f.check, f.subject) for f in report.problems]
