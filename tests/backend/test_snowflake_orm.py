"""Snowflake ids as primary keys through the ORM on every engine, plain and leased."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from sqlalchemy_seqkeys import (
    Snowflake,
    WorkerLease,
    rotate_digits,
    unrotate_digits,
    workers_table,
)

pytestmark = pytest.mark.backend


def keyed_by(ids: Snowflake, table: str) -> Any:
    """A mapped class of ``table`` (a MetaData of its own): a BIGINT key ``id`` that ``ids``
    mints, and a ``note``."""

    class Base(DeclarativeBase):
        pass

    class Row(Base):
        __tablename__ = table
        id: Mapped[int] = mapped_column(
            sa.BigInteger, primary_key=True, default=ids, autoincrement=False
        )
        note: Mapped[str] = mapped_column(sa.String(20))

    return Row


@pytest.mark.parametrize("rotated", [False, True], ids=["plain", "rotated"])
def test_snowflake_keys_round_trip(engine: Engine, rotated: bool) -> None:
    ids = Snowflake(worker_id=42, transform=rotate_digits if rotated else None)
    row = keyed_by(ids, f"seqkeys_snowflake_{'rot' if rotated else 'plain'}")
    row.metadata.drop_all(engine)
    row.metadata.create_all(engine)
    try:
        with Session(engine) as session:
            session.add_all(row(note=str(i)) for i in range(500))
            session.commit()
            stored = session.scalars(sa.select(row.id)).all()
        assert len(set(stored)) == 500
        assert all(0 < v < 2**63 for v in stored)
        decoded = [ids.decode(v) for v in stored]
        assert {d.worker_id for d in decoded} == {42}
        if rotated:
            originals = [unrotate_digits(v) for v in stored]
            assert sorted(rotate_digits(v) for v in originals) == sorted(stored)
            # the unrotated values are the plain snowflake ids: decodable as such
            plain = Snowflake(worker_id=42)
            assert {plain.decode(v).worker_id for v in originals} == {42}
            assert len({str(v)[:2] for v in stored}) > 1  # spread over leading prefixes
        else:
            # plain snowflake ids sort in minting order, so the server's order
            # is the time order
            with Session(engine) as session:
                ordered = session.scalars(sa.select(row.id).order_by(row.id)).all()
            assert [ids.decode(v).timestamp for v in ordered] == sorted(
                d.timestamp for d in decoded
            )
    finally:
        row.metadata.drop_all(engine)


def test_leased_snowflake_keys_round_trip(engine: Engine) -> None:
    # The way a service runs it: a lease from the same database, a generator
    # bound to it as the key default, rows inserted in batches.
    metadata = sa.MetaData()
    workers_table(metadata, "seqkeys_orm_workers")
    metadata.drop_all(engine)
    metadata.create_all(engine)
    lease = WorkerLease(engine, ttl=10, table="seqkeys_orm_workers", create_table=False).start()
    ids = Snowflake(worker_id=lease)
    row = keyed_by(ids, "seqkeys_snowflake_leased")
    row.metadata.drop_all(engine)
    row.metadata.create_all(engine)
    try:
        with Session(engine) as session:
            session.add_all(row(note=str(i)) for i in range(300))
            session.commit()
            stored = session.scalars(sa.select(row.id).order_by(row.id)).all()
        assert len(set(stored)) == 300
        assert {ids.decode(v).worker_id for v in stored} == {lease.worker_id}
    finally:
        lease.close()
        row.metadata.drop_all(engine)
        metadata.drop_all(engine)
