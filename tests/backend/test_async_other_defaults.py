"""The other key defaults under AsyncSession, unchanged: shard columns, COMB, UUIDv7.

Declared exactly as for a sync engine; every async driver. A shard column is
filled by an Engine hook, which the AsyncEngine's sync engine fires too.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import datetime, timezone

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from sqlalchemy_seqkeys import CombGuid, ShardId, new_comb_guid, new_uuid7, shard_of, spanner_string
from tests.conftest import AsyncDatabase

ROWS = 40


class Base(DeclarativeBase):
    pass


class Order(Base):
    __tablename__ = "async_other_orders"
    id: Mapped[uuid.UUID] = mapped_column(CombGuid(), primary_key=True, default=new_comb_guid)
    ref: Mapped[uuid.UUID] = mapped_column(CombGuid(), default=new_uuid7, unique=True)
    user: Mapped[str] = mapped_column(sa.String(20))
    shard: Mapped[int] = mapped_column(sa.BigInteger, default=ShardId("user", shards=16))


def test_shard_comb_and_uuid7_defaults_under_asyncsession(async_database: AsyncDatabase) -> None:
    async def insert(engine: sa.ext.asyncio.AsyncEngine, i: int) -> None:
        async with AsyncSession(engine) as session:
            session.add(Order(user=f"user-{i}"))
            await session.commit()

    async def main() -> list[Order]:
        engine = async_database.engine()
        try:
            async with engine.begin() as conn:
                await conn.run_sync(Base.metadata.drop_all)
                await conn.run_sync(Base.metadata.create_all)
            await asyncio.gather(*(insert(engine, i) for i in range(ROWS)))
            async with AsyncSession(engine) as session:
                rows = list(await session.scalars(sa.select(Order)))
            async with engine.begin() as conn:
                await conn.run_sync(Base.metadata.drop_all)
            return rows
        finally:
            await engine.dispose()

    start = datetime.now(timezone.utc)
    rows = asyncio.run(main())
    assert len(rows) == ROWS
    assert len({r.id for r in rows}) == ROWS
    assert {r.ref.version for r in rows} == {7}
    for row in rows:
        assert row.shard == shard_of(spanner_string(row.user), 16)
        assert row.id.int >> 80 >= int(start.timestamp() * 1000) - 1000  # a COMB of now
